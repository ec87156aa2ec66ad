//! Generates the prebuilt kernels of `uop-kernels` (`uop::kernels`) from the programs in `kernels/`,
//! once in f32 and once in f64, each with its gradient kernel (`NAME_grad`), with
//! uop's own build-time builder (`uop-build`).

use uop_build::{Build, DType, Source};

fn main() -> std::process::ExitCode {
    Build::new().run("kernels.rs", |k| {
        // An argmax is piecewise constant: its gradient is zero, not worth a kernel.
        let prebuilt = Source::dir("kernels")
            .dtypes(&[DType::F32, DType::F64])
            .with_gradient_except(&["row_argmax"]);
        k.add(prebuilt)?;
        Ok(())
    })
}
