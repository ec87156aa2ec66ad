//! Graph looping (DESIGN.md §20, seed 000; `docs/graph-looping.md`): `chunk` nodes
//! run everything downstream of them once per chunk of rows.
//!
//! - [`partition`]: partition numbers by the seed's method, the rules a chunked
//!   graph keeps and the tensors the Sink holds (used by the `loops` pass, the
//!   verifier's [`crate::Checks::PARTITIONS`], the hierarchy's run order and the
//!   memory plan);
//! - [`stack`]: the loop stack, its counts and loop-end functions;
//! - [`drive`]: the run of a node list with chunk nodes, shared by the graph
//!   interpreter and the executor;
//! - [`print`]: `uop print --stage partitions`;
//! - [`variants`]: the graph with other chunk sizes, or without its loops.

pub mod drive;
pub mod partition;
pub mod print;
pub(crate) mod rows;
pub mod stack;
pub mod variants;

pub use drive::{
    LoopHooks, LoopSteps, Looped, OutputKind, OutputRows, drive, output_kinds, rows_of,
};
pub use partition::{LoopError, Partitions, analyze, looped_rows, partitions};
pub use print::print_partitions;
pub use stack::{
    DefaultLoopEnd, Level, LoopControl, LoopCounts, LoopEnd, LoopStack, MAX_LOOPS, default_loop_end,
};
pub use variants::{unchunked, with_chunk_size};
