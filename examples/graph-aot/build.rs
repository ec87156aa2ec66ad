//! Writes the model `model/rnn_head.uop` (a `while` over a sequence and a `case`)
//! as one Rust module into OUT_DIR: its kernels and the function `rnn_head` running
//! the whole graph; with it two graphs with `chunk` loops (`model/add_one.uop`,
//! `model/nested.uop`), whose functions take custom loop ends too, and the ONNX
//! model `model/classifier.onnx` (written by `model/classifier.py`), imported and
//! emitted as the function `classifier`.

use uop_build::{Build, Source};

fn main() -> std::process::ExitCode {
    Build::new().run("model.rs", |b| {
        b.add(Source::graph_file("model/rnn_head.uop"))?;
        b.add(Source::graph_file("model/add_one.uop"))?;
        b.add(Source::graph_file("model/nested.uop"))?;
        b.add(Source::onnx("model/classifier.onnx"))?;
        Ok(())
    })
}
