//! Macro ops: convolutions (`conv1d`, `conv2d`, `conv_transpose2d`), channels
//! first as in PyTorch (`x` is `[N, C, L]` / `[N, C, H, W]`, weights `OIL` /
//! `OIHW`), and the sliding-window helpers the pooling ops share.
//!
//! A convolution is one iteration space `[N, O, out..., C/groups, kernel...]`:
//! `x` is reindexed into it once (stride and dilation in the index expressions,
//! padding as reads out of range that give the fill 0, the group of an output
//! channel as `o / (O/groups)`), `w` once, then `mul`, `reduce_sum` over the
//! channel and kernel axes, a reindex dropping those axes, and the bias.
//!
//! ```
//! use uop_codegen::uop::{Builder, DType};
//! use uop_ops::conv::{ConvOptions, conv2d};
//! let mut b = Builder::new(DType::F32);
//! let x = b.input("x", DType::F32, &["N", "4", "H", "W"])?;
//! let w = b.input("w", DType::F32, &["6", "2", "3", "3"])?;
//! let options = ConvOptions { stride: vec![2], padding: vec![1], groups: 2, ..Default::default() };
//! let y = conv2d(&mut b, x, w, None, &options)?;
//! assert_eq!(uop_codegen::index::list(b.shape(y)), "[N, 6, (H + 1) / 2, (W + 1) / 2]");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use uop_codegen::index::{Expr, IndexOp, list};
use uop_codegen::text::{Args, Attrs, MacroError, Registry};
use uop_codegen::uop::{BinaryOp, Builder, NodeId, ReduceOp};

use crate::error::{Context, OpError};
use crate::linalg::{add_channel_bias, optional_bias, same_size};
use crate::names::named;
use crate::shape::drop_axes;

/// Registers this module's ops by name.
pub(crate) fn register(registry: &mut Registry) {
    registry.register(
        "conv1d",
        "conv1d(x, w, [b], stride=1, padding=0, dilation=1, groups=1)",
        "1-D convolution (cross-correlation), x [N, C, L], w [O, C/groups, K], b [O]",
        conv1d_text,
    );
    registry.register(
        "conv2d",
        "conv2d(x, w, [b], stride=1, padding=0, dilation=1, groups=1)",
        "2-D convolution (cross-correlation), x [N, C, H, W], w [O, C/groups, KH, KW], b [O]",
        conv2d_text,
    );
    registry.register(
        "conv_transpose2d",
        "conv_transpose2d(x, w, [b], stride=1, padding=0, output_padding=0, dilation=1, groups=1)",
        "2-D transposed convolution, x [N, C, H, W], w [C, O/groups, KH, KW], b [O]",
        conv_transpose2d_text,
    );
}

/// Attributes of [`conv1d`] and [`conv2d`], PyTorch's defaults.
///
/// `stride`, `padding` and `dilation` hold one value for every spatial axis or
/// a single value shared by all of them (PyTorch's int-or-tuple).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvOptions {
    /// Step between windows, each at least 1.
    pub stride: Vec<i64>,
    /// Zeros added on both sides of each spatial axis, each at least 0.
    pub padding: Vec<i64>,
    /// Step between kernel taps, each at least 1.
    pub dilation: Vec<i64>,
    /// Channel groups; must divide the input and output channels.
    pub groups: i64,
}

impl Default for ConvOptions {
    fn default() -> Self {
        ConvOptions {
            stride: vec![1],
            padding: vec![0],
            dilation: vec![1],
            groups: 1,
        }
    }
}

/// Attributes of [`conv_transpose2d`], PyTorch's defaults (see [`ConvOptions`]
/// for the per-axis lists).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvTransposeOptions {
    /// Stride of the forward convolution this op transposes, each at least 1.
    pub stride: Vec<i64>,
    /// Padding of the forward convolution: removed from both sides of the output.
    pub padding: Vec<i64>,
    /// Extra size added on one side of the output; smaller than the stride or the dilation.
    pub output_padding: Vec<i64>,
    /// Step between kernel taps, each at least 1.
    pub dilation: Vec<i64>,
    /// Channel groups; must divide the input channels.
    pub groups: i64,
}

impl Default for ConvTransposeOptions {
    fn default() -> Self {
        ConvTransposeOptions {
            stride: vec![1],
            padding: vec![0],
            output_padding: vec![0],
            dilation: vec![1],
            groups: 1,
        }
    }
}

/// 1-D convolution as PyTorch's `conv1d`: `x` `[N, C, L]`, `w` `[O, C/groups, K]`,
/// optional `bias` `[O]`; the result is `[N, O, (L + 2p - d(K-1) - 1)/s + 1]`.
pub fn conv1d(
    b: &mut Builder,
    x: NodeId,
    w: NodeId,
    bias: Option<NodeId>,
    options: &ConvOptions,
) -> Result<NodeId, OpError> {
    conv_nd(b, "conv1d", 1, x, w, bias, options)
}

/// 2-D convolution as PyTorch's `conv2d` (a cross-correlation, the kernel is not
/// flipped): `x` `[N, C, H, W]`, `w` `[O, C/groups, KH, KW]`, optional `bias`
/// `[O]`; the result is `[N, O, OH, OW]` with `OH = (H + 2p - d(KH-1) - 1)/s + 1`.
///
/// Checks made when the op is built: ranks; stride and dilation positive, padding
/// non-negative, groups positive and dividing the literal channel counts;
/// `C == w.shape[1] * groups` and a kernel no larger than the padded input when
/// the sizes are literal. With symbolic sizes the same conditions become size
/// assertions checked when the program runs.
pub fn conv2d(
    b: &mut Builder,
    x: NodeId,
    w: NodeId,
    bias: Option<NodeId>,
    options: &ConvOptions,
) -> Result<NodeId, OpError> {
    conv_nd(b, "conv2d", 2, x, w, bias, options)
}

/// Convolution over `k` spatial axes; see [`conv2d`].
fn conv_nd(
    b: &mut Builder,
    op: &'static str,
    k: usize,
    x: NodeId,
    w: NodeId,
    bias: Option<NodeId>,
    options: &ConvOptions,
) -> Result<NodeId, OpError> {
    let (sx, sw) = (b.shape(x).to_vec(), b.shape(w).to_vec());
    expect_rank(op, "x", &sx, k + 2, "[N, C, spatial...]")?;
    expect_rank(op, "w", &sw, k + 2, "[O, C/groups, kernel...]")?;
    let stride = per_axis(op, "stride", &options.stride, k, 1)?;
    let padding = per_axis(op, "padding", &options.padding, k, 0)?;
    let dilation = per_axis(op, "dilation", &options.dilation, k, 1)?;
    let groups = options.groups;
    let (channels, out_channels, group_channels) = (&sx[1], &sw[0], &sw[1]);
    // A symbolic channel count needs no divisibility assertion of its own: the
    // in-channel check below asserts `C == C/groups * groups`.
    check_groups(b, op, groups, channels, "input channels of x", false)?;
    check_groups(
        b,
        op,
        groups,
        out_channels,
        "output channels (w's axis 0)",
        true,
    )?;
    same_size(
        b,
        op,
        channels,
        &(group_channels.clone() * Expr::Int(groups)),
        || {
            format!(
                "in-channels differ: x {} has {channels} channels, w {} takes {group_channels} \
                 per group and groups={groups}",
                list(&sx),
                list(&sw)
            )
        },
    )?;

    // The iteration space [N, O, out..., C/groups, kernel...].
    let c_axis = 2 + k;
    let mut space = vec![sx[0].clone(), out_channels.clone()];
    let windows: Vec<Window> = (0..k)
        .map(|a| Window {
            stride: stride[a],
            padding: padding[a],
            dilation: dilation[a],
        })
        .collect();
    for (a, window) in windows.iter().enumerate() {
        space.push(window.output_size(b, op, a, &sx[2 + a], &sw[2 + a], None)?);
    }
    space.push(group_channels.clone());
    space.extend(sw[2..].iter().cloned());

    let channel = if groups == 1 {
        Expr::Index(c_axis)
    } else {
        let per_group = div(out_channels, groups);
        Expr::bin(IndexOp::Div, Expr::Index(1), per_group) * group_channels.clone()
            + Expr::Index(c_axis)
    };
    let mut ix = vec![Expr::Index(0), channel];
    ix.extend((0..k).map(|a| windows[a].input_index(2 + a, c_axis + 1 + a)));
    let mut iw = vec![Expr::Index(1), Expr::Index(c_axis)];
    iw.extend((0..k).map(|a| Expr::Index(c_axis + 1 + a)));
    contract(b, op, x, w, space, ix, iw, c_axis, bias)
}

/// Transposed 2-D convolution as PyTorch's `conv_transpose2d` (the gradient of
/// [`conv2d`] with respect to its input): `x` `[N, C, H, W]`, `w`
/// `[C, O/groups, KH, KW]`, optional `bias` `[O]`; the result is `[N, O, OH, OW]`
/// with `OH = (H-1)*s - 2p + d(KH-1) + output_padding + 1`.
///
/// Written as a gather rather than a scatter, so that it has the same shape as
/// [`conv2d`]: one reindex of `x` into `[N, O, OH, OW, C/groups, KH, KW]`, one of
/// `w`, `mul` and `reduce_sum`. Output row `oh` receives input row `ih` through
/// kernel tap `kh` when `oh + p - kh*d == ih*s`; the index expression reads
/// `ih = t / s` for `t = oh + p - kh*d` when `t % s == 0`, and otherwise the
/// row `-1`, which is out of range and reads the fill 0:
/// `t / s - min(t % s, 1) * (t / s + 1)`.
///
/// `output_padding` must be smaller than the stride or the dilation (PyTorch's
/// rule; with dilation 1 that is: smaller than the stride).
pub fn conv_transpose2d(
    b: &mut Builder,
    x: NodeId,
    w: NodeId,
    bias: Option<NodeId>,
    options: &ConvTransposeOptions,
) -> Result<NodeId, OpError> {
    const OP: &str = "conv_transpose2d";
    const K: usize = 2;
    let (sx, sw) = (b.shape(x).to_vec(), b.shape(w).to_vec());
    expect_rank(OP, "x", &sx, K + 2, "[N, C, H, W]")?;
    expect_rank(OP, "w", &sw, K + 2, "[C, O/groups, KH, KW]")?;
    let stride = per_axis(OP, "stride", &options.stride, K, 1)?;
    let padding = per_axis(OP, "padding", &options.padding, K, 0)?;
    let output_padding = per_axis(OP, "output_padding", &options.output_padding, K, 0)?;
    let dilation = per_axis(OP, "dilation", &options.dilation, K, 1)?;
    for a in 0..K {
        if output_padding[a] >= stride[a] && output_padding[a] >= dilation[a] {
            return Err(OpError::attr(
                OP,
                "output_padding",
                output_padding[a],
                format!(
                    "must be smaller than either the stride ({}) or the dilation ({}) of axis {a}",
                    stride[a], dilation[a]
                ),
            ));
        }
    }
    let groups = options.groups;
    let (channels, out_per_group) = (&sx[1], &sw[1]);
    check_groups(b, OP, groups, channels, "input channels of x", true)?;
    same_size(b, OP, channels, &sw[0], || {
        format!(
            "in-channels differ: x {} has {channels} channels, w {} has {} (w is [C, O/groups, KH, KW])",
            list(&sx),
            list(&sw),
            sw[0]
        )
    })?;
    let group_channels = div(channels, groups);

    let c_axis = 2 + K;
    let mut space = vec![
        sx[0].clone(),
        (out_per_group.clone() * Expr::Int(groups)).simplify(),
    ];
    for a in 0..K {
        space.push(transposed_size(
            b,
            OP,
            a,
            &sx[2 + a],
            &sw[2 + a],
            stride[a],
            padding[a],
            output_padding[a],
            dilation[a],
        )?);
    }
    space.push(group_channels.clone());
    space.extend(sw[2..].iter().cloned());

    let (channel, out_channel) = if groups == 1 {
        (Expr::Index(c_axis), Expr::Index(1))
    } else {
        (
            Expr::bin(IndexOp::Div, Expr::Index(1), out_per_group.clone()) * group_channels
                + Expr::Index(c_axis),
            Expr::bin(IndexOp::Mod, Expr::Index(1), out_per_group.clone()),
        )
    };
    let mut ix = vec![Expr::Index(0), channel.clone()];
    for a in 0..K {
        let t = Expr::Index(2 + a) + Expr::Int(padding[a])
            - Expr::Index(c_axis + 1 + a) * Expr::Int(dilation[a]);
        ix.push(if stride[a] == 1 {
            t
        } else {
            let s = Expr::Int(stride[a]);
            let q = Expr::bin(IndexOp::Div, t.clone(), s.clone());
            let off_grid = Expr::bin(IndexOp::Min, Expr::bin(IndexOp::Mod, t, s), Expr::Int(1));
            q.clone() - off_grid * (q + Expr::Int(1))
        });
    }
    let mut iw = vec![channel, out_channel];
    iw.extend((0..K).map(|a| Expr::Index(c_axis + 1 + a)));
    contract(b, OP, x, w, space, ix, iw, c_axis, bias)
}

/// The common tail of the convolutions: reindex `x` and `w` into `space`,
/// multiply, sum the channel and kernel axes (from `c_axis` on), drop them and
/// add the bias along the output channels (axis 1).
#[allow(clippy::too_many_arguments)]
fn contract(
    b: &mut Builder,
    op: &'static str,
    x: NodeId,
    w: NodeId,
    space: Vec<Expr>,
    ix: Vec<Expr>,
    iw: Vec<Expr>,
    c_axis: usize,
    bias: Option<NodeId>,
) -> Result<NodeId, OpError> {
    let axes: Vec<usize> = (c_axis..space.len()).collect();
    let xx = b.reindex_exprs(x, space.clone(), &[], ix, 0.0).op(op)?;
    let xx = named(b, op, xx, "windows")?;
    let ww = b.reindex_exprs(w, space, &[], iw, 0.0).op(op)?;
    let ww = named(b, op, ww, "weights")?;
    let prod = b.binary(BinaryOp::Mul, xx, ww).op(op)?;
    let prod = named(b, op, prod, "products")?;
    let sum = b.reduce(ReduceOp::Sum, &axes, prod).op(op)?;
    let sum = named(b, op, sum, "sum")?;
    let y = drop_axes(b, op, sum, &axes)?;
    add_channel_bias(b, op, y, bias, 1)
}

/// One spatial axis of a sliding window (a convolution or a pooling).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    /// Step between windows.
    pub stride: i64,
    /// Positions added on both sides (read as the fill).
    pub padding: i64,
    /// Step between the taps of a window.
    pub dilation: i64,
}

impl Window {
    /// The number of windows along spatial axis `axis` of size `size` with a
    /// kernel of `kernel` taps: `(size + 2p - d(kernel-1) - 1) / s + 1`.
    ///
    /// A kernel reaching past the padded input is an error when both sizes are
    /// literal — naming `kernel_attr` when the kernel is an attribute (pooling),
    /// the weight's shape otherwise. When either is symbolic the condition
    /// becomes the size assertion `min(size + 2p - extent, 0) == 0`, since floor
    /// division would otherwise turn a slightly too large kernel into an empty
    /// output instead of an error.
    pub fn output_size(
        self,
        b: &mut Builder,
        op: &'static str,
        axis: usize,
        size: &Expr,
        kernel: &Expr,
        kernel_attr: Option<&'static str>,
    ) -> Result<Expr, OpError> {
        // Literal sizes in checked 64-bit arithmetic: one that overflows is an
        // error saying so, never a wrapped size.
        let overflows = |what: String| {
            OpError::operand(
                op,
                format!("along spatial axis {axis}, {what} overflows 64-bit sizes"),
            )
        };
        let two_p = self.padding.checked_mul(2).ok_or_else(|| {
            overflows(format!("the padding on both sides (2 × {})", self.padding))
        })?;
        if let Some(n) = size.as_int()
            && n.checked_add(two_p).is_none()
        {
            return Err(overflows(format!(
                "the padded input (size {n} + 2 × padding {})",
                self.padding
            )));
        }
        if let Some(k) = kernel.as_int()
            && k.checked_sub(1)
                .and_then(|k1| k1.checked_mul(self.dilation))
                .and_then(|e| e.checked_add(1))
                .is_none()
        {
            return Err(overflows(format!(
                "the kernel's span (size {k}, dilation {})",
                self.dilation
            )));
        }
        let extent = Expr::Int(self.dilation) * (kernel.clone() - Expr::Int(1)) + Expr::Int(1);
        let room = (size.clone() + Expr::Int(two_p) - extent.clone()).simplify();
        match room.as_int() {
            Some(r) if r < 0 => {
                let padded = (size.clone() + Expr::Int(two_p)).simplify();
                let message = format!(
                    "the kernel spans {} (size {kernel}, dilation {}) along spatial axis {axis}, \
                     more than the padded input {padded} (size {size}, padding {} on each side)",
                    extent.simplify(),
                    self.dilation,
                    self.padding
                );
                return Err(match kernel_attr {
                    Some(attr) => OpError::attr(op, attr, kernel, message),
                    None => OpError::operand(op, message),
                });
            }
            Some(_) => {}
            None => {
                let clamped = Expr::bin(IndexOp::Min, room.clone(), Expr::Int(0));
                b.assert_equal(clamped, Expr::Int(0)).op(op)?;
            }
        }
        Ok((div(&room, self.stride) + Expr::Int(1)).simplify())
    }

    /// The input position read by output position `out` and kernel tap `tap`
    /// (loop indices): `out*s + tap*d - p`, out of range inside the padding.
    pub fn input_index(self, out: usize, tap: usize) -> Expr {
        Expr::Index(out) * Expr::Int(self.stride) + Expr::Index(tap) * Expr::Int(self.dilation)
            - Expr::Int(self.padding)
    }
}

/// The output size of a transposed convolution along one axis,
/// `(size-1)*s - 2p + d(kernel-1) + output_padding + 1`: an error naming
/// `padding` when literal and below 1, a size assertion (`min(size - 1, 0) == 0`)
/// when symbolic.
#[allow(clippy::too_many_arguments)]
fn transposed_size(
    b: &mut Builder,
    op: &'static str,
    axis: usize,
    size: &Expr,
    kernel: &Expr,
    stride: i64,
    padding: i64,
    output_padding: i64,
    dilation: i64,
) -> Result<Expr, OpError> {
    // Literal sizes in checked 64-bit arithmetic: one that overflows is an error
    // saying so, never a wrapped size.
    let literal = |e: &Expr| e.as_int();
    let checked = match (literal(size), literal(kernel)) {
        (Some(n), Some(k)) => n
            .checked_sub(1)
            .and_then(|a| a.checked_mul(stride))
            .and_then(|a| a.checked_sub(padding.checked_mul(2)?))
            .and_then(|a| a.checked_add(dilation.checked_mul(k.checked_sub(1)?)?))
            .and_then(|a| a.checked_add(output_padding.checked_add(1)?))
            .map(|_| ()),
        _ => padding
            .checked_mul(2)
            .and(output_padding.checked_add(1))
            .map(|_| ()),
    };
    if checked.is_none() {
        return Err(OpError::operand(
            op,
            format!(
                "along spatial axis {axis}, the output size (input {size}, kernel {kernel}, \
                 stride {stride}, padding {padding}, output padding {output_padding}, \
                 dilation {dilation}) overflows 64-bit sizes"
            ),
        ));
    }
    let out = ((size.clone() - Expr::Int(1)) * Expr::Int(stride) - Expr::Int(2 * padding)
        + Expr::Int(dilation) * (kernel.clone() - Expr::Int(1))
        + Expr::Int(output_padding + 1))
    .simplify();
    match out.as_int() {
        Some(n) if n < 1 => Err(OpError::attr(
            op,
            "padding",
            padding,
            format!(
                "leaves an output of size {n} along spatial axis {axis} \
                 (input {size}, kernel {kernel}, stride {stride}, dilation {dilation})"
            ),
        )),
        Some(_) => Ok(out),
        None => {
            let clamped = Expr::bin(IndexOp::Min, out.clone() - Expr::Int(1), Expr::Int(0));
            b.assert_equal(clamped, Expr::Int(0)).op(op)?;
            Ok(out)
        }
    }
}

/// `e / k` (floor), folded when `e` is a literal.
fn div(e: &Expr, k: i64) -> Expr {
    match e.simplify().as_int() {
        Some(v) => Expr::Int(v.div_euclid(k)),
        None if k == 1 => e.clone(),
        None => Expr::bin(IndexOp::Div, e.clone(), Expr::Int(k)),
    }
}

/// `groups` must be positive and divide `channels`: an error when `channels`
/// is literal; when symbolic, a size assertion (`channels % groups == 0`) if
/// `assert_symbolic`.
fn check_groups(
    b: &mut Builder,
    op: &'static str,
    groups: i64,
    channels: &Expr,
    what: &str,
    assert_symbolic: bool,
) -> Result<(), OpError> {
    if groups < 1 {
        return Err(OpError::attr(op, "groups", groups, "must be positive"));
    }
    match channels.as_int() {
        Some(c) if c % groups != 0 => Err(OpError::attr(
            op,
            "groups",
            groups,
            format!("does not divide the {c} {what}"),
        )),
        Some(_) => Ok(()),
        None if groups == 1 || !assert_symbolic => Ok(()),
        None => b
            .assert_equal(
                Expr::bin(IndexOp::Mod, channels.clone(), Expr::Int(groups)),
                Expr::Int(0),
            )
            .op(op),
    }
}

/// Expands an int-or-list attribute to one value per spatial axis, each at
/// least `min` (1 for strides and dilations, 0 for paddings).
pub(crate) fn per_axis(
    op: &'static str,
    attr: &'static str,
    values: &[i64],
    axes: usize,
    min: i64,
) -> Result<Vec<i64>, OpError> {
    let expanded = match values.len() {
        1 => vec![values[0]; axes],
        n if n == axes => values.to_vec(),
        _ => {
            return Err(OpError::attr(
                op,
                attr,
                format!("{values:?}"),
                format!("expects one value or {axes} (one per spatial axis)"),
            ));
        }
    };
    if let Some(&bad) = expanded.iter().find(|&&v| v < min) {
        let rule = if min == 1 {
            "must be positive"
        } else {
            "must be non-negative"
        };
        return Err(OpError::attr(op, attr, bad, rule));
    }
    Ok(expanded)
}

/// Requires `shape` to have rank `rank`, naming the expected `layout`.
pub(crate) fn expect_rank(
    op: &'static str,
    what: &str,
    shape: &[Expr],
    rank: usize,
    layout: &str,
) -> Result<(), OpError> {
    if shape.len() == rank {
        Ok(())
    } else {
        Err(OpError::operand(
            op,
            format!(
                "{what} must have rank {rank} ({layout}), found shape {}",
                list(shape)
            ),
        ))
    }
}

/// Reads the convolution attributes shared by the text adapters.
fn conv_options(attrs: &Attrs) -> Result<ConvOptions, MacroError> {
    let d = ConvOptions::default();
    Ok(ConvOptions {
        stride: attrs.int_list_or("stride", d.stride)?,
        padding: attrs.int_list_or("padding", d.padding)?,
        dilation: attrs.int_list_or("dilation", d.dilation)?,
        groups: attrs.int_or("groups", d.groups)?,
    })
}

fn conv1d_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let (x, w) = (args.node(0)?, args.node(1)?);
    let bias = optional_bias(args, attrs, 2)?;
    let options = conv_options(attrs)?;
    conv1d(b, x, w, bias, &options).map_err(|e| e.into_macro_error(attrs))
}

fn conv2d_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let (x, w) = (args.node(0)?, args.node(1)?);
    let bias = optional_bias(args, attrs, 2)?;
    let options = conv_options(attrs)?;
    conv2d(b, x, w, bias, &options).map_err(|e| e.into_macro_error(attrs))
}

fn conv_transpose2d_text(
    b: &mut Builder,
    args: &Args,
    attrs: &Attrs,
) -> Result<NodeId, MacroError> {
    let (x, w) = (args.node(0)?, args.node(1)?);
    let bias = optional_bias(args, attrs, 2)?;
    let d = ConvTransposeOptions::default();
    let options = ConvTransposeOptions {
        stride: attrs.int_list_or("stride", d.stride)?,
        padding: attrs.int_list_or("padding", d.padding)?,
        output_padding: attrs.int_list_or("output_padding", d.output_padding)?,
        dilation: attrs.int_list_or("dilation", d.dilation)?,
        groups: attrs.int_or("groups", d.groups)?,
    };
    conv_transpose2d(b, x, w, bias, &options).map_err(|e| e.into_macro_error(attrs))
}
