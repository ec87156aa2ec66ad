//! The built-in micro ops as text calls: their names, signatures, and how a call's
//! arguments map onto [`Builder`] methods (which do all the checking).

use crate::uop::{Accum, BinaryOp, Builder, DType, NodeId, ReduceOp, UnaryOp, UopError};

use super::args::{Args, Attrs, MacroError};

/// A micro op, as named in `.uop` text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Micro {
    Reindex,
    ReindexReduce,
    Unary(UnaryOp),
    Binary(BinaryOp),
    Where,
    Reduce(ReduceOp),
    Select,
    Iota,
    Cast,
}

impl Micro {
    /// Every micro op, in the order of DESIGN.md §4.
    pub fn all() -> Vec<Micro> {
        let mut all = vec![Micro::Reindex, Micro::ReindexReduce];
        all.extend(UnaryOp::ALL.iter().map(|&op| Micro::Unary(op)));
        all.extend(BinaryOp::ALL.iter().map(|&op| Micro::Binary(op)));
        all.push(Micro::Where);
        all.extend(ReduceOp::ALL.iter().map(|&op| Micro::Reduce(op)));
        all.extend([Micro::Select, Micro::Iota, Micro::Cast]);
        all
    }

    /// Looks a micro op up by its text name.
    pub fn from_name(name: &str) -> Option<Micro> {
        match name {
            "reindex" => Some(Micro::Reindex),
            "reindex_reduce" => Some(Micro::ReindexReduce),
            "where" => Some(Micro::Where),
            "select" => Some(Micro::Select),
            "iota" => Some(Micro::Iota),
            "cast" => Some(Micro::Cast),
            _ => {
                if let Some(op) = name.strip_prefix("reduce_") {
                    return ReduceOp::from_name(op).map(Micro::Reduce);
                }
                UnaryOp::from_name(name)
                    .map(Micro::Unary)
                    .or_else(|| BinaryOp::from_name(name).map(Micro::Binary))
            }
        }
    }

    /// The name calls use.
    pub fn name(self) -> String {
        match self {
            Micro::Reindex => "reindex".into(),
            Micro::ReindexReduce => "reindex_reduce".into(),
            Micro::Unary(op) => op.name().into(),
            Micro::Binary(op) => op.name().into(),
            Micro::Where => "where".into(),
            Micro::Reduce(op) => format!("reduce_{}", op.name()),
            Micro::Select => "select".into(),
            Micro::Iota => "iota".into(),
            Micro::Cast => "cast".into(),
        }
    }

    /// How a call looks.
    pub fn signature(self) -> String {
        match self {
            Micro::Reindex => "reindex(x, [shape], [index], fill=0, sources=[x])".into(),
            Micro::ReindexReduce => {
                "reindex_reduce(x, [shape], [index], op=\"add\", sources=[x])".into()
            }
            Micro::Unary(op) => format!("{op}(x)"),
            Micro::Binary(op) => format!("{op}(a, b)"),
            Micro::Where => "where(c, a, b)".into(),
            Micro::Reduce(_) => format!("{}(x, [axes])", self.name()),
            Micro::Select => "select(x, index, axis=N)".into(),
            Micro::Iota => "iota([shape], axis, sources=[])".into(),
            Micro::Cast => "cast(x, \"i32\" or \"float\")".into(),
        }
    }

    /// One line on what the op computes.
    pub fn doc(self) -> String {
        match self {
            Micro::Reindex => "out[i] = x[index(i)]; out-of-range reads give fill".into(),
            Micro::ReindexReduce => "scatter: out[index(i)] op= x[i] (op add, max or min)".into(),
            Micro::Unary(op) => format!("element-wise {op}"),
            Micro::Binary(op) if op.is_comparison() => {
                format!("element-wise {op}, giving 1.0 or 0.0")
            }
            Micro::Binary(op) => format!("element-wise {op}"),
            Micro::Where => "element-wise c != 0 ? a : b".into(),
            Micro::Reduce(op) => format!("{op} over the axes; reduced axes keep size 1"),
            Micro::Select => "gather along axis with an index tensor".into(),
            Micro::Iota => "the output index along axis, as a value".into(),
            Micro::Cast => "x as i32 or as the program's float type: a float to i32 truncates \
                            toward zero (saturating, NaN to 0)"
                .into(),
        }
    }

    /// Builds the op from a call's arguments.
    pub fn build(self, b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
        match self {
            Micro::Reindex => {
                let x = args.node(0)?;
                let shape = args.exprs(1)?;
                let index = args.exprs(2)?;
                let fill = attrs.float_or("fill", 0.0)?;
                let sources = attrs.nodes_or("sources", vec![x])?;
                b.reindex_exprs(x, shape, &sources, index, fill)
                    .map_err(|e| at_list_error(e, args.offset(2)))
            }
            Micro::ReindexReduce => {
                let x = args.node(0)?;
                let shape = args.exprs(1)?;
                let index = args.exprs(2)?;
                let op = match attrs.str_or("op", "add")? {
                    "add" => Accum::Add,
                    "max" => Accum::Max,
                    "min" => Accum::Min,
                    other => {
                        return Err(attrs.error(
                            "op",
                            format!("op must be \"add\", \"max\" or \"min\", found {other:?}"),
                        ));
                    }
                };
                let sources = attrs.nodes_or("sources", vec![x])?;
                b.reindex_reduce_exprs(x, shape, &sources, index, op)
                    .map_err(|e| at_list_error(e, args.offset(2)))
            }
            Micro::Unary(op) => Ok(b.unary(op, args.node(0)?)?),
            // Element-wise ops broadcast numpy-style in the text format, whatever
            // the registry (`uop::broadcast`).
            Micro::Binary(op) => {
                let ab = b.broadcast_operands(op.name(), &[args.operand(0)?, args.operand(1)?])?;
                Ok(b.binary(op, ab[0].clone(), ab[1].clone())?)
            }
            Micro::Where => {
                let operands = [args.operand(0)?, args.operand(1)?, args.operand(2)?];
                let cab = b.broadcast_operands("where", &operands)?;
                Ok(b.where_(cab[0].clone(), cab[1].clone(), cab[2].clone())?)
            }
            Micro::Reduce(op) => {
                let x = args.node(0)?;
                let axes = args.axes(1, b.shape(x).len())?;
                b.reduce(op, &axes, x)
                    .map_err(|e| at_axis_error(e, args.offset(1)))
            }
            Micro::Select => {
                let x = args.node(0)?;
                let index = args.node(1)?;
                let (axis, at) = axis_argument(args, attrs, 2, b.shape(x).len())?;
                b.select(axis, x, index).map_err(|e| at_axis_error(e, at))
            }
            Micro::Iota => {
                let shape = args.exprs(0)?;
                let (axis, at) = axis_argument(args, attrs, 1, shape.len())?;
                let sources = attrs.nodes_or("sources", vec![])?;
                b.iota_exprs(shape, &sources, axis)
                    .map_err(|e| at_axis_error(e, at))
            }
            Micro::Cast => {
                let x = args.node(0)?;
                let name = args.str(1)?;
                let dtype = match name {
                    "float" => b.dtype(),
                    _ => DType::from_name(name).ok_or_else(|| {
                        MacroError::from(UopError::BadExpr {
                            op: "cast".into(),
                            message: format!(
                                "the type must be \"i32\" or \"float\", found {name:?}"
                            ),
                        })
                    })?,
                };
                Ok(b.cast(x, dtype)?)
            }
        }
    }
}

/// An axis given either as positional argument `i` or as `axis=`, with where it was written.
fn axis_argument(
    args: &Args,
    attrs: &Attrs,
    i: usize,
    rank: usize,
) -> Result<(usize, Option<usize>), MacroError> {
    match (args.offset(i), attrs.offset("axis")) {
        (Some(_), Some(_)) => Err(attrs.error("axis", "the axis is given twice")),
        (Some(at), None) => Ok((args.axis(i, rank)?, Some(at))),
        (None, Some(at)) => Ok((attrs.axis_or("axis", rank, 0)?, Some(at))),
        (None, None) => Err(MacroError::missing("the axis is missing".into())),
    }
}

/// Points a wrong-length index list at the list rather than the call.
fn at_list_error(e: UopError, list_at: Option<usize>) -> MacroError {
    match (&e, list_at) {
        (UopError::RankMismatch { .. }, Some(at)) => MacroError::from(e).at(at),
        _ => MacroError::from(e),
    }
}

/// Points an invalid or repeated axis at the axis argument rather than the call.
fn at_axis_error(e: UopError, axis_at: Option<usize>) -> MacroError {
    match (&e, axis_at) {
        (UopError::BadAxis { .. } | UopError::RepeatedAxis { .. }, Some(at)) => {
            MacroError::from(e).at(at)
        }
        _ => MacroError::from(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_micro_op_is_found_by_its_name() {
        for m in Micro::all() {
            assert_eq!(Micro::from_name(&m.name()), Some(m), "{}", m.name());
        }
        assert_eq!(Micro::from_name("reduce_"), None);
        assert_eq!(Micro::from_name("softmax"), None);
    }
}
