//! `uop bench --graph FILE`: a whole graph (or a program, as a graph of one kernel
//! node, [`uop_exec::program_graph`], or an ONNX model, imported) on the graph
//! executor, on seeded random inputs. The first call is timed from reading the file
//! to the end of the first run (parse or import, prepare, compile, run; making the
//! random inputs is not counted), then after
//! `warmup` untimed calls the median of `reps` later calls: what a framework's
//! "later calls" of a jitted function are compared with.

use std::path::Path;
use std::time::Instant;

use uop_exec::{self as exec, ExecOptions};

use super::run::InputArgs;
use super::source::{self, Source};
use super::{CliError, int_assignments};
use crate::bench::{self, Reps};

/// The seed of the random inputs (input k gets `SEED + k`, as `uop run --random`).
pub(crate) const SEED: u64 = 1;

/// What `uop bench --graph` times.
pub(crate) struct GraphBench<'a> {
    /// The `.uop` file.
    pub file: &'a Path,
    /// `--dim NAME=INT` texts.
    pub dims: &'a [String],
    /// `--param NAME=INT` texts.
    pub params: &'a [String],
    /// The executor's kernels.
    pub backend: exec::KernelBackend,
    /// Untimed calls after the first.
    pub warmup: usize,
    /// Timed later calls (at least 1).
    pub reps: usize,
}

/// The times of one `uop bench --graph` run, in milliseconds.
pub(crate) struct GraphTiming {
    /// The first call: parse, prepare, compile, run.
    pub first_ms: f64,
    /// The median of the later calls.
    pub ms: f64,
    /// Kernels of the prepared graph.
    pub kernels: usize,
    /// The `--dim` sizes.
    pub dims: Vec<(String, i64)>,
    /// The `--param` values.
    pub params: Vec<(String, i64)>,
}

/// Milliseconds since `t`.
fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Times `spec` (see the module's doc).
pub(crate) fn time(spec: &GraphBench) -> Result<GraphTiming, CliError> {
    let error = |e: exec::GraphError| CliError(format!("{}: {e}", spec.file.display()));
    let start = Instant::now();
    let (graph, model) = match source::load(spec.file)? {
        Source::Program(p) => (exec::program_graph(&p), None),
        Source::Graph(g) => (g, None),
        Source::Onnx(m) => (m.imported.graph.clone(), Some(m)),
    };
    let parse_ms = ms_since(start);
    let declared = match &model {
        Some(m) => m.declarations(),
        None => source::declarations(&graph),
    };
    let source = InputArgs::random(spec.dims, spec.params, SEED);
    let params = source.params(&declared)?;
    let mut inputs = source.gather(&declared)?;
    if let Some(m) = &model {
        inputs = m.graph_inputs(&inputs)?;
    }
    let start = Instant::now();
    let options = ExecOptions {
        backend: spec.backend,
        ..ExecOptions::default()
    };
    let exe = exec::compile_with(&graph, &options).map_err(error)?;
    exe.run_with_params(&inputs, &params).map_err(error)?;
    let first_ms = parse_ms + ms_since(start);
    let reps = Reps {
        warmup: spec.warmup,
        reps: spec.reps,
        // Every timed call is wanted: the caller chose `reps` for a whole graph.
        budget: std::time::Duration::MAX,
    };
    let ms = bench::median_ms(reps, || exe.run_with_params(&inputs, &params).map(drop))
        .map_err(error)?;
    Ok(GraphTiming {
        first_ms,
        ms,
        kernels: exe.kernel_count(),
        dims: int_assignments("--dim", spec.dims)?,
        params: int_assignments("--param", spec.params)?,
    })
}

/// `backend`'s name on the command line.
fn backend_name(backend: exec::KernelBackend) -> &'static str {
    match backend {
        exec::KernelBackend::Cranelift => "cranelift",
        exec::KernelBackend::Loops => "loops",
    }
}

/// `text` as a JSON string literal.
fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `NAME=INT` assignments as a JSON object of names to numbers.
fn json_assignments(values: &[(String, i64)]) -> String {
    let fields: Vec<String> = values
        .iter()
        .map(|(name, value)| format!("{}: {value}", json_string(name)))
        .collect();
    format!("{{{}}}", fields.join(", "))
}

impl GraphTiming {
    /// One JSON object on one line.
    pub(crate) fn json(&self, spec: &GraphBench) -> String {
        format!(
            "{{\"file\": {}, \"backend\": {}, \"ms\": {}, \"first_ms\": {}, \"reps\": {}, \
             \"warmup\": {}, \"kernels\": {}, \"dims\": {}, \"params\": {}, \"seed\": {SEED}}}",
            json_string(&spec.file.display().to_string()),
            json_string(backend_name(spec.backend)),
            self.ms,
            self.first_ms,
            spec.reps,
            spec.warmup,
            self.kernels,
            json_assignments(&self.dims),
            json_assignments(&self.params),
        )
    }

    /// A line for people.
    pub(crate) fn describe(&self, spec: &GraphBench) -> String {
        format!(
            "{} on the executor ({}, {} kernel{}): first call {:.3} ms (parse, prepare, \
             compile, run); later calls {:.3} ms (median of {}, after {} warm-up)",
            spec.file.display(),
            backend_name(spec.backend),
            self.kernels,
            if self.kernels == 1 { "" } else { "s" },
            self.first_ms,
            self.ms,
            spec.reps,
            spec.warmup,
        )
    }
}
