//! `uop import MODEL.onnx -o MODEL.uop`: an ONNX model as graph text, which every
//! command takes like any `.uop` graph (`uop run` gives the same results on the same
//! inputs).
//!
//! The text starts with `#` comment lines saying where it came from, the ONNX names
//! that were renamed (`input.1` is `input_1` in the text: the `.uop` file is run with
//! the uop names), the inputs bound at import (from the `--input` files, no longer
//! inputs), and what an ONNX runtime does at the boundary that the text does not:
//! `bool` inputs are 0 / 1 of the float type, negative indices are not wrapped.

use std::fmt::Write;
use std::path::PathBuf;

use clap::Args;
use uop_graph::text::print_graph;
use uop_onnx::ElemType;

use super::onnx::{self, Constants, OnnxModel};
use super::output::OutputFiles;
use super::{CliError, fail, path_assignments};

/// Arguments of `uop import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The ONNX model (`.onnx`).
    model: PathBuf,
    /// Write the graph text to FILE (default: print it).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// The data of an input the model needs when it is imported (a Reshape's shape,
    /// a Slice's starts, Pad's pads...), as NAME=FILE.npy by its ONNX name: bound as
    /// a constant of the graph, and no longer an input.
    #[arg(long = "input", value_name = "NAME=FILE")]
    inputs: Vec<String>,
}

/// Runs `uop import`.
pub fn import(args: &ImportArgs) -> Result<(), CliError> {
    if !onnx::is_onnx(&args.model) {
        return fail(format!(
            "{}: `uop import` takes an ONNX model (a `.onnx` file)",
            args.model.display()
        ));
    }
    let given = path_assignments("--input", &args.inputs)?;
    let model = onnx::load(&args.model, &given, Constants::Input)?;
    for (name, _) in &given {
        if model.bound.contains(name) {
            continue;
        }
        match model.imported.inputs.iter().find(|p| p.onnx == *name) {
            Some(p) => eprintln!(
                "warning: --input {name}: the model does not need `{name}` at import; it stays                  an input (`{}` in the text)",
                p.uop
            ),
            None => return fail(format!("--input {name}: the model has no input `{name}`")),
        }
    }
    let text = format!(
        "{}{}",
        header(&args.model.display().to_string(), &model, &given),
        print_graph(&model.imported.graph)
    );
    for warning in boundary_notes(&model) {
        eprintln!("warning: {warning}");
    }
    match &args.output {
        Some(path) => {
            let mut writer = OutputFiles::default();
            writer.add("-o", path, text.into_bytes());
            writer.commit()
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// The comment lines the text starts with (see the module's doc).
fn header(path: &str, model: &OnnxModel, given: &[(String, PathBuf)]) -> String {
    let mut s = format!(
        "# imported from {path} (ONNX opset {}) by `uop import`\n",
        model.imported.opset
    );
    let renamed = model.imported.names.renamed();
    if !renamed.is_empty() {
        s.push_str("# ONNX names renamed in this text:");
        for (onnx, uop) in renamed {
            let _ = write!(s, " {onnx:?} -> {uop};");
        }
        s.pop();
        s.push('\n');
    }
    for name in &model.bound {
        let file = given
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f.display().to_string())
            .unwrap_or_default();
        let _ = writeln!(s, "# input {name:?} bound at import to the data of {file}");
    }
    for note in boundary_notes(model) {
        let _ = writeln!(s, "# {note}");
    }
    s
}

/// What `uop run MODEL.onnx` does at the boundary that the text cannot: one note
/// per input concerned.
fn boundary_notes(model: &OnnxModel) -> Vec<String> {
    let mut notes = Vec::new();
    let types = model
        .imported
        .graph
        .input_node()
        .map(|n| n.outputs.as_slice())
        .unwrap_or_default();
    for (k, p) in model.imported.inputs.iter().enumerate() {
        // An integer input no index reads is held as data in the float type.
        if let Some(t) = types
            .get(k)
            .filter(|t| p.elem.is_int() && t.dtype.is_float())
        {
            notes.push(format!(
                "input `{}` is an ONNX {} used as data: give it as {} (whole numbers)",
                p.uop,
                p.elem.name(),
                t.dtype
            ));
        }
        if p.elem == ElemType::Bool {
            notes.push(format!(
                "input `{}` is an ONNX bool: give it as 0 / 1 of the float type",
                p.uop
            ));
        }
        if let Some(n) = p.wrap {
            notes.push(format!(
                "input `{}` holds ONNX indices into an axis of {n}: negative ones are not \
                 wrapped here, give them as 0..{n}",
                p.uop
            ));
        }
    }
    notes
}
