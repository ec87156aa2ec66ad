//! The graph text format (DESIGN.md §13.2): [`parse_graph`] and [`print_graph`].
//!
//! A `.uop` program is graph text; graph text adds functions and control flow:
//!
//! ```text
//! input x: f32[]
//! input y: f32[]
//! fn more(z, i) { return lt(i, 5) }            # parameters typed at the use
//! fn step(z, i) { return mul(y, z), add(i, 1) } # y comes from the enclosing scope
//! z5, n = while(more, step, x, 0)              # a literal is a rank-0 constant
//! fn halve(v: f32[]) { return mul(v, 0.5) }    # a declared type is checked
//! sel = where(lt(z5, 1), -1, 0)
//! r = case(sel, [halve], z5)
//! output r, n
//! ```
//!
//! The grammar as built is in `docs/graph-text.md`. Every error is a
//! [`TextError`] with the line, column and a caret.

mod build;
mod calls;
mod expand;
mod print;
mod scope;
mod syntax;

use std::sync::Arc;

use uop_codegen::text::{Registry, TextError};

use crate::ir::Graph;

pub use build::GRAPH_KEYWORDS;
pub use expand::{MAX_DEPTH, MAX_NODES};
pub use print::print_graph;
pub use syntax::{FnDef, Param, Stmt, parse};

/// Parses graph text into a graph whose calls name ops of `registry` (micro ops,
/// and macro ops such as [`uop_ops::registry`]'s).
///
/// ```
/// use uop_graph::text::parse_graph;
///
/// let src = "input x: f32[N]\nfn twice(v) { return mul(v, 2) }\ny = twice(exp(x))\noutput y";
/// let graph = parse_graph(src, uop_graph::default_registry())?;
/// let kinds: Vec<&str> = graph.nodes().iter().map(|n| n.op.kind()).collect();
/// assert_eq!(kinds, ["input", "call", "call"]);
///
/// let src = "input x: f32[N]\nfn f(v) { return f(v) }\ny = f(x)\noutput y";
/// let e = parse_graph(src, uop_graph::default_registry()).unwrap_err();
/// assert_eq!(
///     e.message(),
///     "function `f` calls itself (a function cannot call itself; loop with `while`)"
/// );
/// assert_eq!(e.line_col(), (2, 18));
/// # Ok::<(), uop_codegen::text::TextError>(())
/// ```
pub fn parse_graph(src: &str, registry: Arc<Registry>) -> Result<Graph, TextError> {
    let stmts = syntax::parse(src)?;
    expand::check(src, &stmts)?;
    build::build(src, &stmts, registry)
}

/// True when `src` reads as graph text and uses something only graphs have: `fn`,
/// `return`, a bare statement, several names on the left of `=`, `y = x`, a number
/// as an output, or a call of a word of the graph language (`while`, `case`, `if`,
/// `parallel`, `call`, `chunk`, `sum_chunks`, `const`, `sink`). A file that does is a
/// graph file: when it does not build, the graph parser's error is the one to report,
/// not the program parser's.
///
/// ```
/// use uop_graph::text::uses_graph_syntax;
///
/// assert!(uses_graph_syntax("input x: f32[]\ny = sink(x)\noutput y"));
/// assert!(uses_graph_syntax("input x: f32[]\nfn f(v) { return v }\noutput x"));
/// assert!(!uses_graph_syntax("input x: f32[]\ny = exp(x)\noutput y"));
/// ```
pub fn uses_graph_syntax(src: &str) -> bool {
    use uop_codegen::text::syntax::{Call, ValueSyntax};
    fn graph_call(c: &Call) -> bool {
        let word = c.op.text.as_str();
        calls::SPECIAL.contains(&word)
            || build::GRAPH_KEYWORDS.contains(&word)
            || c.args.iter().any(|a| graph_value(&a.value))
    }
    fn graph_value(v: &ValueSyntax) -> bool {
        matches!(v, ValueSyntax::Call(c) if graph_call(c))
    }
    let Ok(stmts) = syntax::parse(src) else {
        return false;
    };
    stmts.iter().any(|s| match s {
        Stmt::Fn(_) | Stmt::Return { .. } | Stmt::Bare(_) => true,
        Stmt::Let { names, value } => {
            names.len() > 1
                || matches!(value.value, ValueSyntax::Name(_))
                || graph_value(&value.value)
        }
        Stmt::Output { values, .. } => values
            .iter()
            .any(|v| !matches!(v.value, ValueSyntax::Name(_))),
        Stmt::Decl(_) => false,
    })
}
