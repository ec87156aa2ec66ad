//! The panel plan: which loads of a `[tile(packed …)]` nest a backend copies into
//! the tile's column panel. The mark names the loads that may be packed (the `pack`
//! pass, verified by [`packable`](crate::loops::analysis::packable): float loads of
//! the reduction that move with the column but not the row, not sliding windows);
//! the plan keeps those the realization can copy, in one order both use.
//!
//! The two realizations differ in how they copy, and the plan states each one's
//! limit ([`Packing`]) rather than a rule of its own per backend:
//!
//! - **cells** (the Rust copies): each of a column tile's `NR` cells copied by
//!   itself, so any named load, of any stride, under any number of reduction loops;
//!   every column tile's panel is packed before the rows run, so the column loop's
//!   range must be free of loop indices too;
//! - **vectors** (Cranelift): whole vectors along the columns, from a stack slot
//!   the reduction's one loop steps through, so only loads at unit stride along the
//!   columns, under exactly one reduction loop.
//!
//! Both need the reduction loops' ranges free of loop indices: a panel is sized
//! before the nest runs (the Rust copies from dims and params alone; Cranelift's
//! slot is fixed, and its tile plan already requires it).

use crate::loops::analysis::{Stride, named, operand_loads};
use crate::loops::{Access, Loop, Stmt, Value};

use super::vector::stride;

/// How a backend copies a panel's loads (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packing {
    /// Cell by cell: any named load, any reduction nest.
    Cells,
    /// Whole vectors along the columns: unit-stride loads, one reduction loop.
    Vectors,
}

/// The loads of the tile nest `loops = [r, c, k…]` that go into its column panel
/// when copied by `packing`: the loads its mark names, each once, in the order the
/// innermost reduction's statements read them. Empty when the nest is not a tile,
/// its mark names no load, a reduction loop's range depends on a loop index (for
/// [`Packing::Cells`] the column loop's too), or nothing named fits `packing`.
pub fn panel_loads(loops: &[Loop], packing: Packing) -> Vec<Value> {
    let [_, c, reduce @ ..] = loops else {
        return Vec::new();
    };
    let (Some(innermost), Some(tile)) = (reduce.last(), c.schedule.tile) else {
        return Vec::new();
    };
    let free = |l: &Loop| l.start.indices().is_empty() && l.end.indices().is_empty();
    let sized = reduce.iter().all(free) && (packing == Packing::Vectors || free(c));
    if !sized || (packing == Packing::Vectors && reduce.len() != 1) {
        return Vec::new();
    }
    let marked = named(&loops[1..], false, tile.packed);
    operands_named(innermost, &marked, |access| match packing {
        Packing::Cells => true,
        Packing::Vectors => stride(access, c.id) == Stride::Unit,
    })
}

/// The loads of the tile nest `loops = [r, c, k…]` that go into its row panel (the
/// Rust copies, cell by cell, per block of rows): the loads its `rows(packed ..)`
/// argument names, each once, in the order the innermost reduction's statements
/// read them. Empty unless the nest packs a column panel cell by cell
/// ([`panel_loads`] with [`Packing::Cells`]: the row blocks are that
/// realization's) and the row loop's range is free of loop indices (a row panel
/// is sized before the nest runs, as the column panel is).
pub fn row_panel_loads(loops: &[Loop]) -> Vec<Value> {
    let [r, c, reduce @ ..] = loops else {
        return Vec::new();
    };
    let (Some(innermost), Some(tile)) = (reduce.last(), c.schedule.tile) else {
        return Vec::new();
    };
    let free = r.start.indices().is_empty() && r.end.indices().is_empty();
    if !free || panel_loads(loops, Packing::Cells).is_empty() {
        return Vec::new();
    }
    let marked = named(&loops[1..], false, tile.rows);
    operands_named(innermost, &marked, |_| true)
}

/// The loads among the operands of `innermost`'s statements that `marked` names
/// and `fits` accepts, each once, in the order the statements read them.
fn operands_named(
    innermost: &Loop,
    marked: &[Access],
    fits: impl Fn(&Access) -> bool,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for s in &innermost.stmts {
        let (Stmt::Store { value, .. }
        | Stmt::Accumulate { value, .. }
        | Stmt::Update { value, .. }) = s;
        let mut loads = Vec::new();
        operand_loads(value, &mut loads);
        for v in loads {
            let Value::Load { access, .. } = v else {
                continue;
            };
            if fits(access) && marked.contains(access) && !out.contains(v) {
                out.push(v.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::parse_program;

    /// The printed packed loads of the tile nest of `text`'s first block (its
    /// loops from the second on: `[r, c, k…]`) for `packing`.
    fn packed(text: &str, skip: usize, packing: Packing) -> Vec<String> {
        let p = parse_program(text).unwrap_or_else(|e| panic!("{e}"));
        let loops = p.blocks[0].loops[skip..].to_vec();
        panel_loads(&loops, packing)
            .iter()
            .map(|v| match v {
                Value::Load { access, .. } => {
                    let index: Vec<String> = access
                        .index
                        .iter()
                        .map(|s| match s {
                            crate::loops::Subscript::Expr(e) => e.to_string(),
                            crate::loops::Subscript::Value(_) => "?".into(),
                        })
                        .collect();
                    format!("{}[{}]", p.tensors[access.tensor.0].name, index.join(", "))
                }
                other => panic!("not a load: {other:?}"),
            })
            .collect()
    }

    const MATMUL: &str = "input  a: f32[M, K]\ninput  b: f32[K, N]\noutput c: f32[M, N]\nblock 0 {\n  for i0 in 0..M {\n    for i2 in 0..N [tile(packed b[i1, i2]), block reduction] {\n      v0 = 0.0 (+)\n      for i1 in 0..K {\n        v0 += a[i0, i1] * b[i1, i2]\n      }\n      c[i0, i2] = v0\n    } }\n}\n";

    #[test]
    fn a_matmul_packs_its_named_load_either_way() {
        assert_eq!(packed(MATMUL, 0, Packing::Cells), ["b[i1, i2]"]);
        assert_eq!(packed(MATMUL, 0, Packing::Vectors), ["b[i1, i2]"]);
        // Unmarked: nothing.
        let unmarked = MATMUL.replace("tile(packed b[i1, i2])", "tile");
        assert!(packed(&unmarked, 0, Packing::Cells).is_empty());
    }

    #[test]
    fn vectors_need_unit_stride_and_one_reduction_loop() {
        // `b` read transposed: its column moves with `i2` by `K`, not by one.
        let strided = "input  a: f32[M, K]\ninput  b: f32[N, K]\noutput c: f32[M, N]\nblock 0 {\n  for i0 in 0..M {\n    for i2 in 0..N [tile(packed b[i2, i1]), block reduction] {\n      v0 = 0.0 (+)\n      for i1 in 0..K {\n        v0 += a[i0, i1] * b[i2, i1]\n      }\n      c[i0, i2] = v0\n    } }\n}\n";
        assert_eq!(packed(strided, 0, Packing::Cells), ["b[i2, i1]"]);
        assert!(packed(strided, 0, Packing::Vectors).is_empty());
        // Two reduction loops (a 2-D window's weights): cells only.
        let two = "input  x: f32[M, 3, 3]\ninput  w: f32[3, 3, N]\noutput y: f32[M, N]\nblock 0 {\n  for i0 in 0..M {\n    for i1 in 0..N [tile(packed w[i2, i3, i1]), block reduction] {\n      v0 = 0.0 (+)\n      for i2 in 0..3 {\n        for i3 in 0..3 {\n          v0 += x[i0, i2, i3] * w[i2, i3, i1]\n        } }\n      y[i0, i1] = v0\n    } }\n}\n";
        assert_eq!(packed(two, 0, Packing::Cells), ["w[i2, i3, i1]"]);
        assert!(packed(two, 0, Packing::Vectors).is_empty());
    }

    #[test]
    fn a_reduction_range_that_moves_with_a_loop_packs_nothing() {
        // A panel is sized before the nest runs.
        let moving = MATMUL.replace("for i1 in 0..K", "for i1 in 0..i0");
        assert!(packed(&moving, 0, Packing::Cells).is_empty());
        assert!(packed(&moving, 0, Packing::Vectors).is_empty());
    }

    #[test]
    fn cells_need_a_column_range_free_of_loop_indices() {
        // Every column tile's panel is packed before the rows run.
        let triangle = MATMUL.replace("for i2 in 0..N [tile", "for i2 in i0..N [tile");
        assert!(packed(&triangle, 0, Packing::Cells).is_empty());
        assert_eq!(packed(&triangle, 0, Packing::Vectors), ["b[i1, i2]"]);
    }

    #[test]
    fn not_a_tile_packs_nothing() {
        // The nest from its column loop on has no row loop above the tile.
        assert!(packed(MATMUL, 1, Packing::Cells).is_empty());
    }
}
