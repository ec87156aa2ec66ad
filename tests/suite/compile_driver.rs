//! The compile driver (`uop_codegen::compile`) on every example and prebuilt
//! program: with the default options it makes exactly the loop IR the pipeline made
//! before the driver existed (the snapshots in `tests/snapshots/opt` were printed by
//! `uop print --stage opt` before it), so the kernels run as fast as before; without
//! the schedule it leaves every schedule pass out and nothing else.
//!
//! After an intended change to a pass, rerun with `UPDATE_SNAPSHOTS=1` and review
//! the diff.

use std::path::{Path, PathBuf};

use uop::codegen::compile::{CompileOptions, SCHEDULE_PASSES, compile};
use uop::codegen::pass::{self, PassOptions};
use uop::codegen::text::parse_program;
use uop::codegen::uop::Program;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every example and prebuilt program: (snapshot stem, program).
fn programs() -> Vec<(String, Program)> {
    let registry = uop::ops::registry();
    let mut out = Vec::new();
    for (dir, prefix) in [
        ("examples/programs", "programs"),
        ("prebuilt/kernels", "kernels"),
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .expect("program folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "uop"))
            .collect();
        files.sort();
        for file in files {
            let stem = file
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&file).expect("reads");
            let program = parse_program(&text, &registry)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            out.push((format!("{prefix}_{stem}"), program));
        }
    }
    assert!(out.len() >= 15, "only {} programs", out.len());
    out
}

fn snapshot(path: &Path, actual: &str) {
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        expected == actual,
        "{} differs from the optimized loop IR (rerun with UPDATE_SNAPSHOTS=1 and review):\n{actual}",
        path.display()
    );
}

#[test]
fn default_options_make_the_loop_ir_the_pipeline_made_before_the_driver() {
    for (stem, program) in programs() {
        let optimized = compile(&program, &CompileOptions::default()).expect("compiles");
        let path = root()
            .join("tests/snapshots/opt")
            .join(format!("{stem}.loops"));
        snapshot(&path, &optimized.to_string());
    }
}

#[test]
fn scheduling_off_leaves_out_the_schedule_passes_and_nothing_else() {
    let without_schedule = PassOptions {
        disabled: SCHEDULE_PASSES.iter().map(|s| s.to_string()).collect(),
    };
    for (stem, program) in programs() {
        let plain =
            compile(&program, &CompileOptions::default().schedule(false)).expect("compiles");
        let expected = pass::optimize(&uop::codegen::loops::lower(&program), &without_schedule)
            .expect("optimizes");
        assert_eq!(plain, expected, "{stem}");
        let text = plain.to_string();
        for mark in ["parallel", "split", "tile", "joined", "blocked", "one row"] {
            assert!(
                !text.contains(mark),
                "{stem}: `{mark}` without a schedule:\n{text}"
            );
        }
    }
}
