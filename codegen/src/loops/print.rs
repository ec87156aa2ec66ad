//! The loop-IR printer: stable, readable text for programs, blocks, statements and
//! values (used by `uop print` and by snapshot tests).
//!
//! ```text
//! input  a: f32[M, K]
//! output c: f32[M, 1]
//! block 0 {
//!   for i0 in 0..M {
//!     v0 = 0.0 (+)
//!     for i1 in 0..K {
//!       v0 += a[i0, i1] * 2.0
//!     }
//!     c[i0, 0] = v0
//!   }
//! }
//! ```
//!
//! - A carried variable is shown where it is reset, with its identity and operator:
//!   `v0 = 0.0 (+)`, `v1 = -inf (max)`.
//! - A loop's statements follow its inner loop; closing braces of loops with nothing
//!   after them share a line (`} } }`).
//! - A load that still needs a bounds check shows its fill, `a[i0 - 1, i1] ?? 0.0`;
//!   a checked store or accumulate is marked `t[i0 / 2]? += ...`. Unmarked accesses
//!   are known to be in range.
//! - A loop the schedule passes annotated says so after its range:
//!   `for i2 in 0..N [tile, block reduction] {`, `[split]`, `[parallel]`, `[pieces]`,
//!   `[blocked]`, `[jammed]`, `[chunked]`, `[line split]`. A mark's argument names
//!   loads or writes of the loop's body by their printed form, in parentheses after
//!   its name: `[split(aligned x[i0])]`, `[tile(packed b[i2, i1])]`,
//!   `[rows(packed a[i0, i1])]` (after `tile`),
//!   `[parallel(lines y[0, i1])]`.
//! - A data-dependent subscript (from `select`) prints as `floor(value)`.
//! - A value computed from an index expression prints the expression, parenthesized
//!   unless it is a single name or number.
//!
//! [`Display`](fmt::Display) on a [`LoopProgram`] uses tensor names; on a lone
//! [`Block`], [`Stmt`], [`Value`] or [`Access`] tensors print by id as `%3` (use
//! [`LoopProgram::block_text`] and friends for names).

use std::fmt;

use crate::index::{Expr, IndexOp, list};
use crate::uop::{Accum, BinaryOp, UnaryOp};

use super::analysis;
use super::ir::{
    Access, Block, Carried, Loop, LoopProgram, Stmt, Subscript, TensorDecl, TensorId, TensorKind,
    Value,
};

/// Prints with tensor names when it knows them, by id otherwise.
struct Printer<'a> {
    tensors: Option<&'a [TensorDecl]>,
}

const INDENT: &str = "  ";

/// Binding strengths of value operators (higher binds tighter).
const CHECKED_LOAD: u8 = 0;
const COMPARISON: u8 = 1;
const SUM: u8 = 2;
const PRODUCT: u8 = 3;
const PREFIX: u8 = 4;
const ATOM: u8 = 5;

impl Printer<'_> {
    fn tensor(&self, t: TensorId) -> String {
        match self.tensors.and_then(|ts| ts.get(t.0)) {
            Some(decl) => decl.name.clone(),
            None => format!("%{}", t.0),
        }
    }

    fn access(&self, a: &Access) -> String {
        let subscripts: Vec<String> = a
            .index
            .iter()
            .map(|s| match s {
                Subscript::Expr(e) => e.to_string(),
                Subscript::Value(v) => format!("floor({})", self.value(v)),
            })
            .collect();
        format!("{}[{}]", self.tensor(a.tensor), subscripts.join(", "))
    }

    /// A store or accumulate target: `?` marks one that may be out of range (skipped).
    fn target(&self, a: &Access) -> String {
        let mark = if a.checked { "?" } else { "" };
        format!("{}{mark}", self.access(a))
    }

    fn value(&self, v: &Value) -> String {
        self.value_prec(v).0
    }

    /// The text of `v` and how tightly it binds.
    fn value_prec(&self, v: &Value) -> (String, u8) {
        match v {
            Value::Load { access, fill } if access.checked => (
                format!("{} ?? {}", self.access(access), float(*fill)),
                CHECKED_LOAD,
            ),
            Value::Load { access, .. } => (self.access(access), ATOM),
            Value::Var(var) => (format!("v{}", var.0), ATOM),
            Value::Const(c) if *c < 0.0 => (float(*c), PREFIX),
            Value::Const(c) => (float(*c), ATOM),
            Value::Param(p) => (format!("${p}"), ATOM),
            Value::Index(e) => match e {
                Expr::Int(n) if *n < 0 => (e.to_string(), PREFIX),
                Expr::Bin(IndexOp::Min | IndexOp::Max, ..)
                | Expr::Int(_)
                | Expr::Index(_)
                | Expr::Dim(..)
                | Expr::Param(_)
                | Expr::Name(_) => (e.to_string(), ATOM),
                Expr::Neg(_) | Expr::Bin(..) => (format!("({e})"), ATOM),
            },
            Value::Unary(UnaryOp::Neg, x) => (format!("-{}", self.operand(x, ATOM)), PREFIX),
            Value::Unary(op, x) => (format!("{op}({})", self.value(x)), ATOM),
            Value::Binary(op, a, b) => match infix(*op) {
                Some((symbol, prec)) => (
                    format!(
                        "{} {symbol} {}",
                        self.operand(a, prec),
                        self.operand(b, prec + 1)
                    ),
                    prec,
                ),
                None => (format!("{op}({}, {})", self.value(a), self.value(b)), ATOM),
            },
            Value::Where(c, a, b) => (
                format!(
                    "where({}, {}, {})",
                    self.value(c),
                    self.value(a),
                    self.value(b)
                ),
                ATOM,
            ),
        }
    }

    /// `v` as an operand that must bind at least as tightly as `min`.
    fn operand(&self, v: &Value, min: u8) -> String {
        let (text, prec) = self.value_prec(v);
        if prec < min {
            format!("({text})")
        } else {
            text
        }
    }

    fn stmt(&self, s: &Stmt) -> String {
        match s {
            Stmt::Store { access, value } => {
                format!("{} = {}", self.target(access), self.value(value))
            }
            Stmt::Accumulate { access, op, value } => format!(
                "{} {} {}",
                self.target(access),
                op.assign_symbol(),
                self.value(value)
            ),
            Stmt::Update { var, op, value } => {
                format!("v{} {} {}", var.0, op.assign_symbol(), self.value(value))
            }
        }
    }

    fn carried(&self, c: &Carried) -> String {
        let op = match c.op {
            Accum::Add => "+",
            Accum::Mul => "*",
            Accum::Max => "max",
            Accum::Min => "min",
        };
        format!("v{} = {} ({op})", c.var.0, float(c.op.identity()))
    }

    fn line(out: &mut String, depth: usize, text: &str) {
        for _ in 0..depth {
            out.push_str(INDENT);
        }
        out.push_str(text);
        out.push('\n');
    }

    /// `block {k} { ... }` at `depth`; `number` is the block's position when known.
    fn block(&self, out: &mut String, number: Option<usize>, block: &Block, depth: usize) {
        match number {
            Some(k) => Self::line(out, depth, &format!("block {k} {{")),
            None => Self::line(out, depth, "block {"),
        }
        for c in &block.carried {
            Self::line(out, depth + 1, &self.carried(c));
        }
        self.nest(out, &block.loops, depth + 1);
        for s in &block.stmts {
            Self::line(out, depth + 1, &self.stmt(s));
        }
        Self::line(out, depth, "}");
    }

    fn nest(&self, out: &mut String, loops: &[Loop], depth: usize) {
        let Some(innermost) = loops.last() else {
            return;
        };
        for (d, l) in loops.iter().enumerate() {
            let header = format!(
                "for i{} in {}..{}{} {{",
                l.id.0,
                l.start,
                l.end,
                self.marks(&loops[d..])
            );
            Self::line(out, depth + d, &header);
            for c in &l.carried {
                Self::line(out, depth + d + 1, &self.carried(c));
            }
        }
        for s in &innermost.stmts {
            Self::line(out, depth + loops.len(), &self.stmt(s));
        }
        // Close loops from the inside out; a run of loops with no statements after
        // their inner loop closes on one line, indented like the innermost of the run.
        let mut run: Option<(usize, usize)> = None;
        for d in (0..loops.len()).rev() {
            let (first, count) = run.map_or((d, 1), |(first, n)| (first, n + 1));
            run = Some((first, count));
            let enclosing_has_stmts = d > 0 && !loops[d - 1].stmts.is_empty();
            if d == 0 || enclosing_has_stmts {
                Self::line(out, depth + first, &vec!["}"; count].join(" "));
                run = None;
                if d > 0 {
                    for s in &loops[d - 1].stmts {
                        Self::line(out, depth + d, &self.stmt(s));
                    }
                }
            }
        }
    }

    fn program(&self, p: &LoopProgram) -> String {
        let mut out = String::new();
        for param in &p.params {
            Self::line(&mut out, 0, &format!("param  ${param}"));
        }
        let decl = |kind: &str, t: TensorId| {
            let d = &p.tensors[t.0];
            format!("{kind} {}: {}{}", d.name, d.dtype, list(&d.shape))
        };
        for &t in &p.inputs {
            Self::line(&mut out, 0, &decl("input ", t));
        }
        for &t in &p.outputs {
            Self::line(&mut out, 0, &decl("output", t));
        }
        for (k, d) in p.tensors.iter().enumerate() {
            if d.kind == TensorKind::Temp {
                let mut line = decl("temp  ", TensorId(k));
                if let Some(axis) = d.row_local {
                    line.push_str(&format!(" [one row of axis {axis} at a time]"));
                }
                Self::line(&mut out, 0, &line);
            }
        }
        for (l, r) in &p.assertions {
            Self::line(&mut out, 0, &format!("assert {l} == {r}"));
        }
        for (k, b) in p.blocks.iter().enumerate() {
            self.block(&mut out, Some(k), b, 0);
        }
        out
    }
}

/// The infix spelling and binding strength of a binary operator, if it has one.
fn infix(op: BinaryOp) -> Option<(&'static str, u8)> {
    Some(match op {
        BinaryOp::Add => ("+", SUM),
        BinaryOp::Sub => ("-", SUM),
        BinaryOp::Mul => ("*", PRODUCT),
        BinaryOp::Div => ("/", PRODUCT),
        BinaryOp::Eq => ("==", COMPARISON),
        BinaryOp::Ne => ("!=", COMPARISON),
        BinaryOp::Lt => ("<", COMPARISON),
        BinaryOp::Le => ("<=", COMPARISON),
        BinaryOp::Gt => (">", COMPARISON),
        BinaryOp::Ge => (">=", COMPARISON),
        BinaryOp::Pow | BinaryOp::Maximum | BinaryOp::Minimum => return None,
    })
}

/// A float literal that reads back as the same `f64`: `0.0`, `-1.5`, `1e-9`, `inf`, `nan`.
fn float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else {
        format!("{v:?}")
    }
}

const BY_ID: Printer<'static> = Printer { tensors: None };

impl LoopProgram {
    fn printer(&self) -> Printer<'_> {
        Printer {
            tensors: Some(&self.tensors),
        }
    }

    /// A block of this program as text, with tensor names.
    pub fn block_text(&self, block: &Block) -> String {
        let mut out = String::new();
        self.printer().block(&mut out, None, block, 0);
        out
    }

    /// A statement of this program as text, with tensor names.
    pub fn stmt_text(&self, stmt: &Stmt) -> String {
        self.printer().stmt(stmt)
    }

    /// A value of this program as text, with tensor names.
    pub fn value_text(&self, value: &Value) -> String {
        self.printer().value(value)
    }
}

impl fmt::Display for LoopProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.printer().program(self))
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        BY_ID.block(&mut out, None, self, 0);
        f.write_str(&out)
    }
}

impl fmt::Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&BY_ID.stmt(self))
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&BY_ID.value(self))
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&BY_ID.target(self))
    }
}

impl Printer<'_> {
    /// The marks of `loops[0]` (its body is `loops`): ` [parallel, split, tile]`,
    /// with a mark's argument in parentheses (`tile(packed b[i2, i1])`,
    /// `split(aligned x[i0])`), or nothing for a loop run plainly.
    fn marks(&self, loops: &[Loop]) -> String {
        let l = &loops[0];
        let s = &l.schedule;
        let mut parts: Vec<String> = Vec::new();
        if s.parallel {
            parts.push(match s.lines {
                Some(w) => format!("parallel(lines {})", self.named(loops, true, w)),
                None => "parallel".into(),
            });
        }
        let aligned = s.aligned.map(|k| format!("aligned {}", self.load_at(l, k)));
        let split = match &aligned {
            Some(a) => format!("split({a})"),
            None => "split".into(),
        };
        for (on, name) in [
            (s.pieces, "pieces"),
            (s.split, split.as_str()),
            (s.blocked, "blocked"),
            (s.jammed, "jammed"),
            (s.chunked, "chunked"),
            (s.line_split, "line split"),
            (s.joined, "joined"),
        ] {
            if on {
                parts.push(name.into());
            }
        }
        if let Some(t) = s.tile {
            let loads: Vec<String> = analysis::named(loops, false, t.packed)
                .iter()
                .map(|a| self.access(a))
                .collect();
            parts.push(if loads.is_empty() {
                "tile".into()
            } else {
                format!("tile(packed {})", loads.join(", "))
            });
            let rows: Vec<String> = analysis::named(loops, false, t.rows)
                .iter()
                .map(|a| self.access(a))
                .collect();
            if !rows.is_empty() {
                parts.push(format!("rows(packed {})", rows.join(", ")));
            }
            if t.block_reduction {
                parts.push("block reduction".into());
            }
        }
        // An argument without its mark is not valid (the verifier says so), but it
        // is printed rather than lost.
        if let (false, Some(a)) = (s.split, aligned) {
            parts.push(a);
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" [{}]", parts.join(", "))
        }
    }

    /// The `k`-th load of `l` (a mark's argument) as printed, or `load #k` when
    /// the loop has no such load (an invalid program, printed all the same).
    fn load_at(&self, l: &Loop, k: usize) -> String {
        match super::analysis::loads(l).get(k) {
            Some(a) => self.access(a),
            None => format!("load #{k}"),
        }
    }

    /// Access `k` of the body `loops` (a write when `write`), or `?` past its end.
    fn named(&self, loops: &[Loop], write: bool, k: u8) -> String {
        analysis::body_accesses(loops, write)
            .get(usize::from(k))
            .map_or_else(|| "?".into(), |a| self.access(a))
    }
}
