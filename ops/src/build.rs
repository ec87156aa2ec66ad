//! The build-time API with the macro ops in place: everything of
//! [`uop_codegen::build`], and [`kernels`], which starts a set of kernels whose
//! `.uop` sources may call every op of this crate. A build script then needs
//! `uop-ops` as its one build-dependency:
//!
//! ```no_run
//! // build.rs
//! use uop_ops::build::{DType::{F32, F64}, Source, kernels};
//!
//! fn main() -> std::process::ExitCode {
//!     kernels().run("kernels.rs", |k| {
//!         k.add(Source::file("ops/mlp.uop").dtypes(&[F32, F64]).with_gradient())?;
//!         Ok(())
//!     })
//! }
//! ```

pub use uop_codegen::build::*;
pub use uop_codegen::compile::Checks;
pub use uop_codegen::grad::GradSpec;
pub use uop_codegen::uop::{DType, Program};

/// No kernels yet; `.uop` sources may call every macro op of this crate
/// ([`registry`](crate::registry)).
pub fn kernels() -> Kernels {
    Kernels::with_registry(crate::registry())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_may_call_macro_ops_without_a_registry_line() {
        let mut k = kernels();
        let names = k
            .add(
                Source::text(
                    "mlp",
                    "input x: f32[B, 4]\ninput w: f32[3, 4]\ny = linear(x, w)\noutput y\n",
                )
                .dtypes(&[DType::F32, DType::F64])
                .with_gradient(),
            )
            .expect("adds");
        assert_eq!(
            names,
            ["mlp_f32", "mlp_f32_grad", "mlp_f64", "mlp_f64_grad"]
        );
        assert!(k.source().expect("emits").contains("pub fn mlp_f64_grad("));
    }
}
