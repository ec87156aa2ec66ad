//! Memory plans of random graphs (`uop_graph::random`), prepared by the whole
//! pipeline and as written (no kernels: Calls only), for two sizes of `N`: every
//! plan passes the static checks and the replay of the graph's own run on the
//! plan's arena (`memory_support`), and the constructs the plan treats specially
//! occur often enough for the property not to be vacuous.

use crate::memory_support;

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_graph::ir::{Op, Ref};
use uop_graph::memory::{
    Carried, MemoryPlan, plan_memory, plan_memory_apart, plan_memory_scheduled,
};
use uop_graph::pass::{PrepareOptions, prepare};
use uop_graph::random::{RandomOptions, random_graph};
use uop_graph::schedule::{ScheduleOptions, schedule};
use uop_graph::text::print_graph;
use uop_graph::{Graph, hierarchy};

use memory_support::{check_concurrency, check_shape, replay};

/// Random inputs for `g` with every symbolic size `n`.
fn inputs(g: &Graph, n: usize, seed: u64) -> Vec<Tensor> {
    uop_graph::random::random_inputs(g, n, seed)
}

#[derive(Default, Debug)]
struct Counts {
    plans: usize,
    in_place: usize,
    carried_in_place: usize,
    alternating: usize,
    results: usize,
    shared: usize,
}

fn check(g: &Graph, n: usize, counts: &mut Counts) -> Result<(), String> {
    let dims = HashMap::from([("N".to_string(), n as i64)]);
    let plan = plan_memory(g, &dims).map_err(|e| e.to_string())?;
    check_shape(g, &plan)?;
    replay(g, &plan, &inputs(g, n, 11), &dims)?;
    counts.plans += 1;
    counts.in_place += plan.in_place.len();
    counts.results += plan.results.len();
    for c in plan.carried.values().flatten() {
        match c {
            Carried::InPlace { .. } => counts.carried_in_place += 1,
            Carried::Alternate { .. } => counts.alternating += 1,
        }
    }
    if plan.arena_bytes < plan.intermediates_bytes {
        counts.shared += 1;
    }
    Ok(())
}

#[test]
fn plans_of_random_graphs_keep_every_live_value_intact() {
    let mut counts = Counts::default();
    for seed in 0..300 {
        let g = random_graph(seed, &RandomOptions::default()).expect("builds");
        if hierarchy(&g).is_err() {
            continue;
        }
        let (prepared, _) = prepare(g.clone(), &PrepareOptions::default()).expect("prepares");
        let unfused = PrepareOptions {
            disabled: vec!["kernels".into()],
            ..PrepareOptions::default()
        };
        let (calls, _) = prepare(g.clone(), &unfused).expect("prepares");
        for (what, graph) in [
            ("prepared", &prepared),
            ("calls", &calls),
            ("as written", &g),
        ] {
            for n in [3, 20] {
                if let Err(problem) = check(graph, n, &mut counts) {
                    panic!(
                        "seed {seed}, {what}, N={n}: {problem}\n{}",
                        print_graph(graph)
                    );
                }
            }
        }
    }
    println!("{counts:?}");
    assert!(counts.plans >= 1500, "{counts:?}");
    assert!(counts.in_place > 40, "{counts:?}");
    assert!(counts.carried_in_place > 50, "{counts:?}");
    assert!(counts.alternating > 50, "{counts:?}");
    assert!(counts.results > 50, "{counts:?}");
    assert!(counts.shared > 500, "{counts:?}");
}

/// `None` when no Kernel or Call node of `g` has an output whose bytes overlap an
/// input's in `plan`; else the first such pair.
fn overlapping_pair(g: &Graph, plan: &MemoryPlan) -> Option<(Ref, Ref)> {
    for n in g.nodes() {
        if !matches!(n.op, Op::Kernel(_) | Op::Call(_)) {
            continue;
        }
        for k in 0..n.outputs.len() {
            let out = Ref::new(n.id, k);
            let Some(o) = plan.slots.get(&out) else {
                continue;
            };
            for i in &n.inputs {
                let Some(s) = plan.slots.get(i) else { continue };
                let apart = o.offset + o.bytes <= s.offset || s.offset + s.bytes <= o.offset;
                if !apart && o.bytes > 0 && s.bytes > 0 {
                    return Some((out, *i));
                }
            }
        }
    }
    None
}

/// The plans code emitted ahead of time follows (`plan_memory_apart`): no in-place
/// pair, no kernel output sharing bytes with one of its inputs, and still every
/// live value intact in the replay; the ordinary plans of the same graphs do have
/// such pairs, so the check is not vacuous.
#[test]
fn plans_apart_give_no_kernel_an_output_over_its_input() {
    let (mut plans, mut pairs_elsewhere) = (0, 0);
    for seed in 0..150 {
        let g = random_graph(seed, &RandomOptions::default()).expect("builds");
        if hierarchy(&g).is_err() {
            continue;
        }
        let (prepared, _) = prepare(g, &PrepareOptions::default()).expect("prepares");
        for n in [3, 20] {
            let dims = HashMap::from([("N".to_string(), n as i64)]);
            let apart = plan_memory_apart(&prepared, &dims).expect("plans");
            let shown = || format!("seed {seed}, N={n}\n{}", print_graph(&prepared));
            assert!(apart.in_place.is_empty(), "{}", shown());
            assert_eq!(overlapping_pair(&prepared, &apart), None, "{}", shown());
            check_shape(&prepared, &apart).unwrap_or_else(|e| panic!("{e}: {}", shown()));
            replay(&prepared, &apart, &inputs(&prepared, n, 11), &dims)
                .unwrap_or_else(|e| panic!("{e}: {}", shown()));
            plans += 1;
            let usual = plan_memory(&prepared, &dims).expect("plans");
            if overlapping_pair(&prepared, &usual).is_some() {
                pairs_elsewhere += 1;
            }
        }
    }
    assert!(plans >= 250, "{plans} plans");
    assert!(
        pairs_elsewhere > 20,
        "{pairs_elsewhere} ordinary plans with a pair"
    );
}

/// The stream choices the scheduled plans are checked for: at most 2 and 4 streams,
/// and streams drawn at random (the executor's test mode).
fn stream_options(seed: u64) -> [ScheduleOptions; 3] {
    let max = |n| ScheduleOptions {
        max_streams: Some(n),
        ..ScheduleOptions::default()
    };
    [
        max(2),
        max(4),
        ScheduleOptions {
            max_streams: Some(4),
            random: Some(seed),
            ..ScheduleOptions::default()
        },
    ]
}

#[test]
fn plans_for_streams_never_let_concurrent_nodes_share_bytes() {
    let (mut plans, mut streams, mut reused) = (0, 0, 0);
    for seed in 0..200 {
        let g = random_graph(seed, &RandomOptions::default()).expect("builds");
        if hierarchy(&g).is_err() {
            continue;
        }
        let (prepared, _) = prepare(g.clone(), &PrepareOptions::default()).expect("prepares");
        for options in stream_options(seed) {
            let s = schedule(&prepared, &options).expect("schedules");
            let n = 3;
            let dims = HashMap::from([("N".to_string(), n as i64)]);
            let plan = plan_memory_scheduled(&prepared, &dims, &s).expect("plans");
            let sequential = plan_memory(&prepared, &dims).expect("plans");
            let checked = check_shape(&prepared, &plan)
                .and_then(|()| replay(&prepared, &plan, &inputs(&prepared, n, 11), &dims))
                .and_then(|()| check_concurrency(&prepared, &plan, &s));
            if let Err(problem) = checked {
                panic!(
                    "seed {seed}, {options:?}: {problem}\n{}",
                    print_graph(&prepared)
                );
            }
            assert!(plan.arena_bytes >= sequential.arena_bytes || plan.arena_bytes == 0);
            plans += 1;
            streams += usize::from(s.max_stream_count() > 1);
            reused += usize::from(plan.arena_bytes < plan.intermediates_bytes);
        }
    }
    eprintln!("{plans} scheduled plans, {streams} on several streams, {reused} reusing bytes");
    assert!(
        streams > plans / 4,
        "too few multi-stream schedules: {streams} of {plans}"
    );
    assert!(
        reused > plans / 10,
        "too few plans reuse bytes: {reused} of {plans}"
    );
}

#[test]
fn the_concurrency_check_sees_a_sequential_plan_run_on_streams() {
    // Two independent chains on two streams: the sequential plan reuses the first
    // chain's bytes for the second, which may run at the same time.
    let g = uop_graph::text::parse_graph(
        "input x: f32[N]\na = exp(x)\nb = sin(a)\nc = cos(x)\nd = neg(c)\ne = add(b, d)\noutput e\n",
        uop_graph::default_registry(),
    )
    .expect("parses");
    let s = schedule(
        &g,
        &ScheduleOptions {
            max_streams: Some(2),
            ..ScheduleOptions::default()
        },
    )
    .expect("schedules");
    assert_eq!(s.streams.len(), 2);
    let dims = HashMap::from([("N".to_string(), 16)]);
    let sequential = plan_memory(&g, &dims).expect("plans");
    assert!(check_concurrency(&g, &sequential, &s).is_err());
    let scheduled = plan_memory_scheduled(&g, &dims, &s).expect("plans");
    check_concurrency(&g, &scheduled, &s).expect("safe");
    assert!(scheduled.arena_bytes > sequential.arena_bytes);
}
