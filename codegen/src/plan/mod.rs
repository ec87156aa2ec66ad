//! The planning step (DESIGN.md §8, *schedule decisions are made once*): pure
//! functions of a marked loop program and a [`Target`](crate::target::Target)
//! that say how a nest is realized, for the emitters to follow. They decide
//! nothing the marks do not allow, and read sizes (lanes, tile shape, cache
//! blocks, jammed rows) from the target, never from constants of their own.
//!
//! | plan | decision | read by |
//! |---|---|---|
//! | [`vector_plan`] | an innermost loop as vectors, its reductions and unroll | Cranelift |
//! | [`jam_plan`] | a `[jammed]` nest's rows run `jam_rows` at a time | Cranelift |
//! | [`tile_plan`] | a `[tile]` nest as register tiles, within Cranelift's limits | Cranelift |
//! | [`contraction`] | a tile's reduction computed by the CPU level's runtime micro-kernel | Cranelift (JIT) |
//! | [`math_runs`] | a vector loop's math calls computed over runs of lanes by the runtime | Cranelift (JIT) |
//! | [`panel_loads`] | which loads a `[tile(packed …)]` nest copies into its panel, per [`Packing`] | both |
//! | [`row_panel_loads`] | which loads a `[rows(packed …)]` tile copies into a row panel per block of rows | Rust |
//! | [`transpose_plan`] | a `[blocked]` copy transposed in registers | both |
//!
//! Where the two backends agree the decision is made here once: the transposed
//! copies, the tile's shape (`tile_rows` × `tile_cols`), the partial results of a
//! split reduction (`lanes`: the Rust copies' `LANES`, Cranelift's unroll in
//! vectors), math-heaviness ([`math_heavy`](crate::loops::analysis::math_heavy),
//! an analysis). Where they differ, it is because the realizations differ, and the
//! plan says so: [`tile_plan`] states the limits of Cranelift's tile (unit-stride
//! or invariant float loads, reduction ranges free of the tile), which the Rust
//! copies do not have, [`panel_loads`] what each one's way of copying a panel
//! ([`Packing`]) can pack, and only Cranelift jams rows. The Rust emitter's own plan
//! (`backend/rust/kernel/plan.rs`: which const generics its copies use, which
//! panels it allocates) is about its items, not about a nest's realization.

pub mod contraction;
pub mod panel;
pub mod runs;
pub mod tile;
pub mod transpose;
pub mod vector;

pub use contraction::{Contraction, contraction, contraction_nests};
pub use panel::{Packing, panel_loads, row_panel_loads};
pub use runs::{RUN_FUNCTIONS, math_runs};
pub use tile::{tile_plan, unit_axes};
pub use transpose::transpose_plan;
pub use vector::{VectorPlan, invariant_loads, jam_plan, stride, vector_plan};
