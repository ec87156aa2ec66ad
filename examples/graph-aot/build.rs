//! Writes the model `model/rnn_head.uop` (a `while` over a sequence and a `case`)
//! as one Rust module into OUT_DIR: its kernels and the function `rnn_head` running
//! the whole graph; with it two graphs with `chunk` loops (`model/add_one.uop`,
//! `model/nested.uop`), whose functions take custom loop ends too.

use uop_graph::build::{GraphSource, Graphs};

fn main() -> std::process::ExitCode {
    Graphs::new().run("model.rs", |graphs| {
        graphs.add(GraphSource::file("model/rnn_head.uop"))?;
        graphs.add(GraphSource::file("model/add_one.uop"))?;
        graphs.add(GraphSource::file("model/nested.uop"))?;
        Ok(())
    })
}
