//! The optimizer (DESIGN.md §6): passes from loop program to loop program, one file
//! each, run in a fixed pipeline that a user can switch parts of off and trace.
//!
//! Two analyses feed the passes: [`ShapeGroups`] (which symbolic sizes are equal) and
//! [`Deps`] (which blocks read and write which tensors). The pipeline, in order:
//!
//! 1. `dce` — drop what no output needs, so fusion does not waste effort on it;
//! 2. `fuse` — merge loop nests, reordering loops between pivots;
//! 3. `subst` — replace temporaries now stored and read in the same loop by their
//!    expressions;
//! 4. `dce` — again, for what fusion and substitution left dead;
//! 5. `bounds` — unmark accesses proven in range (after fusion, so the proofs see
//!    the final loops);
//! 6. `cleanup` — fold index expressions and `where`s whose branches are the same,
//!    drop loops and blocks that do nothing (`fuse` drops loops that run once
//!    itself, before matching nests);
//! 7. `pick` — run a sum that adds only at the iteration whose index equals a value
//!    not moving with the loop (a one-hot pick: a row chosen by a trip count) as that
//!    one iteration, reading at the value.
//!
//! Then the schedule passes, which decide how the loops run fast:
//!
//! 8. `pad` — make a reduction read a padded window (convolution, pooling with
//!    padding) from a padded copy filled before it, so its inner loop loads without
//!    bounds checks; first, so the passes after it see the unchecked loads;
//! 9. `order` — turn a strided reduction inside out so the unit-stride loop is
//!    innermost (column sums);
//! 10. `channels` — read a convolution's weights from a copy with the output
//!     channels last, and mark the register tile along those channels;
//! 11. `tile` — mark register tiles for the other reduction nests with shared loads
//!     (matmul, convolution), choosing the row loop;
//! 12. `pack` — name the loads of each register tile that every row tile reads
//!     alike, which a backend may copy into a contiguous panel;
//! 13. `pack-rows` — name, where a tile packs its columns and blocks its
//!     reduction, the loads every column tile reads alike, which a backend may
//!     copy into a row panel per block of rows;
//! 14. `transpose` — mark element-wise transposes (and `channels`' copies) to run in
//!     cache blocks;
//! 15. `split` — mark innermost reductions whose partial results a backend may keep
//!     in several accumulators;
//! 16. `jam` — mark nests accumulating into elements that do not move with their
//!     rows (column sums) to run several rows at a time, in row order;
//! 17. `chunk` — mark element-wise loops of math functions to compute a chunk of
//!     values before storing them, so their dependency chains overlap;
//! 18. `parallel` — mark the loops whose iterations may run on several threads
//!     (a block's outermost loop, or an inner one when the loops outside carry a
//!     dependence, as a column sum's rows do), and full reductions that may fold
//!     fixed pieces of their range apart (`[pieces]`);
//! 19. `align` — name, in the `split` mark of a long reduction run in pieces, the
//!     load its chunks may be aligned to (`[split(aligned x[i0])]`);
//! 20. `rows` — join consecutive nests over the same rows (softmax, layer norm) so
//!     they may run row by row, and mark the temporaries then needed one row at a
//!     time;
//! 21. `line` — mark innermost loops storing at unit stride to run in two runs
//!     split where the store starts a cache line (`[line split]`);
//! 22. `share` — name the write an inner parallel loop's shares align to cache
//!     lines of (`[parallel(lines y[0, i0])]`; after `rows`, which decides which
//!     temporaries are row buffers).
//!
//! Every pass preserves every output bit for bit (`pick` wherever the loop's index
//! values are exact floats: loops under 2^24 iterations in f32); the randomized oracle test
//! (`tests/suite/passes_oracle.rs`) checks each pass alone and the whole pipeline against
//! the reference interpreter. `tile`, `pack`, `pack-rows`, `transpose`, `split`, `jam`, `chunk`,
//! `parallel`, `align`, `rows`, `line` and `share` only annotate loops
//! ([`Schedule`](crate::loops::Schedule)); the backends that honor the annotations
//! reassociate float sums there, and their oracle tests state that tolerance.
//!
//! ```
//! use uop_codegen::{loops, pass::{self, PassOptions}, uop::{Builder, DType, UnaryOp}};
//! let mut b = Builder::new(DType::F32);
//! let x = b.input("x", DType::F32, &["N"])?;
//! let y = b.unary(UnaryOp::Exp, x)?;
//! let z = b.unary(UnaryOp::Neg, y)?;
//! let lowered = loops::lower(&b.combine(&[x], &[z])?);
//! let optimized = pass::optimize(&lowered, &PassOptions::default())?;
//! assert_eq!(optimized.blocks.len(), 1);
//! assert!(optimized.to_string().contains("t2[i0] = -exp(x[i0])"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod align;
mod bounds;
mod channels;
mod chunk;
mod cleanup;
mod dce;
mod deps;
mod fuse;
mod jam;
mod line;
mod list;
mod order;
mod pack;
mod pack_rows;
mod pad;
mod parallel;
mod pick;
mod rows;
mod share;
mod split;
mod subst;
mod tile;
mod transpose;

use std::collections::HashMap;

use thiserror::Error;

// The analyses the passes share live in `loops::analysis` (the backends use them
// too); the passes reach them as `super::walk`, `super::stride`, `super::shape_groups`.
use crate::loops::analysis::{shape_groups, stride, walk};

use crate::index::Bindings;
use crate::loops::{LoopProgram, TensorKind, VerifyError};

pub use crate::loops::analysis::ShapeGroups;
pub use align::align;
pub use bounds::bounds;
pub use channels::channels;
pub use chunk::chunk;
pub use cleanup::cleanup;
pub use dce::dce;
pub use deps::{BlockDeps, Deps};
pub use fuse::fuse;
pub use jam::jam;
pub use line::line;
pub use list::{Named, PassList};
pub use order::order;
pub use pack::pack;
pub use pack_rows::pack_rows;
pub use pad::pad;
pub use parallel::parallel;
pub use pick::pick;
pub use rows::rows;
pub use share::share;
pub use split::split;
pub use subst::subst;
pub use tile::tile;
pub use transpose::transpose;

/// A named program-to-program transformation.
#[derive(Clone, Copy, Debug)]
pub struct Pass {
    /// The name used by `--disable-pass` and in traces.
    pub name: &'static str,
    /// One line: what the pass guarantees.
    pub doc: &'static str,
    /// The transformation; it never changes a program's results.
    pub run: fn(&LoopProgram) -> LoopProgram,
}

const DCE: Pass = Pass {
    name: "dce",
    doc: "removes statements, blocks, carried variables and temporaries no output depends on",
    run: dce,
};

impl Named for Pass {
    fn name(&self) -> &'static str {
        self.name
    }
}

const PIPELINE: PassList<Pass> = PassList::new(&[
    DCE,
    Pass {
        name: "fuse",
        doc: "merges loop nests whose loops, or outer loops, match by range, reordering \
              only between pivots, when every dependence keeps its order",
        run: fuse,
    },
    Pass {
        name: "subst",
        doc: "replaces a temporary stored once and read only later in the same loop at the \
              same index by its expression",
        run: subst,
    },
    DCE,
    Pass {
        name: "bounds",
        doc: "marks accesses proven in range for all sizes as unchecked",
        run: bounds,
    },
    Pass {
        name: "cleanup",
        doc: "folds index expressions and `where(c, a, a)` to `a`, and removes loops and \
              blocks that do nothing",
        run: cleanup,
    },
    Pass {
        name: "pick",
        doc: "runs a sum over a loop that adds only where the loop's index equals a \
              value not moving with it (a one-hot pick) as that one iteration, reading \
              at the value",
        run: pick,
    },
    Pass {
        name: "pad",
        doc: "makes reductions read windows that reach past a tensor's edges from a \
              padded copy (the same values), so their inner loops load unchecked",
        run: pad,
    },
    Pass {
        name: "order",
        doc: "turns a reduction with a strided inner loop inside out, accumulating into \
              the output along the unit-stride loop (same values, same order)",
        run: order,
    },
    Pass {
        name: "channels",
        doc: "makes a convolution read its weights from a copy with the output channels \
              last (the same values) and marks its register tile along those channels",
        run: channels,
    },
    Pass {
        name: "tile",
        doc: "marks reduction nests with loads shared across rows and columns for \
              register tiling, moving the best row loop next to the column loop",
        run: tile,
    },
    Pass {
        name: "pack",
        doc: "names the loads of each register tile that every tile of rows reads alike \
              (not sliding windows), which a backend may copy into a contiguous panel",
        run: pack,
    },
    Pass {
        name: "pack-rows",
        doc: "names, where a tile packs a column panel and blocks its reduction, the loads \
              every tile of columns reads alike (not sliding windows), which a backend may \
              copy into a row panel per block of rows",
        run: pack_rows,
    },
    Pass {
        name: "transpose",
        doc: "marks element-wise nests that read across the rows they write (a \
              transpose) to run in square blocks that fit the cache",
        run: transpose,
    },
    Pass {
        name: "split",
        doc: "marks innermost reduction loops whose partial results may be kept apart \
              (reassociation) so they vectorize",
        run: split,
    },
    Pass {
        name: "jam",
        doc: "marks nests accumulating into elements that do not move with the rows \
              (column sums) to run several rows at a time, combined in row order",
        run: jam,
    },
    Pass {
        name: "chunk",
        doc: "marks element-wise innermost loops storing values of math functions (`exp`, \
              `tanh`, ...) to compute a chunk of values before storing them",
        run: chunk,
    },
    Pass {
        name: "parallel",
        doc: "marks the loop whose iterations touch disjoint parts of what the block \
              writes, so they may run on several threads, or a full reduction's loop that \
              may fold fixed pieces apart",
        run: parallel,
    },
    Pass {
        name: "align",
        doc: "names, in the split mark of a long reduction run in pieces, the unit-stride \
              load its chunks may start at a cache line of",
        run: align,
    },
    Pass {
        name: "rows",
        doc: "joins consecutive nests over the same rows that touch only their own row of \
              what the others write, and marks temporaries one row of which is enough",
        run: rows,
    },
    Pass {
        name: "line",
        doc: "marks innermost loops storing at unit stride to run in two runs, split where \
              the store starts a cache line",
        run: line,
    },
    Pass {
        name: "share",
        doc: "names the write an inner parallel loop's shares start at cache line \
              boundaries of (else threads take equal parts)",
        run: share,
    },
]);

/// The passes in the order [`optimize`] runs them (a pass may appear twice).
pub fn pipeline() -> &'static [Pass] {
    PIPELINE.passes()
}

/// Which passes to skip, and whether to verify the IR between passes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassOptions {
    /// Names of passes not to run (every occurrence in the pipeline); empty runs all.
    pub disabled: Vec<String>,
    /// Run the [verifier](crate::loops::verify) on the program before the first pass
    /// and after every pass, stopping at the first invalid program. On in the tests
    /// and the differential oracle (`uop fuzz`); off by default.
    pub verify_each_pass: bool,
}

impl PassOptions {
    /// These options with [`verify_each_pass`](PassOptions::verify_each_pass) set.
    pub fn verified(mut self, on: bool) -> Self {
        self.verify_each_pass = on;
        self
    }
}

/// Why the optimizer could not run.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PassError {
    /// A name in [`PassOptions::disabled`] is not a pass.
    #[error("unknown pass `{name}`; the passes are: {valid}")]
    UnknownPass {
        /// The name given.
        name: String,
        /// The valid names, comma-separated.
        valid: String,
    },
    /// With [`PassOptions::verify_each_pass`]: a pass left (or was given) a program
    /// that breaks the loop IR's invariants.
    #[error("after {after}: {error}")]
    Invalid {
        /// The pass that made the program (`lowering` for the program given).
        after: &'static str,
        /// What the verifier found.
        error: VerifyError,
    },
}

/// Verifies `p` when `opts` asks for it.
fn check(p: &LoopProgram, opts: &PassOptions, after: &'static str) -> Result<(), PassError> {
    if opts.verify_each_pass {
        crate::loops::verify(p).map_err(|error| PassError::Invalid { after, error })?;
    }
    Ok(())
}

/// Checks that every name `opts` disables is a pass of the pipeline.
///
/// # Errors
///
/// [`PassError::UnknownPass`] naming the first unknown name and the valid ones.
pub fn pipeline_names_check(opts: &PassOptions) -> Result<(), PassError> {
    PIPELINE.check_names(opts.disabled.iter().map(String::as_str))
}

/// Runs the pipeline on `p`, skipping the disabled passes.
pub fn optimize(p: &LoopProgram, opts: &PassOptions) -> Result<LoopProgram, PassError> {
    let trace = optimize_traced(p, opts)?;
    Ok(trace
        .into_iter()
        .last()
        .map_or_else(|| p.clone(), |(_, prog)| prog))
}

/// Runs the pipeline on `p` and returns the program after each pass that ran, in
/// order, under that pass's name.
pub fn optimize_traced(
    p: &LoopProgram,
    opts: &PassOptions,
) -> Result<Vec<(&'static str, LoopProgram)>, PassError> {
    PIPELINE.check_names(opts.disabled.iter().map(String::as_str))?;
    check(p, opts, "lowering")?;
    let mut trace: Vec<(&'static str, LoopProgram)> = Vec::new();
    for pass in PIPELINE.enabled(&opts.disabled) {
        let current = trace.last().map_or(p, |(_, prog)| prog);
        let next = (pass.run)(current);
        check(&next, opts, pass.name)?;
        trace.push((pass.name, next));
    }
    Ok(trace)
}

/// What one pass of [`optimize_timed`] cost and left.
#[derive(Clone, Copy, Debug)]
pub struct PassTime {
    /// The pass's name.
    pub name: &'static str,
    /// Wall time the pass took.
    pub time: std::time::Duration,
    /// Blocks in the program after the pass.
    pub blocks: usize,
    /// Statements in the program after the pass (all levels of all blocks).
    pub stmts: usize,
}

/// Runs the pipeline on `p` like [`optimize`], timing each pass that ran.
pub fn optimize_timed(
    p: &LoopProgram,
    opts: &PassOptions,
) -> Result<(LoopProgram, Vec<PassTime>), PassError> {
    PIPELINE.check_names(opts.disabled.iter().map(String::as_str))?;
    check(p, opts, "lowering")?;
    let mut current = p.clone();
    let mut times = Vec::new();
    for pass in PIPELINE.enabled(&opts.disabled) {
        let start = std::time::Instant::now();
        current = (pass.run)(&current);
        check(&current, opts, pass.name)?;
        times.push(PassTime {
            name: pass.name,
            time: start.elapsed(),
            blocks: current.blocks.len(),
            stmts: current.blocks.iter().map(walk::stmt_count).sum(),
        });
    }
    Ok((current, times))
}

/// Size measures of a loop program, for reports and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Number of blocks (loop nests).
    pub blocks: usize,
    /// Number of loops over all blocks.
    pub loops: usize,
    /// Number of temporaries (tensors allocated by the kernel).
    pub temporaries: usize,
    /// Bytes of all temporaries under the given sizes; `None` if a size is unknown,
    /// negative or too large.
    pub temp_bytes: Option<u64>,
}

/// The [`Stats`] of `p`, with temporaries sized by named `dims` and `params`.
pub fn stats(p: &LoopProgram, dims: &HashMap<String, i64>, params: &HashMap<String, i64>) -> Stats {
    let bindings = Bindings {
        names: dims.clone(),
        params: params.clone(),
        ..Bindings::default()
    };
    let temps: Vec<_> = p
        .tensors
        .iter()
        .filter(|t| t.kind == TensorKind::Temp)
        .collect();
    let temp_bytes = temps.iter().try_fold(0u64, |total, t| {
        let elements = t.shape.iter().try_fold(1u64, |n, e| {
            let v = u64::try_from(e.eval(&bindings).ok()?).ok()?;
            n.checked_mul(v)
        })?;
        total.checked_add(elements.checked_mul(t.dtype.size() as u64)?)
    });
    Stats {
        blocks: p.blocks.len(),
        loops: p.blocks.iter().map(|b| b.loops.len()).sum(),
        temporaries: temps.len(),
        temp_bytes,
    }
}
