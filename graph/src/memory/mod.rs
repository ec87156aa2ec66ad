//! The memory plan (DESIGN.md §17, the `memory` pass; `docs/graph-memory.md`): every
//! intermediate value of a graph gets a [`Slot`] — an offset and a size — in one
//! arena, for concrete dims.
//!
//! 1. **Steps** ([`timeline`]): the definition hierarchy in the order the interpreter
//!    and the executor run it; a super node has a start and an end step around its
//!    sub-functions, which are nested regions.
//! 2. **Lifetimes and sharing** ([`lifetime`]): each arena value is live from the step
//!    it is written to its last read (a read inside a sub-function counts at the end
//!    of the super node holding it); values that share a slot form a group: a kernel
//!    writing over an input that dies there (in place), a `while`'s carried state, a
//!    sub-function result written straight into its super node's output.
//! 3. **Sizes** (`size`): from the dims, with checked arithmetic, rounded up to
//!    [`ALIGN`] bytes; a value inside a chunk loop (§20) holds one chunk's rows
//!    ([`crate::looping::looped_rows`]), and a Sink keeps what a later iteration
//!    reads alive to the end.
//! 4. **Placement** ([`uop_runtime::place`], one implementation shared with code
//!    emitted ahead of time): best fit and first fit over several orders, the
//!    smallest arena kept; the lower bound is the fullest step.
//!
//! What the executor must honour is in the plan: [`MemoryPlan::in_place`],
//! [`MemoryPlan::carried`] and [`MemoryPlan::results`].
//!
//! ```
//! use std::collections::HashMap;
//! use uop_graph::memory::plan_memory;
//! use uop_graph::pass::{prepare, PrepareOptions};
//! use uop_graph::{default_registry, text::parse_graph};
//!
//! let src = "input x: f32[N, N]\nh = matmul(x, x)\ny = matmul(h, h)\noutput y\n";
//! let (g, _) = prepare(parse_graph(src, default_registry())?, &PrepareOptions::default())?;
//! let plan = plan_memory(&g, &HashMap::from([("N".to_string(), 8)]))?;
//! // h is the one intermediate: 8 * 8 * 4 bytes at offset 0.
//! assert_eq!(plan.slots.len(), 1);
//! assert_eq!((plan.arena_bytes, plan.lower_bound, plan.intermediates_bytes), (256, 256, 256));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod concurrency;
mod lifetime;
mod print;
mod size;
mod timeline;
mod whole;

use std::collections::{BTreeMap, HashMap};

use thiserror::Error;
use uop_codegen::index::Bindings;

use crate::hierarchy::{HierarchyError, hierarchy};
use crate::ir::{Graph, NodeId, Ref, ValueType};
use crate::schedule::{Schedule, StreamOrder};

pub use print::print_memory;
pub use size::ALIGN;
use uop_runtime::place;
pub use uop_runtime::place::{Fit, Order, Strategy};
pub use whole::{SizeCheckError, SizeLimit, check_arena, check_sizes};

pub(crate) use lifetime::{Analysis, Mode};

use lifetime::analyze;
use size::SizeError;

/// Where one value lives in the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot {
    /// Offset from the arena's start: a multiple of [`ALIGN`].
    pub offset: usize,
    /// The value's bytes (not rounded).
    pub bytes: usize,
}

/// How one state value of a `while` is carried from one iteration to the next.
///
/// Before the loop the executor copies the initial value into the parameters' slot
/// (nothing to do when the initial value already lives there: it died at the loop and
/// its slot was taken over). The condition and the body read the state from the
/// parameters' slot. After the loop the final state is in the parameters' slot, which
/// is the `while` output's slot when the output is in the arena (a graph output is
/// copied out of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carried {
    /// One slot. The body's result is its parameter unchanged, or is computed by a
    /// Call or Kernel of the body after the last read of the parameter (or by an
    /// element-wise kernel reading the parameter as it dies): that node writes the
    /// result straight into the slot ([`MemoryPlan::slots`] gives it this slot).
    InPlace {
        /// The state's slot.
        slot: Slot,
    },
    /// Two slots used alternately: iteration `i` reads the state from `slots[i % 2]`
    /// and writes its results into `slots[(i + 1) % 2]`. A result computed by a Call or
    /// Kernel of the body is written there directly ([`MemoryPlan::slots`] lists it at
    /// `slots[1]` and the parameters at `slots[0]`, as for even iterations: odd
    /// iterations swap them); any other result (a parameter, a value from outside the
    /// body, a constant, a result returned twice) is copied there at the end of the
    /// body. When the loop ends after an odd number of iterations the final state is
    /// copied from `slots[1]` to `slots[0]`.
    Alternate {
        /// The parameters' slot, then the results' slot.
        slots: [Slot; 2],
    },
}

impl Carried {
    /// The slot the state is in at the start of the loop and after it.
    pub fn state(&self) -> Slot {
        match self {
            Carried::InPlace { slot } => *slot,
            Carried::Alternate { slots } => slots[0],
        }
    }
}

/// A value's live steps (inclusive): written at `start`, last read at `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lifetime {
    /// The step it is written.
    pub start: usize,
    /// The step of its last read.
    pub end: usize,
}

impl Lifetime {
    /// True when both are live at one step.
    pub fn overlaps(&self, other: &Lifetime) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

/// The memory plan of a graph for concrete dims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// The planned arena's bytes.
    pub arena_bytes: usize,
    /// The sum of every arena value's bytes, each in a buffer of its own (no reuse),
    /// each rounded up to [`ALIGN`].
    pub intermediates_bytes: usize,
    /// The most bytes live at one step (each buffer rounded up to [`ALIGN`]): no
    /// placement of these lifetimes needs less.
    pub lower_bound: usize,
    /// Every arena value: Call, Kernel, Chunk and super-node outputs and the
    /// parameters of `while` sub-functions, in every body, except the graph's outputs.
    /// Not here: the graph's inputs, Consts, the graph's outputs (returned as owned
    /// tensors), and the parameters of `if` / `case` / `call` / `parallel` bodies (the
    /// executor binds them to their arguments' buffers).
    pub slots: BTreeMap<Ref, Slot>,
    /// Kernel outputs written over an input: output → input. The kernel has one
    /// output and an element-wise program, the input has the output's type and is
    /// read for the last time by this kernel; the two have the same slot.
    pub in_place: BTreeMap<Ref, Ref>,
    /// Per `while` node, per state value: how it is carried.
    pub carried: BTreeMap<NodeId, Vec<Carried>>,
    /// Sub-function results of `if` / `case` / `call` written straight into the
    /// super node's output slot (no copy at the end of the body): result → output.
    pub results: BTreeMap<Ref, Ref>,
    /// Every arena value's live steps (see `docs/graph-memory.md` for the steps).
    pub lifetimes: BTreeMap<Ref, Lifetime>,
    /// The dims the plan is for.
    pub dims: BTreeMap<String, i64>,
    /// The placement rule that gave the smallest arena.
    pub strategy: Strategy,
}

/// Why a graph has no memory plan.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MemoryError {
    /// The graph has no valid definition hierarchy.
    #[error(transparent)]
    Hierarchy(#[from] HierarchyError),
    /// A value's size names a dim or `$param` that has no value.
    #[error("{value} ({ty}): the size `{dim}` has no value")]
    MissingDim {
        /// The value.
        value: Ref,
        /// Its type, as text.
        ty: String,
        /// The dim (`$name` for a param).
        dim: String,
    },
    /// A value's size cannot be computed (overflow, below 0).
    #[error("{value} ({ty}): {message}")]
    Size {
        /// The value.
        value: Ref,
        /// Its type, as text.
        ty: String,
        /// What is wrong.
        message: String,
    },
    /// The arena's size overflows.
    #[error("the arena does not fit in memory ({0})")]
    Overflow(String),
}

/// The memory plan of `graph` (normally a prepared graph) for the sizes in `dims`
/// (dim names and `$params`, the latter without `$`), for one stream running the
/// nodes in the definition hierarchy's order.
pub fn plan_memory(graph: &Graph, dims: &HashMap<String, i64>) -> Result<MemoryPlan, MemoryError> {
    plan(graph, dims, None, true)
}

/// [`plan_memory`] with no in-place pair: every kernel's outputs have bytes apart
/// from its inputs ([`MemoryPlan::in_place`] is empty, and a `while` body's result
/// shares the state's slot only when the state is dead before it is written). The
/// plan of code emitted ahead of time, where safe Rust cannot lend one buffer to a
/// kernel as input and output at once (`docs/graph-aot.md`).
pub fn plan_memory_apart(
    graph: &Graph,
    dims: &HashMap<String, i64>,
) -> Result<MemoryPlan, MemoryError> {
    plan(graph, dims, None, false)
}

/// The dims-independent half of [`plan_memory_apart`]: the arena values, their
/// groups with live steps, the `while` states' groups and the results written
/// into their super node's output. Code emitted ahead of time writes it as data
/// and places the groups at run time, with the sizes of the call (`emit`).
pub(crate) fn analysis_apart(graph: &Graph) -> Result<Analysis, HierarchyError> {
    let h = hierarchy(graph)?;
    Ok(analyze(graph, &h, None, false))
}

/// The memory plan of `graph` for `dims` when it runs as `schedule` says (streams
/// running at once): a buffer's bytes are reused only by a node the schedule orders
/// after every node that touched the old value (`docs/graph-memory.md`).
pub fn plan_memory_scheduled(
    graph: &Graph,
    dims: &HashMap<String, i64>,
    schedule: &Schedule,
) -> Result<MemoryPlan, MemoryError> {
    plan(graph, dims, Some(StreamOrder::new(schedule)), true)
}

fn plan(
    graph: &Graph,
    dims: &HashMap<String, i64>,
    order: Option<StreamOrder>,
    in_place: bool,
) -> Result<MemoryPlan, MemoryError> {
    let h = hierarchy(graph)?;
    let a = analyze(graph, &h, order, in_place);
    let env = Bindings {
        names: dims.clone(),
        params: dims.clone(),
        ..Bindings::default()
    };
    let overflow = |what: String| MemoryError::Overflow(what);
    let mut bytes: BTreeMap<Ref, usize> = BTreeMap::new();
    let mut intermediates = 0usize;
    // Inside a chunk loop a value holds one chunk's rows (§20).
    let looped = crate::looping::looped_rows(graph, &env);
    for (r, v) in &a.values {
        let b = match looped.get(r) {
            Some(&rows) => value_bytes(*r, &chunk_type(&v.ty, rows), &env)?,
            None => value_bytes(*r, &v.ty, &env)?,
        };
        let rounded = size::aligned(b).ok_or_else(|| overflow(format!("{r} has {b} bytes")))?;
        intermediates = intermediates
            .checked_add(rounded)
            .ok_or_else(|| overflow("the sum of the intermediates".into()))?;
        bytes.insert(*r, b);
    }
    let items = group_items(&a, &bytes, &env)?;
    let placement = place::place(&items).ok_or_else(|| overflow("an offset".into()))?;
    let lower_bound = place::lower_bound(&items);
    let slot_of_group = |g: usize, b: usize| Slot {
        offset: placement.offsets[g],
        bytes: b,
    };
    let slots = a
        .values
        .keys()
        .map(|r| (*r, slot_of_group(a.group_of[r], bytes[r])))
        .collect();
    let carried = carried_slots(graph, &a, &placement.offsets, &env)?;
    Ok(MemoryPlan {
        arena_bytes: placement.arena,
        intermediates_bytes: intermediates,
        lower_bound,
        slots,
        in_place: a.in_place.clone(),
        carried,
        results: a.results.clone(),
        lifetimes: a
            .values
            .iter()
            .map(|(r, v)| {
                (
                    *r,
                    Lifetime {
                        start: v.start,
                        end: v.end,
                    },
                )
            })
            .collect(),
        dims: dims.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        strategy: placement.strategy,
    })
}

/// `ty` with `rows` rows: a value inside a chunk loop.
fn chunk_type(ty: &ValueType, rows: i64) -> ValueType {
    let mut t = ty.clone();
    if let Some(d) = t.shape.first_mut() {
        *d = uop_codegen::index::Expr::Int(rows);
    }
    t
}

/// The bytes of value `r` of type `ty`; the error names the value.
fn value_bytes(r: Ref, ty: &ValueType, env: &Bindings) -> Result<usize, MemoryError> {
    size::bytes(ty, env).map_err(|e| match e {
        SizeError::Missing(dim) => MemoryError::MissingDim {
            value: r,
            ty: ty.to_string(),
            dim,
        },
        SizeError::Other(message) => MemoryError::Size {
            value: r,
            ty: ty.to_string(),
            message,
        },
    })
}

/// One placement item per group: its live steps and its largest member (or
/// reserved state) rounded up.
fn group_items(
    a: &Analysis,
    bytes: &BTreeMap<Ref, usize>,
    env: &Bindings,
) -> Result<Vec<place::Item>, MemoryError> {
    a.groups
        .iter()
        .map(|g| {
            let mut size = g.members.iter().map(|r| bytes[r]).max().unwrap_or(0);
            if let Some((r, ty)) = &g.reserve {
                size = size.max(value_bytes(*r, ty, env)?);
            }
            let size = size::aligned(size)
                .ok_or_else(|| MemoryError::Overflow(format!("a buffer of {size} bytes")))?;
            Ok(place::Item {
                start: g.start,
                end: g.end,
                size,
            })
        })
        .collect()
}

/// The slots of every `while`'s state.
fn carried_slots(
    graph: &Graph,
    a: &Analysis,
    offsets: &[usize],
    env: &Bindings,
) -> Result<BTreeMap<NodeId, Vec<Carried>>, MemoryError> {
    let mut out = BTreeMap::new();
    for (w, states) in &a.carried {
        let node = graph.node(*w);
        let mut list = Vec::new();
        for (k, &(mode, g0, g1)) in states.iter().enumerate() {
            let ty = node.and_then(|n| n.outputs.get(k));
            let b = match ty {
                Some(ty) => value_bytes(Ref::new(*w, k), ty, env)?,
                None => 0,
            };
            let slot = |g: usize| Slot {
                offset: offsets[g],
                bytes: b,
            };
            list.push(match mode {
                Mode::InPlace => Carried::InPlace { slot: slot(g0) },
                Mode::Alternate => Carried::Alternate {
                    slots: [slot(g0), slot(g1)],
                },
            });
        }
        out.insert(*w, list);
    }
    Ok(out)
}

/// The check the `memory` pass makes: `graph` has a hierarchy, and every arena
/// value's size is an expression over the graph's input dims and `$params` only, so
/// [`plan_memory`] gives a plan once those are known. The error names the value.
pub fn check_plannable(graph: &Graph) -> Result<(), String> {
    let h = hierarchy(graph).map_err(|e| e.to_string())?;
    let a = analyze(graph, &h, None, true);
    let known: Vec<String> = crate::infer::graph_dims(graph)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    for (r, v) in &a.values {
        for d in &v.ty.shape {
            let mut bad: Option<String> = None;
            d.visit(&mut |leaf| match leaf {
                uop_codegen::index::Expr::Name(n) if !known.contains(n) => {
                    bad.get_or_insert_with(|| format!("the dim `{n}`, which no graph input has"));
                }
                uop_codegen::index::Expr::Param(p) if !graph.params.contains(p) => {
                    bad.get_or_insert_with(|| format!("`${p}`, which the graph does not declare"));
                }
                uop_codegen::index::Expr::Index(_) | uop_codegen::index::Expr::Dim(..) => {
                    bad.get_or_insert_with(|| format!("`{leaf}`, which is not a size"));
                }
                _ => {}
            });
            if let Some(what) = bad {
                return Err(format!(
                    "{r} ({}): its size names {what}, so no memory plan can be made for it",
                    v.ty
                ));
            }
        }
    }
    Ok(())
}
