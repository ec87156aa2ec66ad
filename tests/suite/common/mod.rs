//! Helpers shared by the command-line tests: run the `uop` binary, read its output,
//! make scratch directories and .npy fixtures.

#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use uop::codegen::tensor::Tensor;
use uop::codegen::testing::scratch::{SCRATCH_PROFILE, SCRATCH_TARGET};
use uop::npy::write_npy;

/// Runs `uop ARGS` in `dir`.
pub fn uop_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_uop"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the uop binary runs")
}

/// Runs `uop ARGS` at the repository root (so `examples/...` paths work).
pub fn uop(args: &[&str]) -> Output {
    uop_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh, empty scratch directory for one test (unique per name), under the
/// tests' target tmpdir: emptied when a test takes it again, so runs of the suite
/// leave nothing in the system's temporary folder.
pub fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("uop-test-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Writes `t` to `dir/name` and returns the path as a string for the command line.
pub fn write(dir: &Path, name: &str, t: &Tensor) -> String {
    let path = dir.join(name);
    write_npy(&path, t).expect("write fixture");
    path.to_string_lossy().into_owned()
}

/// A scratch crate `name` in the tests' target tmpdir, depending on `uop-runtime`,
/// with `extra` appended to its manifest and `files` under `src/`; each file is
/// written only when it changed, so cargo rebuilds only what did.
///
/// Every scratch crate of the test suites is built with the same profile into one
/// target folder (`uop::codegen::testing::scratch`), so they share one build of
/// `uop-runtime`.
pub fn scratch_crate<F: AsRef<str>>(name: &str, extra: &str, files: &[(F, String)]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\nuop-runtime = {{ path = {:?} }}\n{extra}\n{SCRATCH_PROFILE}\n[workspace]\n",
        Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime")
    );
    std::fs::create_dir_all(dir.join("src")).expect("scratch crate");
    let write = |path: PathBuf, text: &str| {
        uop::codegen::build::write_if_changed(&path, text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    };
    write(dir.join("Cargo.toml"), &manifest);
    for (file, text) in files {
        write(dir.join("src").join(file.as_ref()), text);
    }
    dir
}

/// `cargo SUBCOMMAND --offline --quiet ARGS` in a scratch crate, with the target
/// folder the scratch crates share and without the caller's `RUSTFLAGS`.
pub fn cargo_in(dir: &Path, subcommand: &str, args: &[&str]) -> Output {
    cargo_command(dir, subcommand, args)
        .output()
        .expect("run cargo")
}

/// [`cargo_in`] with clippy linting the scratch crate while it compiles: clippy's
/// driver stands in for rustc on the crate itself (`RUSTC_WORKSPACE_WRAPPER`, as
/// `cargo clippy` does it), so linting costs no second compile. The crate's
/// `#![deny(warnings)]` makes every clippy warning an error.
pub fn cargo_in_linted(dir: &Path, subcommand: &str, args: &[&str]) -> Output {
    cargo_command(dir, subcommand, args)
        .env("RUSTC_WORKSPACE_WRAPPER", clippy_driver())
        .output()
        .expect("run cargo")
}

fn cargo_command(dir: &Path, subcommand: &str, args: &[&str]) -> Command {
    let mut command = Command::new(cargo());
    command
        .args([subcommand, "--offline", "--quiet"])
        .args(args)
        .current_dir(dir)
        .env(
            "CARGO_TARGET_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(SCRATCH_TARGET),
        )
        .env_remove("RUSTFLAGS");
    command
}

/// The cargo running the tests (`CARGO`), else the one on the path.
fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Clippy's driver of the toolchain running the tests (beside its cargo), else the
/// one on the path.
fn clippy_driver() -> PathBuf {
    let beside = Path::new(&cargo()).with_file_name("clippy-driver");
    if beside.is_file() {
        beside
    } else {
        PathBuf::from("clippy-driver")
    }
}
