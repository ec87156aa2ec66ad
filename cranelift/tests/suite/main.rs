//! The integration tests of `uop-cranelift`, one test binary: each file of this
//! folder is a module, so the suite links once instead of once per file.
//! Run one file's tests with a filter: `cargo test --profile fast-build -p uop-cranelift --test suite MODULE::`.

mod checked_calls;
mod common;
mod cranelift_clif;
mod cranelift_object;
mod cranelift_oracle;
mod cranelift_programs;
mod cranelift_schedule;
mod cranelift_vmath;
mod kernel_names;
