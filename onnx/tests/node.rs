//! The ONNX backend node tests committed under `tests/onnx/node/` (onnx 1.23.2,
//! written by `tests/onnx/gen_node_tests.py`), each imported and run on the graph
//! interpreter (the oracle), on the graph read back from its printed text, and on the
//! executor (Cranelift), every result compared with the stored outputs: floats within
//! rtol 1e-3 and atol 1e-5 (ONNX's runner), integers and bools exactly, shapes
//! exactly.
//!
//! `tests/onnx/node.txt` lists the cases that must pass (a listed case that fails
//! fails this test); every other committed case runs too and is counted. The closing
//! line says how many of the committed cases pass and how many listed ones fail. `docs/onnx.md` holds the per-op conformance table
//! and the supported-op table generated here: a test fails when they drift, and
//! `UOP_UPDATE_DOCS=1 cargo test --profile fast-build -p uop-onnx --test node`
//! rewrites them. `UOP_ONNX_NODE_DIR=DIR` runs the cases in DIR instead (all 1,884
//! written by `gen_node_tests.py --all DIR`); `UOP_ONNX_VERBOSE=1` prints each
//! failure and each passing case the manifest does not list.

pub mod node_harness;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use node_harness::{Manifest, Outcome, case_names, case_ops, run_case};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn onnx_node_tests() {
    let onnx = root().join("tests/onnx");
    let manifest = Manifest::read(&onnx.join("node.txt")).expect("tests/onnx/node.txt reads");
    let custom = std::env::var_os("UOP_ONNX_NODE_DIR").map(PathBuf::from);
    let dir = custom.clone().unwrap_or_else(|| onnx.join("node"));
    let cases = case_names(&dir);
    assert!(
        cases.len() >= manifest.min_cases,
        "{} cases found, the manifest expects at least {}",
        cases.len(),
        manifest.min_cases
    );
    let verbose = std::env::var_os("UOP_ONNX_VERBOSE").is_some();
    let mut passed = 0;
    let mut failed = 0;
    let mut listed_failures = Vec::new();
    let mut per_op: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for name in &cases {
        let entry = manifest.entry(name);
        let case = dir.join(name);
        let ok = match run_case(&case, entry.map(|e| e.inputs.as_slice())) {
            Outcome::Pass => {
                passed += 1;
                if verbose && entry.is_none() {
                    println!("PASS-UNLISTED {name}");
                }
                true
            }
            Outcome::Fail(why) => {
                failed += 1;
                if verbose {
                    println!("FAIL {name}: {why}");
                }
                if entry.is_some() {
                    listed_failures.push(format!("{name}: {why}"));
                }
                false
            }
        };
        for op in case_ops(&case) {
            let e = per_op.entry(op).or_default();
            e.0 += 1;
            e.1 += usize::from(ok);
        }
    }
    for name in manifest.unmatched(&cases) {
        listed_failures.push(format!("{name}: listed in node.txt but not found"));
    }
    // Written past the test harness's capture, so the count shows in every run.
    // Not `N passed, M failed`: CI reads such a line as a runner's verdict, and the
    // cases outside the manifest are expected to fail.
    let line = format!(
        "onnx node tests: {passed} of {} committed cases pass ({failed} fail); \
         {} listed in node.txt fail\n",
        passed + failed,
        listed_failures.len()
    );
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), line.as_bytes());
    assert!(
        listed_failures.is_empty(),
        "{} listed node tests failed:\n{}",
        listed_failures.len(),
        listed_failures.join("\n")
    );
    if custom.is_none() {
        let table = conformance(&per_op, passed, cases.len());
        sync_docs("node-conformance", &table);
    }
}

#[test]
fn docs_list_the_supported_ops() {
    sync_docs("supported-ops", &uop_onnx::registry::markdown_table());
}

/// The per-op table: for each op, the committed cases that use it and how many pass.
fn conformance(per_op: &BTreeMap<String, (usize, usize)>, passed: usize, total: usize) -> String {
    let mut s = format!(
        "{passed} of the {total} committed node tests pass (interpreter, text round trip and executor).\n\n\
         | ONNX op | cases using it | passing |\n|---|---:|---:|\n"
    );
    for (op, (n, ok)) in per_op {
        s.push_str(&format!("| {op} | {n} | {ok} |\n"));
    }
    s
}

/// Checks (or, with `UOP_UPDATE_DOCS`, rewrites) the part of `docs/onnx.md` between
/// `<!-- NAME -->` and `<!-- /NAME -->`.
fn sync_docs(name: &str, body: &str) {
    let path = root().join("docs/onnx.md");
    let text = std::fs::read_to_string(&path).expect("docs/onnx.md reads");
    let (open, close) = (format!("<!-- {name} -->\n"), format!("<!-- /{name} -->"));
    let start = text
        .find(&open)
        .map(|i| i + open.len())
        .expect("the section's opening marker");
    let end = text.find(&close).expect("the section's closing marker");
    if text[start..end] == *body {
        return;
    }
    if std::env::var_os("UOP_UPDATE_DOCS").is_some() {
        let new = format!("{}{body}{}", &text[..start], &text[end..]);
        std::fs::write(&path, new).expect("docs/onnx.md writes");
    } else {
        panic!(
            "docs/onnx.md's `{name}` section is out of date: run UOP_UPDATE_DOCS=1 cargo test --profile fast-build -p uop-onnx --test node"
        );
    }
}
