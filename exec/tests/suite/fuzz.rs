//! The graph text fuzzer on the executor (issue 40, item 10): the mutants of
//! `uop-graph`'s fuzzer (`graph/tests/suite/fuzz_support.rs`, included by path)
//! that parse and are small enough to run are compiled and run by the executor,
//! alternately on Cranelift and on the loop-IR interpreter. A case may fail with an
//! error; it must never panic, abort, overflow its stack or take more than its time
//! budget. CI runs [`CI_CASES`] cases; `UOP_EXEC_FUZZ_CASES=N` runs N (from
//! `UOP_EXEC_FUZZ_SEED`, default 0).

#[allow(dead_code)]
#[path = "../../../graph/tests/suite/fuzz_support.rs"]
mod fuzz_support;

use std::collections::HashMap;

use uop_exec::{ExecOptions, KernelBackend, compile_with};
use uop_graph::memory::{SizeLimit, check_sizes};
use uop_graph::text::parse_graph;
use uop_graph::{bind_graph_inputs, default_registry};

use fuzz_support::{RUN_LIMIT, case, corpus, mutated, small_inputs};

/// Cases in CI.
const CI_CASES: u64 = 400;

/// How far a case got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Reached {
    /// The text did not parse, or its sizes are too large to run here.
    NotRun,
    /// The executor refused it (preparing or compiling).
    Refused,
    /// It ran on the executor (to its results or an error).
    Ran,
}

/// Parse `text` and, when small, compile and run it on the executor on `backend`.
fn exercise(text: &str, backend: KernelBackend) -> Reached {
    let Ok(g) = parse_graph(text, default_registry()) else {
        return Reached::NotRun;
    };
    let Some(inputs) = small_inputs(&g) else {
        return Reached::NotRun;
    };
    let Ok(env) = bind_graph_inputs(&g, &inputs, &HashMap::new()) else {
        return Reached::NotRun;
    };
    let limit = SizeLimit {
        bytes: RUN_LIMIT,
        every_value: true,
    };
    if check_sizes(&g, &env, limit).is_err() {
        return Reached::NotRun;
    }
    let options = ExecOptions {
        backend,
        max_iterations: Some(1000),
        ..ExecOptions::default()
    };
    let Ok(exe) = compile_with(&g, &options) else {
        return Reached::Refused;
    };
    let _ = exe.run(&inputs);
    Reached::Ran
}

#[test]
fn mutated_graph_text_gives_errors_on_the_executor_never_panics_or_hangs() {
    let number = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let cases = number("UOP_EXEC_FUZZ_CASES", CI_CASES);
    let first = number("UOP_EXEC_FUZZ_SEED", 0);
    let corpus = corpus();
    let mut failures = Vec::new();
    let mut reached: HashMap<Reached, u64> = HashMap::new();
    for seed in first..first + cases {
        let text = mutated(&corpus, seed);
        let backend = if seed % 2 == 0 {
            KernelBackend::Cranelift
        } else {
            KernelBackend::Loops
        };
        let input = text.clone();
        match case(move || exercise(&input, backend)) {
            Ok(r) => *reached.entry(r).or_default() += 1,
            Err(what) => {
                failures.push(format!("seed {seed} ({backend:?}): {what}\n{text}"));
                if failures.len() >= 5 {
                    break;
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases (reproduce one with UOP_EXEC_FUZZ_SEED=S UOP_EXEC_FUZZ_CASES=1):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    eprintln!("{reached:?}");
    // Enough mutants reach the executor's runs, not only the parser's errors.
    let ran = reached.get(&Reached::Ran).copied().unwrap_or(0);
    assert!(ran >= cases / 16, "{reached:?}");
}
