//! The arena of generated graph code (`docs/graph-aot.md`, *Memory*): every value
//! the memory plan places (`memory::plan_memory_apart`) is a location in one
//! `Vec<T>` of the workspace, `rt::graph::Loc { offset, len }`, rather than a buffer
//! of its own.
//!
//! The plan's analysis is written into the module as data: a function
//! `NAME_arena(placement, sz)` lists every group of values sharing bytes with the
//! steps it is live in and the sizes of its members (fields of `NAME_sizes`), and
//! places them with `rt::place` through the workspace's `rt::place::Kept` (again
//! only when the sizes change), so the offsets are those `plan_memory_apart`
//! computes for the same dims. A value's location is its group's offset
//! (`off[g]`) and its own length; a `while` whose state alternates between two
//! slots swaps their two offsets after every iteration.

use std::collections::HashMap;

use uop_codegen::index::{Expr, IndexOp};

use super::GraphEmitError;
use super::body::{Emitter, Frame, sized};
use super::code::{Code, Ex, ex, string};
use crate::ir::{Graph, NodeId, Ref, Source};
use crate::memory::{Analysis, Mode, analysis_apart};
use uop_codegen::uop::DType;

/// How generated code reaches a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Val {
    /// A slice expression: a graph input, a constant, a buffer outside the arena
    /// (a graph output), a literal.
    Slice(Ex),
    /// A local (or expression) holding the value's `rt::graph::Loc` in the arena.
    At(Ex),
}

impl Val {
    /// The expression, whichever kind.
    pub(super) fn ex(&self) -> &Ex {
        match self {
            Val::Slice(e) | Val::At(e) => e,
        }
    }
}

/// Where a node's result is written besides a kernel output.
#[derive(Clone, Debug)]
pub(super) enum Dst {
    /// A location in the arena (a local).
    At(Ex),
    /// A `&mut` slice outside the arena (a local).
    Slice(Ex),
}

/// The plan's analysis, as the emitter reads it.
pub(super) struct Arena {
    analysis: Analysis,
    /// The rows of each value inside a chunk loop, as the plan sizes it
    /// (`looping::looped_rows`): `min(batch, max(C_1, 1), ..)`.
    looped: HashMap<Ref, Expr>,
}

impl Arena {
    /// The analysis of the prepared `graph`.
    pub(super) fn new(graph: &Graph) -> Result<Arena, String> {
        let analysis = analysis_apart(graph).map_err(|e| e.to_string())?;
        Ok(Arena {
            analysis,
            looped: looped_rows(graph),
        })
    }

    /// The group of an arena value (`None`: not in the arena).
    pub(super) fn group(&self, r: Ref) -> Option<usize> {
        self.analysis.group_of.get(&r).copied()
    }

    /// How state `k` of `while` node `w` is carried: the mode, the parameters'
    /// group and the results' group (the same for one slot).
    pub(super) fn carried(&self, w: NodeId, k: usize) -> Option<(Mode, usize, usize)> {
        self.analysis.carried.get(&w)?.get(k).copied()
    }

    /// True when the sub-function result `r` is written straight into the super
    /// node's output `out` (nothing to copy).
    pub(super) fn joined(&self, r: Ref, out: Ref) -> bool {
        self.analysis.results.get(&r) == Some(&out)
    }

    /// The number of groups.
    pub(super) fn groups(&self) -> usize {
        self.analysis.groups.len()
    }
}

/// The symbolic rows of every looped value, as `looping::looped_rows` computes them
/// for concrete dims.
fn looped_rows(graph: &Graph) -> HashMap<Ref, Expr> {
    let mut out = HashMap::new();
    let (p, errors) = crate::looping::analyze(graph);
    let Some(batch) = p.batch.clone() else {
        return out;
    };
    if !errors.is_empty() {
        return out;
    }
    let mut rows = batch;
    let mut per_partition = vec![rows.clone()];
    for c in &p.chunks {
        let Some(crate::ir::Op::Chunk { size, .. }) = graph.node(*c).map(|n| &n.op) else {
            return HashMap::new();
        };
        let size = Expr::Bin(IndexOp::Max, Box::new(size.clone()), Box::new(Expr::Int(1)));
        rows = Expr::Bin(IndexOp::Min, Box::new(rows), Box::new(size));
        per_partition.push(rows.clone());
    }
    for n in graph.nodes() {
        let part = p.partition(n.id);
        for k in 0..n.outputs.len() {
            if part > 0 && !p.rowless.contains(&n.output(k)) {
                out.insert(n.output(k), per_partition[part].clone());
            }
        }
    }
    out
}

impl Emitter<'_> {
    /// `fn NAME_arena(placement, sz)`: the plan's groups as placement items (each
    /// with its steps and its members' sizes), placed for the call's sizes.
    pub(super) fn arena_function(&mut self, sizes_type: &str) -> Result<Code, GraphEmitError> {
        let g = string(&self.name);
        let elem_bytes = self.graph.dtype.size();
        let groups = self.arena.analysis.groups.clone();
        let values = self.arena.analysis.values.clone();
        let mut items = Vec::new();
        for (k, group) in groups.iter().enumerate() {
            let mut lens = Vec::new();
            let mut names = Vec::new();
            for r in &group.members {
                let v = &values[r];
                if v.ty.dtype != self.graph.dtype
                    && (v.ty.dtype, self.graph.dtype) != (DType::I32, DType::F32)
                {
                    // An f32 arena holds i32 values in its cells (same size); an f64
                    // one would need two to a cell.
                    return Err(self.err(
                        r.node,
                        format!(
                            "{r} is {} in a graph of {}: ahead of time, the arena of a graph of {} holds no {} values",
                            v.ty.dtype, self.graph.dtype, self.graph.dtype, v.ty.dtype
                        ),
                    ));
                }
                let mut shape = v.ty.shape.clone();
                if let (Some(rows), Some(d)) = (self.arena.looped.get(r), shape.first_mut()) {
                    *d = rows.clone();
                }
                lens.push(sized(
                    &self.name,
                    r.node,
                    self.sizes.len(&shape, &r.to_string()),
                )?);
                names.push(r.to_string());
            }
            if let Some((r, ty)) = &group.reserve {
                lens.push(sized(
                    &self.name,
                    r.node,
                    self.sizes.len(&ty.shape, &r.to_string()),
                )?);
                names.push(format!("the state of {}", r.node));
            }
            // The group is as large as its largest member: each size once.
            let mut seen = std::collections::HashSet::new();
            lens.retain(|l| seen.insert(l.clone()));
            items.push(ex![
                format!("rt::graph::item({g}, {}, {}, &[", group.start, group.end),
                Ex::join(lens, ", "),
                format!("], {elem_bytes})?, // {k}: {}", names.join(", ")),
            ]);
        }
        let mut c = Code::default();
        c.doc(&format!(
            "The arena of graph `{}` for the sizes `sz`: every group of values sharing\n\
             bytes in the memory plan (`plan_memory_apart`), live over its steps and as\n\
             large as its largest member, placed by `placement` (again only when the\n\
             sizes change). Every group's offset and the arena's length, in elements.",
            self.name
        ));
        let n = items.len();
        // The sizes are a parameter nothing may read (no group, or sizes that are
        // all literals).
        c.open(ex![
            format!(
                "fn {}_arena(\n    placement: &mut rt::place::Kept,\n    ",
                self.name
            ),
            Ex::bind("sz"),
            format!(": &{sizes_type},\n) -> Result<([usize; {n}], usize), KernelError> {{"),
        ]);
        if n == 0 {
            c.line("let items: [rt::place::Item; 0] = [];");
        } else {
            c.open("let items = [");
            for i in items {
                c.line(i);
            }
            c.close("];");
        }
        c.line(format!(
            "rt::graph::placed({g}, placement, &items, {elem_bytes})"
        ));
        c.close("}");
        Ok(c)
    }

    /// The location of arena value `r` (its group's offset) of `len` elements.
    pub(super) fn loc_code(&self, frame: &mut Frame, r: Ref, len: &Ex) -> Option<Ex> {
        let g = self.arena.group(r)?;
        Some(self.group_loc(frame, g, len))
    }

    /// A location of `len` elements at group `g`'s offset.
    pub(super) fn group_loc(&self, frame: &mut Frame, g: usize, len: &Ex) -> Ex {
        frame.off_used = true;
        ex![format!("rt::graph::Loc::new(off[{g}], "), len, ")"]
    }

    /// `v`, a value of `dtype`, as a slice expression (an arena value read with
    /// `rt::graph::at`, its cells read as i32 values for an i32 value).
    pub(super) fn slice_of(&self, frame: &mut Frame, node: NodeId, v: &Val, dtype: DType) -> Ex {
        match v {
            Val::Slice(e) => e.clone(),
            Val::At(l) => {
                frame.arena_used = true;
                let at = ex![
                    format!(
                        "rt::graph::at({}, {}, arena, ",
                        string(&self.name),
                        string(&node.to_string())
                    ),
                    l,
                    ")?"
                ];
                self.cells_as(dtype, at)
            }
        }
    }

    /// The type of value `r`.
    pub(super) fn dtype_of(&self, r: Ref) -> DType {
        self.graph.type_of(r).map_or(self.graph.dtype, |t| t.dtype)
    }

    /// The type of an interface result.
    pub(super) fn source_dtype(&self, s: &Source) -> DType {
        match s {
            Source::Ref(r) => self.dtype_of(*r),
            Source::Scalar(_) => self.graph.dtype,
        }
    }

    /// True when a value of `dtype` lives in the arena's cells as another type (an
    /// i32 value in an f32 arena).
    fn foreign(&self, dtype: DType) -> bool {
        dtype != self.graph.dtype
    }

    /// Arena cells (`&[T]` of the arena's type) as a value of `dtype`.
    pub(super) fn cells_as(&self, dtype: DType, cells: Ex) -> Ex {
        if self.foreign(dtype) {
            ex!["rt::graph::ints(", cells, ")"]
        } else {
            cells
        }
    }

    /// Arena cells to write (`&mut [T]`) as a value of `dtype`.
    pub(super) fn cells_as_mut(&self, dtype: DType, cells: Ex) -> Ex {
        if self.foreign(dtype) {
            ex!["rt::graph::ints_mut(", cells, ")"]
        } else {
            cells
        }
    }

    /// A slice of a value of `dtype` as arena cells, to copy into the arena.
    pub(super) fn as_cells(&self, dtype: DType, slice: Ex) -> Ex {
        if self.foreign(dtype) {
            ex!["rt::graph::cells(", slice, ")"]
        } else {
            slice
        }
    }

    /// The slice expression of `r` in `frame`.
    pub(super) fn slice(
        &self,
        frame: &mut Frame,
        reader: NodeId,
        r: Ref,
    ) -> Result<Ex, GraphEmitError> {
        let v = self.local(frame, reader, r)?;
        Ok(self.slice_of(frame, reader, &v, self.dtype_of(r)))
    }

    /// The value of an interface result.
    pub(super) fn source_val(
        &self,
        frame: &Frame,
        owner: NodeId,
        s: &Source,
    ) -> Result<Val, GraphEmitError> {
        match s {
            Source::Ref(r) => self.local(frame, owner, *r),
            Source::Scalar(v) => Ok(Val::Slice(Ex::from(format!(
                "&[{}][..]",
                super::code::literal(self.graph.dtype, *v)
            )))),
        }
    }

    /// Copies `src`, a value of `dtype`, to `dst` (checked: lengths and ranges).
    pub(super) fn copy_to(
        &self,
        frame: &mut Frame,
        node: NodeId,
        dst: &Dst,
        src: &Val,
        dtype: DType,
    ) {
        let (g, id) = (string(&self.name), string(&node.to_string()));
        let line = match (dst, src) {
            (Dst::At(d), Val::Slice(s)) => {
                let s = self.as_cells(dtype, s.clone());
                ex![
                    format!("rt::graph::copy_in({g}, {id}, arena, "),
                    d,
                    ", ",
                    s,
                    ")?;"
                ]
            }
            (Dst::At(d), Val::At(s)) => {
                ex![
                    format!("rt::graph::copy_within({g}, {id}, arena, "),
                    d,
                    ", ",
                    s,
                    ")?;"
                ]
            }
            (Dst::Slice(d), _) => {
                let s = self.slice_of(frame, node, src, dtype);
                ex![format!("rt::graph::deliver({g}, {id}, "), d, ", ", s, ")?;"]
            }
        };
        if matches!(dst, Dst::At(_)) {
            frame.arena_used = true;
        }
        frame.code.line(line);
    }
}
