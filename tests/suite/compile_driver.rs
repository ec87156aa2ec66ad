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
        ..PassOptions::default()
    };
    for (stem, program) in programs() {
        let plain =
            compile(&program, &CompileOptions::default().schedule(false)).expect("compiles");
        let expected = pass::optimize(&uop::codegen::loops::lower(&program), &without_schedule)
            .expect("optimizes");
        assert_eq!(plain, expected, "{stem}");
        let text = plain.to_string();
        for mark in [
            "parallel", "split", "tile", "joined", "blocked", "jammed", "chunked", "one row",
        ] {
            assert!(
                !text.contains(mark),
                "{stem}: `{mark}` without a schedule:\n{text}"
            );
        }
    }
}

/// The program of every golden case: each macro op at least once.
fn golden_programs() -> Vec<(String, Program)> {
    let registry = uop::ops::registry();
    let mut out = Vec::new();
    let cases = root().join("tests/golden/cases");
    let mut groups: Vec<PathBuf> = std::fs::read_dir(&cases)
        .expect("golden cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    groups.sort();
    for group in groups {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&group)
            .expect("golden group")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.join("program.uop").is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            let file = dir.join("program.uop");
            let text = std::fs::read_to_string(&file).expect("reads");
            let program = parse_program(&text, &registry)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            out.push((dir.display().to_string(), program));
        }
    }
    out
}

#[test]
fn loop_ir_text_reads_back_identically_at_every_stage_for_every_program_and_macro_op() {
    let mut programs = programs();
    programs.extend(golden_programs());
    for (stem, program) in programs {
        let lowered = uop::codegen::loops::lower(&program);
        let mut stages = vec![("loops", lowered.clone())];
        stages.extend(pass::optimize_traced(&lowered, &PassOptions::default()).expect("runs"));
        for (stage, p) in stages {
            let text = p.to_string();
            let parsed = uop::codegen::loops::parse_program(&text)
                .unwrap_or_else(|e| panic!("{stem} after {stage}: {e}"));
            assert_eq!(parsed.to_string(), text, "{stem} after {stage}");
        }
    }
}
