//! `uop emit` for graphs: a file with functions and control flow (`fn`, `while`,
//! `case`, `if`, `parallel`, `call`), or any file with `--graph`, becomes one Rust
//! module — its kernels and one function running the whole graph
//! (`uop_graph::emit`, docs/graph-aot.md). Only `--target rust`; `--grad` emits the
//! gradient graph (`uop_graph::grad`) instead, as `NAME_grad` by default.

use std::path::Path;

use uop_graph::emit::emit_graph;
use uop_graph::grad::{GraphGradSpec, TapeMode, gradient};
use uop_graph::text::parse_graph;

use super::emit::rust_options;
use super::source::{Source, load, read_source};
use super::{CliError, fail};

/// What `uop emit` asks of a graph.
pub(super) struct GraphRequest<'a> {
    /// The file.
    pub path: &'a Path,
    /// `--graph`: emit a plain program as a graph too.
    pub as_graph: bool,
    /// `--target rust`.
    pub rust: bool,
    /// The function's name.
    pub name: &'a str,
    /// `--standalone`.
    pub standalone: bool,
    /// `--full-checks`.
    pub full_checks: bool,
    /// `--grad` (with `--tape`): emit the gradient graph instead.
    pub grad: Option<TapeMode>,
    /// The gradient function's name.
    pub grad_name: String,
}

/// The Rust module of the graph in `request.path`, or `None` when the file is a
/// plain program and `--graph` was not given (the kernel path handles it).
pub(super) fn emit_graph_file(request: &GraphRequest) -> Result<Option<Vec<u8>>, CliError> {
    let path = request.path;
    let (graph, text) = match load(path)? {
        Source::Graph(g) => (g, read_source(path)?),
        // A model's graph is documented by its printed text (what `uop import` writes).
        Source::Onnx(m) => {
            let text = uop_graph::text::print_graph(&m.imported.graph);
            (m.imported.graph, text)
        }
        Source::Program(_) if !request.as_graph => return Ok(None),
        Source::Program(_) => {
            let src = read_source(path)?;
            let g = parse_graph(&src, uop_graph::default_registry())
                .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
            (g, src)
        }
    };
    if !request.rust {
        return fail(format!(
            "{}: a graph is emitted as Rust only (--target rust)",
            path.display()
        ));
    }
    let grad;
    let (graph, name, source) = match request.grad {
        None => (&graph, request.name, Some(text)),
        Some(tape) => {
            // The gradient graph (`uop_graph::grad`, as `uop grad` builds it): every
            // float output seeded, every float input wanted (a chunked graph's
            // weights' gradients are sums over its chunks).
            let spec = GraphGradSpec {
                tape,
                ..GraphGradSpec::all(&graph)
            };
            grad = gradient(&graph, &spec)
                .map_err(|e| CliError(format!("{}: {e}", path.display())))?;
            (&grad.graph, request.grad_name.as_str(), None)
        }
    };
    let options = rust_options(request.full_checks, request.standalone);
    emit_graph(name, graph, source.as_deref(), &options)
        .map(|s| Some(s.into_bytes()))
        .map_err(|e| CliError(format!("{}: {e}", path.display())))
}
