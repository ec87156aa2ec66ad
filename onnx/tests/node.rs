//! The ONNX backend node tests committed under `tests/onnx/node/` (onnx 1.23.2,
//! written by `tests/onnx/gen_node_tests.py`), each imported and run on the graph
//! interpreter and compared with the stored outputs: floats within rtol 1e-3 and
//! atol 1e-5 (ONNX's runner), integers and bools exactly, shapes exactly.
//!
//! `tests/onnx/node.txt` lists the cases that must pass (a listed case that fails
//! fails this test); every other committed case runs too and is counted. The closing
//! line is `N passed, M failed`.

mod node_harness;

use node_harness::{Manifest, Outcome, run_case};

#[test]
fn onnx_node_tests() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/onnx");
    let manifest = Manifest::read(&root.join("node.txt")).expect("tests/onnx/node.txt reads");
    let mut cases: Vec<_> = std::fs::read_dir(root.join("node"))
        .expect("tests/onnx/node exists")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= manifest.min_cases,
        "{} cases committed, the manifest expects at least {}",
        cases.len(),
        manifest.min_cases
    );
    let mut passed = 0;
    let mut failed = Vec::new();
    let mut listed_failures = Vec::new();
    for name in &cases {
        let entry = manifest.entry(name);
        let outcome = run_case(&root.join("node").join(name), entry.map(|e| e.inputs.as_slice()));
        match outcome {
            Outcome::Pass => passed += 1,
            Outcome::Fail(why) => {
                if entry.is_some() {
                    listed_failures.push(format!("{name}: {why}"));
                }
                failed.push(format!("{name}: {why}"));
            }
        }
    }
    let verbose = std::env::var_os("UOP_ONNX_VERBOSE").is_some();
    if verbose {
        for f in &failed {
            println!("FAIL {f}");
        }
    }
    let unlisted_passes: Vec<&String> = cases
        .iter()
        .filter(|c| manifest.entry(c).is_none() && !failed.iter().any(|f| f.starts_with(&format!("{c}:"))))
        .collect();
    if verbose {
        for p in &unlisted_passes {
            println!("PASS-UNLISTED {p}");
        }
    }
    for name in manifest.unmatched(&cases) {
        listed_failures.push(format!("{name}: listed in node.txt but not committed"));
    }
    println!("{passed} passed, {} failed", failed.len());
    assert!(
        listed_failures.is_empty(),
        "{} listed node tests failed:\n{}",
        listed_failures.len(),
        listed_failures.join("\n")
    );
}
