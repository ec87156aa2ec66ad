//! Helpers shared by the command-line tests: run the `uop` binary, read its output,
//! make scratch directories and .npy fixtures.

#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use uop::codegen::tensor::Tensor;
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

/// A fresh, empty scratch directory for one test (unique per process and name).
pub fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("uop-test-{}-{test}", std::process::id()));
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
