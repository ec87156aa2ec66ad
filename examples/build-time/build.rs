//! Describes this crate's op in micro ops and writes it as Rust into OUT_DIR, in
//! f32 and f64 (`rms_norm_f32`, `rms_norm_f64`), each with the oracle's entries
//! (`NAME_program`, `NAME_dyn`) that the crate's test checks it through.

use uop_build::{Build, DType, Source};

fn main() -> std::process::ExitCode {
    Build::new().oracle(true).run("kernels.rs", |k| {
        k.add(Source::file("ops/rms_norm.uop").dtypes(&[DType::F32, DType::F64]))?;
        Ok(())
    })
}
