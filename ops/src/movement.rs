//! Movement ops: `reshape`, `permute`, `transpose`, `expand`, `pad`, `slice`,
//! `concat` and `flip`. Each is one `reindex` whose index expressions say where an
//! output element is read from (`concat` is a sum of them), so sizes may be symbolic:
//! a check that cannot be decided when the op is built becomes a size assertion
//! (`Builder::assert_equal`), checked when the program is bound to real shapes.
//!
//! Every op returns a new node, even when it moves nothing (`permute(x, [0, 1])`):
//! the copy is a reindex with the identity index, which fusion removes.
//!
//! In `.uop` text, every parameter after the tensors may be given positionally or
//! by name, as in Python: `slice(x, 1, 0, 4, 2)` is `slice(x, axis=1, start=0,
//! end=4, step=2)`; giving one both ways is an error.

use uop_codegen::index::{Expr, IndexOp, equal_sizes, list};
use uop_codegen::text::{Args, Attrs, MacroError, Registry, Value};
use uop_codegen::uop::{BinaryOp, Builder, NodeId};

use crate::error::{Context, OpError};
use crate::shape::{is_one, normalize_axes, normalize_axis};

/// Registers this module's ops by name.
pub(crate) fn register(registry: &mut Registry) {
    registry.register(
        "reshape",
        "reshape(x, shape)",
        "the elements of x in row-major order, in a new shape; one size may be -1 (inferred)",
        reshape_text,
    );
    registry.register(
        "permute",
        "permute(x, dims)",
        "reorders the axes of x: axis k of the result is axis dims[k] of x",
        permute_text,
    );
    registry.register(
        "transpose",
        "transpose(x, dim0, dim1)",
        "swaps two axes of x",
        transpose_text,
    );
    registry.register(
        "expand",
        "expand(x, shape)",
        "repeats size-1 axes of x to shape (PyTorch expand: -1 keeps a size, new leading axes allowed)",
        expand_text,
    );
    registry.register(
        "pad",
        "pad(x, pads, value=0, mode=\"constant\")",
        "pads (or, with negative pads, crops) axes from the last: pads = [before, after, ...]; modes constant, reflect, replicate, circular",
        pad_text,
    );
    registry.register(
        "slice",
        "slice(x, axis, start=0, end=size, step=1)",
        "x[start:end:step] along axis, with Python's negative indices and clamping",
        slice_text,
    );
    registry.register(
        "concat",
        "concat(x1, x2, ..., axis=0)",
        "joins tensors along axis; the other axes must agree (also concat([x1, x2], axis=0))",
        concat_text,
    );
    registry.register(
        "flip",
        "flip(x, axis)",
        "reverses x along one axis or a list of axes",
        flip_text,
    );
}

// ---------------------------------------------------------------------------
// Shared helpers (also used by the indexing ops).

/// `min(a, b)` as an index expression.
pub(crate) fn min_expr(a: Expr, b: Expr) -> Expr {
    Expr::bin(IndexOp::Min, a, b)
}

/// `max(a, b)` as an index expression.
pub(crate) fn max_expr(a: Expr, b: Expr) -> Expr {
    Expr::bin(IndexOp::Max, a, b)
}

/// The product of some sizes, simplified (`1` for none).
fn product(sizes: &[Expr]) -> Expr {
    sizes
        .iter()
        .cloned()
        .fold(Expr::Int(1), |acc, s| acc * s)
        .simplify()
}

/// The literal value of a size, after folding constants (`2 * 3` is 6).
fn literal(e: &Expr) -> Option<i64> {
    e.simplify().as_int()
}

/// Requires two sizes to be equal: decided now when both are literal (or provably
/// equal), otherwise recorded as a size assertion checked when the program runs.
pub(crate) fn require_equal(
    b: &mut Builder,
    op: &'static str,
    left: &Expr,
    right: &Expr,
    mismatch: impl FnOnce() -> OpError,
) -> Result<(), OpError> {
    if equal_sizes(left, right) {
        return Ok(());
    }
    if literal(left).is_some() && literal(right).is_some() {
        return Err(mismatch());
    }
    b.assert_equal(left.clone(), right.clone()).op(op)
}

/// Checks that every size of `shape` is made of literals, input dimensions and
/// declared `$params`, so a mistake is reported against the attribute rather than
/// by whichever micro op first meets the size.
fn check_sizes(
    b: &Builder,
    op: &'static str,
    attr: &'static str,
    shape: &[Expr],
) -> Result<(), OpError> {
    let mut problem = None;
    for size in shape {
        size.visit(&mut |e| {
            let why = match e {
                Expr::Name(n) if !b.has_dim(n) => format!("`{n}` is not a dimension of any input"),
                Expr::Param(p) if !b.params().contains(p) => {
                    format!("parameter `${p}` is not declared")
                }
                Expr::Index(_) | Expr::Dim(..) => format!("`{e}` cannot be used in a size"),
                _ => return,
            };
            problem.get_or_insert(why);
        });
    }
    match problem {
        Some(why) => Err(OpError::attr(op, attr, list(shape), why)),
        None => Ok(()),
    }
}

/// The identity index of an iteration space of rank `rank`: `[i0, i1, ...]`.
pub(crate) fn identity_index(rank: usize) -> Vec<Expr> {
    (0..rank).map(Expr::Index).collect()
}

/// A view of an op call in which each parameter after the tensors may be written
/// positionally (argument `i`) or by name (attribute `name`), like a Python call.
pub(crate) struct Call<'a> {
    /// The positional arguments.
    pub args: &'a Args,
    /// The attributes.
    pub attrs: &'a Attrs,
}

/// How a parameter was given.
enum Given {
    Positional,
    Named,
    Absent,
}

impl<'a> Call<'a> {
    /// A view of `args` and `attrs`.
    pub fn new(args: &'a Args, attrs: &'a Attrs) -> Self {
        Call { args, attrs }
    }

    fn given(&self, i: usize, name: &str) -> Result<Given, MacroError> {
        match (self.args.len() > i, self.attrs.has(name)) {
            (true, true) => Err(self.attrs.error(
                name,
                format!(
                    "`{name}` is given both as argument {} and as an attribute",
                    i + 1
                ),
            )),
            (true, false) => Ok(Given::Positional),
            (false, true) => Ok(Given::Named),
            (false, false) => Ok(Given::Absent),
        }
    }

    /// A required integer. When absent, the error is the attribute's "is required".
    pub fn int(&self, i: usize, name: &str) -> Result<i64, MacroError> {
        match self.given(i, name)? {
            Given::Positional => self.args.int(i),
            Given::Named | Given::Absent => self.attrs.int(name),
        }
    }

    /// An optional integer.
    pub fn opt_int(&self, i: usize, name: &str) -> Result<Option<i64>, MacroError> {
        match self.given(i, name)? {
            Given::Positional => self.args.int(i).map(Some),
            Given::Named => self.attrs.int(name).map(Some),
            Given::Absent => Ok(None),
        }
    }

    /// An integer with a default.
    pub fn int_or(&self, i: usize, name: &str, default: i64) -> Result<i64, MacroError> {
        Ok(self.opt_int(i, name)?.unwrap_or(default))
    }

    /// A required list of integers (a single integer is a list of one).
    pub fn int_list(&self, i: usize, name: &str) -> Result<Vec<i64>, MacroError> {
        match self.given(i, name)? {
            Given::Positional => self.args.int_list(i),
            Given::Named | Given::Absent => self.attrs.int_list(name),
        }
    }

    /// A number with a default (integers are accepted).
    pub fn float_or(&self, i: usize, name: &str, default: f64) -> Result<f64, MacroError> {
        match self.given(i, name)? {
            Given::Positional => self.args.float(i),
            Given::Named => self.attrs.float(name),
            Given::Absent => Ok(default),
        }
    }

    /// A string with a default.
    pub fn str_or(&self, i: usize, name: &str, default: &str) -> Result<String, MacroError> {
        match self.given(i, name)? {
            Given::Positional => self.args.str(i).map(str::to_string),
            Given::Named => self.attrs.str(name).map(str::to_string),
            Given::Absent => Ok(default.to_string()),
        }
    }

    /// A required list of sizes: `[2, N, -1]`, or a single integer as a list of one.
    pub fn sizes(&self, i: usize, name: &str) -> Result<Vec<Expr>, MacroError> {
        let positional = matches!(self.given(i, name)?, Given::Positional);
        let (value, what) = if positional {
            (self.args.get(i), format!("argument {}", i + 1))
        } else {
            (self.attrs.get(name), format!("attribute `{name}`"))
        };
        match value {
            Some(Value::List(items)) => Ok(items.clone()),
            Some(Value::Int(v)) => Ok(vec![Expr::Int(*v)]),
            Some(other) => {
                let message = format!(
                    "{what} must be a [list] of sizes, found {}",
                    other.describe()
                );
                Err(if positional {
                    self.args.error(i, message)
                } else {
                    self.attrs.error(name, message)
                })
            }
            // Absent: the attribute accessor words the "required" error.
            None => self.attrs.exprs(name),
        }
    }

    /// Converts an op error, pointing at the offending parameter wherever it was
    /// written; `params` maps parameter names to their positions.
    pub fn error(&self, e: OpError, params: &[(&str, usize)]) -> MacroError {
        if let OpError::Attr { attr, .. } = &e
            && let Some(&(_, i)) = params.iter().find(|(n, _)| n == attr)
            && self.args.len() > i
        {
            return self.args.error(i, e.to_string());
        }
        e.into_macro_error(self.attrs)
    }
}

// ---------------------------------------------------------------------------
// reshape

/// The elements of `x` in row-major order, laid out in `shape`.
///
/// One entry may be `-1`: its size is inferred from the element count. Sizes may be
/// symbolic (`[B, N * 4]`); equal element counts are checked now when literal and
/// otherwise recorded as a size assertion (an inferred `-1` over symbolic sizes is
/// `count / known` and the assertion catches a count that does not divide).
/// A size `0` is allowed (an empty tensor), but not together with `-1`.
///
/// The index arithmetic splits both shapes into the longest runs whose sizes have
/// equal products, so `[B, N, 4] -> [B, N * 4]` reads `x[i0, i1 / 4, i1 % 4]`.
pub fn reshape(b: &mut Builder, x: NodeId, shape: &[Expr]) -> Result<NodeId, OpError> {
    const OP: &str = "reshape";
    check_sizes(b, OP, "shape", shape)?;
    let xs = b.shape(x).to_vec();
    let shown = list(shape);
    let mut inferred = None;
    for (k, d) in shape.iter().enumerate() {
        match literal(d) {
            Some(-1) if inferred.is_some() => {
                return Err(OpError::attr(
                    OP,
                    "shape",
                    &shown,
                    "only one size may be -1",
                ));
            }
            Some(-1) => inferred = Some(k),
            Some(v) if v < 0 => {
                return Err(OpError::attr(
                    OP,
                    "shape",
                    &shown,
                    format!("size {v} is negative (only -1, for an inferred size, is allowed)"),
                ));
            }
            _ => {}
        }
    }
    let mut sizes: Vec<Expr> = shape.iter().map(Expr::simplify).collect();
    if let Some(k) = inferred {
        let known: Vec<Expr> = (0..sizes.len())
            .filter(|&j| j != k)
            .map(|j| sizes[j].clone())
            .collect();
        if literal(&product(&known)) == Some(0) {
            return Err(OpError::attr(
                OP,
                "shape",
                &shown,
                "the size -1 is ambiguous when the other sizes multiply to 0",
            ));
        }
        sizes[k] = infer_size(&xs, &known);
    }
    let (count, new_count) = (product(&xs), product(&sizes));
    require_equal(b, OP, &count, &new_count, || {
        OpError::attr(
            OP,
            "shape",
            &shown,
            format!(
                "has {new_count} elements but the input {} has {count}",
                list(&xs)
            ),
        )
    })?;
    let index = reshape_index(&xs, &sizes);
    b.reindex_exprs(x, sizes, &[], index, 0.0).op(OP)
}

/// The size a `-1` stands for: the input's element count over the `known` sizes.
/// Symbolic factors that appear on both sides cancel (`[B, N, 4] -> [B, -1]` gives
/// `N * 4`); where they do not, the result is a floor division.
fn infer_size(input: &[Expr], known: &[Expr]) -> Expr {
    let mut remaining = input.to_vec();
    let mut literal_known: Option<i64> = Some(1);
    let mut unmatched = false;
    for size in known {
        if let Some(v) = literal(size) {
            literal_known = literal_known.and_then(|p| p.checked_mul(v));
        } else if let Some(p) = remaining.iter().position(|r| equal_sizes(r, size)) {
            remaining.remove(p);
        } else {
            unmatched = true;
        }
    }
    let literal_rest = remaining
        .iter()
        .filter_map(literal)
        .try_fold(1i64, |p, v| p.checked_mul(v));
    let symbolic_rest: Vec<Expr> = remaining
        .iter()
        .filter(|r| literal(r).is_none())
        .cloned()
        .collect();
    if let (false, Some(k), Some(rest)) = (unmatched, literal_known, literal_rest)
        && k != 0
        && rest % k == 0
    {
        return (Expr::Int(rest / k) * product(&symbolic_rest)).simplify();
    }
    Expr::bin(IndexOp::Div, product(input), product(known)).simplify()
}

/// Sizes `1, s0, s0*s1, ...` of the leading axes.
fn prefix_products(sizes: &[Expr]) -> Vec<Expr> {
    (0..=sizes.len()).map(|k| product(&sizes[..k])).collect()
}

/// Where element `i` of the reshaped tensor is read from in the input.
///
/// Both shapes are cut where their prefix products are provably equal; inside each
/// run the output indices give a local row-major offset, which is split into the
/// input's indices with `/` and `%`.
fn reshape_index(from: &[Expr], to: &[Expr]) -> Vec<Expr> {
    let (p_from, p_to) = (prefix_products(from), prefix_products(to));
    let mut cuts = vec![(0, 0)];
    let mut j = 0;
    // The last prefix (the whole input) is always a cut, added after the loop.
    for (a, size) in p_from.iter().enumerate().take(from.len()).skip(1) {
        if let Some(c) = (j..=to.len()).find(|&c| equal_sizes(size, &p_to[c])) {
            cuts.push((a, c));
            j = c;
        }
    }
    cuts.push((from.len(), to.len()));
    let mut index = Vec::with_capacity(from.len());
    for run in cuts.windows(2) {
        let ((a0, b0), (a1, b1)) = (run[0], run[1]);
        // Size-1 output axes have index 0 and add nothing.
        let offset = (b0..b1)
            .filter(|&k| !is_one(&to[k]))
            .fold(Expr::Int(0), |acc, k| {
                acc + Expr::Index(k) * product(&to[k + 1..b1])
            });
        for m in a0..a1 {
            let inner = product(&from[m + 1..a1]);
            let mut e = if m + 1 == a1 {
                offset.clone()
            } else {
                Expr::bin(IndexOp::Div, offset.clone(), inner)
            };
            // The first axis of a run needs no `%`: the offset is below the run's size.
            if m != a0 {
                e = Expr::bin(IndexOp::Mod, e, from[m].clone());
            }
            index.push(e);
        }
    }
    index
}

fn reshape_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let shape = call.sizes(1, "shape")?;
    reshape(b, x, &shape).map_err(|e| call.error(e, &[("shape", 1)]))
}

// ---------------------------------------------------------------------------
// permute, transpose

/// Reorders the axes of `x`: axis `k` of the result is axis `dims[k]` of `x`
/// (`dims` is a permutation of the axes; negative values count from the end).
pub fn permute(b: &mut Builder, x: NodeId, dims: &[i64]) -> Result<NodeId, OpError> {
    const OP: &str = "permute";
    let xs = b.shape(x).to_vec();
    let shown = format!("{dims:?}");
    if dims.len() != xs.len() {
        return Err(OpError::attr(
            OP,
            "dims",
            &shown,
            format!(
                "must list each of the {} axes of {} once",
                xs.len(),
                list(&xs)
            ),
        ));
    }
    let perm = dims
        .iter()
        .map(|&d| normalize_axis(OP, "dims", d, xs.len()))
        .collect::<Result<Vec<_>, _>>()?;
    normalize_axes(OP, "dims", dims, xs.len())?;
    let shape = perm.iter().map(|&p| xs[p].clone()).collect();
    let mut index = vec![Expr::Int(0); xs.len()];
    for (k, &p) in perm.iter().enumerate() {
        index[p] = Expr::Index(k);
    }
    b.reindex_exprs(x, shape, &[], index, 0.0).op(OP)
}

fn permute_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let dims = call.int_list(1, "dims")?;
    permute(b, x, &dims).map_err(|e| call.error(e, &[("dims", 1)]))
}

/// Swaps axes `dim0` and `dim1` of `x` (negative values count from the end).
pub fn transpose(b: &mut Builder, x: NodeId, dim0: i64, dim1: i64) -> Result<NodeId, OpError> {
    const OP: &str = "transpose";
    let rank = b.shape(x).len();
    let a = normalize_axis(OP, "dim0", dim0, rank)?;
    let c = normalize_axis(OP, "dim1", dim1, rank)?;
    let mut perm: Vec<i64> = (0..rank as i64).collect();
    perm.swap(a, c);
    permute(b, x, &perm).map_err(|e| match e {
        OpError::Uop { source, .. } => OpError::Uop { op: OP, source },
        other => other,
    })
}

fn transpose_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let dim0 = call.int(1, "dim0")?;
    let dim1 = call.int(2, "dim1")?;
    transpose(b, x, dim0, dim1).map_err(|e| call.error(e, &[("dim0", 1), ("dim1", 2)]))
}

// ---------------------------------------------------------------------------
// expand

/// PyTorch's `expand`: repeats the size-1 axes of `x` to the sizes of `shape`.
///
/// `shape` may have more axes than `x` (new leading axes); `-1` keeps an axis's
/// size (not allowed for a new axis). An axis of `x` that is not the literal 1 must
/// keep its size: checked now when literal, else recorded as a size assertion (a
/// symbolic size that is 1 at run time is not broadcast: declare it as 1).
pub fn expand(b: &mut Builder, x: NodeId, shape: &[Expr]) -> Result<NodeId, OpError> {
    const OP: &str = "expand";
    check_sizes(b, OP, "shape", shape)?;
    let xs = b.shape(x).to_vec();
    let shown = list(shape);
    if shape.len() < xs.len() {
        return Err(OpError::attr(
            OP,
            "shape",
            &shown,
            format!("has fewer axes than the input {}", list(&xs)),
        ));
    }
    let lead = shape.len() - xs.len();
    let mut sizes = Vec::with_capacity(shape.len());
    let mut index = Vec::with_capacity(xs.len());
    for (k, target) in shape.iter().enumerate() {
        let value = literal(target);
        if let Some(v) = value
            && v < -1
        {
            return Err(OpError::attr(
                OP,
                "shape",
                &shown,
                format!("size {v} is negative"),
            ));
        }
        if k < lead {
            if value == Some(-1) {
                return Err(OpError::attr(
                    OP,
                    "shape",
                    &shown,
                    format!("-1 is not allowed for the new leading axis {k}"),
                ));
            }
            sizes.push(target.simplify());
            continue;
        }
        let d = &xs[k - lead];
        if value == Some(-1) {
            sizes.push(d.clone());
            index.push(Expr::Index(k));
        } else if is_one(d) {
            sizes.push(target.simplify());
            index.push(Expr::Int(0));
        } else {
            require_equal(b, OP, d, target, || {
                OpError::attr(
                    OP,
                    "shape",
                    &shown,
                    format!(
                        "cannot expand axis {} of size {d} to {target} (only size-1 axes expand)",
                        k - lead
                    ),
                )
            })?;
            sizes.push(d.clone());
            index.push(Expr::Index(k));
        }
    }
    b.reindex_exprs(x, sizes, &[], index, 0.0).op(OP)
}

fn expand_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let shape = call.sizes(1, "shape")?;
    expand(b, x, &shape).map_err(|e| call.error(e, &[("shape", 1)]))
}

// ---------------------------------------------------------------------------
// pad

/// How `pad` fills the new elements (PyTorch's `F.pad` modes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PadMode {
    /// A constant value.
    #[default]
    Constant,
    /// The mirror image without repeating the edge: `[c b | a b c | b a]`.
    Reflect,
    /// The edge element repeated: `[a a | a b c | c c]`.
    Replicate,
    /// Wrapping around: `[b c | a b c | a b]`.
    Circular,
}

impl PadMode {
    /// Parses `"constant"`, `"reflect"`, `"replicate"` or `"circular"`.
    pub fn from_name(name: &str) -> Option<PadMode> {
        match name {
            "constant" => Some(PadMode::Constant),
            "reflect" => Some(PadMode::Reflect),
            "replicate" => Some(PadMode::Replicate),
            "circular" => Some(PadMode::Circular),
            _ => None,
        }
    }
}

/// Pads `x` with `value` (PyTorch's `F.pad` in constant mode).
///
/// `pads` lists `(before, after)` pairs starting from the LAST axis:
/// `[1, 2]` pads the last axis with one element before and two after, `[1, 1, 0, 3]`
/// also pads the axis before it with three after. Negative pads crop. A literal
/// size that would become negative is an error; a symbolic one fails when the
/// program is bound to shapes.
pub fn pad(b: &mut Builder, x: NodeId, pads: &[i64], value: f64) -> Result<NodeId, OpError> {
    pad_mode(b, x, pads, PadMode::Constant, value)
}

/// [`pad`] with a mode. `Reflect`, `Replicate` and `Circular` take non-negative pads
/// and no value (it must be 0); unlike PyTorch they accept pads larger than the axis
/// (reflection and wrapping simply continue), and `Reflect` of a size-1 axis repeats it.
pub fn pad_mode(
    b: &mut Builder,
    x: NodeId,
    pads: &[i64],
    mode: PadMode,
    value: f64,
) -> Result<NodeId, OpError> {
    const OP: &str = "pad";
    let xs = b.shape(x).to_vec();
    let shown = format!("{pads:?}");
    if !pads.len().is_multiple_of(2) || pads.len() > 2 * xs.len() {
        return Err(OpError::attr(
            OP,
            "pads",
            &shown,
            format!(
                "must hold (before, after) pairs for at most the {} axes of {}: an even length up to {}",
                xs.len(),
                list(&xs),
                2 * xs.len()
            ),
        ));
    }
    if mode != PadMode::Constant {
        if let Some(&p) = pads.iter().find(|&&p| p < 0) {
            return Err(OpError::attr(
                OP,
                "pads",
                &shown,
                format!("pad {p} is negative, which only mode \"constant\" allows"),
            ));
        }
        if value != 0.0 {
            return Err(OpError::attr(
                OP,
                "value",
                value,
                "only mode \"constant\" takes a value",
            ));
        }
    }
    let mut sizes = xs.clone();
    let mut index = identity_index(xs.len());
    for (pair, p) in pads.chunks(2).enumerate() {
        let axis = xs.len() - 1 - pair;
        let (before, after) = (p[0], p[1]);
        let size = (xs[axis].clone() + Expr::Int(before) + Expr::Int(after)).simplify();
        if let Some(v) = size.as_int()
            && v < 0
        {
            return Err(OpError::attr(
                OP,
                "pads",
                &shown,
                format!(
                    "crops axis {axis} of size {} to a negative size ({v})",
                    xs[axis]
                ),
            ));
        }
        sizes[axis] = size;
        let t = Expr::Index(axis) - Expr::Int(before);
        let n = xs[axis].clone();
        index[axis] = match mode {
            PadMode::Constant => t,
            PadMode::Replicate => min_expr(max_expr(t, Expr::Int(0)), n - Expr::Int(1)),
            PadMode::Circular => Expr::bin(IndexOp::Mod, t, n),
            PadMode::Reflect => {
                // Reflection is periodic with period 2(n - 1); within a period the
                // distance back from the far end mirrors. `max(.., 1)` keeps n = 1 defined.
                let period = Expr::Int(2) * n - Expr::Int(2);
                let u = Expr::bin(IndexOp::Mod, t, max_expr(period.clone(), Expr::Int(1)));
                min_expr(u.clone(), period - u)
            }
        };
    }
    b.reindex_exprs(x, sizes, &[], index, value).op(OP)
}

fn pad_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let pads = call.int_list(1, "pads")?;
    let value = call.float_or(2, "value", 0.0)?;
    let mode_name = call.str_or(3, "mode", "constant")?;
    let mode = PadMode::from_name(&mode_name).ok_or_else(|| {
        call.error(
            OpError::attr(
                "pad",
                "mode",
                format!("{mode_name:?}"),
                "must be \"constant\", \"reflect\", \"replicate\" or \"circular\"",
            ),
            &[("mode", 3)],
        )
    })?;
    pad_mode(b, x, &pads, mode, value)
        .map_err(|e| call.error(e, &[("pads", 1), ("value", 2), ("mode", 3)]))
}

// ---------------------------------------------------------------------------
// slice

/// `x[start:end:step]` along `axis`, with Python's rules: negative `start` / `end`
/// count from the end, both are clamped to the axis, `end = None` is the size, and
/// an empty range gives size 0. `step` must be at least 1 (use [`flip`] to reverse).
///
/// With a symbolic size the clamping is written with `min` / `max` in the shape and
/// index expressions.
pub fn slice(
    b: &mut Builder,
    x: NodeId,
    axis: i64,
    start: i64,
    end: Option<i64>,
    step: i64,
) -> Result<NodeId, OpError> {
    const OP: &str = "slice";
    let xs = b.shape(x).to_vec();
    let a = normalize_axis(OP, "axis", axis, xs.len())?;
    if step < 1 {
        return Err(OpError::attr(
            OP,
            "step",
            step,
            "must be at least 1 (reverse with flip)",
        ));
    }
    let n = xs[a].clone();
    // Python's clamping of a slice bound to [0, n].
    let bound = |v: i64| -> Expr {
        match literal(&n) {
            Some(size) => Expr::Int(if v < 0 {
                (v.saturating_add(size)).max(0)
            } else {
                v.min(size)
            }),
            None if v == 0 => Expr::Int(0),
            None if v < 0 => max_expr(n.clone() + Expr::Int(v), Expr::Int(0)),
            None => min_expr(Expr::Int(v), n.clone()),
        }
    };
    let first = bound(start);
    let last = end.map_or_else(|| n.clone(), bound);
    let count = Expr::bin(
        IndexOp::Div,
        last - first.clone() + Expr::Int(step - 1),
        Expr::Int(step),
    );
    let mut sizes = xs.clone();
    sizes[a] = max_expr(count, Expr::Int(0)).simplify();
    let mut index = identity_index(xs.len());
    index[a] = first + Expr::Index(a) * Expr::Int(step);
    b.reindex_exprs(x, sizes, &[], index, 0.0).op(OP)
}

fn slice_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let axis = call.int(1, "axis")?;
    let start = call.int_or(2, "start", 0)?;
    let end = call.opt_int(3, "end")?;
    let step = call.int_or(4, "step", 1)?;
    slice(b, x, axis, start, end, step)
        .map_err(|e| call.error(e, &[("axis", 1), ("start", 2), ("end", 3), ("step", 4)]))
}

// ---------------------------------------------------------------------------
// concat

/// Joins `xs` along `axis` (PyTorch `cat`). All tensors have the same rank (at
/// least 1) and agree on every other axis: checked now when the sizes are literal,
/// else recorded as size assertions.
///
/// Written as a sum of reindexes, each placing one tensor at its offset and reading 0
/// elsewhere; so the only difference from a copy is that `-0.0` becomes `0.0`.
pub fn concat(b: &mut Builder, xs: &[NodeId], axis: i64) -> Result<NodeId, OpError> {
    const OP: &str = "concat";
    let Some(&first) = xs.first() else {
        return Err(OpError::operand(OP, "needs at least one tensor"));
    };
    let s0 = b.shape(first).to_vec();
    if s0.is_empty() {
        return Err(OpError::operand(
            OP,
            "cannot join rank-0 tensors (reshape them to [1] first)",
        ));
    }
    let a = normalize_axis(OP, "axis", axis, s0.len())?;
    let mut offsets = Vec::with_capacity(xs.len());
    let mut total = Expr::Int(0);
    for (k, &x) in xs.iter().enumerate() {
        let s = b.shape(x).to_vec();
        if s.len() != s0.len() {
            return Err(OpError::operand(
                OP,
                format!(
                    "tensor {} has shape {} but tensor 1 has {}: the ranks differ",
                    k + 1,
                    list(&s),
                    list(&s0)
                ),
            ));
        }
        for d in (0..s.len()).filter(|&d| d != a) {
            require_equal(b, OP, &s0[d], &s[d], || {
                OpError::operand(
                    OP,
                    format!(
                        "tensor {} has shape {} but tensor 1 has {}: they differ on axis {d}, which is not the axis {a} joined",
                        k + 1,
                        list(&s),
                        list(&s0)
                    ),
                )
            })?;
        }
        offsets.push(total.clone());
        total = (total + s[a].clone()).simplify();
    }
    let mut shape = s0.clone();
    shape[a] = total;
    let mut sum: Option<NodeId> = None;
    for (&x, offset) in xs.iter().zip(offsets) {
        let mut index = identity_index(shape.len());
        index[a] = Expr::Index(a) - offset;
        let part = b.reindex_exprs(x, shape.clone(), &[], index, 0.0).op(OP)?;
        sum = Some(match sum {
            None => part,
            Some(acc) => b.binary(BinaryOp::Add, acc, part).op(OP)?,
        });
    }
    Ok(sum.unwrap_or(first))
}

fn concat_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let xs = match args.get(0) {
        Some(Value::List(_)) => args.nodes(0)?,
        _ => (0..args.len())
            .map(|i| args.node(i))
            .collect::<Result<Vec<_>, _>>()?,
    };
    let axis = attrs.int_or("axis", 0)?;
    concat(b, &xs, axis).map_err(|e| e.into_macro_error(attrs))
}

// ---------------------------------------------------------------------------
// flip

/// Reverses `x` along each of `axes` (one or more; negative values count from the end).
pub fn flip(b: &mut Builder, x: NodeId, axes: &[i64]) -> Result<NodeId, OpError> {
    const OP: &str = "flip";
    let xs = b.shape(x).to_vec();
    let axes = normalize_axes(OP, "axis", axes, xs.len())?;
    let mut index = identity_index(xs.len());
    for &a in &axes {
        index[a] = xs[a].clone() - Expr::Int(1) - Expr::Index(a);
    }
    b.reindex_exprs(x, xs, &[], index, 0.0).op(OP)
}

fn flip_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let axes = call.int_list(1, "axis")?;
    flip(b, x, &axes).map_err(|e| call.error(e, &[("axis", 1)]))
}
