//! Memory plans of random graphs (`uop_graph::random`), prepared by the whole
//! pipeline and as written (no kernels: Calls only), for two sizes of `N`: every
//! plan passes the static checks and the replay of the graph's own run on the
//! plan's arena (`memory_support`), and the constructs the plan treats specially
//! occur often enough for the property not to be vacuous.

mod memory_support;

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_graph::memory::{Carried, plan_memory};
use uop_graph::pass::{PrepareOptions, prepare};
use uop_graph::random::{RandomOptions, random_graph};
use uop_graph::text::print_graph;
use uop_graph::{Graph, hierarchy};

use memory_support::{check_shape, replay};

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
