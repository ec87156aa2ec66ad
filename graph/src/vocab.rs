//! The graph layer's vocabulary: the small types and print helpers that the
//! analyses and passes above it share, kept below all of them so that no two of
//! those modules have to import each other to speak of the same thing (see the
//! module layering in the crate documentation).
//!
//! - [`Violation`]: one broken invariant, as [`crate::verify()`], [`crate::scope`]
//!   and the graph-looping rules ([`crate::looping::partition`]) report it;
//! - [`kernel_summary`]: the one-line summary of a fused kernel, shared by the
//!   kernel report, the hierarchy print and the graph printer.

use std::fmt;

use crate::ir::{Kernel, NodeId, ValueType};

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The nodes involved, the one the message is about first.
    pub nodes: Vec<NodeId>,
    /// The whole message, naming the nodes as `%id`.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// `%4 mul, %5 add, %6 relu`.
pub(crate) fn member_list(members: &[(NodeId, String)]) -> String {
    members
        .iter()
        .map(|(id, op)| format!("{id} {op}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `kernel k3 = {%4 mul, %5 add, %6 relu}`: a kernel and its members.
pub fn kernel_summary(kernel: &Kernel) -> String {
    let members: Vec<(NodeId, String)> = kernel
        .members
        .iter()
        .enumerate()
        .map(|(k, id)| (*id, kernel.ops.get(k).cloned().unwrap_or_default()))
        .collect();
    format!("kernel {} = {{{}}}", kernel.name, member_list(&members))
}

/// `f32[N], i32[]`: a list of value types, as messages show them.
pub fn type_list(types: &[ValueType]) -> String {
    types
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
