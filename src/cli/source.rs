//! What a command's file holds: a program (straight-line micro and macro ops, which
//! every backend runs), a graph with functions and control flow (`fn`, `while`,
//! `case`, `if`, `parallel`, `call`, `chunk`), or an ONNX model (a `.onnx` file,
//! imported as a graph: [`super::onnx`]).

use std::path::{Path, PathBuf};

use uop_codegen::text::{TextError, parse_program};
use uop_codegen::uop::{Node, NodeId, Program, Uop};
use uop_graph::Graph;
use uop_graph::text::{parse_graph, uses_graph_syntax};

use super::onnx::{self, Constants, OnnxModel};
use super::{CliError, registry};

/// A parsed `.uop` file, or an imported `.onnx` model.
pub(crate) enum Source {
    /// A program without control flow.
    Program(Program),
    /// A graph.
    Graph(Graph),
    /// An ONNX model imported as a graph, with the names its user speaks.
    Onnx(Box<OnnxModel>),
}

/// Reads a `.onnx` model (inputs needed at import bound from `given`, the `--input`
/// files by ONNX name), or a `.uop` file as [`load`] does.
pub(crate) fn load_with(path: &Path, given: &[(String, PathBuf)]) -> Result<Source, CliError> {
    if onnx::is_onnx(path) {
        return onnx::load(path, given, Constants::Input).map(|m| Source::Onnx(Box::new(m)));
    }
    load(path)
}

/// Reads and parses a `.uop` file: as a program when it is one, else as a graph; a
/// `.onnx` model is imported (an input it needs at import is an error saying how to
/// bind it: commands with `--input` use [`load_with`]).
/// When neither parses, the error is the graph parser's for a file using what only
/// graphs have ([`uses_graph_syntax`]), else the one of the parser that read
/// further (so a mistake in a plain program is reported as before). Errors name the
/// file and show the caret.
pub(crate) fn load(path: &Path) -> Result<Source, CliError> {
    if onnx::is_onnx(path) {
        return onnx::load(path, &[], Constants::None).map(|m| Source::Onnx(Box::new(m)));
    }
    let src = read_source(path)?;
    let named = |e: TextError| CliError(format!("{}: {e}", path.display()));
    let program_error = match parse_program(&src, &registry()) {
        Ok(p) => return Ok(Source::Program(p)),
        Err(e) => e,
    };
    match parse_graph(&src, uop_graph::default_registry()) {
        Ok(g) => Ok(Source::Graph(g)),
        Err(graph_error)
            if graph_error.offset() > program_error.offset() || uses_graph_syntax(&src) =>
        {
            Err(named(graph_error))
        }
        Err(_) => Err(named(program_error)),
    }
}

/// The longest `.uop` file read: far beyond any program written by hand or
/// generated, and a bound on what reading a device or FIFO that never ends takes.
pub(crate) const MAX_SOURCE: u64 = 64 << 20;

/// Reads a `.uop` file as text: at most [`MAX_SOURCE`] bytes; a leading UTF-8 byte
/// order mark is dropped (editors write one); a byte that is not UTF-8 is an error
/// giving its line and column.
pub(crate) fn read_source(path: &Path) -> Result<String, CliError> {
    use std::io::Read;
    let cannot = |e: std::io::Error| CliError(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_SOURCE + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_SOURCE {
        return Err(CliError(format!(
            "{}: the file is longer than {} MiB, the most a .uop file may have",
            path.display(),
            MAX_SOURCE >> 20
        )));
    }
    let text = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    match std::str::from_utf8(text) {
        Ok(s) => Ok(s.to_string()),
        Err(e) => {
            let at = e.valid_up_to();
            let before = &text[..at];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            let line_start = before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            // Valid UTF-8 up to `at`, so this counts characters.
            let column = String::from_utf8_lossy(&before[line_start..])
                .chars()
                .count()
                + 1;
            Err(CliError(format!(
                "{}:{line}:{column}: the file is not UTF-8 text (byte 0x{:02x} at offset {at})",
                path.display(),
                text[at]
            )))
        }
    }
}

/// Reads a file as a graph (a program is a graph of calls; its macro ops stay calls;
/// a `.onnx` model is imported).
pub(crate) fn load_graph(path: &Path) -> Result<Graph, CliError> {
    if onnx::is_onnx(path) {
        return onnx::load(path, &[], Constants::None).map(|m| m.imported.graph);
    }
    let src = read_source(path)?;
    parse_graph(&src, uop_graph::default_registry())
        .map_err(|e| CliError(format!("{}: {e}", path.display())))
}

/// Reads a file that must be a program (for the commands graphs do not have yet).
pub(crate) fn load_program_only(path: &Path, command: &str) -> Result<Program, CliError> {
    match load(path)? {
        Source::Program(p) => Ok(p),
        Source::Graph(_) | Source::Onnx(_) => Err(CliError(format!(
            "{}: `uop {command}` takes a program without control flow; this file is a graph \
             (`uop run` and `uop print` take graphs)",
            path.display()
        ))),
    }
}

/// The graph's inputs and `$params` as a program that declares them and computes
/// nothing: what reading `--input`, `--dim` and `--param` needs, shared with programs.
pub(crate) fn declarations(graph: &Graph) -> Program {
    let mut nodes = Vec::new();
    if let Some(node) = graph.input_node() {
        for (k, ty) in node.outputs.iter().enumerate() {
            nodes.push(Node {
                name: node
                    .name(k)
                    .map_or_else(|| format!("input{k}"), str::to_string),
                op: Uop::Input,
                shape: ty.shape.clone(),
                dtype: ty.dtype,
            });
        }
    }
    Program {
        dtype: graph.dtype,
        params: graph.params.clone(),
        inputs: (0..nodes.len()).map(NodeId).collect(),
        nodes,
        outputs: Vec::new(),
        assertions: graph.assertions.clone(),
    }
}

/// The name of each graph output ([`Graph::output_name`]).
pub(crate) fn output_names(graph: &Graph) -> Vec<String> {
    (0..graph.interface.outputs.len())
        .map(|k| graph.output_name(k))
        .collect()
}
