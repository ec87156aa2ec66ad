//! [`GraphRunError`], why a graph could not run: the error of the graph interpreter
//! ([`crate::interp`]) and of the chunk-loop driver it shares with the executor
//! ([`crate::looping::drive`]), kept in a module of its own so that neither of the
//! two imports the other for it.

use thiserror::Error;

use crate::hierarchy::HierarchyError;
use crate::ir::NodeId;
use crate::looping::LoopError;

/// Why a graph could not run.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GraphRunError {
    /// The graph has no valid definition hierarchy.
    #[error(transparent)]
    Hierarchy(#[from] HierarchyError),
    /// Wrong number of inputs.
    #[error("the graph takes {expected} inputs, {found} were given")]
    InputCount {
        /// Declared inputs.
        expected: usize,
        /// Given inputs.
        found: usize,
    },
    /// A graph input does not fit its declaration (dtype, rank, a size, a shared
    /// dimension, a size assertion over its dims).
    #[error("input `{input}`: {message}")]
    Input {
        /// The input's name.
        input: String,
        /// What is wrong.
        message: String,
    },
    /// A `$param` the graph declares has no value.
    #[error("parameter `${0}` has no value (pass --param {0}=N)")]
    MissingParam(String),
    /// A graph-looping rule is broken (`docs/graph-looping.md`).
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// A size of the graph overflows, or a value does not fit the memory limit
    /// ([`crate::memory::check_sizes`], before anything runs).
    #[error("{0}")]
    Sizes(String),
    /// A node failed.
    #[error("{node}: {message}")]
    Node {
        /// The node.
        node: NodeId,
        /// What went wrong.
        message: String,
    },
}
