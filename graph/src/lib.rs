//! `uop-graph`: the graph layer of uop (DESIGN.md §13–§22).
//!
//! A [`Graph`] is a flat list of nodes in execution order (calls of micro and macro
//! ops, constants, and super nodes — `while`, `case`, `if`, `parallel`, `call` —
//! whose sub-functions are ordinary nodes of the same list), built from Rust with a
//! [`GraphBuilder`] or parsed from `.uop` text ([`text::parse_graph`], printed back by
//! [`text::print_graph`]); [`random`] generates graphs for property tests;
//! [`kernels::form_kernels`] groups a graph's calls into fused kernels;
//! [`memory::plan_memory`] places every intermediate in one arena.
//!
//! # Modules, by layer
//!
//! Each module imports only modules of lower layers (`use crate::` drawn over the
//! sources; `python3 graph/tools/module_layers.py` redraws it and fails on a cycle):
//!
//! 0. [`ir`] — nodes, ops, the graph; `looping::rows`;
//! 1. [`vocab`] ([`Violation`], the kernel summary, type lists), [`rewrite`] (the
//!    edits passes make), `looping::{stack, variants}`;
//! 2. [`scan`] (the `scan` node's types and slices), [`scope`] (locality);
//! 3. [`hierarchy`] (where each node lives; its run order by partition is its
//!    child), [`infer`] (output types);
//! 4. [`builder`] ([`GraphBuilder`]), [`kernels`] (kernel formation), [`schedule`]
//!    (streams), [`looping::partition`] (§20 partitions and rules), the interpreter's
//!    `scan`;
//! 5. [`text`] (parse and print), [`verify`] (every invariant), [`memory`] (the arena
//!    plan), [`run_error`], `looping::print`;
//! 6. [`pass`] (prepare, the passes in order), [`looping::drive`] (the chunk loop),
//!    [`random`] (property-test graphs);
//! 7. [`interp`] (the oracle), [`emit`] (the AOT emitter);
//! 8. [`grad`] (gradients).
//!
//! ```
//! use uop_graph::GraphBuilder;
//! use uop_codegen::uop::DType;
//!
//! let mut g = GraphBuilder::new(DType::F32);
//! let x = g.input("x", DType::F32, &["N"])?;
//! let c = g.input("c", DType::F32, &[])?;
//! // relu(x) when c != 0, else x
//! let y = g.if_then_else(
//!     c,
//!     &[x],
//!     |g, p| Ok(vec![g.op("relu", &[p[0]])?.into()]),
//!     |_, p| Ok(vec![p[0].into()]),
//! )?;
//! g.output(y[0]);
//! let graph = g.finish();
//! assert_eq!(graph.nodes().last().map(|n| n.op.kind()), Some("if"));
//! # Ok::<(), uop_graph::BuildError>(())
//! ```

use std::sync::{Arc, OnceLock};

use uop_codegen::text::Registry;

pub mod builder;
pub mod emit;
pub mod grad;
pub mod hierarchy;
pub mod infer;
pub mod interp;
pub mod ir;
pub mod kernels;
pub mod looping;
pub mod memory;
pub mod pass;
pub mod random;
pub mod rewrite;
pub mod run_error;
pub mod scan;
pub mod schedule;
pub mod scope;
pub mod text;
pub mod verify;
pub mod vocab;

pub use builder::{Arg, Body, BuildError, GraphBuilder, Item};
pub use hierarchy::{
    Entry, Hierarchy, HierarchyError, SubFunction, SubId, hierarchy, print_hierarchy,
};
pub use interp::{
    GraphRunError, Run, RunOptions, Trace, bind_graph_inputs, run, run_with, run_with_hooks,
    too_many_iterations,
};
pub use ir::{
    Call, CallValue, Flags, Graph, Interface, Kernel, Kind, ListItem, Node, NodeId, Op, Ref,
    ScanAxis, Source, ValueType,
};
pub use kernels::{KernelFormError, KernelOptions, KernelReport, form_kernels, print_kernels};
pub use memory::{MemoryError, MemoryPlan, Slot, plan_memory, print_memory};
pub use rewrite::{
    ConstCache, ConsumerFlags, KindFilter, OutputMap, OutputTarget, Reader, RewriteError,
    Unrewired, append_nodes, change_multi_output_refs, change_output_refs, const_of, insert_nodes,
    move_nodes, node_must_be, prepend_const, replace_node_with, replace_nodes, single_consumer_all,
    unique_consumer,
};
pub use scope::{ScopeError, Scopes, scopes};
pub use verify::{Checks, VerifyError, Violation, verify};

/// The macro-op library's registry, shared by every graph that does not bring its own.
pub fn default_registry() -> Arc<Registry> {
    static REGISTRY: OnceLock<Arc<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(|| Arc::new(uop_ops::registry()))
        .clone()
}
