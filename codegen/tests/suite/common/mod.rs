//! Helpers shared by the loop-IR text tests (`loop_text.rs`, `pass_files.rs`).

use uop_codegen::tensor::Tensor;

/// Equal outputs, bit for bit (NaN included).
pub fn same_bits(a: &[Tensor], b: &[Tensor]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.shape == y.shape
                && x.data.len() == y.data.len()
                && x.data
                    .iter()
                    .zip(&y.data)
                    .all(|(u, v)| u.to_bits() == v.to_bits())
        })
}
