//! `uop grad --check`: the gradient program against central finite differences
//! ([`uop_codegen::grad::fd::compare_gradient`]), in f64 on the reference
//! interpreter, at the inputs `uop grad` would use. One line per checked input with
//! its worst element; the command fails (exit code 1) when one is past the tolerance.
//! A graph's gradient graph is checked the same way on the graph interpreter
//! ([`check_graph`]).

use std::collections::HashMap;
use std::path::PathBuf;

use uop_codegen::grad::fd::{ElementComparison, FdOptions, InputComparison, compare_gradient};
use uop_codegen::tensor::{Tensor, unflatten};
use uop_codegen::uop::{NodeId, Program};

use uop_graph::Graph;
use uop_graph::grad::fd as graph_fd;
use uop_graph::grad::{GraphGradSpec, TapeMode};

use super::run::InputArgs;
use super::{CliError, fail, source};

/// `--rel`, `--abs` and `--step`, each defaulting to [`FdOptions::default`]'s.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Settings {
    pub rel: Option<f64>,
    pub abs: Option<f64>,
    pub step: Option<f64>,
}

impl Settings {
    fn options(&self) -> Result<FdOptions, CliError> {
        let defaults = FdOptions::default();
        let positive = |flag: &str, v: Option<f64>, default: f64, zero_ok: bool| match v {
            Some(x) if !x.is_finite() || x < 0.0 || (x == 0.0 && !zero_ok) => fail(format!(
                "{flag} {x}: must be a finite number greater than {}0",
                if zero_ok { "or equal to " } else { "" }
            )),
            Some(x) => Ok(x),
            None => Ok(default),
        };
        Ok(FdOptions {
            rel: positive("--rel", self.rel, defaults.rel, true)?,
            abs: positive("--abs", self.abs, defaults.abs, true)?,
            step: positive("--step", self.step, defaults.step, false)?,
            ..defaults
        })
    }
}

/// Runs the check for the inputs of `wanted` (their files must not be given: the
/// check prints) and prints the table.
pub(crate) fn check(
    program: &Program,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    wanted: &[(NodeId, Option<PathBuf>)],
    settings: &Settings,
) -> Result<(), CliError> {
    if let Some((id, Some(_))) = wanted.iter().find(|(_, file)| file.is_some()) {
        return fail(format!(
            "--grad {}=FILE: --check prints its results and writes no gradient; name the input alone",
            program.node(*id).name
        ));
    }
    let options = settings.options()?;
    let wrt: Vec<NodeId> = wanted.iter().map(|(id, _)| *id).collect();
    let results = compare_gradient(program, &wrt, inputs, params, &options)
        .map_err(|e| CliError(e.to_string()))?;
    println!(
        "finite differences (f64, step {}) against the gradient program; an element passes \
         when |analytic - numeric| <= {} + {} * max(|analytic|, |numeric|)",
        options.step, options.abs, options.rel
    );
    let shapes: Vec<&[usize]> = wrt
        .iter()
        .map(|w| {
            let slot = program.inputs.iter().position(|i| i == w).unwrap_or(0);
            inputs[slot].shape.as_slice()
        })
        .collect();
    print!("{}", table(&results, &shapes));
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| !r.passed())
        .map(|r| r.input.as_str())
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    fail(format!(
        "the gradient with respect to {} differs from finite differences past the tolerance",
        failed
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// `uop grad GRAPH --check`: [`uop_graph::grad::fd::check_gradient`] once per input,
/// so that each gets its own row: the elements compared and skipped (a perturbation
/// that takes another branch or trip count has no derivative to compare), the largest
/// error, or the first element past the tolerance.
pub(crate) fn check_graph(
    graph: &Graph,
    source_args: &InputArgs,
    grads: &[String],
    settings: &Settings,
    tape: TapeMode,
) -> Result<(), CliError> {
    let declared = source::declarations(graph);
    let params = source_args.params(&declared)?;
    let inputs = source_args.gather(&declared)?;
    check_graph_on(graph, &declared, &inputs, &params, grads, settings, tape)
}

/// [`check_graph`] on `inputs` (the graph's, as `declared` names them: an ONNX
/// model's names).
pub(crate) fn check_graph_on(
    graph: &Graph,
    declared: &Program,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    grads: &[String],
    settings: &Settings,
    tape: TapeMode,
) -> Result<(), CliError> {
    let wanted = super::grad::wanted_gradients(declared, grads)?;
    if let Some((id, Some(_))) = wanted.iter().find(|(_, file)| file.is_some()) {
        return fail(format!(
            "--grad {}=FILE: --check prints its results and writes no gradient; name the input alone",
            declared.node(*id).name
        ));
    }
    let program_options = settings.options()?;
    let options = FdOptions {
        sample: None,
        ..program_options
    };
    println!(
        "finite differences (f64, step {}, the graph interpreter) against the gradient graph; \
         an element passes when |analytic - numeric| <= {} + {} * max(|analytic|, |numeric|)",
        options.step, options.abs, options.rel
    );
    let mut rows = vec![[
        "input".to_string(),
        "elements".to_string(),
        "skipped".to_string(),
        "worst error".to_string(),
        String::new(),
    ]];
    let mut failures = Vec::new();
    for (id, _) in &wanted {
        let name = declared.node(*id).name.clone();
        let spec = GraphGradSpec {
            seeds: uop_graph::grad::float_outputs(graph),
            wrt: vec![id.0],
            supplied: Vec::new(),
            tape,
        };
        match graph_fd::check_gradient(graph, &spec, inputs, params, &options) {
            Ok(report) => rows.push([
                name,
                report.checked.to_string(),
                report.skipped.to_string(),
                format!("{:.3e}", report.max_error),
                "ok".into(),
            ]),
            Err(e) => {
                rows.push([
                    name.clone(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "FAILED".into(),
                ]);
                failures.push(format!("`{name}`: {e}"));
            }
        }
    }
    print!("{}", columns(&rows));
    if failures.is_empty() {
        return Ok(());
    }
    fail(format!(
        "the gradient graph differs from finite differences past the tolerance: {}",
        failures.join("; ")
    ))
}

/// Rows as left-aligned columns two spaces apart.
fn columns<const N: usize>(rows: &[[String; N]]) -> String {
    let widths: Vec<usize> = (0..N)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The table: one row per input, its worst element (by error over allowance).
fn table(results: &[InputComparison], shapes: &[&[usize]]) -> String {
    let mut rows = vec![[
        "input".to_string(),
        "elements".to_string(),
        "worst error".to_string(),
        "at".to_string(),
        "analytic".to_string(),
        "numeric".to_string(),
        "allowed".to_string(),
        "".to_string(),
    ]];
    for (r, shape) in results.iter().zip(shapes) {
        let row = match &r.worst {
            None => [
                r.input.clone(),
                "0".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "ok".into(),
            ],
            Some(w) => element_row(r, w, shape),
        };
        rows.push(row);
    }
    columns(&rows)
}

fn element_row(r: &InputComparison, w: &ElementComparison, shape: &[usize]) -> [String; 8] {
    [
        r.input.clone(),
        r.checked.to_string(),
        format!("{:.3e}", w.error),
        format!("{:?}", unflatten(w.index, shape)),
        format!("{:.6e}", w.analytic),
        format!("{:.6e}", w.numeric),
        format!("{:.3e}", w.allowed),
        if w.passed() { "ok" } else { "FAILED" }.into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_the_worst_element_of_each_input_by_its_index() {
        let results = vec![
            InputComparison {
                input: "x".into(),
                checked: 6,
                worst: Some(ElementComparison {
                    index: 5,
                    analytic: 1.0,
                    numeric: 1.5,
                    error: 0.5,
                    allowed: 1e-5,
                }),
            },
            InputComparison {
                input: "w".into(),
                checked: 0,
                worst: None,
            },
        ];
        let text = table(&results, &[&[2, 3], &[0]]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("input  elements  worst error"),
            "{text}"
        );
        assert!(
            lines[1].contains("[1, 2]") && lines[1].ends_with("FAILED"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("w      0") && lines[2].ends_with("ok"),
            "{text}"
        );
    }

    #[test]
    fn tolerances_must_be_finite_and_not_negative() {
        let bad = Settings {
            rel: Some(-1.0),
            ..Settings::default()
        };
        assert!(bad.options().is_err());
        let zero_step = Settings {
            step: Some(0.0),
            ..Settings::default()
        };
        assert!(zero_step.options().is_err());
        let ok = Settings {
            abs: Some(0.0),
            ..Settings::default()
        };
        assert_eq!(ok.options().expect("valid").abs, 0.0);
    }
}
