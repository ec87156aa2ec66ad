//! The loop-IR verifier: checks the invariants of [`ir`](super::ir) and the
//! guarantees each schedule mark states, without changing the program. Tests run
//! it after every pass ([`PassOptions::verify_each_pass`](crate::pass::PassOptions));
//! a backend may then trust a mark instead of proving it again.
//!
//! It reports every violation it finds, each naming where it is (`block 2, loop i3`,
//! `tensor t`) and what is wrong. What it checks:
//!
//! - **Declarations.** Every access names a declared tensor with as many
//!   subscripts as axes; inputs and outputs are listed once each, with their kind;
//!   nothing stores into an input; a named size is an axis of an input (that is
//!   where sizes come from at run time); every `$param` is declared.
//! - **Scope.** Loop ids are unique within a block; an index expression uses only
//!   the variables of the loops enclosing it (a loop's bounds only those outside
//!   it); a carried variable is declared once per block and read or updated only
//!   where it is live (at or inside the loop that resets it), with its own operator.
//! - **Bounds where statically known.** An access not marked checked whose
//!   subscript and axis size have constant ranges (loops with literal bounds) is
//!   in range.
//! - **Marks** (what [`Schedule`](super::Schedule) and [`Tile`](super::Tile)
//!   promise): at most one `parallel` loop per block, and an inner parallel loop's
//!   range does not depend on the loops outside; `pieces` only on the outermost
//!   loop of a block that reduces into its own carried variables and writes only
//!   after its nest; `split` only on the innermost loop; `tile` on a loop with a
//!   parent, carried variables of its own and reduction loops inside that only
//!   update them (and with `block reduction`, statements that only store those
//!   variables); `blocked` on the innermost loop of an element-wise nest (nothing
//!   carried, statements only in that loop) with a parent whose variable its range
//!   does not use; `jammed` on an innermost loop whose rows are
//!   [`jammable`](super::analysis::jammable) with its parent (the whole guarantee);
//!   `chunked` on an innermost loop that is [`chunkable`](super::analysis::chunkable)
//!   (the structural half: whether its math pays is the pass's judgement);
//!   `line split` on an innermost loop, neither `split` nor `blocked`, with a
//!   [`line_store`](super::analysis::line_store) (the whole guarantee); a `split`
//!   mark's aligned load is an [`alignable`](super::analysis::alignable) load of
//!   the loop (the whole guarantee; which load pays is the pass's judgement);
//!   the loads `tile(packed ..)` names are [`packable`](super::analysis::packable)
//!   and those `rows(packed ..)` names [`row_packable`](super::analysis::row_packable)
//!   (the whole guarantee); `parallel(lines ..)` sits on an inner parallel loop
//!   and names a write that is [`line_aligned`](super::analysis::line_aligned);
//!   `joined` only on the outermost loop of a block after another
//!   whose outermost loop has the same range (sizes equal by name or assertion) and
//!   the same `parallel`; a temporary kept [one row at a time](super::TensorDecl::row_local)
//!   is touched only by one group of joined blocks, each access having the bare
//!   variable of its block's outermost loop on that axis.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::index::{Expr, Interval, Ranges};

use super::analysis::{
    ShapeGroups, alignable, block_accesses, body_accesses, chunkable, jammable, line_aligned,
    line_store, loads, packable, row_packable,
};
use super::ir::{
    Access, Block, LoopId, LoopProgram, Stmt, Subscript, TensorId, TensorKind, Value, VarId,
};

/// One violation: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Where: `block 2, loop i3`, `block 0`, `tensor t`, `program`.
    pub at: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

/// Every violation the verifier found in a program (never empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The violations, in program order.
    pub violations: Vec<Violation>,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.violations.iter().map(|v| v.to_string()).collect();
        write!(f, "invalid loop IR: {}", lines.join("; "))
    }
}

impl std::error::Error for VerifyError {}

/// Checks `p` against the invariants in the module docs.
///
/// ```
/// use uop_codegen::loops::{parse_program, verify};
/// let good = parse_program("input  x: f32[N]\noutput y: f32[N]\nblock 0 {\n  for i0 in 0..N [split] {\n    y[i0] = x[i0]\n  }\n}\n")?;
/// assert!(verify(&good).is_ok());
/// let bad = parse_program("input  x: f32[N]\noutput y: f32[N]\nblock 0 {\n  for i0 in 0..N {\n    y[i0] = x[i1]\n  }\n}\n")?;
/// assert!(verify(&bad).unwrap_err().to_string().contains("block 0, loop i0: `i1` is not a loop"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// A [`VerifyError`] listing every violation.
pub fn verify(p: &LoopProgram) -> Result<(), VerifyError> {
    let mut v = Verifier {
        p,
        out: Vec::new(),
        sizes: HashSet::new(),
        groups: ShapeGroups::new(p),
    };
    v.program();
    if v.out.is_empty() {
        Ok(())
    } else {
        Err(VerifyError { violations: v.out })
    }
}

struct Verifier<'a> {
    p: &'a LoopProgram,
    out: Vec<Violation>,
    /// Named sizes the inputs define.
    sizes: HashSet<&'a str>,
    /// Which sizes are equal (shared names, assertions).
    groups: ShapeGroups,
}

/// What is in scope at one statement level of a block.
#[derive(Clone)]
struct Scope {
    /// Some enclosing loop provably runs no iteration: nothing here runs.
    dead: bool,
    /// Loop variables visible, with constant ranges where known.
    loops: Vec<LoopId>,
    ranges: Ranges,
    /// Carried variables live here, with their operators.
    vars: HashMap<VarId, crate::uop::Accum>,
}

impl<'a> Verifier<'a> {
    fn fail(&mut self, at: impl Into<String>, message: impl Into<String>) {
        self.out.push(Violation {
            at: at.into(),
            message: message.into(),
        });
    }

    fn tensor_name(&self, t: TensorId) -> String {
        self.p
            .tensors
            .get(t.0)
            .map_or_else(|| format!("%{}", t.0), |d| d.name.clone())
    }

    fn program(&mut self) {
        let p = self.p;
        for (list, kind, what) in [
            (&p.inputs, TensorKind::Input, "input"),
            (&p.outputs, TensorKind::Output, "output"),
        ] {
            let mut seen = HashSet::new();
            for &t in list {
                match p.tensors.get(t.0) {
                    None => self.fail("program", format!("{what} %{} is not a tensor", t.0)),
                    Some(d) if d.kind != kind => self.fail(
                        format!("tensor {}", d.name),
                        format!("listed as an {what} but declared {:?}", d.kind),
                    ),
                    Some(d) if !seen.insert(t) => self.fail(
                        format!("tensor {}", d.name),
                        format!("listed twice as an {what}"),
                    ),
                    Some(_) => {}
                }
            }
            for (k, d) in p.tensors.iter().enumerate() {
                if d.kind == kind && !list.contains(&TensorId(k)) {
                    self.fail(
                        format!("tensor {}", d.name),
                        format!("an {what} missing from the program's {what}s"),
                    );
                }
            }
        }
        for &t in &p.inputs {
            if let Some(d) = p.tensors.get(t.0) {
                for e in &d.shape {
                    if let Expr::Name(n) = e {
                        self.sizes.insert(n);
                    }
                }
            }
        }
        for (k, d) in p.tensors.iter().enumerate() {
            let at = format!("tensor {}", d.name);
            for e in &d.shape {
                self.expr(&at, e, &[]);
            }
            if let Some(axis) = d.row_local {
                if d.kind != TensorKind::Temp {
                    self.fail(&at, "only a temporary may be kept one row at a time");
                } else if axis >= d.shape.len() {
                    self.fail(
                        &at,
                        format!(
                            "kept one row of axis {axis}, but has {} axes",
                            d.shape.len()
                        ),
                    );
                } else {
                    self.row_local(TensorId(k), axis);
                }
            }
        }
        for (l, r) in &p.assertions {
            self.expr("program", l, &[]);
            self.expr("program", r, &[]);
        }
        for (k, b) in p.blocks.iter().enumerate() {
            self.block(k, b);
        }
    }

    /// Names, params and loop variables of `e` are defined; `loops` are in scope.
    fn expr(&mut self, at: &str, e: &Expr, loops: &[LoopId]) {
        match e {
            Expr::Int(_) => {}
            Expr::Index(n) => {
                if !loops.contains(&LoopId(*n)) {
                    self.fail(
                        at,
                        format!("`i{n}` is not a loop enclosing this expression"),
                    );
                }
            }
            Expr::Dim(d, _) => self.fail(
                at,
                format!("`{d}` (a shape-source dimension) in the loop IR"),
            ),
            Expr::Param(name) => {
                if !self.p.params.contains(name) {
                    self.fail(at, format!("`${name}` is not a declared parameter"));
                }
            }
            Expr::Name(n) => {
                if !self.sizes.contains(n.as_str()) {
                    self.fail(at, format!("`{n}` is not a size of any input"));
                }
            }
            Expr::Neg(a) => self.expr(at, a, loops),
            Expr::Bin(_, a, b) => {
                self.expr(at, a, loops);
                self.expr(at, b, loops);
            }
        }
    }

    fn block(&mut self, k: usize, b: &'a Block) {
        let at_block = format!("block {k}");
        let mut ids = HashSet::new();
        let mut declared: HashSet<VarId> = HashSet::new();
        let mut scope = Scope {
            dead: false,
            loops: Vec::new(),
            ranges: Ranges::default(),
            vars: HashMap::new(),
        };
        let mut declare = |v: &mut Self, at: &str, scope: &mut Scope, c: &super::ir::Carried| {
            if !declared.insert(c.var) {
                v.fail(at, format!("`v{}` is declared twice", c.var.0));
            }
            scope.vars.insert(c.var, c.op);
        };
        for c in &b.carried {
            declare(self, &at_block, &mut scope, c);
        }
        // Statement lists by level: block first, then each loop's.
        let mut scopes = vec![scope.clone()];
        for (d, l) in b.loops.iter().enumerate() {
            let at = format!("block {k}, loop i{}", l.id.0);
            if !ids.insert(l.id) {
                self.fail(&at, "the loop id is used twice in the block");
            }
            self.expr(&at, &l.start, &scope.loops);
            self.expr(&at, &l.end, &scope.loops);
            let bounds = l
                .start
                .interval(&scope.ranges)
                .zip(l.end.interval(&scope.ranges));
            // Only a range bounded on both sides is statically known.
            let range = bounds
                .filter(|(s, e)| s.lo > Interval::FULL.lo && e.hi < Interval::FULL.hi)
                .and_then(|(s, e)| Interval::new(s.lo, e.hi.checked_sub(1)?));
            scope.dead |= bounds.is_some_and(|(s, e)| e.hi <= s.lo);
            scope.loops.push(l.id);
            if let Some(r) = range {
                scope.ranges.indices.insert(l.id.0, r);
            }
            for c in &l.carried {
                declare(self, &at, &mut scope, c);
            }
            self.marks(k, d, b);
            scopes.push(scope.clone());
        }
        for (level, stmts) in std::iter::once(&b.stmts)
            .chain(b.loops.iter().map(|l| &l.stmts))
            .enumerate()
        {
            let scope = &scopes[level];
            let at = match level {
                0 => at_block.clone(),
                l => format!("block {k}, loop i{}", b.loops[l - 1].id.0),
            };
            for s in stmts {
                self.stmt(&at, s, scope);
            }
        }
    }

    fn stmt(&mut self, at: &str, s: &Stmt, scope: &Scope) {
        match s {
            Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
                self.access(at, access, scope);
                if let Some(d) = self.p.tensors.get(access.tensor.0)
                    && d.kind == TensorKind::Input
                {
                    self.fail(at, format!("a store into the input `{}`", d.name));
                }
                self.value(at, value, scope);
            }
            Stmt::Update { var, op, value } => {
                match scope.vars.get(var) {
                    None => self.fail(
                        at,
                        format!("`v{}` is updated outside the loop that resets it", var.0),
                    ),
                    Some(own) if own != op => self.fail(
                        at,
                        format!(
                            "`v{}` is updated with `{}` but carried with `{}`",
                            var.0,
                            op.assign_symbol(),
                            own.assign_symbol()
                        ),
                    ),
                    Some(_) => {}
                }
                self.value(at, value, scope);
            }
        }
    }

    fn value(&mut self, at: &str, v: &Value, scope: &Scope) {
        match v {
            Value::Load { access, .. } => self.access(at, access, scope),
            Value::Var(var) => {
                if !scope.vars.contains_key(var) {
                    self.fail(
                        at,
                        format!("`v{}` is read outside the loop that resets it", var.0),
                    );
                }
            }
            Value::Const(_) => {}
            Value::Param(name) => {
                if !self.p.params.contains(name) {
                    self.fail(at, format!("`${name}` is not a declared parameter"));
                }
            }
            Value::Index(e) => self.expr(at, e, &scope.loops),
            Value::Unary(_, x) => self.value(at, x, scope),
            Value::Binary(_, a, b) => {
                self.value(at, a, scope);
                self.value(at, b, scope);
            }
            Value::Where(c, a, b) => {
                self.value(at, c, scope);
                self.value(at, a, scope);
                self.value(at, b, scope);
            }
        }
    }

    fn access(&mut self, at: &str, a: &Access, scope: &Scope) {
        let Some(decl) = self.p.tensors.get(a.tensor.0) else {
            self.fail(at, format!("%{} is not a tensor", a.tensor.0));
            return;
        };
        if a.index.len() != decl.shape.len() {
            self.fail(
                at,
                format!(
                    "`{}` has {} axes but is accessed with {} subscripts",
                    decl.name,
                    decl.shape.len(),
                    a.index.len()
                ),
            );
            return;
        }
        for (axis, (s, size)) in a.index.iter().zip(&decl.shape).enumerate() {
            match s {
                Subscript::Value(v) => self.value(at, v, scope),
                Subscript::Expr(e) => {
                    self.expr(at, e, &scope.loops);
                    if a.checked || scope.dead {
                        continue;
                    }
                    let known = e
                        .interval(&scope.ranges)
                        .zip(size.interval(&Ranges::default()));
                    // Only a range bounded on both sides is statically known.
                    if let Some((range, size)) = known
                        && range.lo > Interval::FULL.lo
                        && range.hi < Interval::FULL.hi
                        && size.lo == size.hi
                        && !range
                            .is_within(Interval::new(0, size.lo - 1).unwrap_or(Interval::point(-1)))
                    {
                        self.fail(
                            at,
                            format!(
                                "`{}` axis {axis}: `{e}` takes {}..={} outside 0..{}, unchecked",
                                decl.name, range.lo, range.hi, size.lo
                            ),
                        );
                    }
                }
            }
        }
    }

    /// The marks of loop `d` of block `k`.
    fn marks(&mut self, k: usize, d: usize, b: &Block) {
        let l = &b.loops[d];
        let s = l.schedule;
        let at = format!("block {k}, loop i{}", l.id.0);
        let innermost = d + 1 == b.loops.len();
        if s.parallel {
            if b.loops[..d].iter().any(|o| o.schedule.parallel) {
                self.fail(&at, "[parallel] on more than one loop of the block");
            }
            let outer: Vec<LoopId> = b.loops[..d].iter().map(|o| o.id).collect();
            if d > 0 && (mentions(&l.start, &outer) || mentions(&l.end, &outer)) {
                self.fail(
                    &at,
                    "[parallel] on an inner loop whose range depends on the loops outside",
                );
            }
        }
        if let Some(w) = s.lines {
            let k = usize::from(w);
            if !(s.parallel && line_aligned(self.p, b, d, k)) {
                let what = self.body_access(&b.loops[d..], true, k);
                self.fail(&at, format!("[parallel(lines {what})] needs an inner parallel loop and a write along it at unit stride, free of the other loops, the block writing only its tensor, not a row buffer"));
            }
        }
        if s.pieces {
            let writes_inside = b
                .loops
                .iter()
                .any(|l| l.stmts.iter().any(|s| !matches!(s, Stmt::Update { .. })));
            if d != 0 || b.carried.is_empty() || writes_inside {
                self.fail(&at, "[pieces] only on the outermost loop of a block reducing into its own carried variables");
            }
        }
        if s.split && !innermost {
            self.fail(&at, "[split] only on the innermost loop");
        }
        if let Some(k) = s.aligned {
            match loads(l).get(k) {
                _ if !s.split => self.fail(&at, "an aligned load without [split]"),
                None => self.fail(
                    &at,
                    format!(
                        "[split(aligned ..)] names load #{k}, but the loop has {} loads",
                        loads(l).len()
                    ),
                ),
                Some(a) if !alignable(l, a) => {
                    let load = self.p.value_text(&Value::Load {
                        access: a.clone(),
                        fill: 0.0,
                    });
                    self.fail(&at, format!("[split(aligned ..)] needs an unchecked load of unit stride along the loop, not `{load}`"));
                }
                Some(_) => {}
            }
        }
        if s.line_split && (!innermost || s.split || s.blocked || line_store(l).is_none()) {
            self.fail(&at, "[line split] needs the innermost loop, neither [split] nor [blocked], with an unchecked store of unit stride along it");
        }
        if s.blocked {
            let element_wise = b.carried.is_empty()
                && b.stmts.is_empty()
                && b.loops.iter().all(|o| o.carried.is_empty())
                && b.loops[..d].iter().all(|o| o.stmts.is_empty());
            let free = d > 0 && {
                let parent = [b.loops[d - 1].id];
                !mentions(&l.start, &parent) && !mentions(&l.end, &parent)
            };
            if !innermost || !free || !element_wise {
                self.fail(&at, "[blocked] needs the innermost loop of an element-wise nest (nothing carried, statements only in it), with a parent loop its range does not depend on");
            }
        }
        if s.jammed && !(innermost && d > 0 && jammable(&b.loops[d - 1], l)) {
            self.fail(&at, "[jammed] needs the innermost loop, carrying nothing, with one accumulation into an element that does not move with its parent, of a value not reading it, its range free of the parent, under a parent that carries nothing and holds no statements");
        }
        if s.chunked && !(innermost && chunkable(l)) {
            self.fail(&at, "[chunked] needs the innermost loop, carrying nothing, with one unchecked plain store of a value that does not read the stored tensor");
        }
        if s.joined {
            let prev = k
                .checked_sub(1)
                .and_then(|j| self.p.blocks[j].loops.first());
            let same = prev.is_some_and(|o| {
                self.groups.same(&o.start, &l.start)
                    && self.groups.same(&o.end, &l.end)
                    && o.schedule.parallel == s.parallel
            });
            if d != 0 || !same {
                self.fail(&at, "[joined] only on a block's outermost loop, matching the previous block's outermost loop (range and parallel)");
            }
        }
        if let Some(tile) = s.tile {
            let own: HashSet<VarId> = l.carried.iter().map(|c| c.var).collect();
            let reduction_ok = b.loops[d + 1..].iter().all(|inner| {
                inner.carried.is_empty()
                    && inner
                        .stmts
                        .iter()
                        .all(|s| matches!(s, Stmt::Update { var, .. } if own.contains(var)))
            });
            if d == 0 || own.is_empty() || innermost || !reduction_ok {
                self.fail(&at, "[tile] needs a parent loop, carried variables of its own, and reduction loops inside that only update them");
            }
            let plain_stores = l
                .stmts
                .iter()
                .all(|s| matches!(s, Stmt::Store { value: Value::Var(v), .. } if own.contains(v)));
            let allowed = packable(self.p, b, d);
            for k in tile.packed.iter().filter(|&k| !allowed.contains(k)) {
                let what = self.body_access(&b.loops[d..], false, k);
                self.fail(&at, format!("[tile(packed {what})] names a load that is not an operand of the innermost reduction, of a float tensor the block does not write, moving with the columns and not the rows, and not a sliding window (or the reduction's range uses the row or column loop)"));
            }
            let allowed = row_packable(self.p, b, d);
            for k in tile.rows.iter().filter(|&k| !allowed.contains(k)) {
                let what = self.body_access(&b.loops[d..], false, k);
                self.fail(&at, format!("[rows(packed {what})] names a load that is not an operand of the innermost reduction, of a float tensor the block does not write, moving with the rows and not the columns, and not a sliding window along the rows (or the reduction's range uses the row or column loop)"));
            }
            if tile.block_reduction && !plain_stores {
                self.fail(&at, "[tile, block reduction] needs every statement after the reduction to store a carried variable plainly");
            }
        }
    }

    /// Access `k` of the body `loops` (a write when `write`) as printed, or
    /// `position k` when the body has fewer.
    fn body_access(&self, loops: &[super::Loop], write: bool, k: usize) -> String {
        match body_accesses(loops, write).into_iter().nth(k) {
            Some(mut access) => {
                access.checked = false;
                self.p.value_text(&Value::Load { access, fill: 0.0 })
            }
            None => format!("position {k}"),
        }
    }

    /// A row-local temporary is touched by one group of joined blocks only, each
    /// access with the bare outermost loop variable on `axis`.
    fn row_local(&mut self, t: TensorId, axis: usize) {
        let at = format!("tensor {}", self.tensor_name(t));
        let users: Vec<usize> = self
            .p
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| block_touches(b, t))
            .map(|(k, _)| k)
            .collect();
        let (Some(&first), Some(&last)) = (users.first(), users.last()) else {
            return;
        };
        let grouped = (first + 1..=last).all(|k| {
            self.p.blocks[k]
                .loops
                .first()
                .is_some_and(|l| l.schedule.joined)
        });
        if !grouped {
            self.fail(&at, format!("kept one row at a time but used by blocks {first}..={last}, which are not one joined group"));
        }
        for &k in &users {
            let b = &self.p.blocks[k];
            let Some(row) = b.loops.first().map(|l| l.id) else {
                self.fail(
                    &at,
                    format!("kept one row at a time but used by block {k}, which has no loop"),
                );
                continue;
            };
            let bare = Subscript::Expr(Expr::Index(row.0));
            let bad = block_accesses(b)
                .iter()
                .any(|a| a.access.tensor == t && a.access.index.get(axis) != Some(&bare));
            if bad {
                self.fail(&at, format!("kept one row of axis {axis} at a time but block {k} does not access it at row `i{}` there", row.0));
            }
        }
    }
}

/// Whether `e` uses any of `loops`' variables.
fn mentions(e: &Expr, loops: &[LoopId]) -> bool {
    match e {
        Expr::Index(n) => loops.contains(&LoopId(*n)),
        Expr::Neg(a) => mentions(a, loops),
        Expr::Bin(_, a, b) => mentions(a, loops) || mentions(b, loops),
        _ => false,
    }
}

fn block_touches(b: &Block, t: TensorId) -> bool {
    block_accesses(b).iter().any(|a| a.access.tensor == t)
}
