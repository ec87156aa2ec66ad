//! Graph looping on the graph interpreter (DESIGN.md §20, `docs/graph-looping.md`):
//! the loop stack's counts in real runs (the default loop-end's progression, nested
//! loops whose inner counts carry across outer iterations, custom loop-end functions
//! that stop early, go on or fail), the run-time errors, and chunked = unchunked bit
//! for bit on random graphs with chunk sizes 1, ragged and larger than the batch.
//!
//! `UOP_GRAPH_SWEEP=N` runs N random seeds instead of the CI's 300.

use std::cell::RefCell;
use std::collections::HashMap;

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::looping::{
    LoopControl, LoopCounts, LoopEnd, LoopHooks, default_loop_end, partitions, unchunked,
    with_chunk_size,
};
use uop_graph::random::{RandomOptions, random_graph, random_inputs, reproducer};
use uop_graph::text::parse_graph;
use uop_graph::{
    Graph, GraphRunError, NodeId, Op, Run, RunOptions, default_registry, run, run_with_hooks,
};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// `0, 1, 2, ...` as an `f32[n]`.
fn iota(n: usize) -> Tensor {
    Tensor::new(DType::F32, vec![n], (0..n).map(|i| i as f64).collect()).expect("iota")
}

fn chunk_ids(g: &Graph) -> Vec<NodeId> {
    g.nodes()
        .iter()
        .filter(|n| matches!(n.op, Op::Chunk { .. }))
        .map(|n| n.id)
        .collect()
}

fn run_hooked(
    g: &Graph,
    inputs: &[Tensor],
    hooks: &mut LoopHooks<'_>,
) -> Result<Run, GraphRunError> {
    let options = RunOptions {
        max_iterations: Some(10_000),
    };
    run_with_hooks(g, inputs, &HashMap::new(), &options, hooks)
}

/// A loop-end function that records the counts it leaves, around the default.
fn recording<'a>(log: &'a RefCell<Vec<LoopCounts>>) -> Box<dyn LoopEnd + 'a> {
    Box::new(move |_: NodeId, c: &mut LoopCounts| {
        let r = default_loop_end(c);
        log.borrow_mut().push(*c);
        Ok(r)
    })
}

#[test]
fn the_default_loop_end_runs_total_5_chunk_1_five_times_then_prev_outer_is_5() {
    let g = parse("input x: f32[N]\nc = chunk(x, size=1)\ny = mul(c, 2)\noutput y\n");
    let c = chunk_ids(&g)[0];
    let log = RefCell::new(Vec::new());
    let mut hooks: LoopHooks = HashMap::from([(c, recording(&log))]);
    let r = run_hooked(&g, &[iota(5)], &mut hooks).expect("runs");
    assert_eq!(r.outputs[0].data, [0.0, 2.0, 4.0, 6.0, 8.0]);
    assert_eq!(r.trace.chunks[&c], [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]);
    assert_eq!(
        r.trace.output_chunks,
        [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]
    );
    drop(hooks);
    let log = log.into_inner();
    let progression: Vec<(u64, u64, u64)> = log
        .iter()
        .map(|c| (c.itercount, c.prev_batches, c.prev_outer_batches))
        .collect();
    assert_eq!(
        progression,
        [(1, 1, 0), (2, 2, 0), (3, 3, 0), (4, 4, 0), (0, 0, 5)]
    );
    assert!(
        log.iter()
            .all(|c| c.total_batches == 5 && c.current_batches == 1)
    );
}

#[test]
fn nested_loops_carry_the_inner_counts_across_outer_iterations() {
    // 7 rows: outer chunks of 4 (4, 3), inner chunks of 2 of each (2, 2 | 2, 1).
    let g = parse(
        "\
input x: f32[N]
c1 = chunk(x, size=4)
a = add(c1, 1)
c2 = chunk(a, size=2)
y = mul(c2, 10)
output y
",
    );
    let (outer, inner) = (chunk_ids(&g)[0], chunk_ids(&g)[1]);
    let log = RefCell::new(Vec::new());
    let mut hooks: LoopHooks = HashMap::from([(inner, recording(&log))]);
    let r = run_hooked(&g, &[iota(7)], &mut hooks).expect("runs");
    assert_eq!(
        r.outputs[0].data,
        [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
    );
    assert_eq!(r.trace.chunks[&outer], [(0, 4), (4, 3)]);
    // The inner rows start again in each outer chunk ...
    assert_eq!(r.trace.chunks[&inner], [(0, 2), (2, 2), (0, 2), (2, 1)]);
    // ... while the outputs go at prev_batches + prev_outer_batches.
    assert_eq!(r.trace.output_chunks, [(0, 2), (2, 2), (4, 2), (6, 1)]);
    let outer_batches: Vec<u64> = log.borrow().iter().map(|c| c.prev_outer_batches).collect();
    assert_eq!(outer_batches, [0, 4, 4, 7]);
    assert_eq!(
        r.outputs,
        run(&unchunked(&g), &[iota(7)], &HashMap::new()).unwrap()
    );
}

#[test]
fn a_custom_loop_end_that_stops_early_leaves_the_rest_zero() {
    let g = parse("input x: f32[N]\nc = chunk(x, size=2)\ny = add(c, 1)\noutput y\n");
    let c = chunk_ids(&g)[0];
    let mut calls = 0;
    let stop_after_two = move |_: NodeId, counts: &mut LoopCounts| {
        calls += 1;
        if calls < 2 {
            Ok(default_loop_end(counts))
        } else {
            Ok(LoopControl::Done)
        }
    };
    let mut hooks: LoopHooks = HashMap::from([(c, Box::new(stop_after_two) as Box<dyn LoopEnd>)]);
    let r = run_hooked(&g, &[iota(7)], &mut hooks).expect("runs");
    assert_eq!(r.trace.chunks[&c], [(0, 2), (2, 2)]);
    assert_eq!(r.outputs[0].data, [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0]);
}

#[test]
fn a_loop_end_that_goes_on_past_the_input_or_fails_is_an_error_naming_the_chunk() {
    let g = parse("input x: f32[N]\nc = chunk(x, size=2)\ny = add(c, 1)\noutput y\n");
    let c = chunk_ids(&g)[0];
    let go_on = |_: NodeId, counts: &mut LoopCounts| {
        counts.prev_batches += counts.current_batches;
        Ok(LoopControl::Again)
    };
    let mut hooks: LoopHooks = HashMap::from([(c, Box::new(go_on) as Box<dyn LoopEnd>)]);
    let e = run_hooked(&g, &[iota(3)], &mut hooks)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "%2: the loop went on past the end of the input (3 rows, row 3 asked for): its loop-end function asked for another iteration"
    );
    let fail = |_: NodeId, _: &mut LoopCounts| Err("out of tokens".to_string());
    let mut hooks: LoopHooks = HashMap::from([(c, Box::new(fail) as Box<dyn LoopEnd>)]);
    let e = run_hooked(&g, &[iota(3)], &mut hooks)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "%2: loop-end function: out of tokens");
}

#[test]
fn run_time_errors_name_the_node() {
    // A looped value broadcast against a whole-batch value: with chunks of 1 row the
    // add gives N rows per chunk, which the static rule (symbolic sizes) cannot see.
    let g = parse(
        "\
input x: f32[N]
input z: f32[N]
c = chunk(x, size=1)
y = add(c, z)
output y
",
    );
    let e = run(&g, &[iota(3), iota(3)], &HashMap::new())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "%3: output 0 has shape [3] in a loop whose chunk has 1 rows: every value inside a chunk loop keeps its rows (docs/graph-looping.md)"
    );
    // A chunk size below 1.
    let g = parse("input x: f32[N]\nc = chunk(x, size=0)\ny = neg(c)\noutput y\n");
    let e = run(&g, &[iota(3)], &HashMap::new())
        .unwrap_err()
        .to_string();
    assert_eq!(e, "%2: the chunk size `0` is 0: a chunk has at least 1 row");
    // A rule broken: the loops pass's message.
    let g = parse("input x: f32[N]\nc = chunk(x, size=2)\ne = exp(x)\noutput e\n");
    let e = run(&g, &[iota(3)], &HashMap::new())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "output 0 (%3) is not downstream of the last loop-control node %2"
    );
}

#[test]
fn an_empty_batch_runs_one_empty_chunk() {
    let g = parse("input x: f32[N]\nc = chunk(x, size=2)\ny = add(c, 1)\noutput y\n");
    let r = run(&g, &[iota(0)], &HashMap::new()).expect("runs");
    assert_eq!(r[0].shape, [0]);
}

/// Seeds the CI run covers.
const CI_SEEDS: u64 = 300;

fn seeds() -> u64 {
    std::env::var("UOP_GRAPH_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_SEEDS)
}

/// What differs between `g` looped with every chunk size and `g` unchunked, on
/// inputs with 7 rows.
fn chunked_problem(g: &Graph, seed: u64) -> Option<String> {
    let inputs = random_inputs(g, 7, seed);
    let params = HashMap::new();
    let expected = match run(&unchunked(g), &inputs, &params) {
        Ok(r) => r,
        Err(e) => return Some(format!("the unchunked graph does not run: {e}")),
    };
    for size in [1, 2, 3, 7, 100] {
        let looped = with_chunk_size(g, &Expr::Int(size));
        match run(&looped, &inputs, &params) {
            Ok(found) if bits(&found) == bits(&expected) => {}
            Ok(found) => {
                return Some(format!(
                    "chunks of {size}: {:?}, unchunked {:?}",
                    found.iter().map(|t| &t.data).collect::<Vec<_>>(),
                    expected.iter().map(|t| &t.data).collect::<Vec<_>>()
                ));
            }
            Err(e) => return Some(format!("chunks of {size}: {e}")),
        }
    }
    None
}

fn bits(ts: &[Tensor]) -> Vec<(Vec<usize>, Vec<u64>)> {
    ts.iter()
        .map(|t| {
            (
                t.shape.clone(),
                t.data.iter().map(|v| v.to_bits()).collect(),
            )
        })
        .collect()
}

#[test]
fn chunked_random_graphs_equal_their_unchunked_runs_bit_for_bit() {
    let (mut looped, mut nested) = (0, 0);
    for seed in 0..seeds() {
        let g = random_graph(seed, &RandomOptions::default()).expect("builds");
        let chunks = chunk_ids(&g).len();
        if chunks == 0 {
            continue;
        }
        partitions(&g).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        looped += 1;
        nested += usize::from(chunks >= 2);
        if let Some(found) = chunked_problem(&g, seed) {
            let repro = reproducer(&g, &|g| chunked_problem(g, seed).is_some(), &found);
            panic!("seed {seed}: {found}\nreproducer:\n{repro}");
        }
    }
    // Not vacuous: the generator makes looped graphs, nested ones among them.
    assert!(looped >= seeds() as usize / 10, "{looped} looped graphs");
    assert!(nested >= seeds() as usize / 40, "{nested} nested");
}
