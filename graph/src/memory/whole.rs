//! The sizes of a whole graph for concrete dims and `$params`, checked before it
//! runs: every value of every level (the bodies of `while`, `case`, `if`,
//! `parallel`, `call` and chunk loops included, and the values a kernel would fuse
//! away), every `parallel` count, in checked 64-bit arithmetic; and the values that
//! are surely held in memory (what a super node gives, the graph's outputs) against
//! a memory limit. An error names the value as the user wrote it and its size.
//!
//! A value a kernel may fuse away (`reindex(x, [N, N, N])` under a reduction) is
//! only checked for overflow, not against the limit: it may never be held. With
//! [`SizeLimit::every_value`] every value is held to the limit too, for a caller that
//! holds every value (the graph interpreter's fuzzing).

use std::fmt;

use uop_codegen::index::Bindings;
use uop_runtime::human_bytes;

use crate::ir::{Graph, Node, Op, Ref, Source};

use super::size::{SizeError, bytes, missing};

/// What [`check_sizes`] holds values to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeLimit {
    /// The most bytes one value may have.
    pub bytes: u64,
    /// Hold every value to `bytes`, not only those surely held in memory.
    pub every_value: bool,
}

impl SizeLimit {
    /// The process-wide memory limit (`--max-memory`, else the machine's available
    /// memory: [`uop_runtime::memory_limit`]), for the values surely held.
    pub fn process() -> Self {
        SizeLimit {
            bytes: uop_runtime::memory_limit(),
            every_value: false,
        }
    }
}

/// A size of the graph that overflows, is negative, or does not fit the limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeCheckError {
    /// The message, naming the value.
    pub message: String,
}

impl fmt::Display for SizeCheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SizeCheckError {}

/// `value` of the message: the user's name and the node, or the op and the node.
fn describe(node: &Node, k: usize) -> String {
    let what = match &node.op {
        Op::Call(c) => format!("`{}`", c.op),
        other => format!("`{}`", other.kind()),
    };
    match node.name(k) {
        Some(name) => {
            let shown = name.rsplit('.').next().unwrap_or(name);
            format!("value `{shown}` (the {what} {})", node.output(k))
        }
        None => format!("the {what} {}", node.output(k)),
    }
}

/// Checks the sizes of `graph` for `env` (its dims and `$params`; a size naming
/// something `env` does not bind, such as a `parallel` index, is skipped).
///
/// # Errors
///
/// [`SizeCheckError`] for the first value (in node order) whose size overflows or
/// is negative, a `parallel` count that is, or a value over the limit.
pub fn check_sizes(graph: &Graph, env: &Bindings, limit: SizeLimit) -> Result<(), SizeCheckError> {
    let held: std::collections::HashSet<Ref> = graph
        .interface
        .outputs
        .iter()
        .filter_map(Source::as_ref)
        .collect();
    for node in graph.nodes() {
        if let Op::Parallel { count, .. } = &node.op
            && missing(count, env).is_none()
        {
            match count.eval(env) {
                Ok(n) if n < 0 => {
                    return Err(SizeCheckError {
                        message: format!(
                            "the `parallel` {}: its count `{count}` is {n}, below 0",
                            node.id
                        ),
                    });
                }
                Ok(_) => {}
                Err(e) => {
                    return Err(SizeCheckError {
                        message: format!("the `parallel` {}: its count `{count}`: {e}", node.id),
                    });
                }
            }
        }
        for (k, ty) in node.outputs.iter().enumerate() {
            let b = match bytes(ty, env) {
                Ok(b) => b as u64,
                Err(SizeError::Missing(_)) => continue,
                Err(SizeError::Other(e)) => {
                    return Err(SizeCheckError {
                        message: format!("{} of type {ty}: {e}", describe(node, k)),
                    });
                }
            };
            let surely_held = node.op.is_super() || held.contains(&node.output(k));
            if (limit.every_value || surely_held) && b > limit.bytes {
                return Err(SizeCheckError {
                    message: format!(
                        "{} of type {ty} needs {}, more than the memory limit of {} (set \
                         it with --max-memory)",
                        describe(node, k),
                        human_bytes(b),
                        human_bytes(limit.bytes)
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Checks that the arena of `plan` (every intermediate of a run at its offset)
/// fits `limit`, before it is allocated: a graph whose values each fit may still
/// need more than the limit at once.
///
/// # Errors
///
/// [`SizeCheckError`] naming both sizes.
pub fn check_arena(plan: &super::MemoryPlan, limit: SizeLimit) -> Result<(), SizeCheckError> {
    let arena = plan.arena_bytes as u64;
    if arena <= limit.bytes {
        return Ok(());
    }
    Err(SizeCheckError {
        message: format!(
            "the run's intermediates need {} at once (its memory plan's arena), more than \
             the memory limit of {} (set it with --max-memory)",
            human_bytes(arena),
            human_bytes(limit.bytes)
        ),
    })
}
