//! The mutation side of the graph text fuzzers (issue 40, item 10), shared by
//! `uop-graph`'s (parse, prepare, the interpreter: `text_fuzz.rs`) and
//! `uop-exec`'s (the executor: `exec/tests/suite/fuzz.rs`, which includes this file
//! by path): valid graph text (the example graphs and printed random graphs)
//! mutated — tokens deleted and duplicated, names swapped, numbers made huge, calls
//! nested deeply, the text cut short — and each case run on a thread of its own
//! with the main thread's stack and a time budget.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use uop_codegen::tensor::Tensor;
use uop_graph::Graph;
use uop_graph::random::{RandomOptions, random_graph, random_inputs};
use uop_graph::text::print_graph;

/// The most one case may take, on a busy machine.
pub const BUDGET: Duration = Duration::from_secs(20);

/// The most bytes any one value of a case that runs may have.
pub const RUN_LIMIT: u64 = 16 << 20;

/// splitmix64: deterministic and dependency-free.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The texts mutations start from.
pub fn corpus() -> Vec<String> {
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
pub fn tokens(text: &str) -> Vec<String> {
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
pub fn mutate(t: &mut Vec<String>, rng: &mut Rng) {
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

/// The text of case `seed`: one text of `corpus` mutated one to three times.
pub fn mutated(corpus: &[String], seed: u64) -> String {
    let mut rng = Rng(seed);
    let mut t = tokens(&corpus[rng.below(corpus.len())]);
    for _ in 0..1 + rng.below(3) {
        mutate(&mut t, &mut rng);
    }
    t.concat()
}

/// Random inputs for `g` (named dims 3), when every input is small enough to make.
pub fn small_inputs(g: &Graph) -> Option<Vec<Tensor>> {
    let small = g.input_node().is_some_and(|n| {
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
    small.then(|| random_inputs(g, 3, 7))
}

/// Runs `work` on a thread of its own: its result, or what went wrong (a panic,
/// or more than [`BUDGET`]).
pub fn case<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (send, receive) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let _ = send.send(work());
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
