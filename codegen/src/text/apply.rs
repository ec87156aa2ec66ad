//! Calling an op by name without source text: the entry the graph layer uses to
//! build a call's uops (and so infer its type, or evaluate it) from values it
//! already holds. The same [`Args`] / [`Attrs`] accessors check the values as for a
//! call written in `.uop` text, so every op reports a wrong argument the same way.
//!
//! A language that has the call's source text (the graph text) gives each
//! [`CallArg`] its offsets ([`CallArg::located`]) and calls [`apply_op_at`], whose
//! errors are [`TextError`]s located exactly as [`super::parse_program`]'s.

use crate::index::Expr;
use crate::uop::{Builder, NodeId};

use super::args::{Args, Attrs, ListItem, MacroError, Slot, Value};
use super::build::{check_args_read, check_attrs_read, op_error, suggest};
use super::error::{ErrorKind, TextError};
use super::micro::Micro;
use super::registry::Registry;

/// One argument of an op call: a value, and for a `[list]`, which of its items name
/// tensors (`sources=[a, b]`: item `k` is `Some(node)` when it names one).
#[derive(Clone, Debug, PartialEq)]
pub struct CallArg {
    /// The value.
    pub value: Value,
    /// For a list, the tensor each item names (empty otherwise).
    pub list_nodes: Vec<Option<NodeId>>,
    /// Where the value was written (byte offset in the caller's source), if known.
    pub at: Option<usize>,
    /// For an attribute, where its name was written, if known.
    pub name_at: Option<usize>,
    /// For a list, the span (`start..end`) of each item in the source, if known.
    pub item_spans: Vec<(usize, usize)>,
}

impl CallArg {
    /// A value that is not a list naming tensors.
    pub fn new(value: Value) -> Self {
        CallArg {
            value,
            list_nodes: Vec::new(),
            at: None,
            name_at: None,
            item_spans: Vec::new(),
        }
    }

    /// A list whose items are index expressions or tensors (`Expr::Name` placeholders
    /// stand for the tensors, as a list written in text does).
    pub fn list(items: Vec<Expr>, nodes: Vec<Option<NodeId>>) -> Self {
        CallArg {
            list_nodes: nodes,
            ..CallArg::new(Value::List(items))
        }
    }

    /// The same argument, written at `at` (an attribute's name at `name_at`), with
    /// its list items at `item_spans`: errors about it point there.
    pub fn located(
        mut self,
        at: usize,
        name_at: Option<usize>,
        item_spans: Vec<(usize, usize)>,
    ) -> Self {
        self.at = Some(at);
        self.name_at = name_at;
        self.item_spans = item_spans;
        self
    }

    fn slot(self) -> Slot {
        let n = self.list_nodes.len().max(self.item_spans.len());
        let items = (0..n)
            .map(|k| {
                let (at, end) = self.item_spans.get(k).copied().unwrap_or((0, 0));
                ListItem {
                    at,
                    end,
                    node: self.list_nodes.get(k).copied().flatten(),
                }
            })
            .collect();
        Slot::new(self.value, self.at.unwrap_or(0), items)
    }
}

/// Builds op `name`, written at byte `op_at` of `src`, as [`apply_op`] does, with
/// errors located and worded as [`super::parse_program`]'s: at the argument an op
/// complains about (give the [`CallArg`]s their offsets with [`CallArg::located`]),
/// at the list item an expression error names, else at the op's name.
///
/// ```
/// use uop_codegen::text::{CallArg, Registry, Value, apply_op_at};
/// use uop_codegen::uop::{Builder, DType};
///
/// let src = "y = exp(x, 2)";
/// let mut b = Builder::new(DType::F32);
/// let x = b.input("x", DType::F32, &["N"])?;
/// let args = vec![
///     CallArg::new(Value::Node(x)).located(8, None, vec![]),
///     CallArg::new(Value::Int(2)).located(11, None, vec![]),
/// ];
/// let e = apply_op_at(&mut b, &Registry::new(), "exp", args, vec![], src, 4).unwrap_err();
/// assert_eq!(e.line_col(), (1, 12));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply_op_at(
    builder: &mut Builder,
    registry: &Registry,
    name: &str,
    args: Vec<CallArg>,
    attrs: Vec<(String, CallArg)>,
    src: &str,
    op_at: usize,
) -> Result<NodeId, TextError> {
    let Some(signature) = op_signature(registry, name) else {
        let micro: Vec<String> = Micro::all().into_iter().map(Micro::name).collect();
        let candidates = micro
            .iter()
            .map(String::as_str)
            .chain(registry.iter().map(|op| op.name.as_str()));
        let message = match suggest(name, candidates) {
            Some(s) => format!("unknown op `{name}` (did you mean `{s}`?)"),
            None => format!("unknown op `{name}`"),
        };
        return Err(TextError::new(ErrorKind::UnknownOp, src, op_at, message));
    };
    let is_macro = registry.contains(name);
    let mut spans = Vec::new();
    let mut name_at = Vec::new();
    for a in args.iter().chain(attrs.iter().map(|(_, a)| a)) {
        spans.extend(a.item_spans.iter().copied());
    }
    for (n, a) in &attrs {
        name_at.push((n.clone(), a.name_at));
    }
    let args = Args::new(args.into_iter().map(CallArg::slot).collect());
    let attrs = Attrs::new(attrs.into_iter().map(|(n, a)| (n, a.slot())).collect());
    let result = if let Some(m) = registry.get(name) {
        (m.f)(builder, &args, &attrs)
    } else if let Some(m) = Micro::from_name(name) {
        m.build(builder, &args, &attrs)
    } else {
        unreachable!("op_signature found `{name}`")
    };
    let attr_name_at = |attr: &str| {
        name_at
            .iter()
            .find(|(n, _)| n == attr)
            .and_then(|(_, at)| *at)
    };
    match result {
        Ok(id) => {
            check_args_read(src, name, &signature, &args)?;
            check_attrs_read(src, name, &signature, &attrs, &attr_name_at)?;
            Ok(id)
        }
        Err(e) => {
            if e.missing {
                // A required attribute is missing and an unknown one is given: likely
                // a typo, which is the better message.
                check_attrs_read(src, name, &signature, &attrs, &attr_name_at)?;
            }
            Err(op_error(src, name, op_at, &signature, is_macro, &spans, e))
        }
    }
}

/// True when `name` is a micro op or registered in `registry`.
pub fn is_op(registry: &Registry, name: &str) -> bool {
    registry.contains(name) || Micro::from_name(name).is_some()
}

/// The usage line of an op (`softmax(x, axis=-1)`), if it exists.
pub fn op_signature(registry: &Registry, name: &str) -> Option<String> {
    match registry.get(name) {
        Some(m) => Some(m.signature.clone()),
        None => Micro::from_name(name).map(|m| m.signature()),
    }
}

/// Builds op `name` (registered first, then micro) on `builder` from positional
/// `args` and named `attrs`, and returns the node of its result.
///
/// An argument or attribute the op did not read is an error, as in text.
///
/// ```
/// use uop_codegen::text::{CallArg, Registry, Value, apply_op};
/// use uop_codegen::uop::{Builder, DType};
///
/// let mut b = Builder::new(DType::F32);
/// let x = b.input("x", DType::F32, &["N"])?;
/// let y = apply_op(&mut b, &Registry::new(), "mul", vec![
///     CallArg::new(Value::Node(x)),
///     CallArg::new(Value::Float(2.0)),
/// ], vec![])?;
/// assert_eq!(b.shape(y).len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply_op(
    builder: &mut Builder,
    registry: &Registry,
    name: &str,
    args: Vec<CallArg>,
    attrs: Vec<(String, CallArg)>,
) -> Result<NodeId, MacroError> {
    let args = Args::new(args.into_iter().map(CallArg::slot).collect());
    let attrs = Attrs::new(attrs.into_iter().map(|(n, a)| (n, a.slot())).collect());
    let (result, signature) = if let Some(m) = registry.get(name) {
        ((m.f)(builder, &args, &attrs), m.signature.clone())
    } else if let Some(m) = Micro::from_name(name) {
        (m.build(builder, &args, &attrs), m.signature())
    } else {
        return Err(MacroError::new(format!("unknown op `{name}`")));
    };
    let id = result?;
    if let Some((i, _)) = args.first_unused() {
        return Err(MacroError::new(format!(
            "{name}: unexpected argument {} (usage: {signature})",
            i + 1
        )));
    }
    if let Some((attr, _)) = attrs.first_unused() {
        return Err(MacroError::new(format!(
            "{name}: unknown attribute `{attr}` (usage: {signature})"
        )));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uop::DType;

    #[test]
    fn a_micro_op_is_built_and_unread_arguments_are_refused() {
        let mut b = Builder::new(DType::F32);
        let x = b.input("x", DType::F32, &["N"]).expect("input");
        let y = apply_op(
            &mut b,
            &Registry::new(),
            "exp",
            vec![CallArg::new(Value::Node(x))],
            vec![],
        )
        .expect("exp builds");
        assert_eq!(b.node(y).op.kind(), "exp");
        let e = apply_op(
            &mut b,
            &Registry::new(),
            "exp",
            vec![CallArg::new(Value::Node(x)), CallArg::new(Value::Int(1))],
            vec![],
        )
        .unwrap_err();
        assert!(e.message().contains("unexpected argument 2"), "{e}");
        let e = apply_op(&mut b, &Registry::new(), "nope", vec![], vec![]).unwrap_err();
        assert_eq!(e.message(), "unknown op `nope`");
    }

    #[test]
    fn a_list_may_name_tensors() {
        let mut b = Builder::new(DType::F32);
        let x = b.input("x", DType::F32, &["N"]).expect("input");
        let y = b.input("y", DType::F32, &["M"]).expect("input");
        let out = apply_op(
            &mut b,
            &Registry::new(),
            "reindex",
            vec![
                CallArg::new(Value::Node(x)),
                // `dB0` as the parser reads it: axis 0 of source 1.
                CallArg::new(Value::List(vec![
                    crate::index::parse_expr("dB0").expect("a dim reference"),
                ])),
                CallArg::new(Value::List(vec![Expr::Int(0)])),
            ],
            vec![(
                "sources".into(),
                CallArg::list(
                    vec![Expr::name("x"), Expr::name("y")],
                    vec![Some(x), Some(y)],
                ),
            )],
        )
        .expect("reindex builds");
        assert_eq!(b.shape(out), &[Expr::name("M")]);
    }
}
