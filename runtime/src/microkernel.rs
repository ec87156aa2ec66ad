//! Register-tile micro-kernels for code generated at run time (the Cranelift JIT):
//! the dense inner work of a contraction (matmul, batched matmul, convolution),
//! compiled once per CPU level with that level's vectors, called through a plain
//! C ABI for each tile of `ROWS × COLUMNS` results. The caller keeps everything
//! else: it packs the tile's column operand once per column tile ([`uop_pack_f32`]),
//! calls the level's kernel ([`Level::contract`]) per row tile, and applies its own
//! statements (the fused epilogue) to the tile's results while they are in cache.
//!
//! A tile computes, for `row < ROWS` and `col < COLUMNS`,
//!
//! ```text
//! out[row * out_row + col * out_col] = Σ over the steps s, in order, of a(row, s) * panel[s * COLUMNS + col]
//! ```
//!
//! starting from `0.0`, one multiply-add per step (fused on the AVX2 and AVX-512
//! levels, a multiply then an add on the baseline level, as the Rust backend's
//! copies do), where the steps are the iterations of up to three nested reduction
//! loops and `a(row, s)` is read at `a + row * a_row + k0 * a_steps[0] + k1 *
//! a_steps[1] + k2 * a_steps[2]`. Each result adds its terms in the loops' order, so
//! a tile differs from the loop nest only by the fused roundings.
//!
//! The shapes are the Rust backend's register tiles for the same levels (`MR × NR`
//! of `uop_codegen::target::Target::X86_64`; a test of the Cranelift crate checks
//! they agree), so a JIT kernel realizes the plan the Rust copies realize.
//!
//! This module is not copied into standalone generated files: Rust kernels do not
//! call it.

use std::cell::RefCell;

use crate::aligned::AlignedVec;

/// One tile's reduction (see the module docs), passed by pointer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Contraction {
    /// The row operand of row 0 at the first step.
    pub a: *const f32,
    /// Elements from one row's row operand to the next row's.
    pub a_row: i64,
    /// Trip counts of the reduction loops, outermost first (`1` for a loop the
    /// nest does not have); none negative.
    pub counts: [i64; 3],
    /// Elements the row operand advances per iteration of each reduction loop.
    pub a_steps: [i64; 3],
    /// The packed column operand: `counts` multiplied steps of `COLUMNS` values.
    pub panel: *const f32,
    /// Where the tile's first result goes: the caller's buffer of `ROWS × COLUMNS`
    /// (`out_row` = `COLUMNS`, `out_col` = 1), or the output tensor itself when
    /// the nest stores its sums unchanged.
    pub out: *mut f32,
    /// Elements from one row's results to the next row's.
    pub out_row: i64,
    /// Elements from one column's result to the next column's.
    pub out_col: i64,
}

/// The column operand of one column tile, to copy into a panel (passed by pointer).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Pack {
    /// The column operand of the tile's first column at the first step; each step's
    /// `columns` values are contiguous from there.
    pub b: *const f32,
    /// Trip counts of the reduction loops, as [`Contraction::counts`].
    pub counts: [i64; 3],
    /// Elements the column operand advances per iteration of each reduction loop.
    pub b_steps: [i64; 3],
    /// Values per step: the tile's columns.
    pub columns: i64,
}

/// A CPU level's micro-kernel: its tile shape and the function computing a tile.
#[derive(Clone, Copy, Debug)]
pub struct Level {
    /// Rows of a tile.
    pub rows: usize,
    /// Columns of a tile (f32 values).
    pub columns: usize,
    /// The symbol a generated kernel links the function under.
    pub symbol: &'static str,
    /// Computes the tile `*t` describes.
    pub contract: unsafe extern "C" fn(t: *const Contraction),
}

/// The micro-kernels, narrowest level first, indexed by [`crate::cpu_level`]: the
/// caller must not use a level above the CPU's (the functions of the AVX2 and
/// AVX-512 levels are compiled for those instructions).
#[cfg(target_arch = "x86_64")]
pub const LEVELS: [Level; 3] = [
    Level {
        rows: 4,
        columns: 8,
        symbol: "uop_contract_f32_baseline",
        contract: uop_contract_f32_baseline,
    },
    Level {
        rows: 5,
        columns: 16,
        symbol: "uop_contract_f32_avx2",
        contract: uop_contract_f32_avx2,
    },
    Level {
        rows: 4,
        columns: 64,
        symbol: "uop_contract_f32_avx512",
        contract: uop_contract_f32_avx512,
    },
];

/// The micro-kernels off x86-64: the baseline level only.
#[cfg(not(target_arch = "x86_64"))]
pub const LEVELS: [Level; 1] = [Level {
    rows: 4,
    columns: 8,
    symbol: "uop_contract_f32_baseline",
    contract: uop_contract_f32_baseline,
}];

/// The index in [`LEVELS`] of the level this process runs ([`crate::cpu_level`],
/// capped by `UOP_CPU`): every level up to it runs on this CPU.
pub fn host_index() -> usize {
    #[cfg(target_arch = "x86_64")]
    let level = usize::from(crate::cpu_level());
    #[cfg(not(target_arch = "x86_64"))]
    let level = 0;
    level.min(LEVELS.len() - 1)
}

/// The micro-kernel of the level this process runs ([`host_index`]).
pub fn host_level() -> Level {
    LEVELS[host_index()]
}

/// Element `k0 * s[0] + k1 * s[1] + k2 * s[2]` from `p`.
#[inline(always)]
fn at(p: *const f32, k: [i64; 3], s: [i64; 3]) -> *const f32 {
    let offset = k[0]
        .wrapping_mul(s[0])
        .wrapping_add(k[1].wrapping_mul(s[1]))
        .wrapping_add(k[2].wrapping_mul(s[2]));
    p.wrapping_offset(offset as isize)
}

/// Writes a tile's results, `cells` row by row (`NR` per row), to their places:
/// row after row, or column after column when the rows are the nearer places (a
/// transposed store, such as a convolution's `y[n, o, h, w]` with the output
/// channels as columns: each column's rows then fill one cache line in turn, where
/// row after row would touch every column's line once per row, all of them a
/// plane apart, often 4 KiB, in the same few cache sets).
///
/// # Safety
///
/// Every result's place (`t.out` plus its row's and column's steps) is writable.
#[inline(always)]
unsafe fn write_out<const NR: usize>(t: &Contraction, cells: &[f32]) {
    let place = |row: usize, col: usize| {
        let offset = (row as i64)
            .wrapping_mul(t.out_row)
            .wrapping_add((col as i64).wrapping_mul(t.out_col));
        t.out.wrapping_offset(offset as isize)
    };
    if t.out_col == 1 {
        for (row, cells) in cells.chunks_exact(NR).enumerate() {
            // SAFETY: the caller guarantees the row's NR places are writable.
            unsafe { std::ptr::copy_nonoverlapping(cells.as_ptr(), place(row, 0), NR) };
        }
    } else if t.out_row.unsigned_abs() < t.out_col.unsigned_abs() {
        let rows = cells.len() / NR;
        for col in 0..NR {
            for row in 0..rows {
                // SAFETY: as above.
                unsafe { *place(row, col) = cells[row * NR + col] };
            }
        }
    } else {
        for (row, cells) in cells.chunks_exact(NR).enumerate() {
            for (col, &v) in cells.iter().enumerate() {
                // SAFETY: as above.
                unsafe { *place(row, col) = v };
            }
        }
    }
}

/// The tile of `t` with `MR × NR` results (see the module docs), in plain Rust:
/// the micro-kernel off x86-64.
///
/// # Safety
///
/// Every row operand element the counts and steps reach, for every row, is
/// readable; the panel holds every step's `NR` values; every result's place
/// (`out` plus its row's and column's steps) is writable.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn contract<const MR: usize, const NR: usize>(t: &Contraction) {
    let mut acc = [[0.0_f32; NR]; MR];
    let [n0, n1, n2] = t.counts;
    let mut panel = t.panel;
    for k0 in 0..n0 {
        for k1 in 0..n1 {
            let mut a = at(t.a, [k0, k1, 0], t.a_steps);
            for _ in 0..n2 {
                for (row, acc) in acc.iter_mut().enumerate() {
                    // SAFETY: the caller guarantees every row's element is readable.
                    let x =
                        unsafe { *a.wrapping_offset((row as i64).wrapping_mul(t.a_row) as isize) };
                    for (col, acc) in acc.iter_mut().enumerate() {
                        // SAFETY: the panel holds NR values per step.
                        let y = unsafe { *panel.add(col) };
                        *acc = crate::scalar::mul_add_f32(false, x, y, *acc);
                    }
                }
                // SAFETY: one step of NR values read; the panel holds every step.
                panel = unsafe { panel.add(NR) };
                a = a.wrapping_offset(t.a_steps[2] as isize);
            }
        }
    }
    // SAFETY: as the caller guarantees.
    unsafe { write_out::<NR>(t, acc.as_flattened()) };
}

/// The baseline level's tile off x86-64 (4 × 8, a multiply then an add).
///
/// # Safety
///
/// `t` points at a [`Contraction`] whose reads and writes are valid for 4 × 8
/// (see the module docs).
#[cfg(not(target_arch = "x86_64"))]
pub unsafe extern "C" fn uop_contract_f32_baseline(t: *const Contraction) {
    // SAFETY: as the caller guarantees.
    unsafe { contract::<4, 8>(&*t) }
}

/// One x86-64 level's micro-kernel: `$rows` rows by `$vectors` vectors of `$lanes`
/// f32 lanes, accumulators in vector registers (`$v`), each step one load of
/// each panel vector, one broadcast per row and one multiply-add (`$madd`) per
/// accumulator.
#[cfg(target_arch = "x86_64")]
macro_rules! tile_kernel {
    (
        $(#[$attr:meta])*
        fn $name:ident($v:ty; rows $rows:literal, vectors $vectors:literal, lanes $lanes:literal)
        zero $zero:path, load $load:path, store $store:path, splat $splat:path, madd $madd:path
    ) => {
        $(#[$attr])*
        pub unsafe extern "C" fn $name(t: *const Contraction) {
            const NR: usize = $vectors * $lanes;
            // SAFETY: as the caller guarantees: `t` is valid, every row operand
            // element the counts and steps reach is readable, the panel holds every
            // step's NR values and every result's place is writable.
            unsafe {
                let t = &*t;
                let mut acc: [[$v; $vectors]; $rows] = [[$zero(); $vectors]; $rows];
                let [n0, n1, n2] = t.counts;
                let a_row = t.a_row as isize;
                let mut panel = t.panel;
                for k0 in 0..n0 {
                    for k1 in 0..n1 {
                        let mut a = at(t.a, [k0, k1, 0], t.a_steps);
                        for _ in 0..n2 {
                            let mut b: [$v; $vectors] = [$zero(); $vectors];
                            #[allow(clippy::needless_range_loop)]
                            for v in 0..$vectors {
                                b[v] = $load(panel.add(v * $lanes));
                            }
                            #[allow(clippy::needless_range_loop)]
                            for row in 0..$rows {
                                let x = $splat(*a.wrapping_offset(row as isize * a_row));
                                for v in 0..$vectors {
                                    acc[row][v] = $madd(x, b[v], acc[row][v]);
                                }
                            }
                            panel = panel.add(NR);
                            a = a.wrapping_offset(t.a_steps[2] as isize);
                        }
                    }
                }
                let mut cells = [0.0_f32; NR * $rows];
                #[allow(clippy::needless_range_loop)]
                for row in 0..$rows {
                    for v in 0..$vectors {
                        $store(cells.as_mut_ptr().add(row * NR + v * $lanes), acc[row][v]);
                    }
                }
                write_out::<NR>(t, &cells);
            }
        }
    };
}

/// `a * b + c` on SSE vectors: a multiply, then an add (plain x86-64 has no FMA).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn mul_add_sse(
    a: std::arch::x86_64::__m128,
    b: std::arch::x86_64::__m128,
    c: std::arch::x86_64::__m128,
) -> std::arch::x86_64::__m128 {
    use std::arch::x86_64::{_mm_add_ps, _mm_mul_ps};
    // SAFETY: SSE is part of x86-64.
    unsafe { _mm_add_ps(_mm_mul_ps(a, b), c) }
}

#[cfg(target_arch = "x86_64")]
tile_kernel! {
    /// The baseline level's tile (plain x86-64, SSE: 4 × 8, a multiply then an add).
    ///
    /// # Safety
    ///
    /// `t` points at a [`Contraction`] whose reads and writes are valid for 4 × 8
    /// (see the module docs).
    fn uop_contract_f32_baseline(std::arch::x86_64::__m128; rows 4, vectors 2, lanes 4)
    zero std::arch::x86_64::_mm_setzero_ps, load std::arch::x86_64::_mm_loadu_ps,
    store std::arch::x86_64::_mm_storeu_ps, splat std::arch::x86_64::_mm_set1_ps,
    madd mul_add_sse
}

#[cfg(target_arch = "x86_64")]
tile_kernel! {
    /// The AVX2 level's tile (5 × 16, fused multiply-adds).
    ///
    /// # Safety
    ///
    /// The CPU has AVX2 and FMA; `t` points at a [`Contraction`] whose reads and
    /// writes are valid for 5 × 16 (see the module docs).
    #[target_feature(enable = "avx2,fma")]
    fn uop_contract_f32_avx2(std::arch::x86_64::__m256; rows 5, vectors 2, lanes 8)
    zero std::arch::x86_64::_mm256_setzero_ps, load std::arch::x86_64::_mm256_loadu_ps,
    store std::arch::x86_64::_mm256_storeu_ps, splat std::arch::x86_64::_mm256_set1_ps,
    madd std::arch::x86_64::_mm256_fmadd_ps
}

#[cfg(target_arch = "x86_64")]
tile_kernel! {
    /// The AVX-512 level's tile (4 × 64, fused multiply-adds).
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512 F and VL, AVX2 and FMA; `t` points at a
    /// [`Contraction`] whose reads and writes are valid for 4 × 64 (see the
    /// module docs).
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    fn uop_contract_f32_avx512(std::arch::x86_64::__m512; rows 4, vectors 4, lanes 16)
    zero std::arch::x86_64::_mm512_setzero_ps, load std::arch::x86_64::_mm512_loadu_ps,
    store std::arch::x86_64::_mm512_storeu_ps, splat std::arch::x86_64::_mm512_set1_ps,
    madd std::arch::x86_64::_mm512_fmadd_ps
}

thread_local! {
    /// The calling thread's panel, grown to the largest one packed, never shrunk:
    /// a later call of the same sizes allocates nothing.
    static PANEL: RefCell<Option<AlignedVec<f32>>> = const { RefCell::new(None) };
}

/// Whether the steps of the column operand of `p` already follow one another,
/// `columns` values each (a convolution's transposed kernel when its output
/// channels are one tile wide): the operand is its own panel.
fn packed_already(p: &Pack) -> bool {
    let mut step = p.columns;
    for level in (0..3).rev() {
        if p.counts[level] > 1 && p.b_steps[level] != step {
            return false;
        }
        let Some(next) = step.checked_mul(p.counts[level].max(1)) else {
            return false;
        };
        step = next;
    }
    true
}

/// Copies the column operand of `*p` into this thread's panel, step after step,
/// `columns` values each, and returns the panel (on a cache line); returns the
/// operand itself when its steps already lie that way. Null when the panel's size
/// overflows, exceeds the memory limit ([`crate::memory_limit`]) or cannot be
/// allocated. The panel stays valid until the thread's
/// next call.
///
/// # Safety
///
/// `p` points at a [`Pack`] whose counts are not negative, and every step's
/// `columns` values are readable.
pub unsafe extern "C" fn uop_pack_f32(p: *const Pack) -> *const f32 {
    // SAFETY: as the caller guarantees.
    let p = unsafe { &*p };
    if packed_already(p) {
        return p.b;
    }
    let Some(len) = p
        .counts
        .iter()
        .chain([&p.columns])
        .try_fold(1_usize, |n, &c| n.checked_mul(usize::try_from(c).ok()?))
    else {
        return std::ptr::null();
    };
    let columns = p.columns as usize;
    PANEL.with(|panel| {
        let mut panel = panel.borrow_mut();
        if panel.as_ref().is_none_or(|v| v.len() < len) {
            // Accounted before it is taken: the run's ledger counted the panel
            // when its sizes were known; this refuses one over the memory limit
            // whatever the caller counted.
            let mut ledger = crate::Ledger::new();
            if ledger.add("the contraction panel", len as u64, 4).is_err()
                || ledger.check().is_err()
            {
                return std::ptr::null();
            }
            *panel = AlignedVec::try_zeroed(len.max(1));
        }
        let Some(panel) = panel.as_mut() else {
            return std::ptr::null();
        };
        let mut to = 0;
        for k0 in 0..p.counts[0] {
            for k1 in 0..p.counts[1] {
                for k2 in 0..p.counts[2] {
                    let from = at(p.b, [k0, k1, k2], p.b_steps);
                    // SAFETY: the caller guarantees each step's values are readable;
                    // the panel holds `len` = every step's values.
                    let step = unsafe { std::slice::from_raw_parts(from, columns) };
                    panel[to..to + columns].copy_from_slice(step);
                    to += columns;
                }
            }
        }
        panel.as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tile of a small matmul `a[M, K] · b[K, N]` at (`r`, `c`), each level
    /// the CPU runs, against the sum in order (one rounding per product without
    /// FMA: exact equality on the baseline level).
    #[test]
    fn every_level_computes_a_tile_of_a_matmul() {
        let (m, k, n) = (7_usize, 13_usize, 70_usize);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 11) as f32 * 0.25 - 1.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 * 0.5 - 1.5).collect();
        let levels = LEVELS.len().min(usize::from(host_level_index()) + 1);
        for level in &LEVELS[..levels] {
            let (r, c) = (m - level.rows, n - level.columns);
            let pack = Pack {
                b: b[c..].as_ptr(),
                counts: [1, 1, k as i64],
                b_steps: [0, 0, n as i64],
                columns: level.columns as i64,
            };
            // SAFETY: every step's columns lie inside `b`.
            let panel = unsafe { uop_pack_f32(&pack) };
            assert!(!panel.is_null());
            let mut out = vec![f32::NAN; level.rows * level.columns];
            let t = Contraction {
                a: a[r * k..].as_ptr(),
                a_row: k as i64,
                counts: [1, 1, k as i64],
                a_steps: [0, 0, 1],
                panel,
                out: out.as_mut_ptr(),
                out_row: level.columns as i64,
                out_col: 1,
            };
            // SAFETY: the level is one the CPU runs; every read lies inside `a` and
            // the panel, `out` has room for the tile.
            unsafe { (level.contract)(&t) };
            for row in 0..level.rows {
                for col in 0..level.columns {
                    let want = (0..k).fold(0.0_f32, |s, i| {
                        s + a[(r + row) * k + i] * b[i * n + c + col]
                    });
                    let got = out[row * level.columns + col];
                    assert!(
                        (got - want).abs() <= 1e-5 * want.abs().max(1.0),
                        "{got} {want}"
                    );
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn host_level_index() -> u8 {
        crate::cpu_level()
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn host_level_index() -> u8 {
        0
    }

    #[test]
    fn an_operand_whose_steps_follow_one_another_is_its_own_panel() {
        let b = [0.0_f32; 2 * 3 * 8];
        let mut p = Pack {
            b: b.as_ptr(),
            counts: [2, 3, 1],
            b_steps: [24, 8, 99],
            columns: 8,
        };
        // SAFETY: the steps lie inside `b`.
        assert_eq!(unsafe { uop_pack_f32(&p) }, b.as_ptr());
        // A gap between the outer steps: copied.
        p.b_steps[0] = 32;
        let b2 = [0.0_f32; 64];
        p.b = b2.as_ptr();
        // SAFETY: the steps lie inside `b2` (the last 8 values from 32 + 16).
        assert_ne!(unsafe { uop_pack_f32(&p) }, b2.as_ptr());
    }

    #[test]
    fn a_panel_too_large_is_refused() {
        let b = [0.0_f32; 4];
        let p = Pack {
            b: b.as_ptr(),
            counts: [i64::MAX, 4, 1],
            b_steps: [0, 0, 0],
            columns: 4,
        };
        // SAFETY: the size overflows before anything is read.
        assert!(unsafe { uop_pack_f32(&p) }.is_null());
    }

    #[test]
    fn an_empty_reduction_gives_zeros() {
        let b = [1.0_f32; 8];
        let p = Pack {
            b: b.as_ptr(),
            counts: [1, 0, 1],
            b_steps: [0, 0, 0],
            columns: 8,
        };
        // SAFETY: no step is read.
        let panel = unsafe { uop_pack_f32(&p) };
        let mut out = [f32::NAN; 32];
        let t = Contraction {
            a: b.as_ptr(),
            a_row: 0,
            counts: [1, 0, 1],
            a_steps: [0, 0, 0],
            panel,
            out: out.as_mut_ptr(),
            out_row: 1,
            out_col: 4,
        };
        // SAFETY: no step is read; `out` has room for 4 × 8.
        unsafe { uop_contract_f32_baseline(&t) };
        assert!(out.iter().all(|&v| v == 0.0));
    }
}
