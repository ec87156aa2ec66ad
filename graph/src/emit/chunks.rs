//! `chunk` loops in generated code (DESIGN.md §20): a chunk node opens a loop over
//! chunks of rows that stays open to the end of the graph's body (each chunk
//! copied into the chunk node's slot in the arena); at its end each
//! graph output's chunk is delivered at the global row offset and every loop
//! advances (the default loop end).

use uop_codegen::index::Expr;

use super::GraphEmitError;
use super::arena::Val;
use super::body::{Emitter, Frame, outputs_text, sized};
use super::code::{Ex, ex, string};
use super::graph_fn::Output;
use crate::ir::{Node, Op, Ref};

/// One open `chunk` loop (DESIGN.md §20): its locals.
#[derive(Clone, Debug)]
pub(super) struct ChunkLevel {
    /// The first row of this chunk.
    pub(super) start: String,
    /// The rows of this chunk.
    pub(super) rows: String,
    /// The rows of the chunk node's input.
    pub(super) total: String,
    /// The chunk node, as the printed graph names it (a string literal).
    pub(super) node: String,
}

impl ChunkLevel {
    /// The code of this chunk's rows.
    pub(super) fn rows(&self) -> Ex {
        Ex::read(&self.rows)
    }
}

/// The local holding the loop counts of every chunk loop, one per level.
pub(super) const COUNTS: &str = "loops";

/// The graph function's argument of the loop ends.
pub(super) const ENDS: &str = "ends";

impl Emitter<'_> {
    /// `chunk(x, size=C)` (DESIGN.md §20, at the top level): opens a loop over
    /// chunks of rows of `x`, which stays open to the end of the graph's body (the
    /// nodes after it in partition order are its loop; a later chunk nests a loop
    /// inside). Its level's counts are `loops[k]`; the loop ends as the caller's
    /// `rt::graph::LoopEnds` says (`NAME_with_loop_ends`), by default when its rows
    /// are done.
    pub(super) fn chunk(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        size: &Expr,
    ) -> Result<(), GraphEmitError> {
        let first = node
            .inputs
            .first()
            .copied()
            .ok_or_else(|| self.err(node.id, "a chunk without input"))?;
        // The values a chunk loops over together share their rows (the verifier
        // checks it); the first one's count the loop.
        let mut values = Vec::with_capacity(node.inputs.len());
        for &input in &node.inputs {
            let value = self.local(frame, node.id, input)?;
            let ty = self.ty(input)?;
            let Some((axis0, rest)) = ty.shape.split_first() else {
                return Err(self.err(
                    node.id,
                    "a chunk needs a value with an axis 0, got a rank-0 value",
                ));
            };
            let row = sized(
                &self.name,
                node.id,
                self.sizes.len(rest, &format!("a row of {input}")),
            )?;
            values.push((input, value, axis0.clone(), row));
        }
        let total = match frame.rows.get(&first) {
            Some(rows) => rows.clone(),
            None => sized(&self.name, node.id, self.sizes.at(&values[0].2))?,
        };
        self.chunk_loop(frame, node, &values, total, size)
    }

    /// The loop of `chunk` node `node` opened, and each chunk's rows of `values`
    /// (value, its code, axis 0, a row's length) copied into its slot.
    fn chunk_loop(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        values: &[(Ref, Val, Expr, Ex)],
        total: Ex,
        size: &Expr,
    ) -> Result<(), GraphEmitError> {
        let (g, id) = (string(&self.name), string(&node.id.to_string()));
        let size = sized(&self.name, node.id, self.sizes.at(size))?;
        let level = ChunkLevel {
            start: frame.names.fresh("chunk_start"),
            rows: frame.names.fresh("chunk_rows"),
            total: frame.names.fresh("chunk_total"),
            node: id.clone(),
        };
        let ChunkLevel {
            start,
            rows,
            total: total_var,
            ..
        } = &level;
        let k = frame.levels.len();
        frame.code.comment(&format!(
            "{} = chunk(..): a loop over chunks of {} rows (partition {})",
            outputs_text(node),
            size.text(),
            frame.levels.len() + 1
        ));
        frame.code.bind(total_var, total);
        frame.code.open("loop {");
        frame.code.line(ex![
            "let (",
            Ex::bind(start),
            ", ",
            Ex::bind(rows),
            format!(") = rt::graph::chunk_begin({g}, {id}, "),
            size,
            ", ",
            Ex::read(total_var),
            format!(", &mut {COUNTS}[{k}])?;")
        ]);
        // Each chunk's rows are copied into the chunk's slot (the memory plan's:
        // the input may be overwritten before the loop reads it again).
        for (k, (input, value, _, row)) in values.iter().enumerate() {
            let dtype = self.dtype_of(*input);
            let r = node.output(k);
            let rows_of = |v: &Ex| {
                ex![
                    format!("({g}, {id}, "),
                    v,
                    ", ",
                    Ex::read(start),
                    ", ",
                    Ex::read(rows),
                    ", ",
                    row,
                    ")?"
                ]
            };
            if !self.used.contains(&r) {
                // Nothing reads it: the rows are only checked.
                let check = match value {
                    Val::Slice(v) => ex!["rt::graph::rows", rows_of(v), ";"],
                    Val::At(v) => ex!["rt::graph::rows_at", rows_of(v), ";"],
                };
                frame.code.line(check);
            } else {
                let name = frame.names.fresh(&self.base_name(r));
                let len = ex![
                    format!("rt::graph::rows_len({g}, {}, ", string(&r.to_string())),
                    Ex::read(rows),
                    ", ",
                    row,
                    ")?"
                ];
                match self.loc_code(frame, r, &len) {
                    Some(loc) => {
                        frame.code.bind(&name, loc);
                        let line = match value {
                            Val::Slice(v) => ex![
                                format!("rt::graph::copy_in({g}, {id}, arena, "),
                                Ex::read(&name),
                                ", ",
                                self.as_cells(dtype, ex!["rt::graph::rows", rows_of(v)]),
                                ")?;"
                            ],
                            Val::At(v) => ex![
                                format!("rt::graph::copy_within({g}, {id}, arena, "),
                                Ex::read(&name),
                                ", rt::graph::rows_at",
                                rows_of(v),
                                ")?;"
                            ],
                        };
                        frame.arena_used = true;
                        frame.code.line(line);
                        frame.locals.insert(r, Val::At(Ex::read(&name)));
                    }
                    None => {
                        // A graph output outside the arena.
                        let buf = self.extra(frame, node, k)?;
                        let v = self.slice_of(frame, node.id, value, dtype);
                        frame.code.line(ex![
                            format!("rt::graph::assign({buf}, rt::graph::rows"),
                            rows_of(&v),
                            ");"
                        ]);
                        frame.code.bind(&name, format!("&{buf}[..]"));
                        frame.locals.insert(r, Val::Slice(Ex::read(&name)));
                    }
                }
            }
            frame.rows.insert(r, Ex::read(rows));
        }
        frame.levels.push(level);
        Ok(())
    }

    /// `sum_chunks(v)`: per chunk `v` itself. Only graph outputs read it (the
    /// looping rules); inside a chunk loop such an output is zeroed at entry and
    /// every chunk's `v` added to it (`rt::graph::accumulate`, see
    /// `sum_kind`); outside any loop it is `v`, delivered once.
    pub(super) fn sum_chunks(
        &mut self,
        frame: &mut Frame,
        node: &Node,
    ) -> Result<(), GraphEmitError> {
        let input = node
            .inputs
            .first()
            .copied()
            .ok_or_else(|| self.err(node.id, "a sum_chunks without input"))?;
        let value = match self.local(frame, node.id, input)? {
            // Its input's bytes are the plan's only to its last read here (a graph
            // output is read at the end of the loop): a copy of its own.
            Val::At(loc) => {
                let buf = self.extra(frame, node, 0)?;
                let value = self.slice_of(frame, node.id, &Val::At(loc), self.dtype_of(input));
                frame
                    .code
                    .line(ex![format!("rt::graph::assign({buf}, "), value, ");"]);
                let name = frame.bind(&self.base_name(node.output(0)), format!("&{buf}[..]"));
                Val::Slice(Ex::read(&name))
            }
            v => v,
        };
        frame.locals.insert(node.output(0), value);
        Ok(())
    }

    /// For a `sum_chunks` value: `Some(true)` when it stands inside a chunk loop
    /// (after a chunk node at the top level: a sum over the chunks), `Some(false)`
    /// before any (computed once); `None` for any other value.
    pub(super) fn sum_kind(&self, r: Ref) -> Option<bool> {
        let node = self.graph.node(r.node)?;
        if !matches!(node.op, Op::SumChunks) {
            return None;
        }
        let at = self.h.top.iter().position(|e| e.node == r.node)?;
        Some(self.h.top[..at].iter().any(|e| self.is_chunk(e.node)))
    }

    /// The end of the innermost chunk loop: each graph output's chunk written at the
    /// innermost level's output row (`prev_batches + prev_outer_batches`), then
    /// every loop's end asked, innermost first.
    pub(super) fn deliver_chunks(
        &mut self,
        frame: &mut Frame,
        outputs: &[Output],
        out_args: &[(String, Ex)],
    ) -> Result<(), GraphEmitError> {
        let g = string(&self.name);
        let mut offset = None;
        for ((name, ty, src), (arg, _)) in outputs.iter().zip(out_args) {
            if self.written_to(src, arg) {
                continue;
            }
            let value = self.source(frame, self.h.input, src)?;
            let (g_name, summed) = (string(name), src.as_ref().map(|r| self.sum_kind(r)));
            if let Some(Some(in_loop)) = summed {
                // A sum over the chunks (zeroed at entry), or computed once.
                let f = if in_loop { "accumulate" } else { "deliver" };
                frame.code.line(ex![
                    format!("rt::graph::{f}({g}, {g_name}, {arg}, "),
                    value,
                    ")?;"
                ]);
                continue;
            }
            let rest = ty.shape.get(1..).ok_or_else(|| GraphEmitError::Graph {
                graph: self.name.clone(),
                message: format!("output `{name}` of a chunked graph has no axis 0"),
            })?;
            let row = sized(
                &self.name,
                self.h.input,
                self.sizes.len(rest, &format!("a row of output {name}")),
            )?;
            let at = match &offset {
                Some(at) => at,
                None => offset.insert(self.output_row(frame)),
            };
            frame.code.line(ex![
                format!("rt::graph::deliver_rows({g}, {}, {arg}, ", string(name)),
                Ex::read(at),
                ", ",
                row,
                ", ",
                value,
                ")?;"
            ]);
        }
        for (k, level) in frame.levels.clone().iter().enumerate().rev() {
            frame.code.open(format!(
                "if !rt::graph::loop_again({g}, {}, {ENDS}, &mut {COUNTS}[{k}])? {{",
                level.node
            ));
            frame.code.line("break;");
            frame.code.close("}");
            frame.code.close("}");
        }
        Ok(())
    }

    /// A local holding the row of the graph outputs the current chunk goes at (the
    /// innermost level's `prev_batches + prev_outer_batches`).
    pub(super) fn output_row(&self, frame: &mut Frame) -> String {
        let innermost = frame.levels.len().saturating_sub(1);
        frame.bind(
            "out_row",
            format!(
                "rt::graph::output_row({}, &{COUNTS}[{innermost}])?",
                string(&self.name)
            ),
        )
    }
}
