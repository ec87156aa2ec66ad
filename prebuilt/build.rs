//! Generates the prebuilt kernels of `uop-kernels` (`uop::kernels`) from the programs in `kernels/`,
//! once in f32 and once in f64, each with its gradient kernel (`NAME_grad`), with
//! uop's own build-time API.

use std::process::ExitCode;

use uop_codegen::build::Kernels;
use uop_codegen::uop::DType;

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed=build.rs");
    let mut kernels = Kernels::with_registry(uop_ops::registry());
    let result = kernels
        // An argmax is piecewise constant: its gradient is zero, not worth a kernel.
        .add_dir_with_gradients("kernels", &[DType::F32, DType::F64], Some(&["row_argmax"]))
        .and_then(|_| kernels.write("kernels.rs"));
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: generating the prebuilt kernels: {e}");
            ExitCode::FAILURE
        }
    }
}
