//! Types of node outputs: a [`Call`] is typed by building its uops on a scratch
//! [`Builder`] whose inputs have the call's input types (so every shape, axis and
//! dtype rule is the builder's, as in a program); super nodes by the rules of
//! DESIGN.md §13.2. The builder, the verifier and the interpreter all use these.

use std::collections::HashMap;

use uop_codegen::index::{Expr, is_plain_name};
use uop_codegen::text::{CallArg, MacroError, Registry, TextError, Value, apply_op, apply_op_at};
use uop_codegen::uop::{Builder, DType, NodeId as UopId, Program};

use crate::ir::{Call, CallValue, Graph, ListItem, Node, Op, ValueType};

/// Builds `call` on `builder`, reading `inputs[k]` for the call's input `k`.
///
/// Names the call binds (`$i` of a `parallel`) must already be declared as params
/// of `builder`.
pub fn apply_call(
    builder: &mut Builder,
    registry: &Registry,
    call: &Call,
    inputs: &[UopId],
) -> Result<UopId, MacroError> {
    let (args, attrs) = call_args(call, inputs)?;
    apply_op(builder, registry, &call.op, args, attrs)
}

/// Where a call's arguments were written in source text: one per positional
/// argument, then one per attribute, in the call's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArgSpan {
    /// Offset of the value.
    pub at: usize,
    /// Offset of an attribute's name.
    pub name_at: Option<usize>,
    /// Spans of a list's items.
    pub items: Vec<(usize, usize)>,
}

/// Where a call was written: the source, the op name's offset, the arguments'.
#[derive(Clone, Copy, Debug)]
pub struct CallSite<'a> {
    /// The whole source text.
    pub src: &'a str,
    /// Offset of the op's name.
    pub op_at: usize,
    /// Positional arguments, then attributes.
    pub args: &'a [ArgSpan],
}

/// [`apply_call`] for a call written at `site`: errors are located in the source as
/// `parse_program`'s are.
pub fn apply_call_at(
    builder: &mut Builder,
    registry: &Registry,
    call: &Call,
    inputs: &[UopId],
    site: CallSite<'_>,
) -> Result<UopId, TextError> {
    let (mut args, mut attrs) = call_args(call, inputs).map_err(|e| {
        TextError::new(
            uop_codegen::text::ErrorKind::Build,
            site.src,
            site.op_at,
            e.message(),
        )
    })?;
    let mut spans = site.args.iter();
    for a in args.iter_mut().chain(attrs.iter_mut().map(|(_, a)| a)) {
        if let Some(s) = spans.next() {
            *a = a.clone().located(s.at, s.name_at, s.items.clone());
        }
    }
    apply_op_at(
        builder, registry, &call.op, args, attrs, site.src, site.op_at,
    )
}

/// The op arguments of `call`, reading `inputs[k]` for the call's input `k`.
#[allow(clippy::type_complexity)]
fn call_args(
    call: &Call,
    inputs: &[UopId],
) -> Result<(Vec<CallArg>, Vec<(String, CallArg)>), MacroError> {
    let input = |k: usize| {
        inputs.get(k).copied().ok_or_else(|| {
            MacroError::new(format!(
                "{}: argument refers to input {k}, but the node has {}",
                call.op,
                inputs.len()
            ))
        })
    };
    let value = |v: &CallValue| -> Result<CallArg, MacroError> {
        Ok(match v {
            CallValue::Input(k) => CallArg::new(Value::Node(input(*k)?)),
            CallValue::Int(i) => CallArg::new(Value::Int(*i)),
            CallValue::Float(f) => CallArg::new(Value::Float(*f)),
            CallValue::Bool(b) => CallArg::new(Value::Bool(*b)),
            CallValue::Str(s) => CallArg::new(Value::Str(s.clone())),
            CallValue::Param(p) => CallArg::new(Value::Param(p.clone())),
            CallValue::List(items) => {
                let mut exprs = Vec::with_capacity(items.len());
                let mut nodes = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        ListItem::Expr(e) => {
                            exprs.push(e.clone());
                            nodes.push(None);
                        }
                        ListItem::Input(k) => {
                            let id = input(*k)?;
                            exprs.push(Expr::name(builder_name(*k)));
                            nodes.push(Some(id));
                        }
                    }
                }
                CallArg::list(exprs, nodes)
            }
        })
    };
    let args = call.args.iter().map(value).collect::<Result<Vec<_>, _>>()?;
    let attrs = call
        .attrs
        .iter()
        .map(|(n, v)| Ok((n.clone(), value(v)?)))
        .collect::<Result<Vec<_>, MacroError>>()?;
    Ok((args, attrs))
}

/// The name input `k` of a call's scratch program has.
fn builder_name(k: usize) -> String {
    format!("_in{k}")
}

/// A one-call program: inputs of `input_types` (named `_in0`, `_in1`, ...), the
/// call, its result as the only output; and the result's type in the terms of
/// `input_types`.
///
/// Sizes that are neither integers nor plain names (`H - $kh + 1`) stand in the
/// program as fresh dimension names, one per distinct expression, and are put
/// back in the result's type.
pub fn call_program(
    dtype: DType,
    params: &[String],
    registry: &Registry,
    call: &Call,
    input_types: &[ValueType],
) -> Result<(Program, ValueType), MacroError> {
    call_program_in(dtype, params, registry, call, input_types, &[])
}

/// [`call_program`] for a call of a graph whose inputs have the dimensions `dims`
/// (name and size: the name itself for typing, [`graph_dims`]; its value to run):
/// a dimension the call's lists mention (`reindex(m, [B, N], [i0, 0])`, where only
/// another input has `N`) is replaced by its size when that is not the name
/// itself, and is otherwise a dimension of the scratch program too, carried by a
/// hidden input that no output reads.
pub fn call_program_in(
    dtype: DType,
    params: &[String],
    registry: &Registry,
    call: &Call,
    input_types: &[ValueType],
    dims: &[(String, Expr)],
) -> Result<(Program, ValueType), MacroError> {
    let values: HashMap<String, Expr> = dims
        .iter()
        .filter(|(n, e)| *e != Expr::name(n.clone()))
        .cloned()
        .collect();
    let substituted;
    let call = if values.is_empty() {
        call
    } else {
        substituted = substitute_lists(call, &values);
        &substituted
    };
    let symbolic: Vec<String> = dims
        .iter()
        .filter(|(n, _)| !values.contains_key(n))
        .map(|(n, _)| n.clone())
        .collect();
    let (mut b, ids) = scratch(dtype, params, call, input_types, &symbolic)?;
    let out = apply_call(&mut b, registry, call, &ids)?;
    finish_scratch(b, &ids, out, input_types)
}

/// `call` with the names of `map` replaced in its lists.
fn substitute_lists(call: &Call, map: &HashMap<String, Expr>) -> Call {
    let value = |v: &CallValue| match v {
        CallValue::List(items) => CallValue::List(
            items
                .iter()
                .map(|i| match i {
                    ListItem::Expr(e) => ListItem::Expr(substitute(e, map)),
                    other => other.clone(),
                })
                .collect(),
        ),
        other => other.clone(),
    };
    Call {
        op: call.op.clone(),
        args: call.args.iter().map(value).collect(),
        attrs: call
            .attrs
            .iter()
            .map(|(n, v)| (n.clone(), value(v)))
            .collect(),
        bind: call.bind.clone(),
    }
}

/// [`call_program_in`] for a call of `graph`'s top level: the graph's dtype, params,
/// registry and input dims.
pub fn call_program_of(
    graph: &Graph,
    call: &Call,
    input_types: &[ValueType],
) -> Result<(Program, ValueType), MacroError> {
    call_program_in(
        graph.dtype,
        &graph.params,
        &graph.registry,
        call,
        input_types,
        &graph_dims(graph),
    )
}

/// The dimension names of the graph's inputs, in order of first appearance, each
/// with itself as its size (for typing with [`call_program_in`]).
pub fn graph_dims(graph: &Graph) -> Vec<(String, Expr)> {
    let mut dims: Vec<String> = Vec::new();
    for t in graph.input_node().map_or(&[][..], |n| &n.outputs) {
        for d in &t.shape {
            d.visit(&mut |e| {
                if let Expr::Name(n) = e
                    && !dims.contains(n)
                {
                    dims.push(n.clone());
                }
            });
        }
    }
    dims.into_iter()
        .map(|n| {
            let e = Expr::name(n.clone());
            (n, e)
        })
        .collect()
}

/// The names the lists of a call mention.
pub(crate) fn list_names(call: &Call) -> Vec<String> {
    let mut names = Vec::new();
    for v in call.args.iter().chain(call.attrs.iter().map(|(_, v)| v)) {
        if let CallValue::List(items) = v {
            for item in items {
                if let ListItem::Expr(e) = item {
                    e.visit(&mut |e| {
                        if let Expr::Name(n) = e {
                            names.push(n.clone());
                        }
                    });
                }
            }
        }
    }
    names
}

/// [`call_program`] for a call written at `site`, with errors located in the source.
pub fn call_program_at(
    dtype: DType,
    params: &[String],
    registry: &Registry,
    call: &Call,
    input_types: &[ValueType],
    dims: &[(String, Expr)],
    site: CallSite<'_>,
) -> Result<(Program, ValueType), TextError> {
    let at = |e: MacroError| {
        TextError::new(
            uop_codegen::text::ErrorKind::Build,
            site.src,
            site.op_at,
            format!("{}: {}", call.op, e.message()),
        )
    };
    let symbolic: Vec<String> = dims.iter().map(|(n, _)| n.clone()).collect();
    let (mut b, ids) = scratch(dtype, params, call, input_types, &symbolic).map_err(at)?;
    let out = apply_call_at(&mut b, registry, call, &ids, site)?;
    finish_scratch(b, &ids, out, input_types).map_err(at)
}

/// The scratch builder of a one-call program and its inputs.
fn scratch(
    dtype: DType,
    params: &[String],
    call: &Call,
    input_types: &[ValueType],
    dims: &[String],
) -> Result<(Builder, Vec<UopId>), MacroError> {
    let mut b = Builder::new(dtype);
    let mut declared: Vec<&str> = Vec::new();
    for p in params.iter().chain(call.bind.iter().map(|(n, _)| n)) {
        if !declared.contains(&p.as_str()) {
            b.param(p)?;
            declared.push(p);
        }
    }
    let fresh = fresh_dims(input_types);
    let mut ids = Vec::with_capacity(input_types.len());
    for (k, t) in input_types.iter().enumerate() {
        let shape = with_fresh_names(&t.shape, &fresh);
        ids.push(b.input_exprs(&builder_name(k), t.dtype, shape)?);
    }
    let mut hidden = 0;
    for n in list_names(call) {
        if dims.contains(&n) && !b.has_dim(&n) {
            b.input_exprs(&format!("_dims{hidden}"), DType::I32, vec![Expr::name(n)])?;
            hidden += 1;
        }
    }
    Ok((b, ids))
}

/// The one-call program of a scratch builder, and its result's type in the terms
/// of `input_types`.
fn finish_scratch(
    b: Builder,
    ids: &[UopId],
    out: UopId,
    input_types: &[ValueType],
) -> Result<(Program, ValueType), MacroError> {
    let fresh = fresh_dims(input_types);
    let back: HashMap<String, Expr> = fresh.into_iter().map(|(e, n)| (n, e)).collect();
    let shape = b.shape(out).iter().map(|e| substitute(e, &back)).collect();
    let ty = ValueType::new(b.node(out).dtype, shape);
    let program = b.combine(ids, &[out])?;
    Ok((program, ty))
}

/// The fresh dimension names sizes that are neither integers nor plain names get
/// in a scratch program, in order of first appearance.
pub(crate) fn fresh_dims(input_types: &[ValueType]) -> HashMap<Expr, String> {
    let mut fresh: HashMap<Expr, String> = HashMap::new();
    for t in input_types {
        for d in &t.shape {
            match d {
                Expr::Int(v) if *v >= 0 => {}
                Expr::Name(n) if is_plain_name(n) => {}
                other => {
                    let n = fresh.len();
                    fresh
                        .entry(other.clone())
                        .or_insert_with(|| format!("_dim{n}"));
                }
            }
        }
    }
    fresh
}

/// A shape with the fresh names of `fresh` in place of the sizes they stand for.
pub(crate) fn with_fresh_names(shape: &[Expr], fresh: &HashMap<Expr, String>) -> Vec<Expr> {
    shape
        .iter()
        .map(|d| match fresh.get(d) {
            Some(n) => Expr::name(n.clone()),
            None => d.clone(),
        })
        .collect()
}

/// `e` with every name in `map` replaced by its expression.
pub fn substitute(e: &Expr, map: &HashMap<String, Expr>) -> Expr {
    match e {
        Expr::Name(n) => map.get(n).cloned().unwrap_or_else(|| e.clone()),
        Expr::Neg(a) => Expr::Neg(Box::new(substitute(a, map))),
        Expr::Bin(op, a, b) => Expr::bin(*op, substitute(a, map), substitute(b, map)),
        _ => e.clone(),
    }
}

/// The output types `node` must have, computed from its inputs and sub-functions
/// (DESIGN.md §13.2); an error says what does not fit.
///
/// Input and Kernel nodes declare their types; they are returned as they are.
pub fn expected_types(graph: &Graph, node: &Node) -> Result<Vec<ValueType>, String> {
    let input_types = node
        .inputs
        .iter()
        .map(|r| {
            graph
                .type_of(*r)
                .cloned()
                .ok_or_else(|| format!("input {r} does not exist"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let params_of = |input: crate::ir::NodeId| -> Result<Vec<ValueType>, String> {
        graph
            .node(input)
            .map(|n| n.outputs.clone())
            .ok_or_else(|| format!("interface input {input} does not exist"))
    };
    let results_of = |i: &crate::ir::Interface| -> Result<Vec<ValueType>, String> {
        i.outputs
            .iter()
            .map(|s| {
                graph
                    .source_type(s)
                    .ok_or_else(|| format!("interface output {s:?} does not exist"))
            })
            .collect()
    };
    let same = |what: &str, expected: &[ValueType], found: &[ValueType]| {
        if expected == found {
            Ok(())
        } else {
            Err(format!(
                "{what}: expected ({}), found ({})",
                list(expected),
                list(found)
            ))
        }
    };
    match &node.op {
        Op::Input { .. } | Op::Kernel(_) => Ok(node.outputs.clone()),
        Op::Const(t) => Ok(vec![ValueType::new(
            t.dtype,
            t.shape.iter().map(|&d| Expr::Int(d as i64)).collect(),
        )]),
        Op::Call(call) => {
            let (_, ty) = call_program_of(graph, call, &input_types).map_err(|e| e.to_string())?;
            Ok(vec![ty])
        }
        Op::While { cond, body } => {
            same(
                "the condition's parameters",
                &input_types,
                &params_of(cond.input)?,
            )?;
            same(
                "the body's parameters",
                &input_types,
                &params_of(body.input)?,
            )?;
            let c = results_of(cond)?;
            if c.len() != 1 || !c[0].is_single() {
                return Err(format!(
                    "the condition must return one value, found ({})",
                    list(&c)
                ));
            }
            same(
                "the body's results (the state)",
                &input_types,
                &results_of(body)?,
            )?;
            Ok(input_types)
        }
        Op::If { then, else_ } => {
            let branches = [then, else_];
            selected(
                &input_types,
                &branches,
                "condition",
                &params_of,
                &results_of,
            )
        }
        Op::Case { branches } => {
            let branches: Vec<_> = branches.iter().collect();
            selected(&input_types, &branches, "selector", &params_of, &results_of)
        }
        Op::Parallel { body, count, .. } => {
            let params = params_of(body.input)?;
            let mut expected = vec![ValueType::scalar(DType::I32)];
            expected.extend(input_types.iter().cloned());
            same("the body's parameters", &expected, &params)?;
            Ok(results_of(body)?
                .into_iter()
                .map(|t| {
                    let mut shape = vec![count.clone()];
                    shape.extend(t.shape);
                    ValueType::new(t.dtype, shape)
                })
                .collect())
        }
        Op::Scan {
            count,
            carried,
            scanned,
            stacked,
            body,
            ..
        } => {
            let shape = crate::scan::ScanShape {
                count,
                carried: *carried,
                scanned,
                stacked,
            };
            crate::scan::output_types(
                &shape,
                &input_types,
                &params_of(body.input)?,
                &results_of(body)?,
            )
        }
        Op::NoInline { body, .. } => {
            same(
                "the function's parameters",
                &input_types,
                &params_of(body.input)?,
            )?;
            results_of(body)
        }
        Op::Chunk { axis, .. } => chunk_types(*axis, input_types),
        Op::SumChunks => match input_types.as_slice() {
            [t] => Ok(vec![t.clone()]),
            _ => Err(format!(
                "sum_chunks takes one input, found {}",
                input_types.len()
            )),
        },
        Op::Sink => Ok(Vec::new()),
    }
}

/// Output types of `chunk`: its inputs', each with the same rows on `axis`.
fn chunk_types(axis: usize, input_types: Vec<ValueType>) -> Result<Vec<ValueType>, String> {
    let Some(first) = input_types.first() else {
        return Err("chunk takes at least one input, found none".into());
    };
    for t in &input_types {
        if axis >= t.shape.len() {
            return Err(format!("chunk axis {axis} is not an axis of {t}"));
        }
        if t.shape[axis] != first.shape[axis] {
            return Err(format!(
                "chunk inputs {first} and {t} differ on axis {axis}: the values chunked together have the same rows"
            ));
        }
    }
    Ok(input_types)
}

/// Output types of `if` / `case`: the first input is one value, the branches take
/// the other inputs and share one signature.
fn selected(
    input_types: &[ValueType],
    branches: &[&crate::ir::Interface],
    what: &str,
    params_of: &dyn Fn(crate::ir::NodeId) -> Result<Vec<ValueType>, String>,
    results_of: &dyn Fn(&crate::ir::Interface) -> Result<Vec<ValueType>, String>,
) -> Result<Vec<ValueType>, String> {
    let Some((sel, args)) = input_types.split_first() else {
        return Err(format!("the {what} is missing"));
    };
    if !sel.is_single() {
        return Err(format!("the {what} must be one value, found {sel}"));
    }
    let mut out: Option<Vec<ValueType>> = None;
    for (k, b) in branches.iter().enumerate() {
        let params = params_of(b.input)?;
        if params != args {
            return Err(format!(
                "branch {k} takes ({}), but the arguments are ({})",
                list(&params),
                list(args)
            ));
        }
        let results = results_of(b)?;
        match &out {
            None => out = Some(results),
            Some(first) if *first != results => {
                return Err(format!(
                    "branch {k} returns ({}), but branch 0 returns ({})",
                    list(&results),
                    list(first)
                ));
            }
            Some(_) => {}
        }
    }
    out.ok_or_else(|| "no branches".to_string())
}

/// Types as a comma-separated list.
pub use crate::vocab::type_list as list;

#[cfg(test)]
mod tests {
    use super::*;
    use uop_codegen::index::parse_expr;

    fn ty(shape: &[&str]) -> ValueType {
        ValueType::new(
            DType::F32,
            shape.iter().map(|s| parse_expr(s).expect("expr")).collect(),
        )
    }

    #[test]
    fn a_call_is_typed_by_the_builder_with_compound_sizes_put_back() {
        let registry = uop_ops::registry();
        let call = Call::new(
            "reduce_sum",
            vec![
                CallValue::Input(0),
                CallValue::List(vec![ListItem::Expr(Expr::Int(1))]),
            ],
        );
        let (_, t) = call_program(
            DType::F32,
            &["kh".into()],
            &registry,
            &call,
            &[ty(&["N", "H - $kh + 1"])],
        )
        .expect("typed");
        assert_eq!(t, ty(&["N", "1"]));
        let call = Call::new("exp", vec![CallValue::Input(0)]);
        let (_, t) = call_program(
            DType::F32,
            &["kh".into()],
            &registry,
            &call,
            &[ty(&["H - $kh + 1"])],
        )
        .expect("typed");
        assert_eq!(t, ty(&["H - $kh + 1"]));
    }

    #[test]
    fn macro_ops_are_typed_too() {
        let registry = uop_ops::registry();
        let call = Call::new("matmul", vec![CallValue::Input(0), CallValue::Input(1)]);
        let (_, t) = call_program(
            DType::F32,
            &[],
            &registry,
            &call,
            &[ty(&["M", "K"]), ty(&["K", "N"])],
        )
        .expect("typed");
        assert_eq!(t, ty(&["M", "N"]));
    }

    #[test]
    fn a_call_may_name_dims_of_other_graph_inputs() {
        let registry = uop_ops::registry();
        // m: [B, 1] broadcast to [B, N], where only another input has N.
        let call = Call::new(
            "reindex",
            vec![
                CallValue::Input(0),
                CallValue::List(vec![
                    ListItem::Expr(Expr::name("B")),
                    ListItem::Expr(Expr::name("N")),
                ]),
                CallValue::List(vec![
                    ListItem::Expr(parse_expr("i0").expect("expr")),
                    ListItem::Expr(Expr::Int(0)),
                ]),
            ],
        );
        let symbolic = |n: &str| (n.to_string(), Expr::name(n));
        let (_, t) = call_program_in(
            DType::F32,
            &[],
            &registry,
            &call,
            &[ty(&["B", "1"])],
            &[symbolic("B"), symbolic("N")],
        )
        .expect("typed");
        assert_eq!(t, ty(&["B", "N"]));
        // Without the graph's dims, N is unknown.
        assert!(call_program(DType::F32, &[], &registry, &call, &[ty(&["B", "1"])]).is_err());
        // With values (as the interpreter runs it), the sizes are the values.
        let (program, t) = call_program_in(
            DType::F32,
            &[],
            &registry,
            &call,
            &[ty(&["2", "1"])],
            &[("B".into(), Expr::Int(2)), ("N".into(), Expr::Int(3))],
        )
        .expect("typed");
        assert_eq!(t, ty(&["2", "3"]));
        assert_eq!(program.inputs.len(), 1);
    }
}
