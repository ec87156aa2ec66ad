//! The integration tests of `uop-ops`, one test binary: each file of this
//! folder is a module, so the suite links once instead of once per file.
//! Run one file's tests with a filter: `cargo test --profile fast-build --test suite MODULE::`.

mod conv_errors;
mod movement_errors;
mod nn_errors;
