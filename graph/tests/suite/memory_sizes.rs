//! The sizes of a whole graph are checked before it runs (issue 40, item 2): every
//! value of every body, `parallel` counts, fused values; overflow is an error naming
//! the value; what is surely held is held to the memory limit.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::interp::{RunOptions, name_run_error, run_with};
use uop_graph::memory::{SizeLimit, check_sizes};
use uop_graph::text::parse_graph;
use uop_graph::{Graph, bind_graph_inputs, default_registry};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}"))
}

fn x4() -> Vec<Tensor> {
    vec![Tensor::new(DType::F32, vec![4], vec![1.0; 4]).expect("x")]
}

/// The error of checking `src` on `x: f32[4]` with `limit` bytes for held values.
fn refused(src: &str, limit: u64) -> String {
    let g = parse(src);
    let env = bind_graph_inputs(&g, &x4(), &HashMap::new()).expect("binds");
    let limit = SizeLimit {
        bytes: limit,
        every_value: false,
    };
    check_sizes(&g, &env, limit).expect_err(src).message
}

#[test]
fn a_parallel_count_too_large_for_memory_is_refused_before_running() {
    let body = "fn b($i, v) { return mul(v, 2) }";
    for (count, size) in [("1099511627776", "17.6 TB"), ("100000000000", "1.6 TB")] {
        let m = refused(
            &format!("input x: f32[4]\n{body}\ny = parallel({count}, b, x)\noutput y"),
            1 << 30,
        );
        assert!(m.starts_with("value `y` (the `parallel` %"), "{m}");
        assert!(
            m.contains(&format!(
                "[{count}, 4] needs {size}, more than the memory limit of 1.1 GB"
            )),
            "{m}"
        );
    }
    let m = refused(
        &format!("input x: f32[4]\n{body}\ny = parallel(9223372036854775807, b, x)\noutput y"),
        u64::MAX,
    );
    assert!(m.contains("has more bytes than fit in memory"), "{m}");
}

#[test]
fn an_overflowing_value_inside_a_body_or_fused_away_is_refused() {
    let huge = "reindex(v, [1099511627776, 1099511627776], [0])";
    for src in [
        // In a `while` body.
        format!(
            "input x: f32[4]\nfn more(v, i) {{ return lt(i, 1) }}\n\
             fn step(v, i) {{ w = reduce_sum({huge}, [0, 1]); return v, add(i, 1) }}\n\
             y, n = while(more, step, x, 0)\noutput y"
        ),
        // In a `parallel` body.
        format!(
            "input x: f32[4]\nfn b($i, v) {{ w = reduce_sum({huge}, [0, 1]); return w }}\n\
             y = parallel(2, b, x)\noutput y"
        ),
        // Under a top-level reduction that a kernel fuses.
        format!("input x: f32[4]\nv = exp(x)\nw = reduce_sum({huge}, [0, 1])\noutput w"),
    ] {
        let m = refused(&src, u64::MAX);
        assert!(m.contains("the `reindex` %"), "{m}");
        assert!(m.contains("[1099511627776, 1099511627776]"), "{m}");
        assert!(m.contains("more bytes than fit in memory"), "{m}");
    }
}

#[test]
fn the_interpreter_refuses_before_running() {
    let g = parse(
        "input x: f32[4]\nfn b($i, v) { return mul(v, 2) }\ny = parallel(1099511627776, b, x)\noutput y",
    );
    let start = Instant::now();
    let e = run_with(&g, &x4(), &HashMap::new(), &RunOptions::default())
        .expect_err("too large")
        .to_string();
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(e.contains("value `y`"), "{e}");
}

#[test]
fn a_graph_within_the_limit_passes() {
    let g =
        parse("input x: f32[4]\nfn b($i, v) { return mul(v, 2) }\ny = parallel(8, b, x)\noutput y");
    let env = bind_graph_inputs(&g, &x4(), &HashMap::new()).expect("binds");
    let limit = SizeLimit {
        bytes: 128,
        every_value: true,
    };
    check_sizes(&g, &env, limit).expect("8 x 4 floats are 128 bytes");
    let limit = SizeLimit {
        bytes: 127,
        every_value: false,
    };
    assert!(check_sizes(&g, &env, limit).is_err());
}

#[test]
fn a_failing_node_is_named_as_the_user_wrote_it() {
    let g = parse(
        "input x: f32[N]\nfn f(v) { w = reshape(v, [5]); return w }\ny = f(x)\nz = call(f, y)\noutput z",
    );
    let e = run_with(&g, &x4(), &HashMap::new(), &RunOptions::default())
        .expect_err("4 elements are not 5");
    let e = name_run_error(&g, e).to_string();
    assert!(e.contains(": in `y`: reshape"), "{e}");
    let g = parse(
        "input x: f32[N]\nfn f(v) { w = reshape(v, [5]); return w }\nz = call(f, x)\noutput z",
    );
    let e = run_with(&g, &x4(), &HashMap::new(), &RunOptions::default())
        .expect_err("4 elements are not 5");
    let e = name_run_error(&g, e).to_string();
    assert!(e.contains(": in `w`: reshape"), "{e}");
}
