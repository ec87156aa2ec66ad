//! Golden data: every macro op against numpy. Each case under `tests/golden/cases`
//! (written by the generators in `tests/golden/`, see `golden.py`) is a `.uop`
//! program calling the op by name, its inputs and numpy's outputs; the reference
//! interpreter must reproduce them within the case's tolerance (default rtol 1e-4,
//! atol 1e-5; a case that needs looser says so and why in `tolerance.txt`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use uop::codegen::interp;
use uop::codegen::tensor::Tensor;
use uop::codegen::text::parse_program;
use uop::npy::read_npy;

const DEFAULT_RTOL: f64 = 1e-4;
const DEFAULT_ATOL: f64 = 1e-5;

fn case_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cases");
    let mut out = Vec::new();
    for group in std::fs::read_dir(&root).expect("tests/golden/cases exists") {
        let group = group.expect("entry").path();
        if !group.is_dir() {
            continue;
        }
        for case in std::fs::read_dir(&group).expect("group dir") {
            let case = case.expect("entry").path();
            if case.join("program.uop").exists() {
                out.push(case);
            }
        }
    }
    out.sort();
    out
}

fn key_values(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .flat_map(|l| l.split_whitespace())
        .filter_map(|kv| kv.split_once('='))
}

/// Runs one case; `Err` describes every mismatch.
fn check_case(dir: &Path) -> Result<(), String> {
    let src = std::fs::read_to_string(dir.join("program.uop")).map_err(|e| e.to_string())?;
    let program = parse_program(&src, &uop::ops::registry()).map_err(|e| format!("{e}"))?;
    let params: HashMap<String, i64> = std::fs::read_to_string(dir.join("params.txt"))
        .map(|t| {
            key_values(&t)
                .map(|(k, v)| (k.to_string(), v.parse().expect("integer param")))
                .collect()
        })
        .unwrap_or_default();
    let (mut rtol, mut atol) = (DEFAULT_RTOL, DEFAULT_ATOL);
    if let Ok(t) = std::fs::read_to_string(dir.join("tolerance.txt")) {
        for (k, v) in key_values(&t) {
            let v: f64 = v.parse().expect("tolerance is a number");
            match k {
                "rtol" => rtol = v,
                "atol" => atol = v,
                other => return Err(format!("unknown tolerance key {other}")),
            }
        }
    }
    let inputs: Vec<Tensor> = program
        .inputs
        .iter()
        .map(|i| {
            let name = &program.node(*i).name;
            read_npy(&dir.join("inputs").join(format!("{name}.npy"))).map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let outputs = interp::run(&program, &inputs, &params).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    for (o, got) in program.outputs.iter().zip(&outputs) {
        let name = &program.node(*o).name;
        let want = read_npy(&dir.join("expected").join(format!("{name}.npy")))
            .map_err(|e| e.to_string())?;
        if got.shape != want.shape {
            problems.push(format!(
                "{name}: shape {:?}, numpy {:?}",
                got.shape, want.shape
            ));
            continue;
        }
        let mut bad = 0;
        let mut first = None;
        for (k, (g, w)) in got.data.iter().zip(&want.data).enumerate() {
            let ok = if w.is_nan() {
                g.is_nan()
            } else if w.is_infinite() {
                g == w
            } else {
                (g - w).abs() <= atol + rtol * w.abs()
            };
            if !ok {
                bad += 1;
                first.get_or_insert((k, *g, *w));
            }
        }
        if let Some((k, g, w)) = first {
            problems.push(format!(
                "{name}: {bad} of {} values differ; first at flat index {k}: uop {g}, numpy {w} (rtol {rtol}, atol {atol})",
                got.len()
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n  "))
    }
}

#[test]
fn every_macro_op_matches_numpy() {
    let cases = case_dirs();
    assert!(
        cases.len() >= 100,
        "only {} golden cases under tests/golden/cases (expected the whole suite, 200+)",
        cases.len()
    );
    let mut failures = Vec::new();
    for dir in &cases {
        if let Err(e) = check_case(dir) {
            failures.push(format!("{}:\n  {e}", dir.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} golden cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_registered_op_has_golden_cases() {
    let programs: Vec<String> = case_dirs()
        .iter()
        .map(|d| std::fs::read_to_string(d.join("program.uop")).expect("program"))
        .collect();
    let missing: Vec<String> = uop::ops::registry()
        .iter()
        .map(|op| op.name.clone())
        .filter(|name| !programs.iter().any(|p| p.contains(&format!("{name}("))))
        .collect();
    assert!(missing.is_empty(), "ops without golden cases: {missing:?}");
}
