//! Padding: a reduction that reads a window past the edges of a tensor (a convolution
//! or pooling with padding) reads it from a padded copy instead, so its inner loop
//! loads without a bounds check.
//!
//! ```text
//!                                          x_pad[j0, j1] = 0.0          (0..N, 0..W + 2)
//!                                          x_pad[j0, j1 + 1] = x[j0, j1]   (0..N, 0..W)
//! v += (x[i0, i1 + i2 - 1] ?? 0.0) * …  =>  v += x_pad[i0, i1 + i2] * …
//! ```
//!
//! A checked load of an input or a temporary in the innermost loop of a nest with
//! carried variables (a reduction) is rewritten when every subscript is affine in
//! the loop variables and, per axis, the bounds analysis of the `bounds` pass gives
//! how far the subscript reaches below `0` and past `size - 1` over the loop ranges
//! (`lo` and `hi`: `1` and `1` for padding 1, or `$kh - 1` for a full convolution)
//! as expressions it proves non-negative. A new temporary of shape `size + lo + hi`
//! is filled by two plain element-wise nests placed before the reduction, `fill`
//! everywhere and then `x[j]` at `x_pad[j + lo]`, and the load becomes
//! `x_pad[subscript + lo]`, unchecked: by construction it lies in range. It reads
//! exactly what the checked load read, the element or the fill, so results are bit
//! for bit the same. Two nests rather than one reading `x[j - lo] ?? fill`: neither
//! has a checked load, so both vectorize (conv2d 8×64×56×56: the one-nest copy was
//! ~9% of the kernel's profile, all in its check; see `docs/decisions.md`).
//!
//! The copy costs about one read and two writes per element; it pays when the nest
//! reads elements more than once, so a load that reads every element at most once
//! (its subscripts are injective in the nest's loops) is left alone, and so is one
//! whose out-of-range axes are read at a fixed position (the check is the same in
//! every iteration, and the copy would be mostly unread). Loads of one
//! tensor with the same fill and pads share one copy, also across nests while no
//! nest in between writes the tensor. A load that the analysis finds in range on
//! every axis (a strided window the `bounds` pass cannot prove) is just unmarked.
//!
//! The pass runs first among the schedule passes, so `order`, `tile` and `split` see
//! the unchecked loads (`tile` looks for unit-stride loads, which a checked load in a
//! backend's inner loop does not vectorize).
//!
//! Cost: per innermost load, one `bounds` overhang per axis plus a scan of the live
//! copies.

use crate::index::Expr;
use crate::loops::{
    Access, Block, Loop, LoopProgram, Stmt, Subscript, TensorDecl, TensorId, TensorKind, Value,
};

use super::bounds::overhang;
use super::shape_groups::ShapeGroups;
use super::stride::{coefficient, injective};
use super::walk::{FreshNames, block_accesses, first_free_loop, fresh_loops};

/// Rewrites the checked window loads of reduction nests to read padded copies (see
/// the module docs).
pub fn pad(p: &LoopProgram) -> LoopProgram {
    let groups = ShapeGroups::new(p);
    let mut out = LoopProgram {
        blocks: Vec::with_capacity(p.blocks.len()),
        ..p.clone()
    };
    let mut next_loop = first_free_loop(p);
    let mut names = FreshNames::new(&p.tensors);
    // Padded copies still equal to their source, by the source's (tensor, fill, pads).
    let mut copies: Vec<PaddedCopy> = Vec::new();
    for block in &p.blocks {
        let mut block = block.clone();
        let written: Vec<TensorId> = block_accesses(&block)
            .iter()
            .filter(|a| a.write)
            .map(|a| a.access.tensor)
            .collect();
        if is_reduction(&block) {
            let ctx = Nest {
                loops: block.loops.clone(),
                written: &written,
                groups: &groups,
            };
            let innermost = block
                .loops
                .last_mut()
                .map_or(&mut [][..], |l| &mut l.stmts[..]);
            for s in innermost {
                map_stmt_loads(s, &mut |access, fill| {
                    let Some(pads) = ctx.pads(access, &out) else {
                        return;
                    };
                    if pads.iter().all(|(lo, hi)| is_zero(lo) && is_zero(hi)) {
                        access.checked = false;
                        return;
                    }
                    let key = PaddedCopy {
                        source: access.tensor,
                        fill: fill.to_bits(),
                        pads,
                        padded: TensorId(0),
                    };
                    let at = match copies.iter().position(|c| c.same_as(&key)) {
                        Some(at) => at,
                        None => {
                            let padded = add_copy(&mut out, &mut names, &key, fill, &mut next_loop);
                            copies.push(PaddedCopy { padded, ..key });
                            copies.len() - 1
                        }
                    };
                    redirect(access, &copies[at]);
                });
            }
        }
        copies.retain(|c| !written.contains(&c.source));
        out.blocks.push(block);
    }
    out
}

/// A padded copy of `source` (by its fill's bits and `(lo, hi)` per axis).
#[derive(Clone, Debug)]
struct PaddedCopy {
    source: TensorId,
    fill: u64,
    pads: Vec<(Expr, Expr)>,
    padded: TensorId,
}

impl PaddedCopy {
    fn same_as(&self, other: &PaddedCopy) -> bool {
        self.source == other.source && self.fill == other.fill && self.pads == other.pads
    }
}

/// A reduction nest: some level carries variables.
fn is_reduction(b: &Block) -> bool {
    !b.loops.is_empty() && (!b.carried.is_empty() || b.loops.iter().any(|l| !l.carried.is_empty()))
}

fn is_zero(e: &Expr) -> bool {
    e.as_int() == Some(0)
}

/// What the rewrite of one nest's loads needs to know.
struct Nest<'a> {
    loops: Vec<Loop>,
    written: &'a [TensorId],
    groups: &'a ShapeGroups,
}

impl Nest<'_> {
    /// `(lo, hi)` for every axis of a load that may read a padded copy instead.
    fn pads(&self, access: &Access, p: &LoopProgram) -> Option<Vec<(Expr, Expr)>> {
        if !access.checked || self.written.contains(&access.tensor) {
            return None;
        }
        let decl = p.tensors.get(access.tensor.0)?;
        if !matches!(decl.kind, TensorKind::Input | TensorKind::Temp)
            || decl.dtype != p.dtype
            || decl.shape.len() != access.index.len()
        {
            return None;
        }
        let ids: Vec<usize> = self.loops.iter().map(|l| l.id.0).collect();
        let mut subscripts = Vec::with_capacity(access.index.len());
        for s in &access.index {
            let Subscript::Expr(e) = s else {
                return None;
            };
            if ids.iter().any(|&n| coefficient(e, n).is_none()) {
                return None;
            }
            subscripts.push(e);
        }
        let pads: Vec<(Expr, Expr)> = subscripts
            .iter()
            .zip(&decl.shape)
            .map(|(e, size)| overhang(&self.loops, self.groups, e, size))
            .collect::<Option<_>>()?;
        let in_range = pads.iter().all(|(lo, hi)| is_zero(lo) && is_zero(hi));
        // A copy pays only when elements are read more than once and the check moves
        // with the loops (a fixed position is checked the same way every time, as
        // `cross_entropy`'s `logits[-1, -1] ?? 1.0` is); unmarking is free.
        let moving = subscripts.iter().zip(&pads).all(|(e, (lo, hi))| {
            is_zero(lo) && is_zero(hi) || e.indices().iter().any(|n| ids.contains(n))
        });
        (in_range || moving && !injective(access, &ids)).then_some(pads)
    }
}

/// Declares the padded copy `key` describes and appends the nests that fill it to
/// `p`'s blocks (the fill, then the source into the interior); returns the new tensor.
fn add_copy(
    p: &mut LoopProgram,
    names: &mut FreshNames,
    key: &PaddedCopy,
    fill: f64,
    next_loop: &mut usize,
) -> TensorId {
    let source = &p.tensors[key.source.0];
    let source_shape = source.shape.clone();
    let shape: Vec<Expr> = source_shape
        .iter()
        .zip(&key.pads)
        .map(|(size, (lo, hi))| (size.clone() + lo.clone() + hi.clone()).simplify())
        .collect();
    let name = names.fresh(&format!("{}_pad", source.name));
    let padded = TensorId(p.tensors.len());
    p.tensors.push(TensorDecl {
        name,
        shape: shape.clone(),
        dtype: source.dtype,
        kind: TensorKind::Temp,
        row_local: None,
    });
    // Two nests instead of one copy reading `x[j - lo] ?? fill`: the fill everywhere,
    // then the source into the interior. Neither reads with a check, so both
    // vectorize; the border would otherwise cost a check per element copied.
    let whole = fresh_loops(&shape, next_loop);
    let fill_all = Stmt::Store {
        access: Access {
            tensor: padded,
            index: loop_indices(&whole).map(Subscript::Expr).collect(),
            checked: false,
        },
        value: Value::Const(fill),
    };
    p.blocks.push(nest(whole, fill_all));
    let interior = fresh_loops(&source_shape, next_loop);
    let copy = Stmt::Store {
        access: Access {
            tensor: padded,
            index: loop_indices(&interior)
                .zip(&key.pads)
                .map(|(j, (lo, _))| Subscript::Expr((j + lo.clone()).simplify()))
                .collect(),
            checked: false,
        },
        value: Value::Load {
            access: Access {
                tensor: key.source,
                index: loop_indices(&interior).map(Subscript::Expr).collect(),
                checked: false,
            },
            fill,
        },
    };
    p.blocks.push(nest(interior, copy));
    padded
}

fn loop_indices(loops: &[Loop]) -> impl Iterator<Item = Expr> + '_ {
    loops.iter().map(|l| Expr::Index(l.id.0))
}

/// The nest of `loops` running `store` in its innermost loop (at block level when
/// there are no loops: a rank-0 tensor).
fn nest(mut loops: Vec<Loop>, store: Stmt) -> Block {
    match loops.last_mut() {
        Some(innermost) => {
            innermost.stmts.push(store);
            Block {
                loops,
                carried: Vec::new(),
                stmts: Vec::new(),
            }
        }
        None => Block {
            loops,
            carried: Vec::new(),
            stmts: vec![store],
        },
    }
}

/// Points `access` at the padded copy: every subscript shifted by its low pad.
fn redirect(access: &mut Access, copy: &PaddedCopy) {
    access.tensor = copy.padded;
    access.checked = false;
    for (s, (lo, _)) in access.index.iter_mut().zip(&copy.pads) {
        if let Subscript::Expr(e) = s {
            *e = (e.clone() + lo.clone()).simplify();
        }
    }
}

/// Calls `f(access, fill)` on every load of `s`, those in data-dependent subscripts
/// included.
fn map_stmt_loads(s: &mut Stmt, f: &mut impl FnMut(&mut Access, f64)) {
    match s {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            map_subscript_loads(access, f);
            map_value_loads(value, f);
        }
        Stmt::Update { value, .. } => map_value_loads(value, f),
    }
}

fn map_subscript_loads(access: &mut Access, f: &mut impl FnMut(&mut Access, f64)) {
    for s in &mut access.index {
        if let Subscript::Value(v) = s {
            map_value_loads(v, f);
        }
    }
}

fn map_value_loads(v: &mut Value, f: &mut impl FnMut(&mut Access, f64)) {
    match v {
        Value::Load { access, fill } => {
            map_subscript_loads(access, f);
            f(access, *fill);
        }
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
        Value::Unary(_, x) => map_value_loads(x, f),
        Value::Binary(_, a, b) => {
            map_value_loads(a, f);
            map_value_loads(b, f);
        }
        Value::Where(c, a, b) => {
            map_value_loads(c, f);
            map_value_loads(a, f);
            map_value_loads(b, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{CompileOptions, compile};
    use crate::interp;
    use crate::pass::PassOptions;
    use crate::testing::random_case;
    use crate::text::{Registry, parse_program};
    use crate::uop::Program;

    fn parsed(src: &str) -> Program {
        parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn optimized(p: &Program) -> LoopProgram {
        compile(p, &CompileOptions::default()).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The optimized program's results equal the reference interpreter's, bit for
    /// bit, on random sizes and data.
    fn assert_same_results(p: &Program, lp: &LoopProgram) {
        for seed in 0..12 {
            let case = random_case(p, seed);
            let want = interp::run(p, &case.inputs, &case.params)
                .unwrap_or_else(|e| panic!("seed {seed}: reference: {e}"));
            let got = interp::run_loops(lp, &case.inputs, &case.params)
                .unwrap_or_else(|e| panic!("seed {seed}: loops: {e}\n{lp}"));
            for (w, g) in want.iter().zip(&got) {
                assert_eq!(w.shape, g.shape, "seed {seed}");
                let same = w
                    .data
                    .iter()
                    .zip(&g.data)
                    .all(|(a, b)| a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan());
                assert!(same, "seed {seed}: {:?} != {:?}\n{lp}", g.data, w.data);
            }
        }
    }

    /// The statements of the last block's innermost loop, printed.
    fn reduction(lp: &LoopProgram) -> String {
        let text = lp.to_string();
        let last = text.rfind("\nblock ").map_or(&text[..], |at| &text[at..]);
        last.to_string()
    }

    /// A 2-D convolution `[N, C, H, W] * [O, C, kernel, kernel]` whose window
    /// subscripts on H are `row` (over `i2` and the tap `i5`), with `out` rows; the
    /// same on W with `i3`, `i6` and `H` read as `W`.
    fn conv(kernel: &str, out_h: &str, row: &str) -> Program {
        let col = row.replace("i2", "i3").replace("i5", "i6");
        let out_w = out_h.replace('H', "W");
        parsed(&format!(
            "input x: f32[N, C, H, W]\ninput k: f32[O, C, {kernel}, {kernel}]\n\
             xx = reindex(x, [N, O, {out_h}, {out_w}, C, {kernel}, {kernel}], [i0, i4, {row}, {col}])\n\
             kk = reindex(k, [N, O, {out_h}, {out_w}, C, {kernel}, {kernel}], [i1, i4, i5, i6])\n\
             s = reduce_sum(mul(xx, kk), [4, 5, 6])\n\
             y = reindex(s, [N, O, {out_h}, {out_w}], [i0, i1, i2, i3, 0, 0, 0])\noutput y\n"
        ))
    }

    #[test]
    fn a_convolution_with_padding_1_reads_a_padded_copy() {
        let p = conv("3", "H", "i2 + i5 - 1");
        let lp = optimized(&p);
        let text = lp.to_string();
        assert!(text.contains("x_pad: f32[N, C, H + 2, W + 2]"), "{text}");
        // Filled with the fill value, then the source copied into the interior:
        // neither nest reads with a check.
        assert!(text.contains("x_pad[i7, i8, i9, i10] = 0.0"), "{text}");
        assert!(
            text.contains("x_pad[i11, i12, i13 + 1, i14 + 1] = x[i11, i12, i13, i14]"),
            "{text}"
        );
        assert!(!text.contains("??"), "{text}");
        let conv = reduction(&lp);
        assert!(!conv.contains("??"), "{text}");
        assert!(conv.contains("x_pad[i0, i4, i2 + i5, i3 + i6]"), "{text}");
        assert!(
            conv.contains("[tile(packed k_t[i4, i5, i6, i1])]"),
            "{text}"
        );
        assert_same_results(&p, &lp);
    }

    #[test]
    fn padding_2_with_stride_2_pads_by_what_the_window_reaches() {
        let p = conv("5", "(H - 1) / 2 + 1", "2 * i2 + i5 - 2");
        let lp = optimized(&p);
        let text = lp.to_string();
        // The last window starts at 2 * ((H - 1) / 2) - 2 <= H - 3 and reaches H + 1.
        assert!(text.contains("x_pad: f32[N, C, H + 4, W + 4]"), "{text}");
        assert!(!reduction(&lp).contains("??"), "{text}");
        assert_same_results(&p, &lp);
    }

    #[test]
    fn a_dilated_window_pads_by_its_reach() {
        let p = conv("3", "H", "i2 + 2 * i5 - 2");
        let lp = optimized(&p);
        let text = lp.to_string();
        assert!(text.contains("x_pad: f32[N, C, H + 4, W + 4]"), "{text}");
        assert!(!reduction(&lp).contains("??"), "{text}");
        assert_same_results(&p, &lp);
    }

    #[test]
    fn a_full_convolution_pads_by_the_kernel_size() {
        // y[h] = sum_k x[h + k - (K - 1)] * w[k] over h in 0..H + K - 1.
        let p = parsed(
            "input x: f32[B, H]\ninput w: f32[K]\n\
             xx = reindex(x, [B, H + K - 1, K], [i0, i1 + i2 - K + 1])\n\
             ww = reindex(w, [B, H + K - 1, K], [i2])\n\
             y = reduce_sum(mul(xx, ww), [2])\noutput y\n",
        );
        let lp = optimized(&p);
        let text = lp.to_string();
        // K - 1 >= 0 only where the tap loop runs: clamped for the size.
        assert!(text.contains("max(K - 1, 0)"), "{text}");
        assert!(!reduction(&lp).contains("??"), "{text}");
        assert_same_results(&p, &lp);
    }

    #[test]
    fn a_max_pool_keeps_its_infinite_fill_and_a_sum_its_own_fill() {
        let pool = parsed(
            "input x: f32[N, W]\n\
             xx = reindex(x, [N, (W - 1) / 2 + 1, 3], [i0, 2 * i1 + i2 - 1], fill=-inf)\n\
             y = reduce_max(xx, [2])\noutput y\n",
        );
        let lp = optimized(&pool);
        let text = lp.to_string();
        assert!(text.contains("x_pad[i3, i4] = -inf"), "{text}");
        assert!(!reduction(&lp).contains("??"), "{text}");
        assert_same_results(&pool, &lp);

        let ones = parsed(
            "input x: f32[N, W]\n\
             xx = reindex(x, [N, W, 3], [i0, i1 + i2 - 1], fill=1.5)\n\
             y = reduce_sum(xx, [2])\noutput y\n",
        );
        let lp = optimized(&ones);
        assert!(lp.to_string().contains("x_pad[i3, i4] = 1.5"), "{lp}");
        assert!(!reduction(&lp).contains("??"), "{lp}");
        assert_same_results(&ones, &lp);
    }

    #[test]
    fn loads_with_the_same_pads_and_fill_share_one_copy() {
        let p = parsed(
            "input x: f32[N, W]\n\
             a = reindex(x, [N, W, 3], [i0, i1 + i2 - 1])\n\
             b = reindex(x, [N, W, 3], [i0, i1 - i2 + 1])\n\
             c = reindex(x, [N, W, 3], [i0, i1 + i2 - 1], fill=2.0)\n\
             y = reduce_sum(add(mul(a, b), c), [2])\noutput y\n",
        );
        let lp = optimized(&p);
        let pads: Vec<_> = lp
            .tensors
            .iter()
            .filter(|t| t.name.starts_with("x_pad"))
            .collect();
        assert_eq!(pads.len(), 2, "one copy per fill:\n{lp}");
        assert!(!reduction(&lp).contains("??"), "{lp}");
        assert_same_results(&p, &lp);
    }

    #[test]
    fn a_shift_by_a_parameter_of_unknown_sign_stays_checked() {
        let p = parsed(
            "input x: f32[N, W]\nparam $p\n\
             xx = reindex(x, [N, W, 3], [i0, i1 + i2 - $p])\n\
             y = reduce_sum(xx, [2])\noutput y\n",
        );
        let lp = optimized(&p);
        assert!(reduction(&lp).contains("?? 0.0"), "{lp}");
        assert_eq!(lp.tensors.len(), 2, "{lp}");
        assert_same_results(&p, &lp);
    }

    #[test]
    fn a_window_read_once_is_not_copied() {
        // Every element is read by one iteration: a copy would cost as much as the
        // checks it saves.
        let p = parsed(
            "input x: f32[N, W]\n\
             xx = reindex(x, [N + 2, W], [i0 - 1, i1])\n\
             y = reduce_sum(xx, [1])\noutput y\n",
        );
        let lp = optimized(&p);
        assert!(lp.to_string().contains("??"), "{lp}");
        assert_eq!(lp.blocks.len(), 1, "{lp}");
    }

    #[test]
    fn a_fixed_position_past_the_edge_is_not_copied() {
        // `cross_entropy` reads the constant 1.0 as `ones[-1, -1] ?? 1.0`.
        let p = parsed(
            "input x: f32[N, W]\n\
             one = reindex(x, [N, W, 3], [-1, -1], fill=1.0)\n\
             y = reduce_sum(mul(one, reindex(x, [N, W, 3], [i0, i1])), [2])\noutput y\n",
        );
        let lp = optimized(&p);
        assert!(lp.to_string().contains("x[-1, -1] ?? 1.0"), "{lp}");
        assert!(lp.tensors.iter().all(|t| t.name != "x_pad"), "{lp}");
    }

    #[test]
    fn disabling_the_pass_keeps_the_checked_loads() {
        let p = conv("3", "H", "i2 + i5 - 1");
        let opts = PassOptions {
            disabled: vec!["pad".into()],
            verify_each_pass: true,
        };
        let options = CompileOptions {
            passes: opts,
            ..CompileOptions::default()
        };
        let lp = compile(&p, &options).unwrap_or_else(|e| panic!("{e}"));
        assert!(lp.to_string().contains("?? 0.0"), "{lp}");
        assert!(!lp.to_string().contains("x_pad"), "{lp}");
    }
}
