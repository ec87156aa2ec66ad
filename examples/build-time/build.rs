//! Describes this crate's op in micro ops and writes it as Rust into OUT_DIR.

use std::process::ExitCode;

use uop_codegen::build::Kernels;
use uop_codegen::uop::DType;

fn main() -> ExitCode {
    let mut kernels = Kernels::new();
    let result = kernels
        .add_file("rms_norm", "ops/rms_norm.uop")
        .and_then(|k| k.add_file_as("rms_norm_f64", "ops/rms_norm.uop", DType::F64))
        .and_then(|k| k.write("kernels.rs"));
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
