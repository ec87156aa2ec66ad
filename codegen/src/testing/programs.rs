//! NNC's micro-op test programs, built once for every test that needs them:
//! matmul and the convolution in its two forms (sizes as `$params`, and sizes from
//! both inputs tied by `dA3[=dB3]`). Outputs are named `c` and `y`.

use crate::uop::{BinaryOp, Builder, DType, NodeId, Program, ReduceOp, UopError};

/// `c = reduce_sum(a[M, K, N] * b[M, K, N], [1])`, the broadcasts written as reindexes
/// whose shapes come from both inputs (`dA0`, `dB1`): a(M, K) · b(K, N) -> (M, 1, N).
pub fn nnc_matmul() -> Result<Program, UopError> {
    let mut b = Builder::new(DType::F32);
    let a = b.input("a", DType::F32, &["M", "K"])?;
    let w = b.input("b", DType::F32, &["K", "N"])?;
    let aa = b.reindex(a, &["dA0", "dA1", "dB1"], &[a, w], &["i0", "i1"])?;
    let bb = b.reindex(w, &["dA0", "dB0", "dB1"], &[a, w], &["i1", "i2"])?;
    let prod = b.binary(BinaryOp::Mul, aa, bb)?;
    let c = b.reduce(ReduceOp::Sum, &[1], prod)?;
    b.set_name(c, "c")?;
    b.combine(&[a, w], &[c])
}

/// NNC's NHWC convolution with the kernel size and output channels as `$kh $kw $kc`:
/// x(N, H, W, C), w(O, KH, KW, C) -> y(N, H - $kh + 1, W - $kw + 1, 1, 1, 1, $kc).
pub fn nnc_conv_params() -> Result<Program, UopError> {
    let mut b = Builder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N", "H", "W", "C"])?;
    let w = b.input("w", DType::F32, &["O", "KH", "KW", "C"])?;
    for p in ["kh", "kw", "kc"] {
        b.param(p)?;
    }
    let shape = [
        "dA0",
        "dA1 - $kh + 1",
        "dA2 - $kw + 1",
        "$kh",
        "$kw",
        "dA3",
        "$kc",
    ];
    conv_body(b, x, w, &shape, &[x])
}

/// The same convolution with every size taken from both inputs, asserting that the
/// channel counts agree (`dA3[=dB3]`, i.e. `C == CW`).
pub fn nnc_conv_two_sources() -> Result<Program, UopError> {
    let mut b = Builder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N", "H", "W", "C"])?;
    let w = b.input("w", DType::F32, &["O", "KH", "KW", "CW"])?;
    let shape = [
        "dA0",
        "dA1 - dB1 + 1",
        "dA2 - dB2 + 1",
        "dB1",
        "dB2",
        "dA3[=dB3]",
        "dB0",
    ];
    conv_body(b, x, w, &shape, &[x, w])
}

/// Window reindex of `x`, kernel reindex of `w`, product, sum over the window axes.
fn conv_body(
    mut b: Builder,
    x: NodeId,
    w: NodeId,
    shape: &[&str],
    sources: &[NodeId],
) -> Result<Program, UopError> {
    let xx = b.reindex(x, shape, sources, &["i0", "i1 + i3", "i2 + i4", "i5"])?;
    let ww = b.reindex(w, shape, sources, &["i6", "i3", "i4", "i5"])?;
    let prod = b.binary(BinaryOp::Mul, xx, ww)?;
    let y = b.reduce(ReduceOp::Sum, &[3, 4, 5], prod)?;
    b.set_name(y, "y")?;
    b.combine(&[x, w], &[y])
}
