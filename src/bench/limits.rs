//! The machine's own limits, measured rather than assumed: the f32 FMA peak at the
//! widest vector level the kernels use here ([`uop_runtime::cpu_level`], so
//! `UOP_CPU` caps it as it caps the kernels) and the memory bandwidth of a
//! STREAM-style triad over buffers far beyond the last-level cache. `uop bench`
//! states each workload's speed as a percentage of these.
//!
//! Both probes are short (about 50 ms of FMA and 5 triad passes over 192 MiB) and
//! run once per process and thread count ([`measured`]). On `threads` threads each
//! probe runs on that many threads at once and the rates add up, as the workloads'
//! do. The figures are as noisy as the machine: a probe on a loaded machine finds a
//! lower limit, and a percentage above 100 says the probe was disturbed.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The measured limits of this machine on some number of threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// f32 FMA peak, GFLOP/s (an FMA is two operations).
    pub gflops: f64,
    /// Triad bandwidth (two streams read, one written), GB/s.
    pub gbs: f64,
    /// The vector level the FMA peak was measured at: `avx512+fma`, `avx2+fma` or
    /// `sse2` (plain x86-64: a multiply and an add).
    pub level: &'static str,
    /// Threads the probes ran on.
    pub threads: usize,
}

impl Limits {
    /// The limit for a workload measured in `measure`'s unit.
    pub fn of(&self, measure: super::Measure) -> f64 {
        match measure {
            super::Measure::Bytes(_) => self.gbs,
            super::Measure::Flops(_) => self.gflops,
        }
    }

    /// `limits on this machine: X GFLOP/s (avx2+fma, 1 core), Y GB/s`.
    pub fn describe(&self) -> String {
        let cores = if self.threads == 1 { "core" } else { "cores" };
        format!(
            "limits on this machine: {:.1} GFLOP/s ({}, {} {cores}), {:.1} GB/s (triad)",
            self.gflops, self.level, self.threads, self.gbs
        )
    }
}

/// The limits on `threads` threads (at least 1), measured on the first call for that
/// count and cached for the rest of the process.
pub fn measured(threads: usize) -> Limits {
    static CACHE: OnceLock<Mutex<HashMap<usize, Limits>>> = OnceLock::new();
    let threads = threads.max(1);
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    *cache.entry(threads).or_insert_with(|| probe(threads))
}

fn probe(threads: usize) -> Limits {
    let (gflops, level) = fma_peak(threads);
    Limits {
        gflops,
        gbs: triad_bandwidth(threads, TRIAD_LEN),
        level,
        threads,
    }
}

/// Independent accumulators per thread: more than FMA latency × FMA ports (4 × 2 on
/// current x86 cores), so the loop is bound by throughput, not latency.
const ACCUMULATORS: usize = 12;

/// The f32 FMA peak on `threads` threads, GFLOP/s, and the level it was measured at.
fn fma_peak(threads: usize) -> (f64, &'static str) {
    let (kernel, lanes, level) = fma_kernel();
    // Calibrate to about 10 ms per run on one thread, then keep the best of 5 runs.
    let mut iters: u64 = 1 << 14;
    loop {
        let t = Instant::now();
        black_box(kernel(iters));
        if t.elapsed() >= Duration::from_millis(2) || iters >= 1 << 40 {
            let per = t.elapsed().as_secs_f64() / iters as f64;
            iters = ((0.01 / per.max(1e-12)) as u64).clamp(1 << 14, 1 << 40);
            break;
        }
        iters *= 4;
    }
    let flops = (iters as f64) * (ACCUMULATORS * lanes * 2) as f64 * threads as f64;
    let best = (0..5)
        .map(|_| {
            on_threads(threads, |_| {
                black_box(kernel(iters));
            })
        })
        .fold(f64::INFINITY, f64::min);
    (flops / best / 1e9, level)
}

/// The FMA loop of the widest level the kernels use here: the function, f32 lanes
/// per vector, and the level's name.
fn fma_kernel() -> (fn(u64) -> f32, usize, &'static str) {
    #[cfg(target_arch = "x86_64")]
    {
        match uop_runtime::cpu_level() {
            2 => return (x86::fma_avx512, 16, "avx512+fma"),
            1 => return (x86::fma_avx2, 8, "avx2+fma"),
            _ => return (x86::mul_add_sse2, 4, "sse2"),
        }
    }
    #[allow(unreachable_code)]
    (scalar_mul_add, 1, "scalar")
}

/// Portable fallback: independent scalar multiply-adds.
#[allow(dead_code)]
fn scalar_mul_add(iters: u64) -> f32 {
    let mut acc = [0.0f32; ACCUMULATORS];
    let (a, b) = (black_box(0.999_999f32), black_box(1e-7f32));
    for _ in 0..iters {
        for x in &mut acc {
            *x = x.mul_add(a, b);
        }
    }
    acc.iter().sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The FMA loops: `ACCUMULATORS` independent vector accumulators, each updated
    //! as `acc = acc * a + b` once per iteration.
    use std::arch::x86_64::*;
    use std::hint::black_box;

    use super::ACCUMULATORS;

    pub(super) fn fma_avx512(iters: u64) -> f32 {
        // SAFETY: chosen only when `cpu_level()` is 2 (AVX-512F, AVX2 and FMA detected).
        unsafe { fma_avx512_impl(iters) }
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    fn fma_avx512_impl(iters: u64) -> f32 {
        let a = _mm512_set1_ps(black_box(0.999_999));
        let b = _mm512_set1_ps(black_box(1e-7));
        let mut acc = [_mm512_setzero_ps(); ACCUMULATORS];
        for _ in 0..iters {
            for x in &mut acc {
                *x = _mm512_fmadd_ps(*x, a, b);
            }
        }
        let mut sum = _mm512_setzero_ps();
        for x in acc {
            sum = _mm512_add_ps(sum, x);
        }
        _mm512_reduce_add_ps(sum)
    }

    pub(super) fn fma_avx2(iters: u64) -> f32 {
        // SAFETY: chosen only when `cpu_level()` is at least 1 (AVX2 and FMA detected).
        unsafe { fma_avx2_impl(iters) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn fma_avx2_impl(iters: u64) -> f32 {
        let a = _mm256_set1_ps(black_box(0.999_999));
        let b = _mm256_set1_ps(black_box(1e-7));
        let mut acc = [_mm256_setzero_ps(); ACCUMULATORS];
        for _ in 0..iters {
            for x in &mut acc {
                *x = _mm256_fmadd_ps(*x, a, b);
            }
        }
        let mut sum = _mm256_setzero_ps();
        for x in acc {
            sum = _mm256_add_ps(sum, x);
        }
        let mut lanes = [0.0f32; 8];
        // SAFETY: `lanes` holds 8 f32, the store is unaligned.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sum) };
        lanes.iter().sum()
    }

    /// Plain x86-64 has no FMA: a multiply and an add, also two operations per lane.
    pub(super) fn mul_add_sse2(iters: u64) -> f32 {
        // SAFETY: SSE2 is part of every x86-64 CPU.
        unsafe { mul_add_sse2_impl(iters) }
    }

    #[target_feature(enable = "sse2")]
    fn mul_add_sse2_impl(iters: u64) -> f32 {
        let a = _mm_set1_ps(black_box(0.999_999));
        let b = _mm_set1_ps(black_box(1e-7));
        let mut acc = [_mm_setzero_ps(); ACCUMULATORS];
        for _ in 0..iters {
            for x in &mut acc {
                *x = _mm_add_ps(_mm_mul_ps(*x, a), b);
            }
        }
        let mut sum = _mm_setzero_ps();
        for x in acc {
            sum = _mm_add_ps(sum, x);
        }
        let mut lanes = [0.0f32; 4];
        // SAFETY: `lanes` holds 4 f32, the store is unaligned.
        unsafe { _mm_storeu_ps(lanes.as_mut_ptr(), sum) };
        lanes.iter().sum()
    }
}

/// f32 elements per triad array: 3 × 64 MiB, far beyond any last-level cache of a
/// core complex (32–96 MiB on current server parts).
const TRIAD_LEN: usize = 16 << 20;

/// STREAM's triad `a[i] = b[i] + s * c[i]` over `len` f32 per array, split over
/// `threads` threads; GB/s counted as STREAM does (12 bytes per element: two read,
/// one written), best of 4 timed passes after one that touches every page.
fn triad_bandwidth(threads: usize, len: usize) -> f64 {
    let mut a = vec![0.0f32; len];
    let b = vec![1.0f32; len];
    let c = vec![2.0f32; len];
    let chunk = len.div_ceil(threads);
    let mut pass = |s: f32| {
        let start = Instant::now();
        std::thread::scope(|scope| {
            let mut parts = a
                .chunks_mut(chunk)
                .zip(b.chunks(chunk).zip(c.chunks(chunk)));
            let first = parts.next();
            for (a, (b, c)) in parts {
                scope.spawn(move || triad(a, b, c, s));
            }
            if let Some((a, (b, c))) = first {
                triad(a, b, c, s);
            }
        });
        start.elapsed().as_secs_f64()
    };
    pass(3.0);
    let best = (0..4)
        .map(|k| pass(black_box(3.0 + k as f32)))
        .fold(f64::INFINITY, f64::min);
    (3 * 4 * len) as f64 / best / 1e9
}

fn triad(a: &mut [f32], b: &[f32], c: &[f32], s: f32) {
    for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
        *x = y + s * z;
    }
    black_box(a);
}

/// Runs `f(t)` for `t` in `0..threads` on as many threads at once (the calling thread
/// takes `t = 0`) and returns the wall time of the slowest, in seconds.
fn on_threads(threads: usize, f: impl Fn(usize) + Sync) -> f64 {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 1..threads {
            let f = &f;
            scope.spawn(move || f(t));
        }
        f(0);
    });
    start.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_find_finite_positive_limits_once_per_process() {
        let l = measured(1);
        assert!(l.gflops.is_finite() && l.gflops > 0.0, "{l:?}");
        assert!(l.gbs.is_finite() && l.gbs > 0.0, "{l:?}");
        assert_eq!(l.threads, 1);
        // Cached: the same figures again, not a new measurement.
        assert_eq!(measured(1), l);
        let text = l.describe();
        assert!(text.starts_with("limits on this machine: "), "{text}");
        assert!(text.contains(&format!("({}, 1 core)", l.level)), "{text}");
    }

    #[test]
    fn the_level_is_the_kernels_level() {
        let (_, _, level) = fma_kernel();
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            level,
            ["sse2", "avx2+fma", "avx512+fma"][usize::from(uop_runtime::cpu_level())]
        );
        assert!(!level.is_empty());
    }

    #[test]
    fn a_small_triad_on_two_threads_gives_a_finite_rate() {
        let gbs = triad_bandwidth(2, 1 << 12);
        assert!(gbs.is_finite() && gbs > 0.0, "{gbs}");
        let (gflops, _) = fma_peak(2);
        assert!(gflops.is_finite() && gflops > 0.0, "{gflops}");
    }
}
