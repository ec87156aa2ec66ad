//! How generated code reaches the runtime: every helper a kernel calls lives in
//! crate `uop-runtime`, which a generated file imports as `rt`
//! (`use uop_runtime as rt;`) or, in standalone mode, holds as `mod rt` copied
//! from the same sources ([`uop_runtime::source::standalone_module`]). The
//! file itself then has only its kernels.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// A runtime item a kernel calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Helper {
    /// Input shapes as `i64`, refusing sizes beyond `i64::MAX`.
    Dims,
    /// A buffer's length against its shape.
    CheckLen,
    CheckElements,
    /// An `i64` size expression as a `usize` size.
    Size,
    /// The memory a kernel's loops take their buffers from (temporaries, rows,
    /// panels), kept between calls by whoever owns it.
    Scratch,
    /// The checked number of elements of a temporary's `i64` shape.
    BufferLen,
    /// The row-major offset of a subscript that may be out of range.
    Offset,
    /// Floor division of index values.
    FloorDiv,
    /// The modulo matching floor division.
    FloorMod,
    /// Floor division of sizes, `None` for a zero divisor or an overflow.
    CheckedFloorDiv,
    /// The modulo matching floor division of sizes, `None` as for division.
    CheckedFloorMod,
    /// NaN-propagating maximum (f32 / f64).
    Maximum(bool),
    /// NaN-propagating minimum (f32 / f64).
    Minimum(bool),
    /// -1, 0 or 1, NaN stays NaN (f32 / f64).
    Sign(bool),
    /// `a * b + c`, fused where the target has FMA (f32 / f64).
    MulAdd(bool),
    /// A buffer the threads of a parallel loop write disjoint elements of.
    Shared,
    /// Runs a kernel's loops on several threads, each on its part.
    Parts,
    /// The number of parts [`Helper::Parts`] runs, for a kernel that reserves
    /// its per-thread buffers before its threads start.
    PartsFor,
    /// Runs a kernel's loops on a given number of parts.
    RunParts,
    /// One thread's part of the loops.
    Part,
    /// How many elements from a pointer to the next cache line.
    LinePhase,
    /// Partial results rotated by a run-time count.
    RotatedRight,
    /// Which copy of a kernel's loops this CPU runs (`UOP_CPU` may cap it).
    CpuLevel,
    /// The error function of f64 programs (f32 ones use [`Helper::Vmath`]).
    ErfF64,
    /// A block copied across (a transpose), in vector tiles where the CPU has
    /// them (f32 / f64).
    Transpose(bool),
    /// A function of `uop_runtime::vmath`, by name (`exp_f32`, ...).
    Vmath(&'static str),
}

/// The path of `h` in generated code: `rt::check_len`, `rt::vmath::exp_f32`, ...
pub(super) fn path(h: Helper) -> TokenStream {
    let t = |is32: bool| if is32 { "f32" } else { "f64" };
    let name = match h {
        Helper::Vmath(name) => {
            let f = format_ident!("{name}");
            return quote!(rt::vmath::#f);
        }
        Helper::Maximum(is32) => format!("maximum_{}", t(is32)),
        Helper::Minimum(is32) => format!("minimum_{}", t(is32)),
        Helper::Sign(is32) => format!("sign_{}", t(is32)),
        Helper::MulAdd(is32) => format!("mul_add_{}", t(is32)),
        Helper::Transpose(is32) => format!("transpose_block_{}", t(is32)),
        Helper::ErfF64 => "erf_f64".into(),
        Helper::Shared => "Shared".into(),
        Helper::Parts => "in_parts".into(),
        Helper::PartsFor => "parts_for".into(),
        Helper::RunParts => "run_parts".into(),
        Helper::Part => "Part".into(),
        Helper::LinePhase => "line_phase".into(),
        Helper::Scratch => "Scratch".into(),
        Helper::RotatedRight => "rotated_right".into(),
        Helper::CpuLevel => "cpu_level".into(),
        Helper::Dims => "dims".into(),
        Helper::CheckLen => "check_len".into(),
        Helper::CheckElements => "check_elements".into(),
        Helper::Size => "size".into(),
        Helper::BufferLen => "buffer_len".into(),
        Helper::Offset => "offset".into(),
        Helper::FloorDiv => "floor_div".into(),
        Helper::FloorMod => "floor_mod".into(),
        Helper::CheckedFloorDiv => "checked_floor_div".into(),
        Helper::CheckedFloorMod => "checked_floor_mod".into(),
    };
    let f = format_ident!("{name}");
    quote!(rt::#f)
}

/// What a generated file says before its kernels: the runtime's name `rt` (the
/// crate, or in standalone mode the module appended by [`standalone_module`]),
/// and the error type the kernels' signatures show, re-exported so that
/// `kernels::KernelError` names it. (The thread count is the runtime's:
/// `uop_runtime::set_threads`, for every kernel of the process.)
pub(super) fn imports(standalone: bool) -> TokenStream {
    let import = if standalone {
        quote!()
    } else {
        quote!(
            use uop_runtime as rt;
        )
    };
    quote! {
        #import
        pub use rt::KernelError;
    }
}

/// The runtime as `mod rt { ... }`, for the end of a standalone file.
pub(super) fn standalone_module() -> String {
    uop_runtime::source::standalone_module()
}

/// Module-level names a generated file takes besides its kernels' items.
pub(super) const RESERVED: &[&str] = &["rt", "KernelError"];
