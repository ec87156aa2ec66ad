//! Greedy shrinking of a failing program to a small `.uop` reproducer.
//!
//! [`shrink`] tries one small edit at a time and keeps it when the program is
//! still valid, strictly smaller and still fails:
//!
//! - drop an output (nodes only it needed go with it), or output one of its
//!   operands instead;
//! - replace a node by one of its operands of the same shape and type;
//! - replace a node by a fresh input of its shape, when every size of that shape is
//!   a named dim or a literal (an input cannot declare `N - 1`; such nodes are left);
//! - remove an unused input, an unused `$param`, an assertion;
//! - simplify a `reindex` / `reindex_reduce` index or an explicit shape to one of
//!   its parts (`i0 + 1` to `i0`, `N - 1 - i0` to `i0`), set a fill to 0;
//! - shrink a literal size (`5` to `2`, `1`).
//!
//! Every candidate goes through the `.uop` text: it is printed with
//! [`print_program`] and parsed back, so the builder's checks decide validity, nodes
//! no output needs disappear, and the result always prints as a reproducer that
//! parses back. "Smaller" is a lexicographic measure (computed nodes, inputs, outputs,
//! params, assertions, expression size, literal sizes, fills), so shrinking ends.

use crate::index::Expr;
use crate::text::{Registry, parse_program, print_program};
use crate::uop::{NodeId, Program, Uop};

use super::differential::{CheckOptions, Mismatch, Stage, check_program};
use super::generate::{Case, GenConfig, random_case_with};

/// Most candidates tried (each costs one `still_fails` call) before giving up
/// with what has been reached; keeps a slow predicate from shrinking for hours.
pub const MAX_CANDIDATES: usize = 4000;

/// The smallest program reachable from `p` by greedy edits (see the module docs)
/// for which `still_fails` holds; `p` itself if no edit keeps it failing.
///
/// `still_fails` is expected to hold for `p`; it is called on candidates only.
///
/// ```
/// use uop_codegen::testing::{GenConfig, random_program, shrink};
/// use uop_codegen::uop::Uop;
///
/// let program = random_program(11, &GenConfig::default());
/// let has_reindex = |p: &uop_codegen::uop::Program| {
///     p.nodes.iter().any(|n| matches!(n.op, Uop::Reindex { .. }))
/// };
/// if has_reindex(&program) {
///     let small = shrink(&program, has_reindex);
///     assert!(has_reindex(&small));
///     assert!(small.nodes.len() <= program.nodes.len());
/// }
/// ```
pub fn shrink(p: &Program, still_fails: impl Fn(&Program) -> bool) -> Program {
    let mut current = p.clone();
    let mut size = Size::of(&current);
    let mut tried = 0;
    'outer: while tried < MAX_CANDIDATES {
        for candidate in candidates(&current) {
            let Some(candidate) = reparse(&candidate) else {
                continue;
            };
            let candidate_size = Size::of(&candidate);
            if candidate_size >= size {
                continue;
            }
            tried += 1;
            if still_fails(&candidate) {
                current = candidate;
                size = candidate_size;
                continue 'outer;
            }
            if tried >= MAX_CANDIDATES {
                break;
            }
        }
        break;
    }
    current
}

/// A program, a case it fails on, and how.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The failing program.
    pub program: Program,
    /// Inputs and params it fails on.
    pub case: Case,
    /// The disagreement [`check_program`] found.
    pub mismatch: Mismatch,
}

/// Cases tried per candidate in [`shrink_failure`]: a smaller program gets fresh
/// random cases, and one of them must reproduce the failure.
pub const CASE_TRIES: u64 = 4;

/// Shrinks a failure found by [`check_program`]: a candidate still fails when one of
/// [`CASE_TRIES`] cases from [`random_case_with`] (seeds `case_seed`, `case_seed + 1`,
/// ...) gives a mismatch at the *same stage*, so the shrunk program shows the same
/// bug rather than whatever else breaks on the way. Returns the smallest program,
/// with the case and mismatch that reproduce it.
pub fn shrink_failure(
    failure: &Failure,
    cfg: &GenConfig,
    opts: &CheckOptions,
    case_seed: u64,
) -> Failure {
    let stage = &failure.mismatch.stage;
    let small = shrink(&failure.program, |q| {
        failing_case(q, stage, cfg, opts, case_seed).is_some()
    });
    match failing_case(&small, stage, cfg, opts, case_seed) {
        Some((case, mismatch)) => Failure {
            program: small,
            case,
            mismatch,
        },
        // Nothing was shrunk and the original case is not among the tried ones.
        None => failure.clone(),
    }
}

fn failing_case(
    p: &Program,
    stage: &Stage,
    cfg: &GenConfig,
    opts: &CheckOptions,
    case_seed: u64,
) -> Option<(Case, Mismatch)> {
    (0..CASE_TRIES).find_map(|k| {
        let case = random_case_with(p, case_seed.wrapping_add(k), cfg).ok()?;
        match check_program(p, &case, opts) {
            Err(m) if m.stage == *stage => Some((case, m)),
            _ => None,
        }
    })
}

/// A program printed as `.uop` text, and whether that text parses back to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reproducer {
    /// The `.uop` text.
    pub text: String,
    /// `None` when the text parses back to the same program; otherwise what went wrong
    /// (the text is still the best available description of the program).
    pub problem: Option<String>,
}

/// Prints `p` with [`print_program`] and checks that the text parses back to `p`.
pub fn reproducer(p: &Program) -> Reproducer {
    let text = print_program(p);
    let problem = match parse_program(&text, &Registry::new()) {
        Ok(back) if back == *p => None,
        Ok(_) => Some("the printed program parses back to a different program".into()),
        Err(e) => Some(format!("the printed program does not parse back: {e}")),
    };
    Reproducer { text, problem }
}

/// The program as the text format sees it, or `None` if it is not a valid program.
fn reparse(p: &Program) -> Option<Program> {
    parse_program(&print_program(p), &Registry::new()).ok()
}

/// The shrinking measure, compared lexicographically (field order matters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Size {
    computed: usize,
    inputs: usize,
    outputs: usize,
    params: usize,
    assertions: usize,
    expr_nodes: usize,
    literals: u64,
    fills: usize,
}

impl Size {
    fn of(p: &Program) -> Size {
        let mut expr_nodes = 0;
        let mut literals = 0u64;
        let mut count = |e: &Expr| {
            e.visit(&mut |sub| {
                expr_nodes += 1;
                if let Expr::Int(v) = sub {
                    literals = literals.saturating_add(v.unsigned_abs());
                }
            })
        };
        for node in &p.nodes {
            node.shape.iter().for_each(&mut count);
            if let Uop::Reindex { index, .. } | Uop::ReindexReduce { index, .. } = &node.op {
                index.iter().for_each(&mut count);
            }
        }
        for (a, b) in &p.assertions {
            count(a);
            count(b);
        }
        Size {
            computed: p.nodes.len() - p.inputs.len(),
            inputs: p.inputs.len(),
            outputs: p.outputs.len(),
            params: p.params.len(),
            assertions: p.assertions.len(),
            expr_nodes,
            literals,
            fills: p
                .nodes
                .iter()
                .filter(|n| matches!(n.op, Uop::Reindex { fill, .. } if fill != 0.0))
                .count(),
        }
    }
}

/// Every single-edit candidate, roughly the biggest reductions first. Candidates
/// need not be valid: the caller reparses them.
fn candidates(p: &Program) -> Vec<Program> {
    let mut out = Vec::new();
    if p.outputs.len() > 1 {
        for k in 0..p.outputs.len() {
            let mut c = p.clone();
            c.outputs.remove(k);
            out.push(c);
        }
    }
    for (k, o) in p.outputs.iter().enumerate() {
        for x in p.node(*o).op.inputs() {
            let mut c = p.clone();
            c.outputs[k] = x;
            if p.outputs.contains(&x) {
                c.outputs.remove(k);
            }
            out.push(c);
        }
    }
    let computed = (0..p.nodes.len())
        .map(NodeId)
        .filter(|id| p.node(*id).op != Uop::Input);
    for id in computed.clone() {
        let node = p.node(id);
        for x in node.op.inputs() {
            let operand = p.node(x);
            if operand.shape == node.shape && operand.dtype == node.dtype {
                out.push(replace_uses(p, id, x));
            }
        }
    }
    for id in computed.clone() {
        if let Some(c) = as_input(p, id) {
            out.push(c);
        }
    }
    for unused in p.unused_inputs() {
        let mut c = p.clone();
        c.inputs.retain(|i| *i != unused);
        out.push(c);
    }
    for k in 0..p.params.len() {
        let mut c = p.clone();
        c.params.remove(k);
        out.push(c);
    }
    for k in 0..p.assertions.len() {
        let mut c = p.clone();
        c.assertions.remove(k);
        out.push(c);
    }
    for id in computed {
        simpler_uops(p, id, &mut out);
    }
    for &id in &p.inputs {
        for (axis, dim) in p.node(id).shape.iter().enumerate() {
            for smaller in smaller_literals(dim) {
                let mut c = p.clone();
                c.nodes[id.0].shape[axis] = smaller;
                out.push(c);
            }
        }
    }
    out
}

/// `p` with every use of `old` (operands and outputs) reading `new` instead.
fn replace_uses(p: &Program, old: NodeId, new: NodeId) -> Program {
    let mut c = p.clone();
    let swap = |n: NodeId| if n == old { new } else { n };
    for node in &mut c.nodes {
        node.op = node.op.map_nodes(&swap);
    }
    let mut outputs = Vec::new();
    for o in c.outputs.iter().map(|o| swap(*o)) {
        if !outputs.contains(&o) {
            outputs.push(o);
        }
    }
    c.outputs = outputs;
    c
}

/// `p` with node `id` turned into an input of the same name and shape, if an input
/// can declare that shape.
fn as_input(p: &Program, id: NodeId) -> Option<Program> {
    let declarable = p.node(id).shape.iter().all(|d| match d {
        Expr::Int(v) => *v >= 0,
        Expr::Name(_) => true,
        _ => false,
    });
    if !declarable {
        return None;
    }
    let mut c = p.clone();
    c.nodes[id.0].op = Uop::Input;
    c.inputs.push(id);
    Some(c)
}

/// Simpler index expressions, explicit shapes and fills of one node.
fn simpler_uops(p: &Program, id: NodeId, out: &mut Vec<Program>) {
    let node = p.node(id);
    let with_op = |op: Uop| {
        let mut c = p.clone();
        c.nodes[id.0].op = op;
        c
    };
    match &node.op {
        Uop::Reindex { x, index, fill } => {
            if *fill != 0.0 {
                out.push(with_op(Uop::Reindex {
                    x: *x,
                    index: index.clone(),
                    fill: 0.0,
                }));
            }
            for (k, e) in index.iter().enumerate() {
                for simpler in simpler_exprs(e) {
                    let mut index = index.clone();
                    index[k] = simpler;
                    out.push(with_op(Uop::Reindex {
                        x: *x,
                        index,
                        fill: *fill,
                    }));
                }
            }
        }
        Uop::ReindexReduce { x, index, op } => {
            for (k, e) in index.iter().enumerate() {
                for simpler in simpler_exprs(e) {
                    let mut index = index.clone();
                    index[k] = simpler;
                    out.push(with_op(Uop::ReindexReduce {
                        x: *x,
                        index,
                        op: *op,
                    }));
                }
            }
        }
        _ => {}
    }
    // Only these uops write their shape out; the others derive it from operands.
    if matches!(
        node.op,
        Uop::Reindex { .. } | Uop::ReindexReduce { .. } | Uop::Iota { .. }
    ) {
        for (axis, dim) in node.shape.iter().enumerate() {
            for simpler in simpler_exprs(dim).into_iter().chain(smaller_literals(dim)) {
                let mut c = p.clone();
                c.nodes[id.0].shape[axis] = simpler;
                out.push(c);
            }
        }
    }
}

/// The proper parts of `e` (each smaller), and `0` when `e` is compound.
fn simpler_exprs(e: &Expr) -> Vec<Expr> {
    let mut parts: Vec<Expr> = Vec::new();
    e.visit(&mut |sub| {
        if sub != e && !parts.contains(sub) {
            parts.push(sub.clone());
        }
    });
    if !parts.is_empty() && !parts.contains(&Expr::Int(0)) {
        parts.push(Expr::Int(0));
    }
    parts
}

/// `1` and half of a literal size above 1.
fn smaller_literals(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::Int(v) if *v > 2 => vec![Expr::Int(1), Expr::Int(v / 2)],
        Expr::Int(2) => vec![Expr::Int(1)],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::parse_expr;

    fn expr(s: &str) -> Expr {
        parse_expr(s).unwrap_or_else(|d| panic!("{d}"))
    }

    #[test]
    fn simpler_expressions_are_the_parts() {
        let parts = simpler_exprs(&expr("i0 + 1"));
        assert!(parts.contains(&expr("i0")));
        assert!(parts.contains(&expr("1")));
        assert!(parts.contains(&expr("0")));
        assert!(simpler_exprs(&expr("i0")).is_empty());
    }

    #[test]
    fn literal_sizes_shrink_towards_one() {
        assert_eq!(smaller_literals(&expr("5")), vec![expr("1"), expr("2")]);
        assert_eq!(smaller_literals(&expr("2")), vec![expr("1")]);
        assert!(smaller_literals(&expr("1")).is_empty());
        assert!(smaller_literals(&expr("N")).is_empty());
    }
}
