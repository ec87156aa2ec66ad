//! What a call does, read off its micro ops (no lists of op names): the classes of
//! TVM's operator patterns, mapped to uops.
//!
//! | class | TVM pattern | the call's uops |
//! |---|---|---|
//! | [`OpClass::ElementWise`] | `kElemWise` | only `unary` / `binary` / `where` (tensor operands of equal shapes, scalars broadcast) |
//! | [`OpClass::Reindex`] | `kBroadcast`, `kInjective` | element-wise uops and at least one `reindex`, `iota` or `select`, no reduction: each output element reads a fixed set of input elements (broadcast, transpose, slice, pad, gather) |
//! | [`OpClass::Reduction`] | `kCommReduce` | a `reduce_*` or `reindex_reduce`, and no contraction |
//! | [`OpClass::Contraction`] | `kOutEWiseFusable` | a `reduce_sum` / `reduce_mean` or an additive `reindex_reduce` of a `mul` whose two operands are two different `reindex` nodes: a reduction over a product of reindexed operands (matmul, linear, conv) |
//! | [`OpClass::Opaque`] | `kOpaque` | a call that binds a `parallel` index (`$i`): a kernel cannot bind it, so it stays a call |
//!
//! `iota` (an index as a value) and `select` (a gather) are injective: every output
//! element is computed from at most one element of each input, at a cost like a
//! reindex's, so they are in the reindex class.

use uop_codegen::uop::{Accum, BinaryOp, Operand, Program, ReduceOp, Uop};

use crate::infer::call_program_of;
use crate::ir::{Graph, Node, Op};

use super::KernelFormError;

/// The class of a call, after TVM's operator patterns (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpClass {
    /// Unary, binary and `where` uops only.
    ElementWise,
    /// Movement (reindex, iota, select) with element-wise uops, no reduction.
    Reindex,
    /// A reduction that is not a contraction.
    Reduction,
    /// A reduction over a product of reindexed operands (matmul, conv).
    Contraction,
    /// Not fusable: stays a call.
    Opaque,
}

impl OpClass {
    /// The class's name, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            OpClass::ElementWise => "element-wise",
            OpClass::Reindex => "reindex",
            OpClass::Reduction => "reduction",
            OpClass::Contraction => "contraction",
            OpClass::Opaque => "opaque",
        }
    }

    /// Element-wise or reindex-only: fuses with anything, and is cheap to recompute.
    pub fn is_injective(self) -> bool {
        matches!(self, OpClass::ElementWise | OpClass::Reindex)
    }
}

impl std::fmt::Display for OpClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The class of the uops of a program.
pub fn classify_program(program: &Program) -> OpClass {
    let mut class = OpClass::ElementWise;
    for node in &program.nodes {
        let c = match &node.op {
            Uop::Input
            | Uop::Unary { .. }
            | Uop::Binary { .. }
            | Uop::Where { .. }
            | Uop::Cast { .. } => OpClass::ElementWise,
            Uop::Reindex { .. } | Uop::Iota { .. } | Uop::Select { .. } => OpClass::Reindex,
            Uop::Reduce { op, x, .. } => {
                if matches!(op, ReduceOp::Sum | ReduceOp::Mean)
                    && is_product_of_reindexes(program, *x)
                {
                    OpClass::Contraction
                } else {
                    OpClass::Reduction
                }
            }
            Uop::ReindexReduce { op, x, .. } => {
                if *op == Accum::Add && is_product_of_reindexes(program, *x) {
                    OpClass::Contraction
                } else {
                    OpClass::Reduction
                }
            }
        };
        class = class.max(c);
    }
    class
}

/// True when node `x` of `program` is `mul(a, b)` with `a` and `b` two different
/// `reindex` nodes.
fn is_product_of_reindexes(program: &Program, x: uop_codegen::uop::NodeId) -> bool {
    let is_reindex = |o: &Operand| {
        o.node()
            .is_some_and(|n| matches!(program.node(n).op, Uop::Reindex { .. }))
    };
    match &program.node(x).op {
        Uop::Binary {
            op: BinaryOp::Mul,
            a,
            b,
        } => is_reindex(a) && is_reindex(b) && a != b,
        _ => false,
    }
}

/// The class of `node`: a call by its one-call program (built for the graph's
/// types); every other node is [`OpClass::Opaque`].
pub fn classify(graph: &Graph, node: &Node) -> Result<OpClass, KernelFormError> {
    let Op::Call(call) = &node.op else {
        return Ok(OpClass::Opaque);
    };
    if !call.bind.is_empty() {
        return Ok(OpClass::Opaque);
    }
    let types = node
        .inputs
        .iter()
        .map(|r| {
            graph
                .type_of(*r)
                .cloned()
                .ok_or_else(|| KernelFormError::Node {
                    node: node.id,
                    message: format!("input {r} does not exist"),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (program, _) = call_program_of(graph, call, &types).map_err(|e| KernelFormError::Node {
        node: node.id,
        message: format!("{}: {e}", call.op),
    })?;
    Ok(classify_program(&program))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GraphBuilder;
    use uop_codegen::uop::DType;

    /// The class of `op` applied to inputs of the given shapes.
    fn class_of(op: &str, shapes: &[&[&str]]) -> OpClass {
        let mut b = GraphBuilder::new(DType::F32);
        let inputs: Vec<_> = shapes
            .iter()
            .enumerate()
            .map(|(k, s)| b.input(&format!("x{k}"), DType::F32, s).expect("input"))
            .collect();
        let y = b.op(op, &inputs).expect("op");
        b.output(y);
        let g = b.finish();
        let node = g.node(y.node).expect("node");
        classify(&g, node).expect("classified")
    }

    #[test]
    fn classes_come_from_the_uops() {
        assert_eq!(class_of("exp", &[&["N"]]), OpClass::ElementWise);
        assert_eq!(class_of("add", &[&["N"], &["N"]]), OpClass::ElementWise);
        assert_eq!(class_of("relu", &[&["N"]]), OpClass::ElementWise);
        // A broadcasting add reindexes its smaller operand.
        assert_eq!(class_of("add", &[&["M", "N"], &["N"]]), OpClass::Reindex);
        assert_eq!(class_of("softmax", &[&["M", "N"]]), OpClass::Reduction);
        assert_eq!(
            class_of("matmul", &[&["M", "K"], &["K", "N"]]),
            OpClass::Contraction
        );
        assert_eq!(
            class_of("linear", &[&["M", "K"], &["N", "K"]]),
            OpClass::Contraction
        );
    }
}
