//! Ops inside a chunk loop that mix rows while keeping their number
//! (`docs/graph-looping.md`): a softmax over axis 0, a `reindex` shifting or
//! reversing the rows, a gather along the rows, an `iota` numbering them. Such an op
//! passes the rule "every looped value keeps the looped rows" (its value has the
//! chunk's rows), but computes each chunk's rows from the chunk alone where the
//! whole batch's result reads other rows: the chunked result would differ silently.
//!
//! The check reads the node's uops (its call's one-call program, or its kernel's
//! program) and follows, value by value, whether axis 0 is *the looped rows* — row
//! `r` computed from row `r` of the looped inputs alone — or *free* of them (read
//! from outside the loop, same for every chunk):
//!
//! | uop | looped operand | free operand |
//! |---|---|---|
//! | input | an input looped by the chunk (partition above 0) | the others |
//! | unary, binary, where | looped when any operand is | free |
//! | `reduce_*` | looped, unless it reduces axis 0: **mixes** | free |
//! | `reindex` | looped when its input's axis 0 reads output axis 0 (`i0`) and the output's axis 0 is the rows; else **mixes** | free, unless it reads by an output index over the rows: **mixes** (a row's position) |
//! | `reindex_reduce` | looped when output axis 0 is `i0` of the input and the rows; else **mixes** | free, unless its output has the rows: **mixes** |
//! | `select` along axis 0 | **mixes** (a gather across rows) | looped when the index is (a table lookup) |
//! | `select` along another axis | looped | looped when the index is, unless the table has the rows: **mixes** |
//! | `iota` | — | free, unless its axis is the rows: **mixes** (a chunk's rows are numbered from 0) |

use uop_codegen::index::Expr;
use uop_codegen::uop::{Program, Uop};

/// What a value's axis 0 is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rows {
    /// Row `r` is computed from row `r` of the looped inputs alone.
    Looped,
    /// Not computed from looped values: the same for every chunk.
    Free,
}

/// The first uop of `program` that mixes the looped rows `batch`, as a phrase for
/// an error message (`its reduce_max runs over axis 0`); `None` when every value
/// computes each row from that row alone. `looped[k]`: the program's input `k` is a
/// value of the loop; `checked[k]`: output `k` must keep each row to itself (not a
/// value only `sum_chunks` reads, which may sum over the rows): only the uops these
/// outputs need are checked.
pub(crate) fn mixing_uop(
    program: &Program,
    looped: &[bool],
    checked: &[bool],
    batch: &Expr,
) -> Option<String> {
    let mut needed = vec![false; program.nodes.len()];
    for (k, out) in program.outputs.iter().enumerate() {
        if checked.get(k).copied().unwrap_or(true)
            && let Some(n) = needed.get_mut(out.0)
        {
            *n = true;
        }
    }
    for id in (0..program.nodes.len()).rev() {
        if needed[id] {
            for i in program.nodes[id].op.inputs() {
                if let Some(n) = needed.get_mut(i.0) {
                    *n = true;
                }
            }
        }
    }
    let mut state: Vec<Rows> = Vec::with_capacity(program.nodes.len());
    let is_rows = |shape: &[Expr], axis: usize| shape.get(axis) == Some(batch);
    for (id, node) in program.nodes.iter().enumerate() {
        if !needed[id] {
            state.push(Rows::Free);
            continue;
        }
        let of = |n: uop_codegen::uop::NodeId| state.get(n.0).copied().unwrap_or(Rows::Free);
        let kind = node.op.kind();
        let mixes = |what: &str| Some(format!("its {kind} ({}) {what}", node.name));
        let s = match &node.op {
            Uop::Input => {
                let k = program.inputs.iter().position(|i| i.0 == id);
                if k.and_then(|k| looped.get(k)).copied().unwrap_or(false) {
                    Rows::Looped
                } else {
                    Rows::Free
                }
            }
            Uop::Unary { x, .. } | Uop::Cast { x } => of(*x),
            Uop::Binary { .. } | Uop::Where { .. } => {
                if node.op.inputs().into_iter().any(|n| of(n) == Rows::Looped) {
                    Rows::Looped
                } else {
                    Rows::Free
                }
            }
            Uop::Reduce { axes, x, .. } => match of(*x) {
                Rows::Looped if axes.contains(&0) => {
                    return mixes("reduces axis 0, across the looped rows");
                }
                s => s,
            },
            Uop::Iota { axis } => {
                if is_rows(&node.shape, *axis) {
                    return mixes(&format!(
                        "numbers the looped rows along axis {axis}: a chunk's rows are \
                         numbered from 0"
                    ));
                }
                Rows::Free
            }
            Uop::Reindex { x, index, .. } => match of(*x) {
                Rows::Looped => {
                    if index.first() == Some(&Expr::Index(0)) && is_rows(&node.shape, 0) {
                        Rows::Looped
                    } else {
                        return mixes("reads its input's rows at other positions");
                    }
                }
                Rows::Free => {
                    let by_position = (0..node.shape.len()).any(|k| {
                        is_rows(&node.shape, k) && index.iter().any(|e| e.indices().contains(&k))
                    });
                    if by_position {
                        return mixes("reads a value from outside the loop by row position");
                    }
                    Rows::Free
                }
            },
            Uop::ReindexReduce { x, index, .. } => match of(*x) {
                Rows::Looped => {
                    if index.first() == Some(&Expr::Index(0)) && is_rows(&node.shape, 0) {
                        Rows::Looped
                    } else {
                        return mixes("writes its input's rows to other positions");
                    }
                }
                Rows::Free => {
                    if node.shape.iter().any(|d| d == batch) {
                        return mixes("scatters a value from outside the loop over the rows");
                    }
                    Rows::Free
                }
            },
            Uop::Select { axis, x, index } => {
                let table = program.node(*x);
                match (of(*x), of(*index)) {
                    (Rows::Looped, _) if *axis == 0 => {
                        return mixes("gathers along axis 0, across the looped rows");
                    }
                    (Rows::Looped, _) => Rows::Looped,
                    (Rows::Free, Rows::Looped) => {
                        if *axis != 0 && is_rows(&table.shape, 0) {
                            return mixes("reads a value from outside the loop by row position");
                        }
                        Rows::Looped
                    }
                    (Rows::Free, Rows::Free) => Rows::Free,
                }
            }
        };
        state.push(s);
    }
    None
}
