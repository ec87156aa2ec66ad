//! The optimizer's interface and its smaller passes: the pipeline and its switches,
//! the analyses' printed form, dead-code elimination, substitution, bounds and
//! cleanup, each on a program small enough to read.

use std::collections::HashMap;

use uop_codegen::compile::{CompileOptions, compile};
use uop_codegen::interp;
use uop_codegen::loops::{self, LoopProgram, TensorKind};
use uop_codegen::pass::{self, Deps, PassError, PassOptions, ShapeGroups};
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{Accum, BinaryOp, Builder, DType, Program, ReduceOp, UnaryOp};

const F32: DType = DType::F32;

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n).map(|k| (k as f64 * 0.9).cos() * 2.5).collect();
    Tensor::new(F32, shape.to_vec(), values).unwrap()
}

/// Runs `lp` and the reference on `inputs` and requires equal outputs.
fn agrees(program: &Program, lp: &LoopProgram, inputs: &[Tensor]) {
    let none = HashMap::new();
    let want = interp::run(program, inputs, &none).unwrap();
    assert_eq!(interp::run_loops(lp, inputs, &none).unwrap(), want, "{lp}");
}

/// `y = neg(exp(x))`, plus a dead branch `sqrt(x)` that is computed but not returned
/// (built by hand below, since `combine` already drops unreachable nodes).
fn chain() -> Program {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let e = b.unary(UnaryOp::Exp, x).unwrap();
    let y = b.unary(UnaryOp::Neg, e).unwrap();
    b.set_name(e, "e").unwrap();
    b.set_name(y, "y").unwrap();
    b.combine(&[x], &[y]).unwrap()
}

#[test]
fn the_pipeline_is_dce_fuse_subst_dce_bounds_cleanup_then_the_schedule() {
    let names: Vec<&str> = pass::pipeline().iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        [
            "dce",
            "fuse",
            "subst",
            "dce",
            "bounds",
            "cleanup",
            "pick",
            "pad",
            "order",
            "channels",
            "tile",
            "pack",
            "pack-rows",
            "transpose",
            "split",
            "jam",
            "chunk",
            "parallel",
            "align",
            "rows",
            "line",
            "share"
        ]
    );
    assert!(pass::pipeline().iter().all(|p| !p.doc.is_empty()));
}

#[test]
fn the_trace_holds_the_program_after_each_pass_that_ran() {
    let lowered = loops::lower(&chain());
    let all = pass::optimize_traced(&lowered, &PassOptions::default()).unwrap();
    assert_eq!(all.len(), 22);
    let opts = PassOptions {
        disabled: vec!["dce".into(), "bounds".into()],
        verify_each_pass: true,
    };
    let some = pass::optimize_traced(&lowered, &opts).unwrap();
    let names: Vec<&str> = some.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "fuse",
            "subst",
            "cleanup",
            "pick",
            "pad",
            "order",
            "channels",
            "tile",
            "pack",
            "pack-rows",
            "transpose",
            "split",
            "jam",
            "chunk",
            "parallel",
            "align",
            "rows",
            "line",
            "share"
        ]
    );
    assert_eq!(
        pass::optimize(&lowered, &opts).unwrap(),
        some.last().unwrap().1
    );
}

#[test]
fn disabling_every_pass_returns_the_program_unchanged() {
    let lowered = loops::lower(&chain());
    let opts = PassOptions {
        disabled: pass::pipeline()
            .iter()
            .map(|p| p.name.to_string())
            .collect(),
        verify_each_pass: true,
    };
    assert_eq!(pass::optimize(&lowered, &opts).unwrap(), lowered);
}

#[test]
fn an_unknown_pass_name_is_an_error_listing_the_valid_ones() {
    let lowered = loops::lower(&chain());
    let opts = PassOptions {
        disabled: vec!["fusion".into()],
        ..PassOptions::default()
    };
    let err = pass::optimize(&lowered, &opts).unwrap_err();
    assert_eq!(
        err,
        PassError::UnknownPass {
            name: "fusion".into(),
            valid: "dce, fuse, subst, bounds, cleanup, pick, pad, order, channels, tile, pack, \
                    pack-rows, transpose, split, jam, chunk, parallel, align, rows, line, share"
                .into()
        }
    );
    assert_eq!(
        err.to_string(),
        "unknown pass `fusion`; the passes are: dce, fuse, subst, bounds, cleanup, pick, pad, \
         order, channels, tile, pack, pack-rows, transpose, split, jam, chunk, parallel, align, rows, \
         line, share"
    );
}

#[test]
fn an_element_wise_chain_becomes_one_expression() {
    let program = chain();
    let out = compile(&program, &CompileOptions::default()).unwrap();
    assert_eq!(
        out.to_string(),
        "input  x: f32[N]\noutput y: f32[N]\nblock 0 {\n  for i0 in 0..N [parallel, chunked, line split] {\n    y[i0] = -exp(x[i0])\n  }\n}\n"
    );
    agrees(&program, &out, &[ramp(&[5])]);
}

#[test]
fn shape_groups_print_the_sizes_known_equal() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N", "C"]).unwrap();
    let w = b.input("w", F32, &["CW", "K"]).unwrap();
    let ww = b
        .reindex(w, &["dA0", "dA1[=dB0]", "dB1"], &[x, w], &["i1", "i2"])
        .unwrap();
    let p = loops::lower(&b.combine(&[x, w], &[ww]).unwrap());
    let groups = ShapeGroups::new(&p);
    assert_eq!(groups.to_string(), "C == CW\n");
    assert!(groups.same(&"CW".parse_expr(), &"C".parse_expr()));
    assert!(!groups.same(&"N".parse_expr(), &"C".parse_expr()));
    let none = loops::lower(&chain());
    assert_eq!(
        ShapeGroups::new(&none).to_string(),
        "(all sizes distinct)\n"
    );
}

/// Parsing helper so the tests read like the expressions they use.
trait ParseExpr {
    fn parse_expr(&self) -> uop_codegen::index::Expr;
}

impl ParseExpr for str {
    fn parse_expr(&self) -> uop_codegen::index::Expr {
        uop_codegen::index::parse_expr(self).unwrap_or_else(|d| panic!("{self}: {d}"))
    }
}

#[test]
fn deps_list_what_each_block_reads_and_writes() {
    let lowered = loops::lower(&chain());
    let deps = Deps::new(&lowered);
    assert_eq!(
        deps.to_string(),
        "block 0: reads x; writes e\nblock 1: reads e; writes y\n"
    );
    let e = lowered.tensors.iter().position(|t| t.name == "e").unwrap();
    assert_eq!(deps.readers[e].iter().copied().collect::<Vec<_>>(), [1]);
    assert_eq!(deps.writers[e].iter().copied().collect::<Vec<_>>(), [0]);
    assert!(deps.blocks[0].conflicts(&deps.blocks[1]));
}

/// A program with a dead statement: `t` is written by a block that also writes the
/// output, and nothing reads `t`.
fn with_dead_store() -> (Program, LoopProgram) {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let t = b.unary(UnaryOp::Sqrt, x).unwrap();
    let y = b.unary(UnaryOp::Exp, x).unwrap();
    b.set_name(t, "t").unwrap();
    b.set_name(y, "y").unwrap();
    let program = b.combine(&[x], &[y, t]).unwrap();
    let mut lp = loops::lower(&program);
    // Drop `t` from the outputs by hand: the block writing it becomes dead.
    lp.outputs.truncate(1);
    let t_id = lp.tensors.iter().position(|d| d.name == "t").unwrap();
    lp.tensors[t_id].kind = TensorKind::Temp;
    let single = {
        let mut b = Builder::new(F32);
        let x = b.input("x", F32, &["N"]).unwrap();
        let y = b.unary(UnaryOp::Exp, x).unwrap();
        b.set_name(y, "y").unwrap();
        b.combine(&[x], &[y]).unwrap()
    };
    (single, lp)
}

#[test]
fn dce_removes_dead_blocks_and_renumbers_the_tensors_left() {
    let (program, lp) = with_dead_store();
    assert_eq!(lp.tensors.len(), 3);
    let out = pass::dce(&lp);
    assert_eq!(out.blocks.len(), 1);
    let names: Vec<&str> = out.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["x", "y"]);
    assert_eq!(out.outputs, [loops::TensorId(1)]);
    agrees(&program, &out, &[ramp(&[4])]);
}

#[test]
fn dce_removes_a_dead_store_inside_a_fused_block_and_its_carried_variable() {
    let (program, lp) = with_dead_store();
    let fused = pass::fuse(&lp);
    assert_eq!(fused.blocks.len(), 1);
    let out = pass::dce(&fused);
    assert_eq!(
        out.to_string(),
        "input  x: f32[N]\noutput y: f32[N]\nblock 0 {\n  for i0 in 0..N {\n    y[i0] = exp(x[i0])\n  }\n}\n"
    );
    agrees(&program, &out, &[ramp(&[4])]);

    // A reduction whose result is dead loses its carried variable and update too.
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N", "M"]).unwrap();
    let s = b.reduce(ReduceOp::Sum, &[1], x).unwrap();
    let y = b.unary(UnaryOp::Neg, x).unwrap();
    let mut lp = loops::lower(&b.combine(&[x], &[y, s]).unwrap());
    lp.outputs.truncate(1);
    let s_id = lp.outputs.len() + 1;
    lp.tensors[s_id].kind = TensorKind::Temp;
    let out = pass::dce(&lp);
    assert_eq!(out.blocks.len(), 1);
    assert!(!out.to_string().contains("v0"), "{out}");
}

#[test]
fn a_temporary_read_in_another_block_is_not_substituted() {
    // Softmax-like: `e` is read by the sum and again by the division later.
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["B", "N"]).unwrap();
    let e = b.unary(UnaryOp::Exp, x).unwrap();
    let s = b.reduce(ReduceOp::Sum, &[1], e).unwrap();
    let sb = b.reindex(s, &["dA0", "dA1"], &[x], &["i0", "0"]).unwrap();
    let y = b.binary(BinaryOp::Div, e, sb).unwrap();
    b.set_name(e, "e").unwrap();
    let program = b.combine(&[x], &[y]).unwrap();
    let out = compile(&program, &CompileOptions::default()).unwrap();
    let temps: Vec<&str> = out
        .tensors
        .iter()
        .filter(|t| t.kind == TensorKind::Temp)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(temps.len(), 2, "{out}");
    assert!(temps.contains(&"e"));
    agrees(&program, &out, &[ramp(&[2, 3])]);
}

#[test]
fn padding_and_a_strided_scatter_keep_their_checks_while_the_padded_temporary_goes() {
    // The padded read `x[i0 - 1]` may fall outside `x` and keeps its fill, but the
    // temporary holding it is stored in range and is substituted. The scatter's
    // target `i0 / 2` over `0..N + 2` cannot be bounded by `2` for all `N`.
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let padded = b.reindex(x, &["dA0 + 2"], &[x], &["i0 - 1"]).unwrap();
    let e = b.unary(UnaryOp::Exp, padded).unwrap();
    let bins = b
        .reindex_reduce(e, &["2"], &[], &["i0 / 2"], Accum::Add)
        .unwrap();
    let program = b.combine(&[x], &[bins]).unwrap();
    let out = compile(&program, &CompileOptions::default()).unwrap();
    let text = out.to_string();
    assert_eq!(
        pass::stats(&out, &HashMap::new(), &HashMap::new()).temporaries,
        0
    );
    assert!(text.contains("exp(x[i"), "{text}");
    assert!(
        text.contains("?? 0.0"),
        "the padding keeps its check:\n{text}"
    );
    assert!(
        text.contains("]? +="),
        "the scatter keeps its check:\n{text}"
    );
    agrees(&program, &out, &[ramp(&[5])]);
}

#[test]
fn an_i32_temporary_is_kept_because_its_store_truncates() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let idx = b.input("idx", DType::I32, &["N"]).unwrap();
    let copy = b.reindex(idx, &["dA0"], &[idx], &["i0"]).unwrap();
    let g = b.select(0, x, copy).unwrap();
    let program = b.combine(&[x, idx], &[g]).unwrap();
    let out = pass::subst(&pass::fuse(&loops::lower(&program)));
    assert!(
        out.tensors
            .iter()
            .any(|t| t.dtype == DType::I32 && t.kind == TensorKind::Temp),
        "{out}"
    );
    let idx_data = Tensor::new(DType::I32, vec![4], vec![3.0, 0.0, 7.0, -1.0]).unwrap();
    agrees(&program, &out, &[ramp(&[4]), idx_data]);
}

#[test]
fn cleanup_removes_loops_that_run_once() {
    // Reducing a [N, 1] column over its second axis loops over `0..1`.
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N", "1"]).unwrap();
    let s = b.reduce(ReduceOp::Max, &[1], x).unwrap();
    b.set_name(s, "s").unwrap();
    let program = b.combine(&[x], &[s]).unwrap();
    let out = pass::cleanup(&loops::lower(&program));
    assert_eq!(out.blocks[0].loops.len(), 1, "{out}");
    assert!(out.to_string().contains("v0 max= x[i0, 0]"), "{out}");
    agrees(&program, &out, &[ramp(&[3, 1])]);
}

/// `row = reduce_sum(where(eq(iota([T, H], 0), t), x, 0), [0])`: row `t` of `x`,
/// as a one-hot sum over the rows.
fn one_hot_row() -> Program {
    let src = "input t: f32[]\ninput x: f32[T, H]\n\
               row = reduce_sum(where(eq(iota([T, H], 0), reindex(t, [T, H], [])), x, 0), [0])\n\
               output row\n";
    uop_codegen::text::parse_program(src, &uop_codegen::text::Registry::new()).unwrap()
}

#[test]
fn pick_runs_a_one_hot_sum_as_the_one_row_it_picks() {
    let program = one_hot_row();
    let fused = pass::subst(&pass::fuse(&loops::lower(&program)));
    let out = pass::pick(&pass::cleanup(&fused));
    let text = out.to_string();
    assert!(
        !text.contains("for i0"),
        "the loop over the rows is gone:\n{text}"
    );
    assert!(text.contains("x[floor(t[]), i1]"), "{text}");
    let x = ramp(&[5, 3]);
    let scalar = |v: f64| Tensor::new(F32, vec![], vec![v]).unwrap();
    // In range, past either end, between two rows, negative zero and NaN: the
    // reference's one-hot sum gives row t, or zeros where no row index equals t.
    for t in [0.0, 2.0, 4.0, 5.0, -1.0, 1.5, -0.0, f64::NAN] {
        agrees(&program, &out, &[scalar(t), x.clone()]);
    }
}

#[test]
fn pick_leaves_a_sum_whose_pick_moves_with_the_loop() {
    // Where the value compared with the index is read at the index itself, no one
    // iteration is picked: the program is left as it was.
    let src = "input x: f32[T, H]\n\
               s = reduce_sum(where(eq(iota([T, H], 0), x), x, 0), [0])\n\
               output s\n";
    let program =
        uop_codegen::text::parse_program(src, &uop_codegen::text::Registry::new()).unwrap();
    let cleaned = pass::cleanup(&loops::lower(&program));
    assert_eq!(pass::pick(&cleaned), cleaned);
}

#[test]
fn stats_count_blocks_loops_and_temporary_bytes() {
    let lowered = loops::lower(&chain());
    let dims: HashMap<String, i64> = [("N".to_string(), 10)].into();
    let none = HashMap::new();
    let before = pass::stats(&lowered, &dims, &none);
    assert_eq!((before.blocks, before.loops, before.temporaries), (2, 2, 1));
    assert_eq!(before.temp_bytes, Some(40));
    assert_eq!(pass::stats(&lowered, &none, &none).temp_bytes, None);
    let after = pass::optimize(&lowered, &PassOptions::default()).unwrap();
    assert_eq!(pass::stats(&after, &dims, &none).temp_bytes, Some(0));
}
