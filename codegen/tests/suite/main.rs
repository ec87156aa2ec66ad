//! The integration tests of `uop-codegen`, one test binary: each file of this
//! folder is a module, so the suite links once instead of once per file.
//! Run one file's tests with a filter: `cargo test --profile fast-build --test suite MODULE::`.

mod common;

mod grad_fd;
mod grad_program;
mod grad_random;
mod grad_traps;
mod index_props;
mod interp;
mod loop_text;
mod loops_vs_uops;
mod nnc_programs;
mod oracle;
mod pass_files;
mod passes;
mod passes_fusion;
mod passes_oracle;
mod passes_prefix;
mod passes_scale;
mod passes_targets;
mod random_programs;
mod rust_backend;
mod rust_backend_oracle;
mod text_format;
mod text_round_trip;
