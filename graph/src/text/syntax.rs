//! The parser of graph text: source -> a list of [`Stmt`]s with byte offsets.
//!
//! Built on the `.uop` program parser of `uop-codegen` ([`uop_codegen::text::syntax`]):
//! `param`, `input`, `assert` and `dtype` lines are its statements, and every call and
//! value (`while(more, step, x, 0)`, `[halve, double]`, `size=C`) is its call and value
//! syntax. This file adds what belongs to graphs: `fn` definitions with `{ ... }`
//! bodies, `return`, several names on the left of `=`, `;` between statements, a
//! bare `sink(...)` and `output` of names or numbers. Nothing here knows what a name
//! means; `build.rs` resolves names and types.

use uop_codegen::diag::SyntaxError;
use uop_codegen::text::syntax::{
    self as cg, Arg, Call, Item, Name, Parser, ValueSyntax, check_nesting, identifier, sp,
    starts_with_assign, unwrap_err,
};
use uop_codegen::text::{ErrorKind, TextError};
use uop_codegen::uop::DType;

/// How deeply `fn` definitions may nest.
const MAX_FN_NESTING: usize = 64;

/// One statement of graph text.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `param`, `input`, `assert` or `dtype`, as in programs.
    Decl(cg::Stmt),
    /// `output a, b` (names or numbers).
    Output {
        /// Offset of `output`.
        at: usize,
        /// The values, with their offsets.
        values: Vec<Arg>,
    },
    /// `fn NAME(params) { body }`.
    Fn(FnDef),
    /// `a, b = value`.
    Let {
        /// The names on the left.
        names: Vec<Name>,
        /// The right side: a call or a number.
        value: Arg,
    },
    /// A call whose result is not named: `sink(a, b)`.
    Bare(Call),
    /// `return a, b`.
    Return {
        /// Offset of `return`.
        at: usize,
        /// The values.
        values: Vec<Arg>,
    },
}

/// A function definition.
#[derive(Clone, Debug, PartialEq)]
pub struct FnDef {
    /// Offset of `fn`.
    pub at: usize,
    /// The function's name.
    pub name: Name,
    /// Its parameters.
    pub params: Vec<Param>,
    /// The statements of its body (the last is a `return` in a valid function).
    pub body: Vec<Stmt>,
    /// Offset of `{`.
    pub open_at: usize,
    /// Offset of `}`.
    pub close_at: usize,
}

/// A parameter: `p`, `p: f32[N, 4]`, or `$i` (the index of a `parallel` body).
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// The name (without `$`).
    pub name: Name,
    /// True for `$i`.
    pub index: bool,
    /// The declared type, if any: dtype, dims, offset of the dtype.
    pub ty: Option<(DType, Vec<Item>, usize)>,
}

/// Parses graph text into statements.
pub fn parse(src: &str) -> Result<Vec<Stmt>, TextError> {
    check_nesting(src).map_err(|e| TextError::syntax(src, e))?;
    let g = G {
        src,
        p: Parser::new(src),
    };
    let (rest, (stmts, _)) = g.block(src, None, 0)?;
    debug_assert!(rest.is_empty());
    Ok(stmts)
}

const STATEMENT: &str =
    "a statement (`input`, `param`, `output`, `assert`, `dtype`, `fn`, `return` or `name = ...`)";

struct G<'s> {
    src: &'s str,
    p: Parser<'s>,
}

type R<'s, T> = Result<(&'s str, T), TextError>;

impl<'s> G<'s> {
    fn at(&self, rest: &str) -> usize {
        self.src.len() - rest.len()
    }

    fn syntax(&self, e: SyntaxError<'_>) -> TextError {
        TextError::syntax(self.src, e)
    }

    fn lift<T>(&self, r: uop_codegen::text::syntax::PResult<'s, T>) -> R<'s, T> {
        r.map_err(|e| self.syntax(unwrap_err(e)))
    }

    fn expected(&self, at: &'s str, what: &'static str) -> TextError {
        self.syntax(SyntaxError::new(at, what))
    }

    fn error(&self, at: usize, message: impl Into<String>) -> TextError {
        TextError::new(ErrorKind::Syntax, self.src, at, message)
    }

    /// Blanks, newlines, comments and `;`.
    fn skip_separators(&self, mut i: &'s str) -> &'s str {
        loop {
            let j = cg::skip_blank(i);
            match j.strip_prefix(';') {
                Some(r) => i = r,
                None => return j,
            }
        }
    }

    /// Statements until the end of input (top level, `open` is `None`) or until the
    /// `}` closing the `{` at `open`; returns the rest after the `}` and its offset.
    fn block(
        &self,
        i: &'s str,
        open: Option<(usize, &str)>,
        depth: usize,
    ) -> R<'s, (Vec<Stmt>, usize)> {
        let mut stmts = Vec::new();
        let mut rest = self.skip_separators(i);
        loop {
            if rest.is_empty() {
                return match open {
                    None => Ok((rest, (stmts, self.src.len()))),
                    Some((at, name)) => Err(self.error(
                        at,
                        format!("unclosed `{{` of function `{name}` (expected `}}`)"),
                    )),
                };
            }
            if let Some(r) = rest.strip_prefix('}') {
                return match open {
                    Some(_) => Ok((r, (stmts, self.at(rest)))),
                    None => Err(self.error(self.at(rest), "`}` without a `{` to close")),
                };
            }
            let (r, stmt) = self.statement(rest, depth)?;
            stmts.push(stmt);
            rest = self.end_of_statement(r)?;
        }
    }

    /// After a statement: a comment, then a newline, `;`, `}` or the end.
    fn end_of_statement(&self, i: &'s str) -> Result<&'s str, TextError> {
        let j = sp(i);
        let j = match j.strip_prefix('#') {
            Some(c) => c.find('\n').map_or("", |p| &c[p..]),
            None => j,
        };
        if j.is_empty() || j.starts_with(['\n', ';', '}']) {
            Ok(self.skip_separators(j))
        } else {
            Err(self.expected(j, "the end of the statement (a newline, `;` or `}`)"))
        }
    }

    fn statement(&self, i: &'s str, depth: usize) -> R<'s, Stmt> {
        let Ok((after_word, word)) = identifier(i) else {
            return Err(self.expected(i, STATEMENT));
        };
        let after = sp(after_word);
        if starts_with_assign(after) || after.starts_with(',') {
            return self.assignment(i);
        }
        match word {
            "fn" => self.function(i, after, depth),
            "return" => {
                let (rest, values) = self.values(after)?;
                Ok((
                    rest,
                    Stmt::Return {
                        at: self.at(i),
                        values,
                    },
                ))
            }
            "output" => {
                let (rest, values) = self.values(after)?;
                if values.is_empty() {
                    return Err(self.expected(after, "the name of a value to output"));
                }
                Ok((
                    rest,
                    Stmt::Output {
                        at: self.at(i),
                        values,
                    },
                ))
            }
            "param" | "input" | "assert" | "dtype" => {
                let (rest, s) = self.lift(self.p.statement(i))?;
                Ok((rest, Stmt::Decl(s)))
            }
            _ if after.starts_with('(') => {
                let (rest, call) = self.lift(self.p.call(i))?;
                Ok((rest, Stmt::Bare(call)))
            }
            _ => Err(self.expected(i, STATEMENT)),
        }
    }

    /// Comma-separated values (possibly none, up to the end of the statement).
    fn values(&self, i: &'s str) -> R<'s, Vec<Arg>> {
        let mut values = Vec::new();
        let mut rest = sp(i);
        if rest.is_empty() || rest.starts_with(['\n', ';', '}', '#']) {
            return Ok((rest, values));
        }
        loop {
            let start = sp(rest);
            let (r, value) = self.lift(self.p.value(start))?;
            values.push(Arg {
                attr: None,
                value,
                at: self.at(start),
            });
            match sp(r).strip_prefix(',') {
                Some(r) => rest = r,
                None => return Ok((r, values)),
            }
        }
    }

    fn assignment(&self, i: &'s str) -> R<'s, Stmt> {
        let mut names = Vec::new();
        let mut rest = i;
        loop {
            let start = sp(rest);
            let (r, name) = self.lift(self.p.name(start, "a name"))?;
            names.push(name);
            let r = sp(r);
            if let Some(r) = r.strip_prefix(',') {
                rest = r;
            } else if starts_with_assign(r) {
                rest = sp(&r[1..]);
                break;
            } else {
                return Err(self.expected(r, "`,` or `=`"));
            }
        }
        let (r, value) = self.lift(self.p.value(rest))?;
        match value {
            ValueSyntax::Call(_)
            | ValueSyntax::Int(_)
            | ValueSyntax::Float(_)
            | ValueSyntax::Name(_) => {}
            _ => {
                return Err(self.expected(
                    rest,
                    "an op call like `exp(x)`, a function call, a name or a number",
                ));
            }
        }
        Ok((
            r,
            Stmt::Let {
                names,
                value: Arg {
                    attr: None,
                    value,
                    at: self.at(rest),
                },
            },
        ))
    }

    /// `fn NAME(params) { body }`; `after` follows the word `fn`.
    fn function(&self, i: &'s str, after: &'s str, depth: usize) -> R<'s, Stmt> {
        if depth >= MAX_FN_NESTING {
            return Err(self.error(
                self.at(i),
                format!("functions nested too deeply (at most {MAX_FN_NESTING} levels)"),
            ));
        }
        let (rest, name) = self.lift(self.p.name(after, "the function's name"))?;
        let rest = sp(rest);
        let Some(mut rest) = rest.strip_prefix('(') else {
            return Err(self.expected(rest, "`(` and the function's parameters"));
        };
        let mut params = Vec::new();
        rest = cg::skip_blank(rest);
        if let Some(r) = rest.strip_prefix(')') {
            rest = r;
        } else {
            loop {
                let (r, param) = self.param(cg::skip_blank(rest))?;
                params.push(param);
                let r = cg::skip_blank(r);
                if let Some(r) = r.strip_prefix(',') {
                    rest = r;
                } else if let Some(r) = r.strip_prefix(')') {
                    rest = r;
                    break;
                } else {
                    return Err(self.expected(r, "`,` or `)`"));
                }
            }
        }
        let rest = sp(rest);
        let Some(body) = rest.strip_prefix('{') else {
            return Err(self.expected(rest, "`{` and the function's body"));
        };
        let open_at = self.at(rest);
        let (rest, (body, close_at)) = self.block(body, Some((open_at, &name.text)), depth + 1)?;
        Ok((
            rest,
            Stmt::Fn(FnDef {
                at: self.at(i),
                name,
                params,
                body,
                open_at,
                close_at,
            }),
        ))
    }

    fn param(&self, i: &'s str) -> R<'s, Param> {
        let (index, start) = match i.strip_prefix('$') {
            Some(r) => (true, r),
            None => (false, i),
        };
        let (rest, mut name) = self.lift(self.p.name(start, "a parameter name"))?;
        if index {
            name.at -= 1;
        }
        let after = sp(rest);
        let Some(ty) = after.strip_prefix(':') else {
            return Ok((
                rest,
                Param {
                    name,
                    index,
                    ty: None,
                },
            ));
        };
        let ty = sp(ty);
        let (rest, (dtype, dtype_at)) = self.lift(self.p.dtype(ty))?;
        let Some(mut rest) = rest.strip_prefix('[') else {
            return Err(self.expected(rest, "`[` and the parameter's dims, like `f32[N]`"));
        };
        let mut dims = Vec::new();
        rest = cg::skip_blank(rest);
        if let Some(r) = rest.strip_prefix(']') {
            rest = r;
        } else {
            loop {
                let (r, item) = self.lift(self.p.item(rest))?;
                dims.push(item);
                let r = cg::skip_blank(r);
                if let Some(r) = r.strip_prefix(',') {
                    rest = cg::skip_blank(r);
                } else if let Some(r) = r.strip_prefix(']') {
                    rest = r;
                    break;
                } else {
                    return Err(self.expected(r, "`,` or `]`"));
                }
            }
        }
        Ok((
            rest,
            Param {
                name,
                index,
                ty: Some((dtype, dims, dtype_at)),
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> (String, (usize, usize)) {
        let e = parse(src).expect_err(src);
        (e.message(), e.line_col())
    }

    #[test]
    fn functions_nest_and_bodies_take_newlines_or_semicolons() {
        let src = "input x: f32[]\nfn f(a, b: f32[N, 2]) { y = mul(a, b); return y }\nfn g($i, v) {\n  fn h(w) { return w }\n  return h(v)\n}\nz, n = while(f, g, x, 0)\noutput z, 1.5";
        let stmts = parse(src).expect("parses");
        assert_eq!(stmts.len(), 5);
        let Stmt::Fn(f) = &stmts[1] else {
            panic!("{:?}", stmts[1])
        };
        assert_eq!(f.name.text, "f");
        assert_eq!(f.params.len(), 2);
        assert!(
            f.params[1]
                .ty
                .as_ref()
                .is_some_and(|(d, dims, _)| *d == DType::F32 && dims.len() == 2)
        );
        assert_eq!(f.body.len(), 2);
        assert!(matches!(&f.body[1], Stmt::Return { values, .. } if values.len() == 1));
        let Stmt::Fn(g) = &stmts[2] else {
            panic!("{:?}", stmts[2])
        };
        assert!(g.params[0].index);
        assert_eq!(g.params[0].name.at, src.find("$i").expect("$i"));
        assert!(matches!(&g.body[0], Stmt::Fn(h) if h.name.text == "h"));
        assert!(matches!(&stmts[3], Stmt::Let { names, .. } if names.len() == 2));
        assert!(
            matches!(&stmts[4], Stmt::Output { values, .. } if values[1].value == ValueSyntax::Float(1.5))
        );
    }

    #[test]
    fn syntax_errors_point_at_the_problem() {
        assert_eq!(
            err("fn f(x) {\n  return x\n"),
            (
                "unclosed `{` of function `f` (expected `}`)".to_string(),
                (1, 9)
            )
        );
        assert_eq!(
            err("x = exp(y)\n}"),
            ("`}` without a `{` to close".to_string(), (2, 1))
        );
        assert_eq!(
            err("fn f(x) { return x } y"),
            (
                "expected the end of the statement (a newline, `;` or `}`), found `y`".to_string(),
                (1, 22)
            )
        );
        assert_eq!(err("a, = exp(x)").1, (1, 4));
        assert_eq!(err("a = [1]").1, (1, 5));
        assert_eq!(err("fn (x) { return x }").1, (1, 4));
        assert_eq!(err("fn f(x: f32) { return x }").1, (1, 12));
    }
}
