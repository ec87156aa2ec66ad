//! Analyses of the loop IR that the passes and both backends share, one definition
//! each: how an access moves along a loop ([`stride`]), traversals and rewrites of
//! blocks ([`walk`]), which symbolic sizes are equal ([`ShapeGroups`]), which
//! rows may be jammed ([`jammable`]), which loops may run in chunks
//! ([`chunkable`]), which accesses a loop aligns to cache lines ([`line`]),
//! which values call long math functions ([`math_heavy`]), which loads of a tile
//! may be packed ([`packable`], [`row_packable`], [`sliding`]) and which write an inner parallel
//! loop's shares align to ([`line_aligned`]); marks name loads and writes by their
//! position in a loop's body ([`body_accesses`]).
//! Nothing here changes a program's meaning; the backends depend on these, not on
//! the optimizer (`pass/`).

pub mod body;
pub mod chunk;
pub mod jam;
pub mod line;
pub mod lines;
pub mod math;
pub mod pack;
pub mod shape_groups;
pub mod stride;
pub mod walk;

pub use body::{body_accesses, named};
pub use chunk::chunkable;
pub use jam::jammable;
pub use line::{alignable, aligned_load, line_store, load_position, loads};
pub use lines::{line_aligned, line_write};
pub use math::math_heavy;
pub use pack::{packable, row_packable, sliding};
pub use shape_groups::ShapeGroups;
pub use stride::{
    Stride, access_mentions, coefficient, stride, transpose_copy, unit_axis, value_mentions,
};
pub use walk::{block_accesses, fully_written_first, operand_loads, stmt_accesses};
