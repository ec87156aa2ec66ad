//! The arguments an op call receives: [`Value`]s, positional ([`Args`]) and named
//! ([`Attrs`]), with accessors that check kinds and give messages a user can act on.
//!
//! Micro ops are built through this same interface, so every op, built in or
//! registered, reports a wrong argument the same way and at the same place.

use std::cell::Cell;
use std::fmt;

use crate::index::Expr;
use crate::uop::{NodeId, Operand, UopError};

/// A value given to an op call, as a positional argument or an attribute.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A tensor: a name or a nested call.
    Node(NodeId),
    /// An integer literal.
    Int(i64),
    /// A literal with a fraction or exponent, or `inf` / `nan`.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// A `"string"`.
    Str(String),
    /// A `$param`.
    Param(String),
    /// A bracketed list of index expressions (integers, names, `dA0`, `i0 + 1`, ...).
    List(Vec<Expr>),
}

impl Value {
    /// What kind of value this is, for messages ("a string", "the integer 3").
    pub fn describe(&self) -> String {
        match self {
            Value::Node(_) => "a tensor".into(),
            Value::Int(v) => format!("the integer {v}"),
            Value::Float(v) => format!("the number {v}"),
            Value::Bool(b) => format!("`{b}`"),
            Value::Str(s) => format!("the string {s:?}"),
            Value::Param(p) => format!("the parameter `${p}`"),
            Value::List(_) => "a list".into(),
        }
    }
}

/// Why an op call failed: a message, and where to point when it is not the call itself.
///
/// Macro ops return this; `?` converts builder errors ([`UopError`]) into it.
#[derive(Clone, Debug, PartialEq)]
pub struct MacroError {
    message: String,
    /// Byte offset in the program text; `None` means "the call".
    pub(crate) at: Option<usize>,
    /// The builder error behind this one, which the text layer may locate more precisely.
    pub(crate) uop: Option<Box<UopError>>,
    /// A problem with the arguments as written (append the op's usage to the message).
    pub(crate) about_arguments: bool,
    /// A required argument or attribute was absent (an unknown attribute may be a typo of it).
    pub(crate) missing: bool,
}

impl MacroError {
    /// An error reported at the call.
    pub fn new(message: impl Into<String>) -> Self {
        MacroError {
            message: message.into(),
            at: None,
            uop: None,
            about_arguments: false,
            missing: false,
        }
    }

    fn argument(message: String, at: Option<usize>) -> Self {
        MacroError {
            at,
            about_arguments: true,
            ..MacroError::new(message)
        }
    }

    /// A required argument or attribute is absent.
    pub(crate) fn missing(message: String) -> Self {
        MacroError {
            missing: true,
            ..MacroError::argument(message, None)
        }
    }

    /// Reports this error at byte offset `at` instead of at the call.
    pub(crate) fn at(mut self, at: usize) -> Self {
        self.at = Some(at);
        self
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<UopError> for MacroError {
    fn from(e: UopError) -> Self {
        MacroError {
            message: e.to_string(),
            uop: Some(Box::new(e)),
            ..MacroError::new(String::new())
        }
    }
}

impl From<String> for MacroError {
    fn from(message: String) -> Self {
        MacroError::new(message)
    }
}

impl From<&str> for MacroError {
    fn from(message: &str) -> Self {
        MacroError::new(message)
    }
}

impl fmt::Display for MacroError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MacroError {}

type Result<T> = std::result::Result<T, MacroError>;

/// Where one item of a list was written, and the tensor it names, if it is a tensor name.
#[derive(Clone, Debug)]
pub(crate) struct ListItem {
    pub at: usize,
    pub end: usize,
    pub node: Option<NodeId>,
}

/// One argument or attribute: its value and where it was written.
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    pub value: Value,
    pub at: usize,
    pub items: Vec<ListItem>,
    used: Cell<bool>,
}

impl Slot {
    pub(crate) fn new(value: Value, at: usize, items: Vec<ListItem>) -> Self {
        Slot {
            value,
            at,
            items,
            used: Cell::new(false),
        }
    }

    fn read(&self) -> &Value {
        self.used.set(true);
        &self.value
    }

    fn wrong(&self, what: &str, expected: &str) -> MacroError {
        MacroError::argument(
            format!("{what} must be {expected}, found {}", self.value.describe()),
            Some(self.at),
        )
    }

    fn node(&self, what: &str) -> Result<NodeId> {
        match self.read() {
            Value::Node(n) => Ok(*n),
            _ => Err(self.wrong(what, "a tensor")),
        }
    }

    fn operand(&self, what: &str) -> Result<Operand> {
        match self.read() {
            Value::Node(n) => Ok(Operand::Node(*n)),
            Value::Int(v) => Ok(Operand::Const(*v as f64)),
            Value::Float(v) => Ok(Operand::Const(*v)),
            Value::Param(p) => Ok(Operand::Param(p.clone())),
            _ => Err(self.wrong(what, "a tensor, a number or a $param")),
        }
    }

    fn int(&self, what: &str) -> Result<i64> {
        match self.read() {
            Value::Int(v) => Ok(*v),
            _ => Err(self.wrong(what, "an integer")),
        }
    }

    fn float(&self, what: &str) -> Result<f64> {
        match self.read() {
            Value::Int(v) => Ok(*v as f64),
            Value::Float(v) => Ok(*v),
            _ => Err(self.wrong(what, "a number")),
        }
    }

    fn bool(&self, what: &str) -> Result<bool> {
        match self.read() {
            Value::Bool(b) => Ok(*b),
            _ => Err(self.wrong(what, "`true` or `false`")),
        }
    }

    fn str(&self, what: &str) -> Result<&str> {
        match self.read() {
            Value::Str(s) => Ok(s),
            _ => Err(self.wrong(what, "a \"string\"")),
        }
    }

    fn exprs(&self, what: &str) -> Result<Vec<Expr>> {
        match self.read() {
            Value::List(items) => Ok(items.clone()),
            _ => Err(self.wrong(what, "a [list]")),
        }
    }

    fn int_list(&self, what: &str) -> Result<Vec<i64>> {
        match self.read() {
            Value::Int(v) => Ok(vec![*v]),
            Value::List(items) => items
                .iter()
                .zip(&self.items)
                .map(|(e, item)| {
                    e.as_int().ok_or_else(|| {
                        MacroError::argument(
                            format!("{what} must be a list of integers, found `{e}` in it"),
                            Some(item.at),
                        )
                    })
                })
                .collect(),
            _ => Err(self.wrong(what, "an integer or a [list] of integers")),
        }
    }

    fn nodes(&self, what: &str) -> Result<Vec<NodeId>> {
        match self.read() {
            Value::List(items) => items
                .iter()
                .zip(&self.items)
                .map(|(e, item)| {
                    item.node.ok_or_else(|| {
                        MacroError::argument(
                            format!("{what} must be a list of tensor names; `{e}` is not a tensor"),
                            Some(item.at),
                        )
                    })
                })
                .collect(),
            _ => Err(self.wrong(what, "a [list] of tensor names")),
        }
    }

    fn axis(&self, what: &str, rank: usize) -> Result<usize> {
        let v = self.int(what)?;
        normalize_axis(v, rank).ok_or_else(|| {
            MacroError::argument(
                format!("{what}: axis {v} is out of range for a tensor of rank {rank}"),
                Some(self.at),
            )
        })
    }

    fn axes(&self, what: &str, rank: usize) -> Result<Vec<usize>> {
        let values = self.int_list(what)?;
        values
            .iter()
            .enumerate()
            .map(|(k, &v)| {
                normalize_axis(v, rank).ok_or_else(|| {
                    let at = self.items.get(k).map_or(self.at, |item| item.at);
                    MacroError::argument(
                        format!("{what}: axis {v} is out of range for a tensor of rank {rank}"),
                        Some(at),
                    )
                })
            })
            .collect()
    }
}

/// Python-style axis: `-1` is the last axis.
fn normalize_axis(v: i64, rank: usize) -> Option<usize> {
    let rank = i64::try_from(rank).ok()?;
    let v = if v < 0 { v + rank } else { v };
    (0..rank).contains(&v).then_some(v as usize)
}

/// The positional arguments of a call.
///
/// Each accessor checks the kind of the argument and marks it as used; an argument
/// no accessor read is reported to the user as unexpected once the op returns.
#[derive(Debug)]
pub struct Args {
    slots: Vec<Slot>,
}

impl Args {
    pub(crate) fn new(slots: Vec<Slot>) -> Self {
        Args { slots }
    }

    /// Number of positional arguments given.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when the call has no positional arguments.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Argument `i` (from 0), if given.
    pub fn get(&self, i: usize) -> Option<&Value> {
        self.slots.get(i).map(Slot::read)
    }

    fn slot(&self, i: usize) -> Result<(&Slot, String)> {
        let what = format!("argument {}", i + 1);
        match self.slots.get(i) {
            Some(s) => Ok((s, what)),
            None => Err(MacroError::missing(format!(
                "{what} is missing ({} given)",
                self.slots.len()
            ))),
        }
    }

    /// Argument `i` as a tensor.
    pub fn node(&self, i: usize) -> Result<NodeId> {
        let (s, what) = self.slot(i)?;
        s.node(&what)
    }

    /// Argument `i` as an element-wise operand: a tensor, a number or a `$param`.
    pub fn operand(&self, i: usize) -> Result<Operand> {
        let (s, what) = self.slot(i)?;
        s.operand(&what)
    }

    /// Argument `i` as an integer.
    pub fn int(&self, i: usize) -> Result<i64> {
        let (s, what) = self.slot(i)?;
        s.int(&what)
    }

    /// Argument `i` as a number (integers are accepted).
    pub fn float(&self, i: usize) -> Result<f64> {
        let (s, what) = self.slot(i)?;
        s.float(&what)
    }

    /// Argument `i` as a string.
    pub fn str(&self, i: usize) -> Result<&str> {
        let (s, what) = self.slot(i)?;
        s.str(&what)
    }

    /// Argument `i` as a list of index expressions (a shape, an index list).
    pub fn exprs(&self, i: usize) -> Result<Vec<Expr>> {
        let (s, what) = self.slot(i)?;
        s.exprs(&what)
    }

    /// Argument `i` as a list of integers; a single integer is a list of one.
    pub fn int_list(&self, i: usize) -> Result<Vec<i64>> {
        let (s, what) = self.slot(i)?;
        s.int_list(&what)
    }

    /// Argument `i` as a list of tensor names, like `[a, b]`.
    pub fn nodes(&self, i: usize) -> Result<Vec<NodeId>> {
        let (s, what) = self.slot(i)?;
        s.nodes(&what)
    }

    /// Argument `i` as an axis of a tensor of rank `rank`; negative counts from the end.
    pub fn axis(&self, i: usize, rank: usize) -> Result<usize> {
        let (s, what) = self.slot(i)?;
        s.axis(&what, rank)
    }

    /// Argument `i` as axes (one or a list) of a tensor of rank `rank`; negative counts from the end.
    pub fn axes(&self, i: usize, rank: usize) -> Result<Vec<usize>> {
        let (s, what) = self.slot(i)?;
        s.axes(&what, rank)
    }

    /// An error about argument `i` (reported at it, or at the call if it was not given).
    pub fn error(&self, i: usize, message: impl Into<String>) -> MacroError {
        MacroError::argument(message.into(), self.slots.get(i).map(|s| s.at))
    }

    /// Where argument `i` was written.
    pub(crate) fn offset(&self, i: usize) -> Option<usize> {
        self.slots.get(i).map(|s| s.at)
    }

    /// The first argument no accessor read, with its position (from 0).
    pub(crate) fn first_unused(&self) -> Option<(usize, &Slot)> {
        self.slots.iter().enumerate().find(|(_, s)| !s.used.get())
    }

    /// How many arguments were read (the op's arity, as far as it is known).
    pub(crate) fn used_count(&self) -> usize {
        self.slots.iter().filter(|s| s.used.get()).count()
    }

    pub(crate) fn slots(&self) -> &[Slot] {
        &self.slots
    }
}

/// The named attributes of a call (`axis=1`, `op="max"`, `padding=[1, 1]`).
///
/// Accessors come in two flavours: `x(name)` requires the attribute, `x_or(name,
/// default)` falls back to a default. Reading marks an attribute as used; an
/// attribute the op never read is reported as unknown once the op returns.
#[derive(Debug, Default)]
pub struct Attrs {
    slots: Vec<(String, Slot)>,
}

macro_rules! attr_accessors {
    ($($(#[$doc:meta])* $req:ident, $(#[$doc_or:meta])* $or:ident => $slot_fn:ident -> $ty:ty;)*) => {
        $(
            $(#[$doc])*
            pub fn $req(&self, name: &str) -> Result<$ty> {
                let (s, what) = self.required(name)?;
                s.$slot_fn(&what)
            }

            $(#[$doc_or])*
            pub fn $or(&self, name: &str, default: $ty) -> Result<$ty> {
                match self.slot(name) {
                    Some((s, what)) => s.$slot_fn(&what),
                    None => Ok(default),
                }
            }
        )*
    };
}

impl Attrs {
    pub(crate) fn new(slots: Vec<(String, Slot)>) -> Self {
        Attrs { slots }
    }

    fn slot(&self, name: &str) -> Option<(&Slot, String)> {
        self.slots
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| (s, format!("attribute `{name}`")))
    }

    fn required(&self, name: &str) -> Result<(&Slot, String)> {
        self.slot(name)
            .ok_or_else(|| MacroError::missing(format!("attribute `{name}` is required")))
    }

    /// The attribute's value, if given.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.slot(name).map(|(s, _)| s.read())
    }

    /// True when the attribute is given.
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The names given, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.slots.iter().map(|(n, _)| n.as_str())
    }

    attr_accessors! {
        /// A required integer attribute.
        int,
        /// An integer attribute with a default.
        int_or => int -> i64;
        /// A required number (integers are accepted).
        float,
        /// A number with a default.
        float_or => float -> f64;
        /// A required boolean.
        bool,
        /// A boolean with a default.
        bool_or => bool -> bool;
        /// A required list of integers; a single integer is a list of one.
        int_list,
        /// A list of integers with a default.
        int_list_or => int_list -> Vec<i64>;
        /// A required list of index expressions.
        exprs,
        /// A list of index expressions with a default.
        exprs_or => exprs -> Vec<Expr>;
        /// A required list of tensor names (`sources=[a, b]`).
        nodes,
        /// A list of tensor names with a default.
        nodes_or => nodes -> Vec<NodeId>;
        /// A required tensor.
        node,
        /// A tensor with a default.
        node_or => node -> NodeId;
        /// A required element-wise operand: a tensor, a number or a `$param`.
        operand,
        /// An element-wise operand with a default.
        operand_or => operand -> Operand;
    }

    /// A required string.
    pub fn str(&self, name: &str) -> Result<&str> {
        let (s, what) = self.required(name)?;
        s.str(&what)
    }

    /// A string with a default.
    pub fn str_or<'a>(&'a self, name: &str, default: &'a str) -> Result<&'a str> {
        match self.slot(name) {
            Some((s, what)) => s.str(&what),
            None => Ok(default),
        }
    }

    /// An axis of a tensor of rank `rank`, default `default`; negative counts from the end.
    pub fn axis_or(&self, name: &str, rank: usize, default: i64) -> Result<usize> {
        match self.slot(name) {
            Some((s, what)) => s.axis(&what, rank),
            None => normalize_axis(default, rank).ok_or_else(|| {
                MacroError::argument(
                    format!("default {name}={default} is out of range for a tensor of rank {rank}"),
                    None,
                )
            }),
        }
    }

    /// Axes (one or a list) of a tensor of rank `rank`, default `default`; negative
    /// values count from the end.
    pub fn axes_or(&self, name: &str, rank: usize, default: &[i64]) -> Result<Vec<usize>> {
        match self.slot(name) {
            Some((s, what)) => s.axes(&what, rank),
            None => default
                .iter()
                .map(|&v| {
                    normalize_axis(v, rank).ok_or_else(|| {
                        MacroError::argument(
                            format!(
                                "default {name}={v} is out of range for a tensor of rank {rank}"
                            ),
                            None,
                        )
                    })
                })
                .collect(),
        }
    }

    /// An error about attribute `name` (reported at its value, or at the call if absent).
    pub fn error(&self, name: &str, message: impl Into<String>) -> MacroError {
        MacroError::argument(message.into(), self.slot(name).map(|(s, _)| s.at))
    }

    /// Where attribute `name`'s value was written.
    pub(crate) fn offset(&self, name: &str) -> Option<usize> {
        self.slot(name).map(|(s, _)| s.at)
    }

    /// The first attribute no accessor read.
    pub(crate) fn first_unused(&self) -> Option<(&str, &Slot)> {
        self.slots
            .iter()
            .find(|(_, s)| !s.used.get())
            .map(|(n, s)| (n.as_str(), s))
    }

    pub(crate) fn slots(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter().map(|(_, s)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(value: Value, at: usize) -> Slot {
        Slot::new(value, at, Vec::new())
    }

    fn list(values: &[i64], at: usize) -> Slot {
        let items = values
            .iter()
            .enumerate()
            .map(|(k, _)| ListItem {
                at: at + 1 + 3 * k,
                end: at + 2 + 3 * k,
                node: None,
            })
            .collect();
        Slot::new(
            Value::List(values.iter().map(|&v| Expr::Int(v)).collect()),
            at,
            items,
        )
    }

    #[test]
    fn attribute_accessors_check_kinds_and_apply_defaults() {
        let attrs = Attrs::new(vec![
            ("axis".into(), slot(Value::Int(-1), 10)),
            ("eps".into(), slot(Value::Int(1), 20)),
            ("mode".into(), slot(Value::Str("max".into()), 30)),
            ("pads".into(), list(&[1, 2], 40)),
        ]);
        assert_eq!(attrs.int("axis"), Ok(-1));
        assert_eq!(attrs.axis_or("axis", 3, 0), Ok(2));
        assert_eq!(attrs.float_or("eps", 1e-5), Ok(1.0));
        assert_eq!(attrs.str_or("mode", "add"), Ok("max"));
        assert_eq!(attrs.int_list("pads"), Ok(vec![1, 2]));
        assert_eq!(attrs.int_list("axis"), Ok(vec![-1]));
        assert_eq!(attrs.bool_or("keepdims", true), Ok(true));
        assert_eq!(attrs.axes_or("dims", 2, &[-1]), Ok(vec![1]));

        let e = attrs.int("mode").unwrap_err();
        assert_eq!(
            e.message(),
            "attribute `mode` must be an integer, found the string \"max\""
        );
        assert_eq!(e.at, Some(30));
        let e = attrs.float("missing").unwrap_err();
        assert_eq!(e.message(), "attribute `missing` is required");
        assert!(e.missing && e.at.is_none());
        let e = attrs.axis_or("axis", 0, 0).unwrap_err();
        assert_eq!(
            e.message(),
            "attribute `axis`: axis -1 is out of range for a tensor of rank 0"
        );
        assert!(attrs.first_unused().is_none());
    }

    #[test]
    fn positional_accessors_report_the_argument_number() {
        let args = Args::new(vec![
            slot(Value::Node(NodeId(3)), 5),
            slot(Value::Float(2.5), 8),
        ]);
        assert_eq!(args.node(0), Ok(NodeId(3)));
        assert_eq!(args.operand(1), Ok(Operand::Const(2.5)));
        let e = args.node(1).unwrap_err();
        assert_eq!(
            e.message(),
            "argument 2 must be a tensor, found the number 2.5"
        );
        assert_eq!(e.at, Some(8));
        let e = args.int(2).unwrap_err();
        assert_eq!(e.message(), "argument 3 is missing (2 given)");
        assert!(args.first_unused().is_none());
    }

    #[test]
    fn a_non_integer_list_item_is_reported_at_the_item() {
        let items = vec![
            ListItem {
                at: 1,
                end: 2,
                node: None,
            },
            ListItem {
                at: 4,
                end: 5,
                node: None,
            },
        ];
        let args = Args::new(vec![Slot::new(
            Value::List(vec![Expr::Int(1), Expr::name("N")]),
            0,
            items,
        )]);
        let e = args.int_list(0).unwrap_err();
        assert_eq!(e.at, Some(4));
        let e = args.nodes(0).unwrap_err();
        assert_eq!(
            e.message(),
            "argument 1 must be a list of tensor names; `1` is not a tensor"
        );
        assert_eq!(e.at, Some(1));
    }

    #[test]
    fn unread_values_are_found() {
        let attrs = Attrs::new(vec![
            ("axis".into(), slot(Value::Int(1), 0)),
            ("axsi".into(), slot(Value::Int(1), 9)),
        ]);
        assert_eq!(attrs.int("axis"), Ok(1));
        assert_eq!(
            attrs.first_unused().map(|(n, s)| (n, s.at)),
            Some(("axsi", 9))
        );
    }

    #[test]
    fn negative_axes_count_from_the_end() {
        assert_eq!(normalize_axis(-1, 4), Some(3));
        assert_eq!(normalize_axis(-4, 4), Some(0));
        assert_eq!(normalize_axis(-5, 4), None);
        assert_eq!(normalize_axis(4, 4), None);
        assert_eq!(normalize_axis(0, 0), None);
    }
}
