//! The macro-op hook: a [`Registry`] maps names to functions that build a value
//! out of micro ops. `uop-codegen` ships it empty (micro ops are built in, see
//! [`micro_ops`]); the macro-op library registers its ops in it.

use std::collections::BTreeMap;

use crate::uop::{Builder, NodeId};

use super::args::{Args, Attrs, MacroError};
use super::micro::Micro;

/// A macro op: builds its value with `builder` from the call's positional
/// arguments and attributes, and returns the node holding the result.
///
/// Read every argument and attribute the op accepts through the accessors of
/// [`Args`] and [`Attrs`]: anything left unread is reported to the user as an
/// unexpected argument or unknown attribute.
pub type MacroFn = fn(&mut Builder, &Args, &Attrs) -> Result<NodeId, MacroError>;

/// A registered macro op.
#[derive(Clone, Debug)]
pub struct MacroOp {
    /// The name calls use.
    pub name: String,
    /// How a call looks, e.g. `softmax(x, axis=-1)`; shown in usage messages and listings.
    pub signature: String,
    /// One line on what the op computes.
    pub doc: String,
    /// The builder function.
    pub f: MacroFn,
}

/// A built-in micro op, for listings (`uop ops`) and usage messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroOp {
    /// The name calls use.
    pub name: String,
    /// How a call looks.
    pub signature: String,
    /// One line on what the op computes.
    pub doc: String,
}

/// Every built-in micro op, in the order of DESIGN.md §4.
pub fn micro_ops() -> Vec<MicroOp> {
    Micro::all()
        .into_iter()
        .map(|m| MicroOp {
            name: m.name(),
            signature: m.signature(),
            doc: m.doc(),
        })
        .collect()
}

/// Words that cannot name an op or a tensor: statement keywords and literals.
pub const KEYWORDS: &[&str] = &[
    "param", "input", "output", "assert", "dtype", "inf", "nan", "true", "false",
];

/// Macro ops by name.
///
/// ```
/// use uop_codegen::text::{Args, Attrs, MacroError, Registry, parse_program};
/// use uop_codegen::uop::{BinaryOp, Builder, NodeId};
///
/// fn square(b: &mut Builder, args: &Args, _: &Attrs) -> Result<NodeId, MacroError> {
///     let x = args.node(0)?;
///     Ok(b.binary(BinaryOp::Mul, x, x)?)
/// }
///
/// let mut registry = Registry::new();
/// registry.register("square", "square(x)", "x * x, element-wise", square);
/// let program = parse_program("input x: f32[N]\ny = square(x)\noutput y", &registry)?;
/// assert_eq!(program.nodes.len(), 2);
/// # Ok::<(), uop_codegen::text::TextError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Registry {
    ops: BTreeMap<String, MacroOp>,
}

impl Registry {
    /// An empty registry: only micro ops can be called.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Registers a macro op.
    ///
    /// A name may be that of a micro op: the registered op then replaces it in
    /// `.uop` text, and must build exactly that micro op whenever the micro op's own
    /// rules accept the call (so printed programs parse back unchanged); this is how
    /// the macro-op library adds numpy broadcasting to `add`, `where`, ...
    ///
    /// # Panics
    ///
    /// If `name` is not an identifier, is a keyword, or is already registered:
    /// these are mistakes in the library being built, not in user input.
    pub fn register(&mut self, name: &str, signature: &str, doc: &str, f: MacroFn) {
        let is_identifier = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        assert!(is_identifier, "macro op name `{name}` is not an identifier");
        assert!(
            !KEYWORDS.contains(&name),
            "macro op name `{name}` is reserved (a keyword)"
        );
        assert!(
            !self.ops.contains_key(name),
            "macro op `{name}` is registered twice"
        );
        self.ops.insert(
            name.to_string(),
            MacroOp {
                name: name.to_string(),
                signature: signature.to_string(),
                doc: doc.to_string(),
                f,
            },
        );
    }

    /// The op registered as `name`.
    pub fn get(&self, name: &str) -> Option<&MacroOp> {
        self.ops.get(name)
    }

    /// True when `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.ops.contains_key(name)
    }

    /// All registered ops, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &MacroOp> {
        self.ops.values()
    }

    /// Number of registered ops.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(_: &mut Builder, args: &Args, _: &Attrs) -> Result<NodeId, MacroError> {
        args.node(0)
    }

    #[test]
    fn registered_ops_are_listed_by_name() {
        let mut r = Registry::new();
        assert!(r.is_empty());
        r.register("zeta", "zeta(x)", "returns x", identity);
        r.register("alpha", "alpha(x)", "returns x", identity);
        let names: Vec<&str> = r.iter().map(|op| op.name.as_str()).collect();
        assert_eq!(names, ["alpha", "zeta"]);
        assert_eq!(
            r.get("zeta").map(|op| op.signature.as_str()),
            Some("zeta(x)")
        );
        assert!(r.contains("alpha") && !r.contains("beta"));
        assert_eq!(r.len(), 2);
    }

    #[test]
    #[should_panic(expected = "reserved")]
    fn keywords_cannot_be_registered() {
        Registry::new().register("output", "output(x)", "", identity);
    }

    #[test]
    fn a_registered_op_replaces_the_micro_op_of_the_same_name() {
        fn negate_instead(b: &mut Builder, args: &Args, _: &Attrs) -> Result<NodeId, MacroError> {
            Ok(b.unary(crate::uop::UnaryOp::Neg, args.node(0)?)?)
        }
        let mut r = Registry::new();
        r.register("exp", "exp(x)", "", negate_instead);
        let p = crate::text::parse_program("input x: f32[N]\ny = exp(x)\noutput y\n", &r)
            .expect("parses");
        assert_eq!(p.nodes[1].op.kind(), "neg");
    }

    #[test]
    #[should_panic(expected = "twice")]
    fn names_are_registered_once() {
        let mut r = Registry::new();
        r.register("f", "f(x)", "", identity);
        r.register("f", "f(x)", "", identity);
    }

    #[test]
    fn the_micro_op_listing_covers_every_uop() {
        let ops = micro_ops();
        // reindex, reindex_reduce, 15 unary, 13 binary, where, 7 reductions, select,
        // iota, cast.
        assert_eq!(ops.len(), 2 + 15 + 13 + 1 + 7 + 3);
        assert!(ops.iter().any(|op| op.signature == "reduce_max(x, [axes])"));
    }
}
