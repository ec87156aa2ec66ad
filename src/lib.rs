//! `uop`: the micro-op tensor compiler. This crate is the facade of the workspace's
//! crates, and holds the `uop` command-line tool.
//!
//! | module | crate | what it is | entry points |
//! |---|---|---|---|
//! | [`codegen`] | `uop-codegen` | the compiler: micro ops, loop IR, passes, the Rust backend, interpreters | the compile driver [`codegen::compile::compile`]; the oracle [`codegen::interp::run`] |
//! | [`jit`] | (here) | run-time compilation to machine code, over [`cranelift`] | [`jit::compile`], then [`jit::Kernel::run`] |
//! | [`cranelift`] | `uop-cranelift` | the Cranelift backend: JIT and object files | [`cranelift::compile_program`] |
//! | [`ops`] | `uop-ops` | the macro-op library (matmul, conv, softmax, ...) written in micro ops | [`ops::registry`] |
//! | [`graph`] | `uop-graph` | graphs with functions and control flow: text, passes, memory plan, schedule, gradients, AOT to Rust, the graph interpreter | [`graph::text::parse_graph`], [`graph::pass::prepare`], the oracle [`graph::run`] |
//! | `onnx` | `uop-onnx` | (feature `onnx`, on with `cli`) ONNX models imported as graphs | `onnx::import`, `onnx::registry::OPS` |
//! | [`exec`] | `uop-exec` | the graph executor: a prepared graph's kernels JIT-compiled once, run in one arena on streams | [`exec::compile`], then [`exec::Executable::run`] |
//! | [`runtime`] | `uop-runtime` | what generated kernels call: errors, checks, aligned buffers, the worker pool | [`AlignedVec`] |
//! | `kernels` | `uop-kernels` | (feature `prebuilt`, off by default: a long compile) kernels compiled at build time | |
//! | [`npy`] | (here) | `.npy` files, the command line's exchange format | [`npy::read_npy`], [`npy::write_npy`] |
//! | [`bench`](mod@bench) | (here) | the speed workloads of `uop bench` | |
//! | [`testing`] | (here) | the oracle for your own ops: random cases through every stage and backend, finite differences | [`testing::check_op`], [`testing::check_kernel`] |
//! | [`cli`] | (here) | the `uop` command line, one module per subcommand | `uop run`, `uop print`, ... (`docs/cli.md`) |
//!
//! ```
//! use uop::codegen::tensor::Tensor;
//!
//! // A graph with a loop, parsed, compiled once and run on the executor.
//! let graph = uop::graph::text::parse_graph(
//!     "input x: f32[]\nfn more(v) { return lt(v, 100) }\nfn step(v) { return mul(v, 3) }\ny = while(more, step, x)\noutput y\n",
//!     uop::graph::default_registry(),
//! )?;
//! let exe = uop::exec::compile(&graph)?;
//! let x = Tensor::new(uop::codegen::uop::DType::F32, vec![], vec![2.0])?;
//! assert_eq!(exe.run(&[x.clone()])?[0].data, vec![162.0]);
//! // The graph interpreter, the oracle, agrees.
//! assert_eq!(uop::graph::run(&graph, &[x], &Default::default())?[0].data, vec![162.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: `cli` (default) is the `uop` command ([`cli`]) and its dependencies
//! (clap, indicatif); `testing` (with `cli`) the oracle for your own ops
//! ([`testing`]); `npy` (with `cli`) numpy's `.npy` files ([`npy`]); `onnx` (with
//! `cli`) the ONNX importer (`uop::onnx`, the crate `uop-onnx`). A library user
//! who wants none of them sets `default-features = false`. With the feature
//! `prebuilt` (off by default: a long compile), `uop::kernels` re-exports the
//! prebuilt kernels of the crate `uop-kernels`.

pub use uop_codegen as codegen;
pub use uop_cranelift as cranelift;
pub use uop_exec as exec;
pub use uop_graph as graph;
/// ONNX models into the graph layer (the crate `uop-onnx`), with the feature `onnx`
/// (on with the default `cli`).
#[cfg(feature = "onnx")]
pub use uop_onnx as onnx;
pub use uop_ops as ops;
pub use uop_runtime as runtime;

/// Buffers that start on a 64-byte cache line, for the slices kernels take
/// (the runtime's, see [`uop_runtime::AlignedVec`]):
///
/// ```
/// use uop::AlignedVec;
///
/// let x = AlignedVec::from_slice(&[1.0f32, 2.0, 3.0]);
/// assert_eq!(x.iter().sum::<f32>(), 6.0);
/// assert_eq!(x.as_ptr() as usize % 64, 0);
/// ```
pub use uop_runtime::AlignedVec;

pub mod bench;
#[cfg(feature = "cli")]
pub mod cli;
pub mod jit;
#[cfg(feature = "npy")]
pub mod npy;
#[cfg(feature = "testing")]
pub mod testing;

/// The prebuilt kernels (the crate `uop-kernels`), with the feature `prebuilt`.
#[cfg(feature = "prebuilt")]
pub use uop_kernels as kernels;

/// The README's Rust examples, compiled and run as doc tests (`tests/suite/readme.rs` runs
/// its commands).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
