//! What a generated file holds once, before its kernels: the error type every
//! kernel returns and the small helpers the kernels call (each emitted only when
//! some kernel of the file uses it, so the file has no dead code), including the
//! vectorizable f32 math of [`super::vmath`], taken from that module's own source.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::quote;

/// A helper function of the generated file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Helper {
    /// Input shapes as `i64`, refusing sizes beyond `i64::MAX`.
    Dims,
    /// A buffer's length against its shape.
    CheckLen,
    /// An `i64` size expression as a `usize` size.
    Size,
    /// A zeroed temporary of an `i64` shape.
    Zeroed,
    /// A zeroed temporary of an `i64` shape that starts a cache line.
    ZeroedLines,
    /// A zeroed buffer that starts a cache line.
    Lines,
    /// The checked number of elements of a temporary's `i64` shape.
    BufferLen,
    /// The number of elements of a shape.
    Elements,
    /// The row-major offset of a subscript that may be out of range.
    Offset,
    /// Floor division of index values.
    FloorDiv,
    /// The modulo matching floor division.
    FloorMod,
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
    /// The thread count (`set_threads`, `UOP_THREADS`).
    Threads,
    /// A thread's part of an inner loop's range, cut at multiples of a step.
    RangeInSteps,
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
    /// A function of [`super::vmath`], by name (`exp_f32`, ...), emitted with the
    /// constants and helpers it uses into the generated `mod vmath`.
    Vmath(&'static str),
}

/// The helpers some kernel of a file uses.
#[derive(Clone, Debug, Default)]
pub(super) struct Helpers(BTreeSet<Helper>);

impl Helpers {
    /// Records that `h` is needed (and what `h` itself calls).
    pub(super) fn need(&mut self, h: Helper) {
        self.0.insert(h);
        match h {
            Helper::CheckLen => self.need(Helper::Elements),
            Helper::Zeroed => self.need(Helper::BufferLen),
            Helper::ZeroedLines => {
                self.need(Helper::BufferLen);
                self.need(Helper::Lines);
            }
            Helper::BufferLen => {
                self.need(Helper::Size);
                self.need(Helper::Elements);
            }
            Helper::Parts => self.need(Helper::Threads),
            Helper::RangeInSteps => self.need(Helper::Parts),
            _ => {}
        }
    }

    /// The helpers recorded so far.
    pub(super) fn iter(&self) -> impl Iterator<Item = Helper> + '_ {
        self.0.iter().copied()
    }

    /// The error type and the needed helpers, in a fixed order.
    pub(super) fn tokens(&self) -> TokenStream {
        let mut out = error_type();
        let mut vmath = Vec::new();
        for h in &self.0 {
            match h {
                Helper::Vmath(name) => vmath.push(*name),
                _ => out.extend(helper(*h)),
            }
        }
        if !vmath.is_empty() {
            out.extend(vmath_module(&vmath));
        }
        out
    }
}

/// The source of [`super::vmath`]: what the tests check is what gets emitted.
const VMATH_SOURCE: &str = include_str!("vmath.rs");

/// `mod vmath { ... }` with the functions `names` of [`super::vmath`] and every
/// constant and helper function they use (transitively), in source order.
fn vmath_module(names: &[&str]) -> TokenStream {
    // The module is part of this crate, so it parses; a failure is a bug here.
    let file = syn::parse_file(VMATH_SOURCE).expect("vmath.rs parses");
    let item_name = |item: &syn::Item| match item {
        syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
        syn::Item::Const(c) => Some(c.ident.to_string()),
        _ => None,
    };
    let items: Vec<(String, &syn::Item)> = file
        .items
        .iter()
        .filter_map(|item| Some((item_name(item)?, item)))
        .collect();
    let mut needed: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
    let mut todo: Vec<String> = needed.iter().cloned().collect();
    while let Some(name) = todo.pop() {
        let Some((_, item)) = items.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        let mut idents = Vec::new();
        collect_idents(quote!(#item), &mut idents);
        for id in idents {
            if items.iter().any(|(n, _)| *n == id) && needed.insert(id.clone()) {
                todo.push(id);
            }
        }
    }
    // Constants are shared with the Cranelift backend in this crate
    // (`pub(crate)`); inside a generated module they are private.
    let chosen = items
        .iter()
        .filter(|(n, _)| needed.contains(n))
        .map(|(_, item)| match item {
            syn::Item::Const(syn::ItemConst {
                attrs,
                ident,
                ty,
                expr,
                ..
            }) => quote!(#(#attrs)* const #ident: #ty = #expr;),
            other => quote!(#other),
        });
    quote! {
        /// Branch-free f32 math that the compiler vectorizes (no libm call per
        /// element), from uop-codegen's `backend::rust::vmath`, whose documentation
        /// states the algorithms and the accuracy measured against the f64
        /// reference (1 ulp, 2 for `sigmoid`; `sin` and `cos` for |x| < 2^30).
        mod vmath {
            #(#chosen)*
        }
    }
}

/// Every identifier in `tokens`, nested groups included.
fn collect_idents(tokens: TokenStream, out: &mut Vec<String>) {
    for t in tokens {
        match t {
            proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
            proc_macro2::TokenTree::Group(g) => collect_idents(g.stream(), out),
            _ => {}
        }
    }
}

fn error_type() -> TokenStream {
    quote! {
        /// Why a generated kernel refused its arguments. Every kernel checks its buffer
        /// lengths, input dimensions, parameters and the program's size assertions
        /// before touching any data, and reports the first mismatch here instead of
        /// panicking. `kernel` names the kernel, buffers and dims are named as in the
        /// source program.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum KernelError {
            /// A buffer's length differs from the number of elements of its shape.
            Length {
                /// The kernel.
                kernel: &'static str,
                /// The input or output buffer.
                buffer: &'static str,
                /// Elements its shape has.
                expected: usize,
                /// Its length.
                found: usize,
            },
            /// A shape has more elements than fit in memory (or a size exceeds `i64::MAX`).
            TooLarge {
                /// The kernel.
                kernel: &'static str,
                /// The buffer.
                buffer: &'static str,
            },
            /// An input's axis has a fixed size in the program and was given another.
            FixedSize {
                /// The kernel.
                kernel: &'static str,
                /// The input.
                input: &'static str,
                /// The axis.
                axis: usize,
                /// The size the program declares.
                expected: usize,
                /// The size given.
                found: usize,
            },
            /// Two inputs give different sizes to one named dimension.
            DimConflict {
                /// The kernel.
                kernel: &'static str,
                /// The dimension's name.
                dim: &'static str,
                /// The input that bound it first.
                first_input: &'static str,
                /// Its size there.
                first: usize,
                /// The input that disagrees.
                second_input: &'static str,
                /// Its size there.
                second: usize,
            },
            /// A size equality of the program does not hold.
            Assertion {
                /// The kernel.
                kernel: &'static str,
                /// The left side, as written in the program.
                left: &'static str,
                /// The right side.
                right: &'static str,
                /// The left side's value.
                left_value: i64,
                /// The right side's value.
                right_value: i64,
            },
            /// A size computed from the dims and parameters is negative.
            NegativeSize {
                /// The kernel.
                kernel: &'static str,
                /// The size expression, as written in the program.
                size: &'static str,
                /// Its value.
                value: i64,
            },
            /// A size expression overflows `i64` or divides by zero.
            Overflow {
                /// The kernel.
                kernel: &'static str,
            },
        }

        impl core::fmt::Display for KernelError {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self {
                    KernelError::Length { kernel, buffer, expected, found } => write!(
                        f,
                        "{kernel}: `{buffer}` has length {found}, but its shape has {expected} elements"
                    ),
                    KernelError::TooLarge { kernel, buffer } => {
                        write!(f, "{kernel}: the shape of `{buffer}` has too many elements")
                    }
                    KernelError::FixedSize { kernel, input, axis, expected, found } => write!(
                        f,
                        "{kernel}: axis {axis} of `{input}` must have size {expected}, got {found}"
                    ),
                    KernelError::DimConflict { kernel, dim, first_input, first, second_input, second } => write!(
                        f,
                        "{kernel}: dimension `{dim}` is {first} in `{first_input}` but {second} in `{second_input}`"
                    ),
                    KernelError::Assertion { kernel, left, right, left_value, right_value } => write!(
                        f,
                        "{kernel}: the sizes must satisfy `{left} == {right}`, but they are {left_value} and {right_value}"
                    ),
                    KernelError::NegativeSize { kernel, size, value } => {
                        write!(f, "{kernel}: the size `{size}` is {value}, which is negative")
                    }
                    KernelError::Overflow { kernel } => write!(
                        f,
                        "{kernel}: a size expression overflows 64 bits or divides by zero"
                    ),
                }
            }
        }

        impl std::error::Error for KernelError {}
    }
}

fn helper(h: Helper) -> TokenStream {
    match h {
        Helper::Dims => quote! {
            /// An input's shape as `i64` sizes (what index arithmetic uses).
            fn dims<const R: usize>(
                kernel: &'static str,
                input: &'static str,
                shape: [usize; R],
            ) -> Result<[i64; R], KernelError> {
                let mut out = [0; R];
                for (o, &d) in out.iter_mut().zip(&shape) {
                    *o = i64::try_from(d).map_err(|_| KernelError::TooLarge { kernel, buffer: input })?;
                }
                Ok(out)
            }
        },
        Helper::CheckLen => quote! {
            /// Checks that a buffer holds exactly the elements of its shape.
            fn check_len(
                kernel: &'static str,
                buffer: &'static str,
                len: usize,
                shape: &[usize],
            ) -> Result<(), KernelError> {
                let expected = elements(shape).ok_or(KernelError::TooLarge { kernel, buffer })?;
                if len == expected {
                    Ok(())
                } else {
                    Err(KernelError::Length { kernel, buffer, expected, found: len })
                }
            }
        },
        Helper::Size => quote! {
            /// A size computed in `i64`, as a `usize`; negative sizes are an error.
            fn size(kernel: &'static str, size: &'static str, value: i64) -> Result<usize, KernelError> {
                usize::try_from(value).map_err(|_| KernelError::NegativeSize { kernel, size, value })
            }
        },
        Helper::Zeroed => quote! {
            /// A zeroed temporary buffer of the given shape.
            fn zeroed<T: Clone + Default>(
                kernel: &'static str,
                buffer: &'static str,
                shape: &[i64],
            ) -> Result<Vec<T>, KernelError> {
                Ok(vec![T::default(); buffer_len(kernel, buffer, shape)?])
            }
        },
        Helper::ZeroedLines => quote! {
            /// A zeroed temporary buffer of the given shape that starts a cache line.
            fn zeroed_lines<T: Zero>(
                kernel: &'static str,
                buffer: &'static str,
                shape: &[i64],
            ) -> Result<Lines<T>, KernelError> {
                Lines::zeroed(buffer_len(kernel, buffer, shape)?)
                    .ok_or(KernelError::TooLarge { kernel, buffer })
            }
        },
        Helper::Lines => quote! {
            /// Element types whose all-zero bytes are the number zero.
            ///
            /// # Safety
            ///
            /// Only for such types: [`Lines::zeroed`] hands out zeroed memory as `T`s.
            unsafe trait Zero: Copy {}
            unsafe impl Zero for f32 {}
            unsafe impl Zero for f64 {}
            unsafe impl Zero for i32 {}

            /// A zeroed buffer whose first element starts a 64-byte cache line, so
            /// that vector loads and stores from its start never straddle two lines
            /// (a `Vec` of a few megabytes starts 16 bytes into one, and such loads
            /// are a third slower). It is used as the slice it holds.
            struct Lines<T: Zero> {
                ptr: core::ptr::NonNull<T>,
                len: usize,
            }

            // Safety: a `Lines` owns its elements, as a `Vec` does.
            unsafe impl<T: Zero + Send> Send for Lines<T> {}
            unsafe impl<T: Zero + Sync> Sync for Lines<T> {}

            impl<T: Zero> Lines<T> {
                /// `len` zeros; `None` if they do not fit in memory's address range.
                fn zeroed(len: usize) -> Option<Lines<T>> {
                    let layout = Self::layout(len)?;
                    if layout.size() == 0 {
                        return Some(Lines { ptr: core::ptr::NonNull::dangling(), len });
                    }
                    // Safety: the layout's size is not zero.
                    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
                    match core::ptr::NonNull::new(ptr.cast::<T>()) {
                        Some(ptr) => Some(Lines { ptr, len }),
                        None => std::alloc::handle_alloc_error(layout),
                    }
                }

                fn layout(len: usize) -> Option<std::alloc::Layout> {
                    std::alloc::Layout::array::<T>(len).ok()?.align_to(64).ok()
                }
            }

            impl<T: Zero> core::ops::Deref for Lines<T> {
                type Target = [T];
                fn deref(&self) -> &[T] {
                    // Safety: `len` zeroed (so valid) elements start at `ptr`.
                    unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
                }
            }

            impl<T: Zero> core::ops::DerefMut for Lines<T> {
                fn deref_mut(&mut self) -> &mut [T] {
                    // Safety: as for `deref`, and `self` is borrowed uniquely.
                    unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
                }
            }

            impl<T: Zero> Drop for Lines<T> {
                fn drop(&mut self) {
                    if let Some(layout) = Self::layout(self.len).filter(|l| l.size() > 0) {
                        // Safety: allocated in `zeroed` with this layout.
                        unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
                    }
                }
            }
        },
        Helper::BufferLen => quote! {
            /// The number of elements of a temporary buffer of the given shape; an
            /// error if a size is negative or the count too large.
            fn buffer_len(
                kernel: &'static str,
                buffer: &'static str,
                shape: &[i64],
            ) -> Result<usize, KernelError> {
                let mut sizes = Vec::with_capacity(shape.len());
                for &d in shape {
                    sizes.push(size(kernel, buffer, d)?);
                }
                elements(&sizes).ok_or(KernelError::TooLarge { kernel, buffer })
            }
        },
        Helper::Elements => quote! {
            /// The number of elements of a shape; `None` if it overflows or a size
            /// exceeds `i64::MAX` (index arithmetic is done in `i64`).
            fn elements(shape: &[usize]) -> Option<usize> {
                shape.iter().try_fold(1usize, |n, &d| {
                    i64::try_from(d).ok()?;
                    let n = n.checked_mul(d)?;
                    i64::try_from(n).ok()?;
                    Some(n)
                })
            }
        },
        Helper::Offset => quote! {
            /// The row-major offset of `index` in a tensor of shape `shape`, or `None`
            /// when a subscript is out of range (a read then gives the fill value and
            /// a write is skipped).
            #[inline(always)]
            fn offset<const R: usize>(index: [i64; R], shape: [i64; R]) -> Option<usize> {
                let mut at = 0;
                for (&i, &n) in index.iter().zip(&shape) {
                    if i < 0 || i >= n {
                        return None;
                    }
                    at = at * n + i;
                }
                Some(at as usize)
            }
        },
        Helper::FloorDiv => quote! {
            /// Floor division (rounds towards negative infinity), as in index expressions.
            #[inline(always)]
            fn floor_div(a: i64, b: i64) -> i64 {
                let q = a / b;
                if a % b != 0 && ((a < 0) != (b < 0)) { q - 1 } else { q }
            }
        },
        Helper::FloorMod => quote! {
            /// The modulo matching floor division: it has the sign of `b`.
            #[inline(always)]
            fn floor_mod(a: i64, b: i64) -> i64 {
                let r = a % b;
                if r != 0 && ((r < 0) != (b < 0)) { r + b } else { r }
            }
        },
        Helper::Maximum(is32) => {
            let (name, t) = float_names(is32, "maximum");
            quote! {
                /// The larger of `a` and `b`; NaN if either is NaN.
                #[inline(always)]
                fn #name(a: #t, b: #t) -> #t {
                    if a.is_nan() || b.is_nan() { #t::NAN } else { a.max(b) }
                }
            }
        }
        Helper::Minimum(is32) => {
            let (name, t) = float_names(is32, "minimum");
            quote! {
                /// The smaller of `a` and `b`; NaN if either is NaN.
                #[inline(always)]
                fn #name(a: #t, b: #t) -> #t {
                    if a.is_nan() || b.is_nan() { #t::NAN } else { a.min(b) }
                }
            }
        }
        Helper::Sign(is32) => {
            let (name, t) = float_names(is32, "sign");
            quote! {
                /// -1, 0 or 1 by the sign of `x` (0 for both zeros); NaN stays NaN.
                #[inline(always)]
                fn #name(x: #t) -> #t {
                    if x.is_nan() {
                        x
                    } else if x > 0.0 {
                        1.0
                    } else if x < 0.0 {
                        -1.0
                    } else {
                        0.0
                    }
                }
            }
        }
        Helper::Shared => quote! {
            /// A buffer shared by the threads of one parallel loop. The loop's
            /// iterations touch disjoint elements (proved by the `parallel` pass), so
            /// each thread may hold a reference to the elements it touches.
            #[derive(Clone, Copy)]
            struct Shared<'a, T> {
                ptr: *mut T,
                _buffer: core::marker::PhantomData<&'a mut [T]>,
            }

            // Safety: threads only touch disjoint elements (see above).
            unsafe impl<T: Send> Send for Shared<'_, T> {}
            unsafe impl<T: Send> Sync for Shared<'_, T> {}

            impl<'a, T> Shared<'a, T> {
                fn new(buffer: &'a mut [T]) -> Self {
                    Shared {
                        ptr: buffer.as_mut_ptr(),
                        _buffer: core::marker::PhantomData,
                    }
                }

                /// The first element, for its address.
                #[inline(always)]
                // Unused in a file that never aligns its loops to a shared buffer.
                #[allow(dead_code)]
                fn as_ptr(&self) -> *const T {
                    self.ptr
                }

                /// # Safety
                ///
                /// `at` is in range and no other thread writes element `at`.
                #[inline(always)]
                // Unused in a file whose threads never read back what they share.
                #[allow(dead_code)]
                unsafe fn get_unchecked(&self, at: usize) -> &T {
                    unsafe { &*self.ptr.add(at) }
                }

                /// # Safety
                ///
                /// `at` is in range and no other thread touches element `at`.
                #[inline(always)]
                #[allow(clippy::mut_from_ref)]
                unsafe fn get_unchecked_mut(&self, at: usize) -> &mut T {
                    unsafe { &mut *self.ptr.add(at) }
                }
            }
        },
        Helper::Parts => quote! {
            /// One thread's share of a kernel's parallel loops: thread `index` of
            /// `count`, all meeting at `barrier` between blocks.
            #[derive(Clone, Copy)]
            struct Part<'a> {
                index: usize,
                count: usize,
                barrier: &'a Meeting,
            }

            impl Part<'_> {
                /// This thread's part of `start..end`: equal shares, in order.
                #[inline(always)]
                fn range(&self, start: i64, end: i64) -> (i64, i64) {
                    let n = i128::from((end - start).max(0));
                    let (i, c) = (self.index as i128, self.count as i128);
                    (start + (n * i / c) as i64, start + (n * (i + 1) / c) as i64)
                }

                /// Whether this is the thread that runs the serial blocks.
                #[inline(always)]
                fn first(&self) -> bool {
                    self.index == 0
                }

                /// Waits until every thread has finished the block before.
                #[inline(always)]
                fn wait(&self) {
                    if self.count > 1 {
                        self.barrier.wait();
                    }
                }
            }

            /// Spins on `done` (a few microseconds at most between the blocks of one
            /// kernel), yielding the core once it has spun for long.
            fn spin_until(done: impl Fn() -> bool) {
                let mut spins = 0_u32;
                while !done() {
                    if spins < 1 << 10 {
                        spins += 1;
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
            }

            /// A barrier for the threads of one kernel call that spins instead of
            /// sleeping: the threads arrive microseconds apart, and waking a sleeping
            /// thread costs more than that.
            struct Meeting {
                count: usize,
                arrived: std::sync::atomic::AtomicUsize,
                round: std::sync::atomic::AtomicUsize,
            }

            impl Meeting {
                fn new(count: usize) -> Self {
                    Meeting {
                        count,
                        arrived: std::sync::atomic::AtomicUsize::new(0),
                        round: std::sync::atomic::AtomicUsize::new(0),
                    }
                }

                /// Returns once all `count` threads have called it (in this round), with
                /// what each wrote before visible to all after.
                fn wait(&self) {
                    use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
                    let round = self.round.load(Acquire);
                    if self.arrived.fetch_add(1, AcqRel) + 1 == self.count {
                        self.arrived.store(0, Relaxed);
                        self.round.store(round.wrapping_add(1), Release);
                    } else {
                        spin_until(|| self.round.load(Acquire) != round);
                    }
                }
            }

            /// A job for the pool: part `index + 1` of a kernel call is run by
            /// worker `index`, for `index < parts`.
            struct Job {
                run: *const (dyn Fn(usize) + Sync),
                parts: usize,
            }

            /// What the caller and the workers of [`POOL`] share: the job of round
            /// `round`, and how many workers have not yet finished it.
            struct Board {
                round: std::sync::atomic::AtomicUsize,
                job: core::cell::UnsafeCell<Job>,
                pending: std::sync::atomic::AtomicUsize,
            }

            // Safety: `job` is written by the caller holding the pool's lock while no
            // worker reads it (all have finished the previous round), and read by the
            // workers after the `round` that publishes it (release / acquire).
            unsafe impl Sync for Board {}

            /// Worker threads kept for this file's kernels, so that a call starts
            /// its threads in a microsecond instead of spawning them (tens of
            /// microseconds, more than a small kernel's whole run). Idle workers spin
            /// for about 50 µs, then sleep until the next call wakes them.
            struct Pool {
                board: &'static Board,
                workers: Vec<std::thread::Thread>,
            }

            static POOL: std::sync::Mutex<Option<Pool>> = std::sync::Mutex::new(None);

            impl Pool {
                /// Runs `f(0)` here and `f(1)`, ..., `f(count - 1)` on workers
                /// (started when fewer are there), returning when all have returned.
                fn run(&mut self, count: usize, f: &(dyn Fn(usize) + Sync)) {
                    use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
                    while self.workers.len() + 1 < count {
                        let (board, index) = (self.board, self.workers.len());
                        // The round it has seen: the next one is its first job.
                        let seen = board.round.load(Relaxed);
                        let handle = std::thread::Builder::new()
                            .name(format!("uop-kernels-{}", index + 1))
                            .spawn(move || Pool::work(board, index, seen))
                            .expect("a kernel worker thread starts");
                        self.workers.push(handle.thread().clone());
                    }
                    // Safety: every worker finished the previous round, so none reads
                    // `job`; the lifetime of `f` is erased, but this function returns
                    // only after every worker has finished with it (also when `f(0)`
                    // unwinds: `Finish` waits in its `drop`).
                    unsafe {
                        let run: &'static (dyn Fn(usize) + Sync) = core::mem::transmute(f);
                        *self.board.job.get() = Job { run, parts: count - 1 };
                    }
                    self.board.pending.store(self.workers.len(), Relaxed);
                    self.board.round.fetch_add(1, Release);
                    for w in &self.workers {
                        w.unpark();
                    }
                    struct Finish<'a>(&'a Board);
                    impl Drop for Finish<'_> {
                        fn drop(&mut self) {
                            spin_until(|| self.0.pending.load(Acquire) == 0);
                        }
                    }
                    let _finish = Finish(self.board);
                    f(0);
                }

                /// A worker's life: wait for the round after `seen`, run its part
                /// (if the call has one for it), report, forever.
                fn work(board: &'static Board, index: usize, mut seen: usize) {
                    use std::sync::atomic::Ordering::{Acquire, Release};
                    loop {
                        let idle = std::time::Instant::now();
                        let mut spins = 0_u32;
                        while board.round.load(Acquire) == seen {
                            spins += 1;
                            if !spins.is_multiple_of(256) || idle.elapsed().as_micros() < 50 {
                                std::hint::spin_loop();
                            } else {
                                std::thread::park();
                            }
                        }
                        seen = seen.wrapping_add(1);
                        // Safety: published by the release of `round` above.
                        let job = unsafe { &*board.job.get() };
                        if index < job.parts {
                            // A kernel's loops do not panic (its checks come first);
                            // should one, the call would wait for this part forever,
                            // so the process stops instead.
                            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
                                (*job.run)(index + 1)
                            }));
                            if ran.is_err() {
                                std::process::abort();
                            }
                        }
                        board.pending.fetch_sub(1, Release);
                    }
                }
            }

            /// Runs `f` once per part on up to [`threads`] threads: as many as give
            /// each at least `GRAIN` iterations of the parallel blocks (`blocks`: the
            /// loop ranges of each), so small kernels stay on the calling thread. The
            /// other threads come from the file's pool, or are spawned for this call
            /// when another call is using the pool.
            fn in_parts(blocks: &[&[i64]], f: impl Fn(Part<'_>) + Sync) {
                const GRAIN: i64 = 1 << 15;
                let work = blocks.iter().fold(0_i64, |total, spans| {
                    let w = spans.iter().fold(1_i64, |w, &s| w.saturating_mul(s.max(1)));
                    total.saturating_add(w)
                });
                let count = threads().min(usize::try_from(work / GRAIN).unwrap_or(1)).max(1);
                let barrier = Meeting::new(count);
                let part = |index| Part { index, count, barrier: &barrier };
                if count == 1 {
                    f(part(0));
                    return;
                }
                let run = |index: usize| f(part(index));
                if let Ok(mut pool) = POOL.try_lock() {
                    let pool = pool.get_or_insert_with(|| Pool {
                        board: Box::leak(Box::new(Board {
                            round: std::sync::atomic::AtomicUsize::new(0),
                            job: core::cell::UnsafeCell::new(Job { run: &|_| {}, parts: 0 }),
                            pending: std::sync::atomic::AtomicUsize::new(0),
                        })),
                        workers: Vec::new(),
                    });
                    pool.run(count, &run);
                    return;
                }
                let run = &run;
                std::thread::scope(|s| {
                    for index in 1..count {
                        s.spawn(move || run(index));
                    }
                    run(0);
                });
            }
        },
        Helper::RangeInSteps => quote! {
            impl Part<'_> {
                /// This thread's part of `start..end`, cut only at `start + phase`
                /// plus multiples of `step`: for an inner loop all threads share
                /// out in every outer iteration, cut where the written elements
                /// start a cache line, so that neighbours never write the same
                /// line (measured on a column sum: 0.30 ms instead of 0.24).
                #[inline(always)]
                fn range_in_steps(&self, start: i64, end: i64, step: i64, phase: i64) -> (i64, i64) {
                    let steps = ((end - start).max(0) + step - 1) / step;
                    let (lo, hi) = self.range(0, steps);
                    let cut = |k: i64| if k == 0 { start } else { (start + phase + k * step).min(end) };
                    (cut(lo), cut(hi))
                }
            }
        },
        Helper::LinePhase => quote! {
            /// How many elements from element `at` of the buffer at `base` to the
            /// next 64-byte cache line: where vector accesses stop straddling lines,
            /// and where a thread's share of a unit-stride write may start.
            #[inline(always)]
            fn line_phase<T>(base: *const T, at: usize) -> i64 {
                let size = core::mem::size_of::<T>().max(1);
                let addr = base.wrapping_add(at) as usize;
                ((64 - addr % 64) % 64 / size) as i64
            }
        },
        Helper::RotatedRight => quote! {
            /// `lanes` rotated right by `by` (less than `N`): element `l` moves to
            /// `(l + by) % N`.
            #[inline(always)]
            fn rotated_right<T: Copy, const N: usize>(lanes: [T; N], by: usize) -> [T; N] {
                let twice = [lanes, lanes];
                let mut out = lanes;
                out.copy_from_slice(&twice.as_flattened()[N - by..2 * N - by]);
                out
            }
        },
        Helper::CpuLevel => quote! {
            /// The widest code the kernels of this file run on this CPU: `2` for
            /// AVX-512 (with AVX2 and FMA), `1` for AVX2 with FMA, `0` for plain
            /// x86-64. The environment variable `UOP_CPU` (`avx512`, `avx2` or
            /// `baseline`), read once, caps it: for tests and comparisons.
            #[cfg(target_arch = "x86_64")]
            fn cpu_level() -> u8 {
                static LEVEL: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
                *LEVEL.get_or_init(|| {
                    let avx2 = std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma");
                    let avx512 = avx2
                        && std::arch::is_x86_feature_detected!("avx512f")
                        && std::arch::is_x86_feature_detected!("avx512vl");
                    let best = if avx512 { 2 } else { u8::from(avx2) };
                    let cap = match std::env::var("UOP_CPU").as_deref() {
                        Ok("baseline") => 0,
                        Ok("avx2") => 1,
                        _ => 2,
                    };
                    best.min(cap)
                })
            }
        },
        Helper::Threads => quote! {
            static THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

            /// Sets how many threads each kernel of this file may use; `0` restores
            /// the default: the `UOP_THREADS` environment variable if set, else every
            /// core. Results do not depend on it.
            pub fn set_threads(n: usize) {
                THREADS.store(n, std::sync::atomic::Ordering::Relaxed);
            }

            /// The thread count [`set_threads`] chose, or the default.
            pub fn threads() -> usize {
                static DEFAULT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
                match THREADS.load(std::sync::atomic::Ordering::Relaxed) {
                    0 => *DEFAULT.get_or_init(|| {
                        std::env::var("UOP_THREADS")
                            .ok()
                            .and_then(|v| v.trim().parse().ok())
                            .filter(|&n: &usize| n > 0)
                            .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
                            .unwrap_or(1)
                    }),
                    n => n,
                }
            }
        },
        Helper::MulAdd(is32) => {
            let (name, t) = float_names(is32, "mul_add");
            quote! {
                /// `a * b + c`: one fused multiply-add, rounded once, where the code is
                /// compiled for FMA (`fma`, a constant: `FMA`); two operations otherwise
                /// (never a library call).
                #[inline(always)]
                fn #name(fma: bool, a: #t, b: #t, c: #t) -> #t {
                    if fma { a.mul_add(b, c) } else { a * b + c }
                }
            }
        }
        Helper::Transpose(is32) => transpose(is32),
        Helper::Vmath(_) => unreachable!("emitted as one module by `Helpers::tokens`"),
        Helper::ErfF64 => quote! {
            /// The error function, to within a few ulps: a series with positive terms
            /// below |x| = 3, the continued fraction of erfc above, ±1 from 6 on.
            fn erf_f64(x: f64) -> f64 {
                let a = x.abs();
                if a.is_nan() {
                    return x;
                }
                let r = if a < 3.0 {
                    // erf(a) = 2/sqrt(pi) exp(-a^2) sum_n (2a^2)^n a / (1 3 5 ... (2n+1))
                    let (mut term, mut sum, mut n) = (a, a, 0.0);
                    while term > sum * 1e-17 {
                        n += 1.0;
                        term *= 2.0 * a * a / (2.0 * n + 1.0);
                        sum += term;
                    }
                    sum * (-a * a).exp() * core::f64::consts::FRAC_2_SQRT_PI
                } else if a < 6.0 {
                    // erfc(a) = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...))))
                    let mut f = a;
                    for k in (1..=60).rev() {
                        f = a + f64::from(k) / 2.0 / f;
                    }
                    1.0 - (-a * a).exp() * core::f64::consts::FRAC_2_SQRT_PI / 2.0 / f
                } else {
                    1.0
                };
                r.copysign(x)
            }
        },
    }
}

fn float_names(is32: bool, base: &str) -> (proc_macro2::Ident, proc_macro2::Ident) {
    let t = if is32 { "f32" } else { "f64" };
    (
        proc_macro2::Ident::new(&format!("{base}_{t}"), proc_macro2::Span::call_site()),
        proc_macro2::Ident::new(t, proc_macro2::Span::call_site()),
    )
}

/// The name of a helper for the generated code (a `vmath` function is called
/// through its module: `vmath::name`).
pub(super) fn helper_name(h: Helper) -> proc_macro2::Ident {
    let (base, is32) = match h {
        Helper::Vmath(name) => {
            return proc_macro2::Ident::new(name, proc_macro2::Span::call_site());
        }
        Helper::Maximum(t) => ("maximum", t),
        Helper::Minimum(t) => ("minimum", t),
        Helper::Sign(t) => ("sign", t),
        Helper::MulAdd(t) => ("mul_add", t),
        Helper::Shared => ("Shared", false),
        Helper::Parts => ("in_parts", false),
        Helper::Threads => ("threads", false),
        Helper::RangeInSteps => ("range_in_steps", false),
        Helper::LinePhase => ("line_phase", false),
        Helper::Lines => ("Lines", false),
        Helper::RotatedRight => ("rotated_right", false),
        Helper::CpuLevel => ("cpu_level", false),
        Helper::ErfF64 => ("erf", false),
        Helper::Transpose(t) => ("transpose_block", t),
        Helper::Dims => ("dims", false),
        Helper::CheckLen => ("check_len", false),
        Helper::Size => ("size", false),
        Helper::Zeroed => ("zeroed", false),
        Helper::ZeroedLines => ("zeroed_lines", false),
        Helper::BufferLen => ("buffer_len", false),
        Helper::Elements => ("elements", false),
        Helper::Offset => ("offset", false),
        Helper::FloorDiv => ("floor_div", false),
        Helper::FloorMod => ("floor_mod", false),
    };
    match h {
        Helper::Maximum(_)
        | Helper::Minimum(_)
        | Helper::Sign(_)
        | Helper::ErfF64
        | Helper::Transpose(_)
        | Helper::MulAdd(_) => float_names(is32, base).0,
        _ => proc_macro2::Ident::new(base, proc_macro2::Span::call_site()),
    }
}

/// Module-level names the helpers and the error type take.
pub(super) const RESERVED: &[&str] = &[
    "KernelError",
    "dims",
    "check_len",
    "size",
    "zeroed",
    "zeroed_lines",
    "Zero",
    "Lines",
    "line_phase",
    "rotated_right",
    "buffer_len",
    "elements",
    "offset",
    "floor_div",
    "floor_mod",
    "maximum_f32",
    "maximum_f64",
    "minimum_f32",
    "minimum_f64",
    "sign_f32",
    "sign_f64",
    "erf_f64",
    "transpose_block_f32",
    "transpose_block_f64",
    "transpose_tile_f32_x8",
    "transpose_tile_f32_x16",
    "transpose_tile_f64_x4",
    "transpose_tile_f64_x8",
    "mul_add_f32",
    "mul_add_f64",
    "Shared",
    "in_parts",
    "Part",
    "part",
    "set_threads",
    "threads",
    "THREADS",
    "cpu_level",
    "vmath",
];

/// `transpose_block_f32` / `transpose_block_f64` and the tiles they use: a block copied
/// across in square tiles transposed in registers. The tiles read 128-bit pieces of
/// the source lines, placed so that the same 4 × 4 (f32) or 2 × 2 (f64) transpose
/// inside every 128-bit lane (`unpcklps`, `shufps`; `unpcklpd`) leaves whole rows of
/// the destination in the vectors: the pieces come in as loads, and each element
/// takes two shuffles whatever the vector width (a full-width transpose takes three
/// for 256 bits, four for 512).
fn transpose(is32: bool) -> TokenStream {
    let (name, t) = float_names(is32, "transpose_block");
    let size: usize = if is32 { 4 } else { 8 };
    let (narrow, wide) = if is32 {
        ("transpose_tile_f32_x8", "transpose_tile_f32_x16")
    } else {
        ("transpose_tile_f64_x4", "transpose_tile_f64_x8")
    };
    let narrow = proc_macro2::Ident::new(narrow, proc_macro2::Span::call_site());
    let wide = proc_macro2::Ident::new(wide, proc_macro2::Span::call_site());
    let tiles = if is32 {
        quote! {
            /// An 8 × 8 tile of [`transpose_block_f32`] (AVX): lines `k` and `k + 4` of the
            /// source side by side, a 4 × 4 transpose in each half.
            ///
            /// # Safety
            ///
            /// As [`transpose_block_f32`], for 8 rows and columns; the CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            #[inline]
            unsafe fn transpose_tile_f32_x8(src: *const f32, src_stride: usize, dst: *mut f32, dst_stride: usize) {
                use core::arch::x86_64::*;
                for h in 0..2 {
                    let mut v = [_mm256_setzero_ps(); 4];
                    for (k, v) in v.iter_mut().enumerate() {
                        let (low, high) = unsafe {
                            (
                                _mm_loadu_ps(src.add(k * src_stride + 4 * h)),
                                _mm_loadu_ps(src.add((k + 4) * src_stride + 4 * h)),
                            )
                        };
                        *v = _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(low), high);
                    }
                    let t0 = _mm256_unpacklo_ps(v[0], v[1]);
                    let t1 = _mm256_unpackhi_ps(v[0], v[1]);
                    let t2 = _mm256_unpacklo_ps(v[2], v[3]);
                    let t3 = _mm256_unpackhi_ps(v[2], v[3]);
                    let rows = [
                        _mm256_shuffle_ps::<0x44>(t0, t2),
                        _mm256_shuffle_ps::<0xEE>(t0, t2),
                        _mm256_shuffle_ps::<0x44>(t1, t3),
                        _mm256_shuffle_ps::<0xEE>(t1, t3),
                    ];
                    for (m, row) in rows.into_iter().enumerate() {
                        unsafe { _mm256_storeu_ps(dst.add((4 * h + m) * dst_stride), row) };
                    }
                }
            }

            /// A 16 × 16 tile of [`transpose_block_f32`] (AVX-512): lines `k`, `k + 4`,
            /// `k + 8` and `k + 12` of the source side by side, a 4 × 4 transpose in
            /// each quarter.
            ///
            /// # Safety
            ///
            /// As [`transpose_block_f32`], for 16 rows and columns; the CPU has AVX-512F.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f")]
            #[inline]
            unsafe fn transpose_tile_f32_x16(src: *const f32, src_stride: usize, dst: *mut f32, dst_stride: usize) {
                use core::arch::x86_64::*;
                for q in 0..4 {
                    let mut v = [_mm512_setzero_ps(); 4];
                    for (k, v) in v.iter_mut().enumerate() {
                        let [p0, p1, p2, p3] = [0, 4, 8, 12]
                            .map(|p| unsafe { _mm_loadu_ps(src.add((k + p) * src_stride + 4 * q)) });
                        let x = _mm512_castps128_ps512(p0);
                        let x = _mm512_insertf32x4::<1>(x, p1);
                        let x = _mm512_insertf32x4::<2>(x, p2);
                        *v = _mm512_insertf32x4::<3>(x, p3);
                    }
                    let t0 = _mm512_unpacklo_ps(v[0], v[1]);
                    let t1 = _mm512_unpackhi_ps(v[0], v[1]);
                    let t2 = _mm512_unpacklo_ps(v[2], v[3]);
                    let t3 = _mm512_unpackhi_ps(v[2], v[3]);
                    let rows = [
                        _mm512_shuffle_ps::<0x44>(t0, t2),
                        _mm512_shuffle_ps::<0xEE>(t0, t2),
                        _mm512_shuffle_ps::<0x44>(t1, t3),
                        _mm512_shuffle_ps::<0xEE>(t1, t3),
                    ];
                    for (m, row) in rows.into_iter().enumerate() {
                        unsafe { _mm512_storeu_ps(dst.add((4 * q + m) * dst_stride), row) };
                    }
                }
            }
        }
    } else {
        quote! {
            /// A 4 × 4 tile of [`transpose_block_f64`] (AVX): lines `k` and `k + 2` of the
            /// source side by side, a 2 × 2 transpose in each half.
            ///
            /// # Safety
            ///
            /// As [`transpose_block_f64`], for 4 rows and columns; the CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            #[inline]
            unsafe fn transpose_tile_f64_x4(src: *const f64, src_stride: usize, dst: *mut f64, dst_stride: usize) {
                use core::arch::x86_64::*;
                for h in 0..2 {
                    let mut v = [_mm256_setzero_pd(); 2];
                    for (k, v) in v.iter_mut().enumerate() {
                        let (low, high) = unsafe {
                            (
                                _mm_loadu_pd(src.add(k * src_stride + 2 * h)),
                                _mm_loadu_pd(src.add((k + 2) * src_stride + 2 * h)),
                            )
                        };
                        *v = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(low), high);
                    }
                    let rows = [_mm256_unpacklo_pd(v[0], v[1]), _mm256_unpackhi_pd(v[0], v[1])];
                    for (m, row) in rows.into_iter().enumerate() {
                        unsafe { _mm256_storeu_pd(dst.add((2 * h + m) * dst_stride), row) };
                    }
                }
            }

            /// An 8 × 8 tile of [`transpose_block_f64`] (AVX-512): lines `k`, `k + 2`, `k + 4`
            /// and `k + 6` of the source side by side, a 2 × 2 transpose in each
            /// quarter (the pieces are moved as f32 bits: AVX-512F inserts 128-bit
            /// pieces of f32 only).
            ///
            /// # Safety
            ///
            /// As [`transpose_block_f64`], for 8 rows and columns; the CPU has AVX-512F.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f")]
            #[inline]
            unsafe fn transpose_tile_f64_x8(src: *const f64, src_stride: usize, dst: *mut f64, dst_stride: usize) {
                use core::arch::x86_64::*;
                for q in 0..4 {
                    let mut v = [_mm512_setzero_pd(); 2];
                    for (k, v) in v.iter_mut().enumerate() {
                        let [p0, p1, p2, p3] = [0, 2, 4, 6].map(|p| unsafe {
                            _mm_loadu_ps(src.add((k + p) * src_stride + 2 * q).cast())
                        });
                        let x = _mm512_castps128_ps512(p0);
                        let x = _mm512_insertf32x4::<1>(x, p1);
                        let x = _mm512_insertf32x4::<2>(x, p2);
                        *v = _mm512_castps_pd(_mm512_insertf32x4::<3>(x, p3));
                    }
                    let rows = [_mm512_unpacklo_pd(v[0], v[1]), _mm512_unpackhi_pd(v[0], v[1])];
                    for (m, row) in rows.into_iter().enumerate() {
                        unsafe { _mm512_storeu_pd(dst.add((2 * q + m) * dst_stride), row) };
                    }
                }
            }
        }
    };
    quote! {
        /// Copies a block across, `dst[i * dst_stride + j] = src[j * src_stride + i]`
        /// for `i < rows`, `j < cols` (a transpose): in square tiles of as many
        /// elements as one `vec`-byte vector holds (the loops' `VEC`: AVX2 and AVX-512
        /// copies), transposed in registers. The tiles start where the source's
        /// pieces (along `i`) and the destination's rows (along `j`) start a
        /// `vec`-byte boundary, so that no vector straddles two cache lines (1.5–2×
        /// on a 1024² transpose whose buffers start 16 bytes past a line, as large
        /// `Vec`s do); the first and last tile of a range overlap their neighbours
        /// instead of leaving ragged edges (they copy some elements twice, the same
        /// values). Blocks narrower than a tile, and the baseline copy, go element by
        /// element. Inlined, so that `vec` is a constant and only one path is compiled.
        ///
        /// # Safety
        ///
        /// Every element named is inside its buffer, the blocks do not overlap, and
        /// the CPU has `vec`-byte vectors.
        #[inline(always)]
        unsafe fn #name(
            src: *const #t,
            src_stride: usize,
            dst: *mut #t,
            dst_stride: usize,
            rows: usize,
            cols: usize,
            vec: usize,
        ) {
            let lanes = if cfg!(target_arch = "x86_64") && vec >= 32 { vec / #size } else { 1 };
            #[cfg(target_arch = "x86_64")]
            if lanes > 1 && rows >= lanes && cols >= lanes {
                // Elements from an address to the next vector boundary.
                let phase = |at: usize| (vec - at % vec) % vec / #size;
                // Tile starts covering 0..n: the aligned ones, plus 0 and n - lanes
                // where they leave an edge.
                let starts = |n: usize, first: usize| {
                    let full = (n - first) / lanes;
                    let end = first + full * lanes;
                    (first > 0)
                        .then_some(0)
                        .into_iter()
                        .chain((0..full).map(move |k| first + k * lanes))
                        .chain((end < n).then_some(n - lanes))
                };
                for i in starts(rows, phase(src as usize)) {
                    for j in starts(cols, phase(dst as usize)) {
                        // SAFETY: the tile is inside the block, and this copy of the
                        // loops was compiled for (and runs on) `vec`-byte vectors.
                        unsafe {
                            let (s, d) = (src.add(j * src_stride + i), dst.add(i * dst_stride + j));
                            if vec >= 64 {
                                #wide(s, src_stride, d, dst_stride)
                            } else {
                                #narrow(s, src_stride, d, dst_stride)
                            }
                        }
                    }
                }
                return;
            }
            for i in 0..rows {
                for j in 0..cols {
                    unsafe { *dst.add(i * dst_stride + j) = *src.add(j * src_stride + i) };
                }
            }
        }

        #tiles
    }
}
