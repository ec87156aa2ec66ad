//! The ONNX ops the importer supports: one table ([`OPS`]) that the importer looks
//! every node up in and that the documentation table ([`markdown_table`]) and a
//! command-line listing are printed from.

use crate::import::value::Val;
use crate::import::{CResult, Im, MAX_OPSET, NodeIn};
use crate::ops::{
    control, elementwise as ew, loops, movement as mv, nn, reduce as rd, shape as sh,
};

/// A translation of one ONNX node.
pub(crate) type Convert = fn(&mut Im, &NodeIn) -> CResult<Vec<Val>>;

/// One supported ONNX op (default domain).
pub struct OnnxOp {
    /// The op type, as ONNX spells it.
    pub name: &'static str,
    /// The lowest opset whose form of the op is supported (up to [`MAX_OPSET`]).
    pub since: i64,
    /// What it becomes in uop.
    pub uop: &'static str,
    pub(crate) convert: Convert,
}

const fn op(name: &'static str, since: i64, uop: &'static str, convert: Convert) -> OnnxOp {
    OnnxOp {
        name,
        since,
        uop,
        convert,
    }
}

/// Every supported op, alphabetically.
#[rustfmt::skip]
pub static OPS: &[OnnxOp] = &[
    op("Abs", 6, "abs", ew::unary),
    op("Acosh", 9, "log(x + sqrt(x² - 1))", ew::composed),
    op("Add", 7, "add (folded on integers known at import)", ew::arith),
    op("And", 7, "mul on 0/1", ew::logic),
    op("ArgMax", 11, "argmax (select_last_index: flip)", rd::arg_reduce),
    op("ArgMin", 11, "argmin (select_last_index: flip)", rd::arg_reduce),
    op("Asinh", 9, "log(x + sqrt(x² + 1))", ew::composed),
    op("Atanh", 9, "log((1 + x) / (1 - x)) / 2", ew::composed),
    op("AveragePool", 11, "avg_pool2d, 1-D as 2-D (asymmetric pads: pad first)", nn::pool),
    op("BatchNormalization", 9, "inference: (x - mean) * rsqrt(var + eps) * scale + B", nn::norm),
    op("Cast", 6, "folded on known tensors; at run time cast (float → int truncates), ne 0 (→ bool)", sh::cast),
    op("CastLike", 15, "Cast to the type of the second input", sh::cast_like),
    op("Ceil", 6, "ceil", ew::unary),
    op("Celu", 12, "max(0, x) + min(0, alpha (exp(x / alpha) - 1))", ew::composed),
    op("Clip", 6, "maximum, minimum (bounds known at import)", ew::clip),
    op("Concat", 4, "concat (folded on known tensors)", sh::concat),
    op("Constant", 1, "a tensor known at import", sh::constant),
    op("ConstantOfShape", 9, "a known tensor, or expand over symbolic sizes", sh::constant_of_shape),
    op("Conv", 1, "conv1d, conv2d (asymmetric pads: pad first)", nn::conv),
    op("ConvTranspose", 1, "conv_transpose2d (+ crop for asymmetric pads)", nn::conv_transpose),
    op("Cos", 7, "cos", ew::unary),
    op("Cosh", 9, "(exp(x) + exp(-x)) / 2", ew::composed),
    op("CumSum", 11, "cumsum (exclusive, reverse: sub, flip)", mv::cumsum),
    op("DepthToSpace", 11, "reshape, permute, reshape (DCR, CRD)", mv::space_depth),
    op("Div", 7, "div; integers: truncated toward zero (folded when known at import)", ew::arith),
    op("Dropout", 7, "identity (inference)", ew::identity),
    op("Elu", 6, "where(x > 0, x, alpha (exp(x) - 1))", ew::composed),
    op("Equal", 7, "eq", ew::compare),
    op("Erf", 9, "erf", ew::unary),
    op("Exp", 6, "exp", ew::unary),
    op("Expand", 8, "expand (bidirectional broadcast)", mv::expand),
    op("Flatten", 1, "reshape", sh::flatten),
    op("Floor", 6, "floor", ew::unary),
    op("Gather", 1, "index_select + reshape (folded on known tensors)", sh::gather),
    op("GatherElements", 11, "gather", mv::gather_elements),
    op("Gelu", 20, "gelu", ew::composed),
    op("Gemm", 7, "permute, matmul, mul, add", nn::gemm),
    op("GlobalAveragePool", 1, "mean over the spatial axes", nn::global_pool),
    op("GlobalMaxPool", 1, "max over the spatial axes", nn::global_pool),
    op("Greater", 7, "gt", ew::compare),
    op("GreaterOrEqual", 12, "ge", ew::compare),
    op("GroupNormalization", 18, "normalize per group, scale, bias", nn::norm),
    op("Hardmax", 1, "max, eq, cumsum (first maximum)", rd::softmax),
    op("HardSigmoid", 6, "max(0, min(1, alpha x + beta))", ew::composed),
    op("HardSwish", 14, "x · hard_sigmoid(x)", ew::composed),
    op("Identity", 1, "the value itself", ew::identity),
    op("If", 11, "if (a condition known at import: the branch inline)", control::if_),
    op("InstanceNormalization", 6, "normalize over the spatial axes, scale, bias", nn::norm),
    op("IsInf", 10, "eq(x, ±inf)", ew::is_special),
    op("IsNaN", 9, "ne(x, x)", ew::is_special),
    op("LayerNormalization", 17, "layernorm (Mean, InvStdDev composed)", nn::layer_norm),
    op("LeakyRelu", 6, "leaky_relu", ew::composed),
    op("Less", 7, "lt", ew::compare),
    op("LessOrEqual", 12, "le", ew::compare),
    op("Log", 6, "log", ew::unary),
    op("LogSoftmax", 1, "log_softmax (opset < 13: flatten first)", rd::softmax),
    op("Loop", 11, "scan (a trip count known at import, symbolic sizes included; the condition passed through); while (condition computed by the body, no scan outputs)", control::loop_),
    op("LpNormalization", 1, "x / sum(|x|) or x / sqrt(sum(x²))", nn::lp_norm),
    op("MatMul", 1, "matmul", nn::matmul),
    op("Max", 8, "maximum, variadic", ew::variadic),
    op("MaxPool", 11, "max_pool2d, 1-D as 2-D (asymmetric pads: pad with -inf first)", nn::pool),
    op("Mean", 8, "add, div, variadic", ew::variadic),
    op("MeanVarianceNormalization", 9, "(x - mean) / sqrt(var + 1e-9)", nn::norm),
    op("Min", 8, "minimum, variadic", ew::variadic),
    op("Mish", 18, "x · tanh(softplus(x))", ew::composed),
    op("Mod", 10, "x - floor(x / y) · y (fmod: trunc), floats and integers; folded on known integers", ew::modulo),
    op("Mul", 7, "mul (folded on integers known at import)", ew::arith),
    op("Neg", 6, "neg", ew::unary),
    op("Not", 1, "1 - x on 0/1", ew::logic),
    op("OneHot", 9, "eq against the classes, off + (on - off) · hit", mv::one_hot),
    op("Or", 7, "maximum on 0/1", ew::logic),
    op("Pad", 2, "pad (edge: replicate, wrap: circular)", mv::pad),
    op("Pow", 7, "pow", ew::arith),
    op("PRelu", 7, "where(x < 0, slope · x, x)", ew::composed),
    op("Range", 11, "a tensor known at import", sh::range),
    op("Reciprocal", 6, "reciprocal", ew::unary),
    op("ReduceL1", 1, "sum(abs(x))", rd::reduce),
    op("ReduceL2", 1, "sqrt(sum(x²))", rd::reduce),
    op("ReduceLogSum", 1, "log(sum(x))", rd::reduce),
    op("ReduceLogSumExp", 1, "logsumexp", rd::reduce),
    op("ReduceMax", 1, "max", rd::reduce),
    op("ReduceMean", 1, "mean", rd::reduce),
    op("ReduceMin", 1, "min", rd::reduce),
    op("ReduceProd", 1, "prod", rd::reduce),
    op("ReduceSum", 1, "sum", rd::reduce),
    op("ReduceSumSquare", 1, "sum(x²)", rd::reduce),
    op("Relu", 6, "relu", ew::unary),
    op("Reshape", 5, "reshape (0 copies, -1 inferred; folded on known tensors)", sh::reshape),
    op("RMSNormalization", 23, "rmsnorm", nn::layer_norm),
    op("Round", 11, "floor(x + 1/2), ties to even", ew::round),
    op("Scan", 8, "scan (directions and axes; opset 8: a scan over the batch of scans)", loops::scan),
    op("Selu", 6, "gamma · elu(x, alpha)", ew::composed),
    op("Shape", 1, "the sizes, known at import (symbolic where the input's are)", sh::shape),
    op("Shrink", 9, "where(x < -lambd, x + bias, where(x > lambd, x - bias, 0))", ew::composed),
    op("Sigmoid", 6, "sigmoid", ew::unary),
    op("Sign", 9, "sign", ew::unary),
    op("Sin", 7, "sin", ew::unary),
    op("Sinh", 9, "(exp(x) - exp(-x)) / 2", ew::composed),
    op("Size", 1, "the element count, known at import", sh::size),
    op("Slice", 1, "slice per axis (folded on known 1-D tensors)", mv::slice),
    op("Softmax", 1, "softmax (opset < 13: flatten first)", rd::softmax),
    op("Softplus", 1, "log(exp(x) + 1)", ew::composed),
    op("Softsign", 1, "x / (1 + |x|)", ew::composed),
    op("SpaceToDepth", 1, "reshape, permute, reshape", mv::space_depth),
    op("Split", 2, "slice per output (sizes, even, num_outputs)", mv::split),
    op("Sqrt", 6, "sqrt", ew::unary),
    op("Squeeze", 1, "reshape (folded on known tensors)", sh::squeeze),
    op("Sub", 7, "sub (folded on integers known at import)", ew::arith),
    op("Sum", 8, "add, variadic", ew::variadic),
    op("Swish", 24, "x · sigmoid(alpha x)", ew::composed),
    op("Tan", 7, "sin / cos", ew::composed),
    op("Tanh", 6, "tanh", ew::unary),
    op("ThresholdedRelu", 10, "x · (x > alpha)", ew::composed),
    op("Tile", 6, "concat per repeated axis", mv::tile),
    op("Transpose", 1, "permute", mv::transpose),
    op("Trilu", 14, "triu, tril (k known at import)", mv::trilu),
    op("Unsqueeze", 1, "reshape (folded on known tensors)", sh::unsqueeze),
    op("Where", 9, "where", ew::where_),
    op("Xor", 7, "ne on 0/1", ew::logic),
];

/// The entry for op `op` of domain `domain` at `opset`, if supported.
pub fn lookup(op: &str, domain: &str, opset: i64) -> Option<&'static OnnxOp> {
    if !(domain.is_empty() || domain == "ai.onnx") || opset > MAX_OPSET {
        return None;
    }
    OPS.iter().find(|o| o.name == op && opset >= o.since)
}

/// The table of supported ops in Markdown (for `docs/onnx.md` and `uop ops --onnx`).
pub fn markdown_table() -> String {
    let mut s = String::from("| ONNX op | opsets | in uop |\n|---|---|---|\n");
    for o in OPS {
        s.push_str(&format!(
            "| {} | {}–{MAX_OPSET} | {} |\n",
            o.name, o.since, o.uop
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_has_no_duplicates() {
        for w in OPS.windows(2) {
            assert!(
                w[0].name.to_lowercase() < w[1].name.to_lowercase(),
                "{} before {}",
                w[0].name,
                w[1].name
            );
        }
    }

    #[test]
    fn lookup_respects_the_domain_and_the_opset() {
        assert!(lookup("Relu", "", 13).is_some());
        assert!(lookup("Relu", "ai.onnx", 13).is_some());
        assert!(lookup("Relu", "com.microsoft", 13).is_none());
        assert!(
            lookup("Gelu", "", 19).is_none(),
            "Gelu exists from opset 20"
        );
        assert!(lookup("NoSuchOp", "", 13).is_none());
    }
}
