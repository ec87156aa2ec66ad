//! The executor's later calls allocate nothing (issue 37): once a graph has run on
//! inputs of some types and shapes, another call on such inputs with the same
//! `$params`, writing into the earlier call's outputs ([`Executable::run_into`]),
//! makes no heap allocation at all — not in the executor's steps, not in a kernel's
//! call, not per trip of a `while`, not for a gradient graph's tape. A test binary of
//! its own: its global allocator counts every allocation of every thread of the
//! process, and its one test runs the cases in turn so that no other test allocates
//! meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_exec::{Executable, compile};
use uop_graph::grad::{GraphGradSpec, gradient};
use uop_graph::text::parse_graph;
use uop_graph::{Graph, RunOptions, default_registry, run_with};

/// The system allocator, counting every allocation and reallocation.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn load(path: &str) -> Graph {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let src = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_graph(&src, default_registry()).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn random(shape: &[usize], seed: u64, scale: f64) -> Tensor {
    let mut t = Tensor::random(DType::F32, shape.to_vec(), seed);
    t.data
        .iter_mut()
        .for_each(|v| *v = DType::F32.round(*v * scale));
    t
}

/// The allocations of the third call of `exe` on `inputs` (the first binds and
/// sizes everything, the second checks that it stays so), with its outputs.
fn later_call_allocations(
    exe: &Executable,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
) -> (u64, Vec<Tensor>) {
    let mut outputs = Vec::new();
    exe.run_into(inputs, params, &mut outputs).expect("runs");
    exe.run_into(inputs, params, &mut outputs).expect("runs");
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    exe.run_into(inputs, params, &mut outputs).expect("runs");
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    (after - before, outputs)
}

/// A graph of three kernels, nothing else.
fn plain_graph() {
    let g = load("examples/graphs/mlp.uop");
    let exe = compile(&g).expect("compiles");
    let inputs = [
        random(&[4, 16], 1, 1.0),
        random(&[16, 8], 2, 0.3),
        random(&[8], 3, 0.3),
        random(&[8, 8], 4, 0.3),
        random(&[8], 5, 0.3),
        random(&[8, 3], 6, 0.3),
        random(&[3], 7, 0.3),
    ];
    let none = HashMap::new();
    let (allocated, outputs) = later_call_allocations(&exe, &inputs, &none);
    assert_eq!(allocated, 0, "mlp.uop: a later call allocated");
    assert_eq!(outputs, exe.run(&inputs).expect("runs"));
}

const T: usize = 12;
const H: usize = 8;

fn rnn_inputs() -> (Vec<Tensor>, HashMap<String, i64>) {
    let inputs = vec![
        random(&[T, H], 1, 1.0),
        random(&[1, H], 2, 1.0),
        random(&[H, H], 3, 0.2),
        random(&[H, H], 4, 0.2),
    ];
    let params = HashMap::from([("steps".to_string(), T as i64)]);
    (inputs, params)
}

/// `examples/graph_grad/rnn.uop`: a `while` of `T` trips, each a few kernels.
fn while_loop() {
    let g = load("examples/graph_grad/rnn.uop");
    let exe = compile(&g).expect("compiles");
    let (inputs, params) = rnn_inputs();
    let (allocated, outputs) = later_call_allocations(&exe, &inputs, &params);
    assert_eq!(allocated, 0, "rnn.uop: a later call allocated");
    assert_eq!(
        outputs,
        exe.run_with_params(&inputs, &params).expect("runs")
    );
}

/// The gradient graph of the RNN with the stack tape: a recording `while` whose
/// trips write their tape rows, a `case`, and the backward `while`.
fn gradient_graph() {
    let g = load("examples/graph_grad/rnn.uop");
    let (inputs, params) = rnn_inputs();
    let grad = gradient(&g, &GraphGradSpec::all(&g)).expect("gradient graph");
    let fwd = run_with(&g, &inputs, &params, &RunOptions::default()).expect("forward");
    let seed = Tensor::filled(DType::F32, vec![1, 1], 1.0);
    let args = grad
        .arguments(&inputs, std::slice::from_ref(&seed), &fwd.outputs)
        .expect("arguments");
    let grad_params = grad.params(&fwd.trace, &params);
    let exe = compile(&grad.graph).expect("compiles");
    let (allocated, outputs) = later_call_allocations(&exe, &args, &grad_params);
    assert_eq!(
        allocated, 0,
        "the RNN's gradient graph: a later call allocated"
    );
    assert_eq!(
        outputs,
        exe.run_with_params(&args, &grad_params).expect("runs")
    );
}

#[test]
fn later_calls_of_a_plain_graph_a_while_and_a_gradient_graph_allocate_nothing() {
    plain_graph();
    while_loop();
    gradient_graph();
}
