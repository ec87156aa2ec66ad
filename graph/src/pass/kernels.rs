//! `kernels`: the calls of each scope grouped into fused `Kernel` nodes (DESIGN.md §17),
//! by [`crate::kernels::form_kernels`]; the rules and the reference graphs' counts are
//! in `docs/graph-kernels.md`. Each kernel formed is one rewrite.

use super::{Budget, PassFailure, PrepareOptions};
use crate::ir::Graph;
use crate::kernels::{KernelOptions, form_kernels, joins};

/// The pass (module docs). `options.disabled` naming [`joins::NAME`] turns the
/// split-joins decision off.
pub fn kernels(
    graph: &mut Graph,
    budget: &mut Budget,
    options: &PrepareOptions,
) -> Result<(), PassFailure> {
    let options = KernelOptions {
        split_joins: !options.disabled.iter().any(|d| d == joins::NAME),
        // The loop counts are for reports (`uop print --stage kernels`), not for prepare.
        count_loops: false,
        rewrite_limit: budget.remaining(),
        ..KernelOptions::default()
    };
    let (fused, report) = form_kernels(graph, &options)?;
    for _ in 0..report.rewrites {
        if !budget.spend() {
            return Err(PassFailure::Budget {
                formed: report.rewrites,
                budget: budget.remaining(),
            });
        }
    }
    *graph = fused;
    Ok(())
}
