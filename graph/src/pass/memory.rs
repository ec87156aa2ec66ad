//! `memory`: checks that the graph has a memory plan (DESIGN.md §17,
//! `docs/graph-memory.md`). Sizes are symbolic until the inputs' shapes bind the dims,
//! so the pass does not place anything: it runs the dims-independent half of the
//! planner (steps, lifetimes, in-place and carried-state decisions) and checks that
//! every arena value's size is an expression over the graph's input dims and
//! `$params`. [`crate::memory::plan_memory`] then makes the plan for concrete dims
//! (the executor, once per set of input shapes; `uop print --stage memory --dim ...`).
//! The pass never changes the graph (no rewrites).

use super::{Budget, PassFailure, PrepareOptions};
use crate::ir::Graph;
use crate::memory::check_plannable;

/// The pass (module docs).
pub fn memory(graph: &mut Graph, _: &mut Budget, _: &PrepareOptions) -> Result<(), PassFailure> {
    check_plannable(graph).map_err(PassFailure::Graph)
}
