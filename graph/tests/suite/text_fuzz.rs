//! A fuzzer for hostile graph text (issue 40, item 10), beside the random-graph
//! differential tests: valid graph text (the example graphs and printed random
//! graphs) mutated — tokens deleted and duplicated, names swapped, numbers made huge,
//! calls nested deeply, the text cut short — then parsed, prepared (every pass) and,
//! when its sizes are small, run on the graph interpreter. A case may fail with an
//! error; it must never panic, overflow its stack or take more than its time budget.
//!
//! Each case runs on a thread with the main thread's stack (8 MiB) and a budget of
//! [`BUDGET`]; a failure prints its seed and the mutated text. CI runs [`CI_CASES`]
//! cases; `UOP_GRAPH_FUZZ_CASES=N` runs N (from `UOP_GRAPH_FUZZ_SEED`, default 0).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use uop_graph::interp::{RunOptions, run_with};
use uop_graph::memory::{SizeLimit, check_sizes};
use uop_graph::pass::{PrepareOptions, prepare};
use uop_graph::random::{RandomOptions, random_graph, random_inputs};
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{bind_graph_inputs, default_registry};

/// Cases in CI.
const CI_CASES: u64 = 300;

/// The most one case may take (parse, prepare and run), on a busy machine.
const BUDGET: Duration = Duration::from_secs(20);

/// The most bytes any one value of a case that runs may have.
const RUN_LIMIT: u64 = 16 << 20;

/// splitmix64: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The texts mutations start from.
fn corpus() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/graphs");
    let mut texts: Vec<String> = std::fs::read_dir(&dir)
        .expect("examples/graphs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "uop"))
        .map(|p| std::fs::read_to_string(p).expect("readable"))
        .collect();
    texts.sort();
    let options = RandomOptions::default();
    for seed in 0..12 {
        if let Ok(g) = random_graph(seed, &options) {
            texts.push(print_graph(&g));
        }
    }
    texts
}

/// Words, numbers, single punctuation and runs of blanks, in order: joined they are
/// the text again.
fn tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut token = c.to_string();
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
        if word(c) {
            while let Some(&d) = chars.peek().filter(|d| word(**d)) {
                token.push(d);
                chars.next();
            }
        } else if c == ' ' {
            while let Some(&d) = chars.peek().filter(|d| **d == ' ') {
                token.push(d);
                chars.next();
            }
        }
        out.push(token);
    }
    out
}

const HUGE: &[&str] = &[
    "0",
    "-1",
    "2147483648",
    "1099511627776",
    "4611686018427387904",
    "9223372036854775807",
    "99999999999999999999",
    "1e300",
    "nan",
    "inf",
];

/// One mutation of `t`.
fn mutate(t: &mut Vec<String>, rng: &mut Rng) {
    if t.is_empty() {
        return;
    }
    let is_word = |s: &str| s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    let is_number = |s: &str| s.starts_with(|c: char| c.is_ascii_digit());
    let k = rng.below(t.len());
    match rng.below(8) {
        0 => {
            t.remove(k);
        }
        1 => {
            let dup = t[k].clone();
            t.insert(k, dup);
        }
        2 => {
            // Swap two names.
            let words: Vec<usize> = (0..t.len()).filter(|&i| is_word(&t[i])).collect();
            if words.len() >= 2 {
                let a = words[rng.below(words.len())];
                let b = words[rng.below(words.len())];
                t.swap(a, b);
            }
        }
        3 => {
            // A number made huge (or odd).
            let numbers: Vec<usize> = (0..t.len()).filter(|&i| is_number(&t[i])).collect();
            let at = numbers.get(rng.below(numbers.len())).copied().unwrap_or(k);
            t[at] = HUGE[rng.below(HUGE.len())].to_string();
        }
        4 => {
            // A name replaced by another name of the text.
            let words: Vec<usize> = (0..t.len()).filter(|&i| is_word(&t[i])).collect();
            if let (Some(&a), Some(&b)) = (
                words.get(rng.below(words.len())),
                words.get(rng.below(words.len())),
            ) {
                t[a] = t[b].clone();
            }
        }
        5 => {
            // Deep nesting: a value wrapped in many calls.
            let words: Vec<usize> = (0..t.len()).filter(|&i| is_word(&t[i])).collect();
            if let Some(&a) = words.get(rng.below(words.len())) {
                let depth = [8, 100, 3000][rng.below(3)];
                t[a] = format!("{}{}{}", "neg(".repeat(depth), t[a], ")".repeat(depth));
            }
        }
        6 => {
            // Punctuation where it does not belong.
            let junk = ["(", ")", "{", "}", ",", "=", ";", "\n", "$", "[", "]", "#"];
            t.insert(k, junk[rng.below(junk.len())].to_string());
        }
        _ => {
            // Cut short.
            t.truncate(k);
        }
    }
}

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
    let small_inputs = g.input_node().is_some_and(|n| {
        n.outputs.iter().all(|t| {
            t.shape
                .iter()
                .try_fold(8u64, |acc, d| {
                    let v = match d {
                        uop_codegen::index::Expr::Int(v) => u64::try_from(*v).ok()?,
                        _ => 3,
                    };
                    acc.checked_mul(v)
                })
                .is_some_and(|b| b <= RUN_LIMIT)
        })
    });
    if !small_inputs {
        return Reached::Parsed;
    }
    let inputs = random_inputs(&g, 3, 7);
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

/// Runs `text` on a thread of its own: how far it got, or what went wrong.
fn case(text: String) -> Result<Reached, String> {
    let (send, receive) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let _ = send.send(exercise(&text));
        })
        .expect("a thread");
    match receive.recv_timeout(BUDGET) {
        Ok(reached) => Ok(reached),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("took more than {BUDGET:?}")),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(match worker.join() {
            Err(panic) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .map_or("panicked".into(), |m| format!("panicked: {m}")),
            Ok(()) => "ended without finishing".into(),
        }),
    }
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
        let mut rng = Rng(seed);
        let mut t = tokens(&corpus[rng.below(corpus.len())]);
        for _ in 0..1 + rng.below(3) {
            mutate(&mut t, &mut rng);
        }
        let text: String = t.concat();
        match case(text.clone()) {
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
