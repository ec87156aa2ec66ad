//! Pass tests as text, after Cranelift's filetests: each file under `tests/passes/`
//! holds cases of loop IR before a pass and the IR the pass must leave.
//!
//! ```text
//! ; What the case shows (any number of `;` lines).
//! ; run: order
//! ; sizes: M=4, N=3, $k=2        (optional: the oracle's sizes; default 5 and 2)
//! input  x: f32[M, N]
//! ...                            (the IR before, as `uop print --stage loops` prints it)
//! ; expect:
//! ...                            (the IR after the passes, exactly as printed)
//! ```
//!
//! For each case the runner parses the IR, runs the named passes (several run in
//! order: `; run: fuse, subst`), and requires the printed result to equal the text
//! after `; expect:`. The loop interpreter then runs the IR before and after on the
//! same random inputs and requires the same outputs bit for bit (annotations do not
//! change what the interpreter computes), and the verifier accepts both.
//!
//! After an intended change to a pass, rerun with `UOP_BLESS=1` to rewrite the
//! expectations, and review the diff.

use std::path::{Path, PathBuf};

use uop_codegen::index::Bindings;
use uop_codegen::interp;
use uop_codegen::loops::{self, LoopProgram, parse_program};
use uop_codegen::pass;
use uop_codegen::tensor::Tensor;

use crate::common;
use common::same_bits;

/// One case of a pass file.
#[derive(Default)]
struct Case {
    description: Vec<String>,
    passes: Vec<String>,
    sizes: Option<String>,
    before: String,
    expect: String,
    /// 1-based line of the `; run:` line, for messages.
    line: usize,
}

/// Splits a pass file into its cases.
fn cases(text: &str, file: &str) -> Vec<Case> {
    #[derive(PartialEq)]
    enum Section {
        Description,
        Before,
        Expect,
    }
    let mut out: Vec<Case> = Vec::new();
    let mut case = Case::default();
    let mut section = Section::Description;
    for (k, line) in text.lines().enumerate() {
        if let Some(comment) = line.strip_prefix(';') {
            let comment = comment.trim();
            if let Some(passes) = comment.strip_prefix("run:") {
                assert!(
                    section == Section::Description,
                    "{file}:{}: `; run:` inside a case",
                    k + 1
                );
                case.passes = passes.split(',').map(|p| p.trim().to_string()).collect();
                case.line = k + 1;
                section = Section::Before;
            } else if let Some(sizes) = comment.strip_prefix("sizes:") {
                case.sizes = Some(sizes.trim().to_string());
            } else if comment == "expect:" {
                assert!(
                    section == Section::Before,
                    "{file}:{}: `; expect:` before `; run:`",
                    k + 1
                );
                section = Section::Expect;
            } else {
                if section == Section::Expect {
                    out.push(std::mem::take(&mut case));
                    section = Section::Description;
                }
                case.description.push(comment.to_string());
            }
            continue;
        }
        match section {
            Section::Description => assert!(
                line.trim().is_empty(),
                "{file}:{}: text before `; run:`",
                k + 1
            ),
            Section::Before if !line.trim().is_empty() => {
                case.before.push_str(line);
                case.before.push('\n');
            }
            Section::Expect if !line.trim().is_empty() => {
                case.expect.push_str(line);
                case.expect.push('\n');
            }
            _ => {}
        }
    }
    if section != Section::Description {
        out.push(case);
    }
    out
}

/// The file again, with each case's IR as printed: `(before, after)`.
fn blessed(cases: &[Case], printed: &[(String, String)]) -> String {
    let mut out = String::new();
    for (k, (case, (before, after))) in cases.iter().zip(printed).enumerate() {
        if k > 0 {
            out.push('\n');
        }
        for d in &case.description {
            out.push_str(&format!("; {d}\n"));
        }
        out.push_str(&format!("; run: {}\n", case.passes.join(", ")));
        if let Some(sizes) = &case.sizes {
            out.push_str(&format!("; sizes: {sizes}\n"));
        }
        out.push_str(before);
        out.push_str("; expect:\n");
        out.push_str(after);
    }
    out
}

/// Sizes from `M=4, $k=2`; named sizes not listed are 5, params 2.
fn bindings(p: &LoopProgram, sizes: Option<&str>) -> Bindings {
    let mut b = Bindings::default();
    for t in &p.tensors {
        for e in &t.shape {
            let mut names = Vec::new();
            collect_names(e, &mut names);
            for n in names {
                b.names.entry(n).or_insert(5);
            }
        }
    }
    for param in &p.params {
        b.params.insert(param.clone(), 2);
    }
    for item in sizes
        .unwrap_or("")
        .split(',')
        .filter(|s| !s.trim().is_empty())
    {
        let (name, value) = item.split_once('=').expect("`name=value` in `; sizes:`");
        let value: i64 = value.trim().parse().expect("an integer size");
        match name.trim().strip_prefix('$') {
            Some(param) => b.params.insert(param.to_string(), value),
            None => b.names.insert(name.trim().to_string(), value),
        };
    }
    b
}

fn collect_names(e: &uop_codegen::index::Expr, out: &mut Vec<String>) {
    use uop_codegen::index::Expr;
    match e {
        Expr::Name(n) => out.push(n.clone()),
        Expr::Neg(a) => collect_names(a, out),
        Expr::Bin(_, a, b) => {
            collect_names(a, out);
            collect_names(b, out);
        }
        _ => {}
    }
}

/// Runs `p` on deterministic inputs of the sizes `b` gives.
fn run(p: &LoopProgram, b: &Bindings) -> Result<Vec<Tensor>, String> {
    let mut inputs = Vec::new();
    for (k, &t) in p.inputs.iter().enumerate() {
        let decl = &p.tensors[t.0];
        let shape: Vec<usize> = decl
            .shape
            .iter()
            .map(|e| {
                let v = e.eval(b).map_err(|e| e.to_string())?;
                usize::try_from(v).map_err(|_| format!("negative size {v} of {}", decl.name))
            })
            .collect::<Result<_, _>>()?;
        let n: usize = shape.iter().product();
        let data = (0..n)
            .map(|i| {
                let x = ((i * 7 + k * 13) % 23) as f64 / 5.0 - 2.0;
                if decl.dtype == uop_codegen::uop::DType::I32 {
                    x.floor()
                } else {
                    x
                }
            })
            .collect();
        inputs.push(Tensor::new(decl.dtype, shape, data).map_err(|e| e.to_string())?);
    }
    interp::run_loops(p, &inputs, &b.params).map_err(|e| e.to_string())
}

/// Runs the case's passes; the IR before and after as printed, or what went wrong.
fn run_case(case: &Case, at: &str) -> Result<(String, String), String> {
    let before = parse_program(&case.before).map_err(|e| format!("{at}: the IR before: {e}"))?;
    if before.to_string() != case.before && std::env::var_os("UOP_BLESS").is_none() {
        return Err(format!(
            "{at}: write the IR before as the printer prints it (or rerun with UOP_BLESS=1):\n{before}"
        ));
    }
    loops::verify(&before).map_err(|e| format!("{at}: the IR before: {e}"))?;
    let mut after = before.clone();
    for name in &case.passes {
        let p = pass::pipeline()
            .iter()
            .find(|p| p.name == name.as_str())
            .ok_or_else(|| format!("{at}: no pass `{name}`"))?;
        after = (p.run)(&after);
    }
    loops::verify(&after).map_err(|e| format!("{at}: the IR after: {e}\n{after}"))?;
    let b = bindings(&before, case.sizes.as_deref());
    let want = run(&before, &b).map_err(|e| format!("{at}: running the IR before: {e}"))?;
    let got = run(&after, &b).map_err(|e| format!("{at}: running the IR after: {e}"))?;
    if !same_bits(&want, &got) {
        return Err(format!(
            "{at}: the IR after computes other values\nbefore: {want:?}\nafter:  {got:?}"
        ));
    }
    Ok((before.to_string(), after.to_string()))
}

fn pass_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/passes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/passes exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_pass_file_gives_its_expected_ir() {
    let bless = std::env::var_os("UOP_BLESS").is_some();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in pass_files() {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(&file).expect("reads");
        let cases = cases(&text, &name);
        assert!(!cases.is_empty(), "{name}: no cases");
        let mut after = Vec::new();
        for case in &cases {
            count += 1;
            let at = format!("{name}:{}", case.line);
            match run_case(case, &at) {
                Ok((before, text)) => {
                    if text != case.expect && !bless {
                        failures.push(format!(
                            "{at}: after `{}`:\n{text}expected:\n{}",
                            case.passes.join(", "),
                            case.expect
                        ));
                    }
                    after.push((before, text));
                }
                Err(e) => {
                    failures.push(e);
                    after.push((case.before.clone(), case.expect.clone()));
                }
            }
        }
        if bless {
            std::fs::write(&file, blessed(&cases, &after)).expect("writes");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(count >= 11, "only {count} cases");
}

#[test]
fn every_pass_of_the_pipeline_has_a_file() {
    let files: Vec<String> = pass_files()
        .iter()
        .map(|f| f.file_stem().expect("stem").to_string_lossy().into_owned())
        .collect();
    for p in pass::pipeline() {
        assert!(
            files.iter().any(|f| f == p.name),
            "no tests/passes/{}.txt",
            p.name
        );
    }
}
