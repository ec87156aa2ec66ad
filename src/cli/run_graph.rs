//! `uop run` on a graph: the graph executor (`--backend cranelift`, the default for
//! graphs, or `loops`) or the graph interpreter (`--backend interp`, the oracle).

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_graph::Graph;
use uop_graph::interp::name_run_error;

use super::{Backend, CliError};
use crate::graph::{self, ExecOptions};

/// Runs `graph` on `inputs` with the engine `backend` names (the executor on
/// Cranelift when none is given), on at most `streams` streams (the executor's
/// default when `None`).
pub(crate) fn execute(
    graph: &Graph,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    backend: Option<Backend>,
    streams: Option<usize>,
) -> Result<Vec<Tensor>, CliError> {
    // Every size of the whole graph, and what is surely held against the memory
    // limit, before any backend allocates anything.
    let env =
        uop_graph::bind_graph_inputs(graph, inputs, params).map_err(|e| CliError(e.to_string()))?;
    uop_graph::memory::check_sizes(graph, &env, uop_graph::memory::SizeLimit::process())
        .map_err(|e| CliError(e.to_string()))?;
    let backend = match backend.unwrap_or(Backend::Cranelift) {
        Backend::Interp if streams.is_some() => {
            return Err(CliError(
                "--streams: the graph interpreter (--backend interp) runs every node in order"
                    .into(),
            ));
        }
        Backend::Interp => {
            return uop_graph::run(graph, inputs, params)
                .map_err(|e| CliError(name_run_error(graph, e).to_string()));
        }
        Backend::Loops => graph::Backend::Loops,
        Backend::Cranelift => graph::Backend::Cranelift,
    };
    let options = ExecOptions {
        backend,
        streams: streams.map_or(graph::Streams::Auto, graph::Streams::Max),
        ..ExecOptions::default()
    };
    let exe = graph::compile_with(graph, &options).map_err(|e| CliError(e.to_string()))?;
    exe.run_with_params(inputs, params).map_err(|e| match e {
        graph::GraphError::Run(e) => CliError(name_run_error(graph, e).to_string()),
        e => CliError(e.to_string()),
    })
}

/// `--streams N`: a stream count, at least 1.
pub(crate) fn stream_count(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("a graph needs at least one stream".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("expected a number of streams, at least 1".into()),
    }
}
