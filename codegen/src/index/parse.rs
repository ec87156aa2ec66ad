//! The nom parser of index expressions (grammar in DESIGN.md §3).
//!
//! `expr` is a nom parser so the `.uop` text parser can embed it; [`parse_expr`]
//! parses a whole string and returns a positioned [`Diagnostic`] on failure.

use nom::{
    IResult, Parser,
    branch::alt,
    bytes::complete::{tag, take_while, take_while1},
    character::complete::{char, digit1, multispace0},
    combinator::{opt, recognize},
    sequence::{pair, preceded},
};

use super::ast::{DimRef, Expr, IndexOp};
use crate::diag::{Diagnostic, SyntaxError};

/// Result type of the nom parsers in this crate.
pub type PResult<'a, T> = IResult<&'a str, T, SyntaxError<'a>>;

/// Parses a complete index expression; surrounding whitespace is allowed.
///
/// Input nested deeper than 256 levels (parentheses, signs, operator chains) is
/// rejected with an error rather than risking the stack.
///
/// ```
/// use uop_codegen::index::{parse_expr, Expr};
/// let e = parse_expr("dA1 - $kh + 1").unwrap();
/// assert_eq!(e.to_string(), "dA1 - $kh + 1");
/// assert!(parse_expr("i0 +").is_err());
/// ```
pub fn parse_expr(src: &str) -> Result<Expr, Diagnostic> {
    match expr(src) {
        Ok((rest, e)) => {
            let rest_ws = rest.trim_start();
            if rest_ws.is_empty() {
                Ok(e)
            } else {
                Err(
                    SyntaxError::new(rest_ws, "an operator or end of expression")
                        .into_diagnostic(src),
                )
            }
        }
        Err(nom::Err::Error(e)) | Err(nom::Err::Failure(e)) => Err(e.into_diagnostic(src)),
        Err(nom::Err::Incomplete(_)) => {
            Err(SyntaxError::new("", "an index expression").into_diagnostic(src))
        }
    }
}

/// Replaces the error of `p` (when it fails without consuming past `input`) with `expected`.
fn expecting<'a, O>(
    expected: &'static str,
    mut p: impl Parser<&'a str, Output = O, Error = SyntaxError<'a>>,
) -> impl FnMut(&'a str) -> PResult<'a, O> {
    move |input: &'a str| match p.parse(input) {
        Err(nom::Err::Error(e)) if e.at.len() >= input.trim_start().len() => Err(nom::Err::Error(
            SyntaxError::new(input.trim_start(), expected),
        )),
        other => other,
    }
}

fn ws<'a, O>(
    p: impl Parser<&'a str, Output = O, Error = SyntaxError<'a>>,
) -> impl Parser<&'a str, Output = O, Error = SyntaxError<'a>> {
    preceded(multispace0, p)
}

/// The deepest nesting accepted: parentheses, signs, `min` / `max` and each
/// operator of a chain count. Deeper input is rejected so that the parser and every
/// recursive walk over the tree (printing, simplifying, dropping) stay far from the
/// end of the stack, whatever text a user supplies.
/// The `.uop` text format's bracket nesting uses the same limit.
pub const MAX_DEPTH: usize = 256;

/// The error for input nested deeper than [`MAX_DEPTH`].
fn too_deep(at: &str) -> nom::Err<SyntaxError<'_>> {
    nom::Err::Failure(SyntaxError::new(
        at.trim_start(),
        "an expression nested at most 256 levels deep",
    ))
}

/// The error for a chain of `+ -` or `* / %` longer than [`MAX_DEPTH`]: each
/// operator of a chain adds a level to the tree.
fn too_long(at: &str) -> nom::Err<SyntaxError<'_>> {
    nom::Err::Failure(SyntaxError::new(
        at.trim_start(),
        "at most 256 terms in one chain of `+ -` or `* / %` (write a longer sum in parts)",
    ))
}

const _: () = assert!(MAX_DEPTH == 256, "the messages above spell the limit out");

/// An expression and the depth of its tree (a leaf has depth 1).
type Deep = (Expr, usize);

/// A full expression: terms joined by `+` and `-`, left-associative.
pub(crate) fn expr(input: &str) -> PResult<'_, Expr> {
    sum(input, 0).map(|(rest, (e, _))| (rest, e))
}

/// `expr` at parser nesting `level`.
fn sum(input: &str, level: usize) -> PResult<'_, Deep> {
    if level > MAX_DEPTH {
        return Err(too_deep(input));
    }
    let (mut input, (mut acc, mut depth)) = term(input, level)?;
    loop {
        let op = ws(alt((char('+'), char('-')))).parse(input);
        let Ok((after_op, c)) = op else {
            return Ok((input, (acc, depth)));
        };
        let (rest, (rhs, rhs_depth)) = term(after_op, level).map_err(fail)?;
        let chain = depth + 1 > MAX_DEPTH && rhs_depth < MAX_DEPTH;
        depth = depth.max(rhs_depth) + 1;
        if depth > MAX_DEPTH {
            return Err(if chain {
                too_long(input)
            } else {
                too_deep(input)
            });
        }
        let op = if c == '+' { IndexOp::Add } else { IndexOp::Sub };
        acc = Expr::bin(op, acc, rhs);
        input = rest;
    }
}

fn term(input: &str, level: usize) -> PResult<'_, Deep> {
    let (mut input, (mut acc, mut depth)) = unary(input, level)?;
    loop {
        let op = ws(alt((char('*'), char('/'), char('%')))).parse(input);
        let Ok((after_op, c)) = op else {
            return Ok((input, (acc, depth)));
        };
        let (rest, (rhs, rhs_depth)) = unary(after_op, level).map_err(fail)?;
        let chain = depth + 1 > MAX_DEPTH && rhs_depth < MAX_DEPTH;
        depth = depth.max(rhs_depth) + 1;
        if depth > MAX_DEPTH {
            return Err(if chain {
                too_long(input)
            } else {
                too_deep(input)
            });
        }
        let op = match c {
            '*' => IndexOp::Mul,
            '/' => IndexOp::Div,
            _ => IndexOp::Mod,
        };
        acc = Expr::bin(op, acc, rhs);
        input = rest;
    }
}

fn unary(input: &str, level: usize) -> PResult<'_, Deep> {
    let input = input.trim_start();
    if level > MAX_DEPTH {
        return Err(too_deep(input));
    }
    if let Some(rest) = input.strip_prefix('-') {
        // `-` directly before a literal is a negative literal, so `Int(-3)` round-trips.
        if let Ok((after, digits)) = digit1::<_, SyntaxError>(rest) {
            let followed_by_ident = after.starts_with(|c: char| c.is_alphanumeric() || c == '_');
            if !followed_by_ident {
                let v = literal(&format!("-{digits}"), input)?;
                return Ok((after, (Expr::Int(v), 1)));
            }
        }
        let (rest, (e, depth)) = unary(rest, level + 1)?;
        if depth + 1 > MAX_DEPTH {
            return Err(too_deep(input));
        }
        return Ok((rest, (Expr::Neg(Box::new(e)), depth + 1)));
    }
    if let Some(rest) = input.strip_prefix('+') {
        return unary(rest, level + 1);
    }
    expecting("a number, index, dimension, $param or `(`", |i| {
        atom(i, level)
    })
    .parse(input)
}

fn literal<'a>(text: &str, at: &'a str) -> Result<i64, nom::Err<SyntaxError<'a>>> {
    text.parse::<i64>()
        .map_err(|_| nom::Err::Failure(SyntaxError::new(at, "an integer that fits in 64 bits")))
}

fn identifier(input: &str) -> PResult<'_, &str> {
    recognize(pair(
        take_while1(|c: char| c.is_ascii_alphabetic() || c == '_'),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ))
    .parse(input)
}

fn atom(input: &str, level: usize) -> PResult<'_, Deep> {
    let input = input.trim_start();
    if let Ok((rest, digits)) = digit1::<_, SyntaxError>(input) {
        let v = literal(digits, input)?;
        return Ok((rest, (Expr::Int(v), 1)));
    }
    if let Some(rest) = input.strip_prefix('(') {
        let (rest, e) = sum(rest, level + 1)?;
        let (rest, _) = expecting("`)`", ws(char(')'))).parse(rest).map_err(fail)?;
        return Ok((rest, e));
    }
    if let Some(rest) = input.strip_prefix('$') {
        let (rest, name) = expecting("a parameter name after `$`", identifier)
            .parse(rest)
            .map_err(fail)?;
        return Ok((rest, (Expr::Param(name.to_string()), 1)));
    }
    let (rest, ident) = identifier(input)?;
    if let Some(op) = function(ident)
        && let Ok((rest, _)) = ws(char::<_, SyntaxError>('(')).parse(rest)
    {
        let (rest, (a, a_depth)) = sum(rest, level + 1).map_err(fail)?;
        let (rest, _) = expecting("`,`", ws(char(','))).parse(rest).map_err(fail)?;
        let (rest, (b, b_depth)) = sum(rest, level + 1).map_err(fail)?;
        let (rest, _) = expecting("`)`", ws(char(')'))).parse(rest).map_err(fail)?;
        let depth = a_depth.max(b_depth) + 1;
        if depth > MAX_DEPTH {
            return Err(too_deep(input));
        }
        return Ok((rest, (Expr::bin(op, a, b), depth)));
    }
    if let Some(n) = loop_index(ident) {
        return Ok((rest, (Expr::Index(n), 1)));
    }
    if let Some(d) = dim_ref(ident) {
        let (rest, eq) = opt(preceded(tag("[="), dim_assertion)).parse(rest)?;
        if eq.is_some() {
            let (rest, _) = expecting("`]`", char(']')).parse(rest).map_err(fail)?;
            return Ok((rest, (Expr::Dim(d, eq), 1)));
        }
        return Ok((rest, (Expr::Dim(d, None), 1)));
    }
    Ok((rest, (Expr::Name(ident.to_string()), 1)))
}

fn dim_assertion(input: &str) -> PResult<'_, DimRef> {
    let (rest, ident) = expecting("a dimension like `dB3`", identifier)
        .parse(input)
        .map_err(fail)?;
    match dim_ref(ident) {
        Some(d) => Ok((rest, d)),
        None => Err(nom::Err::Failure(SyntaxError::new(
            input,
            "a dimension like `dB3`",
        ))),
    }
}

fn fail(e: nom::Err<SyntaxError<'_>>) -> nom::Err<SyntaxError<'_>> {
    match e {
        nom::Err::Error(e) => nom::Err::Failure(e),
        other => other,
    }
}

fn function(ident: &str) -> Option<IndexOp> {
    match ident {
        "min" => Some(IndexOp::Min),
        "max" => Some(IndexOp::Max),
        _ => None,
    }
}

/// `i` followed by digits only.
fn loop_index(ident: &str) -> Option<usize> {
    let digits = ident.strip_prefix('i')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `d`, one uppercase letter, digits only.
fn dim_ref(ident: &str) -> Option<DimRef> {
    let rest = ident.strip_prefix('d')?;
    let mut chars = rest.chars();
    let letter = chars.next().filter(|c| c.is_ascii_uppercase())?;
    let digits = chars.as_str();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(DimRef {
        source: (letter as u8 - b'A') as usize,
        axis: digits.parse().ok()?,
    })
}

/// True when `ident` would parse as a plain name (not an index, dimension reference
/// or reserved word), so it can be used as a named dimension.
pub fn is_plain_name(ident: &str) -> bool {
    matches!(identifier(ident), Ok(("", _)))
        && loop_index(ident).is_none()
        && dim_ref(ident).is_none()
        && function(ident).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Expr {
        parse_expr(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn nnc_forms() {
        assert_eq!(p("i3"), Expr::Index(3));
        assert_eq!(p("$kh"), Expr::param("kh"));
        assert_eq!(
            p("dA1[=dB0]"),
            Expr::Dim(
                DimRef { source: 0, axis: 1 },
                Some(DimRef { source: 1, axis: 0 })
            )
        );
        assert_eq!(p("M"), Expr::name("M"));
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(
            p("1 - 2 - 3"),
            Expr::bin(
                IndexOp::Sub,
                Expr::bin(IndexOp::Sub, 1.into(), 2.into()),
                3.into()
            )
        );
        assert_eq!(
            p("1 + 2 * 3"),
            Expr::bin(
                IndexOp::Add,
                1.into(),
                Expr::bin(IndexOp::Mul, 2.into(), 3.into())
            )
        );
        assert_eq!(p("-3"), Expr::Int(-3));
        assert_eq!(p("-(3)"), Expr::Neg(Box::new(Expr::Int(3))));
        assert_eq!(
            p("min(i0, 4)"),
            Expr::bin(IndexOp::Min, Expr::Index(0), 4.into())
        );
    }

    #[test]
    fn nesting_is_limited_so_deep_input_cannot_overflow_the_stack() {
        let parens = |n: usize| format!("{}i0{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(p(&parens(MAX_DEPTH)), Expr::Index(0));
        let e = parse_expr(&parens(MAX_DEPTH + 1)).unwrap_err();
        assert_eq!(e.offset, MAX_DEPTH + 1);
        assert!(e.expected.contains(&MAX_DEPTH.to_string()), "{e}");

        let negations = |n: usize| format!("{}i0", "-".repeat(n));
        assert!(parse_expr(&negations(MAX_DEPTH - 1)).is_ok());
        assert!(parse_expr(&negations(MAX_DEPTH)).is_err());

        // A long chain is a deep tree even without parentheses.
        let chain = |n: usize| vec!["i0"; n].join(" + ");
        assert!(parse_expr(&chain(MAX_DEPTH)).is_ok());
        let e = parse_expr(&chain(MAX_DEPTH + 1)).unwrap_err();
        // The error points at the operator that would make the tree too deep.
        assert_eq!(e.offset, "i0 + ".len() * (MAX_DEPTH - 1) + "i0 ".len());
        assert!(parse_expr(&format!("min(0, {})", chain(MAX_DEPTH))).is_err());
    }

    #[test]
    fn errors_point_at_the_problem() {
        let e = parse_expr("i0 + * 2").unwrap_err();
        assert_eq!(e.offset, 5);
        let e = parse_expr("(i0 + 2").unwrap_err();
        assert_eq!(e.offset, 7);
        assert!(e.headline().contains("`)`"), "{e}");
        let e = parse_expr("i0 i1").unwrap_err();
        assert_eq!(e.offset, 3);
        let e = parse_expr("dA0[=x]").unwrap_err();
        assert_eq!(e.offset, 5);
        let e = parse_expr("99999999999999999999").unwrap_err();
        assert_eq!(e.offset, 0);
    }
}
