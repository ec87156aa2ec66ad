//! Generated Rust as a user's crate compiles it, in scratch crates under
//! `CARGO_TARGET_TMPDIR` that share one target directory (so a rerun only
//! rechecks what changed):
//!
//! - every example program (`examples/programs`), every prebuilt program
//!   (`kernels`) and, for every macro op of `uop::ops`, the smallest golden case
//!   calling it, emitted both ways — calling the crate `uop-runtime`, and
//!   standalone (`mod rt` copied in) — plus once with `Checks::Full`, as the
//!   public modules of one library with `#![deny(warnings)]`: `cargo check`
//!   must pass;
//! - two kernel files linked into one binary share one pool, one thread setting
//!   and one error type: the binary checks it when it runs.

use std::path::{Path, PathBuf};

use crate::common;
use common::{cargo_in, scratch_crate};
use uop::codegen::backend::rust::{EmitError, RustModule, RustOptions};
use uop::codegen::text::parse_program;
use uop::codegen::uop::Program;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `.uop` files of a folder, sorted: (file stem, text).
fn uop_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "uop"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let stem = p.file_stem().expect("stem").to_string_lossy().into_owned();
            (stem, std::fs::read_to_string(&p).expect("read program"))
        })
        .collect()
}

/// The golden cases' programs: (case path, text).
fn golden_programs() -> Vec<(String, String)> {
    let cases = root().join("tests/golden/cases");
    let mut out = Vec::new();
    let mut groups: Vec<PathBuf> = std::fs::read_dir(&cases)
        .expect("golden cases")
        .map(|e| e.expect("entry").path())
        .collect();
    groups.sort();
    for group in groups.iter().filter(|g| g.is_dir()) {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(group)
            .expect("group")
            .map(|e| e.expect("entry").path())
            .collect();
        dirs.sort();
        for case in dirs {
            if let Ok(text) = std::fs::read_to_string(case.join("program.uop")) {
                let name = case.strip_prefix(&cases).expect("inside").to_string_lossy();
                out.push((name.into_owned(), text));
            }
        }
    }
    out
}

/// True when `text` calls `op` (not merely contains it inside a longer name).
fn calls(text: &str, op: &str) -> bool {
    text.match_indices(&format!("{op}(")).any(|(at, _)| {
        !text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Every program the warnings check compiles, by kernel name.
fn programs() -> Vec<(String, Program)> {
    let registry = uop::ops::registry();
    let parse = |what: &str, text: &str| {
        parse_program(text, &registry).unwrap_or_else(|e| panic!("{what}: {e}"))
    };
    let mut out = Vec::new();
    for (dir, prefix) in [
        ("examples/programs", "example"),
        ("prebuilt/kernels", "kernel"),
    ] {
        for (stem, text) in uop_files(&root().join(dir)) {
            out.push((format!("{prefix}_{stem}"), parse(&stem, &text)));
        }
    }
    let golden = golden_programs();
    let mut ops = 0;
    for op in registry.iter() {
        let smallest = golden
            .iter()
            .filter(|(_, text)| calls(text, &op.name))
            .min_by_key(|(name, text)| (text.lines().count(), name.clone()));
        if let Some((case, text)) = smallest {
            out.push((format!("op_{}", op.name), parse(case, text)));
            ops += 1;
        }
    }
    assert!(
        ops >= registry.len() * 9 / 10,
        "golden cases for only {ops} ops"
    );
    out
}

/// One file with every program as a kernel; programs the Rust backend refuses
/// (integer float types) are left out, anything else it refuses is a failure.
fn module(programs: &[(String, Program)], options: RustOptions) -> String {
    let mut m = RustModule::new(options);
    let mut added = 0;
    for (name, program) in programs {
        match m.add(name, program) {
            Ok(_) => added += 1,
            Err(EmitError::Unsupported { message, .. }) if message.contains("i32") => {}
            Err(e) => panic!("{name}: {e}"),
        }
    }
    assert!(added * 10 >= programs.len() * 9, "only {added} kernels");
    m.source().expect("emits")
}

#[test]
fn every_program_and_macro_op_compiles_without_warnings_in_both_modes() {
    let programs = programs();
    let lib = "#![deny(warnings)]\n\n\
               /// With the crate `uop-runtime`.\npub mod with_runtime;\n\
               /// Standalone.\npub mod standalone;\n\
               /// With the crate, only safe indexing.\npub mod full_checks;\n";
    let dir = scratch_crate(
        "uop_generated_warnings",
        "",
        &[
            ("lib.rs", lib.into()),
            ("with_runtime.rs", module(&programs, RustOptions::default())),
            (
                "standalone.rs",
                module(&programs, RustOptions::default().standalone(true)),
            ),
            ("full_checks.rs", module(&programs, RustOptions::safe())),
        ],
    );
    let out = cargo_in(&dir, "check", &["--lib"]);
    assert!(
        out.status.success(),
        "generated code has warnings or errors:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The binary of the two-file crate: both files' kernels on two threads, then
/// the checks; it prints `ok` when all hold.
const TWO_FILES_MAIN: &str = r#"mod first;
mod second;

/// Compiles only if both files return the very same error type.
fn same_type(e: first::KernelError) -> second::KernelError {
    e
}

/// Threads of this process named after the pool's workers.
fn pool_workers() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|name| name.starts_with("uop-kernels"))
                .count()
        })
        .unwrap_or(1)
}

fn main() {
    uop_runtime::set_threads(2);
    assert_eq!(uop_runtime::threads(), 2);
    let n = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut y = vec![0.0f32; n];
    first::relu(&x, [n], &mut y).expect("relu runs");
    assert!(y.iter().zip(&x).all(|(y, x)| *y == x.max(0.0)));
    let mut s = vec![0.0f32; n];
    second::softmax(&x, [1024, 1024], &mut s).expect("softmax runs");
    assert!((s[..1024].iter().sum::<f32>() - 1.0).abs() < 1e-4);
    // Each kernel ran on two threads: the caller and the one worker of the one
    // pool (a pool per file would have started a worker each).
    if cfg!(target_os = "linux") {
        assert_eq!(pool_workers(), 1, "one pool for both files");
    }
    let a = first::relu(&x, [n + 1], &mut y).expect_err("a wrong length");
    let b = second::softmax(&x, [1024, 1025], &mut s).expect_err("a wrong shape");
    let a: second::KernelError = same_type(a);
    let errors: Vec<Box<dyn std::error::Error>> = vec![Box::new(a), Box::new(b)];
    assert_eq!(errors.len(), 2);
    println!("ok");
}
"#;

#[test]
fn two_kernel_files_in_one_binary_share_one_pool_one_thread_setting_one_error_type() {
    let registry = uop::ops::registry();
    let file = |name: &str| {
        let path = root().join("prebuilt/kernels").join(format!("{name}.uop"));
        let text = std::fs::read_to_string(&path).expect("read program");
        let program = parse_program(&text, &registry).expect("parses");
        uop::codegen::backend::rust::emit(name, &program, &RustOptions::default()).expect("emits")
    };
    let dir = scratch_crate(
        "uop_two_files",
        "",
        &[
            ("main.rs", TWO_FILES_MAIN.into()),
            ("first.rs", file("relu")),
            ("second.rs", file("softmax")),
        ],
    );
    let out = cargo_in(&dir, "run", &[]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "the two-file binary failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A user's binary as the README writes it: `#![deny(warnings)]`, the kernels
/// included in a private module with no `allow` attribute, only one of them
/// called. The called one has a 2^40 × 2^40 output (2^80 elements, which wraps to 0
/// in unchecked arithmetic): its shapes function and its entry refuse it.
const USER_MAIN: &str = r#"#![deny(warnings)]

mod kernels {
    include!("kernels.rs");
}

fn main() {
    let a = [1.0f32; 6];
    let e = kernels::huge_shapes([2, 3]).expect_err("2^80 elements");
    assert_eq!(e.to_string(), "huge: the shape of `y` has too many elements");
    let e = kernels::huge(&a, [2, 3], &mut []).expect_err("2^80 elements");
    assert!(matches!(e, kernels::KernelError::TooLarge { buffer: "y", .. }), "{e}");
    println!("ok");
}
"#;

#[test]
fn a_user_binary_needs_no_allow_and_an_overflowing_output_is_refused() {
    let registry = uop::ops::registry();
    let parse = |text: &str| parse_program(text, &registry).expect("parses");
    let mut module = RustModule::new(RustOptions::default());
    module
        .add(
            "huge",
            &parse("input a: f32[M, K]\ny = reindex(a, [1099511627776, 1099511627776], [0, 0])\noutput y\n"),
        )
        .expect("adds");
    let softmax =
        std::fs::read_to_string(root().join("prebuilt/kernels/softmax.uop")).expect("reads");
    // Never called: no warning for it either.
    module
        .add("unused_softmax", &parse(&softmax))
        .expect("adds");
    let dir = scratch_crate(
        "uop_user_binary",
        "",
        &[
            ("main.rs", USER_MAIN.into()),
            ("kernels.rs", module.source().expect("emits")),
        ],
    );
    let out = cargo_in(&dir, "run", &[]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "the user binary failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
