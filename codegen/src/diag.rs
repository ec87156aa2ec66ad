//! Positioned diagnostics: the nom error type every parser in the crate uses,
//! and rendering of an error with a caret under the offending source text.

use std::fmt;

/// The nom error type of uop's parsers: where parsing stopped and what was expected there.
///
/// When alternatives fail, the one that got furthest into the input wins, so the
/// message points at the real problem rather than at the start of the expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError<'a> {
    /// The remaining input at the failure point.
    pub at: &'a str,
    /// A short description of what would have been accepted, e.g. `"an index expression"`.
    pub expected: &'static str,
}

impl<'a> SyntaxError<'a> {
    /// An error at `at` expecting `expected`.
    pub fn new(at: &'a str, expected: &'static str) -> Self {
        SyntaxError { at, expected }
    }

    /// Converts into an owned [`Diagnostic`] over the full `source` the parser started from.
    pub fn into_diagnostic(self, source: &str) -> Diagnostic {
        let offset = source.len() - self.at.len();
        Diagnostic::new(source, offset, self.expected.to_string(), found_at(self.at))
    }
}

impl<'a> nom::error::ParseError<&'a str> for SyntaxError<'a> {
    fn from_error_kind(input: &'a str, kind: nom::error::ErrorKind) -> Self {
        let expected = match kind {
            nom::error::ErrorKind::Digit => "a number",
            nom::error::ErrorKind::Eof => "end of input",
            _ => "valid syntax",
        };
        SyntaxError::new(input, expected)
    }

    fn append(_input: &'a str, _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }

    fn or(self, other: Self) -> Self {
        // Shorter remaining input = further into the source.
        if other.at.len() <= self.at.len() {
            other
        } else {
            self
        }
    }
}

/// Describes the text at a failure point for "found ..." messages.
pub fn found_at(rest: &str) -> String {
    let rest = rest.trim_start_matches([' ', '\t']);
    match rest.chars().next() {
        None => "end of input".to_string(),
        Some('\n') | Some('\r') => "end of line".to_string(),
        Some(_) => {
            let token: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace())
                .take(16)
                .collect();
            format!("`{token}`")
        }
    }
}

/// An error with a position in a source text, rendered with a caret under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The full source text the offset refers to.
    pub source: String,
    /// Byte offset of the problem in `source`.
    pub offset: usize,
    /// What was expected (or, for non-syntax errors, the message itself).
    pub expected: String,
    /// What was found at the offset; empty for non-syntax errors.
    pub found: String,
}

impl Diagnostic {
    /// A syntax diagnostic: "expected `expected`, found `found`".
    pub fn new(source: &str, offset: usize, expected: String, found: String) -> Self {
        Diagnostic {
            source: source.to_string(),
            offset: offset.min(source.len()),
            expected,
            found,
        }
    }

    /// A diagnostic that is just a message at a position (a semantic error in source text).
    pub fn message(source: &str, offset: usize, message: impl Into<String>) -> Self {
        Diagnostic::new(source, offset, message.into(), String::new())
    }

    /// The one-line message without the source excerpt.
    pub fn headline(&self) -> String {
        if self.found.is_empty() {
            self.expected.clone()
        } else {
            format!("expected {}, found {}", self.expected, self.found)
        }
    }

    /// 1-based line and column (in characters) of the offset.
    pub fn line_col(&self) -> (usize, usize) {
        let before = &self.source[..self.offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |p| p + 1);
        let col = before[line_start..].chars().count() + 1;
        (line, col)
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line, col) = self.line_col();
        let line_start = self.source[..self.offset].rfind('\n').map_or(0, |p| p + 1);
        let line_end = self.source[self.offset..]
            .find('\n')
            .map_or(self.source.len(), |p| self.offset + p);
        let text = &self.source[line_start..line_end];
        let gutter = line.to_string();
        let pad = " ".repeat(gutter.len());
        writeln!(f, "{} (line {line}, column {col})", self.headline())?;
        writeln!(f, "{pad} |")?;
        writeln!(f, "{gutter} | {text}")?;
        // A tab before the offset stays a tab under it, so the caret lines up
        // however the terminal expands tabs.
        let under: String = self.source[line_start..self.offset]
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(f, "{pad} | {under}^")
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_points_at_the_offset_on_its_line() {
        let d = Diagnostic::new("a\nb + * c", 6, "a term".into(), "`*`".into());
        assert_eq!(
            d.to_string(),
            "expected a term, found `*` (line 2, column 5)\n  |\n2 | b + * c\n  |     ^"
        );
    }

    #[test]
    fn the_caret_lines_up_after_tabs() {
        let d = Diagnostic::new("\tx =\t* c", 5, "a call".into(), "`*`".into());
        assert_eq!(
            d.to_string(),
            "expected a call, found `*` (line 1, column 6)\n  |\n1 | \tx =\t* c\n  | \t   \t^"
        );
    }
}
