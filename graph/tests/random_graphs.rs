//! Properties of random graphs (DESIGN.md §22): a generated graph with a valid
//! hierarchy prints, parses back and prints the same text, and the parsed graph
//! computes what the generated one does. A failure shrinks to a `.uop` reproducer.
//!
//! Known gap (reported): a dead value inside a sub-function that reads parameters of
//! two nested functions whose inner super node does not itself depend on the outer
//! one has no placement in the hierarchy (`hierarchy` reports `NotVisible`); such
//! graphs are counted and must stay a minority.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::random::{RandomOptions, random_graph, reproducer, without_dead};
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Graph, Op, default_registry, hierarchy, run};

/// What is wrong with `g` under the round-trip property, if anything.
fn round_trip_problem(g: &Graph) -> Option<String> {
    if let Err(e) = hierarchy(g) {
        return Some(format!("no hierarchy: {e}"));
    }
    let text = print_graph(g);
    let parsed = match parse_graph(&text, default_registry()) {
        Ok(p) => p,
        Err(e) => return Some(format!("the print does not parse: {e}")),
    };
    let again = print_graph(&parsed);
    if again != text {
        return Some(format!("the print is not stable; second print:\n{again}"));
    }
    // Same numbers (N = 3), when the generated graph runs at all.
    let inputs: Vec<Tensor> = g
        .input_node()
        .map(|n| {
            n.outputs
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    let shape = if t.shape.is_empty() { vec![] } else { vec![3] };
                    Tensor::random(DType::F32, shape, 11 + k as u64)
                })
                .collect()
        })
        .unwrap_or_default();
    if let Ok(expected) = run(g, &inputs, &HashMap::new()) {
        match run(&parsed, &inputs, &HashMap::new()) {
            Ok(found) => {
                let bits = |ts: &[Tensor]| -> Vec<Vec<u64>> {
                    ts.iter()
                        .map(|t| t.data.iter().map(|v| v.to_bits()).collect())
                        .collect()
                };
                if bits(&found) != bits(&expected) {
                    return Some("the parsed graph computes other numbers".into());
                }
            }
            Err(e) => return Some(format!("the parsed graph does not run: {e}")),
        }
    }
    None
}

#[test]
fn random_graphs_round_trip_through_text() {
    let options = RandomOptions::default();
    let mut kinds: HashMap<&'static str, usize> = HashMap::new();
    let mut checked = 0;
    for seed in 0..300 {
        let g = random_graph(seed, &options).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        if hierarchy(&g).is_err() {
            continue;
        }
        checked += 1;
        for n in g.nodes() {
            *kinds.entry(n.op.kind()).or_default() += 1;
        }
        if let Some(problem) = round_trip_problem(&g) {
            let repro = reproducer(
                &g,
                &|g| round_trip_problem(g).is_some(),
                &format!("seed {seed}: {problem}"),
            );
            panic!("seed {seed}: {problem}\nreproducer:\n{repro}");
        }
    }
    assert!(
        checked >= 200,
        "only {checked} of 300 graphs have a hierarchy"
    );
    // The generator exercises every construct it promises.
    for kind in [
        "while", "case", "if", "parallel", "noinline", "chunk", "const", "call",
    ] {
        assert!(
            kinds.get(kind).copied().unwrap_or(0) > 10,
            "{kind}: {kinds:?}"
        );
    }
}

#[test]
fn generated_graphs_are_deterministic_and_nest() {
    let options = RandomOptions::default();
    let a = random_graph(42, &options).expect("builds");
    let b = random_graph(42, &options).expect("builds");
    assert_eq!(print_graph(&a), print_graph(&b));
    // Some seed nests a super node inside a sub-function and closes over an outer value.
    let nested = (0..100).any(|seed| {
        let g = random_graph(seed, &options).expect("builds");
        let h = hierarchy(&g).expect("valid");
        g.nodes()
            .iter()
            .any(|n| n.op.is_super() && h.scope_of(n.id).is_some_and(|s| s.is_some()))
    });
    assert!(nested);
}

#[test]
fn the_shrinker_keeps_the_failure_and_drops_the_rest() {
    let options = RandomOptions::default();
    // A stand-in failure: "the graph has a `while`".
    let has_while = |g: &Graph| g.nodes().iter().any(|n| matches!(n.op, Op::While { .. }));
    let seed = (0..100)
        .find(|s| has_while(&without_dead(&random_graph(*s, &options).expect("builds"))))
        .expect("a seed with a live while");
    let g = random_graph(seed, &options).expect("builds");
    let text = reproducer(&g, &has_while, "has a while");
    let small = parse_graph(
        text.split_once('\n').map_or("", |(_, t)| t),
        default_registry(),
    )
    .expect("the reproducer parses");
    assert!(has_while(&small));
    assert_eq!(small.interface.outputs.len(), 1, "{text}");
    assert!(small.len() < g.len(), "{text}");
    assert!(text.starts_with("# has a while\n"));
}
