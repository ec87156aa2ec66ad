//! [`PassFailure`]: why a prepare pass failed, typed by what failed.

use thiserror::Error;

use crate::hierarchy::HierarchyError;
use crate::kernels::KernelFormError;
use crate::looping::LoopError;
use crate::rewrite::RewriteError;

/// Why a graph pass failed; the message names the node. [`super::prepare`] reports it
/// as [`super::PrepareError::Pass`] with the pass's name.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PassFailure {
    /// The graph has no valid definition hierarchy.
    #[error("no definition hierarchy: {0}")]
    Hierarchy(#[from] HierarchyError),
    /// A rewrite of the graph failed.
    #[error("{context}: {error}")]
    Rewrite {
        /// What the pass was doing, naming the node (`%5: merging into %3`).
        context: String,
        /// The failed rewrite.
        error: RewriteError,
    },
    /// Kernel formation failed.
    #[error(transparent)]
    Kernels(#[from] KernelFormError),
    /// A graph-looping rule is broken.
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// Kernel formation did more rewrites than the budget allows.
    #[error("formed {formed} kernels with a budget of {budget:?}")]
    Budget {
        /// Kernels formed.
        formed: usize,
        /// The rewrites the budget had left.
        budget: Option<usize>,
    },
    /// The graph is not in the form the pass needs (a reference to a missing node,
    /// a value the memory plan cannot place).
    #[error("{0}")]
    Graph(String),
}

impl PassFailure {
    /// A failed rewrite, with what the pass was doing.
    pub fn rewrite(context: impl Into<String>, error: RewriteError) -> Self {
        PassFailure::Rewrite {
            context: context.into(),
            error,
        }
    }
}
