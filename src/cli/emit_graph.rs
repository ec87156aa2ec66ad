//! `uop emit` for graphs: a file with functions and control flow (`fn`, `while`,
//! `case`, `if`, `parallel`, `call`), or any file with `--graph`, becomes one Rust
//! module — its kernels and one function running the whole graph
//! (`uop_graph::emit`, docs/graph-aot.md). Only `--target rust`; `--grad` waits for
//! graph gradients.

use std::path::Path;

use uop_codegen::backend::rust::{Checks, RustOptions};
use uop_graph::emit::emit_graph;
use uop_graph::text::parse_graph;

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
    /// `--grad`.
    pub grad: bool,
}

/// The Rust module of the graph in `request.path`, or `None` when the file is a
/// plain program and `--graph` was not given (the kernel path handles it).
pub(super) fn emit_graph_file(request: &GraphRequest) -> Result<Option<Vec<u8>>, CliError> {
    let path = request.path;
    let graph = match load(path)? {
        Source::Graph(g) => g,
        Source::Program(_) if !request.as_graph => return Ok(None),
        Source::Program(_) => parse_graph(&read_source(path)?, uop_graph::default_registry())
            .map_err(|e| CliError(format!("{}: {e}", path.display())))?,
    };
    if !request.rust {
        return fail(format!(
            "{}: a graph is emitted as Rust only (--target rust)",
            path.display()
        ));
    }
    if request.grad {
        return fail(format!(
            "{}: --grad of a graph is not available yet: graph gradients are being built \
             (DESIGN.md §19)",
            path.display()
        ));
    }
    let checks = if request.full_checks {
        Checks::Full
    } else {
        Checks::Proven
    };
    let options = RustOptions::default()
        .checks(checks)
        .schedule(checks == Checks::Proven)
        .standalone(request.standalone);
    let text = read_source(path)?;
    emit_graph(request.name, &graph, Some(&text), &options)
        .map(|s| Some(s.into_bytes()))
        .map_err(|e| CliError(format!("{}: {e}", path.display())))
}
