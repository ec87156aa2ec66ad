//! Element-wise macro ops: numpy broadcasting for the binary micro ops, `where` and
//! the comparisons, and the activations PyTorch users expect (`relu`, `gelu`,
//! `silu`, `clip`, ...), each a few micro ops.
//!
//! Broadcasting follows numpy: shapes align at the last axis and size-1 axes repeat.
//! When the operands already have identical shapes (or one side is a scalar or a
//! `$param`) the plain micro op is built and nothing else, so a printed program
//! parses back unchanged. Unary functions that are micro ops already (`exp`, `tanh`,
//! `erf`, ...) are not re-registered: they need no broadcasting.

use uop_codegen::index::Expr;
use uop_codegen::text::{Args, Attrs, MacroError, MacroFn, Registry};
use uop_codegen::uop::{BinaryOp, Builder, NodeId, Operand, UnaryOp};

use crate::error::{Context, OpError};
use crate::names::named;
use crate::shape::broadcast_error;

/// Brings tensor operands to their common numpy broadcast shape
/// ([`Builder::broadcast_operands`]); scalars and `$params` pass through (the micro
/// ops broadcast those themselves).
pub fn broadcast_operands(
    b: &mut Builder,
    op: &'static str,
    operands: &[Operand],
) -> Result<Vec<Operand>, OpError> {
    b.broadcast_operands(op, operands)
        .map_err(|e| broadcast_error(op, e))
}

/// Repeats `x` along its size-1 axes (and new leading axes) to `shape`, which must be
/// a broadcast of `x`'s shape as computed by [`crate::shape::broadcast_shapes`]
/// ([`Builder::broadcast_to`]).
///
/// Unlike [`crate::shape::expand_to`] this accepts a symbolic size that differs from
/// the target's: `broadcast_shapes` has recorded a run-time assertion that the two are
/// equal, so the axis is read as it is.
pub fn broadcast_to(
    b: &mut Builder,
    op: &'static str,
    x: NodeId,
    shape: &[Expr],
) -> Result<NodeId, OpError> {
    b.broadcast_to(op, x, shape)
        .map_err(|e| broadcast_error(op, e))
}

/// `op(x, y)` with numpy broadcasting; exactly the micro op when shapes are equal or
/// one side is a scalar. Comparisons give 1.0 or 0.0.
pub fn binary(
    b: &mut Builder,
    op: BinaryOp,
    x: impl Into<Operand>,
    y: impl Into<Operand>,
) -> Result<NodeId, OpError> {
    let name = op.name();
    let operands = broadcast_operands(b, name, &[x.into(), y.into()])?;
    let [x, y] = <[Operand; 2]>::try_from(operands).expect("two operands in, two out");
    b.binary(op, x, y).op(name)
}

/// Defines one documented function per binary op, each a call of [`binary`].
macro_rules! binary_fns {
    ($($(#[$doc:meta])* $fn_name:ident => $op:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $fn_name(
                b: &mut Builder,
                x: impl Into<Operand>,
                y: impl Into<Operand>,
            ) -> Result<NodeId, OpError> {
                binary(b, BinaryOp::$op, x, y)
            }
        )*
    };
}

binary_fns! {
    /// `x + y`, broadcasting.
    add => Add;
    /// `x - y`, broadcasting.
    sub => Sub;
    /// `x * y`, broadcasting.
    mul => Mul;
    /// `x / y`, broadcasting.
    div => Div;
    /// `x ^ y`, broadcasting.
    pow => Pow;
    /// The larger of `x` and `y` (NaN if either is), broadcasting.
    maximum => Maximum;
    /// The smaller of `x` and `y` (NaN if either is), broadcasting.
    minimum => Minimum;
    /// `x == y` as 1.0 / 0.0, broadcasting.
    eq => Eq;
    /// `x != y` as 1.0 / 0.0, broadcasting.
    ne => Ne;
    /// `x < y` as 1.0 / 0.0, broadcasting.
    lt => Lt;
    /// `x <= y` as 1.0 / 0.0, broadcasting.
    le => Le;
    /// `x > y` as 1.0 / 0.0, broadcasting.
    gt => Gt;
    /// `x >= y` as 1.0 / 0.0, broadcasting.
    ge => Ge;
}

/// `c != 0 ? x : y` element-wise, all three broadcast together; exactly the `where`
/// micro op when the tensor operands already share a shape.
pub fn where_(
    b: &mut Builder,
    c: impl Into<Operand>,
    x: impl Into<Operand>,
    y: impl Into<Operand>,
) -> Result<NodeId, OpError> {
    let operands = broadcast_operands(b, "where", &[c.into(), x.into(), y.into()])?;
    let [c, x, y] = <[Operand; 3]>::try_from(operands).expect("three operands in, three out");
    b.where_(c, x, y).op("where")
}

/// `1 / x` (the `recip` micro op under PyTorch's name).
pub fn reciprocal(b: &mut Builder, x: NodeId) -> Result<NodeId, OpError> {
    b.unary(UnaryOp::Recip, x).op("reciprocal")
}

/// `max(x, 0)`; NaN stays NaN as in PyTorch.
pub fn relu(b: &mut Builder, x: NodeId) -> Result<NodeId, OpError> {
    b.binary(BinaryOp::Maximum, x, 0.0).op("relu")
}

/// PyTorch's default `negative_slope` of `leaky_relu`.
pub const LEAKY_RELU_ALPHA: f64 = 0.01;

/// `x` where `x > 0`, else `alpha * x` (PyTorch's `negative_slope`, default
/// [`LEAKY_RELU_ALPHA`]). `alpha` must be finite.
pub fn leaky_relu(b: &mut Builder, x: NodeId, alpha: f64) -> Result<NodeId, OpError> {
    let op = "leaky_relu";
    if !alpha.is_finite() {
        return Err(OpError::attr(op, "alpha", alpha, "must be a finite number"));
    }
    let positive = b.binary(BinaryOp::Gt, x, 0.0).op(op)?;
    let positive = named(b, op, positive, "positive")?;
    let scaled = b.binary(BinaryOp::Mul, x, alpha).op(op)?;
    let scaled = named(b, op, scaled, "scaled")?;
    b.where_(positive, x, scaled).op(op)
}

/// Which form of GELU to compute (PyTorch's `approximate` argument).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GeluApproximate {
    /// The exact form `0.5 x (1 + erf(x / sqrt 2))` (`approximate="none"`, the default).
    #[default]
    None,
    /// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (`approximate="tanh"`).
    Tanh,
}

impl GeluApproximate {
    /// Parses PyTorch's spelling, `"none"` or `"tanh"`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(GeluApproximate::None),
            "tanh" => Some(GeluApproximate::Tanh),
            _ => None,
        }
    }
}

/// The Gaussian error linear unit, exact or with PyTorch's tanh approximation.
///
/// The tanh form is computed as `x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))`: the
/// same function (`0.5 (1 + tanh z) = sigmoid(2z)`), with one transcendental that is
/// cheaper than `tanh` and without the cancellation of `1 + tanh z` for negative `x`.
pub fn gelu(b: &mut Builder, x: NodeId, approximate: GeluApproximate) -> Result<NodeId, OpError> {
    let op = "gelu";
    match approximate {
        GeluApproximate::None => {
            // 0.5 x (1 + erf(x / sqrt 2)).
            let scaled = b
                .binary(BinaryOp::Mul, x, std::f64::consts::FRAC_1_SQRT_2)
                .op(op)?;
            let scaled = named(b, op, scaled, "scaled")?;
            let s = b.unary(UnaryOp::Erf, scaled).op(op)?;
            let s = named(b, op, s, "erfs")?;
            let one_plus = b.binary(BinaryOp::Add, s, 1.0).op(op)?;
            let one_plus = named(b, op, one_plus, "one_plus")?;
            let half = b.binary(BinaryOp::Mul, x, 0.5).op(op)?;
            let half = named(b, op, half, "half")?;
            b.binary(BinaryOp::Mul, half, one_plus).op(op)
        }
        GeluApproximate::Tanh => {
            // x + 0.044715 x^3 as x (1 + 0.044715 x^2): one multiply fewer.
            let square = b.binary(BinaryOp::Mul, x, x).op(op)?;
            let square = named(b, op, square, "square")?;
            let cubic = b.binary(BinaryOp::Mul, square, 0.044715).op(op)?;
            let cubic = named(b, op, cubic, "cubic")?;
            let factor = b.binary(BinaryOp::Add, cubic, 1.0).op(op)?;
            let factor = named(b, op, factor, "factor")?;
            let inner = b.binary(BinaryOp::Mul, x, factor).op(op)?;
            let inner = named(b, op, inner, "inner")?;
            let two_sqrt_2_over_pi = 2.0 * (2.0 / std::f64::consts::PI).sqrt();
            let scaled = b.binary(BinaryOp::Mul, inner, two_sqrt_2_over_pi).op(op)?;
            let scaled = named(b, op, scaled, "scaled")?;
            let s = b.unary(UnaryOp::Sigmoid, scaled).op(op)?;
            let s = named(b, op, s, "sigmoids")?;
            b.binary(BinaryOp::Mul, x, s).op(op)
        }
    }
}

/// `x * sigmoid(x)` (also known as swish).
pub fn silu(b: &mut Builder, x: NodeId) -> Result<NodeId, OpError> {
    let s = b.unary(UnaryOp::Sigmoid, x).op("silu")?;
    let s = named(b, "silu", s, "sigmoids")?;
    b.binary(BinaryOp::Mul, x, s).op("silu")
}

/// Clamps `x` to `[min, max]`; either bound may be omitted, not both. As in PyTorch's
/// `clamp`, a `min` above `max` gives `max` everywhere. Tensor bounds broadcast against
/// `x` (the result has the broadcast shape).
///
/// Each bound is `where(x >= lo, x, maximum(x, lo))` (and `<=`, `minimum` for the
/// upper one): the values of `maximum(x, lo)`, NaN of either side included, with
/// torch's gradient at a bound — `x` gets it where `lo <= x <= hi`, a tensor bound
/// where `x` is strictly past it.
pub fn clip(
    b: &mut Builder,
    x: NodeId,
    min: Option<Operand>,
    max: Option<Operand>,
) -> Result<NodeId, OpError> {
    let op = "clip";
    if min.is_none() && max.is_none() {
        return Err(OpError::attr(
            op,
            "min",
            "none",
            "give `min`, `max` or both (at least one bound is required)",
        ));
    }
    let mut y = x;
    if let Some(lo) = min {
        y = bound(b, y, lo, BinaryOp::Ge, BinaryOp::Maximum)?;
    }
    if let Some(hi) = max {
        y = bound(b, y, hi, BinaryOp::Le, BinaryOp::Minimum)?;
    }
    Ok(y)
}

/// `where(inside(x, bound), x, extreme(x, bound))`: one side of [`clip`].
fn bound(
    b: &mut Builder,
    x: NodeId,
    bound: Operand,
    inside: BinaryOp,
    extreme: BinaryOp,
) -> Result<NodeId, OpError> {
    let op = "clip";
    let [a, limit] = pair(b, op, x, bound)?;
    let within = b.binary(inside, a.clone(), limit.clone()).op(op)?;
    let clamped = b.binary(extreme, a.clone(), limit).op(op)?;
    b.where_(within, a, clamped).op(op)
}

/// Broadcasts a tensor and an operand together.
fn pair(b: &mut Builder, op: &'static str, x: NodeId, y: Operand) -> Result<[Operand; 2], OpError> {
    let operands = broadcast_operands(b, op, &[Operand::Node(x), y])?;
    Ok(<[Operand; 2]>::try_from(operands).expect("two operands in, two out"))
}

// ---------------------------------------------------------------------------
// The `.uop` text adapters.

/// Defines the text adapter of each broadcasting binary op.
macro_rules! binary_adapters {
    ($($fn_name:ident => $op:ident;)*) => {
        $(
            fn $fn_name(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
                let (x, y) = (args.operand(0)?, args.operand(1)?);
                binary(b, BinaryOp::$op, x, y).map_err(|e| e.into_macro_error(attrs))
            }
        )*
    };
}

binary_adapters! {
    add_text => Add;
    sub_text => Sub;
    mul_text => Mul;
    div_text => Div;
    pow_text => Pow;
    maximum_text => Maximum;
    minimum_text => Minimum;
    eq_text => Eq;
    ne_text => Ne;
    lt_text => Lt;
    le_text => Le;
    gt_text => Gt;
    ge_text => Ge;
}

fn where_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let (c, x, y) = (args.operand(0)?, args.operand(1)?, args.operand(2)?);
    where_(b, c, x, y).map_err(|e| e.into_macro_error(attrs))
}

fn reciprocal_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    reciprocal(b, args.node(0)?).map_err(|e| e.into_macro_error(attrs))
}

fn relu_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    relu(b, args.node(0)?).map_err(|e| e.into_macro_error(attrs))
}

fn leaky_relu_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let x = args.node(0)?;
    let alpha = attrs.float_or("alpha", LEAKY_RELU_ALPHA)?;
    leaky_relu(b, x, alpha).map_err(|e| e.into_macro_error(attrs))
}

fn gelu_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let x = args.node(0)?;
    let name = attrs.str_or("approximate", "none")?;
    let approximate = GeluApproximate::from_name(name).ok_or_else(|| {
        OpError::attr(
            "gelu",
            "approximate",
            format!("{name:?}"),
            "must be \"none\" or \"tanh\"",
        )
        .into_macro_error(attrs)
    })?;
    gelu(b, x, approximate).map_err(|e| e.into_macro_error(attrs))
}

fn silu_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    silu(b, args.node(0)?).map_err(|e| e.into_macro_error(attrs))
}

fn clip_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let x = args.node(0)?;
    let min = attrs.has("min").then(|| attrs.operand("min")).transpose()?;
    let max = attrs.has("max").then(|| attrs.operand("max")).transpose()?;
    clip(b, x, min, max).map_err(|e| e.into_macro_error(attrs))
}

/// Registers this module's ops by name.
pub(crate) fn register(r: &mut Registry) {
    let binaries: [(&str, MacroFn, &str); 13] = [
        ("add", add_text, "x + y with numpy broadcasting"),
        ("sub", sub_text, "x - y with numpy broadcasting"),
        ("mul", mul_text, "x * y with numpy broadcasting"),
        ("div", div_text, "x / y with numpy broadcasting"),
        ("pow", pow_text, "x ^ y with numpy broadcasting"),
        ("maximum", maximum_text, "larger of x and y, broadcasting"),
        ("minimum", minimum_text, "smaller of x and y, broadcasting"),
        ("eq", eq_text, "x == y as 1.0 / 0.0, broadcasting"),
        ("ne", ne_text, "x != y as 1.0 / 0.0, broadcasting"),
        ("lt", lt_text, "x < y as 1.0 / 0.0, broadcasting"),
        ("le", le_text, "x <= y as 1.0 / 0.0, broadcasting"),
        ("gt", gt_text, "x > y as 1.0 / 0.0, broadcasting"),
        ("ge", ge_text, "x >= y as 1.0 / 0.0, broadcasting"),
    ];
    for (name, f, doc) in binaries {
        r.register(name, &format!("{name}(x, y)"), doc, f);
    }
    r.register(
        "where",
        "where(c, x, y)",
        "c != 0 ? x : y with numpy broadcasting",
        where_text,
    );
    r.register("reciprocal", "reciprocal(x)", "1 / x", reciprocal_text);
    r.register("relu", "relu(x)", "max(x, 0)", relu_text);
    r.register(
        "leaky_relu",
        "leaky_relu(x, alpha=0.01)",
        "x where x > 0, else alpha * x",
        leaky_relu_text,
    );
    r.register(
        "gelu",
        "gelu(x, approximate=\"none\")",
        "Gaussian error linear unit; approximate=\"tanh\" for the tanh form",
        gelu_text,
    );
    r.register("silu", "silu(x)", "x * sigmoid(x)", silu_text);
    r.register(
        "clip",
        "clip(x, min=.., max=..)",
        "clamps x to [min, max]; either bound may be omitted",
        clip_text,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use uop_codegen::text::{check_round_trip, parse_program};
    use uop_codegen::uop::{DType, Uop};

    fn kinds(src: &str) -> Vec<&'static str> {
        let p = parse_program(src, &crate::registry()).expect("parses");
        p.nodes.iter().map(|n| n.op.kind()).collect()
    }

    #[test]
    fn equal_shapes_and_scalars_build_exactly_the_micro_op() {
        let same = "input x: f32[B, N]\ninput y: f32[B, N]\nz = add(x, y)\noutput z\n";
        assert_eq!(kinds(same), ["input", "input", "add"]);
        let scalar = "input x: f32[N]\nz = lt(2, x)\noutput z\n";
        assert_eq!(kinds(scalar), ["input", "lt"]);
        let select = "input c: f32[N]\ninput x: f32[N]\nz = where(c, x, 0)\noutput z\n";
        assert_eq!(kinds(select), ["input", "input", "where"]);
    }

    #[test]
    fn broadcasting_reindexes_only_the_operand_that_needs_it() {
        let src = "input x: f32[B, N]\ninput y: f32[N]\nz = sub(x, y)\noutput z\n";
        assert_eq!(kinds(src), ["input", "input", "reindex", "sub"]);
        let p = parse_program(src, &crate::registry()).expect("parses");
        let Uop::Reindex { index, .. } = &p.nodes[2].op else {
            panic!("expected a reindex");
        };
        assert_eq!(index, &[Expr::Index(1)], "y is read along the last axis");
        let outer = "input x: f32[4, 1]\ninput y: f32[1, 6]\nz = mul(x, y)\noutput z\n";
        assert_eq!(
            kinds(outer),
            ["input", "input", "reindex", "reindex", "mul"]
        );
    }

    #[test]
    fn built_programs_print_and_parse_back_unchanged() {
        let mut b = Builder::new(DType::F32);
        let x = b.input("x", DType::F32, &["B", "N"]).expect("input");
        let y = b.input("y", DType::F32, &["N"]).expect("input");
        let mut outs = vec![
            add(&mut b, x, y).expect("add"),
            where_(&mut b, y, x, 1.5).expect("where"),
            leaky_relu(&mut b, x, 0.2).expect("leaky_relu"),
            gelu(&mut b, x, GeluApproximate::Tanh).expect("gelu"),
            silu(&mut b, x).expect("silu"),
            clip(&mut b, x, Some(Operand::Node(y)), Some(Operand::Const(2.0))).expect("clip"),
        ];
        outs.push(relu(&mut b, outs[0]).expect("relu"));
        let program = b.combine(&[x, y], &outs).expect("combines");
        check_round_trip(&program).expect("round trip");
    }
}
