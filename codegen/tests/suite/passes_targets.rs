//! The optimizer's targets on NNC's programs, written in micro ops: matmul and the
//! convolution fuse to one loop nest with no temporaries, softmax to three nests.
//! Each test also checks the optimized program against the reference interpreter
//! and compares the printed loop IR with a snapshot, so a change in what the
//! pipeline does shows up in review.

use std::collections::HashMap;

use uop_codegen::interp;
use uop_codegen::loops::{self, LoopProgram};
use uop_codegen::pass::{self, PassOptions, Stats};
use uop_codegen::tensor::Tensor;
use uop_codegen::testing::programs;
use uop_codegen::uop::{BinaryOp, Builder, DType, Program, ReduceOp, UnaryOp};

const F32: DType = DType::F32;

/// `c = reduce_sum(a[M, K, N] * b[M, K, N], [1])`, the broadcasts written as reindexes.
fn matmul() -> Program {
    programs::nnc_matmul().unwrap()
}

/// The `matmul` macro op's form: the same reduction, then a reindex dropping the
/// kept size-1 axis (`c[m, n] = t[m, 0, n]`).
fn matmul_dropping_the_kept_axis() -> Program {
    let mut b = Builder::new(F32);
    let a = b.input("a", F32, &["M", "K"]).unwrap();
    let w = b.input("b", F32, &["K", "N"]).unwrap();
    let aa = b
        .reindex(a, &["dA0", "dA1", "dB1"], &[a, w], &["i0", "i1"])
        .unwrap();
    let bb = b
        .reindex(w, &["dA0", "dB0", "dB1"], &[a, w], &["i1", "i2"])
        .unwrap();
    let prod = b.binary(BinaryOp::Mul, aa, bb).unwrap();
    let t = b.reduce(ReduceOp::Sum, &[1], prod).unwrap();
    let c = b
        .reindex(t, &["dA0", "dA2"], &[t], &["i0", "0", "i1"])
        .unwrap();
    b.set_name(c, "c").unwrap();
    b.combine(&[a, w], &[c]).unwrap()
}

/// NNC's convolution forward, with the kernel size and output channels as `$params`.
fn conv() -> Program {
    programs::nnc_conv_params().unwrap()
}

/// Softmax over axis 1 in micro ops: max, broadcast, sub, exp, sum, broadcast, div.
fn softmax() -> Program {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["B", "N"]).unwrap();
    let m = b.reduce(ReduceOp::Max, &[1], x).unwrap();
    let mb = b.reindex(m, &["B", "N"], &[], &["i0", "0"]).unwrap();
    let d = b.binary(BinaryOp::Sub, x, mb).unwrap();
    let e = b.unary(UnaryOp::Exp, d).unwrap();
    let s = b.reduce(ReduceOp::Sum, &[1], e).unwrap();
    let sb = b.reindex(s, &["B", "N"], &[], &["i0", "0"]).unwrap();
    let y = b.binary(BinaryOp::Div, e, sb).unwrap();
    for (id, n) in [
        (m, "m"),
        (mb, "mb"),
        (d, "d"),
        (e, "e"),
        (s, "s"),
        (sb, "sb"),
        (y, "y"),
    ] {
        b.set_name(id, n).unwrap();
    }
    b.combine(&[x], &[y]).unwrap()
}

/// The same convolution with every size taken from the inputs; the channel counts
/// are asserted equal (`dA3[=dB3]`), so the shape groups know `C == CW`.
fn conv_from_input_dims() -> Program {
    programs::nnc_conv_two_sources().unwrap()
}

/// Lowers and optimizes `program`, checks the result against the reference
/// interpreter on `inputs`, and returns it.
fn optimized(program: &Program, inputs: &[Tensor], params: &[(&str, i64)]) -> LoopProgram {
    let params: HashMap<String, i64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let lowered = loops::lower(program);
    let out = pass::optimize(&lowered, &PassOptions::default()).unwrap();
    let want = interp::run(program, inputs, &params).unwrap();
    let got = interp::run_loops(&out, inputs, &params).unwrap();
    assert_eq!(got, want, "optimized:\n{out}");
    out
}

/// Deterministic data with varied signs and magnitudes.
fn data(shape: &[usize], seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n)
        .map(|k| (((k * 7 + seed * 13) % 23) as f64 - 11.0) * 0.37)
        .collect();
    Tensor::new(F32, shape.to_vec(), values).unwrap()
}

fn sizes(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// True when no access of the program still needs a bounds check.
fn all_unchecked(p: &LoopProgram) -> bool {
    !p.to_string().contains("??") && !p.to_string().contains("]?")
}

const MATMUL: &str = "\
input  a: f32[M, K]
input  b: f32[K, N]
output c: f32[M, 1, N]
block 0 {
  for i0 in 0..M [parallel] {
    for i2 in 0..N [tile(packed b[i1, i2]), rows(packed a[i0, i1]), block reduction] {
      v0 = 0.0 (+)
      for i1 in 0..K {
        v0 += a[i0, i1] * b[i1, i2]
      }
      c[i0, 0, i2] = v0
    } }
}
";

#[test]
fn matmul_fuses_to_one_block_without_temporaries() {
    let p = optimized(&matmul(), &[data(&[3, 4], 1), data(&[4, 5], 2)], &[]);
    let none = HashMap::new();
    let stats = pass::stats(&p, &sizes(&[("M", 3), ("K", 4), ("N", 5)]), &none);
    assert_eq!(
        stats,
        Stats {
            blocks: 1,
            loops: 3,
            temporaries: 0,
            temp_bytes: Some(0)
        }
    );
    assert!(all_unchecked(&p), "{p}");
    assert_eq!(p.to_string(), MATMUL);
}

#[test]
fn matmul_lowered_has_four_blocks_and_three_temporaries() {
    // The baseline the pipeline improves on: what `lower` alone produces.
    let lowered = loops::lower(&matmul());
    let stats = pass::stats(
        &lowered,
        &sizes(&[("M", 3), ("K", 4), ("N", 5)]),
        &HashMap::new(),
    );
    assert_eq!((stats.blocks, stats.temporaries), (4, 3));
    assert_eq!(stats.temp_bytes, Some(3 * 3 * 4 * 5 * 4));
}

const MATMUL_2D: &str = "\
input  a: f32[M, K]
input  b: f32[K, N]
output c: f32[M, N]
block 0 {
  for i0 in 0..M [parallel] {
    for i2 in 0..N [tile(packed b[i1, i2]), rows(packed a[i0, i1]), block reduction] {
      v0 = 0.0 (+)
      for i1 in 0..K {
        v0 += a[i0, i1] * b[i1, i2]
      }
      c[i0, i2] = v0
    } }
}
";

/// The consumer of the reduction reads it at the kept loop's level, so it joins the
/// reduction's nest as a statement after the store (prefix fusion), and the
/// temporary is substituted away: the same single nest as above.
#[test]
fn matmul_dropping_the_kept_axis_fuses_to_one_block_without_temporaries() {
    let p = optimized(
        &matmul_dropping_the_kept_axis(),
        &[data(&[3, 4], 1), data(&[4, 5], 2)],
        &[],
    );
    let stats = pass::stats(&p, &sizes(&[("M", 3), ("K", 4), ("N", 5)]), &HashMap::new());
    assert_eq!((stats.blocks, stats.temporaries), (1, 0));
    assert!(all_unchecked(&p), "{p}");
    assert_eq!(p.to_string(), MATMUL_2D);
}

const CONV: &str = "\
param  $kh
param  $kw
param  $kc
input  x: f32[N, H, W, C]
input  w: f32[O, KH, KW, C]
output y: f32[N, H - $kh + 1, W - $kw + 1, 1, 1, 1, $kc]
block 0 {
  for i0 in 0..N [parallel] {
    for i1 in 0..H - $kh + 1 {
      for i2 in 0..W - $kw + 1 {
        for i6 in 0..$kc {
          v0 = 0.0 (+)
          for i3 in 0..$kh {
            for i4 in 0..$kw {
              for i5 in 0..C [split] {
                v0 += x[i0, i1 + i3, i2 + i4, i5] * (w[i6, i3, i4, i5] ?? 0.0)
              } } }
          y[i0, i1, i2, 0, 0, 0, i6] = v0
        } } } }
}
";

#[test]
fn convolution_fuses_to_one_block_and_proves_the_window_in_range() {
    let params = [("kh", 2), ("kw", 3), ("kc", 4)];
    let p = optimized(
        &conv(),
        &[data(&[2, 5, 6, 3], 1), data(&[4, 2, 3, 3], 2)],
        &params,
    );
    let stats = pass::stats(&p, &HashMap::new(), &HashMap::new());
    assert_eq!((stats.blocks, stats.temporaries), (1, 0));
    // `x[i0, i1 + i3, ...]` is proven in range; `w[i6, ...]` is not: nothing ties
    // `$kc` to `w`'s first axis or `$kh` to `KH`, so those reads keep their fill.
    assert_eq!(p.to_string(), CONV);
}

#[test]
fn convolution_with_asserted_sizes_needs_no_bounds_check_at_all() {
    let p = optimized(
        &conv_from_input_dims(),
        &[data(&[2, 5, 6, 3], 1), data(&[4, 2, 3, 3], 2)],
        &[],
    );
    assert_eq!(p.blocks.len(), 1);
    assert_eq!(
        pass::stats(&p, &HashMap::new(), &HashMap::new()).temporaries,
        0
    );
    assert!(all_unchecked(&p), "{p}");
}

const SOFTMAX: &str = "\
input  x: f32[B, N]
output y: f32[B, N]
temp   m: f32[B, 1] [one row of axis 0 at a time]
temp   e: f32[B, N] [one row of axis 0 at a time]
temp   s: f32[B, 1] [one row of axis 0 at a time]
block 0 {
  for i0 in 0..B [parallel] {
    v0 = -inf (max)
    for i1 in 0..N [split] {
      v0 max= x[i0, i1]
    }
    m[i0, 0] = v0
  }
}
block 1 {
  for i2 in 0..B [parallel, joined] {
    v1 = 0.0 (+)
    for i3 in 0..N [split] {
      e[i2, i3] = exp(x[i2, i3] - m[i2, 0])
      v1 += e[i2, i3]
    }
    s[i2, 0] = v1
  }
}
block 2 {
  for i10 in 0..B [parallel, joined] {
    for i11 in 0..N [line split] {
      y[i10, i11] = e[i10, i11] / s[i10, 0]
    } }
}
";

/// Softmax ends in three blocks, and three is the least without recomputation:
/// a row's maximum `m[b, 0]` is stored after the row's `n` loop finishes, so nothing
/// reading it inside an `n` loop can share that nest (a "reduced read"); the same
/// holds for the sum `s`. Hence: (1) the max; (2) broadcast, subtract, exp and sum
/// fused, reading `m` from block 1; (3) broadcast and divide, reading `s`.
/// The broadcasts and the difference are substituted away; `m`, `e` and `s`
/// stay, because each is read by a later block. Each block touches only row `b`
/// of what the others write, so `rows` joins the three: a backend runs them row
/// by row, keeping one row of `m`, `e` and `s`.
#[test]
fn softmax_fuses_to_three_blocks() {
    let p = optimized(&softmax(), &[data(&[3, 7], 1)], &[]);
    let stats = pass::stats(&p, &sizes(&[("B", 3), ("N", 7)]), &HashMap::new());
    assert_eq!(
        stats,
        Stats {
            blocks: 3,
            loops: 6,
            temporaries: 3,
            temp_bytes: Some((3 + 3 * 7 + 3) * 4)
        }
    );
    assert!(all_unchecked(&p), "{p}");
    assert_eq!(p.to_string(), SOFTMAX);
}
