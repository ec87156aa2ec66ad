//! The executor runs in the memory plan's arena (`docs/graph-executor.md`, Memory):
//! the arena it allocates is the plan's, a `while` allocates nothing per iteration, and
//! concurrent runs of one executable each get their own arena and the right numbers.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_exec::{ExecOptions, Executable, KernelBackend, compile, compile_with};
use uop_graph::memory::plan_memory;
use uop_graph::text::parse_graph;
use uop_graph::{Graph, default_registry};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn file(path: &str) -> Graph {
    parse(&std::fs::read_to_string(crate::common::repo(path)).expect("example file"))
}

fn exe(g: &Graph, backend: KernelBackend) -> Executable {
    compile_with(
        g,
        &ExecOptions {
            backend,
            ..ExecOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Random inputs for `g` with every named dim bound by `dims`.
fn inputs_for(g: &Graph, dims: &HashMap<String, i64>, seed: u64) -> Vec<Tensor> {
    let env = uop_codegen::index::Bindings {
        names: dims.clone(),
        ..Default::default()
    };
    g.input_node()
        .map(|n| {
            n.outputs
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    let shape = t
                        .shape
                        .iter()
                        .map(|d| d.eval(&env).expect("a bound dim") as usize)
                        .collect();
                    Tensor::random(t.dtype, shape, seed + k as u64)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn assert_close(found: &[Tensor], expected: &[Tensor], what: &str) {
    assert_eq!(found.len(), expected.len(), "{what}");
    for (f, x) in found.iter().zip(expected) {
        assert_eq!(f.shape, x.shape, "{what}");
        let diff = f.max_abs_diff(x).expect("same shape");
        let scale = x.data.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        assert!(diff <= 1e-5 * scale, "{what}: differs by {diff}");
    }
}

fn dims(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn the_reference_graphs_run_in_an_arena_of_the_plans_size() {
    let cases = [
        ("mlp", dims(&[("B", 8), ("D", 24), ("H", 16), ("O", 10)])),
        ("transformer_block", dims(&[("T", 8), ("D", 16), ("F", 32)])),
        (
            "conv_block",
            dims(&[("N", 2), ("C", 3), ("H", 8), ("W", 8), ("K", 4)]),
        ),
        ("layernorm", dims(&[("T", 8), ("D", 16)])),
    ];
    for (name, d) in cases {
        let g = file(&format!("examples/graphs/{name}.uop"));
        let inputs = inputs_for(&g, &d, 5);
        let expected = uop_graph::run(&g, &inputs, &HashMap::new()).expect("interpreter");
        for backend in [KernelBackend::Cranelift, KernelBackend::Loops] {
            let e = exe(&g, backend);
            let found = e.run(&inputs).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert_close(&found, &expected, name);
            let plan = plan_memory(e.graph(), &d).expect("plan");
            assert_eq!(e.arena_bytes(), plan.arena_bytes, "{name}");
            assert_eq!(
                e.memory_plan(&inputs, &HashMap::new())
                    .expect("plan")
                    .as_ref(),
                &plan,
                "{name}"
            );
            if name != "layernorm" {
                assert!(plan.arena_bytes > 0, "{name} has intermediates");
            }
        }
    }
}

#[test]
fn the_plan_is_made_once_per_set_of_dims_and_a_larger_one_grows_the_arena() {
    let g = parse("input x: f32[N, N]\nh = matmul(x, x)\ny = matmul(h, h)\noutput y\n");
    let e = compile(&g).expect("compiles");
    let x4 = Tensor::random(DType::F32, vec![4, 4], 1);
    let x8 = Tensor::random(DType::F32, vec![8, 8], 2);
    e.run(std::slice::from_ref(&x4)).expect("runs");
    let first = e
        .memory_plan(std::slice::from_ref(&x4), &HashMap::new())
        .expect("plan");
    assert_eq!(
        e.arena_bytes(),
        64,
        "h: 4 * 4 * 4 bytes in one 64-byte slot"
    );
    let again = e
        .memory_plan(std::slice::from_ref(&x4), &HashMap::new())
        .expect("plan");
    assert!(std::sync::Arc::ptr_eq(&first, &again), "cached per dims");
    let out = e.run(std::slice::from_ref(&x8)).expect("runs");
    assert_eq!(e.arena_bytes(), 8 * 8 * 4);
    let expected = uop_graph::run(&g, &[x8], &HashMap::new()).expect("interpreter");
    assert_close(&out, &expected, "N = 8");
}

/// A loop carrying a vector and a counter for `limit` iterations.
const LOOP: &str = "input x: f32[N]\ninput limit: f32[]\nfn more(i, v) { return lt(i, limit) }\nfn step(i, v) { return add(i, 1), add(mul(v, 0.5), 1) }\nn, y = while(more, step, 0, x)\nz = mul(y, 2)\noutput n, z\n";

#[test]
fn a_while_of_a_thousand_iterations_allocates_no_buffer_per_iteration() {
    let g = parse(LOOP);
    for backend in [KernelBackend::Cranelift, KernelBackend::Loops] {
        let e = exe(&g, backend);
        let x = Tensor::random(DType::F32, vec![256], 3);
        let limit = |n: f64| Tensor::new(DType::F32, vec![], vec![n]).expect("rank 0");
        let first = e.run(&[x.clone(), limit(3.0)]).expect("runs");
        assert_eq!(first[0].data, vec![3.0]);
        let before = e.buffer_allocations();
        let out = e.run(&[x.clone(), limit(1000.0)]).expect("runs");
        assert_eq!(
            e.buffer_allocations(),
            before,
            "{backend:?}: a second run of 1000 iterations allocated element buffers"
        );
        assert_eq!(out[0].data, vec![1000.0]);
        let expected =
            uop_graph::run(&g, &[x, limit(1000.0)], &HashMap::new()).expect("interpreter");
        assert_close(&out, &expected, "1000 iterations");
        // v converges to 2, z to 4.
        assert!(out[1].data.iter().all(|v| (v - 4.0).abs() < 1e-5));
    }
}

#[test]
fn the_loops_state_lives_in_the_arena_the_plan_carries_it_in() {
    let g = parse(LOOP);
    let e = compile(&g).expect("compiles");
    let x = Tensor::random(DType::F32, vec![64], 3);
    let limit = Tensor::new(DType::F32, vec![], vec![7.0]).expect("rank 0");
    let plan = e
        .memory_plan(&[x.clone(), limit.clone()], &HashMap::new())
        .expect("plan");
    assert_eq!(plan.carried.len(), 1, "one while");
    let state = plan.carried.values().next().expect("the while");
    assert_eq!(state.len(), 2, "two state values");
    for c in state {
        assert!(c.state().offset + c.state().bytes <= plan.arena_bytes);
    }
    for trips in [0.0, 1.0, 2.0, 7.0] {
        let limit = Tensor::new(DType::F32, vec![], vec![trips]).expect("rank 0");
        let out = e.run(&[x.clone(), limit.clone()]).expect("runs");
        let expected = uop_graph::run(&g, &[x.clone(), limit], &HashMap::new()).expect("interp");
        assert_close(&out, &expected, &format!("{trips} trips"));
    }
}

#[test]
fn two_threads_running_one_executable_get_their_own_results() {
    let g = file("examples/graphs/transformer_block.uop");
    let d = dims(&[("T", 8), ("D", 16), ("F", 32)]);
    let loop_graph = parse(LOOP);
    for backend in [KernelBackend::Cranelift, KernelBackend::Loops] {
        let e = exe(&g, backend);
        let l = exe(&loop_graph, backend);
        let cases: Vec<(Vec<Tensor>, Vec<Tensor>)> = (0..2)
            .map(|seed| {
                let inputs = inputs_for(&g, &d, 100 + seed);
                let expected = uop_graph::run(&g, &inputs, &HashMap::new()).expect("interp");
                (inputs, expected)
            })
            .collect();
        std::thread::scope(|s| {
            for (k, (inputs, expected)) in cases.iter().enumerate() {
                let (e, l) = (&e, &l);
                s.spawn(move || {
                    let x = Tensor::random(DType::F32, vec![32 + 32 * k], k as u64);
                    let limit = Tensor::new(DType::F32, vec![], vec![50.0 + k as f64]).expect("0");
                    let looped = uop_graph::run(
                        &loop_graph_of(l),
                        &[x.clone(), limit.clone()],
                        &HashMap::new(),
                    )
                    .expect("interp");
                    for round in 0..20 {
                        let found = e.run(inputs).expect("runs");
                        assert_close(&found, expected, &format!("thread {k} round {round}"));
                        let found = l.run(&[x.clone(), limit.clone()]).expect("runs");
                        assert_close(&found, &looped, &format!("loop {k} round {round}"));
                    }
                });
            }
        });
    }
}

/// The prepared graph of an executable (the interpreter runs it as well as the
/// original).
fn loop_graph_of(e: &Executable) -> Graph {
    e.graph().clone()
}

#[test]
fn an_element_wise_kernel_writes_over_the_input_that_dies_there() {
    // exp(a) * 2 is one element-wise kernel and a (a call's output) dies there: the
    // plan writes e over a, and the kernel runs with its output being its input.
    let g = parse(
        "input x: f32[N, N]\ninput c: f32[]\nfn f(v) { return matmul(v, v) }\na = call(f, x)\ne = mul(exp(a), 2.0)\nfn th(v) { return matmul(v, v) }\nfn el(v) { return matmul(v, x) }\nr = if(c, th, el, e)\ny = exp(r)\noutput y\n",
    );
    let x = Tensor::random(DType::F32, vec![8, 8], 9);
    for backend in [KernelBackend::Cranelift, KernelBackend::Loops] {
        let e = exe(&g, backend);
        for c in [0.0, 1.0] {
            let inputs = [
                x.clone(),
                Tensor::new(DType::F32, vec![], vec![c]).expect("rank 0"),
            ];
            let plan = e.memory_plan(&inputs, &HashMap::new()).expect("plan");
            assert_eq!(plan.in_place.len(), 1, "one kernel in place");
            let (out, input) = plan.in_place.iter().next().expect("in place");
            assert_eq!(plan.slots[out].offset, plan.slots[input].offset);
            let found = e.run(&inputs).expect("runs");
            let expected = uop_graph::run(&g, &inputs, &HashMap::new()).expect("interp");
            assert_close(&found, &expected, &format!("{backend:?} c = {c}"));
        }
    }
}

#[test]
fn an_alternating_while_state_gives_the_interpreters_numbers_for_odd_and_even_trips() {
    // v is read by the second kernel after the first wrote the next state: the plan
    // carries v in two slots used alternately.
    let g = parse(
        "input x: f32[N]\ninput limit: f32[]\nfn more(v, i, k) { return lt(k, limit) }\nfn step(v, i, k) {\n  a = add(v, 1.0)\n  b = sum(mul(v, a))\n  return a, add(i, b), add(k, 1)\n}\nx2 = exp(x)\nv, n, t = while(more, step, x2, 0, 0)\noutput v, n\n",
    );
    let x = Tensor::random(DType::F32, vec![16], 4);
    for backend in [KernelBackend::Cranelift, KernelBackend::Loops] {
        let e = exe(&g, backend);
        let limit = |n: f64| Tensor::new(DType::F32, vec![], vec![n]).expect("rank 0");
        let plan = e
            .memory_plan(&[x.clone(), limit(0.0)], &HashMap::new())
            .expect("plan");
        let carried = plan.carried.values().next().expect("a while");
        assert!(
            carried
                .iter()
                .any(|c| matches!(c, uop_graph::memory::Carried::Alternate { .. })),
            "{carried:?}"
        );
        for trips in 0..6 {
            let inputs = [x.clone(), limit(f64::from(trips))];
            let found = e.run(&inputs).expect("runs");
            let expected = uop_graph::run(&g, &inputs, &HashMap::new()).expect("interp");
            assert_close(&found, &expected, &format!("{backend:?}, {trips} trips"));
        }
    }
}
