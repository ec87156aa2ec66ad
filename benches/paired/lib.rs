//! The prebuilt kernels the tile workloads time (matmul, conv2d), as C functions
//! for `benches/paired.py`: each call runs on one thread (`uop_paired_threads`)
//! with one scratch kept between calls, as a model keeps it.

use std::sync::OnceLock;

use uop_kernels::Scratch;

fn scratch() -> &'static Scratch {
    static SCRATCH: OnceLock<Scratch> = OnceLock::new();
    SCRATCH.get_or_init(Scratch::new)
}

/// Sets the threads the kernels use.
#[unsafe(no_mangle)]
pub extern "C" fn uop_paired_threads(n: usize) {
    uop_kernels::set_threads(n);
}

/// `c[m, n] = a[m, k] · b[k, n]`; 0 on success.
///
/// # Safety
///
/// The pointers hold `m·k`, `k·n` and `m·n` f32 values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uop_paired_matmul(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
) -> i32 {
    let (a, b, c) = unsafe {
        (
            std::slice::from_raw_parts(a, m * k),
            std::slice::from_raw_parts(b, k * n),
            std::slice::from_raw_parts_mut(c, m * n),
        )
    };
    match uop_kernels::matmul_f32_with_scratch(scratch(), a, [m, k], b, [k, n], c) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// `y[n, o, h, w]`: the 3 × 3 convolution of `x[n, c, h, w]` with `k[o, c, 3, 3]`,
/// padding 1; 0 on success.
///
/// # Safety
///
/// The pointers hold `n·c·h·w`, `o·c·9` and `n·o·h·w` f32 values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn uop_paired_conv2d(
    x: *const f32,
    k: *const f32,
    y: *mut f32,
    dims: *const usize,
) -> i32 {
    let [n, c, h, w, o] = unsafe { *(dims as *const [usize; 5]) };
    let (x, k, y) = unsafe {
        (
            std::slice::from_raw_parts(x, n * c * h * w),
            std::slice::from_raw_parts(k, o * c * 9),
            std::slice::from_raw_parts_mut(y, n * o * h * w),
        )
    };
    match uop_kernels::conv2d_f32_with_scratch(scratch(), x, [n, c, h, w], k, [o, c, 3, 3], y) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}
