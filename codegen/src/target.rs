//! The machines code is generated for, as typed facts: one value per fact, read by
//! both backends (DESIGN.md §8: schedule decisions are made once).
//!
//! The Rust backend compiles one copy of a kernel's loops per x86-64 feature level
//! ([`Target::X86_64`]: plain x86-64, AVX2 with FMA, AVX-512) and picks one at run
//! time; the Cranelift backend has one target, its 128-bit vectors
//! ([`Target::cranelift`]). aarch64 NEON is not a target: no machine here can run
//! it, so nothing would test it.
//!
//! `UOP_CPU` (`baseline`, `avx2`, `avx512`) caps the level a process runs
//! ([`Target::host`]), for tests and comparisons; the generated dispatch reads the
//! same cap through `uop_runtime::cpu_level`.

/// A row block ([`Target::tile_row_block`]) past any range a kernel runs: every
/// row in one block, so the column tiles run outside all the row tiles, the order
/// the baseline and AVX-512 copies were tuned with (a multiple of their rows, 4).
pub const WHOLE_RANGE: u32 = 1 << 30;

/// One machine's facts, as the generated code uses them. The names in brackets are
/// the const generics of the Rust backend's `NAME_loops` function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Short name: `baseline`, `avx2`, `avx512`, `cranelift128`; a Rust kernel's copy
    /// of its loops for this target is `NAME_{name}`.
    pub name: &'static str,
    /// What the copy is compiled for, as a sentence (a doc comment of the copy).
    pub description: &'static str,
    /// The `target_feature` list a Rust copy is compiled with (empty: the crate's
    /// own, plain x86-64).
    pub features: &'static str,
    /// Bytes of a vector register (`VEC`).
    pub vector_bytes: u32,
    /// Fused multiply-add available (`FMA`).
    pub fma: bool,
    /// Partial results of a split reduction, and values per chunk of an
    /// element-wise math loop (`LANES`).
    pub lanes: u32,
    /// Rows of a register tile (`MR`).
    pub tile_rows: u32,
    /// Columns of a register tile, in f32 elements (`NR`); a backend whose columns
    /// come in whole vectors holds [`Target::tile_vectors`] of them.
    pub tile_cols: u32,
    /// Reduction block of a register tile (`KC`).
    pub tile_depth: u32,
    /// Rows of a register tile's row block (`MC`, a multiple of `MR`): a tile with a
    /// packed panel runs every column tile over one block of rows before the next,
    /// so the block's rows of the unpacked loads stay in the cache.
    pub tile_row_block: u32,
    /// A tile that packs a column panel also copies its rows' loads
    /// (`rows(packed ..)`) into a row panel per row block and reduction block
    /// (`PR`): only where the row blocks are real ([`Target::tile_row_block`] below
    /// [`WHOLE_RANGE`]), the panel being `MC` × `KC` cells per load.
    pub pack_rows: bool,
    /// Edge of a cache block: of an element-wise nest, of a transposed copy (`TB`).
    pub cache_block: u32,
    /// Rows of a column-sum nest run at once (each output element loaded and stored
    /// once per group); a power of two.
    pub jam_rows: u32,
    /// The largest panel a register tile packs a load into, in bytes; longer
    /// reductions read in place (Cranelift; the Rust copies' panels are
    /// `KC` × `NR` per packed load).
    pub panel_bytes: u32,
    /// Threads sharing out an inner parallel loop whose write is line-aligned
    /// ([`Schedule::lines`](crate::loops::Schedule::lines)) cut it at multiples of
    /// this many iterations from a cache line boundary of that write (the Rust
    /// copies: one literal in the loops every level compiles, so the same on every
    /// x86-64 level).
    pub share_step: u32,
}

impl Target {
    /// Plain x86-64: SSE2's 128-bit vectors, no FMA.
    pub const BASELINE: Target = Target {
        name: "baseline",
        description: "x86-64",
        features: "",
        vector_bytes: 16,
        fma: false,
        lanes: 16,
        tile_rows: 4,
        tile_cols: 8,
        tile_depth: 256,
        tile_row_block: WHOLE_RANGE,
        pack_rows: false,
        cache_block: 16,
        jam_rows: 4,
        panel_bytes: 256 * 8 * 4,
        share_step: 64,
    };

    /// x86-64 with AVX2 and FMA: 256-bit vectors, sixteen of them. Register tiles of
    /// 5 rows by 2 vectors (10 accumulators, 2 panel vectors, 1 broadcast) over a
    /// reduction block of 512 (a column tile's panel, 32 KiB, fits the first-level
    /// cache) and row blocks of 30, their rows packed too, measured on an AMD EPYC (AVX2, no AVX-512)
    /// against jax.jit: 6 × 16 / 256 took matmul 1024³ 1.5× and conv2d 2× as long
    /// (the choice and the figures: docs/performance.md, *Tuning the AVX2 copy*).
    pub const AVX2: Target = Target {
        name: "avx2",
        description: "x86-64 with AVX2 and FMA",
        features: "avx2,fma",
        vector_bytes: 32,
        fma: true,
        lanes: 32,
        tile_rows: 5,
        tile_cols: 16,
        tile_depth: 512,
        tile_row_block: 30,
        pack_rows: true,
        cache_block: 16,
        jam_rows: 4,
        panel_bytes: 512 * 16 * 4,
        share_step: 64,
    };

    /// x86-64 with AVX-512 (F and VL): 512-bit vectors, thirty-two of them.
    pub const AVX512: Target = Target {
        name: "avx512",
        description: "x86-64 with AVX-512",
        features: "avx512f,avx512vl,avx2,fma",
        vector_bytes: 64,
        fma: true,
        lanes: 64,
        tile_rows: 4,
        tile_cols: 64,
        tile_depth: 1024,
        tile_row_block: WHOLE_RANGE,
        pack_rows: false,
        cache_block: 16,
        jam_rows: 4,
        panel_bytes: 1024 * 64 * 4,
        share_step: 64,
    };

    /// The x86-64 feature levels, narrowest first: the Rust backend compiles one copy
    /// of a kernel's loops for each, and `uop_runtime::cpu_level` is an index into
    /// this list.
    pub const X86_64: [Target; 3] = [Target::BASELINE, Target::AVX2, Target::AVX512];

    /// Cranelift's target: 128-bit vectors (four f32, two f64) whatever the CPU has,
    /// register tiles of 4 rows by 2 vectors (8 of x86-64's 16 registers, measured:
    /// matmul 512³ / conv2d 6.8 / 82 ms against 9.1 / 121 for 6 × 2), panels up to
    /// 64 KiB; `fma` is what the JIT's instruction set has.
    pub const fn cranelift(fma: bool) -> Target {
        Target {
            name: "cranelift128",
            description: "Cranelift's 128-bit vectors",
            features: "",
            vector_bytes: 16,
            fma,
            lanes: 16,
            tile_rows: 4,
            tile_cols: 8,
            tile_depth: 256,
            tile_row_block: WHOLE_RANGE,
            pack_rows: false,
            cache_block: 16,
            jam_rows: 4,
            panel_bytes: 64 << 10,
            share_step: 64,
        }
    }

    /// The widest x86-64 level this process runs: what the CPU has, capped by
    /// `UOP_CPU` (read once per process, as the kernels' dispatch reads it).
    pub fn host() -> Target {
        #[cfg(target_arch = "x86_64")]
        {
            let level = usize::from(uop_runtime::cpu_level());
            Target::X86_64[level.min(Target::X86_64.len() - 1)]
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Target::BASELINE
        }
    }

    /// Lanes of a vector of elements of `elem_bytes` bytes.
    pub const fn vector_lanes(&self, elem_bytes: u32) -> u32 {
        self.vector_bytes / elem_bytes
    }

    /// Whole vectors across a register tile's columns ([`Target::tile_cols`] f32
    /// columns; as many vectors, of half as many lanes, for f64).
    pub const fn tile_vectors(&self) -> u32 {
        self.tile_cols * 4 / self.vector_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_levels_widen_in_order() {
        let [base, avx2, avx512] = Target::X86_64;
        assert!(base.vector_bytes < avx2.vector_bytes && avx2.vector_bytes < avx512.vector_bytes);
        assert!(!base.fma && avx2.fma && avx512.fma);
        for t in Target::X86_64 {
            // A split reduction keeps four vectors of f32 partial results.
            assert_eq!(t.lanes, t.vector_bytes);
            assert!(t.tile_cols * 4 >= t.vector_bytes, "{}", t.name);
            // The Rust copies print one share step for all levels.
            assert_eq!(t.share_step, Target::BASELINE.share_step, "{}", t.name);
            // A row block ends where a row tile does.
            assert_eq!(t.tile_row_block % t.tile_rows, 0, "{}", t.name);
            // Rows are packed per real row block only.
            assert!(!t.pack_rows || t.tile_row_block < WHOLE_RANGE, "{}", t.name);
        }
    }

    #[test]
    fn cranelift_tiles_are_two_vectors_of_four_rows() {
        let t = Target::cranelift(true);
        assert_eq!((t.tile_rows, t.tile_vectors()), (4, 2));
        assert_eq!((t.vector_lanes(4), t.vector_lanes(8)), (4, 2));
        assert!(!Target::cranelift(false).fma);
    }

    #[test]
    fn the_host_is_one_of_the_levels() {
        assert!(Target::X86_64.contains(&Target::host()));
    }
}
