//! The integration tests of `uop` (the facade and the command line), one test binary: each file of this
//! folder is a module, so the suite links once instead of once per file.
//! Run one file's tests with a filter: `cargo test --profile fast-build --test suite MODULE::`.

mod common;

mod cli;
mod cli_bench;
mod cli_errors;
mod cli_files;
mod cli_fuzz;
mod cli_grad;
mod cli_graph;
mod cli_graph_limits;
mod cli_graph_names;
mod cli_help;
mod cli_inputs;
mod cli_loops;
mod cli_memory;
mod cli_onnx;
mod cli_onnx_e2e;
mod cli_onnx_node;
mod cli_options;
mod cli_run_passes;
mod cli_schedule;
mod compile_driver;
mod cranelift;
mod docs_flags;
mod generated_clippy;
mod generated_crates;
mod generated_names;
mod golden;
mod grad_blocks;
mod grad_ops;
mod graph_aot;
mod kernel_oracle;
mod memory_limits;
mod messages;
mod npy;
mod ops_reference;
mod packaging;
mod readme;
mod sizes;
