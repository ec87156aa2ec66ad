//! A fuzzer for hostile graph text (issue 40, item 10), beside the random-graph
//! differential tests: valid graph text (the example graphs and printed random
//! graphs) mutated — tokens deleted and duplicated, names swapped, numbers made huge,
//! calls nested deeply, the text cut short — then parsed, prepared (every pass) and,
//! when its sizes are small, run on the graph interpreter. A case may fail with an
//! error; it must never panic, overflow its stack or take more than its time budget.
//!
//! Each case runs on a thread with the main thread's stack (8 MiB) and a budget
//! (`fuzz_support`); a failure prints its seed and the mutated text. CI runs [`CI_CASES`]
//! cases; `UOP_GRAPH_FUZZ_CASES=N` runs N (from `UOP_GRAPH_FUZZ_SEED`, default 0).

use std::collections::HashMap;

use uop_graph::interp::{RunOptions, run_with};
use uop_graph::memory::{SizeLimit, check_sizes};
use uop_graph::pass::{PrepareOptions, prepare};
use uop_graph::text::parse_graph;
use uop_graph::{bind_graph_inputs, default_registry};

use crate::fuzz_support::{RUN_LIMIT, case, corpus, mutated, small_inputs};

/// Cases in CI.
const CI_CASES: u64 = 300;

/// How far a case got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Reached {
    /// The text did not parse (an error).
    Text,
    /// It parsed (and went through the passes).
    Parsed,
    /// It ran on the interpreter (to its results or an error).
    Ran,
}

/// Parse, prepare and (when small) run `text`.
fn exercise(text: &str) -> Reached {
    let Ok(g) = parse_graph(text, default_registry()) else {
        return Reached::Text;
    };
    let _ = prepare(g.clone(), &PrepareOptions::default());
    // The test's own inputs (named dims 3) must be small enough to make.
    let Some(inputs) = small_inputs(&g) else {
        return Reached::Parsed;
    };
    let Ok(env) = bind_graph_inputs(&g, &inputs, &HashMap::new()) else {
        return Reached::Parsed;
    };
    let limit = SizeLimit {
        bytes: RUN_LIMIT,
        every_value: true,
    };
    if check_sizes(&g, &env, limit).is_err() {
        return Reached::Parsed;
    }
    let options = RunOptions {
        max_iterations: Some(1000),
    };
    let _ = run_with(&g, &inputs, &HashMap::new(), &options);
    Reached::Ran
}

#[test]
fn mutated_graph_text_gives_errors_never_panics_or_hangs() {
    let cases: u64 = std::env::var("UOP_GRAPH_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_CASES);
    let first: u64 = std::env::var("UOP_GRAPH_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let corpus = corpus();
    assert!(corpus.len() >= 15, "{} texts", corpus.len());
    let mut failures = Vec::new();
    let mut reached: HashMap<Reached, u64> = HashMap::new();
    for seed in first..first + cases {
        let text = mutated(&corpus, seed);
        let input = text.clone();
        match case(move || exercise(&input)) {
            Ok(r) => *reached.entry(r).or_default() += 1,
            Err(what) => {
                failures.push(format!("seed {seed}: {what}\n{text}"));
                if failures.len() >= 5 {
                    break;
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases (reproduce one with UOP_GRAPH_FUZZ_SEED=S UOP_GRAPH_FUZZ_CASES=1):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // The mutations leave enough valid graphs to reach the passes and the
    // interpreter, not only the parser's errors.
    let at = |r| reached.get(&r).copied().unwrap_or(0);
    assert!(
        at(Reached::Parsed) + at(Reached::Ran) >= cases / 8,
        "{reached:?}"
    );
    assert!(at(Reached::Ran) >= cases / 16, "{reached:?}");
}
