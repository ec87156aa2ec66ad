//! The `.uop` text format as a user sees it: programs parse, print back to text that
//! parses to the very same program, and every mistake is reported with a caret
//! under the token or call it is about.

use std::collections::HashMap;

use proptest::prelude::*;
use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{
    Args, Attrs, ErrorKind, MacroError, Registry, TextError, check_round_trip, parse_program,
    print_program,
};
use uop_codegen::uop::{BinaryOp, Builder, DType, NodeId, Operand, Program, ReduceOp, Uop};

/// Print `p`, parse it back, and require the very same program (NaN constants aside).
/// Random program generators plug in here.
fn assert_round_trip(p: &Program) {
    if let Err(difference) = check_round_trip(p) {
        panic!("round trip failed: {difference}");
    }
}

fn parse(src: &str) -> Program {
    parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("\n{e}\n--- source ---\n{src}"))
}

/// Parses `src`, checks that the program and its printed form round-trip, and returns it.
fn round_trip(src: &str) -> Program {
    let p = parse(src);
    assert_round_trip(&p);
    p
}

fn parse_error(src: &str) -> TextError {
    match parse_program(src, &Registry::new()) {
        Ok(p) => panic!("expected an error, got:\n{}", print_program(&p)),
        Err(e) => e,
    }
}

/// Byte offset of the `n`-th (from 0) occurrence of `needle` in `src`.
fn nth(src: &str, needle: &str, n: usize) -> usize {
    src.match_indices(needle)
        .nth(n)
        .unwrap_or_else(|| panic!("`{needle}` occurs fewer than {} times", n + 1))
        .0
}

fn at(src: &str, needle: &str) -> usize {
    nth(src, needle, 0)
}

/// Checks an error's kind, message and position.
fn assert_error(src: &str, kind: ErrorKind, message: &str, offset: usize) {
    let e = parse_error(src);
    assert_eq!(e.message(), message, "\n{e}");
    assert_eq!(e.offset(), offset, "\n{e}");
    assert_eq!(e.kind, kind, "\n{e}");
    // Rendering never fails and always carries the caret line.
    assert!(e.to_string().ends_with('^'), "{e}");
}

const MATMUL: &str = "\
# matmul written with micro ops
input a: f32[M, K]
input b: f32[K, N]
aa = reindex(a, [M, K, N], [i0, i1])
bb = reindex(b, [M, K, N], [i1, i2])
c  = reduce_sum(mul(aa, bb), [1])
output c
";

const CONV: &str = "\
param kh
param kw
param kc
input x: f32[N, H, W, C]
input w: f32[O, KH, KW, C2]
xx = reindex(x, [dA0, dA1 - $kh + 1, dA2 - $kw + 1, $kh, $kw, dA3, $kc], [i0, i1 + i3, i2 + i4, i5])
ww = reindex(w, [dA0, dA1 - $kh + 1, dA2 - $kw + 1, $kh, $kw, dA3, $kc], [i6, i3, i4, i5], sources=[x])
y = reduce_sum(mul(xx, ww), [3, 4, 5])
output y
";

const CONV_TWO_SOURCES: &str = "\
input x: f32[N, H, W, C]
input w: f32[O, KH, KW, C2]
shape_of_x = reindex(x, [dA0, dA1 - dB1 + 1, dA2 - dB2 + 1, dB1, dB2, dA3[=dB3], dB0], [i0, i1 + i3, i2 + i4, i5], sources=[x, w])
shape_of_w = reindex(w, [dA0, dA1 - dB1 + 1, dA2 - dB2 + 1, dB1, dB2, dA3, dB0], [i6, i3, i4, i5], sources=[x, w])
y = reduce_sum(mul(shape_of_x, shape_of_w), [3, 4, 5])
output y
";

const SOFTMAX: &str = "\
input x: f32[B, N]
m = reduce_max(x, [1])
e = exp(sub(x, reindex(m, [B, N], [i0, 0])))
s = reduce_sum(e, [1])
y = div(e, reindex(s, [B, N], [i0, 0]))
output y
";

mod round_trips {
    use super::*;

    #[test]
    fn every_micro_op() {
        let mut src = String::from(
            "param p\ninput x: f32[N, 4]\ninput idx: i32[N, 2]\n\
             r = reindex(x, [N + 1, 4], [i0 - 1, i1], fill=-1.5)\n\
             rr = reindex_reduce(x, [2, 4], [i0 % 2, i1])\n\
             rx = reindex_reduce(x, [N, 1], [i0, 0], op=\"max\")\n\
             rn = reindex_reduce(x, [1, 4], [0, i1], op=\"min\")\n\
             w = where(gt(x, 0), x, mul(x, 0.01))\n\
             w2 = where(1, $p, x)\n\
             g = select(x, idx, axis=1)\n\
             io = iota([N, 4], 1)\n\
             ci = cast(idx, \"float\")\n\
             cx = cast(x, \"i32\")\n\
             e = exp(x)\n",
        );
        let mut outputs = vec!["r", "rr", "rx", "rn", "w", "w2", "g", "io", "ci", "cx"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        for op in uop_codegen::uop::UnaryOp::ALL {
            src += &format!("u_{op} = {op}(x)\n");
            outputs.push(format!("u_{op}"));
        }
        for op in BinaryOp::ALL {
            src += &format!("b_{op} = {op}(x, e)\nc_{op} = {op}(2, x)\nd_{op} = {op}(x, $p)\n");
            outputs.extend([format!("b_{op}"), format!("c_{op}"), format!("d_{op}")]);
        }
        for op in ReduceOp::ALL {
            src += &format!("red_{op} = reduce_{op}(x, [0, 1])\n");
            outputs.push(format!("red_{op}"));
        }
        src += &format!("output {}\n", outputs.join(", "));
        let p = round_trip(&src);
        assert_eq!(p.outputs.len(), outputs.len());
        let kinds: Vec<&str> = p.nodes.iter().map(|n| n.op.kind()).collect();
        for kind in [
            "reindex",
            "reindex_reduce",
            "where",
            "select",
            "iota",
            "cast",
            "erf",
            "ge",
        ] {
            assert!(kinds.contains(&kind), "{kind}");
        }
    }

    #[test]
    fn nnc_matmul() {
        let p = round_trip(MATMUL);
        let c = p.node(p.outputs[0]);
        assert_eq!(c.name, "c");
        assert_eq!(uop_codegen::index::list(&c.shape), "[M, 1, N]");
    }

    #[test]
    fn nnc_convolution_with_params() {
        let p = round_trip(CONV);
        assert_eq!(p.params, ["kh", "kw", "kc"]);
        let y = p.node(p.outputs[0]);
        assert_eq!(
            uop_codegen::index::list(&y.shape),
            "[N, H - $kh + 1, W - $kw + 1, 1, 1, 1, $kc]"
        );
    }

    #[test]
    fn nnc_convolution_with_two_shape_sources_records_its_assertion() {
        let p = round_trip(CONV_TWO_SOURCES);
        assert_eq!(p.assertions.len(), 1);
        assert!(print_program(&p).contains("\nassert C == C2\n"));
    }

    #[test]
    fn softmax_in_micro_ops() {
        let p = round_trip(SOFTMAX);
        assert_eq!(p.nodes.len(), 8);
    }

    #[test]
    fn a_causal_mask_from_iota() {
        round_trip(
            "input x: f32[T, T]\n\
             row = iota([T, T], 0)\n\
             col = iota([T, T], axis=1)\n\
             y = where(le(col, row), x, -inf)\n\
             output y\n",
        );
    }

    #[test]
    fn f64_programs() {
        let p = round_trip(
            "input x: f64[B, N]\n\
             mean = reindex(reduce_mean(x, [1]), [B, N], [i0, 0])\n\
             d = sub(x, mean)\n\
             var = reduce_mean(mul(d, d), [1])\n\
             y = mul(d, reindex(rsqrt(add(var, 1e-5)), [B, N], [i0, 0]))\n\
             output y\n",
        );
        assert_eq!(p.dtype, DType::F64);
    }

    #[test]
    fn an_f64_program_without_float_inputs_says_so() {
        let p = round_trip("dtype f64\ninput n: i32[N]\ny = iota([N], 0)\noutput y\n");
        assert_eq!(p.dtype, DType::F64);
        assert!(print_program(&p).starts_with("dtype f64\n"));
        let f32_program = round_trip("input n: i32[N]\ny = iota([N], 0)\noutput y\n");
        assert!(!print_program(&f32_program).contains("dtype"));
    }

    #[test]
    fn i32_select() {
        let p = round_trip(
            "input x: f32[B, N]\ninput idx: i32[B, 1]\ng = select(x, idx, axis=1)\noutput g\n",
        );
        assert_eq!(p.node(p.inputs[1]).dtype, DType::I32);
    }

    #[test]
    fn rank_zero_shapes() {
        let p = round_trip(
            "input s: f32[]\ninput v: f32[N]\n\
             total = reindex(reduce_sum(v, [0]), [], [0])\n\
             spread = reindex(s, [N], [])\n\
             y = add(mul(s, total), 2)\n\
             output y, spread\n",
        );
        assert!(p.node(p.outputs[0]).shape.is_empty());
    }

    #[test]
    fn constants_survive_bit_for_bit() {
        let p = round_trip(
            "input x: f64[N]\n\
             a = mul(x, -0.0)\nb = add(a, inf)\nc = add(b, -inf)\nd = mul(c, 5e-324)\n\
             e = mul(d, 1e300)\nf = add(e, 0.1)\ng = add(f, -2.5e-7)\nh = mul(g, 123456789.125)\n\
             n = add(h, nan)\nr = reindex(n, [N + 1], [i0], fill=-0.0)\n\
             output r\n",
        );
        let constants: Vec<f64> = p
            .nodes
            .iter()
            .filter_map(|n| match &n.op {
                Uop::Binary {
                    b: Operand::Const(v),
                    ..
                } => Some(*v),
                _ => None,
            })
            .collect();
        assert_eq!(constants[0].to_bits(), (-0.0f64).to_bits());
        assert_eq!(constants[3], 5e-324);
        assert!(constants[8].is_nan());
        assert!(print_program(&p).contains("fill=-0.0"));
    }

    #[test]
    fn programs_built_with_the_builder() {
        let mut b = Builder::new(DType::F32);
        let a = b.input("a", DType::F32, &["M", "K"]).unwrap();
        let w = b.input("b", DType::F32, &["K", "N"]).unwrap();
        let unused = b.input("unused", DType::F32, &["7"]).unwrap();
        let aa = b
            .reindex(a, &["dA0", "dA1", "dB1"], &[a, w], &["i0", "i1"])
            .unwrap();
        let bb = b
            .reindex(w, &["dA0", "dB0[=dA1]", "dB1"], &[a, w], &["i1", "i2"])
            .unwrap();
        let prod = b.binary(BinaryOp::Mul, aa, bb).unwrap();
        let c = b.reduce(ReduceOp::Sum, &[1], prod).unwrap();
        let m = b
            .binary(BinaryOp::Maximum, Operand::Const(-0.0), c)
            .unwrap();
        let p = b.combine(&[a, w, unused], &[m, prod]).unwrap();
        assert_round_trip(&p);
        assert_eq!(p.unused_inputs().len(), 1);
    }

    #[test]
    fn dead_nodes_are_dropped_and_unused_inputs_kept() {
        let p = round_trip(
            "input x: f32[N]\ninput spare: f32[N]\ndead = exp(x)\ny = neg(x)\noutput y\n",
        );
        let names: Vec<&str> = p.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["x", "spare", "y"]);
        assert_eq!(p.unused_inputs(), [NodeId(1)]);
    }

    #[test]
    fn generated_names_never_clash_with_dimension_names() {
        let p = round_trip("input x: f32[t1]\ny = exp(neg(x))\noutput y\n");
        assert_eq!(p.nodes[1].name, "t1_1");
    }

    #[test]
    fn outputs_keep_their_order_across_lines() {
        let p = round_trip("input x: f32[N]\na = exp(x)\nb = neg(x)\noutput b\noutput x, a\n");
        let names: Vec<&str> = p.outputs.iter().map(|o| p.node(*o).name.as_str()).collect();
        assert_eq!(names, ["b", "x", "a"]);
    }
}

#[test]
fn the_printer_writes_one_line_per_declaration_and_node() {
    let p = parse(CONV);
    assert_eq!(
        print_program(&p),
        "\
param kh
param kw
param kc
input x: f32[N, H, W, C]
input w: f32[O, KH, KW, C2]
xx = reindex(x, [N, H - $kh + 1, W - $kw + 1, $kh, $kw, C, $kc], [i0, i1 + i3, i2 + i4, i5])
ww = reindex(w, [N, H - $kh + 1, W - $kw + 1, $kh, $kw, C, $kc], [i6, i3, i4, i5])
t4 = mul(xx, ww)
y = reduce_sum(t4, [3, 4, 5])
output y
"
    );
}

#[test]
fn a_parsed_matmul_computes_a_matmul() {
    let p = parse(MATMUL);
    let a = Tensor::new(DType::F32, vec![2, 3], vec![1., 2., 3., 4., 5., 6.]).unwrap();
    let b = Tensor::new(DType::F32, vec![3, 1], vec![1., 0., -1.]).unwrap();
    let out = interp::run(&p, &[a, b], &HashMap::new()).unwrap();
    assert_eq!(out[0].shape, [2, 1, 1]);
    assert_eq!(out[0].data, [-2., -2.]);
}

#[test]
fn whitespace_comments_and_line_breaks_inside_calls_are_free() {
    let tidy = parse(MATMUL);
    let messy = parse(
        "  # leading comment\n\ninput a : f32[ M , K ]   # a\ninput b: f32[K,N]\n\
         aa = reindex( a ,\n   [M, K, N],  # shape\n   [i0, i1], )\n\
         bb=reindex(b,[M,K,N],[i1,i2])\nc = reduce_sum(mul(aa,bb),[1])\noutput c",
    );
    assert_eq!(messy, tidy);
}

mod errors {
    use super::*;

    #[test]
    fn a_syntax_error_points_at_the_unexpected_token() {
        let src = "input x: f32[N]\ny = mul(x 2)\noutput y\n";
        assert_error(
            src,
            ErrorKind::Syntax,
            "expected `,` or `)`, found `2)`",
            at(src, "2)"),
        );
        let src = "input x: f32[N]\ny = reindex(x, [N], [i0 * ])\noutput y\n";
        assert_error(
            src,
            ErrorKind::Syntax,
            "expected a number, index, dimension, $param or `(`, found `])`",
            at(src, "])"),
        );
    }

    #[test]
    fn the_rendered_error_shows_the_line_and_a_caret() {
        let e = parse_error("input x: f32[N]\ny = expp(x)\noutput y\n");
        assert_eq!(
            e.to_string(),
            "unknown op `expp` (did you mean `exp`?) (line 2, column 5)\n  |\n2 | y = expp(x)\n  |     ^"
        );
    }

    #[test]
    fn an_unknown_op_is_reported_at_its_name() {
        let src = "input x: f32[N]\ny = exp(softmax(x))\noutput y\n";
        assert_error(
            src,
            ErrorKind::UnknownOp,
            "unknown op `softmax`",
            at(src, "softmax"),
        );
    }

    #[test]
    fn an_unknown_name_is_reported_at_the_name() {
        let src = "input x: f32[N]\ny = add(x, z)\noutput y\n";
        assert_error(
            src,
            ErrorKind::UnknownName,
            "unknown name `z`",
            at(src, "z)"),
        );
        let src = "input xs: f32[N]\ny = exp(xz)\noutput y\n";
        assert_error(
            src,
            ErrorKind::UnknownName,
            "unknown name `xz` (did you mean `xs`?)",
            at(src, "xz"),
        );
        let src = "input x: f32[N]\noutput q\n";
        assert_error(
            src,
            ErrorKind::UnknownName,
            "unknown name `q`",
            at(src, "q"),
        );
        let src = "input x: f32[N]\ny = exp(N)\noutput y\n";
        assert_error(
            src,
            ErrorKind::UnknownName,
            "`N` is a dimension, not a tensor",
            at(src, "N)"),
        );
    }

    #[test]
    fn an_unknown_dimension_in_a_list_is_reported_at_it() {
        let src = "input x: f32[N]\ny = reindex(x, [N, Q], [i0])\noutput y\n";
        assert_error(
            src,
            ErrorKind::Build,
            "reindex: `Q` is not a dimension of any input",
            at(src, "Q]"),
        );
        let src = "input x: f32[N]\ny = reindex(x, [N], [i3])\noutput y\n";
        assert_error(
            src,
            ErrorKind::Build,
            "reindex: `i3` is out of range: the iteration space has rank 1",
            at(src, "i3"),
        );
    }

    #[test]
    fn duplicate_and_reserved_names_are_reported_at_the_second_definition() {
        let src = "input x: f32[N]\ny = exp(x)\ny = neg(x)\noutput y\n";
        assert_error(
            src,
            ErrorKind::BadName,
            "`y` is already defined on line 2",
            nth(src, "y =", 1),
        );
        let src = "input x: f32[N]\nx = exp(x)\noutput x\n";
        assert_error(
            src,
            ErrorKind::BadName,
            "`x` is already defined on line 1",
            nth(src, "x", 1),
        );
        let src = "input x: f32[N]\nN = exp(x)\noutput N\n";
        assert_error(
            src,
            ErrorKind::BadName,
            "`N` is a dimension of an input and cannot also name a tensor",
            at(src, "N ="),
        );
        let src = "input x: f32[N]\nexp = exp(x)\noutput exp\n";
        assert_error(
            src,
            ErrorKind::BadName,
            "`exp` is a micro op and cannot name a tensor",
            at(src, "exp ="),
        );
        let src = "input x: f32[N]\ninf = exp(x)\noutput inf\n";
        assert_error(
            src,
            ErrorKind::BadName,
            "`inf` is a reserved word and cannot name a tensor",
            at(src, "inf ="),
        );
        let src = "input x: f32[N]\ninput y: f32[x]\noutput y\n";
        assert_error(
            src,
            ErrorKind::BadName,
            "`x` is a tensor and cannot also be a dimension name",
            at(src, "x]"),
        );
        let src = "param k\nparam k\ninput x: f32[N]\noutput x\n";
        assert_error(
            src,
            ErrorKind::BadName,
            "parameter `$k` is declared twice",
            nth(src, "k", 1),
        );
    }

    #[test]
    fn wrong_arity_is_reported_at_the_extra_argument_or_the_call() {
        let src = "input x: f32[N]\ny = exp(x, x)\noutput y\n";
        assert_error(
            src,
            ErrorKind::Arguments,
            "exp: unexpected argument 2: `exp` takes 1 positional argument (usage: exp(x))",
            at(src, "x)"),
        );
        let src = "input x: f32[N]\ny = mul(x)\noutput y\n";
        assert_error(
            src,
            ErrorKind::Arguments,
            "mul: argument 2 is missing (1 given) (usage: mul(a, b))",
            at(src, "mul"),
        );
    }

    #[test]
    fn a_bad_attribute_is_reported_at_the_attribute() {
        let src = "input x: f32[N]\ny = reindex(x, [N], [i0], fil=1)\noutput y\n";
        assert_error(
            src,
            ErrorKind::Arguments,
            "reindex: unknown attribute `fil` (usage: reindex(x, [shape], [index], fill=0, sources=[x]))",
            at(src, "fil="),
        );
        let src = "input x: f32[N]\ny = reindex(x, [N], [i0], fill=\"zero\")\noutput y\n";
        assert_error(
            src,
            ErrorKind::Arguments,
            "reindex: attribute `fill` must be a number, found the string \"zero\" \
             (usage: reindex(x, [shape], [index], fill=0, sources=[x]))",
            at(src, "\"zero\""),
        );
        let src = "input x: f32[N]\ny = reindex_reduce(x, [N], [i0], op=\"mul\")\noutput y\n";
        assert_error(
            src,
            ErrorKind::Arguments,
            "reindex_reduce: op must be \"add\", \"max\" or \"min\", found \"mul\" \
             (usage: reindex_reduce(x, [shape], [index], op=\"add\", sources=[x]))",
            at(src, "\"mul\""),
        );
        let src = "input x: f32[N, M]\ny = reduce_sum(x, [2])\noutput y\n";
        assert_error(
            src,
            ErrorKind::Arguments,
            "reduce_sum: argument 2: axis 2 is out of range for a tensor of rank 2 \
             (usage: reduce_sum(x, [axes]))",
            at(src, "2]"),
        );
        let src = "input x: f32[N]\ny = exp(x, axis=0, axis=1)\noutput y\n";
        assert_error(
            src,
            ErrorKind::Arguments,
            "exp: attribute `axis` is given twice",
            nth(src, "axis", 1),
        );
    }

    #[test]
    fn a_shape_mismatch_is_reported_at_the_call() {
        let src = "input a: f32[2, 3]\ninput b: f32[4, 3]\nc = add(a, b)\noutput c\n";
        assert_error(
            src,
            ErrorKind::Build,
            "add: shapes [2, 3] and [4, 3] do not broadcast (2 vs 4)",
            at(src, "add"),
        );
    }

    /// Element-wise ops broadcast numpy-style with the micro ops alone, as they do
    /// with the macro-op registry: one meaning of `add` whatever the registry.
    #[test]
    fn element_wise_ops_broadcast_in_every_registry() {
        let src = "input x: f32[B, N]\ninput b: f32[N]\ninput c: f32[B, 1]\n\
                   y = add(x, b)\nz = where(c, y, b)\nw = maximum(z, c)\noutput w\n";
        let micro = parse_program(src, &Registry::new()).expect("broadcasts");
        let printed = print_program(&micro);
        assert!(printed.contains("reindex(b, [B, N], [i1])"), "{printed}");
        assert!(printed.contains("reindex(c, [B, N], [i0, 0])"), "{printed}");
        let again = parse_program(&printed, &Registry::new()).expect("parses back");
        assert_eq!(print_program(&again), printed);
    }

    #[test]
    fn a_repeated_reduce_axis_is_reported_at_the_axes() {
        let src = "input x: f32[N, M]\ny = reduce_max(x, [1, 1])\noutput y\n";
        assert_error(
            src,
            ErrorKind::Build,
            "reduce_max: axis 1 is listed more than once",
            at(src, "[1, 1]"),
        );
    }

    #[test]
    fn an_undeclared_param_is_reported_where_it_is_used() {
        let src = "input x: f32[N]\ny = mul(x, $s)\noutput y\n";
        assert_error(
            src,
            ErrorKind::UnknownName,
            "parameter `$s` is not declared (add a line `param s`)",
            at(src, "$s"),
        );
        let src = "param k\ninput x: f32[N]\ny = reindex(x, [N - $k + $kk], [i0])\noutput y\n";
        assert_error(
            src,
            ErrorKind::UnknownName,
            "parameter `$kk` is not declared (add a line `param kk`)",
            at(src, "$kk"),
        );
        let src = "input x: f32[N]\nassert N == $k\noutput x\n";
        assert_eq!(parse_error(src).offset(), at(src, "$k"));
    }

    #[test]
    fn mixed_float_inputs_are_reported_at_the_second_type() {
        let src = "input a: f32[N]\ninput b: f64[N]\nc = add(a, b)\noutput c\n";
        assert_error(
            src,
            ErrorKind::DType,
            "input `b` is f64, but input `a` is f32: a program has one float type",
            at(src, "f64"),
        );
    }

    #[test]
    fn a_float_op_on_an_index_tensor_is_reported_at_the_call() {
        let src = "input x: f32[N]\ninput idx: i32[N]\ny = exp(idx)\noutput y\n";
        assert_error(
            src,
            ErrorKind::DType,
            "exp: the operand (`idx`) must be f32, found i32",
            at(src, "exp"),
        );
    }

    #[test]
    fn a_program_needs_an_output() {
        let src = "input x: f32[N]\ny = exp(x)\n";
        assert_error(
            src,
            ErrorKind::Program,
            "the program has no outputs (add a line `output name`)",
            src.len() - 1,
        );
        let src = "input x: f32[N]\noutput x, x\n";
        assert_error(
            src,
            ErrorKind::Program,
            "`x` is already an output",
            nth(src, "x", 2),
        );
    }
}

mod macro_ops {
    use super::*;

    /// What a macro op names the nodes it makes (issue 16): a hint names a node nobody
    /// named, unique (`sum`, `sum_1`), never a micro op (`exp`) or a dimension (`N`);
    /// the first hint stays, a given name wins, and the program prints and parses back.
    #[test]
    fn name_hints_name_unnamed_nodes_uniquely_without_taking_reserved_names() {
        let mut b = Builder::new(DType::F32);
        let x = b.input("x", DType::F32, &["N"]).unwrap();
        let e1 = b.unary(uop_codegen::uop::UnaryOp::Exp, x).unwrap();
        b.name_hint(e1, "exp").unwrap();
        let s1 = b.reduce(ReduceOp::Sum, &[0], e1).unwrap();
        b.name_hint(s1, "sum").unwrap();
        b.name_hint(s1, "total").unwrap();
        let e2 = b.unary(uop_codegen::uop::UnaryOp::Neg, x).unwrap();
        let s2 = b.reduce(ReduceOp::Sum, &[0], e2).unwrap();
        b.name_hint(s2, "sum").unwrap();
        let n = b.unary(uop_codegen::uop::UnaryOp::Abs, x).unwrap();
        b.name_hint(n, "N").unwrap();
        let y = b.binary(BinaryOp::Add, s1, s2).unwrap();
        b.name_hint(y, "both").unwrap();
        b.set_name(y, "y").unwrap();
        b.name_hint(x, "input_hint").unwrap();
        assert!(b.name_hint(x, "2x").is_err(), "not an identifier");
        let p = b.combine(&[x], &[y, n]).unwrap();
        let names: Vec<&str> = p.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["x", "exp_1", "sum", "t3", "sum_1", "N_1", "y"]);
        let text = print_program(&p);
        let back = parse_program(&text, &Registry::new()).unwrap();
        assert_eq!(print_program(&back), text);
    }

    /// softmax along `axis` (default: the last), written against the registry API.
    fn softmax(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
        let x = args.node(0)?;
        let rank = b.shape(x).len();
        let axis = attrs.axis_or("axis", rank, -1)?;
        let m = b.reduce(ReduceOp::Max, &[axis], x)?;
        let shape: Vec<_> = b.shape(x).to_vec();
        let index: Vec<_> = (0..rank)
            .map(|k| {
                if k == axis {
                    0.into()
                } else {
                    uop_codegen::index::Expr::index(k)
                }
            })
            .collect();
        let mb = b.reindex_exprs(m, shape.clone(), &[], index.clone(), 0.0)?;
        let e = b.binary(BinaryOp::Sub, x, mb)?;
        let e = b.unary(uop_codegen::uop::UnaryOp::Exp, e)?;
        let s = b.reduce(ReduceOp::Sum, &[axis], e)?;
        let sb = b.reindex_exprs(s, shape, &[], index, 0.0)?;
        Ok(b.binary(BinaryOp::Div, e, sb)?)
    }

    fn identity(_: &mut Builder, args: &Args, _: &Attrs) -> Result<NodeId, MacroError> {
        args.node(0)
    }

    fn refuse(_: &mut Builder, _: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
        if attrs.bool_or("politely", false)? {
            return Err(attrs.error("politely", "no, thank you"));
        }
        Err(MacroError::new("this op never builds anything"))
    }

    fn registry() -> Registry {
        let mut r = Registry::new();
        r.register(
            "softmax",
            "softmax(x, axis=-1)",
            "exp(x) / sum(exp(x)) along axis",
            softmax,
        );
        r.register("identity", "identity(x)", "x itself", identity);
        r.register("refuse", "refuse(politely=false)", "always fails", refuse);
        r
    }

    fn parse_with(src: &str) -> Result<Program, TextError> {
        parse_program(src, &registry())
    }

    #[test]
    fn a_macro_op_builds_micro_ops_that_print_and_round_trip() {
        let p = parse_with("input x: f32[B, N]\ny = softmax(x, axis=1)\noutput y\n").unwrap();
        assert_eq!(p, parse(SOFTMAX_AS_PRINTED));
        assert_round_trip(&p);
        let default_axis = parse_with("input x: f32[B, N]\ny = softmax(x)\noutput y\n").unwrap();
        assert_eq!(default_axis, p);
    }

    const SOFTMAX_AS_PRINTED: &str = "\
input x: f32[B, N]
t1 = reduce_max(x, [1])
t2 = reindex(t1, [B, N], [i0, 0])
t3 = sub(x, t2)
t4 = exp(t3)
t5 = reduce_sum(t4, [1])
t6 = reindex(t5, [B, N], [i0, 0])
y = div(t4, t6)
output y
";

    #[test]
    fn a_macro_op_returning_an_existing_tensor_makes_an_alias() {
        let p = parse_with("input x: f32[N]\ny = identity(x)\nz = exp(y)\noutput z, y\n").unwrap();
        let names: Vec<&str> = p.outputs.iter().map(|o| p.node(*o).name.as_str()).collect();
        assert_eq!(names, ["z", "x"]);
    }

    #[test]
    fn macro_errors_point_at_the_call_or_the_attribute() {
        let src = "input x: f32[N]\ny = exp(refuse())\noutput y\n";
        let e = parse_with(src).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Macro);
        assert_eq!(e.message(), "refuse: this op never builds anything");
        assert_eq!(e.offset(), at(src, "refuse"));

        let src = "input x: f32[N]\ny = refuse(politely=true)\noutput y\n";
        let e = parse_with(src).unwrap_err();
        assert_eq!(
            e.message(),
            "refuse: no, thank you (usage: refuse(politely=false))"
        );
        assert_eq!(e.offset(), at(src, "true"));
    }

    #[test]
    fn macro_argument_errors_show_the_usage() {
        let src = "input x: f32[B, N]\ny = softmax(x, axis=2)\noutput y\n";
        let e = parse_with(src).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Arguments);
        assert_eq!(
            e.message(),
            "softmax: attribute `axis`: axis 2 is out of range for a tensor of rank 2 \
             (usage: softmax(x, axis=-1))"
        );
        assert_eq!(e.offset(), at(src, "2)"));

        let src = "input x: f32[B, N]\ny = softmax(x, axsi=1)\noutput y\n";
        let e = parse_with(src).unwrap_err();
        assert_eq!(
            e.message(),
            "softmax: unknown attribute `axsi` (usage: softmax(x, axis=-1))"
        );
        assert_eq!(e.offset(), at(src, "axsi"));

        let src = "input x: f32[B, N]\ny = softmax(1.5)\noutput y\n";
        let e = parse_with(src).unwrap_err();
        assert_eq!(
            e.message(),
            "softmax: argument 1 must be a tensor, found the number 1.5 (usage: softmax(x, axis=-1))"
        );
        assert_eq!(e.offset(), at(src, "1.5"));
    }

    #[test]
    fn builder_errors_inside_a_macro_op_name_the_op() {
        let src = "input x: i32[B, N]\ny = softmax(x)\noutput y\n";
        let e = parse_with(src).unwrap_err();
        assert_eq!(e.kind, ErrorKind::DType);
        assert_eq!(
            e.message(),
            "softmax: reduce_max: the operand (`x`) must be f32, found i32"
        );
        assert_eq!(e.offset(), at(src, "softmax"));
    }

    #[test]
    fn the_registry_lists_its_ops_for_help_output() {
        let r = registry();
        let listing: Vec<String> = r
            .iter()
            .map(|op| format!("{}: {}", op.signature, op.doc))
            .collect();
        assert_eq!(
            listing[2],
            "softmax(x, axis=-1): exp(x) / sum(exp(x)) along axis"
        );
        assert!(
            uop_codegen::text::micro_ops()
                .iter()
                .any(|op| op.name == "reindex_reduce")
        );
    }
}

/// Lines of valid programs, to corrupt.
const CORPUS: &[&str] = &[MATMUL, CONV, CONV_TWO_SOURCES, SOFTMAX];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_parser_never_panics_on_arbitrary_text(src in "\\PC{0,120}") {
        if let Err(e) = parse_program(&src, &Registry::new()) {
            let _ = e.to_string();
        }
    }

    #[test]
    fn the_parser_never_panics_on_near_misses(
        src in "[a-z0-9_$ ,:=()\\[\\]\"#.+\\-*/%\n]{0,80}",
    ) {
        let src = format!("param k\ninput x: f32[N, M]\n{src}");
        if let Err(e) = parse_program(&src, &Registry::new()) {
            let _ = e.to_string();
        }
    }

    #[test]
    fn the_parser_never_panics_on_corrupted_programs(
        which in 0..CORPUS.len(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0..4u8, "[\\PC\n]"), 1..6),
    ) {
        let mut chars: Vec<char> = CORPUS[which].chars().collect();
        for (position, action, text) in edits {
            let k = position.index(chars.len() + 1);
            match action {
                0 if k < chars.len() => { chars.remove(k); }
                1 => { chars.splice(k..k, text.chars()); }
                2 if k < chars.len() => { chars.truncate(k); }
                _ if k < chars.len() => { chars[k] = text.chars().next().unwrap_or(' '); }
                _ => {}
            }
        }
        let src: String = chars.into_iter().collect();
        match parse_program(&src, &Registry::new()) {
            // Whatever still parses must still round-trip.
            Ok(p) => prop_assert_eq!(check_round_trip(&p), Ok(())),
            Err(e) => {
                let (line, column) = e.line_col();
                prop_assert!(line >= 1 && column >= 1);
                prop_assert!(e.offset() <= src.len());
                let _ = e.to_string();
            }
        }
    }
}
