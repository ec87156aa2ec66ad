//! Macro ops: 2-D pooling (`max_pool2d`, `avg_pool2d`) over the last two axes
//! of `[N, C, H, W]` or `[C, H, W]`, as in PyTorch.
//!
//! Each is one reindex laying every window out on axes of its own,
//! `[lead..., OH, OW, KH, KW]` (stride, dilation and padding in the index
//! expressions; padding reads the fill: `-inf` for max, 0 for average), a
//! reduction over the window axes and a reindex dropping them.
//!
//! PyTorch's defaults and rules: the stride defaults to the kernel, padding may
//! be at most half the kernel (so every window holds an input element), and
//! `ceil_mode` is not supported (sizes round down).

use uop_codegen::index::Expr;
use uop_codegen::text::{Args, Attrs, MacroError, Registry};
use uop_codegen::uop::{BinaryOp, Builder, NodeId, ReduceOp};

use crate::conv::{Window, per_axis};
use crate::error::{Context, OpError};
use crate::shape::drop_axes;

/// Registers this module's ops by name.
pub(crate) fn register(registry: &mut Registry) {
    registry.register(
        "max_pool2d",
        "max_pool2d(x, kernel, stride=kernel, padding=0, dilation=1)",
        "2-D max pooling over the last two axes of [N, C, H, W] or [C, H, W]; padding is -inf",
        max_pool2d_text,
    );
    registry.register(
        "avg_pool2d",
        "avg_pool2d(x, kernel, stride=kernel, padding=0, count_include_pad=true)",
        "2-D average pooling over the last two axes of [N, C, H, W] or [C, H, W]",
        avg_pool2d_text,
    );
}

/// Attributes of [`max_pool2d`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaxPoolOptions {
    /// Window size, one value or one per spatial axis (`[KH, KW]`).
    pub kernel: Vec<i64>,
    /// Step between windows; `None` means the kernel size (PyTorch's default).
    pub stride: Option<Vec<i64>>,
    /// `-inf` added on both sides of each spatial axis, at most half the kernel.
    pub padding: Vec<i64>,
    /// Step between the taps of a window.
    pub dilation: Vec<i64>,
}

impl MaxPoolOptions {
    /// A `kernel` window with PyTorch's defaults: stride = kernel, no padding, dilation 1.
    pub fn new(kernel: impl Into<Vec<i64>>) -> Self {
        MaxPoolOptions {
            kernel: kernel.into(),
            stride: None,
            padding: vec![0],
            dilation: vec![1],
        }
    }
}

/// Attributes of [`avg_pool2d`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AvgPoolOptions {
    /// Window size, one value or one per spatial axis (`[KH, KW]`).
    pub kernel: Vec<i64>,
    /// Step between windows; `None` means the kernel size (PyTorch's default).
    pub stride: Option<Vec<i64>>,
    /// Zeros added on both sides of each spatial axis, at most half the kernel.
    pub padding: Vec<i64>,
    /// Whether padded positions count in a window's divisor (PyTorch's default: true).
    pub count_include_pad: bool,
}

impl AvgPoolOptions {
    /// A `kernel` window with PyTorch's defaults: stride = kernel, no padding,
    /// padded positions counted.
    pub fn new(kernel: impl Into<Vec<i64>>) -> Self {
        AvgPoolOptions {
            kernel: kernel.into(),
            stride: None,
            padding: vec![0],
            count_include_pad: true,
        }
    }
}

/// 2-D max pooling, PyTorch's `max_pool2d` without `ceil_mode`: each output is the
/// maximum of a `KH x KW` window (taps `dilation` apart, windows `stride` apart)
/// over the last two axes, with `-inf` in the padding.
pub fn max_pool2d(b: &mut Builder, x: NodeId, options: &MaxPoolOptions) -> Result<NodeId, OpError> {
    const OP: &str = "max_pool2d";
    let layout = Layout::new(
        b,
        OP,
        x,
        &options.kernel,
        options.stride.as_deref(),
        &options.padding,
        &options.dilation,
    )?;
    let windows = layout.gather(b, OP, x, f64::NEG_INFINITY)?;
    let max = b
        .reduce(ReduceOp::Max, &layout.window_axes(), windows)
        .op(OP)?;
    drop_axes(b, OP, max, &layout.window_axes())
}

/// 2-D average pooling, PyTorch's `avg_pool2d` without `ceil_mode` or
/// `divisor_override`: each output is the mean of a `KH x KW` window over the last
/// two axes, padding reading 0.
///
/// With `count_include_pad` (the default) every window divides by `KH * KW`
/// (a `reduce_mean`). Without it a window divides by the number of its
/// positions inside the input: that count is built from micro ops too, as the
/// same window reindex applied to a tensor of ones (`iota >= 0`) of the input's
/// spatial shape, summed.
pub fn avg_pool2d(b: &mut Builder, x: NodeId, options: &AvgPoolOptions) -> Result<NodeId, OpError> {
    const OP: &str = "avg_pool2d";
    let layout = Layout::new(
        b,
        OP,
        x,
        &options.kernel,
        options.stride.as_deref(),
        &options.padding,
        &[1],
    )?;
    let windows = layout.gather(b, OP, x, 0.0)?;
    let axes = layout.window_axes();
    if options.count_include_pad {
        let mean = b.reduce(ReduceOp::Mean, &axes, windows).op(OP)?;
        return drop_axes(b, OP, mean, &axes);
    }
    let sum = b.reduce(ReduceOp::Sum, &axes, windows).op(OP)?;
    let sum = drop_axes(b, OP, sum, &axes)?;

    // Ones over [H, W], laid out in windows over [OH, OW, KH, KW] and summed.
    let spatial = b.shape(x)[layout.lead..].to_vec();
    let index = b.iota_exprs(spatial, &[], 0).op(OP)?;
    let ones = b.binary(BinaryOp::Ge, index, 0.0).op(OP)?;
    let taps = Layout {
        lead: 0,
        ..layout.clone()
    };
    let ones = taps.gather(b, OP, ones, 0.0)?;
    let count = b.reduce(ReduceOp::Sum, &[2, 3], ones).op(OP)?;
    // One reindex both drops the window axes and repeats the count over `lead`.
    let out_shape = b.shape(sum).to_vec();
    let lead = layout.lead;
    let spread = b
        .reindex_exprs(
            count,
            out_shape,
            &[],
            vec![
                Expr::Index(lead),
                Expr::Index(lead + 1),
                Expr::Int(0),
                Expr::Int(0),
            ],
            0.0,
        )
        .op(OP)?;
    b.binary(BinaryOp::Div, sum, spread).op(OP)
}

/// The window layout of a pooling over the last two axes of `x`.
#[derive(Clone, Debug)]
struct Layout {
    /// Number of leading (batch and channel) axes.
    lead: usize,
    /// The output sizes `[OH, OW]`.
    out: Vec<Expr>,
    kernel: Vec<i64>,
    windows: Vec<Window>,
}

impl Layout {
    /// Checks the attributes against `x` and computes the output sizes.
    fn new(
        b: &mut Builder,
        op: &'static str,
        x: NodeId,
        kernel: &[i64],
        stride: Option<&[i64]>,
        padding: &[i64],
        dilation: &[i64],
    ) -> Result<Layout, OpError> {
        let shape = b.shape(x).to_vec();
        if !(3..=4).contains(&shape.len()) {
            return Err(OpError::operand(
                op,
                format!(
                    "x must have rank 4 ([N, C, H, W]) or 3 ([C, H, W]), found shape {}",
                    uop_codegen::index::list(&shape)
                ),
            ));
        }
        let kernel = per_axis(op, "kernel", kernel, 2, 1)?;
        let stride = per_axis(op, "stride", stride.unwrap_or(&kernel), 2, 1)?;
        let padding = per_axis(op, "padding", padding, 2, 0)?;
        let dilation = per_axis(op, "dilation", dilation, 2, 1)?;
        for (a, (&p, &k)) in padding.iter().zip(&kernel).enumerate() {
            if p > k / 2 {
                return Err(OpError::attr(
                    op,
                    "padding",
                    p,
                    format!("must be at most half the kernel size {k} of spatial axis {a}"),
                ));
            }
        }
        let lead = shape.len() - 2;
        let windows: Vec<Window> = (0..2)
            .map(|a| Window {
                stride: stride[a],
                padding: padding[a],
                dilation: dilation[a],
            })
            .collect();
        let out = (0..2)
            .map(|a| {
                windows[a].output_size(
                    b,
                    op,
                    a,
                    &shape[lead + a],
                    &Expr::Int(kernel[a]),
                    Some("kernel"),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Layout {
            lead,
            out,
            kernel,
            windows,
        })
    }

    /// The window axes of the gathered tensor.
    fn window_axes(&self) -> Vec<usize> {
        vec![self.lead + 2, self.lead + 3]
    }

    /// Reindexes `x` (`[lead..., H, W]`) into `[lead..., OH, OW, KH, KW]`; reads
    /// in the padding give `fill`.
    fn gather(
        &self,
        b: &mut Builder,
        op: &'static str,
        x: NodeId,
        fill: f64,
    ) -> Result<NodeId, OpError> {
        let lead = self.lead;
        let mut shape = b.shape(x)[..lead].to_vec();
        shape.extend(self.out.iter().cloned());
        shape.extend(self.kernel.iter().map(|&k| Expr::Int(k)));
        let mut index: Vec<Expr> = (0..lead).map(Expr::Index).collect();
        index.extend((0..2).map(|a| self.windows[a].input_index(lead + a, lead + 2 + a)));
        b.reindex_exprs(x, shape, &[], index, fill).op(op)
    }
}

/// The pooling attributes shared by the text adapters: the kernel (argument 2 or
/// `kernel=`) and the stride (defaulting to the kernel).
fn kernel_and_stride(
    args: &Args,
    attrs: &Attrs,
) -> Result<(Vec<i64>, Option<Vec<i64>>), MacroError> {
    let kernel = match (args.len() > 1, attrs.has("kernel")) {
        (true, true) => {
            return Err(attrs.error(
                "kernel",
                "the kernel is given twice: as argument 2 and as `kernel=`",
            ));
        }
        (false, true) => attrs.int_list("kernel")?,
        (_, false) => args.int_list(1)?,
    };
    let stride = if attrs.has("stride") {
        Some(attrs.int_list("stride")?)
    } else {
        None
    };
    Ok((kernel, stride))
}

fn max_pool2d_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let x = args.node(0)?;
    let (kernel, stride) = kernel_and_stride(args, attrs)?;
    let options = MaxPoolOptions {
        kernel,
        stride,
        padding: attrs.int_list_or("padding", vec![0])?,
        dilation: attrs.int_list_or("dilation", vec![1])?,
    };
    max_pool2d(b, x, &options).map_err(|e| e.into_macro_error(attrs))
}

fn avg_pool2d_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let x = args.node(0)?;
    let (kernel, stride) = kernel_and_stride(args, attrs)?;
    let options = AvgPoolOptions {
        kernel,
        stride,
        padding: attrs.int_list_or("padding", vec![0])?,
        count_include_pad: attrs.bool_or("count_include_pad", true)?,
    };
    avg_pool2d(b, x, &options).map_err(|e| e.into_macro_error(attrs))
}
