//! The multi-stream executor against one stream (DESIGN.md §18, issue 21 item 5),
//! side by side in one run, alternating rounds:
//!
//! - `towers/2` and `towers/4`: two (four) independent MLP towers of three
//!   `relu(matmul)` layers each, B = 64, D = H = 256, joined by `add` at the end —
//!   equal branches of real work; the goal is 2 streams ≥ 1.8× one stream on 2 cores;
//! - `branchy`: eight short independent branches (two element-wise kernels on 4,096
//!   elements each) joined in a tree — small nodes, where waking a second stream
//!   and its events cost the most relative to the work.
//!
//! Every case runs `rounds` rounds; a round times `reps` runs on each stream count
//! in turn (1, 2, auto, and 2 with the `kernels` pass's `split-joins` decision off),
//! so the machine's load hits all alike, starting at another of them each round,
//! each after one untimed run (a fixed order favoured whatever followed the
//! two-stream row: the one-stream row leaves the pool's workers asleep). Printed: the median time
//! per run of each, the ratios of the medians to one stream's, and the arena of one
//! and of two streams.
//!
//! `cargo bench --bench streams` (the JIT's kernels run on one thread each; the
//! machine's other load makes single numbers noisy: read the ratios).

use std::time::Instant;

use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop::exec::{ExecOptions, Streams, compile_with};
use uop_graph::kernels::joins;
use uop_graph::pass::PrepareOptions;
use uop_graph::random::join_with_adds;
use uop_graph::text::parse_graph;
use uop_graph::{Graph, default_registry};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// `towers` MLP towers on one input, joined by a tree of `add`s.
fn towers(towers: usize) -> Graph {
    let mut src = String::from("input x: f32[B, D]\n");
    for t in 0..towers {
        for l in 0..3 {
            src.push_str(&format!("input w{t}_{l}: f32[D, D]\n"));
        }
    }
    let mut outs = Vec::new();
    for t in 0..towers {
        let mut last = "x".to_string();
        for l in 0..3 {
            src.push_str(&format!("h{t}_{l} = relu(matmul({last}, w{t}_{l}))\n"));
            last = format!("h{t}_{l}");
        }
        outs.push(last);
    }
    join_with_adds(&mut src, outs);
    parse(&src)
}

/// Eight short branches on one input, joined by a tree of `add`s.
fn branchy() -> Graph {
    let mut src = String::from("input x: f32[N]\n");
    let mut outs = Vec::new();
    for b in 0..8 {
        src.push_str(&format!("a{b} = exp(mul(x, {b}.5))\n"));
        src.push_str(&format!("c{b} = reduce_sum(sin(a{b}), [0])\n"));
        src.push_str(&format!("d{b} = mul(x, c{b})\n"));
        outs.push(format!("d{b}"));
    }
    join_with_adds(&mut src, outs);
    parse(&src)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn compare(name: &str, g: &Graph, inputs: &[Tensor], rounds: usize, reps: usize) {
    // The last: two streams with the `split-joins` decision of the `kernels` pass
    // off, so a join is fused into one branch's kernel (what it gains).
    let fused_joins = PrepareOptions {
        disabled: vec![joins::NAME.to_string()],
        ..PrepareOptions::default()
    };
    let choices = [
        ("1 stream", Streams::Max(1), PrepareOptions::default()),
        ("2 streams", Streams::Max(2), PrepareOptions::default()),
        ("auto", Streams::Auto, PrepareOptions::default()),
        ("2 streams, joins fused", Streams::Max(2), fused_joins),
    ];
    let exes: Vec<_> = choices
        .iter()
        .map(|(_, s, prepare)| {
            compile_with(
                g,
                &ExecOptions {
                    streams: *s,
                    prepare: prepare.clone(),
                    ..ExecOptions::default()
                },
            )
            .expect("compiles")
        })
        .collect();
    let expected = exes[0].run(inputs).expect("runs");
    for e in &exes[1..] {
        assert_eq!(
            e.run(inputs).expect("runs"),
            expected,
            "{name}: same results"
        );
    }
    let mut times = vec![Vec::new(); exes.len()];
    for round in 0..rounds {
        // Each round starts at another row, so no row always follows the one-stream
        // row (whose runs leave the pool's workers asleep); one untimed run wakes
        // them before a row is timed.
        for k in (0..exes.len()).map(|i| (i + round) % exes.len()) {
            let e = &exes[k];
            std::hint::black_box(e.run(inputs).expect("runs"));
            let start = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(e.run(inputs).expect("runs"));
            }
            times[k].push(start.elapsed().as_secs_f64() / reps as f64);
        }
    }
    let med: Vec<f64> = times.into_iter().map(median).collect();
    let line: Vec<String> = choices
        .iter()
        .zip(&med)
        .map(|((n, _, _), t)| format!("{n} {:.3} ms", t * 1e3))
        .collect();
    println!(
        "{name:<10} {}\n           2 streams: {:.2}x, auto: {:.2}x, 2 streams with joins fused: \
         {:.2}x   arena {} -> {} bytes",
        line.join(", "),
        med[0] / med[1],
        med[0] / med[2],
        med[0] / med[3],
        exes[0].arena_bytes(),
        exes[1].arena_bytes()
    );
}

fn main() {
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    println!(
        "graph executor, median time per run over alternating rounds ({} threads)",
        uop_runtime::threads()
    );
    for t in [2, 4] {
        let name = format!("towers/{t}");
        if !name.contains(&filter) {
            continue;
        }
        let g = towers(t);
        let mut inputs = vec![Tensor::random(DType::F32, vec![64, 256], 1)];
        for k in 0..t * 3 {
            let w = Tensor::random(DType::F32, vec![256, 256], 10 + k as u64);
            inputs.push(Tensor {
                data: w.data.iter().map(|v| v / 16.0).collect(),
                ..w
            });
        }
        compare(&name, &g, &inputs, 15, 4);
    }
    if "branchy".contains(&filter) {
        let inputs = [Tensor::random(DType::F32, vec![4096], 3)];
        compare("branchy", &branchy(), &inputs, 15, 50);
    }
}
