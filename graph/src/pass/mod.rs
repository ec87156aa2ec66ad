//! Prepare (DESIGN.md §17): the graph passes, one file each, run in a fixed, documented
//! order by [`prepare`].
//!
//! | order | pass | guarantees after it ran |
//! |---|---|---|
//! | 1 | `simplify` | algebraic bypasses done: `x·1`, `x+0`, `x−0`, `x/1`, double transpose, reshape of reshape, identity reindex, `where` / `if` / `case` with a constant selector, `while` whose condition is constant false on its initial state |
//! | 2 | `fold` | no Call whose inputs are all Consts and whose output has at most `fold_budget` elements |
//! | 3 | `cse` | no two identical Calls on identical inputs in one scope, no two identical Consts |
//! | 4 | `dead` | no dead node ([`Checks::DEAD`]) |
//! | 5 | `kernels` | the calls of each scope grouped into fused Kernel nodes (`docs/graph-kernels.md`) |
//! | 6 | `consts` | every Const before every other node ([`Checks::CONSTS_FIRST`]) |
//! | 7 | `loops` | partitions numbered, the rules of §20 checked (an error names the nodes), the nodes sorted by partition, every tensor a later partition reads held by a Sink at the end ([`Checks::PARTITIONS`]; `docs/graph-looping.md`) |
//! | 8 | `memory` | every arena value's size is an expression over the input dims and `$params`: [`plan_memory`](crate::memory::plan_memory) gives a plan for any concrete dims (the pass only checks; `docs/graph-memory.md`) |
//!
//! Each pass follows seed 001's three phases through the [rewrite utilities](crate::rewrite):
//! \[A\] match with the graph read-only, \[B\] build the new nodes, \[C\] apply in one
//! step with a utility that keeps every invariant. Every pass preserves the graph
//! interpreter's results (`tests/pass_*.rs` check it on random graphs), with one
//! documented exception: `x + 0 → x` keeps `x = −0` as `−0` where IEEE addition gives
//! `+0` (XLA's simplifier makes the same choice).
//!
//! **Class flags** (Hexagon NN's `op_class_set`): a pass lists the node kinds it handles
//! ([`Classes`]); when the graph has none of them the pass does not run and the
//! report says it was skipped.
//!
//! **Rewrite budget** (`--rewrite-limit N`, a bisecting aid): every pass asks the
//! [`Budget`] before each rewrite it applies and stops when the budget is used up, so
//! with a limit of `k` exactly `min(k, all)` rewrites happen in total, each leaving a
//! valid graph that computes the same results. A pass cut short does not establish
//! its guarantee.
//!
//! **Verification**: with [`PrepareOptions::verify`] (tests, `--verify`, debug builds)
//! the input is verified, and after every pass that changed the graph the verifier
//! runs with the checks the passes so far established; a failure is an error naming
//! the pass.
//!
//! **Shared with the loop-IR passes**: the ordered list of named passes, the name
//! checks of `--disable-pass` / `--print-after` and the selection of enabled passes
//! are [`uop_codegen::pass::PassList`], used by both pipelines. The rest is not
//! shared: a loop-IR pass is an infallible function from program to program, a graph
//! pass changes the graph in place, may fail, has class flags and counts rewrites
//! against a budget; forcing both through one pass type would make the loop-IR passes
//! carry arguments they never use.
//!
//! ```
//! use uop_graph::pass::{prepare, PrepareOptions};
//! use uop_graph::text::{parse_graph, print_graph};
//! use uop_graph::default_registry;
//!
//! let g = parse_graph("input x: f32[N]\ny = exp(add(mul(x, 1), 0))\noutput y\n", default_registry())?;
//! // Without `kernels`, the result still has a text form.
//! let options = PrepareOptions {
//!     verify: true,
//!     disabled: vec!["kernels".into()],
//!     ..PrepareOptions::default()
//! };
//! let (prepared, report) = prepare(g, &options)?;
//! assert_eq!(print_graph(&prepared), "input x: f32[N]\ny = exp(x)\noutput y\n");
//! assert_eq!(report.pass("simplify").map(|p| p.rewrites), Some(2));
//! assert_eq!(report.pass("dead").map(|p| p.nodes_after), Some(2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod consts;
mod cse;
mod dead;
mod error;
mod fold;
mod kernels;
mod loops;
mod memory;
mod report;
mod simplify;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use thiserror::Error;
use uop_codegen::pass::{Named, PassError, PassList};

use crate::ir::{Graph, Kind, Op};
use crate::text::print_graph;
use crate::verify::{Checks, VerifyError, verify};

pub use consts::consts;
pub use cse::cse;
pub use dead::dead;
pub use error::PassFailure;
pub use fold::{evaluate_call, fold};
pub use kernels::kernels;
pub use loops::loops;
pub use memory::memory;
pub use report::{PassReport, Report, Status};
pub use simplify::simplify;

/// The node kinds a pass handles (Hexagon NN's class flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Classes {
    /// Any node: the pass always runs.
    Any,
    /// The pass runs only when the graph has a node of one of these kinds.
    Kinds(&'static [Kind]),
}

impl Classes {
    /// True when a graph holding the kinds `present` has something for the pass.
    pub fn present_in(&self, present: &HashSet<Kind>) -> bool {
        match self {
            Classes::Any => true,
            Classes::Kinds(ks) => ks.iter().any(|k| present.contains(k)),
        }
    }
}

/// What a pass does to the graph: rewrites it in place, asking `budget` before each
/// rewrite. An error names the node.
pub type PassFn = fn(&mut Graph, &mut Budget, &PrepareOptions) -> Result<(), PassFailure>;

/// A named graph pass.
#[derive(Clone, Copy, Debug)]
pub struct Pass {
    /// The name used by `--disable-pass`, `--print-after` and in reports.
    pub name: &'static str,
    /// One line: what the pass guarantees.
    pub doc: &'static str,
    /// The node kinds it handles; skipped when the graph has none.
    pub classes: Classes,
    /// The verifier checks that hold once the pass ran to the end.
    pub establishes: Checks,
    /// The transformation.
    pub run: PassFn,
}

impl Named for Pass {
    fn name(&self) -> &'static str {
        self.name
    }
}

const PIPELINE: PassList<Pass> = PassList::new(&[
    Pass {
        name: "simplify",
        doc: "bypasses x·1, x+0, x−0, x/1, inverse transposes, reshape chains and identity \
              reindexes, and inlines where / if / case with a constant selector and while \
              loops whose condition is false on the initial state (types unchanged)",
        classes: Classes::Kinds(&[Kind::Call, Kind::If, Kind::Case, Kind::While]),
        establishes: Checks::NONE,
        run: simplify,
    },
    Pass {
        name: "fold",
        doc: "replaces every Call whose inputs are all Consts, with at most fold_budget \
              output elements, by a Const of the value the interpreter gives",
        classes: Classes::Kinds(&[Kind::Call]),
        establishes: Checks::NONE,
        run: fold,
    },
    Pass {
        name: "cse",
        doc: "merges identical Calls on identical inputs within one scope, and Consts \
              with identical data",
        classes: Classes::Kinds(&[Kind::Call, Kind::Const]),
        establishes: Checks::NONE,
        run: cse,
    },
    Pass {
        name: "dead",
        doc: "removes every node no graph output, Sink or RETAIN node needs, in one \
              reverse sweep (a dead super node with its sub-functions)",
        classes: Classes::Any,
        establishes: Checks::DEAD,
        run: dead,
    },
    Pass {
        name: "kernels",
        doc: "groups the calls of each scope into fused Kernel nodes, each one uop program \
              (element-wise and reindex ops fuse with anything, reductions with producers \
              and element-wise consumers, contractions take element-wise epilogues)",
        classes: Classes::Kinds(&[Kind::Call]),
        establishes: Checks::NONE,
        run: kernels,
    },
    Pass {
        name: "consts",
        doc: "moves every Const to the front, right after the graph's Input node",
        classes: Classes::Kinds(&[Kind::Const]),
        establishes: Checks::CONSTS_FIRST,
        run: consts,
    },
    Pass {
        name: "loops",
        doc: "numbers the graph-looping partitions (a chunk node opens the next), checks \
              the rules of DESIGN.md §20, sorts the nodes by partition and puts every \
              tensor a later partition reads into one Sink at the end",
        classes: Classes::Kinds(&[Kind::Chunk]),
        establishes: Checks::PARTITIONS,
        run: loops,
    },
    Pass {
        name: "memory",
        doc: "checks that every intermediate's size is an expression over the input dims \
              and $params, so that plan_memory places them in one arena once the dims are \
              known (changes nothing)",
        classes: Classes::Kinds(&[
            Kind::Call,
            Kind::Kernel,
            Kind::Chunk,
            Kind::While,
            Kind::Case,
            Kind::If,
            Kind::Parallel,
            Kind::NoInline,
        ]),
        establishes: Checks::NONE,
        run: memory,
    },
]);

/// Named decisions inside passes that `PrepareOptions::disabled` (and
/// `--disable-pass`) may also name to switch them off: `split-joins` (the `kernels`
/// pass keeps a join of independent heavy branches out of their kernels,
/// [`crate::kernels::joins`]).
pub const DECISIONS: &[&str] = &[crate::kernels::joins::NAME];

/// The graph passes in the order [`prepare`] runs them.
pub fn pipeline() -> &'static [Pass] {
    PIPELINE.passes()
}

/// The graph passes' names, in order.
pub fn pass_names() -> Vec<&'static str> {
    PIPELINE.names()
}

/// After which passes [`prepare`] prints the graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PrintAfter {
    /// None.
    #[default]
    None,
    /// The passes named.
    Named(Vec<String>),
    /// Every pass that is not disabled.
    All,
}

impl PrintAfter {
    fn wants(&self, name: &str) -> bool {
        match self {
            PrintAfter::None => false,
            PrintAfter::Named(names) => names.iter().any(|n| n == name),
            PrintAfter::All => true,
        }
    }
}

/// How [`prepare`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrepareOptions {
    /// Names of passes not to run, and of [`DECISIONS`] not to take.
    pub disabled: Vec<String>,
    /// After which passes to print the graph (into [`Report::printed`]).
    pub print_after: PrintAfter,
    /// Measure each pass's wall time (otherwise the report's times are zero).
    pub time_passes: bool,
    /// Stop after this many rewrites in total (bisecting a wrong rewrite).
    pub rewrite_limit: Option<usize>,
    /// Verify the input and the graph after every pass that changed it.
    pub verify: bool,
    /// `fold` evaluates a call only when its output has at most this many elements.
    pub fold_budget: usize,
}

/// The default [`PrepareOptions::fold_budget`].
pub const FOLD_BUDGET: usize = 4096;

impl Default for PrepareOptions {
    /// Every pass, nothing printed, no limit; verification in debug builds.
    fn default() -> Self {
        PrepareOptions {
            disabled: Vec::new(),
            print_after: PrintAfter::None,
            time_passes: false,
            rewrite_limit: None,
            verify: cfg!(debug_assertions),
            fold_budget: FOLD_BUDGET,
        }
    }
}

impl PrepareOptions {
    /// Only the pass `name` (every other pass disabled), verified.
    pub fn only(name: &str) -> Self {
        PrepareOptions {
            disabled: pass_names()
                .into_iter()
                .filter(|n| *n != name)
                .map(str::to_string)
                .collect(),
            verify: true,
            ..PrepareOptions::default()
        }
    }
}

/// The rewrites a prepare run may still do (`--rewrite-limit`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    limit: Option<usize>,
    done: usize,
    refused: usize,
}

impl Budget {
    /// A budget of `limit` rewrites (`None`: unlimited).
    pub fn new(limit: Option<usize>) -> Self {
        Budget {
            limit,
            done: 0,
            refused: 0,
        }
    }

    /// Asks for one rewrite: true (and counted) when the budget allows it; false
    /// when it is used up (the pass must stop rewriting).
    pub fn spend(&mut self) -> bool {
        if self.limit.is_some_and(|l| self.done >= l) {
            self.refused += 1;
            return false;
        }
        self.done += 1;
        true
    }

    /// Rewrites still allowed (`None`: unlimited).
    pub fn remaining(&self) -> Option<usize> {
        self.limit.map(|l| l.saturating_sub(self.done))
    }

    /// Rewrites done so far.
    pub fn done(&self) -> usize {
        self.done
    }

    /// How many times a rewrite was refused.
    pub fn refused(&self) -> usize {
        self.refused
    }
}

/// Why [`prepare`] failed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PrepareError {
    /// A name in `disabled` or `print_after` is not a graph pass.
    #[error("{0}")]
    UnknownPass(#[from] PassError),
    /// The input graph does not verify.
    #[error("the input graph does not verify:\n{0}")]
    Input(VerifyError),
    /// A pass failed.
    #[error("pass `{pass}`: {error}")]
    Pass {
        /// The pass.
        pass: &'static str,
        /// What went wrong, naming the node.
        error: PassFailure,
    },
    /// The graph after a pass does not verify.
    #[error("after pass `{pass}` the graph does not verify:\n{error}")]
    Verify {
        /// The pass.
        pass: &'static str,
        /// The violations.
        error: VerifyError,
    },
}

/// Number of Kernel nodes.
fn kernel_count(graph: &Graph) -> usize {
    graph
        .nodes()
        .iter()
        .filter(|n| matches!(n.op, Op::Kernel(_)))
        .count()
}

/// Runs the pipeline on `graph` as `options` say; returns the prepared graph and what
/// each pass did.
pub fn prepare(graph: Graph, options: &PrepareOptions) -> Result<(Graph, Report), PrepareError> {
    prepare_with(PIPELINE, graph, options)
}

/// [`prepare`] with another list of passes (tests put a pass in on purpose).
pub fn prepare_with(
    passes: PassList<Pass>,
    graph: Graph,
    options: &PrepareOptions,
) -> Result<(Graph, Report), PrepareError> {
    let list = passes;
    list.check_names(
        options
            .disabled
            .iter()
            .map(String::as_str)
            .filter(|n| !DECISIONS.contains(n)),
    )?;
    if let PrintAfter::Named(names) = &options.print_after {
        list.check_names(names.iter().map(String::as_str))?;
    }
    let mut graph = graph;
    if options.verify {
        verify(&graph, Checks::NONE).map_err(PrepareError::Input)?;
    }
    let mut budget = Budget::new(options.rewrite_limit);
    let mut checks = Checks::NONE;
    let mut report = Report::default();
    for pass in list.passes() {
        let (nodes_before, kernels_before) = (graph.len(), kernel_count(&graph));
        let mut entry = PassReport {
            name: pass.name,
            status: Status::Disabled,
            wall: Duration::ZERO,
            nodes_before,
            nodes_after: nodes_before,
            kernels_before,
            kernels_after: kernels_before,
            changed: false,
            rewrites: 0,
        };
        if PassList::<Pass>::is_disabled(pass.name, &options.disabled) {
            report.passes.push(entry);
            continue;
        }
        let present: HashSet<Kind> = graph.nodes().iter().map(|n| n.op.class()).collect();
        if pass.classes.present_in(&present) {
            let start = options.time_passes.then(Instant::now);
            let before = budget.done();
            let refused = budget.refused();
            (pass.run)(&mut graph, &mut budget, options).map_err(|error| PrepareError::Pass {
                pass: pass.name,
                error,
            })?;
            entry.wall = start.map_or(Duration::ZERO, |s| s.elapsed());
            entry.status = Status::Ran;
            entry.rewrites = budget.done() - before;
            entry.changed = entry.rewrites > 0;
            if budget.refused() == refused {
                checks |= pass.establishes;
            }
        } else {
            entry.status = Status::Skipped;
            // Nothing of its class: what it guarantees holds already.
            checks |= pass.establishes;
        }
        entry.nodes_after = graph.len();
        entry.kernels_after = kernel_count(&graph);
        if options.verify && entry.changed {
            verify(&graph, checks).map_err(|error| PrepareError::Verify {
                pass: pass.name,
                error,
            })?;
        }
        if options.print_after.wants(pass.name) {
            report.printed.push((pass.name, print_graph(&graph)));
        }
        report.passes.push(entry);
    }
    report.rewrites = budget.done();
    Ok((graph, report))
}
