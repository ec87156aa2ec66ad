//! `scan(N, BODY, init..., xs..., carried=C, axes=[..], reverse=[..], out_axes=[..],
//! out_reverse=[..])`: the sequential scan super node (`docs/graph-text.md`).

use uop_codegen::index::Expr;
use uop_codegen::text::ErrorKind;
use uop_codegen::text::syntax::{Arg as ArgSyntax, Call as CallSyntax, ValueSyntax};
use uop_codegen::uop::DType;

use crate::builder::GraphBuilder;
use crate::ir::{Op, Ref, ScanAxis, ValueType};
use crate::scan::{ScanShape, body_params};

use super::super::build::{B, Result};

const USAGE: &str = "scan(N, BODY, init..., xs..., carried=C)";

/// The attributes of a `scan` call as written.
#[derive(Default)]
struct Attrs {
    carried: usize,
    axes: Option<Vec<usize>>,
    reverse: Option<Vec<usize>>,
    out_axes: Option<Vec<usize>>,
    out_reverse: Option<Vec<usize>>,
}

impl B<'_> {
    /// `scan(...)`.
    pub(super) fn scan(&mut self, g: &mut GraphBuilder, c: &CallSyntax) -> Result<Vec<Ref>> {
        self.need_args(c, 2, USAGE)?;
        let a = &c.args;
        let count = self.scan_count(&a[0])?;
        let body = self.fn_arg(&a[1])?;
        let positional: Vec<&ArgSyntax> = a[2..].iter().filter(|x| x.attr.is_none()).collect();
        let mut attrs = Attrs::default();
        for x in a.iter().filter(|x| x.attr.is_some()) {
            self.scan_attr(x, &mut attrs)?;
        }
        if let Some(x) = a[2..]
            .iter()
            .skip_while(|x| x.attr.is_none())
            .find(|x| x.attr.is_none())
        {
            return Err(self.error(
                ErrorKind::Arguments,
                x.at,
                format!("scan: the values come before the attributes (usage: {USAGE})"),
            ));
        }
        let values: Vec<ArgSyntax> = positional.iter().map(|x| (*x).clone()).collect();
        let inputs = self.refs(g, &values)?;
        let ats: Vec<usize> = values.iter().map(|x| x.at).collect();
        if attrs.carried > inputs.len() {
            return Err(self.error(
                ErrorKind::Arguments,
                c.op.at,
                format!(
                    "scan: carried={} but only {} values are given",
                    attrs.carried,
                    inputs.len()
                ),
            ));
        }
        let scanned = axes(
            attrs.axes.as_deref(),
            attrs.reverse.as_deref(),
            inputs.len() - attrs.carried,
        );
        let shape = ScanShape {
            count: &count,
            carried: attrs.carried,
            scanned: &scanned,
            stacked: &[],
        };
        let types: Vec<ValueType> = self.types(g, &inputs);
        let params = body_params(&shape, &types)
            .map_err(|m| self.error(ErrorKind::Build, c.op.at, format!("scan: {m}")))?;
        debug_assert_eq!(params[0], ValueType::scalar(DType::I32));
        let index = body.0.params.first().map(|p| p.name.text.clone());
        let body = self.sub(g, "scan", body, params, &ats, a[1].at, true)?;
        let stacked = axes(
            attrs.out_axes.as_deref(),
            attrs.out_reverse.as_deref(),
            body.outputs.len().saturating_sub(attrs.carried),
        );
        let op = Op::Scan {
            count,
            index: index.unwrap_or_default(),
            carried: attrs.carried,
            scanned,
            stacked,
            body,
        };
        self.add_super(g, c, op, inputs)
    }

    /// The count: a size as `parallel` takes it, or any index expression as a
    /// one-item list (`[2 * N]`).
    fn scan_count(&self, a: &ArgSyntax) -> Result<Expr> {
        match &a.value {
            ValueSyntax::List(items) if items.len() == 1 => {
                self.check_expr(&items[0].expr, items[0].at, true)?;
                Ok(items[0].expr.clone())
            }
            _ => self.size(a),
        }
    }

    fn scan_attr(&self, x: &ArgSyntax, attrs: &mut Attrs) -> Result<()> {
        let name = x.attr.as_ref().map_or("", |n| n.text.as_str());
        let at = x.attr.as_ref().map_or(x.at, |n| n.at);
        let ints = |what: &str| -> Result<Vec<usize>> {
            let ValueSyntax::List(items) = &x.value else {
                return Err(self.error(
                    ErrorKind::Arguments,
                    x.at,
                    format!("scan: `{what}` is a list of non-negative integers"),
                ));
            };
            items
                .iter()
                .map(|i| match i.expr {
                    Expr::Int(v) if v >= 0 => Ok(v as usize),
                    _ => Err(self.error(
                        ErrorKind::Arguments,
                        i.at,
                        format!("scan: `{what}` is a list of non-negative integers"),
                    )),
                })
                .collect()
        };
        match name {
            "carried" => match x.value {
                ValueSyntax::Int(k) if k >= 0 => attrs.carried = k as usize,
                _ => {
                    return Err(self.error(
                        ErrorKind::Arguments,
                        x.at,
                        "scan: `carried` is a non-negative integer",
                    ));
                }
            },
            "axes" => attrs.axes = Some(ints(name)?),
            "reverse" => attrs.reverse = Some(ints(name)?),
            "out_axes" => attrs.out_axes = Some(ints(name)?),
            "out_reverse" => attrs.out_reverse = Some(ints(name)?),
            _ => {
                return Err(self.error(
                    ErrorKind::Arguments,
                    at,
                    format!(
                        "scan: unknown attribute `{name}` (carried, axes, reverse, out_axes, out_reverse)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// `n` scan axes from the lists given (a missing list or item: axis 0, forwards; a
/// longer list than `n` gives more axes, which the node's typing refuses).
fn axes(axes: Option<&[usize]>, reverse: Option<&[usize]>, n: usize) -> Vec<ScanAxis> {
    let len = n
        .max(axes.map_or(0, <[usize]>::len))
        .max(reverse.map_or(0, <[usize]>::len));
    (0..len)
        .map(|k| ScanAxis {
            axis: axes.and_then(|a| a.get(k)).copied().unwrap_or(0),
            reverse: reverse.and_then(|r| r.get(k)).is_some_and(|&v| v != 0),
        })
        .collect()
}
