//! Calling an op by name without source text: the entry the graph layer uses to
//! build a call's uops (and so infer its type, or evaluate it) from values it
//! already holds. The same [`Args`] / [`Attrs`] accessors check the values as for a
//! call written in `.uop` text, so every op reports a wrong argument the same way.

use crate::index::Expr;
use crate::uop::{Builder, NodeId};

use super::args::{Args, Attrs, ListItem, MacroError, Slot, Value};
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
}

impl CallArg {
    /// A value that is not a list naming tensors.
    pub fn new(value: Value) -> Self {
        CallArg {
            value,
            list_nodes: Vec::new(),
        }
    }

    /// A list whose items are index expressions or tensors (`Expr::Name` placeholders
    /// stand for the tensors, as a list written in text does).
    pub fn list(items: Vec<Expr>, nodes: Vec<Option<NodeId>>) -> Self {
        CallArg {
            value: Value::List(items),
            list_nodes: nodes,
        }
    }

    fn slot(self) -> Slot {
        let items = self
            .list_nodes
            .into_iter()
            .map(|node| ListItem {
                at: 0,
                end: 0,
                node,
            })
            .collect();
        Slot::new(self.value, 0, items)
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
                CallArg::new(Value::List(vec![
                    crate::index::parse_expr("dB0").expect("expr"),
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
