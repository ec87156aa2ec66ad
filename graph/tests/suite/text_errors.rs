//! Errors in graph text: each kind with its message, line and column (a caret
//! diagnostic, as for programs).

use uop_codegen::text::ErrorKind;
use uop_graph::default_registry;
use uop_graph::text::parse_graph;

/// The error of `src`: kind, message, line, column.
fn error(src: &str) -> (ErrorKind, String, usize, usize) {
    let e = parse_graph(src, default_registry()).expect_err(src);
    let (line, col) = e.line_col();
    (e.kind, e.message(), line, col)
}

const HEAD: &str = "input x: f32[N]\ninput s: f32[]\n";

fn with_head(body: &str) -> String {
    format!("{HEAD}{body}")
}

fn check(body: &str, kind: ErrorKind, message: &str, line: usize, col: usize) {
    let src = with_head(body);
    assert_eq!(error(&src), (kind, message.to_string(), line, col), "{src}");
}

#[test]
fn names_ops_and_functions_must_exist() {
    check(
        "y = exp(xx)\noutput y",
        ErrorKind::UnknownName,
        "unknown name `xx` (did you mean `x`?)",
        3,
        9,
    );
    check(
        "y = expp(x)\noutput y",
        ErrorKind::UnknownOp,
        "unknown op or function `expp` (did you mean `exp`?)",
        3,
        5,
    );
    check(
        "fn twice(v) { return mul(v, 2) }\nz = call(twise, x)\noutput z",
        ErrorKind::UnknownName,
        "unknown function `twise` (did you mean `twice`?)",
        4,
        10,
    );
    check(
        "z = call(x, x)\noutput z",
        ErrorKind::UnknownName,
        "`x` is a value, not a function",
        3,
        10,
    );
    check(
        "y = mul(x, $k)\noutput y",
        ErrorKind::UnknownName,
        "parameter `$k` is not declared (add a line `param k`)",
        3,
        12,
    );
    // A function sees only what is defined before it.
    check(
        "fn f(v) { return mul(v, later) }\nlater = exp(x)\ny = f(x)\noutput y",
        ErrorKind::UnknownName,
        "unknown name `later`",
        3,
        25,
    );
}

#[test]
fn errors_inside_a_sub_function_point_into_its_body() {
    check(
        "fn c(v) { return lt(v, 1) }\nfn b(v) {\n  w = expp(v)\n  return w\n}\ny = while(c, b, s)\noutput y",
        ErrorKind::UnknownOp,
        "unknown op or function `expp` (did you mean `exp`?)",
        5,
        7,
    );
}

#[test]
fn a_function_cannot_call_itself() {
    check(
        "fn f(v) { return f(v) }\ny = f(x)\noutput y",
        ErrorKind::UnknownOp,
        "function `f` calls itself (a function cannot call itself; loop with `while`)",
        3,
        18,
    );
}

#[test]
fn while_bodies_return_the_state_and_conditions_one_value() {
    check(
        "fn c(v) { return lt(v, 1) }\nfn b(v) { return mul(x, v) }\ny = while(c, b, s)\noutput y",
        ErrorKind::Build,
        "while: the body's results (the state): expected (f32[]), found (f32[N])",
        5,
        14,
    );
    check(
        "fn c(v) { return v }\nfn b(v) { return v }\ny = while(c, b, x)\noutput y",
        ErrorKind::Build,
        "while: the condition must return one value, found (f32[N])",
        5,
        11,
    );
}

#[test]
fn selectors_are_one_value_and_branches_share_a_signature() {
    check(
        "fn b(v) { return v }\ny = case(x, [b], s)\noutput y",
        ErrorKind::Build,
        "case: the selector must be one value, found f32[N]",
        4,
        10,
    );
    check(
        "fn a(v) { return v }\nfn b(v) { return exp(x) }\ny = if(s, a, b, s)\noutput y",
        ErrorKind::Build,
        "if: branch 1 returns (f32[N]), but branch 0 returns (f32[])",
        5,
        14,
    );
    check(
        "fn a(v) { return v }\nfn b(v) { return exp(x) }\ny = case(s, [a, b], s)\noutput y",
        ErrorKind::Build,
        "case: branch 1 returns (f32[N]), but branch 0 returns (f32[])",
        5,
        17,
    );
}

#[test]
fn parameters_match_their_arguments() {
    check(
        "fn f(v: f32[M]) { return v }\ny = f(x)\noutput y",
        ErrorKind::Arguments,
        "parameter `v` of `f` is declared f32[M], but the call gives it f32[N]",
        4,
        7,
    );
    check(
        "fn c(v, i: f32[N]) { return lt(i, 5) }\nfn b(v, i) { return v, i }\ny, n = while(c, b, s, 0)\noutput y",
        ErrorKind::Arguments,
        "parameter `i` of `c` is declared f32[N], but `while` gives it f32[]",
        5,
        23,
    );
    check(
        "fn f(v, w) { return v }\nz = f(x)\noutput z",
        ErrorKind::Arguments,
        "function `f` takes 2 parameters, but the call gives it 1 value",
        4,
        5,
    );
    check(
        "fn b(v) { return v }\ny = parallel(N, b, x)\noutput y",
        ErrorKind::Arguments,
        "the body of `parallel` takes the iteration index first: `fn b($i, ...)`",
        4,
        17,
    );
}

#[test]
fn bodies_are_closed_and_end_with_return() {
    check(
        "fn f(v) {\n  return v\noutput x",
        ErrorKind::Syntax,
        "unclosed `{` of function `f` (expected `}`)",
        3,
        9,
    );
    check(
        "fn f(v) { y = exp(v) }\nz = f(x)\noutput z",
        ErrorKind::Syntax,
        "function `f` has no `return` (end its body with `return ...`)",
        3,
        22,
    );
    check(
        "return x",
        ErrorKind::Syntax,
        "`return` outside a function",
        3,
        1,
    );
    check(
        "fn f(v) { return v; y = exp(v) }\nz = f(x)\noutput z",
        ErrorKind::Syntax,
        "`return` must be the last statement of a function's body",
        3,
        11,
    );
    check(
        "fn f(v) {\n  input q: f32[N]\n  return v\n}\nz = f(x)\noutput z",
        ErrorKind::Program,
        "`input` lines belong at the top level, not in a function",
        4,
        9,
    );
}

#[test]
fn names_on_the_left_are_new_and_as_many_as_the_results() {
    check(
        "a, b = exp(x)\noutput a",
        ErrorKind::Arguments,
        "`exp` gives 1 result, but 2 names are on the left of `=`",
        3,
        1,
    );
    check(
        "y = exp(x)\ny = exp(y)\noutput y",
        ErrorKind::BadName,
        "`y` is already defined on line 3",
        4,
        1,
    );
    check(
        "N = exp(x)\noutput N",
        ErrorKind::BadName,
        "`N` is a dimension of an input and cannot also name a value",
        3,
        1,
    );
    check(
        "fn exp(v) { return v }\noutput x",
        ErrorKind::BadName,
        "`exp` is a micro op and cannot name a function",
        3,
        4,
    );
    check(
        "y = exp(while(c, b, x))\noutput y",
        ErrorKind::Syntax,
        "`while(...)` must be the whole right side of a statement: `a = while(...)`",
        3,
        9,
    );
}

#[test]
fn op_errors_point_at_the_argument_the_op_names() {
    check(
        "y = exp(x, 2)\noutput y",
        ErrorKind::Arguments,
        "exp: unexpected argument 2: `exp` takes 1 positional argument (usage: exp(x))",
        3,
        12,
    );
    check(
        "y = reduce_sum(x, [3])\noutput y",
        ErrorKind::Arguments,
        "reduce_sum: argument 2: axis 3 is out of range for a tensor of rank 1 (usage: reduce_sum(x, [axes]))",
        3,
        20,
    );
    check(
        "y = softmax(x, axiz=0)\noutput y",
        ErrorKind::Arguments,
        "softmax: unknown attribute `axiz` (usage: softmax(x, axis=-1))",
        3,
        16,
    );
    // Inside a function body, the position is the body's.
    check(
        "fn f(v) {\n  return reindex(v, [N], [i3])\n}\ny = f(x)\noutput y",
        ErrorKind::Build,
        "reindex: `i3` is out of range: the iteration space has rank 1",
        4,
        27,
    );
}

#[test]
fn the_diagnostic_has_a_caret() {
    let src = with_head("y = expp(x)\noutput y");
    let e = parse_graph(&src, default_registry()).expect_err("unknown op");
    assert_eq!(
        e.to_string(),
        "unknown op or function `expp` (did you mean `exp`?) (line 3, column 5)\n  |\n3 | y = expp(x)\n  |     ^"
    );
}

#[test]
fn errors_of_issue_40_point_at_the_users_text() {
    let err = |src: &str| {
        uop_graph::text::parse_graph(src, uop_graph::default_registry())
            .expect_err(src)
            .message()
    };
    // A word of the graph language gets no "did you mean".
    assert_eq!(
        err("input x: f32[4]\ny = sink(x)\noutput y"),
        "`sink(...)` gives no result: write it as a statement of its own, `sink(a, b)`"
    );
    assert_eq!(
        err("input x: f32[4]\ny = return(x)\noutput y"),
        "`return` is a reserved word of graph text, not an op or a function"
    );
    // A float index is refused, not floored.
    assert_eq!(
        err("input x: f32[4]\ninput i: f32[4]\ny = select(x, i, axis=0)\noutput y"),
        "select: the index must be i32 (an i32 input or `const(i32, ...)`), found f32: a float \
         index would be floored silently"
    );
    // Names index expressions reserve are named as reserved.
    for dim in ["i0", "dA0", "min"] {
        let m = err(&format!("input x: f32[{dim}]\noutput x"));
        assert!(
            m.contains("a dimension name that index expressions do not reserve"),
            "{m}"
        );
    }
    // Which files are graph files: the graph parser's error is the one reported.
    use uop_graph::text::uses_graph_syntax;
    assert!(uses_graph_syntax(
        "input x: f32[]\ns = lt(x, 0)\nr = case(s, [], x)\noutput r"
    ));
    assert!(uses_graph_syntax(
        "input x: f32[4]\ny = chunk(x, size=2)\noutput y"
    ));
    assert!(uses_graph_syntax(
        "input x: f32[4]\ny = exp(x); output y, 1.0"
    ));
    assert!(!uses_graph_syntax("input x: f32[4]\ny = bad(x)\noutput y"));
}

#[test]
fn op_errors_name_the_arguments_as_written() {
    let err = |body: &str| {
        let src = format!("input x: f32[4]\ninput i: i32[4]\n{body}\noutput y");
        uop_graph::text::parse_graph(&src, uop_graph::default_registry())
            .expect_err(&src)
            .message()
    };
    assert_eq!(
        err("y = add(x, i)"),
        "add: an operand (`i`) must be f32, found i32"
    );
    assert_eq!(
        err("y = exp(i)"),
        "exp: the operand (`i`) must be f32, found i32"
    );
    assert_eq!(
        err("y = exp(add(i, i))"),
        "add: an operand (`i`) must be f32, found i32"
    );
    assert_eq!(
        err("y = where(i, x, x)"),
        "where: an operand (`i`) must be f32, found i32"
    );
}
