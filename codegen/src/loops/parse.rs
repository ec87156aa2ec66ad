//! The loop-IR text parser: reads back exactly what [`print`](super::print) writes
//! (`uop print --stage loops` / `--stage opt`), so pass tests can be written as IR
//! text before and after (`codegen/tests/passes/*.txt`).
//!
//! The grammar, line by line (blank lines are skipped; `#` starts a comment line):
//!
//! ```text
//! program  := header* block*
//! header   := "param" "$"name
//!           | ("input" | "output" | "temp") name ":" dtype "[" expr,* "]" rowmark?
//!           | "assert" expr "==" expr
//! rowmark  := "[one row of axis" int "at a time]"          (temps only)
//! block    := "block" int "{" carried* nest? stmt* "}"
//! nest     := "for" "i"int "in" expr ".." expr marks? "{" carried* (nest | stmt*) closing stmt*
//! closing  := "}"+ on one line, closing that many loops
//! marks    := "[" mark ("," mark)* "]"
//! mark     := "parallel" | "pieces" | "split" | "blocked" | "jammed" | "chunked" | "line split"
//!           | "joined" | "tile" | "block reduction"
//!           | "split(aligned" access ")"                   (a load of the loop's statements)
//!           | "tile(packed" access ("," access)* ")"      (loads of the loop's body)
//!           | "rows(packed" access ("," access)* ")"      (after `tile`; loads of the body)
//!           | "parallel(lines" access ")"                  (a write of the loop's body)
//! carried  := "v"int "=" float "(" ("+" | "*" | "max" | "min") ")"
//! stmt     := target ("=" | "+=" | "*=" | "max=" | "min=") value
//!           | "v"int ("+=" | "*=" | "max=" | "min=") value
//! target   := name "[" subscript,* "]" "?"?                ("?": may be out of range)
//! value    := access "??" float                           (a checked load and its fill)
//!           | compare
//! compare  := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)*
//! sum      := product (("+" | "-") product)*
//! product  := prefix (("*" | "/") prefix)*
//! prefix   := "-" atom | atom
//! atom     := number | "$"name | "v"int | access | unary "(" value ")"
//!           | binary "(" value "," value ")" | "where(" value "," value "," value ")"
//!           | "(" expr ")" | "(" value ")" | index-atom
//! subscript:= "floor(" value ")" | expr
//! ```
//!
//! `expr` is an index expression ([`crate::index`]'s own parser). A number with a
//! `.` or an exponent (or `inf`, `nan`) is a float constant; one without is an index
//! value. Spellings the printer writes for two trees of the same meaning read back
//! as one of them: `$p` is always [`Value::Param`] (never an index of a param), a
//! parenthesized index expression is always [`Value::Index`], `-1.5` is a negative
//! constant. A mark's argument names loads of the loop's statements by their text
//! (the first load with those subscripts; [`loads`](super::analysis::loads) gives the
//! order). An unchecked load's fill is never printed (it is never read) and reads
//! back as `0.0`. Tensors are numbered in the order they are declared (inputs,
//! outputs, temporaries) and the program's float type is its first float tensor's.
//! So `print(parse(text)) == text` for every printed program, while `parse(print(p))`
//! equals `p` up to those spellings and numbering.
//!
//! Errors are [`Diagnostic`]s with the line and column of the offending token.

use std::collections::{HashMap, HashSet};

use nom::Parser;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, digit1};
use nom::combinator::{opt, recognize};
use nom::sequence::{pair, preceded};

use crate::diag::{Diagnostic, SyntaxError, found_at};
use crate::index::Expr;
use crate::index::parse::{PResult, expr};
use crate::uop::{Accum, BinaryOp, DType, UnaryOp};

mod marks;

use super::ir::{
    Access, Block, Carried, Loop, LoopId, LoopProgram, Schedule, Stmt, Subscript, TensorDecl,
    TensorId, TensorKind, Value, VarId,
};
use marks::Arg;

/// Parses a loop program in the printer's text form.
///
/// ```
/// use uop_codegen::loops::parse_program;
/// let text = "input  x: f32[N]\noutput y: f32[N]\nblock 0 {\n  for i0 in 0..N {\n    y[i0] = -exp(x[i0])\n  }\n}\n";
/// let p = parse_program(text)?;
/// assert_eq!(p.to_string(), text);
/// assert!(parse_program("input x: f32[N]\nblock 0 {\n  z[0] = 1.0\n}\n").is_err());
/// # Ok::<(), uop_codegen::diag::Diagnostic>(())
/// ```
///
/// # Errors
///
/// A [`Diagnostic`] (line, column, what was expected and found) for text that does
/// not follow the grammar in the module docs, an undeclared or twice-declared
/// tensor, a block numbered out of order, an unknown or repeated mark, or a carried
/// variable whose identity is not its operator's.
pub fn parse_program(src: &str) -> Result<LoopProgram, Diagnostic> {
    Reader::new(src).program().map_err(|e| {
        // Lines are parsed as slices of `src`, so the error's position is where its
        // remaining text starts within `src` (not `src.len()` minus its length).
        let start = src.as_ptr() as usize;
        let at = e.at.as_ptr() as usize;
        let offset = if (start..=start + src.len()).contains(&at) {
            at - start
        } else {
            src.len()
        };
        Diagnostic::new(
            src,
            offset,
            e.expected.to_string(),
            found_at(&src[offset..]),
        )
    })
}

/// A line of the source: its text without the line break, and its trimmed content.
#[derive(Clone, Copy)]
struct Line<'s> {
    content: &'s str,
}

/// Reads a program line by line, keeping the declarations seen so far.
struct Reader<'s> {
    src: &'s str,
    lines: Vec<Line<'s>>,
    next: usize,
    tensors: Vec<TensorDecl>,
    by_name: HashMap<String, TensorId>,
    /// Named sizes seen in declarations, assertions and loop bounds.
    dims: HashSet<String>,
}

type Fail<'s> = SyntaxError<'s>;

/// `Err` from nom parsers as a plain error.
fn plain(e: nom::Err<SyntaxError<'_>>) -> SyntaxError<'_> {
    match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => e,
        nom::Err::Incomplete(_) => SyntaxError::new("", "more input"),
    }
}

fn err<'s, T>(at: &'s str, expected: &'static str) -> PResult<'s, T> {
    Err(nom::Err::Failure(SyntaxError::new(at, expected)))
}

/// Spaces and tabs.
fn sp(i: &str) -> &str {
    i.trim_start_matches([' ', '\t'])
}

/// `[A-Za-z_][A-Za-z0-9_]*` (tensor, dimension and parameter names, keywords).
fn name(i: &str) -> PResult<'_, &str> {
    recognize(pair(
        take_while1(|c: char| c.is_ascii_alphabetic() || c == '_'),
        nom::bytes::complete::take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ))
    .parse(i)
}

/// `t` after optional spaces, or a failure expecting `what`.
fn token<'s>(i: &'s str, t: &'static str, what: &'static str) -> PResult<'s, ()> {
    let i = sp(i);
    match i.strip_prefix(t) {
        Some(rest) => Ok((rest, ())),
        None => err(i, what),
    }
}

/// `prefix` followed by digits (`v3`, `i12`), as the number.
fn numbered(i: &str, prefix: char) -> Option<(&str, usize)> {
    let (rest, (_, digits)) = pair(char::<_, SyntaxError>(prefix), digit1).parse(i).ok()?;
    if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some((rest, digits.parse().ok()?))
}

/// A number as the printer writes them: `3`, `-3` (index values), `0.5`, `-1e-9`,
/// `inf`, `-inf`, `nan` (floats). Returns the text and whether it is a float.
fn number(i: &str) -> PResult<'_, (&str, bool)> {
    let special: PResult<'_, &str> = recognize(pair(
        opt(char('-')),
        nom::branch::alt((tag("inf"), tag("nan"))),
    ))
    .parse(i);
    if let Ok((rest, text)) = special
        && !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    {
        return Ok((rest, (text, true)));
    }
    let (rest, text) = recognize((
        opt(char('-')),
        digit1,
        opt(preceded(char('.'), digit1)),
        opt((
            nom::branch::alt((char('e'), char('E'))),
            opt(nom::branch::alt((char('-'), char('+')))),
            digit1,
        )),
    ))
    .parse(i)?;
    Ok((rest, (text, text.contains(['.', 'e', 'E']))))
}

/// A float literal (a fill or an identity).
fn float(i: &str) -> PResult<'_, f64> {
    let i = sp(i);
    let Ok((rest, (text, _))) = number(i) else {
        return err(i, "a float like `0.0`, `-inf` or `nan`");
    };
    match text.parse::<f64>() {
        Ok(v) => Ok((rest, v)),
        Err(_) => err(i, "a float like `0.0`, `-inf` or `nan`"),
    }
}

/// An index expression (the crate's own parser), not crossing the line end.
fn index(i: &str) -> PResult<'_, Expr> {
    let i = sp(i);
    expr(i).map_err(|e| nom::Err::Failure(plain(e)))
}

/// `op` spelled as a carried variable's operator: `+`, `*`, `max`, `min`.
fn carried_op(i: &str) -> PResult<'_, Accum> {
    let i = sp(i);
    for (text, op) in [
        ("+", Accum::Add),
        ("*", Accum::Mul),
        ("max", Accum::Max),
        ("min", Accum::Min),
    ] {
        if let Some(rest) = i.strip_prefix(text) {
            return Ok((rest, op));
        }
    }
    err(i, "`+`, `*`, `max` or `min`")
}

/// An accumulating assignment: `+=`, `*=`, `max=`, `min=`.
fn accum_assign(i: &str) -> Option<(&str, Accum)> {
    let i = sp(i);
    [Accum::Add, Accum::Mul, Accum::Max, Accum::Min]
        .into_iter()
        .find_map(|op| i.strip_prefix(op.assign_symbol()).map(|rest| (rest, op)))
}

/// Comparison operators, two-character spellings first.
const COMPARISONS: [(&str, BinaryOp); 6] = [
    ("==", BinaryOp::Eq),
    ("!=", BinaryOp::Ne),
    ("<=", BinaryOp::Le),
    (">=", BinaryOp::Ge),
    ("<", BinaryOp::Lt),
    (">", BinaryOp::Gt),
];

/// The names of an index expression's `Name` leaves.
fn names(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Name(n) => out.push(n.clone()),
        Expr::Neg(a) => names(a, out),
        Expr::Bin(_, a, b) => {
            names(a, out);
            names(b, out);
        }
        Expr::Int(_) | Expr::Index(_) | Expr::Dim(..) | Expr::Param(_) => {}
    }
}

impl<'s> Reader<'s> {
    fn new(src: &'s str) -> Self {
        let lines = src
            .split('\n')
            .map(|l| Line {
                content: sp(l.strip_suffix('\r').unwrap_or(l)),
            })
            .filter(|l| !l.content.is_empty() && !l.content.starts_with('#'))
            .collect();
        Reader {
            src,
            lines,
            next: 0,
            tensors: Vec::new(),
            by_name: HashMap::new(),
            dims: HashSet::new(),
        }
    }

    fn peek(&self) -> Option<&'s str> {
        self.lines.get(self.next).map(|l| l.content)
    }

    /// The end of the source, for "found end of input" errors.
    fn end(&self) -> &'s str {
        &self.src[self.src.len()..]
    }

    /// Requires that only spaces are left on the line.
    fn line_end(rest: &'s str) -> Result<(), Fail<'s>> {
        let rest = sp(rest);
        if rest.is_empty() {
            Ok(())
        } else {
            Err(SyntaxError::new(rest, "end of line"))
        }
    }

    /// Runs `p` on the rest of the current line and requires it to use all of it.
    fn whole<T>(line: &'s str, p: impl FnOnce(&'s str) -> PResult<'s, T>) -> Result<T, Fail<'s>> {
        let (rest, v) = p(line).map_err(plain)?;
        Self::line_end(rest)?;
        Ok(v)
    }

    fn program(mut self) -> Result<LoopProgram, Fail<'s>> {
        let mut p = LoopProgram {
            dtype: DType::F32,
            params: Vec::new(),
            tensors: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            blocks: Vec::new(),
            assertions: Vec::new(),
        };
        while let Some(line) = self.peek() {
            if line.starts_with("block") {
                break;
            }
            self.next += 1;
            self.header(line, &mut p)?;
        }
        while let Some(line) = self.peek() {
            self.next += 1;
            let number = Self::whole(line, |i| {
                let (i, ()) = token(i, "block", "`block` or a declaration")?;
                let i = sp(i);
                let (i, digits) = digit1::<_, Fail>(i)
                    .map_err(|_| nom::Err::Failure(SyntaxError::new(i, "a block number")))?;
                let (i, ()) = token(i, "{", "`{`")?;
                Ok((i, digits.parse::<usize>().unwrap_or(usize::MAX)))
            })?;
            if number != p.blocks.len() {
                return Err(SyntaxError::new(
                    line,
                    "blocks numbered 0, 1, 2, ... in order",
                ));
            }
            let block = self.block_body()?;
            p.blocks.push(block);
        }
        p.dtype = self
            .tensors
            .iter()
            .map(|t| t.dtype)
            .find(|d| *d != DType::I32)
            .unwrap_or(DType::F32);
        p.tensors = self.tensors;
        Ok(p)
    }

    fn header(&mut self, line: &'s str, p: &mut LoopProgram) -> Result<(), Fail<'s>> {
        let (rest, keyword) = name(line).map_err(|_| {
            SyntaxError::new(
                line,
                "`param`, `input`, `output`, `temp`, `assert` or `block`",
            )
        })?;
        match keyword {
            "param" => {
                let param = Self::whole(rest, |i| {
                    let (i, ()) = token(i, "$", "`$` and a parameter name")?;
                    name(i).map_err(|_| nom::Err::Failure(SyntaxError::new(i, "a parameter name")))
                })?;
                p.params.push(param.to_string());
            }
            "input" | "output" | "temp" => {
                let kind = match keyword {
                    "input" => TensorKind::Input,
                    "output" => TensorKind::Output,
                    _ => TensorKind::Temp,
                };
                let decl_at = sp(rest);
                let decl = Self::whole(rest, |i| self.decl(i, kind))?;
                if self.by_name.contains_key(&decl.name) {
                    return Err(SyntaxError::new(
                        decl_at,
                        "a tensor name not declared before",
                    ));
                }
                let id = TensorId(self.tensors.len());
                self.by_name.insert(decl.name.clone(), id);
                for e in &decl.shape {
                    self.note_dims(e);
                }
                self.tensors.push(decl);
                match kind {
                    TensorKind::Input => p.inputs.push(id),
                    TensorKind::Output => p.outputs.push(id),
                    TensorKind::Temp => {}
                }
            }
            "assert" => {
                let (l, r) = Self::whole(rest, |i| {
                    let (i, l) = index(i)?;
                    let (i, ()) = token(i, "==", "`==`")?;
                    let (i, r) = index(i)?;
                    Ok((i, (l, r)))
                })?;
                self.note_dims(&l);
                self.note_dims(&r);
                p.assertions.push((l, r));
            }
            _ => {
                return Err(SyntaxError::new(
                    line,
                    "`param`, `input`, `output`, `temp`, `assert` or `block`",
                ));
            }
        }
        Ok(())
    }

    fn note_dims(&mut self, e: &Expr) {
        let mut found = Vec::new();
        names(e, &mut found);
        self.dims.extend(found);
    }

    /// `name: f32[d0, d1]` and, for a temporary, its row mark.
    fn decl(&self, i: &'s str, kind: TensorKind) -> PResult<'s, TensorDecl> {
        let i = sp(i);
        let (i, tensor) =
            name(i).map_err(|_| nom::Err::Failure(SyntaxError::new(i, "a tensor name")))?;
        let (i, ()) = token(i, ":", "`:`")?;
        let i = sp(i);
        let (i, dtype) = match name(i)
            .ok()
            .and_then(|(r, d)| Some((r, DType::from_name(d)?)))
        {
            Some(found) => found,
            None => return err(i, "`f32`, `f64` or `i32`"),
        };
        let (i, ()) = token(i, "[", "`[`")?;
        let (i, shape) = self.list(i, "]", |_, i| index(i))?;
        let mut row_local = None;
        let mut i = i;
        if kind == TensorKind::Temp
            && let Ok((rest, ())) = token(i, "[one row of axis", "")
        {
            let rest = sp(rest);
            let (rest, axis) = digit1::<_, Fail>(rest)
                .map_err(|_| nom::Err::Failure(SyntaxError::new(rest, "an axis number")))?;
            let (rest, ()) = token(rest, "at a time]", "`at a time]`")?;
            row_local = Some(axis.parse().map_err(|_| {
                nom::Err::Failure(SyntaxError::new(rest, "an axis number that fits"))
            })?);
            i = rest;
        }
        let decl = TensorDecl {
            name: tensor.to_string(),
            shape,
            dtype,
            kind,
            row_local,
        };
        Ok((i, decl))
    }

    /// Items separated by `,` up to `close` (which may follow at once).
    fn list<T>(
        &self,
        i: &'s str,
        close: &'static str,
        mut item: impl FnMut(&Self, &'s str) -> PResult<'s, T>,
    ) -> PResult<'s, Vec<T>> {
        let mut items = Vec::new();
        if let Ok((rest, ())) = token(i, close, "") {
            return Ok((rest, items));
        }
        let mut i = i;
        loop {
            let (rest, v) = item(self, i)?;
            items.push(v);
            if let Ok((rest, ())) = token(rest, ",", "") {
                i = rest;
                continue;
            }
            let (rest, ()) = token(
                rest,
                close,
                if close == "]" {
                    "`,` or `]`"
                } else {
                    "`,` or `)`"
                },
            )?;
            return Ok((rest, items));
        }
    }

    /// After `block k {`: carried variables, the nest, statements, `}`.
    fn block_body(&mut self) -> Result<Block, Fail<'s>> {
        let carried = self.carried_lines()?;
        let loops = match self.peek() {
            Some(line) if line.starts_with("for ") => self.nest()?,
            _ => Vec::new(),
        };
        let stmts = self.stmts()?;
        match self.peek() {
            Some(line) => {
                self.next += 1;
                Self::whole(line, |i| token(i, "}", "a statement or `}`"))?;
            }
            None => return Err(SyntaxError::new(self.end(), "`}` closing the block")),
        }
        Ok(Block {
            loops,
            carried,
            stmts,
        })
    }

    /// `vN = identity (op)` lines.
    fn carried_lines(&mut self) -> Result<Vec<Carried>, Fail<'s>> {
        let mut out = Vec::new();
        while let Some(line) = self.peek() {
            let Some((rest, var)) = numbered(line, 'v') else {
                break;
            };
            let after = sp(rest);
            if !after.starts_with('=') || after.starts_with("==") {
                break;
            }
            self.next += 1;
            let (identity_at, (identity, op)) = Self::whole(&after[1..], |i| {
                let at = sp(i);
                let (i, v) = float(i)?;
                let (i, ()) = token(i, "(", "`(` and the variable's operator")?;
                let (i, op) = carried_op(i)?;
                let (i, ()) = token(i, ")", "`)`")?;
                Ok((i, (at, (v, op))))
            })?;
            let same = identity == op.identity() || (identity.is_nan() && op.identity().is_nan());
            if !same {
                return Err(SyntaxError::new(
                    identity_at,
                    "the operator's identity (`0.0` for `+`, `1.0` for `*`, `-inf` for `max`, `inf` for `min`)",
                ));
            }
            out.push(Carried {
                var: VarId(var),
                op,
            });
        }
        Ok(out)
    }

    /// Statements up to a line starting with `}` (not consumed).
    fn stmts(&mut self) -> Result<Vec<Stmt>, Fail<'s>> {
        let mut out = Vec::new();
        while let Some(line) = self.peek() {
            if line.starts_with('}') {
                break;
            }
            if line.starts_with("for ") {
                return Err(SyntaxError::new(
                    line,
                    "a statement or `}` (a loop nest is perfect: one loop per level, before the statements)",
                ));
            }
            if let Some((rest, _)) = numbered(line, 'v') {
                let after = sp(rest);
                if after.starts_with('=') && !after.starts_with("==") {
                    return Err(SyntaxError::new(
                        line,
                        "a statement (a carried variable is declared right after its loop's header)",
                    ));
                }
            }
            self.next += 1;
            out.push(Self::whole(line, |i| self.stmt(i))?);
        }
        Ok(out)
    }

    /// `for iN in a..b [marks] {` lines, their carried variables, the innermost
    /// statements, and each closing line followed by the statements of the loop
    /// it returns to.
    fn nest(&mut self) -> Result<Vec<Loop>, Fail<'s>> {
        let mut loops: Vec<Loop> = Vec::new();
        let mut args = Vec::new();
        while let Some(line) = self.peek() {
            if !line.starts_with("for ") {
                break;
            }
            self.next += 1;
            let (mut l, arg) = Self::whole(line, |i| self.header_of_loop(i))?;
            args.push(arg);
            self.note_dims(&l.start);
            self.note_dims(&l.end);
            l.carried = self.carried_lines()?;
            loops.push(l);
        }
        let mut open = loops.len();
        while open > 0 {
            let stmts = self.stmts()?;
            loops[open - 1].stmts = stmts;
            let Some(line) = self.peek() else {
                return Err(SyntaxError::new(self.end(), "`}` closing a loop"));
            };
            self.next += 1;
            let count = Self::whole(line, |i| {
                let (rest, braces) = recognize(nom::multi::many1(preceded(
                    nom::character::complete::space0,
                    char('}'),
                )))
                .parse(i)?;
                Ok((rest, braces.matches('}').count()))
            })?;
            if count > open {
                return Err(SyntaxError::new(line, "at most one `}` per open loop"));
            }
            open -= count;
        }
        Self::resolve(&mut loops, args)?;
        Ok(loops)
    }

    fn header_of_loop(&self, i: &'s str) -> PResult<'s, (Loop, Vec<Arg<'s>>)> {
        let (i, ()) = token(i, "for", "`for`")?;
        let i = sp(i);
        let Some((i, id)) = numbered(i, 'i') else {
            return err(i, "a loop variable like `i3`");
        };
        let (i, ()) = token(i, "in ", "`in`")?;
        let (i, start) = index(i)?;
        let (i, ()) = token(i, "..", "`..`")?;
        let (i, end) = index(i)?;
        let (i, (schedule, args)) = match token(i, "[", "") {
            Ok((rest, ())) => self.marks(rest)?,
            Err(_) => (i, (Schedule::default(), Vec::new())),
        };
        let (i, ()) = token(i, "{", "`{`")?;
        let l = Loop {
            id: LoopId(id),
            start,
            end,
            carried: Vec::new(),
            stmts: Vec::new(),
            schedule,
        };
        Ok((i, (l, args)))
    }

    fn tensor(&self, i: &'s str) -> PResult<'s, TensorId> {
        let (rest, n) = name(i).map_err(|_| nom::Err::Failure(SyntaxError::new(i, "a tensor")))?;
        match self.by_name.get(n) {
            Some(&t) => Ok((rest, t)),
            None => err(i, "a tensor declared in the header"),
        }
    }

    /// `t[s0, s1]` after optional spaces.
    fn access(&self, i: &'s str) -> PResult<'s, Access> {
        let i = sp(i);
        let (i, tensor) = self.tensor(i)?;
        let (i, ()) = token(i, "[", "`[`")?;
        let (i, index) = self.list(i, "]", |r, i| r.subscript(i))?;
        let rank = self.tensors[tensor.0].shape.len();
        if index.len() != rank {
            return err(i, "as many subscripts as the tensor has axes");
        }
        Ok((
            i,
            Access {
                tensor,
                index,
                checked: false,
            },
        ))
    }

    fn subscript(&self, i: &'s str) -> PResult<'s, Subscript> {
        let i = sp(i);
        if let Some(rest) = i.strip_prefix("floor(") {
            let (rest, v) = self.value(rest)?;
            let (rest, ()) = token(rest, ")", "`)`")?;
            return Ok((rest, Subscript::Value(Box::new(v))));
        }
        let (rest, e) = index(i)?;
        Ok((rest, Subscript::Expr(e)))
    }

    fn stmt(&self, i: &'s str) -> PResult<'s, Stmt> {
        let i = sp(i);
        if let Some((rest, var)) = numbered(i, 'v')
            && !sp(rest).starts_with('[')
        {
            let Some((rest, op)) = accum_assign(rest) else {
                return err(sp(rest), "`+=`, `*=`, `max=` or `min=`");
            };
            let (rest, value) = self.value(rest)?;
            return Ok((
                rest,
                Stmt::Update {
                    var: VarId(var),
                    op,
                    value,
                },
            ));
        }
        let (rest, mut access) = self.access(i)?;
        let rest = match rest.strip_prefix('?') {
            Some(r) => {
                access.checked = true;
                r
            }
            None => rest,
        };
        if let Some((rest, op)) = accum_assign(rest) {
            let (rest, value) = self.value(rest)?;
            return Ok((rest, Stmt::Accumulate { access, op, value }));
        }
        let (rest, ()) = token(rest, "=", "`=`, `+=`, `*=`, `max=` or `min=`")?;
        let (rest, value) = self.value(rest)?;
        Ok((rest, Stmt::Store { access, value }))
    }

    /// A whole value: a checked load with its fill, or a comparison chain.
    fn value(&self, i: &'s str) -> PResult<'s, Value> {
        let (rest, v) = self.compare(i)?;
        if let Value::Load { access, .. } = &v
            && let Ok((after, ())) = token(rest, "??", "")
        {
            let (after, fill) = float(after)?;
            let mut access = access.clone();
            access.checked = true;
            return Ok((after, Value::Load { access, fill }));
        }
        Ok((rest, v))
    }

    fn compare(&self, i: &'s str) -> PResult<'s, Value> {
        self.chain(i, &COMPARISONS, Self::sum)
    }

    fn sum(&self, i: &'s str) -> PResult<'s, Value> {
        self.chain(
            i,
            &[("+", BinaryOp::Add), ("-", BinaryOp::Sub)],
            Self::product,
        )
    }

    fn product(&self, i: &'s str) -> PResult<'s, Value> {
        self.chain(
            i,
            &[("*", BinaryOp::Mul), ("/", BinaryOp::Div)],
            Self::prefix,
        )
    }

    /// `operand (op operand)*`, left-associative, for one binding strength.
    fn chain(
        &self,
        i: &'s str,
        operators: &[(&str, BinaryOp)],
        operand: fn(&Self, &'s str) -> PResult<'s, Value>,
    ) -> PResult<'s, Value> {
        let (mut i, mut acc) = operand(self, i)?;
        loop {
            let at = sp(i);
            let Some((rest, op)) = operators
                .iter()
                .find_map(|(t, op)| at.strip_prefix(t).map(|r| (r, *op)))
            else {
                return Ok((i, acc));
            };
            let (rest, rhs) = operand(self, rest)?;
            acc = Value::Binary(op, Box::new(acc), Box::new(rhs));
            i = rest;
        }
    }

    fn prefix(&self, i: &'s str) -> PResult<'s, Value> {
        let i = sp(i);
        if let Some(rest) = i.strip_prefix('-')
            && !rest.starts_with(|c: char| c.is_ascii_digit())
            && !rest.starts_with("inf")
            && !rest.starts_with("nan")
        {
            let (rest, x) = self.atom(rest)?;
            return Ok((rest, Value::Unary(UnaryOp::Neg, Box::new(x))));
        }
        self.atom(i)
    }

    fn atom(&self, i: &'s str) -> PResult<'s, Value> {
        const ATOM: &str = "a value: a number, `$param`, `vN`, a load, a call or `(`";
        let i = sp(i);
        if let Ok((rest, (text, is_float))) = number(i) {
            return if is_float {
                match text.parse::<f64>() {
                    Ok(v) => Ok((rest, Value::Const(v))),
                    Err(_) => err(i, "a float"),
                }
            } else {
                match text.parse::<i64>() {
                    Ok(v) => Ok((rest, Value::Index(Expr::Int(v)))),
                    Err(_) => err(i, "an integer that fits in 64 bits"),
                }
            };
        }
        if let Some(rest) = i.strip_prefix('(') {
            if let Some(found) = self.paren_index(rest) {
                return Ok(found);
            }
            let (rest, v) = self.value(rest)?;
            let (rest, ()) = token(rest, ")", "`)`")?;
            return Ok((rest, v));
        }
        if let Some(rest) = i.strip_prefix('$') {
            let (rest, p) = name(rest)
                .map_err(|_| nom::Err::Failure(SyntaxError::new(rest, "a parameter name")))?;
            return Ok((rest, Value::Param(p.to_string())));
        }
        let Ok((rest, word)) = name(i) else {
            return err(i, ATOM);
        };
        if rest.starts_with('[') && !rest.starts_with("[=") {
            let (rest, access) = self.access(i)?;
            return Ok((rest, Value::Load { access, fill: 0.0 }));
        }
        if let Some(args) = rest.strip_prefix('(') {
            return self.call(i, word, args);
        }
        if let Some((rest, var)) = numbered(i, 'v')
            && !self.dims.contains(word)
        {
            return Ok((rest, Value::Var(VarId(var))));
        }
        // A lone index atom: a loop variable, a named size, `dA0`.
        let (_, e) = index(word)?;
        Ok((rest, Value::Index(e)))
    }

    /// `word(args…)`: a unary or binary op, `where`, or an index `min` / `max`.
    fn call(&self, at: &'s str, word: &str, args: &'s str) -> PResult<'s, Value> {
        if word == "min" || word == "max" {
            // Only the call itself: the index parser would read on past `)`.
            let mut depth = 0usize;
            let close = args.char_indices().find_map(|(k, c)| match c {
                '(' => {
                    depth += 1;
                    None
                }
                ')' if depth == 0 => Some(k),
                ')' => {
                    depth -= 1;
                    None
                }
                _ => None,
            });
            let Some(close) = close else {
                return err(sp(args), "`)`");
            };
            let call_len = at.len() - args.len() + close + 1;
            let (rest, e) = index(&at[..call_len])?;
            Self::line_end(rest).map_err(nom::Err::Failure)?;
            return Ok((&at[call_len..], Value::Index(e)));
        }
        if word == "where" {
            let (rest, c) = self.value(args)?;
            let (rest, ()) = token(rest, ",", "`,`")?;
            let (rest, a) = self.value(rest)?;
            let (rest, ()) = token(rest, ",", "`,`")?;
            let (rest, b) = self.value(rest)?;
            let (rest, ()) = token(rest, ")", "`)`")?;
            return Ok((rest, Value::Where(Box::new(c), Box::new(a), Box::new(b))));
        }
        if let Some(op) = UnaryOp::from_name(word) {
            let (rest, x) = self.value(args)?;
            let (rest, ()) = token(rest, ")", "`)`")?;
            return Ok((rest, Value::Unary(op, Box::new(x))));
        }
        if let Some(op) = BinaryOp::from_name(word) {
            let (rest, a) = self.value(args)?;
            let (rest, ()) = token(rest, ",", "`,`")?;
            let (rest, b) = self.value(rest)?;
            let (rest, ()) = token(rest, ")", "`)`")?;
            return Ok((rest, Value::Binary(op, Box::new(a), Box::new(b))));
        }
        err(at, "an operator like `exp`, `maximum` or `where`")
    }

    /// `(expr)` as an index value, when the parenthesized text is an index
    /// expression over loop variables, sizes and params (not carried variables).
    fn paren_index(&self, i: &'s str) -> Option<(&'s str, Value)> {
        let (rest, e) = expr(sp(i)).ok()?;
        let (rest, ()) = token(rest, ")", "").ok()?;
        let mut found = Vec::new();
        names(&e, &mut found);
        let all_sizes = found
            .iter()
            .all(|n| self.dims.contains(n) || numbered(n, 'v').is_none());
        // A tensor name followed by `[` stops the index parser before `)`, so a
        // load never gets here; `(v0 + v1)` is a value.
        all_sizes.then_some((rest, Value::Index(e)))
    }
}
