//! The nine speed workloads of issue 8, with the names, sizes, data distribution and
//! traffic / FLOP model of `../shared/bench/peers.py`, so `uop bench --json` and
//! `peers.py` can be run side by side; `benches/jax_workloads.py` is the same nine
//! for jax.jit, and `benches/side_by_side.py` alternates it with `uop bench`.
//!
//! Each workload runs three ways in the same process: the prebuilt kernel of
//! `uop::kernels` (Rust backend, with the feature `prebuilt`), the same `kernels/*.uop` program JIT-compiled by
//! Cranelift ([`crate::jit`]), and a naive Rust loop nest written straight from the
//! definition (the baseline the ratios are taken against).
//!
//! Differences from `peers.py`, stated so nobody is misled: the data are standard
//! normal f32 drawn from uop's own seeded generator (same distribution, not numpy's
//! bit stream), and the gelu chain uses the constants of `kernels/gelu_chain.uop`
//! (`x * 0.8 + 0.1`) instead of `x * 1.3 + 0.1` — the same operation count.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uop_codegen::text::parse_program;

use crate::AlignedVec;
use crate::jit::{Input, Kernel, Output};
#[cfg(feature = "prebuilt")]
use crate::kernels;

pub mod limits;

pub use limits::Limits;

/// Names of the workloads, in `peers.py`'s order.
pub const NAMES: [&str; 9] = [
    "gelu_4M",
    "softmax_4096x1024",
    "layernorm_4096x1024",
    "sum_16M",
    "colsum_4096x1024",
    "matmul_512",
    "matmul_1024",
    "conv2d_8x64x56x56_k3",
    "transpose_1024",
];

/// What a workload's speed is measured in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure {
    /// Compulsory memory traffic in bytes (bandwidth-bound workloads).
    Bytes(f64),
    /// Floating-point operations (compute-bound workloads).
    Flops(f64),
}

impl Measure {
    /// The rate for one run of `ms` milliseconds: GB/s or GFLOP/s.
    pub fn rate(self, ms: f64) -> f64 {
        let amount = match self {
            Measure::Bytes(b) | Measure::Flops(b) => b,
        };
        amount / (ms * 1e-3) / 1e9
    }

    /// The unit of [`Measure::rate`].
    pub fn unit(self) -> &'static str {
        match self {
            Measure::Bytes(_) => "GB/s",
            Measure::Flops(_) => "GFLOP/s",
        }
    }
}

/// One workload at one size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `gelu(x * 0.8 + 0.1)`, tanh form, over `x[n]`.
    Gelu { n: usize },
    /// Softmax over the last axis of `x[b, n]`.
    Softmax { b: usize, n: usize },
    /// Layer normalization over the last axis of `x[b, n]` with gamma and beta.
    Layernorm { b: usize, n: usize },
    /// The sum of `x[n]`.
    Sum { n: usize },
    /// Column sums of `x[r, c]`.
    Colsum { r: usize, c: usize },
    /// `a[n, n] · b[n, n]`.
    Matmul { n: usize },
    /// 3×3 convolution, stride 1, padding 1: `x[n, c, h, w]` · `k[o, c, 3, 3]`.
    Conv2d {
        n: usize,
        c: usize,
        h: usize,
        w: usize,
        o: usize,
    },
    /// `x[n, n]` transposed to a contiguous `y[n, n]`.
    Transpose { n: usize },
}

/// Why a workload could not be run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The name is not one of [`NAMES`].
    #[error("unknown workload `{0}` (workloads: {names})", names = NAMES.join(", "))]
    Unknown(String),
    /// The prebuilt kernel refused its arguments.
    #[error("{workload}: the prebuilt kernel failed: {message}")]
    Kernel { workload: String, message: String },
    /// The program did not parse or JIT-compile, or its kernel refused the arguments.
    #[error("{workload}: the Cranelift kernel failed: {message}")]
    Jit { workload: String, message: String },
}

/// The input data of one workload: buffers and their shapes.
pub struct Data {
    /// Input buffers, in the program's input order, each starting on a cache line
    /// as numpy's, torch's and XLA's arrays do (or at the offset given to
    /// [`Workload::data_at`]).
    pub inputs: Vec<AlignedVec<f32>>,
    /// Their shapes.
    pub shapes: Vec<Vec<usize>>,
}

impl Workload {
    /// The workload named `name` (one of [`NAMES`]), at full size or, with `quick`,
    /// at a small size for tests.
    pub fn named(name: &str, quick: bool) -> Result<Workload, BenchError> {
        use Workload::*;
        let q = |full: usize, small: usize| if quick { small } else { full };
        Ok(match name {
            "gelu_4M" => Gelu {
                n: q(4 << 20, 4096),
            },
            "softmax_4096x1024" => Softmax {
                b: q(4096, 32),
                n: q(1024, 64),
            },
            "layernorm_4096x1024" => Layernorm {
                b: q(4096, 32),
                n: q(1024, 64),
            },
            "sum_16M" => Sum {
                n: q(16 << 20, 8192),
            },
            "colsum_4096x1024" => Colsum {
                r: q(4096, 32),
                c: q(1024, 64),
            },
            "matmul_512" => Matmul { n: q(512, 24) },
            "matmul_1024" => Matmul { n: q(1024, 32) },
            "conv2d_8x64x56x56_k3" => Conv2d {
                n: q(8, 1),
                c: q(64, 3),
                h: q(56, 6),
                w: q(56, 5),
                o: q(64, 4),
            },
            "transpose_1024" => Transpose { n: q(1024, 48) },
            _ => return Err(BenchError::Unknown(name.to_string())),
        })
    }

    /// Bytes or FLOPs of one run, by `peers.py`'s model (minimum compulsory traffic;
    /// layernorm's gamma and beta ignored).
    pub fn measure(self) -> Measure {
        use Workload::*;
        let f = |v: usize| v as f64;
        match self {
            Gelu { n } => Measure::Bytes(8.0 * f(n)),
            Softmax { b, n } | Layernorm { b, n } => Measure::Bytes(8.0 * f(b * n)),
            Sum { n } => Measure::Bytes(4.0 * f(n)),
            Colsum { r, c } => Measure::Bytes(4.0 * f(r * c)),
            Transpose { n } => Measure::Bytes(8.0 * f(n * n)),
            Matmul { n } => Measure::Flops(2.0 * f(n).powi(3)),
            Conv2d { n, c, h, w, o } => Measure::Flops(2.0 * f(n * o * h * w * c * 9)),
        }
    }

    /// Seeded standard-normal inputs, shaped as the program's inputs (conv weights
    /// scaled by 0.05 as in `peers.py`), each starting on a cache line.
    pub fn data(self, seed: u64) -> Data {
        self.data_at(seed, 0)
    }

    /// [`Workload::data`] with every buffer starting `offset` bytes past a cache
    /// line (`uop bench --offset`).
    pub fn data_at(self, seed: u64, offset: usize) -> Data {
        use Workload::*;
        let mut rng = StdRng::seed_from_u64(seed);
        let shapes: Vec<Vec<usize>> = match self {
            Gelu { n } | Sum { n } => vec![vec![n]],
            Softmax { b, n } => vec![vec![b, n]],
            Layernorm { b, n } => vec![vec![b, n], vec![n], vec![n]],
            Colsum { r, c } => vec![vec![r, c]],
            Matmul { n } => vec![vec![n, n], vec![n, n]],
            Conv2d { n, c, h, w, o } => vec![vec![n, c, h, w], vec![o, c, 3, 3]],
            Transpose { n } => vec![vec![n, n]],
        };
        let mut inputs: Vec<AlignedVec<f32>> = shapes
            .iter()
            .map(|s| {
                let values: Vec<f32> = (0..s.iter().product::<usize>())
                    .map(|_| normal(&mut rng))
                    .collect();
                AlignedVec::from_slice_at(&values, offset)
            })
            .collect();
        if let (Conv2d { .. }, Some(k)) = (self, inputs.get_mut(1)) {
            k.iter_mut().for_each(|v| *v *= 0.05);
        }
        Data { inputs, shapes }
    }

    /// The number of output elements.
    pub fn output_len(self) -> usize {
        use Workload::*;
        match self {
            Gelu { n } => n,
            Softmax { b, n } | Layernorm { b, n } => b * n,
            Sum { .. } => 1,
            Colsum { c, .. } => c,
            Matmul { n } | Transpose { n } => n * n,
            Conv2d { n, h, w, o, .. } => n * o * h * w,
        }
    }

    /// The `.uop` program the prebuilt kernel was generated from.
    pub fn source(self) -> &'static str {
        use Workload::*;
        match self {
            Gelu { .. } => include_str!("../../prebuilt/kernels/gelu_chain.uop"),
            Softmax { .. } => include_str!("../../prebuilt/kernels/softmax.uop"),
            Layernorm { .. } => include_str!("../../prebuilt/kernels/layernorm.uop"),
            Sum { .. } => include_str!("../../prebuilt/kernels/sum.uop"),
            Colsum { .. } => include_str!("../../prebuilt/kernels/column_sum.uop"),
            Matmul { .. } => include_str!("../../prebuilt/kernels/matmul.uop"),
            Conv2d { .. } => include_str!("../../prebuilt/kernels/conv2d.uop"),
            Transpose { .. } => include_str!("../../prebuilt/kernels/transpose.uop"),
        }
    }

    /// Runs the prebuilt kernel of [`crate::kernels`] (Rust backend) on `d`, with
    /// the memory its loops use (temporaries, rows, panels) lent by `scratch`: kept
    /// between the timed calls, as a caller calling a kernel in a loop keeps it, so
    /// a call allocates nothing.
    #[cfg(feature = "prebuilt")]
    pub fn run_rust(
        self,
        d: &Data,
        scratch: &uop_runtime::Scratch,
        y: &mut [f32],
    ) -> Result<(), kernels::KernelError> {
        use Workload::*;
        let x = &d.inputs[0];
        let s = &d.shapes;
        let two = |i: usize| [s[i][0], s[i][1]];
        let four = |i: usize| [s[i][0], s[i][1], s[i][2], s[i][3]];
        match self {
            Gelu { n } => kernels::gelu_chain_f32(x, [n], y),
            Softmax { .. } => kernels::softmax_f32_with_scratch(scratch, x, two(0), y),
            Layernorm { n, .. } => {
                let (g, b) = (&d.inputs[1], &d.inputs[2]);
                kernels::layernorm_f32_with_scratch(scratch, x, two(0), g, [n], b, [n], y)
            }
            Sum { n } => kernels::sum_f32_with_scratch(scratch, x, [n], y),
            Colsum { .. } => kernels::column_sum_f32(x, two(0), y),
            Matmul { .. } => {
                kernels::matmul_f32_with_scratch(scratch, x, two(0), &d.inputs[1], two(1), y)
            }
            Conv2d { .. } => {
                kernels::conv2d_f32_with_scratch(scratch, x, four(0), &d.inputs[1], four(1), y)
            }
            Transpose { .. } => kernels::transpose_f32(x, two(0), y),
        }
    }

    /// Parses [`Workload::source`] and JIT-compiles it with Cranelift.
    pub fn compile_jit(self) -> Result<Kernel, String> {
        let program =
            parse_program(self.source(), &uop_ops::registry()).map_err(|e| e.to_string())?;
        crate::jit::compile(&program).map_err(|e| e.to_string())
    }

    /// The naive Rust loop nest, straight from the definition: libm `tanh` and `exp`,
    /// one accumulator, the definition's loop order (column sums walk down columns,
    /// matmul is i-j-k with a dot product innermost).
    pub fn run_naive(self, d: &Data, y: &mut [f32]) {
        use Workload::*;
        let x = &d.inputs[0];
        match self {
            Gelu { n } => {
                for i in 0..n {
                    let u = x[i] * 0.8 + 0.1;
                    let inner = (u + 0.044715 * u * u * u) * 0.797_884_6;
                    y[i] = 0.5 * u * (1.0 + inner.tanh());
                }
            }
            Softmax { b, n } => {
                for r in 0..b {
                    let row = &x[r * n..(r + 1) * n];
                    let out = &mut y[r * n..(r + 1) * n];
                    let m = row.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v));
                    let mut s = 0.0;
                    for j in 0..n {
                        out[j] = (row[j] - m).exp();
                        s += out[j];
                    }
                    for v in out.iter_mut() {
                        *v /= s;
                    }
                }
            }
            Layernorm { b, n } => {
                let (g, be) = (&d.inputs[1], &d.inputs[2]);
                for r in 0..b {
                    let row = &x[r * n..(r + 1) * n];
                    let mean = row.iter().sum::<f32>() / n as f32;
                    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
                    let inv = 1.0 / (var + 1e-5).sqrt();
                    for j in 0..n {
                        y[r * n + j] = (row[j] - mean) * inv * g[j] + be[j];
                    }
                }
            }
            Sum { n } => {
                let mut s = 0.0f32;
                for v in &x[..n] {
                    s += v;
                }
                y[0] = s;
            }
            Colsum { r, c } => {
                for j in 0..c {
                    let mut s = 0.0f32;
                    for i in 0..r {
                        s += x[i * c + j];
                    }
                    y[j] = s;
                }
            }
            Matmul { n } => {
                let b = &d.inputs[1];
                for i in 0..n {
                    for j in 0..n {
                        let mut s = 0.0f32;
                        for k in 0..n {
                            s += x[i * n + k] * b[k * n + j];
                        }
                        y[i * n + j] = s;
                    }
                }
            }
            Conv2d { n, c, h, w, o } => {
                let k = &d.inputs[1];
                for b in 0..n {
                    for oc in 0..o {
                        for yy in 0..h {
                            for xx in 0..w {
                                let mut s = 0.0f32;
                                for ic in 0..c {
                                    for kh in 0..3 {
                                        for kw in 0..3 {
                                            let (iy, ix) = (yy + kh, xx + kw);
                                            if iy < 1 || ix < 1 || iy > h || ix > w {
                                                continue;
                                            }
                                            let xv = x[((b * c + ic) * h + iy - 1) * w + ix - 1];
                                            s += xv * k[((oc * c + ic) * 3 + kh) * 3 + kw];
                                        }
                                    }
                                }
                                y[((b * o + oc) * h + yy) * w + xx] = s;
                            }
                        }
                    }
                }
            }
            Transpose { n } => {
                for i in 0..n {
                    for j in 0..n {
                        y[i * n + j] = x[j * n + i];
                    }
                }
            }
        }
    }
}

/// A standard-normal f32 (Box–Muller on two uniforms).
fn normal(rng: &mut StdRng) -> f32 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]: ln stays finite
    let u2: f64 = rng.random();
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

/// Runs `f` on the given JIT kernel with `d`'s inputs, writing `y`.
pub fn run_jit(kernel: &Kernel, d: &Data, y: &mut [f32]) -> Result<(), String> {
    let args: Vec<(Input<'_>, &[usize])> = d
        .inputs
        .iter()
        .zip(&d.shapes)
        .map(|(v, s)| (Input::F32(&v[..]), s.as_slice()))
        .collect();
    kernel
        .run_slices(&args, &HashMap::new(), &mut [Output::F32(y)])
        .map_err(|e| e.to_string())
}

/// How many times to call a function and when to stop early.
#[derive(Clone, Copy, Debug)]
pub struct Reps {
    /// Untimed calls first (caches, page faults of the output).
    pub warmup: usize,
    /// Timed calls wanted.
    pub reps: usize,
    /// Fewer timed calls (but at least 3, or `reps` if smaller) once this much time
    /// has been spent, so the naive matmul and conv loops keep the run short.
    pub budget: Duration,
}

/// The median of the timed calls of `f`, in milliseconds; the first error stops it.
pub fn median_ms<E>(reps: Reps, mut f: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    for _ in 0..reps.warmup {
        f()?;
    }
    let start = Instant::now();
    let mut times = Vec::with_capacity(reps.reps);
    while times.len() < reps.reps.max(1) {
        let t = Instant::now();
        black_box(f()?);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        if times.len() >= 3.min(reps.reps) && start.elapsed() > reps.budget {
            break;
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The largest difference between `a` and the reference `r`, relative to the largest
/// magnitude in `r` (at least 1): how far a kernel is from the naive loops.
pub fn max_rel_diff(a: &[f32], r: &[f32]) -> f64 {
    let scale = r.iter().fold(1.0f64, |m, &v| m.max(f64::from(v).abs()));
    let diff = a.iter().zip(r).fold(0.0f64, |m, (&x, &y)| {
        m.max((f64::from(x) - f64::from(y)).abs())
    });
    if a.len() != r.len() {
        f64::INFINITY
    } else {
        diff / scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_a_workload_and_unknown_names_list_them() {
        for name in NAMES {
            assert!(Workload::named(name, true).is_ok(), "{name}");
        }
        let e = Workload::named("gelu", false).unwrap_err().to_string();
        assert!(
            e.contains("unknown workload `gelu`") && e.contains("transpose_1024"),
            "{e}"
        );
    }

    #[test]
    fn measures_follow_peers_py() {
        let m = |n| Workload::named(n, false).unwrap().measure();
        assert_eq!(m("gelu_4M"), Measure::Bytes(8.0 * 4194304.0));
        assert_eq!(m("sum_16M"), Measure::Bytes(4.0 * 16777216.0));
        assert_eq!(m("matmul_512"), Measure::Flops(2.0 * 512f64.powi(3)));
        assert_eq!(
            m("conv2d_8x64x56x56_k3"),
            Measure::Flops(2.0 * 8.0 * 64.0 * 56.0 * 56.0 * 64.0 * 9.0)
        );
        assert_eq!(Measure::Bytes(46e9).rate(1000.0), 46.0);
    }

    #[test]
    fn kernels_and_naive_loops_agree_at_quick_sizes() {
        for name in NAMES {
            let w = Workload::named(name, true).unwrap();
            let d = w.data(1);
            let (mut naive, mut jit) = (vec![0.0; w.output_len()], vec![0.0; w.output_len()]);
            w.run_naive(&d, &mut naive);
            run_jit(&w.compile_jit().unwrap(), &d, &mut jit).unwrap();
            assert!(max_rel_diff(&jit, &naive) < 1e-4, "{name} cranelift");
            #[cfg(feature = "prebuilt")]
            {
                let mut rust = vec![0.0; w.output_len()];
                w.run_rust(&d, &uop_runtime::Scratch::new(), &mut rust)
                    .unwrap();
                assert!(max_rel_diff(&rust, &naive) < 1e-4, "{name} rust");
            }
        }
    }
}
