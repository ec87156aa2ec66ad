//! The functions compiled kernels call: math functions, allocation and zeroing.
//!
//! Kernels never depend on the system libm directly when JIT-compiled: every
//! symbol they may import is one of the `extern "C"` functions below, registered by
//! name with the JIT. Each math function is the interpreter's own scalar function
//! ([`UnaryOp::apply`], [`BinaryOp::apply`]) on `f64`, so JIT results match the
//! oracle bit for bit; f32 programs widen, call and round, exactly as the
//! interpreter does, for the functions they do not compute inline (`sin`, `cos`,
//! `pow`: `exp log tanh sigmoid erf` are inline f32 code there, see `vmath`).
//!
//! JIT kernels also call the runtime crate's per-CPU-level code: the register-tile
//! micro-kernels and panel packing of `uop_runtime::microkernel` and the math over
//! runs of lanes of `uop_runtime::math_runs`, each level's function registered
//! under its own symbol (a kernel calls the host level's, or a narrower
//! level's micro-kernel for ranges narrower than the host's tile).
//!
//! In an object file the same calls go to the C library instead (`exp`, `pow`,
//! `calloc`, ...), resolved when the object is linked with `-lm`; an object file
//! calls no runtime code (it keeps Cranelift's own tiles and inline math).

use std::alloc::{Layout, alloc_zeroed, dealloc};

use uop_runtime::{math_runs, microkernel};

use crate::uop::{BinaryOp, UnaryOp};

/// Where a compiled kernel's calls are resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Linking {
    /// In this process, to the functions of this module.
    Jit,
    /// At link time, to the C library (`-lm` for the math functions).
    Object,
}

/// A function a kernel imports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuntimeFn {
    /// `f64 -> f64` math function.
    Math(MathFn),
    /// `pow(f64, f64) -> f64`.
    Pow,
    /// Zeroed allocation of a byte count (`calloc(1, n)` in C); null on failure.
    Alloc,
    /// Frees what [`RuntimeFn::Alloc`] returned (null is allowed).
    Free,
    /// Sets a byte count to zero (`memset(p, 0, n)` in C).
    Zero,
    /// A register tile of the micro-kernel of the level at this index of
    /// `uop_runtime::microkernel::LEVELS` (at most the host's; JIT only: an
    /// object file has no runtime).
    Contract(u8),
    /// Packs a column panel for [`RuntimeFn::Contract`] (JIT only).
    Pack,
    /// A math function over a run of f32 lanes, in place, on the host level's
    /// vectors (`uop_runtime::math_runs`, JIT only).
    MathRun,
}

/// The one-argument math functions that have no Cranelift instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    /// `exp`
    Exp,
    /// `log`
    Log,
    /// `tanh`
    Tanh,
    /// `sin`
    Sin,
    /// `cos`
    Cos,
    /// `erf`
    Erf,
}

impl MathFn {
    /// The interpreter's operator this function computes.
    pub fn op(self) -> UnaryOp {
        match self {
            MathFn::Exp => UnaryOp::Exp,
            MathFn::Log => UnaryOp::Log,
            MathFn::Tanh => UnaryOp::Tanh,
            MathFn::Sin => UnaryOp::Sin,
            MathFn::Cos => UnaryOp::Cos,
            MathFn::Erf => UnaryOp::Erf,
        }
    }
}

impl RuntimeFn {
    /// Every function a kernel may import (all are registered with the JIT).
    pub const ALL: [RuntimeFn; 15] = [
        RuntimeFn::Math(MathFn::Exp),
        RuntimeFn::Math(MathFn::Log),
        RuntimeFn::Math(MathFn::Tanh),
        RuntimeFn::Math(MathFn::Sin),
        RuntimeFn::Math(MathFn::Cos),
        RuntimeFn::Math(MathFn::Erf),
        RuntimeFn::Pow,
        RuntimeFn::Alloc,
        RuntimeFn::Free,
        RuntimeFn::Zero,
        RuntimeFn::Contract(0),
        RuntimeFn::Contract(1),
        RuntimeFn::Contract(2),
        RuntimeFn::Pack,
        RuntimeFn::MathRun,
    ];

    /// The symbol a call to this function is linked against.
    pub fn symbol(self, linking: Linking) -> &'static str {
        match (linking, self) {
            (Linking::Jit, RuntimeFn::Math(m)) => match m {
                MathFn::Exp => "uop_exp",
                MathFn::Log => "uop_log",
                MathFn::Tanh => "uop_tanh",
                MathFn::Sin => "uop_sin",
                MathFn::Cos => "uop_cos",
                MathFn::Erf => "uop_erf",
            },
            (Linking::Object, RuntimeFn::Math(m)) => match m {
                MathFn::Exp => "exp",
                MathFn::Log => "log",
                MathFn::Tanh => "tanh",
                MathFn::Sin => "sin",
                MathFn::Cos => "cos",
                MathFn::Erf => "erf",
            },
            (Linking::Jit, RuntimeFn::Pow) => "uop_pow",
            (Linking::Object, RuntimeFn::Pow) => "pow",
            (Linking::Jit, RuntimeFn::Alloc) => "uop_alloc",
            (Linking::Object, RuntimeFn::Alloc) => "calloc",
            (Linking::Jit, RuntimeFn::Free) => "uop_free",
            (Linking::Object, RuntimeFn::Free) => "free",
            (Linking::Jit, RuntimeFn::Zero) => "uop_zero",
            (Linking::Object, RuntimeFn::Zero) => "memset",
            // The runtime's own functions: only JIT kernels call them.
            (_, RuntimeFn::Contract(level)) => {
                microkernel::LEVELS[usize::from(level).min(microkernel::LEVELS.len() - 1)].symbol
            }
            (_, RuntimeFn::Pack) => "uop_pack_f32",
            (_, RuntimeFn::MathRun) => math_runs::host_level().symbol,
        }
    }
}

extern "C" fn uop_exp(x: f64) -> f64 {
    UnaryOp::Exp.apply(x)
}
extern "C" fn uop_log(x: f64) -> f64 {
    UnaryOp::Log.apply(x)
}
extern "C" fn uop_tanh(x: f64) -> f64 {
    UnaryOp::Tanh.apply(x)
}
extern "C" fn uop_sin(x: f64) -> f64 {
    UnaryOp::Sin.apply(x)
}
extern "C" fn uop_cos(x: f64) -> f64 {
    UnaryOp::Cos.apply(x)
}
extern "C" fn uop_erf(x: f64) -> f64 {
    UnaryOp::Erf.apply(x)
}
extern "C" fn uop_pow(a: f64, b: f64) -> f64 {
    BinaryOp::Pow.apply(a, b)
}

/// Bytes before each allocation that remember its size, so [`uop_free`] can rebuild
/// the layout; 16 keeps the data 16-byte aligned for vector loads.
const HEADER: usize = 16;

extern "C" fn uop_alloc(bytes: i64) -> *mut u8 {
    let Some(total) = usize::try_from(bytes)
        .ok()
        .and_then(|b| b.checked_add(HEADER))
    else {
        return std::ptr::null_mut();
    };
    let Ok(layout) = Layout::from_size_align(total, HEADER) else {
        return std::ptr::null_mut();
    };
    // A block kept from an earlier call of this size (zeroed), else a new one.
    // SAFETY: the layout has a non-zero size (at least HEADER bytes).
    let base = crate::spare::take(layout).unwrap_or_else(|| unsafe { alloc_zeroed(layout) });
    if base.is_null() {
        return base;
    }
    // SAFETY: the block is at least HEADER bytes and 16-aligned, so the size fits
    // at its start and the data begins HEADER bytes in.
    unsafe {
        base.cast::<usize>().write(total);
        base.add(HEADER)
    }
}

extern "C" fn uop_free(data: *mut u8) {
    if data.is_null() {
        return;
    }
    // SAFETY: `data` came from uop_alloc, which put the total size HEADER bytes
    // before it in a block allocated with exactly this layout; a block the
    // per-thread list keeps (for the next call) is not freed.
    unsafe {
        let base = data.sub(HEADER);
        let total = base.cast::<usize>().read();
        let layout = Layout::from_size_align_unchecked(total, HEADER);
        if !crate::spare::keep(layout, base) {
            dealloc(base, layout);
        }
    }
}

extern "C" fn uop_zero(data: *mut u8, bytes: i64) {
    if let Ok(n) = usize::try_from(bytes)
        && n > 0
    {
        // SAFETY: kernels call this only on a buffer of at least `bytes` bytes
        // (an output the caller provided with its checked size).
        unsafe { std::ptr::write_bytes(data, 0, n) };
    }
}

// Cranelift turns floor/ceil/trunc/nearest/fma into these calls on hosts without the
// instructions (x86-64 before SSE4.1); register them so such a call always resolves.
extern "C" fn floorf(x: f32) -> f32 {
    x.floor()
}
extern "C" fn floor(x: f64) -> f64 {
    x.floor()
}
extern "C" fn ceilf(x: f32) -> f32 {
    x.ceil()
}
extern "C" fn ceil(x: f64) -> f64 {
    x.ceil()
}
extern "C" fn truncf(x: f32) -> f32 {
    x.trunc()
}
extern "C" fn trunc(x: f64) -> f64 {
    x.trunc()
}
extern "C" fn nearbyintf(x: f32) -> f32 {
    x.round_ties_even()
}
extern "C" fn nearbyint(x: f64) -> f64 {
    x.round_ties_even()
}
extern "C" fn fmaf(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}
extern "C" fn fma(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// Every symbol a JIT-compiled kernel may reference, with its address: the runtime
/// functions and the libcalls Cranelift may insert.
pub fn jit_symbols() -> Vec<(&'static str, *const u8)> {
    let contract = microkernel::LEVELS
        .iter()
        .map(|l| (l.symbol, l.contract as *const u8));
    let pack = ("uop_pack_f32", microkernel::uop_pack_f32 as *const u8);
    let runs = math_runs::LEVELS
        .iter()
        .map(|l| (l.symbol, l.apply as *const u8));
    contract
        .chain([pack])
        .chain(runs)
        .chain([
            ("uop_exp", uop_exp as *const u8),
            ("uop_log", uop_log as *const u8),
            ("uop_tanh", uop_tanh as *const u8),
            ("uop_sin", uop_sin as *const u8),
            ("uop_cos", uop_cos as *const u8),
            ("uop_erf", uop_erf as *const u8),
            ("uop_pow", uop_pow as *const u8),
            ("uop_alloc", uop_alloc as *const u8),
            ("uop_free", uop_free as *const u8),
            ("uop_zero", uop_zero as *const u8),
            ("floorf", floorf as *const u8),
            ("floor", floor as *const u8),
            ("ceilf", ceilf as *const u8),
            ("ceil", ceil as *const u8),
            ("truncf", truncf as *const u8),
            ("trunc", trunc as *const u8),
            ("nearbyintf", nearbyintf as *const u8),
            ("nearbyint", nearbyint as *const u8),
            ("fmaf", fmaf as *const u8),
            ("fma", fma as *const u8),
        ])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_micro_kernels_have_the_rust_backends_tile_shapes() {
        // The JIT realizes the plan the Rust copies realize: one tile shape per level.
        use crate::target::Target;
        assert_eq!(microkernel::LEVELS.len(), math_runs::LEVELS.len());
        for (level, target) in microkernel::LEVELS.iter().zip(Target::X86_64) {
            let shape = (target.tile_rows as usize, target.tile_cols as usize);
            assert_eq!((level.rows, level.columns), shape, "{}", target.name);
            assert!(level.symbol.ends_with(target.name), "{}", level.symbol);
        }
    }

    #[test]
    fn every_jit_import_is_registered() {
        let registered: Vec<&str> = jit_symbols().iter().map(|(n, _)| *n).collect();
        for f in RuntimeFn::ALL {
            assert!(registered.contains(&f.symbol(Linking::Jit)), "{f:?}");
        }
    }

    #[test]
    fn no_kernel_name_can_be_an_imported_symbol() {
        use crate::backend::names::{Language, check_kernel_name};
        // An object file's kernel `NAME` and `NAME_shapes` never clash with a
        // symbol the kernel calls: the C name rule refuses every one of them.
        let object = RuntimeFn::ALL.map(|f| f.symbol(Linking::Object));
        let libcalls = jit_symbols().into_iter().map(|(n, _)| n);
        for symbol in object.into_iter().chain(libcalls) {
            if symbol.starts_with("uop_") {
                continue; // the JIT's own imports; JIT kernels have no user name
            }
            assert!(
                check_kernel_name(symbol, Language::C).is_err(),
                "`{symbol}` could name a kernel"
            );
        }
    }

    #[test]
    fn allocation_is_zeroed_aligned_and_freed() {
        let p = uop_alloc(40);
        assert!(!p.is_null());
        assert_eq!(p as usize % 16, 0);
        // SAFETY: 40 bytes were allocated.
        let bytes = unsafe { std::slice::from_raw_parts(p, 40) };
        assert!(bytes.iter().all(|&b| b == 0));
        uop_free(p);
        assert!(uop_alloc(-1).is_null());
        uop_free(std::ptr::null_mut());
    }
}
