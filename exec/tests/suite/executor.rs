//! The graph executor's contract (`uop_exec`): NNC's numbers and every example graph
//! give the graph interpreter's results on both backends, inputs are checked before
//! anything runs, the run-time errors are the interpreter's, carried loop values and
//! repeated runs reuse their buffers, and an executable is `Send + Sync`.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_exec::{ExecOptions, Executable, GraphError, KernelBackend, compile, compile_with};
use uop_graph::text::parse_graph;
use uop_graph::{Graph, default_registry};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn file(path: &str) -> Graph {
    let src = std::fs::read_to_string(crate::common::repo(path)).expect("example file");
    parse(&src)
}

fn scalar(v: f64) -> Tensor {
    Tensor::new(DType::F32, vec![], vec![v]).expect("rank 0")
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

const BACKENDS: [KernelBackend; 2] = [KernelBackend::Cranelift, KernelBackend::Loops];

#[test]
fn the_power_loop_gives_nnc_numbers_on_both_backends() {
    let g = file("examples/graphs/power_loop.uop");
    for backend in BACKENDS {
        let out = exe(&g, backend)
            .run(&[scalar(0.34), scalar(1.11)])
            .expect("runs");
        let expected = 0.34f32 * 1.11f32.powi(5);
        assert_eq!(out[0].data, vec![f64::from(expected)], "{backend:?}");
        assert_eq!(out[1].data, vec![5.0], "{backend:?}");
    }
}

#[test]
fn the_piecewise_case_gives_nnc_numbers_on_both_backends() {
    let g = file("examples/graphs/piecewise.uop");
    for backend in BACKENDS {
        let e = exe(&g, backend);
        for (x, expected) in [(-1.0, 0.0), (0.76, 0.76), (1.226, 1.113), (2.1, 1.5)] {
            let out = e.run(&[scalar(x)]).expect("runs");
            assert!(
                (out[0].data[0] - expected).abs() < 1e-6,
                "{backend:?} x = {x}: {out:?}"
            );
        }
    }
}

#[test]
fn the_case_inside_a_loop_gives_nnc_numbers_on_both_backends() {
    let g = file("examples/graphs/piecewise_loop.uop");
    for backend in BACKENDS {
        let e = exe(&g, backend);
        for (x, expected) in [(1.226, 0.3042375), (0.8, 0.24)] {
            let out = e.run(&[scalar(x)]).expect("runs");
            assert!(
                (out[0].data[0] - expected).abs() < 1e-6,
                "{backend:?} x = {x}: {out:?}"
            );
        }
    }
}

/// Inputs for `g`: every named size `size`, values seeded.
fn inputs_for(g: &Graph, size: usize, seed: u64) -> Vec<Tensor> {
    uop_graph::random::random_inputs(g, size, seed)
}

#[test]
fn every_example_graph_gives_the_interpreters_results_on_both_backends() {
    let mut checked = 0;
    for entry in std::fs::read_dir(crate::common::repo("examples/graphs")).expect("examples") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "uop") {
            continue;
        }
        let g = file(path.to_str().expect("utf-8"));
        let inputs = inputs_for(&g, 4, 11);
        let expected = uop_graph::run(&g, &inputs, &HashMap::new())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for backend in BACKENDS {
            let found = exe(&g, backend)
                .run(&inputs)
                .unwrap_or_else(|e| panic!("{} {backend:?}: {e}", path.display()));
            assert_eq!(found.len(), expected.len());
            for (f, x) in found.iter().zip(&expected) {
                assert_eq!(f.shape, x.shape, "{}", path.display());
                let diff = f.max_abs_diff(x).expect("same shape");
                let scale = x.data.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                assert!(
                    diff <= 1e-5 * scale,
                    "{} {backend:?}: differs by {diff}",
                    path.display()
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} example graphs");
}

#[test]
fn a_wrong_input_shape_is_an_error_naming_the_input_before_anything_runs() {
    let g = parse("input x: f32[N]\ninput y: f32[N]\nz = add(exp(x), y)\noutput z\n");
    let e = compile(&g).expect("compiles");
    let x = Tensor::zeros(DType::F32, vec![3]);
    let y = Tensor::zeros(DType::F32, vec![4]);
    let err = e.run(&[x.clone(), y]).expect_err("N is 3 and 4");
    assert!(matches!(err, GraphError::Run(_)), "{err:?}");
    assert!(err.to_string().contains("`y`"), "{err}");
    let err = e
        .run(std::slice::from_ref(&x))
        .expect_err("one input missing");
    assert_eq!(err.to_string(), "the graph takes 2 inputs, 1 were given");
    let wrong_rank = Tensor::zeros(DType::F32, vec![3, 1]);
    let err = e.run(&[x, wrong_rank]).expect_err("rank 2");
    assert!(err.to_string().starts_with("input `y`"), "{err}");
}

#[test]
fn a_selector_out_of_range_is_the_interpreters_error() {
    let g = parse(
        "input s: f32[]\ninput x: f32[2]\nfn a(v) { return neg(v) }\nr = case(s, [a], x)\noutput r\n",
    );
    for backend in BACKENDS {
        let e = exe(&g, backend);
        let x = Tensor::new(DType::F32, vec![2], vec![1.0, -2.0]).expect("x");
        // The executor names the value as the command line names the interpreter's.
        let expected = uop_graph::run(&g, &[scalar(3.0), x.clone()], &HashMap::new())
            .expect_err("out of range");
        let expected = uop_graph::interp::name_run_error(&g, expected).to_string();
        assert!(expected.contains("in `r`: "), "{expected}");
        let err = e.run(&[scalar(3.0), x.clone()]).expect_err("out of range");
        assert_eq!(err.to_string(), expected);
        assert!(expected.ends_with("the selector is 3, but there are 1 branches"));
        // In range, and a negative selector passes the argument through.
        assert_eq!(
            e.run(&[scalar(0.5), x.clone()]).expect("runs")[0].data,
            vec![-1.0, 2.0]
        );
        assert_eq!(
            e.run(&[scalar(-1.0), x]).expect("runs")[0].data,
            vec![1.0, -2.0]
        );
    }
}

#[test]
fn a_loop_past_the_iteration_limit_is_the_interpreters_error() {
    let g = parse(
        "input x: f32[]\nfn more(v) { return lt(v, 100) }\nfn step(v) { return add(v, 1) }\ny = while(more, step, x)\noutput y\n",
    );
    for backend in BACKENDS {
        let e = compile_with(
            &g,
            &ExecOptions {
                backend,
                max_iterations: Some(10),
                ..ExecOptions::default()
            },
        )
        .expect("compiles");
        let err = e.run(&[scalar(0.0)]).expect_err("100 iterations");
        let expected = uop_graph::run_with(
            &g,
            &[scalar(0.0)],
            &HashMap::new(),
            &uop_graph::RunOptions {
                max_iterations: Some(10),
            },
        )
        .expect_err("100 iterations");
        let expected = uop_graph::interp::name_run_error(&g, expected);
        assert_eq!(err.to_string(), expected.to_string());
        assert!(err.to_string().ends_with(
            "the `while` giving `y` did not end within 10 iterations (--max-iterations 10)"
        ));
        assert_eq!(
            e.run(&[scalar(95.0)]).expect("5 iterations")[0].data,
            vec![100.0]
        );
    }
}

#[test]
fn a_loop_carrying_vectors_swaps_state_and_runs_again_with_the_same_results() {
    // The state (a, b, i) is permuted every iteration: b <- a * 2, a <- b.
    let g = parse(
        "input x: f32[N]\ninput y: f32[N]\nfn more(a, b, i) { return lt(i, 3) }\nfn step(a, b, i) { return b, mul(a, 2), add(i, 1) }\na, b, n = while(more, step, x, y, 0)\noutput a, b, n\n",
    );
    let x = Tensor::new(DType::F32, vec![2], vec![1.0, 2.0]).expect("x");
    let y = Tensor::new(DType::F32, vec![2], vec![10.0, 20.0]).expect("y");
    for backend in BACKENDS {
        let e = exe(&g, backend);
        for _ in 0..3 {
            let out = e.run(&[x.clone(), y.clone()]).expect("runs");
            // (x, y) -> (y, 2x) -> (2x, 2y) -> (2y, 4x)
            assert_eq!(out[0].data, vec![20.0, 40.0], "{backend:?}");
            assert_eq!(out[1].data, vec![4.0, 8.0], "{backend:?}");
            assert_eq!(out[2].data, vec![3.0], "{backend:?}");
        }
    }
}

#[test]
fn parallel_rows_stack_and_a_parallel_index_call_runs_through_the_jit() {
    let g = file("examples/graphs/rows.uop");
    let x = Tensor::new(DType::F32, vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]).expect("x");
    let w = Tensor::zeros(DType::F32, vec![2, 2]);
    let e = compile(&g).expect("compiles");
    // softmax of a zero row is 0.5 each.
    let out = e.run(&[x, w]).expect("runs");
    assert_eq!(out[0].shape, vec![2, 2]);
    assert_eq!(out[0].data, vec![0.5, 1.0, 1.5, 2.0]);
}

#[test]
fn an_executable_is_send_and_sync_and_runs_on_several_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Executable>();
    let g = file("examples/graphs/power_loop.uop");
    let e = compile(&g).expect("compiles");
    std::thread::scope(|s| {
        for k in 0..4 {
            let e = &e;
            s.spawn(move || {
                let out = e.run(&[scalar(k as f64), scalar(2.0)]).expect("runs");
                assert_eq!(out[0].data, vec![k as f64 * 32.0]);
            });
        }
    });
}

#[test]
fn the_executable_reports_its_kernels_and_the_prepare_pipeline() {
    let g = file("examples/graphs/mlp.uop");
    let e = compile(&g).expect("compiles");
    assert_eq!(e.kernel_count(), 3);
    assert!(e.nodes_before() > e.graph().len());
    assert_eq!(e.report().pass("kernels").map(|p| p.kernels_after), Some(3));
    assert_eq!(e.backend(), KernelBackend::Cranelift);
}

#[test]
fn a_loop_body_returning_one_value_for_two_states_runs() {
    // Random seed 330 found this: `return i + 1, h, h` with h computed in the body.
    let g = parse(
        "input x: f32[N]\nfn more(i, a, b) { return lt(i, 3) }\nfn step(i, a, b) {\n  h = mul(a, 0.5)\n  return add(i, 1), h, h\n}\nn, a, b = while(more, step, 0, x, x)\noutput n, a, b\n",
    );
    let x = Tensor::new(DType::F32, vec![2], vec![8.0, -16.0]).expect("x");
    for backend in BACKENDS {
        let out = exe(&g, backend)
            .run(std::slice::from_ref(&x))
            .expect("runs");
        assert_eq!(out[0].data, vec![3.0], "{backend:?}");
        assert_eq!(out[1].data, vec![1.0, -2.0], "{backend:?}");
        assert_eq!(out[2].data, vec![1.0, -2.0], "{backend:?}");
    }
}

/// `Streams::Auto` is `Streams::Max(uop_runtime::threads())`: the same schedule (two
/// towers joined, at most two streams each way), so a bench that finds them apart
/// measures something else (`docs/graph-executor.md`, *Streams*). (Values this
/// large keep their streams under `Auto`: small bodies run in order.)
#[test]
fn auto_streams_schedule_as_max_threads() {
    use uop_exec::Streams;
    let g = parse(
        "input x: f32[64, 64]\ninput v: f32[64, 64]\ninput w: f32[64, 64]\n\
         a = relu(matmul(relu(matmul(x, v)), v))\nb = relu(matmul(relu(matmul(x, w)), w))\n\
         y = add(a, b)\noutput y\n",
    );
    let with = |streams| {
        compile_with(
            &g,
            &ExecOptions {
                streams,
                ..ExecOptions::default()
            },
        )
        .expect("compiles")
    };
    let threads = uop_runtime::threads();
    let (auto, max) = (with(Streams::Auto), with(Streams::Max(threads)));
    assert_eq!(auto.schedule(), max.schedule());
    assert_eq!(auto.arena_bytes(), max.arena_bytes());
    assert_eq!(
        auto.schedule().map_or(1, |s| s.streams.len()),
        threads.min(2),
        "two towers on up to {threads} streams"
    );
}

/// A `while` over `x: TYPE` whose body has two independent adds (two streams' worth
/// of nodes), trips `$n` times.
fn two_adds_loop(ty: &str) -> Graph {
    parse(&format!(
        "param n\ninput x: {ty}\nfn more(a, b, i) {{ return lt(i, $n) }}\n\
         fn step(a, b, i) {{ return add(a, 1), mul(b, 2), add(i, 1) }}\n\
         a, b, i = while(more, step, x, x, 0)\noutput a, b, i\n"
    ))
}

#[test]
fn small_bodies_run_in_order_on_the_default_streams_and_large_ones_on_several() {
    // Starting a body's streams costs a thread hand-off on every trip of a loop:
    // with the default streams a body of small static values runs in order (the
    // loop's trip then costs what it does on one stream), a body of large values
    // keeps its streams (given two cores), and an explicit stream count runs the
    // schedule as drawn.
    let compiled = |ty: &str, streams| {
        compile_with(
            &two_adds_loop(ty),
            &ExecOptions {
                streams,
                ..ExecOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let small = compiled("f32[]", uop_exec::Streams::Auto);
    let large = compiled("f32[512, 512]", uop_exec::Streams::Auto);
    let explicit = compiled("f32[]", uop_exec::Streams::Max(2));
    assert_eq!(small.bodies_on_streams(), 0);
    assert!(small.schedule().is_none());
    if uop_runtime::threads() >= 2 {
        assert!(large.bodies_on_streams() >= 1);
    }
    assert!(explicit.bodies_on_streams() >= 1);
    let params = HashMap::from([("n".to_string(), 1000)]);
    let out = small
        .run_with_params(&[scalar(1.0)], &params)
        .expect("1000 trips");
    assert_eq!(out[0].data, vec![1001.0]);
    assert_eq!(out[2].data, vec![1000.0]);
}

#[test]
fn a_loop_past_max_iterations_is_an_error_naming_it_on_every_backend() {
    let g = two_adds_loop("f32[]");
    let params = HashMap::from([("n".to_string(), 50)]);
    for backend in BACKENDS {
        let e = compile_with(
            &g,
            &ExecOptions {
                backend,
                max_iterations: Some(49),
                ..ExecOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let err = e
            .run_with_params(&[scalar(1.0)], &params)
            .expect_err("50 trips > 49");
        assert!(
            err.to_string().ends_with(
                "the `while` giving `a`, `b`, `i` did not end within 49 iterations (--max-iterations 49)"
            ),
            "{backend:?}: {err}"
        );
    }
}

/// The executor checks a run's sizes itself, for a caller of the API as for the
/// command line: a value whose size overflows is refused before anything is
/// allocated, named as the user wrote it (issue 40 item 2).
#[test]
fn the_executor_refuses_an_overflowing_size_before_running() {
    let g = parse_graph(
        "param a\ninput x: f32[N]\nfn f(v) { return v }\ny = reindex(x, [$a, $a], [0])\nz = sum(y)\noutput z\n",
        default_registry(),
    );
    let g = match g {
        Ok(g) => g,
        Err(e) => panic!("{e}"),
    };
    let exe = uop_exec::compile(&g).unwrap_or_else(|e| panic!("{e}"));
    let x = Tensor::filled(DType::F32, vec![2], 1.0);
    let params = HashMap::from([("a".to_string(), 1i64 << 40)]);
    let e = exe
        .run_with_params(&[x], &params)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.starts_with("value `y` (the `reindex` %"), "{e}");
    assert!(e.contains("more bytes than fit in memory"), "{e}");
}
