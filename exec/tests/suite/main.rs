//! The integration tests of `uop-exec`, one test binary: each file of this folder is a
//! module. Run one file's tests with a filter: `cargo test -p uop-exec --test suite MODULE::`.

mod common;

mod arena;
mod differential;
mod executor;
mod fuzz;
mod grad;
mod scan;
