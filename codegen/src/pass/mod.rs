//! TEMPORARY stand-in for the optimizer passes (DESIGN.md §6), with the agreed API
//! and an empty pipeline, so the differential oracle and the CLI compile before the
//! real passes land. The real `pass` module replaces this file wholesale.

use std::collections::HashMap;

use thiserror::Error;

use crate::index::Bindings;
use crate::loops::{LoopProgram, TensorKind};

/// One named program-to-program transformation of the loop IR.
#[derive(Clone, Copy, Debug)]
pub struct Pass {
    /// The name used by `--disable-pass` and in traces.
    pub name: &'static str,
    /// One line: what the pass guarantees.
    pub doc: &'static str,
    /// The transformation; it preserves the program's meaning.
    pub run: fn(&LoopProgram) -> LoopProgram,
}

/// The passes of the optimizer, in the order [`optimize`] runs them (empty in this stand-in).
pub fn pipeline() -> &'static [Pass] {
    &[]
}

/// Which passes to skip.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassOptions {
    /// Names of passes not to run.
    pub disabled: Vec<String>,
}

/// The optimizer could not run as asked.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PassError {
    /// A disabled pass name is not in the pipeline.
    #[error("unknown pass `{name}` (valid passes: {valid})")]
    UnknownPass {
        /// The name given.
        name: String,
        /// The pipeline's pass names, comma-separated.
        valid: String,
    },
}

fn check(opts: &PassOptions) -> Result<(), PassError> {
    for name in &opts.disabled {
        if !pipeline().iter().any(|p| p.name == name) {
            let valid: Vec<&str> = pipeline().iter().map(|p| p.name).collect();
            return Err(PassError::UnknownPass {
                name: name.clone(),
                valid: if valid.is_empty() {
                    "none".into()
                } else {
                    valid.join(", ")
                },
            });
        }
    }
    Ok(())
}

/// Runs every enabled pass of the pipeline in order.
pub fn optimize(p: &LoopProgram, opts: &PassOptions) -> Result<LoopProgram, PassError> {
    Ok(optimize_traced(p, opts)?
        .pop()
        .map_or_else(|| p.clone(), |(_, last)| last))
}

/// Like [`optimize`], returning the program after each enabled pass, by pass name.
pub fn optimize_traced(
    p: &LoopProgram,
    opts: &PassOptions,
) -> Result<Vec<(&'static str, LoopProgram)>, PassError> {
    check(opts)?;
    let mut current = p.clone();
    let mut trace = Vec::new();
    for pass in pipeline() {
        if opts.disabled.iter().any(|d| d == pass.name) {
            continue;
        }
        current = (pass.run)(&current);
        trace.push((pass.name, current.clone()));
    }
    Ok(trace)
}

/// Size figures of a loop program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Number of blocks.
    pub blocks: usize,
    /// Number of loops over all blocks.
    pub loops: usize,
    /// Number of temporaries the kernel allocates.
    pub temporaries: usize,
    /// Their total size in bytes, when `dims` and `params` give every size.
    pub temp_bytes: Option<u64>,
}

/// Counts blocks, loops and temporaries of `p`, and the temporaries' bytes for the
/// given named dims and params.
pub fn stats(p: &LoopProgram, dims: &HashMap<String, i64>, params: &HashMap<String, i64>) -> Stats {
    let bindings = Bindings {
        names: dims.clone(),
        params: params.clone(),
        ..Bindings::default()
    };
    let temps: Vec<_> = p
        .tensors
        .iter()
        .filter(|t| t.kind == TensorKind::Temp)
        .collect();
    let temp_bytes = temps.iter().try_fold(0u64, |acc, t| {
        let elements = t.shape.iter().try_fold(1u64, |n, d| {
            let v = u64::try_from(d.eval(&bindings).ok()?).ok()?;
            n.checked_mul(v)
        })?;
        acc.checked_add(elements.checked_mul(t.dtype.size() as u64)?)
    });
    Stats {
        blocks: p.blocks.len(),
        loops: p.blocks.iter().map(|b| b.loops.len()).sum(),
        temporaries: temps.len(),
        temp_bytes,
    }
}
