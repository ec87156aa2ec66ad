//! The nom parser of `.uop` text: source -> a list of [`Stmt`]s.
//!
//! Nothing here knows what a name means or whether an op exists; that is
//! `build.rs`'s job.
//!
//! The module is public so that languages built on the same call and value syntax
//! (the graph text of `uop-graph`, with its `fn` / `while` / ...) can reuse it: a
//! [`Parser`] reads one [`Stmt`] ([`Parser::statement`]), one op [`Call`]
//! ([`Parser::call`]), one value ([`Parser::value`]) or one index expression
//! ([`Parser::item`]), each returning the rest of the input; the free functions
//! skip blanks and read names. Nothing here knows about graphs. Every token keeps its byte offset so that later errors (an
//! unknown name, a shape mismatch) can point at it. Index expressions inside
//! brackets are parsed by the crate's own index expression parser.

use nom::character::complete::digit1;

use crate::diag::SyntaxError;
use crate::index::parse::expr;
use crate::index::{Expr, is_plain_name};

/// Result type of the nom parsers of the text formats.
pub use crate::index::parse::PResult;
use crate::uop::DType;

/// How deeply brackets and calls may nest; deeper input is rejected before parsing
/// so that hostile input cannot overflow the stack of the recursive parsers.
/// The same limit as index expressions' ([`crate::index::MAX_DEPTH`]).
const MAX_NESTING: usize = crate::index::MAX_DEPTH;

/// A name as written, with its offset.
#[derive(Clone, Debug, PartialEq)]
pub struct Name {
    /// The name.
    pub text: String,
    /// Byte offset of its first character.
    pub at: usize,
}

/// An index expression with its source span (`at..end`).
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// The expression.
    pub expr: Expr,
    /// Byte offset of its first character.
    pub at: usize,
    /// Byte offset just past it.
    pub end: usize,
}

/// One line of a program.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `dtype f64`: the float type of a program that has no float inputs.
    Dtype {
        /// The type.
        dtype: DType,
        /// Its offset.
        at: usize,
    },
    /// `param kh` (several names may be listed).
    Param(Vec<Name>),
    /// `input a: f32[M, K]`; dims are names or non-negative integers.
    Input {
        /// The input's name.
        name: Name,
        /// Its element type.
        dtype: DType,
        /// Offset of the element type.
        dtype_at: usize,
        /// Each dim with its offset.
        dims: Vec<(Expr, usize)>,
    },
    /// `name = op(...)`.
    Let {
        /// The defined name.
        name: Name,
        /// The call.
        call: Call,
    },
    /// `output a, b`.
    Output(Vec<Name>),
    /// `assert N == M`.
    Assert {
        /// Offset of `assert`.
        at: usize,
        /// The left side.
        left: Item,
        /// The right side.
        right: Item,
    },
}

/// `op(arg, ..., attr=value, ...)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The op's name.
    pub op: Name,
    /// Arguments and attributes, in the order written.
    pub args: Vec<Arg>,
}

/// A positional argument (`attr` is `None`) or a named attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// The attribute's name, for `name=value`.
    pub attr: Option<Name>,
    /// The value.
    pub value: ValueSyntax,
    /// Offset of the value.
    pub at: usize,
}

/// A value as written.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueSyntax {
    /// A nested op call.
    Call(Call),
    /// A name (a tensor, or whatever the language makes of it).
    Name(String),
    /// An integer literal.
    Int(i64),
    /// A number with a fraction or exponent, or `inf` / `nan`.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A `$param` (without the `$`).
    Param(String),
    /// A `"string"`.
    Str(String),
    /// A `[list]` of index expressions.
    List(Vec<Item>),
}

/// Parses a whole program.
pub fn parse(src: &str) -> Result<Vec<Stmt>, SyntaxError<'_>> {
    check_nesting(src)?;
    let p = Parser::new(src);
    let mut stmts = Vec::new();
    let mut rest = skip_blank(src);
    while !rest.is_empty() {
        let (r, stmt) = p.statement(rest).map_err(unwrap_err)?;
        rest = end_of_statement(r)?;
        stmts.push(stmt);
        rest = skip_blank(rest);
    }
    Ok(stmts)
}

/// The error inside a nom error.
pub fn unwrap_err(e: nom::Err<SyntaxError<'_>>) -> SyntaxError<'_> {
    match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => e,
        // Only streaming parsers report `Incomplete`; ours are all complete.
        nom::Err::Incomplete(_) => SyntaxError::new("", "more input"),
    }
}

/// A hard failure at `at`, expecting `expected`.
pub fn fail<'a, T>(at: &'a str, expected: &'static str) -> PResult<'a, T> {
    Err(nom::Err::Failure(SyntaxError::new(at, expected)))
}

/// Turns a recoverable nom error into a hard one: once a construct is recognised,
/// its errors are final (and keep their position).
pub fn cut<T>(r: PResult<'_, T>) -> PResult<'_, T> {
    r.map_err(|e| match e {
        nom::Err::Error(e) => nom::Err::Failure(e),
        other => other,
    })
}

/// Rejects input nested deeper than [`MAX_NESTING`] (brackets, or a run of signs,
/// each of which the expression parser reads as one more unary level), pointing at
/// the first level too many.
pub fn check_nesting(src: &str) -> Result<(), SyntaxError<'_>> {
    let mut depth = 0usize;
    let mut signs = 0usize;
    let mut in_comment = false;
    let mut in_string = false;
    for (pos, c) in src.char_indices() {
        if !matches!(c, '+' | '-' | ' ' | '\t' | '\r') {
            signs = 0;
        }
        match c {
            '\n' => {
                in_comment = false;
                in_string = false;
            }
            _ if in_comment => {}
            '"' => in_string = !in_string,
            _ if in_string => {}
            '#' => in_comment = true,
            '(' | '[' | '+' | '-' => {
                let level = if matches!(c, '+' | '-') {
                    signs += 1;
                    signs
                } else {
                    depth += 1;
                    depth
                };
                if level > MAX_NESTING {
                    return Err(SyntaxError::new(
                        &src[pos..],
                        "less deeply nested expressions (at most 256 levels)",
                    ));
                }
            }
            ')' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Spaces and tabs (a statement continues on its line).
pub fn sp(i: &str) -> &str {
    i.trim_start_matches([' ', '\t', '\r'])
}

/// True when nothing but a comment is left on the line.
fn ends_line(i: &str) -> bool {
    i.is_empty() || i.starts_with(['\n', '#'])
}

/// Whitespace, newlines and comments (inside brackets, and between statements).
pub fn skip_blank(mut i: &str) -> &str {
    loop {
        i = i.trim_start();
        match i.strip_prefix('#') {
            Some(comment) => i = comment.find('\n').map_or("", |p| &comment[p..]),
            None => return i,
        }
    }
}

fn end_of_statement(i: &str) -> Result<&str, SyntaxError<'_>> {
    let i = sp(i);
    let i = match i.strip_prefix('#') {
        Some(comment) => comment.find('\n').map_or("", |p| &comment[p..]),
        None => i,
    };
    if i.is_empty() {
        Ok(i)
    } else if let Some(rest) = i.strip_prefix('\n') {
        Ok(rest)
    } else {
        Err(SyntaxError::new(i, "end of line"))
    }
}

/// `[A-Za-z0-9_]`.
pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `[A-Za-z_][A-Za-z0-9_]*`, as a recoverable parser.
pub fn identifier(i: &str) -> PResult<'_, &str> {
    let starts = i.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if !starts {
        return Err(nom::Err::Error(SyntaxError::new(i, "a name")));
    }
    let len = i.find(|c: char| !is_ident_char(c)).unwrap_or(i.len());
    Ok((&i[len..], &i[..len]))
}

/// True when `i` starts with `=` but not `==`.
pub fn starts_with_assign(i: &str) -> bool {
    i.starts_with('=') && !i.starts_with("==")
}

fn expect_char<'a>(i: &'a str, c: char, expected: &'static str) -> PResult<'a, ()> {
    match i.strip_prefix(c) {
        Some(rest) => Ok((rest, ())),
        None => fail(i, expected),
    }
}

const STATEMENT: &str = "a statement (`input`, `param`, `output`, `assert` or `name = op(...)`)";
const VALUE: &str = "a value (a tensor name, number, $param, [list], \"string\" or op call)";

/// The parser, holding the full source to turn positions into offsets. Its methods
/// take the remaining input and return what is left after the construct.
pub struct Parser<'s> {
    src: &'s str,
}

impl<'s> Parser<'s> {
    /// A parser over `src`; every input given to its methods must be a suffix of `src`.
    pub fn new(src: &'s str) -> Self {
        Parser { src }
    }

    /// The byte offset in the source of the remaining input `rest`.
    pub fn at(&self, rest: &str) -> usize {
        self.src.len() - rest.len()
    }

    /// A name, failing with `expected` if there is none.
    pub fn name(&self, i: &'s str, expected: &'static str) -> PResult<'s, Name> {
        match identifier(i) {
            Ok((rest, text)) => Ok((
                rest,
                Name {
                    text: text.to_string(),
                    at: self.at(i),
                },
            )),
            Err(_) => fail(i, expected),
        }
    }

    /// One statement of a program (`param`, `input`, `output`, `assert`, `dtype`, `name = op(...)`).
    pub fn statement(&self, i: &'s str) -> PResult<'s, Stmt> {
        let Ok((after_word, word)) = identifier(i) else {
            return fail(i, STATEMENT);
        };
        let after = sp(after_word);
        if starts_with_assign(after) {
            return self.assignment(i);
        }
        match word {
            "param" => self.param(after),
            "input" => self.input(after),
            "output" => {
                let (rest, names) = self.name_list(after, "the name of a tensor to output")?;
                Ok((rest, Stmt::Output(names)))
            }
            "assert" => self.assert(after, self.at(i)),
            "dtype" => {
                let (rest, (dtype, at)) = self.dtype(after)?;
                Ok((rest, Stmt::Dtype { dtype, at }))
            }
            _ => fail(i, STATEMENT),
        }
    }

    fn param(&self, i: &'s str) -> PResult<'s, Stmt> {
        // `param $kh` reads naturally too; the `$` is optional.
        let mut names = Vec::new();
        let mut rest = i;
        loop {
            let start = sp(rest).strip_prefix('$').unwrap_or(sp(rest));
            let (r, name) = self.name(start, "a parameter name")?;
            names.push(name);
            match sp(r).strip_prefix(',') {
                Some(r) => rest = r,
                None => return Ok((r, Stmt::Param(names))),
            }
        }
    }

    /// Comma-separated names.
    pub fn name_list(&self, i: &'s str, expected: &'static str) -> PResult<'s, Vec<Name>> {
        let mut names = Vec::new();
        let mut rest = i;
        loop {
            let (r, name) = self.name(sp(rest), expected)?;
            names.push(name);
            match sp(r).strip_prefix(',') {
                Some(r) => rest = r,
                None => return Ok((r, names)),
            }
        }
    }

    /// An element type: `f32`, `f64` or `i32`, with its offset.
    pub fn dtype(&self, i: &'s str) -> PResult<'s, (DType, usize)> {
        const EXPECTED: &str = "an element type: f32, f64 or i32";
        let Ok((rest, word)) = identifier(i) else {
            return fail(i, EXPECTED);
        };
        match DType::from_name(word) {
            Some(d) => Ok((rest, (d, self.at(i)))),
            None => fail(i, EXPECTED),
        }
    }

    fn input(&self, i: &'s str) -> PResult<'s, Stmt> {
        let (rest, name) = self.name(i, "an input name")?;
        let (rest, ()) = expect_char(sp(rest), ':', "`:` and the input's type, like `: f32[N]`")?;
        let (rest, (dtype, dtype_at)) = self.dtype(sp(rest))?;
        let (mut rest, ()) = expect_char(rest, '[', "`[` and the input's dims, like `f32[M, K]`")?;
        let mut dims = Vec::new();
        rest = skip_blank(rest);
        if let Some(r) = rest.strip_prefix(']') {
            return Ok((
                r,
                Stmt::Input {
                    name,
                    dtype,
                    dtype_at,
                    dims,
                },
            ));
        }
        loop {
            let (r, dim) = self.dim(rest)?;
            dims.push((dim, self.at(rest)));
            let r = skip_blank(r);
            if let Some(r) = r.strip_prefix(',') {
                rest = skip_blank(r);
            } else if let Some(r) = r.strip_prefix(']') {
                return Ok((
                    r,
                    Stmt::Input {
                        name,
                        dtype,
                        dtype_at,
                        dims,
                    },
                ));
            } else {
                return fail(r, "`,` or `]`");
            }
        }
    }

    /// A dim of an input: a plain name or a non-negative integer (no expressions).
    fn dim(&self, i: &'s str) -> PResult<'s, Expr> {
        const EXPECTED: &str = "a dimension: a name or a non-negative integer";
        if let Ok((rest, digits)) = digit1::<_, SyntaxError>(i) {
            return match digits.parse::<i64>() {
                Ok(v) => Ok((rest, Expr::Int(v))),
                Err(_) => fail(i, "an integer that fits in 64 bits"),
            };
        }
        match identifier(i) {
            Ok((rest, word)) if is_plain_name(word) => Ok((rest, Expr::name(word))),
            Ok(_) => fail(
                i,
                "a dimension name that index expressions do not reserve (`i0`, `i1`, ... \
                 are loop indices, `dA0`, `dB1`, ... dims of sources, `min` and `max` \
                 functions)",
            ),
            _ => fail(i, EXPECTED),
        }
    }

    fn assert(&self, i: &'s str, at: usize) -> PResult<'s, Stmt> {
        if ends_line(sp(i)) {
            return fail(sp(i), "a size expression after `assert`");
        }
        let (rest, left) = self.item(i)?;
        let rest = sp(rest);
        let Some(rest) = rest.strip_prefix("==") else {
            return fail(rest, "`==`");
        };
        // An `assert` is one line: a missing right side is reported where it is
        // missing, not on the next line.
        if ends_line(sp(rest)) {
            return fail(sp(rest), "a size expression after `==`");
        }
        let (rest, right) = self.item(rest)?;
        Ok((rest, Stmt::Assert { at, left, right }))
    }

    /// One index expression, with its span.
    pub fn item(&self, i: &'s str) -> PResult<'s, Item> {
        let start = skip_blank(i);
        let (rest, e) = cut(expr(start))?;
        Ok((
            rest,
            Item {
                expr: e,
                at: self.at(start),
                end: self.at(rest),
            },
        ))
    }

    fn assignment(&self, i: &'s str) -> PResult<'s, Stmt> {
        let (rest, name) = self.name(i, "a name")?;
        // `statement` saw the `=` already.
        let rest = sp(&sp(rest)[1..]);
        let (rest, call) = self.call(rest)?;
        Ok((rest, Stmt::Let { name, call }))
    }

    /// An op call `name(args...)`.
    pub fn call(&self, i: &'s str) -> PResult<'s, Call> {
        const EXPECTED: &str = "an op call like `exp(x)`";
        match identifier(i) {
            Ok((rest, _)) if sp(rest).starts_with('(') => self.call_after_check(i),
            _ => fail(i, EXPECTED),
        }
    }

    /// A call whose `name (` prefix is known to be there.
    fn call_after_check(&self, i: &'s str) -> PResult<'s, Call> {
        let (rest, op) = self.name(i, "an op name")?;
        let mut rest = skip_blank(&sp(rest)[1..]);
        let mut args = Vec::new();
        if let Some(r) = rest.strip_prefix(')') {
            return Ok((r, Call { op, args }));
        }
        loop {
            let (r, arg) = self.arg(rest)?;
            args.push(arg);
            let r = skip_blank(r);
            if let Some(r) = r.strip_prefix(',') {
                rest = skip_blank(r);
                // A trailing comma before `)` is fine.
                if let Some(r) = rest.strip_prefix(')') {
                    return Ok((r, Call { op, args }));
                }
            } else if let Some(r) = r.strip_prefix(')') {
                return Ok((r, Call { op, args }));
            } else {
                return fail(r, "`,` or `)`");
            }
        }
    }

    /// One argument of a call: `value` or `attr=value`.
    pub fn arg(&self, i: &'s str) -> PResult<'s, Arg> {
        if let Ok((rest, word)) = identifier(i) {
            let after = skip_blank(rest);
            if starts_with_assign(after) {
                let attr = Name {
                    text: word.to_string(),
                    at: self.at(i),
                };
                let value_start = skip_blank(&after[1..]);
                let (rest, value) = self.value(value_start)?;
                return Ok((
                    rest,
                    Arg {
                        attr: Some(attr),
                        value,
                        at: self.at(value_start),
                    },
                ));
            }
        }
        let (rest, value) = self.value(i)?;
        Ok((
            rest,
            Arg {
                attr: None,
                value,
                at: self.at(i),
            },
        ))
    }

    /// One value: a name, number, `$param`, `[list]`, `"string"`, `true` / `false` or a nested call.
    pub fn value(&self, i: &'s str) -> PResult<'s, ValueSyntax> {
        if i.starts_with('"') {
            return self.string(i);
        }
        if let Some(rest) = i.strip_prefix('[') {
            return self.list(rest);
        }
        if let Some(rest) = i.strip_prefix('$') {
            let (rest, name) = self.name(rest, "a parameter name after `$`")?;
            return Ok((rest, ValueSyntax::Param(name.text)));
        }
        if let Some(r) = number(i) {
            return r;
        }
        let Ok((rest, word)) = identifier(i) else {
            return fail(i, VALUE);
        };
        match word {
            "true" => Ok((rest, ValueSyntax::Bool(true))),
            "false" => Ok((rest, ValueSyntax::Bool(false))),
            _ if sp(rest).starts_with('(') => {
                let (rest, call) = self.call_after_check(i)?;
                Ok((rest, ValueSyntax::Call(call)))
            }
            _ => Ok((rest, ValueSyntax::Name(word.to_string()))),
        }
    }

    fn string(&self, i: &'s str) -> PResult<'s, ValueSyntax> {
        let mut text = String::new();
        let mut chars = i[1..].char_indices();
        while let Some((pos, c)) = chars.next() {
            match c {
                '"' => return Ok((&i[pos + 2..], ValueSyntax::Str(text))),
                '\n' => return fail(&i[pos + 1..], "a closing `\"`"),
                '\\' => match chars.next() {
                    Some((_, e @ ('"' | '\\'))) => text.push(e),
                    Some((_, 'n')) => text.push('\n'),
                    _ => return fail(&i[pos + 1..], "an escape: `\\\"`, `\\\\` or `\\n`"),
                },
                c => text.push(c),
            }
        }
        fail("", "a closing `\"`")
    }

    /// The items of a `[...]` list (the `[` is consumed).
    pub fn list(&self, i: &'s str) -> PResult<'s, ValueSyntax> {
        let mut rest = skip_blank(i);
        let mut items = Vec::new();
        loop {
            if let Some(r) = rest.strip_prefix(']') {
                return Ok((r, ValueSyntax::List(items)));
            }
            let (r, item) = self.item(rest)?;
            items.push(item);
            let r = skip_blank(r);
            if let Some(r) = r.strip_prefix(',') {
                rest = skip_blank(r);
            } else if let Some(r) = r.strip_prefix(']') {
                return Ok((r, ValueSyntax::List(items)));
            } else {
                return fail(r, "`,` or `]`");
            }
        }
    }
}

/// A scalar literal: `2`, `-0.5`, `1e-5`, `.5`, `inf`, `-inf`, `nan`; `None` if `i`
/// does not start like one.
pub fn number(i: &str) -> Option<PResult<'_, ValueSyntax>> {
    let unsigned = i.strip_prefix(['+', '-']).unwrap_or(i);
    let sign_len = i.len() - unsigned.len();
    for word in ["inf", "nan"] {
        if let Some(after) = unsigned.strip_prefix(word)
            && !after.starts_with(is_ident_char)
        {
            let v = if word == "inf" {
                f64::INFINITY
            } else {
                f64::NAN
            };
            let v = if i.starts_with('-') { -v } else { v };
            return Some(Ok((after, ValueSyntax::Float(v))));
        }
    }
    let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let int_len = digits(unsigned);
    let mut len = int_len;
    let mut is_float = false;
    if unsigned[len..].starts_with('.') {
        is_float = true;
        len += 1 + digits(&unsigned[len + 1..]);
    }
    if len == 0 || (len == 1 && is_float) {
        // No digits at all: not a number, unless a sign promised one.
        return (sign_len > 0).then(|| {
            fail(
                unsigned,
                "a number after the sign (negate a tensor with `neg(x)`)",
            )
        });
    }
    let mantissa_end = len;
    if unsigned[len..].starts_with(['e', 'E']) {
        let exp = &unsigned[len + 1..];
        let exp_digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        let n = digits(exp_digits);
        if n == 0 {
            return Some(fail(&unsigned[mantissa_end..], "digits of an exponent"));
        }
        is_float = true;
        len += 1 + (exp.len() - exp_digits.len()) + n;
    }
    let text = &i[..sign_len + len];
    let rest = &i[sign_len + len..];
    if !is_float && let Ok(v) = text.parse::<i64>() {
        return Some(Ok((rest, ValueSyntax::Int(v))));
    }
    // Integers beyond i64 and all decimals: Rust's parser rounds correctly.
    match text.parse::<f64>() {
        Ok(v) => Some(Ok((rest, ValueSyntax::Float(v)))),
        Err(_) => Some(fail(i, "a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(src: &str) -> Stmt {
        let mut stmts = parse(src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
        assert_eq!(stmts.len(), 1, "{src}");
        stmts.remove(0)
    }

    fn call_of(src: &str) -> Call {
        match one(src) {
            Stmt::Let { call, .. } => call,
            other => panic!("not an assignment: {other:?}"),
        }
    }

    fn error_offset(src: &str) -> (usize, &'static str) {
        let e = parse(src).expect_err(src);
        (src.len() - e.at.len(), e.expected)
    }

    #[test]
    fn statements_of_every_kind() {
        assert_eq!(
            one("param kh, $kw"),
            Stmt::Param(vec![
                Name {
                    text: "kh".into(),
                    at: 6
                },
                Name {
                    text: "kw".into(),
                    at: 11
                }
            ])
        );
        assert_eq!(
            one("input a: f32[M, 3]"),
            Stmt::Input {
                name: Name {
                    text: "a".into(),
                    at: 6
                },
                dtype: DType::F32,
                dtype_at: 9,
                dims: vec![(Expr::name("M"), 13), (Expr::Int(3), 16)],
            }
        );
        assert!(matches!(one("input s: f64[]"), Stmt::Input { dims, .. } if dims.is_empty()));
        assert!(matches!(one("output a, b # two"), Stmt::Output(names) if names.len() == 2));
        assert!(matches!(
            one("dtype f64"),
            Stmt::Dtype {
                dtype: DType::F64,
                at: 6
            }
        ));
        match one("assert N == M + 1") {
            Stmt::Assert { at, left, right } => {
                assert_eq!(at, 0);
                assert_eq!((left.at, left.end), (7, 8));
                assert_eq!(right.expr, Expr::name("M") + Expr::Int(1));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn calls_nest_and_take_every_kind_of_value() {
        let call = call_of(
            "y = f(g(x), 2, -2.5e-3, $kh, [i0 + 1, M], \"max\", true, -inf, axis=-1, w=[1, 2],)",
        );
        assert_eq!(call.op.text, "f");
        let values: Vec<&ValueSyntax> = call.args.iter().map(|a| &a.value).collect();
        assert!(matches!(values[0], ValueSyntax::Call(c) if c.op.text == "g" && c.op.at == 6));
        assert_eq!(values[1], &ValueSyntax::Int(2));
        assert_eq!(values[2], &ValueSyntax::Float(-2.5e-3));
        assert_eq!(values[3], &ValueSyntax::Param("kh".into()));
        assert!(
            matches!(values[4], ValueSyntax::List(items) if items.len() == 2 && items[1].at == 38)
        );
        assert_eq!(values[5], &ValueSyntax::Str("max".into()));
        assert_eq!(values[6], &ValueSyntax::Bool(true));
        assert_eq!(values[7], &ValueSyntax::Float(f64::NEG_INFINITY));
        assert_eq!(
            call.args[8].attr.as_ref().map(|n| n.text.as_str()),
            Some("axis")
        );
        assert_eq!(values[8], &ValueSyntax::Int(-1));
        assert!(matches!(values[9], ValueSyntax::List(items) if items.len() == 2));
    }

    #[test]
    fn numbers_keep_sign_and_precision() {
        for (text, v) in [
            ("-0.0", -0.0f64),
            ("5e-324", 5e-324),
            ("1e16", 1e16),
            (".5", 0.5),
            ("99999999999999999999", 1e20),
        ] {
            match number(text) {
                Some(Ok(("", ValueSyntax::Float(got)))) => {
                    assert_eq!(got.to_bits(), v.to_bits(), "{text}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(matches!(number("nan"), Some(Ok(("", ValueSyntax::Float(v)))) if v.is_nan()));
        assert!(number("x").is_none());
        assert!(matches!(number("-x"), Some(Err(_))));
    }

    #[test]
    fn blank_lines_and_comments_are_skipped() {
        let stmts = parse("# header\n\n  input x: f32[N]   # trailing\n\noutput x\n").unwrap();
        assert_eq!(stmts.len(), 2);
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn calls_may_span_lines() {
        let call = call_of("y = f(\n  x,  # the input\n  axis=1\n)");
        assert_eq!(call.args.len(), 2);
    }

    #[test]
    fn errors_point_at_the_offending_token() {
        assert_eq!(error_offset("y = exp(x"), (9, "`,` or `)`"));
        assert_eq!(error_offset("y = exp(x) z"), (11, "end of line"));
        assert_eq!(
            error_offset("input a f32[N]"),
            (8, "`:` and the input's type, like `: f32[N]`")
        );
        assert_eq!(error_offset("input a: f16[N]").0, 9);
        assert_eq!(error_offset("input a: f32[N + 1]"), (15, "`,` or `]`"));
        assert_eq!(error_offset("input a: f32[i0]").0, 13);
        assert_eq!(error_offset("y = reindex(x, [i0 +], [i0])").0, 20);
        assert_eq!(error_offset("y = x"), (4, "an op call like `exp(x)`"));
        assert_eq!(error_offset("inptu x: f32[N]"), (0, STATEMENT));
        assert_eq!(error_offset("12 = exp(x)").0, 0);
        assert_eq!(error_offset("y = f(\"abc\n)").0, 10);
        assert_eq!(error_offset("assert N = M").0, 9);
        assert_eq!(error_offset("y = f(1e)").0, 7);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let src = format!("y = {}x{}", "exp(".repeat(500), ")".repeat(500));
        let (offset, _) = error_offset(&src);
        assert_eq!(offset, 4 + 4 * MAX_NESTING + 3);
        let src = format!("y = reindex(x, [{}1], [i0])", "- ".repeat(100_000));
        let (offset, _) = error_offset(&src);
        assert_eq!(offset, 16 + 2 * MAX_NESTING);
        // Just inside the limit, on a test thread's small stack, it parses.
        let src = format!(
            "y = {}x{}",
            "exp(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        assert!(parse(&src).is_ok());
    }
}
