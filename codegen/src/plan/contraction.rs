//! The contraction plan: which `[tile]` nests a JIT realizes with a runtime
//! micro-kernel (`uop_runtime::microkernel`: one register tile of the CPU level's
//! `tile_rows × tile_cols`, computed by precompiled code for that level) instead of
//! tiles of its own instructions.
//!
//! A micro-kernel computes only one thing, a sum of products of two operands over
//! up to three reduction loops, so the plan accepts a nest
//! `for r { for c [tile] { v = 0.0 (+); for k… { v += a(r, k…) * b(c, k…) }; stmts(v) } }`
//! whose tile Cranelift could run ([`tile_plan`]) and where besides:
//!
//! - the program is f32 (the micro-kernels are f32) with one reduction, a sum;
//! - the innermost reduction loop's one statement adds the product of two loads,
//!   the *row operand* `a`, which does not move with the columns, and the *column
//!   operand* `b`, at unit stride along the columns and not moving with the rows
//!   (matmul's `a[i, k] * b[k, j]`, a convolution's `x_pad[.., i3 + i6] * k_t[.., i1]`);
//! - there are at most three reduction loops, whose ranges use no reduction loop's
//!   index (every step of the tile runs the same loops);
//! - every subscript of both loads is affine in the row, column and reduction loops
//!   with coefficients free of them, so each load's address advances by a fixed
//!   step per iteration of each loop (what the micro-kernel's pointer arithmetic
//!   needs).
//!
//! Everything else of the nest stays the generated code's: the statements after
//! the reduction (the fused epilogue) run on each tile's results, and the cells
//! no whole tile covers run one by one. When the column loop's one statement
//! stores the sum unchanged into an element affine in the row and column loops
//! (`c[i0, i2] = v0`), the plan names that store ([`Contraction::store`]) and the
//! micro-kernel writes its results there itself: there is no epilogue to run.

use crate::index::{Expr, IndexOp};
use crate::loops::analysis::Stride;
use crate::loops::{Access, Loop, LoopProgram, Stmt, Subscript, Value, VarId};
use crate::uop::{Accum, BinaryOp, DType};

use super::tile::tile_plan;
use super::vector::stride;

/// A tile nest a micro-kernel can reduce (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Contraction {
    /// The column loop's carried variable the reduction sums into.
    pub var: VarId,
    /// The load that does not move with the columns (broadcast per row).
    pub row_operand: Access,
    /// The load at unit stride along the columns (packed into the panel).
    pub column_operand: Access,
    /// The column loop's one statement, when it stores the sum unchanged, proven
    /// in range, at subscripts affine in the row and column loops: the
    /// micro-kernel stores its results there.
    pub store: Option<Access>,
}

/// The contraction of the tile nest `loops = [r, c, k…]`, when a micro-kernel can
/// compute its reduction (see the module docs).
pub fn contraction(p: &LoopProgram, loops: &[Loop]) -> Option<Contraction> {
    let [r, c, reduce @ ..] = loops else {
        return None;
    };
    if p.dtype != DType::F32 || reduce.is_empty() || reduce.len() > 3 {
        return None;
    }
    let [(var, Accum::Add)] = tile_plan(p, loops)?[..] else {
        return None;
    };
    let inner: Vec<usize> = reduce.iter().map(|k| k.id.0).collect();
    let free = |e: &Expr| e.indices().iter().all(|i| !inner.contains(i));
    if reduce.iter().any(|k| !free(&k.start) || !free(&k.end)) {
        return None;
    }
    let innermost = reduce.last()?;
    let [
        Stmt::Update {
            value: Value::Binary(BinaryOp::Mul, x, y),
            ..
        },
    ] = &innermost.stmts[..]
    else {
        return None;
    };
    let (Value::Load { access: x, .. }, Value::Load { access: y, .. }) = (&**x, &**y) else {
        return None;
    };
    let nest: Vec<usize> = loops.iter().map(|l| l.id.0).collect();
    let operand = |a: &Access| a.index.iter().all(|s| affine_subscript(s, &nest));
    let row_side = |a: &Access| stride(a, c.id) == Stride::Zero;
    let column_side = |a: &Access| {
        stride(a, c.id) == Stride::Unit && !crate::loops::analysis::access_mentions(a, r.id.0)
    };
    let (row_operand, column_operand) = if row_side(x) && column_side(y) {
        (x, y)
    } else if row_side(y) && column_side(x) {
        (y, x)
    } else {
        return None;
    };
    let store = match &c.stmts[..] {
        [
            Stmt::Store {
                access,
                value: Value::Var(v),
            },
        ] if *v == var
            && !access.checked
            && access.index.iter().all(|s| affine_subscript(s, &nest[..2])) =>
        {
            Some(access.clone())
        }
        _ => None,
    };
    (operand(row_operand) && operand(column_operand)).then(|| Contraction {
        var,
        row_operand: row_operand.clone(),
        column_operand: column_operand.clone(),
        store,
    })
}

/// The nests of block `loops` (outermost first) a JIT runs through a
/// micro-kernel: each as the position of its row loop, the `[r, c, k…]` of
/// [`contraction`] being `loops[position..]`. The JIT asks the same question of
/// the same loops (a `[tile]` column loop with a [`tile_plan`] and a
/// [`contraction`]), so these are the nests whose column operands it packs into
/// its panel.
pub fn contraction_nests(p: &LoopProgram, loops: &[Loop]) -> Vec<usize> {
    (0..loops.len().saturating_sub(1))
        .filter(|&i| {
            loops[i + 1].schedule.tile.is_some()
                && tile_plan(p, &loops[i..]).is_some()
                && contraction(p, &loops[i..]).is_some()
        })
        .collect()
}

fn affine_subscript(s: &Subscript, loops: &[usize]) -> bool {
    match s {
        Subscript::Expr(e) => affine(e, loops),
        Subscript::Value(_) => false,
    }
}

/// True when `e` is affine in every loop of `loops` with coefficients that use
/// none of them: built by `+ -` and by products with a factor free of them, any
/// other operation only on terms free of them.
fn affine(e: &Expr, loops: &[usize]) -> bool {
    let free = |x: &Expr| x.indices().iter().all(|i| !loops.contains(i));
    match e {
        Expr::Index(_) | Expr::Int(_) | Expr::Dim(..) | Expr::Param(_) | Expr::Name(_) => true,
        Expr::Neg(x) => affine(x, loops),
        Expr::Bin(IndexOp::Add | IndexOp::Sub, a, b) => affine(a, loops) && affine(b, loops),
        Expr::Bin(IndexOp::Mul, a, b) => {
            (free(a) && affine(b, loops)) || (free(b) && affine(a, loops))
        }
        Expr::Bin(..) => free(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::parse_program;

    fn nest(text: &str) -> (LoopProgram, Vec<Loop>) {
        let p = parse_program(text).expect("the loop program parses");
        let loops = p.blocks[0].loops.clone();
        (p, loops)
    }

    const MATMUL: &str = "\
input  a: f32[M, K]
input  b: f32[K, N]
output c: f32[M, N]
block 0 {
  for i0 in 0..M {
    for i2 in 0..N [tile] {
      v0 = 0.0 (+)
      for i1 in 0..K {
        v0 += a[i0, i1] * b[i1, i2]
      }
      c[i0, i2] = v0 + 1.0
    } }
}
";

    #[test]
    fn a_matmul_is_a_contraction_of_its_row_and_column_operands() {
        let (p, loops) = nest(MATMUL);
        let k = contraction(&p, &loops).expect("a contraction");
        assert_eq!(k.row_operand.tensor.0, 0);
        assert_eq!(k.column_operand.tensor.0, 1);
        assert_eq!(k.store, None, "the epilogue adds 1.0");
        let swapped = MATMUL.replace("a[i0, i1] * b[i1, i2]", "b[i1, i2] * a[i0, i1]");
        let (p, loops) = nest(&swapped);
        assert_eq!(contraction(&p, &loops), Some(k));
    }

    #[test]
    fn a_convolution_over_three_reduction_loops_is_a_contraction() {
        let (p, loops) = nest(
            "\
input  x: f32[C, H, W]
input  k: f32[C, 3, 3, O]
output y: f32[O, H, W]
block 0 {
  for i2 in 0..H - 2 {
    for i3 in 0..W - 2 {
      for i1 in 0..O [tile] {
        v0 = 0.0 (+)
        for i4 in 0..C {
          for i5 in 0..3 {
            for i6 in 0..3 {
              v0 += x[i4, i2 + i5, i3 + i6] * k[i4, i5, i6, i1]
            } } }
        y[i1, i2, i3] = v0
      } } }
}
",
        );
        let k = contraction(&p, &loops[1..]).expect("a contraction");
        assert_eq!(k.store.map(|a| a.tensor.0), Some(2), "stored unchanged");
    }

    #[test]
    fn the_nests_a_jit_contracts_are_named_by_their_row_loop() {
        let (p, loops) = nest(MATMUL);
        assert_eq!(contraction_nests(&p, &loops), vec![0]);
        let (p, loops) = nest(&MATMUL.replace(" [tile]", ""));
        assert!(contraction_nests(&p, &loops).is_empty(), "no [tile] mark");
        let (p, loops) = nest(&MATMUL.replace("f32", "f64"));
        assert!(
            contraction_nests(&p, &loops).is_empty(),
            "no f64 micro-kernel"
        );
    }

    #[test]
    fn other_reductions_are_left_to_the_generated_tiles() {
        let cases = [
            // f64: no f64 micro-kernel
            MATMUL.replace("f32", "f64"),
            // not a product
            MATMUL.replace("a[i0, i1] * b[i1, i2]", "a[i0, i1] + b[i1, i2]"),
            // a max, not a sum
            MATMUL
                .replace("v0 = 0.0 (+)", "v0 = -inf (max)")
                .replace("v0 +=", "v0 max="),
            // a product of a product
            MATMUL.replace("a[i0, i1] * b[i1, i2]", "a[i0, i1] * b[i1, i2] * 2.0"),
            // the column operand moves with the rows too
            MATMUL
                .replace("b: f32[K, N]", "b: f32[M, N]")
                .replace("b[i1, i2]", "b[i0, i2]"),
            // a subscript not affine in the reduction
            MATMUL.replace("a[i0, i1]", "a[i0, i1 * i1 % K]"),
        ];
        for text in cases {
            let (p, loops) = nest(&text);
            assert_eq!(contraction(&p, &loops), None, "{text}");
        }
    }
}
