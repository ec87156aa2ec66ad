//! The prebuilt kernels (`uop::kernels`, generated from `kernels/*.uop`) against
//! naive hand-written Rust loops on the same data. Run with `cargo bench`; the
//! README lists a run. Sizes are those of the README table.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use uop::kernels;

/// Deterministic data in [-1, 1) (a small LCG; the benches need no rand).
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

mod naive {
    pub fn gelu_chain(x: &[f32], y: &mut [f32]) {
        for (y, &x) in y.iter_mut().zip(x) {
            let u = x * 0.8 + 0.1;
            let inner = (u + u * u * u * 0.044715) * 0.797_884_6;
            *y = u * 0.5 * (inner.tanh() + 1.0);
        }
    }

    pub fn softmax(x: &[f32], rows: usize, cols: usize, y: &mut [f32]) {
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let out = &mut y[r * cols..(r + 1) * cols];
            let m = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let mut s = 0.0;
            for (o, &v) in out.iter_mut().zip(row) {
                *o = (v - m).exp();
                s += *o;
            }
            for o in out.iter_mut() {
                *o /= s;
            }
        }
    }

    pub fn layernorm(x: &[f32], g: &[f32], b: &[f32], rows: usize, cols: usize, y: &mut [f32]) {
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let mean = row.iter().sum::<f32>() / cols as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / cols as f32;
            let inv = 1.0 / (var + 1e-5).sqrt();
            for c in 0..cols {
                y[r * cols + c] = (row[c] - mean) * inv * g[c] + b[c];
            }
        }
    }

    pub fn sum(x: &[f32]) -> f32 {
        let mut s = 0.0;
        for &v in x {
            s += v;
        }
        s
    }

    pub fn column_sum(x: &[f32], rows: usize, cols: usize, y: &mut [f32]) {
        y.fill(0.0);
        for r in 0..rows {
            for c in 0..cols {
                y[c] += x[r * cols + c];
            }
        }
    }

    pub fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize, c: &mut [f32]) {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for p in 0..k {
                    s += a[i * k + p] * b[p * n + j];
                }
                c[i * n + j] = s;
            }
        }
    }

    /// NCHW, 3×3, stride 1, zero padding 1.
    pub fn conv2d(x: &[f32], w: &[f32], dims: [usize; 5], y: &mut [f32]) {
        let [n, c, h, wd, o] = dims;
        for b in 0..n {
            for oc in 0..o {
                for i in 0..h {
                    for j in 0..wd {
                        let mut s = 0.0;
                        for ic in 0..c {
                            for ki in 0..3 {
                                for kj in 0..3 {
                                    let (ii, jj) = (i + ki, j + kj);
                                    if ii >= 1 && ii <= h && jj >= 1 && jj <= wd {
                                        s += x[((b * c + ic) * h + ii - 1) * wd + jj - 1]
                                            * w[((oc * c + ic) * 3 + ki) * 3 + kj];
                                    }
                                }
                            }
                        }
                        y[((b * o + oc) * h + i) * wd + j] = s;
                    }
                }
            }
        }
    }

    pub fn transpose(x: &[f32], rows: usize, cols: usize, y: &mut [f32]) {
        for r in 0..rows {
            for c in 0..cols {
                y[c * rows + r] = x[r * cols + c];
            }
        }
    }
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("kernels");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));

    let n = 4 << 20;
    let x = data(n, 1);
    let mut y = vec![0.0; n];
    g.bench_function("gelu_chain 4M/uop", |b| {
        b.iter(|| kernels::gelu_chain_f32(black_box(&x), [n], &mut y))
    });
    g.bench_function("gelu_chain 4M/naive", |b| {
        b.iter(|| naive::gelu_chain(black_box(&x), &mut y))
    });

    let (rows, cols) = (4096, 1024);
    let x = data(rows * cols, 2);
    let gamma = data(cols, 3);
    let beta = data(cols, 4);
    let mut y = vec![0.0; rows * cols];
    g.bench_function("softmax 4096x1024/uop", |b| {
        b.iter(|| kernels::softmax_f32(black_box(&x), [rows, cols], &mut y))
    });
    g.bench_function("softmax 4096x1024/naive", |b| {
        b.iter(|| naive::softmax(black_box(&x), rows, cols, &mut y))
    });
    g.bench_function("layernorm 4096x1024/uop", |b| {
        b.iter(|| {
            kernels::layernorm_f32(
                black_box(&x),
                [rows, cols],
                &gamma,
                [cols],
                &beta,
                [cols],
                &mut y,
            )
        })
    });
    g.bench_function("layernorm 4096x1024/naive", |b| {
        b.iter(|| naive::layernorm(black_box(&x), &gamma, &beta, rows, cols, &mut y))
    });
    let mut cs = vec![0.0; cols];
    g.bench_function("column_sum 4096x1024/uop", |b| {
        b.iter(|| kernels::column_sum_f32(black_box(&x), [rows, cols], &mut cs))
    });
    g.bench_function("column_sum 4096x1024/naive", |b| {
        b.iter(|| naive::column_sum(black_box(&x), rows, cols, &mut cs))
    });

    let n = 16 << 20;
    let x = data(n, 5);
    let mut s = [0.0];
    g.bench_function("sum 16M/uop", |b| {
        b.iter(|| kernels::sum_f32(black_box(&x), [n], &mut s))
    });
    g.bench_function("sum 16M/naive", |b| b.iter(|| naive::sum(black_box(&x))));

    let m = 512;
    let a = data(m * m, 6);
    let bm = data(m * m, 7);
    let mut cm = vec![0.0; m * m];
    g.bench_function("matmul 512/uop", |b| {
        b.iter(|| kernels::matmul_f32(black_box(&a), [m, m], &bm, [m, m], &mut cm))
    });
    g.bench_function("matmul 512/naive", |b| {
        b.iter(|| naive::matmul(black_box(&a), &bm, m, m, m, &mut cm))
    });

    let (bn, ch, h, w, o) = (8, 64, 56, 56, 64);
    let x = data(bn * ch * h * w, 8);
    let k = data(o * ch * 9, 9);
    let mut y = vec![0.0; bn * o * h * w];
    g.bench_function("conv2d 8x64x56x56 k3/uop", |b| {
        b.iter(|| kernels::conv2d_f32(black_box(&x), [bn, ch, h, w], &k, [o, ch, 3, 3], &mut y))
    });
    g.bench_function("conv2d 8x64x56x56 k3/naive", |b| {
        b.iter(|| naive::conv2d(black_box(&x), &k, [bn, ch, h, w, o], &mut y))
    });

    let t = 1024;
    let x = data(t * t, 10);
    let mut y = vec![0.0; t * t];
    g.bench_function("transpose 1024/uop", |b| {
        b.iter(|| kernels::transpose_f32(black_box(&x), [t, t], &mut y))
    });
    g.bench_function("transpose 1024/naive", |b| {
        b.iter(|| naive::transpose(black_box(&x), t, t, &mut y))
    });
    g.finish();
}

criterion_group!(kernel_benches, benches);
criterion_main!(kernel_benches);
