//! Helpers more than one file of the suite uses.

use std::process::Command;

/// Whether a C test can run: `gcc` present; without it the test fails, unless
/// `UOP_SKIP_C_TESTS` is set, when it prints that it skipped.
pub fn gcc_or_skip(test: &str) -> bool {
    if Command::new("gcc").arg("--version").output().is_ok() {
        return true;
    }
    if std::env::var_os("UOP_SKIP_C_TESTS").is_some() {
        println!("SKIPPED {test}: gcc not found and UOP_SKIP_C_TESTS is set");
        return false;
    }
    panic!("gcc not found: {test} needs it (set UOP_SKIP_C_TESTS=1 to skip the C tests)");
}
