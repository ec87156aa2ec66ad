//! Calls a kernel generated at build time (see `build.rs` and `ops/rms_norm.uop`).
//! The binary links nothing of the compiler: `kernels` is plain Rust written into
//! OUT_DIR, calling the small runtime crate `uop-runtime`.

// The binary calls only some of the generated items (not the f64 variant): the
// generated file marks its items so that unused kernels are no warning.
mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

/// Normalizes a 2×4 batch and returns the result.
fn normalized() -> Result<Vec<f32>, kernels::KernelError> {
    let x = [1.0f32, 2.0, 3.0, 4.0, -1.0, 0.0, 1.0, 0.0];
    let g = [1.0f32, 1.0, 0.5, 2.0];
    let shapes = kernels::rms_norm_f32_shapes([2, 4], [4])?;
    let mut y = vec![0.0f32; shapes.y_len()];
    kernels::rms_norm_f32(&x, [2, 4], &g, [4], &mut y)?;
    Ok(y)
}

fn main() {
    match normalized() {
        Ok(y) => println!("rms_norm: {y:?}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
    // A wrong shape is an error value, not a panic.
    let mut out = [0.0f32; 3];
    if let Err(e) = kernels::rms_norm_f32(&[1.0; 6], [2, 3], &[1.0; 4], [4], &mut out) {
        println!("as expected: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rms_norm_matches_the_formula() {
        let y = normalized().expect("valid shapes");
        let x = [1.0f64, 2.0, 3.0, 4.0, -1.0, 0.0, 1.0, 0.0];
        let g = [1.0f64, 1.0, 0.5, 2.0];
        for b in 0..2 {
            let row = &x[b * 4..b * 4 + 4];
            let rms = (row.iter().map(|v| v * v).sum::<f64>() / 4.0 + 1e-6).sqrt();
            for n in 0..4 {
                let expected = row[n] / rms * g[n];
                assert!((f64::from(y[b * 4 + n]) - expected).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn the_generated_kernels_agree_with_the_reference_interpreter() {
        use uop::testing::{OpCheck, check_kernel};

        let opts = OpCheck::default();
        check_kernel(
            kernels::rms_norm_f32_program(),
            kernels::rms_norm_f32_dyn,
            &opts,
        )
        .unwrap_or_else(|e| panic!("rms_norm_f32: {e}"));
        check_kernel(
            kernels::rms_norm_f64_program(),
            kernels::rms_norm_f64_dyn,
            &opts,
        )
        .unwrap_or_else(|e| panic!("rms_norm_f64: {e}"));
    }

    #[test]
    fn mismatched_shapes_are_errors() {
        let mut out = [0.0f32; 8];
        let err = kernels::rms_norm_f32(&[1.0; 8], [2, 4], &[1.0; 3], [3], &mut out).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rms_norm_f32: dimension `N` is 4 in `x` but 3 in `g`"
        );
    }
}
