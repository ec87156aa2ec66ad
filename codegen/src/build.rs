//! What build scripts and generated files share: a build script's exit code and
//! output path, `cargo:rerun-if-changed`, writing a file only when it changed, a
//! program in another float type, and the request and doc of a gradient kernel.
//!
//! The build-time builder itself — programs, graphs and ONNX models into one Rust
//! file in `OUT_DIR` — is the crate `uop-build` (DESIGN.md §8, §21;
//! docs/decisions.md, "One build-time builder").

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::grad::{GradRole, GradSpec, Gradient};
use crate::uop::{DType, Program};

/// A build script's exit code for `result`: success, or `error: MESSAGE` (the
/// error as text, not debug output) on stderr and a failure, which fails the build
/// with that message (the builder's `run`).
pub fn exit_code<E: std::fmt::Display>(result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `$OUT_DIR/{file_name}`; `None` outside a build script.
pub fn out_dir_path(file_name: &str) -> Option<PathBuf> {
    std::env::var_os("OUT_DIR").map(|dir| Path::new(&dir).join(file_name))
}

/// Prints `cargo:rerun-if-changed` for each of `paths`.
pub fn rerun_if_changed(paths: &[PathBuf]) {
    for p in paths {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}

/// Writes `source` to `path`, leaving the file untouched when it already holds it
/// (so dependents are not rebuilt for nothing).
///
/// # Errors
///
/// The I/O error of writing.
pub fn write_if_changed(path: &Path, source: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == source) {
        return Ok(());
    }
    std::fs::write(path, source)
}

/// `program` with every float tensor of type `dtype`, or `None` unless `dtype` is
/// f32 or f64. Constants are kept as written (they are rounded when the kernel
/// runs), so an f32 and an f64 kernel from one program differ only in precision.
pub fn with_float_type(program: &Program, dtype: DType) -> Option<Program> {
    if !dtype.is_float() {
        return None;
    }
    let mut p = program.clone();
    p.dtype = dtype;
    for node in &mut p.nodes {
        if node.dtype.is_float() {
            node.dtype = dtype;
        }
    }
    Some(p)
}

/// The gradient request of a kernel's `with_gradient` (`uop-build`): with respect to every
/// float input, every float output seeded, nothing supplied.
pub fn full_gradient_spec(program: &Program) -> GradSpec {
    let float = |id: &&crate::uop::NodeId| program.nodes[id.0].dtype.is_float();
    GradSpec {
        seeds: program.outputs.iter().filter(float).copied().collect(),
        wrt: program.inputs.iter().filter(float).copied().collect(),
        supplied: Vec::new(),
    }
}

/// The doc paragraph of a gradient kernel: what each argument and output is, in
/// order, in terms of the forward program.
pub fn gradient_doc(forward: &Program, grad: &Gradient) -> String {
    let name = |p: &Program, id: crate::uop::NodeId| p.nodes[id.0].name.clone();
    let mut d = String::from(
        "# Gradient\n\nThis kernel is the gradient of the forward program shown at the end: for seeds `g_y` \
         (the gradient of a loss with respect to each forward output `y`), it returns \
         `g_x = sum over y of (dy/dx)^T g_y` for each forward input `x`.\n\nArguments, in order:\n\n",
    );
    for (input, id) in grad.inputs.iter().zip(&grad.program.inputs) {
        let arg = name(&grad.program, *id);
        let fwd = name(forward, input.forward);
        let what = match input.role {
            GradRole::Input => format!("the forward input `{fwd}`"),
            GradRole::Seed => {
                format!("the gradient of the loss with respect to the forward output `{fwd}`")
            }
            GradRole::Supplied => format!("the forward value `{fwd}`"),
        };
        let shape_only = if input.reads_data {
            ""
        } else {
            " (only its shape is used; any data will do)"
        };
        d.push_str(&format!("- `{arg}`: {what}{shape_only}\n"));
    }
    d.push_str("\nOutputs, in order:\n\n");
    for (out, wrt) in grad.program.outputs.iter().zip(&grad.spec.wrt) {
        d.push_str(&format!(
            "- `{}`: the gradient with respect to the forward input `{}`\n",
            name(&grad.program, *out),
            name(forward, *wrt)
        ));
    }
    d.push_str("\nThe forward program:\n\n```text\n");
    d.push_str(&crate::text::print_program(forward));
    d.push_str("```");
    d
}
