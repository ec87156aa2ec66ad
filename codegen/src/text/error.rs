//! The error of [`super::parse_program`]: what went wrong and where, rendered with
//! a caret under the source.

use std::fmt;

use crate::diag::{Diagnostic, SyntaxError};

/// What kind of problem a [`TextError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The text does not follow the grammar.
    Syntax,
    /// A call names an op that is neither a micro op nor registered.
    UnknownOp,
    /// A name (tensor, dimension or `$param`) is not defined.
    UnknownName,
    /// A name is defined twice, or is reserved.
    BadName,
    /// Wrong number or kind of arguments, or an unknown or invalid attribute.
    Arguments,
    /// Float inputs of different types, or an operand of the wrong element type.
    DType,
    /// The graph builder rejected the op: shapes, axes, index expressions.
    Build,
    /// A macro op reported a problem of its own.
    Macro,
    /// The program as a whole is incomplete (no outputs).
    Program,
}

/// A `.uop` program could not be parsed or built.
///
/// `Display` renders the message with the offending line and a caret:
///
/// ```text
/// unknown op `expp` (did you mean `exp`?) (line 2, column 5)
///   |
/// 2 | y = expp(x)
///   |     ^
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    /// What kind of problem this is.
    pub kind: ErrorKind,
    /// The message and its position in the source.
    pub diagnostic: Diagnostic,
}

impl TextError {
    /// An error of `kind` with `message` at byte `offset` of `src`.
    pub fn new(kind: ErrorKind, src: &str, offset: usize, message: impl Into<String>) -> Self {
        TextError {
            kind,
            diagnostic: Diagnostic::message(src, offset, message),
        }
    }

    /// A syntax error of a parser over `src`.
    pub fn syntax(src: &str, e: SyntaxError<'_>) -> Self {
        TextError {
            kind: ErrorKind::Syntax,
            diagnostic: e.into_diagnostic(src),
        }
    }

    /// Byte offset of the problem in the source.
    pub fn offset(&self) -> usize {
        self.diagnostic.offset
    }

    /// 1-based line and column of the problem.
    pub fn line_col(&self) -> (usize, usize) {
        self.diagnostic.line_col()
    }

    /// The one-line message, without the source excerpt.
    pub fn message(&self) -> String {
        self.diagnostic.headline()
    }
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.diagnostic.fmt(f)
    }
}

impl std::error::Error for TextError {}
