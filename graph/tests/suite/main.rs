//! The integration tests of `uop-graph`, one test binary: each file of this
//! folder is a module, so the suite links once instead of once per file.
//! Run one file's tests with a filter: `cargo test --profile fast-build --test suite MODULE::`.

mod fixtures;
mod fuzz_support;
mod memory_support;
mod pass_support;

mod emit_i32;
mod grad;
mod hierarchy;
mod hierarchy_branches;
mod hierarchy_containment;
mod interp;
mod interp_text;
mod kernel_joins;
mod kernels;
mod looping;
mod memory_plan;
mod memory_random;
mod memory_sizes;
mod pass_consts;
mod pass_cse;
mod pass_dead;
mod pass_fold;
mod pass_loops;
mod pass_pipeline;
mod pass_simplify;
mod random_graphs;
mod rewrite;
mod scan;
mod schedule;
mod schedule_random;
mod text_budget;
mod text_errors;
mod text_fuzz;
mod text_names;
mod text_parse;
mod text_programs;
mod text_round_trip;
mod text_scale;
mod verify;
