//! The loop IR as text: the parser reads back what the printer writes, at every
//! stage of the pipeline, for the example programs and random programs; its errors
//! name the line and column. (The pass files under `tests/passes/` are run by
//! `pass_files.rs`.)

use std::collections::HashMap;
use std::path::Path;

use uop_codegen::interp;
use uop_codegen::loops::{self, LoopProgram, parse_program};
use uop_codegen::pass::{self, PassOptions};
use uop_codegen::tensor::Tensor;
use uop_codegen::testing::{GenConfig, random_case, random_program};
use uop_codegen::text::Registry;
use uop_codegen::uop::{DType, Program};

use crate::common;
use common::same_bits;

/// Requires `print(parse(print(p))) == print(p)`.
fn round_trips(what: &str, p: &LoopProgram) -> LoopProgram {
    let text = p.to_string();
    let parsed = parse_program(&text).unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
    if let Err(e) = loops::verify(&parsed) {
        panic!("{what}: {e}\n{text}");
    }
    assert_eq!(parsed.to_string(), text, "{what}: printed back differently");
    parsed
}

/// The lowered program and the program after every pass of the pipeline.
fn every_stage(program: &Program) -> Vec<(&'static str, LoopProgram)> {
    let lowered = loops::lower(program);
    let mut stages = vec![("loops", lowered.clone())];
    stages.extend(pass::optimize_traced(&lowered, &PassOptions::default()).expect("options"));
    stages
}

fn example_programs() -> Vec<(String, Program)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/programs");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/programs exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "uop"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let src = std::fs::read_to_string(&path).expect("readable");
        // Programs calling macro ops are round-tripped by the root crate's
        // `compile_driver` test, which has the macro-op registry.
        if let Ok(p) = uop_codegen::text::parse_program(&src, &Registry::new()) {
            out.push((path.display().to_string(), p));
        }
    }
    assert!(out.len() >= 5, "the examples are found");
    out
}

#[test]
fn example_programs_print_back_identically_at_every_stage() {
    for (name, program) in example_programs() {
        for (stage, p) in every_stage(&program) {
            round_trips(&format!("{name} after {stage}"), &p);
        }
    }
}

/// How many random programs per configuration (more with `UOP_LOOP_TEXT_SWEEP=n`).
fn sweep() -> u64 {
    std::env::var("UOP_LOOP_TEXT_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

#[test]
fn random_programs_print_back_identically_at_every_stage_and_run_the_same() {
    let configs = [
        GenConfig::default(),
        GenConfig {
            dtype: DType::F64,
            allow_params: false,
            ..GenConfig::default()
        },
        GenConfig {
            max_nodes: 24,
            max_rank: 4,
            ..GenConfig::default()
        },
    ];
    for (k, cfg) in configs.iter().enumerate() {
        for seed in 0..sweep() {
            let program = random_program(seed, cfg);
            let stages = every_stage(&program);
            let mut last = None;
            for (stage, p) in &stages {
                last = Some((
                    p,
                    round_trips(&format!("config {k}, seed {seed}, {stage}"), p),
                ));
            }
            // The parsed program is the same program, not only the same text.
            let (original, parsed) = last.expect("at least the lowered stage");
            assert_eq!(parsed.dtype, original.dtype, "config {k}, seed {seed}");
            let case = random_case(&program, seed).expect("a case");
            let want = interp::run_loops(original, &case.inputs, &case.params);
            let got = interp::run_loops(&parsed, &case.inputs, &case.params);
            match (want, got) {
                (Ok(w), Ok(g)) => assert!(same_bits(&w, &g), "config {k}, seed {seed}"),
                (Err(w), Err(g)) => assert_eq!(w.to_string(), g.to_string()),
                (w, g) => panic!("config {k}, seed {seed}: {w:?} vs {g:?}"),
            }
        }
    }
}

/// The rendered error of parsing `src`.
fn error_of(src: &str) -> String {
    match parse_program(src) {
        Ok(p) => panic!("parsed:\n{p}"),
        Err(e) => e.to_string(),
    }
}

const HEADER: &str = "input  x: f32[N]\noutput y: f32[N]\n";

#[test]
fn errors_name_the_line_the_column_and_what_was_expected() {
    let cases = [
        (
            "block 0 {\n  for i0 in 0..N {\n    z[i0] = x[i0]\n  }\n}\n",
            "expected a tensor declared in the header, found `z[i0]` (line 5, column 5)",
        ),
        (
            "block 0 {\n  for i0 in 0..N [fast] {\n    y[i0] = x[i0]\n  }\n}\n",
            "expected a mark: `parallel`, `pieces`, `split`, `blocked`, `jammed`, `chunked`, \
             `line split`, `joined`, `tile`, `rows` or `block reduction`, found `fast]` (line 4, column 19)",
        ),
        // A mark's argument: a load of the loop, after `aligned`, once.
        (
            "block 0 {\n  for i0 in 0..N [split(aligned y[i0])] {\n    y[i0] = x[i0]\n  }\n}\n",
            "expected a load of this loop's statements, found `y[i0])]` (line 4, column 33)",
        ),
        (
            "block 0 {\n  for i0 in 0..N [split(x[i0])] {\n    y[i0] = x[i0]\n  }\n}\n",
            "expected `aligned`, found `x[i0])]` (line 4, column 25)",
        ),
        (
            "block 0 {\n  for i0 in 0..N [split, split(aligned x[i0])] {\n    y[i0] = x[i0]\n  }\n}\n",
            "expected each mark once, found `split(aligned` (line 4, column 26)",
        ),
        (
            "block 0 {\n  for i0 in 0..N [split, split] {\n    y[i0] = x[i0]\n  }\n}\n",
            "expected each mark once, found `split]` (line 4, column 26)",
        ),
        (
            "block 0 {\n  for i0 in 0..N [block reduction] {\n    y[i0] = x[i0]\n  }\n}\n",
            "expected `tile` before `block reduction`",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    y[i0] = x[i0] +\n  }\n}\n",
            "expected a value: a number, `$param`, `vN`, a load, a call or `(`, found end of \
             line (line 5, column 20)",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    v0 = 1.0 (+)\n    y[i0] = x[i0]\n  }\n}\n",
            "expected the operator's identity",
        ),
        (
            "block 1 {\n}\n",
            "expected blocks numbered 0, 1, 2, ... in order, found `block` (line 3, column 1)",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    y[i0] = x[i0]\n  } }\n}\n",
            "expected at most one `}` per open loop",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    y[i0] = x[i0]\n  }\n",
            "expected `}` closing the block, found end of input",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    y[i0, 0] = x[i0]\n  }\n}\n",
            "expected as many subscripts as the tensor has axes",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    y[i0] = exq(x[i0])\n  }\n}\n",
            "expected an operator like `exp`, `maximum` or `where`, found `exq(x[i0])` (line 5, \
             column 13)",
        ),
    ];
    for (body, want) in cases {
        let got = error_of(&format!("{HEADER}{body}"));
        assert!(got.contains(want), "{body}\ngot:  {got}\nwant: {want}");
    }
    assert!(error_of("input  x: f32[N]\ninput  x: f32[N]\n").contains("not declared before"));
    assert!(error_of("inptu  x: f32[N]\n").contains("line 1, column 1"));
}

#[test]
fn spellings_of_the_same_value_read_back_as_one_tree() {
    // `(i0 + 1)` is an index value, `(v0 + v1)` a sum of carried variables; `-1.5` is a
    // constant; `3` is an index value and `3.0` a float.
    let text = "param  $p
input  x: f32[N]
output y: f32[N]
block 0 {
  for i0 in 0..N {
    v0 = 0.0 (+)
    v1 = -inf (max)
    for i1 in 0..N [split] {
      v0 += x[i1] * (i0 + 1) - -1.5
      v1 max= x[i1 - 1] ?? -inf
    }
    y[i0] = (v0 + v1) * 3 / $p + min(i0, 3) * 3.0
  }
}
";
    let p = parse_program(text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.to_string(), text);
    let none = HashMap::from([("p".to_string(), 2)]);
    let x = Tensor::new(DType::F32, vec![2], vec![1.0, 2.0]).unwrap();
    let y = interp::run_loops(&p, &[x], &none).unwrap();
    // v0 = sum(x * (i0 + 1) + 1.5) = 3(i0 + 1) + 3; v1 = max(x[-1] (reads -inf), x[0]) = 1.
    assert_eq!(
        y[0].data,
        vec![(6.0 + 1.0) * 3.0 / 2.0, (9.0 + 1.0) * 3.0 / 2.0 + 3.0]
    );
}

/// The verifier's report on `body` after [`HEADER`]-like declarations.
fn violations(src: &str) -> String {
    let p = parse_program(src).unwrap_or_else(|e| panic!("{e}"));
    match loops::verify(&p) {
        Ok(()) => panic!("verified:\n{p}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_verifier_catches_broken_ir_and_names_where() {
    let head = "param  $k\ninput  x: f32[N]\ninput  w: f32[4]\noutput y: f32[N]\ntemp   t: f32[N] [one row of axis 0 at a time]\n";
    let cases = [
        // Scope: a loop variable used outside its loop, in a bound and a subscript.
        (
            "block 0 {\n  for i0 in 0..N {\n    y[i0] = x[i0]\n  }\n  y[0] = x[i0]\n}\n",
            "block 0: `i0` is not a loop enclosing this expression",
        ),
        (
            "block 0 {\n  for i0 in 0..i1 {\n    y[i0] = x[i0]\n  }\n}\n",
            "block 0, loop i0: `i1` is not a loop enclosing this expression",
        ),
        // Carried variables: read outside the loop that resets them, wrong operator.
        (
            "block 0 {\n  for i0 in 0..N {\n    v0 = 0.0 (+)\n    for i1 in 0..N {\n      v0 += x[i1]\n    }\n  }\n  y[0] = v0\n}\n",
            "block 0: `v0` is read outside the loop that resets it",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    v0 = 0.0 (+)\n    for i1 in 0..N {\n      v0 max= x[i1]\n    }\n    y[i0] = v0\n  }\n}\n",
            "`v0` is updated with `max=` but carried with `+=`",
        ),
        // Declarations: undefined sizes and params, stores into inputs.
        (
            "block 0 {\n  for i0 in 0..M {\n    y[i0]? = x[i0] ?? 0.0\n  }\n}\n",
            "block 0, loop i0: `M` is not a size of any input",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    y[i0] = x[i0] * $q\n  }\n}\n",
            "`$q` is not a declared parameter",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    x[i0] = 1.0\n  }\n}\n",
            "block 0, loop i0: a store into the input `x`",
        ),
        // A statically known index out of range, unchecked.
        (
            "block 0 {\n  for i0 in 0..5 {\n    y[0] = w[i0]\n  }\n}\n",
            "`w` axis 0: `i0` takes 0..=4 outside 0..4, unchecked",
        ),
        // Marks.
        (
            "block 0 {\n  for i0 in 0..N [parallel] {\n    for i1 in 0..N [parallel] {\n      y[i1] = x[i0]\n    } }\n}\n",
            "block 0, loop i1: [parallel] on more than one loop of the block",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..i0 [parallel] {\n      y[i1] = x[i0]\n    } }\n}\n",
            "[parallel] on an inner loop whose range depends on the loops outside",
        ),
        (
            "block 0 {\n  for i0 in 0..N [split] {\n    for i1 in 0..N {\n      y[i1] = x[i0]\n    } }\n}\n",
            "block 0, loop i0: [split] only on the innermost loop",
        ),
        (
            "block 0 {\n  for i0 in 0..N [pieces] {\n    y[i0] = x[i0]\n  }\n}\n",
            "[pieces] only on the outermost loop of a block reducing into its own carried variables",
        ),
        (
            "block 0 {\n  for i0 in 0..N [tile] {\n    y[i0] = x[i0]\n  }\n}\n",
            "block 0, loop i0: [tile] needs a parent loop",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..N [tile, block reduction] {\n      v0 = 0.0 (+)\n      for i2 in 0..N {\n        v0 += x[i2]\n      }\n      y[i1] = v0 * 2.0\n    } }\n}\n",
            "[tile, block reduction] needs every statement after the reduction to store a carried variable plainly",
        ),
        (
            "block 0 {\n  for i0 in 0..N [blocked] {\n    y[i0] = x[i0]\n  }\n}\n",
            "block 0, loop i0: [blocked] needs the innermost loop of an element-wise nest",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..N [blocked] {\n      for i2 in 0..N {\n        y[i2] = x[i1]\n      } } }\n}\n",
            "block 0, loop i1: [blocked] needs the innermost loop of an element-wise nest",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    v0 = 0.0 (+)\n    for i1 in 0..N [blocked] {\n      v0 += x[i1]\n    }\n    y[i0] = v0\n  }\n}\n",
            "block 0, loop i1: [blocked] needs the innermost loop of an element-wise nest",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..i0 [blocked] {\n      y[i1] = x[i0]\n    } }\n}\n",
            "block 0, loop i1: [blocked] needs the innermost loop of an element-wise nest",
        ),
        // [jammed]: without a parent, not innermost, into an element that moves
        // with the rows, reading what it accumulates, a range that depends on the
        // rows, a parent with statements of its own.
        (
            "block 0 {\n  for i0 in 0..N [jammed] {\n    y[0] += x[i0]\n  }\n}\n",
            "block 0, loop i0: [jammed] needs the innermost loop, carrying nothing, with one accumulation into an element that does not move with its parent",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..N [jammed] {\n      for i2 in 0..N {\n        y[i2] += x[i1]\n      } } }\n}\n",
            "block 0, loop i1: [jammed] needs the innermost loop, carrying nothing, with one accumulation into an element that does not move with its parent",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..N [jammed] {\n      y[i0] += x[i1]\n    } }\n}\n",
            "block 0, loop i1: [jammed] needs the innermost loop, carrying nothing, with one accumulation into an element that does not move with its parent",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..N [jammed] {\n      y[i1] += y[i1] * x[i0]\n    } }\n}\n",
            "block 0, loop i1: [jammed] needs the innermost loop, carrying nothing, with one accumulation into an element that does not move with its parent",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..i0 [jammed] {\n      y[i1] += x[i0]\n    } }\n}\n",
            "block 0, loop i1: [jammed] needs the innermost loop, carrying nothing, with one accumulation into an element that does not move with its parent",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..N [jammed] {\n      y[i1] += x[i0]\n    }\n    y[i0] = x[i0]\n  }\n}\n",
            "block 0, loop i1: [jammed] needs the innermost loop, carrying nothing, with one accumulation into an element that does not move with its parent",
        ),
        // [chunked]: not innermost, an accumulation, a checked store, a value
        // reading the stored tensor, two statements.
        (
            "block 0 {\n  for i0 in 0..N [chunked] {\n    for i1 in 0..N {\n      y[i1] = exp(x[i0])\n    } }\n}\n",
            "block 0, loop i0: [chunked] needs the innermost loop, carrying nothing, with one unchecked plain store of a value that does not read the stored tensor",
        ),
        (
            "block 0 {\n  for i0 in 0..N [chunked] {\n    y[0] += exp(x[i0])\n  }\n}\n",
            "block 0, loop i0: [chunked] needs the innermost loop, carrying nothing, with one unchecked plain store of a value that does not read the stored tensor",
        ),
        (
            "block 0 {\n  for i0 in 0..N [chunked] {\n    y[i0 / 2]? = exp(x[i0])\n  }\n}\n",
            "block 0, loop i0: [chunked] needs the innermost loop, carrying nothing, with one unchecked plain store of a value that does not read the stored tensor",
        ),
        (
            "block 0 {\n  for i0 in 0..N [chunked] {\n    y[i0] = exp(y[i0])\n  }\n}\n",
            "block 0, loop i0: [chunked] needs the innermost loop, carrying nothing, with one unchecked plain store of a value that does not read the stored tensor",
        ),
        (
            "block 0 {\n  for i0 in 0..N [chunked] {\n    y[i0] = exp(x[i0])\n    t[i0] = x[i0]\n  }\n}\n",
            "block 0, loop i0: [chunked] needs the innermost loop, carrying nothing, with one unchecked plain store of a value that does not read the stored tensor",
        ),
        // [line split]: not innermost, a strided store, a checked store, only
        // updates, with [split], with [blocked].
        (
            "block 0 {\n  for i0 in 0..N [line split] {\n    for i1 in 0..N {\n      y[i1] = x[i0]\n    } }\n}\n",
            "block 0, loop i0: [line split] needs the innermost loop, neither [split] nor [blocked], with an unchecked store of unit stride along it",
        ),
        (
            "block 0 {\n  for i0 in 0..N [line split] {\n    y[0] = x[i0]\n  }\n}\n",
            "block 0, loop i0: [line split] needs the innermost loop, neither [split] nor [blocked], with an unchecked store of unit stride along it",
        ),
        (
            "block 0 {\n  for i0 in 0..N [line split] {\n    y[i0 + 1]? = x[i0]\n  }\n}\n",
            "block 0, loop i0: [line split] needs the innermost loop, neither [split] nor [blocked], with an unchecked store of unit stride along it",
        ),
        (
            "block 0 {\n  v0 = 0.0 (+)\n  for i0 in 0..N [line split] {\n    v0 += x[i0]\n  }\n  y[0] = v0\n}\n",
            "block 0, loop i0: [line split] needs the innermost loop, neither [split] nor [blocked], with an unchecked store of unit stride along it",
        ),
        (
            "block 0 {\n  v0 = 0.0 (+)\n  for i0 in 0..N [split, line split] {\n    v0 += x[i0]\n    y[i0] = x[i0]\n  }\n  y[0] = v0\n}\n",
            "block 0, loop i0: [line split] needs the innermost loop, neither [split] nor [blocked]",
        ),
        (
            "block 0 {\n  for i0 in 0..N {\n    for i1 in 0..N [blocked, line split] {\n      y[i1] = x[i0]\n    } }\n}\n",
            "block 0, loop i1: [line split] needs the innermost loop, neither [split] nor [blocked]",
        ),
        // [split(aligned ..)]: a checked load, a load that does not move with the
        // loop, one moving backwards.
        (
            "block 0 {\n  v0 = 0.0 (+)\n  for i0 in 0..N [split(aligned x[i0 + 1])] {\n    v0 += x[i0 + 1] ?? 0.0\n  }\n  y[0] = v0\n}\n",
            "block 0, loop i0: [split(aligned ..)] needs an unchecked load of unit stride along the loop, not `x[i0 + 1] ?? 0.0`",
        ),
        (
            "block 0 {\n  v0 = 0.0 (+)\n  for i0 in 0..N [split(aligned w[0])] {\n    v0 += x[i0] * w[0]\n  }\n  y[0] = v0\n}\n",
            "block 0, loop i0: [split(aligned ..)] needs an unchecked load of unit stride along the loop, not `w[0]`",
        ),
        (
            "block 0 {\n  v0 = 0.0 (+)\n  for i0 in 0..N [split(aligned x[N - 1 - i0])] {\n    v0 += x[N - 1 - i0]\n  }\n  y[0] = v0\n}\n",
            "block 0, loop i0: [split(aligned ..)] needs an unchecked load of unit stride along the loop, not `x[N - 1 - i0]`",
        ),
        (
            "block 0 {\n  for i0 in 0..N [joined] {\n    y[i0] = x[i0]\n  }\n}\n",
            "block 0, loop i0: [joined] only on a block's outermost loop",
        ),
        // A row-local temporary read at another row.
        (
            "block 0 {\n  for i0 in 0..N {\n    t[i0] = x[i0]\n  }\n}\nblock 1 {\n  for i1 in 0..N [joined] {\n    y[i1]? = t[i1 - 1] ?? 0.0\n  }\n}\n",
            "tensor t: kept one row of axis 0 at a time but block 1 does not access it at row `i1` there",
        ),
    ];
    for (body, want) in cases {
        let got = violations(&format!("{head}{body}"));
        assert!(got.contains(want), "{body}\ngot:  {got}\nwant: {want}");
    }
}

#[test]
fn the_verifier_accepts_the_ir_of_the_passes() {
    // The same program as the first case above, written correctly, verifies;
    // every stage of every example program and random program is verified by
    // the round-trip tests above.
    let p = parse_program(
        "input  x: f32[N]\noutput y: f32[N]\ntemp   t: f32[N] [one row of axis 0 at a time]\n\
         block 0 {\n  for i0 in 0..N [parallel] {\n    t[i0] = x[i0]\n  }\n}\n\
         block 1 {\n  for i1 in 0..N [parallel, joined] {\n    y[i1] = t[i1]\n  }\n}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loops::verify(&p), Ok(()));
}

/// Declarations for the programs naming loads in a mark's argument.
const MARKED: &str = "input  a: f32[M, K]\ninput  b: f32[K, N]\ninput  s: f32[W]\ninput  w: f32[O, 3]\ninput  x: f32[R, C]\noutput c: f32[M, N]\noutput u: f32[O, W]\noutput y: f32[1, C]\noutput z: f32[R, C]\ntemp   t: f32[R, C] [one row of axis 0 at a time]\n";

/// A matmul tile whose mark is `marks`, its reduction over `0..k_end`.
fn matmul_tile(marks: &str, k_end: &str) -> String {
    format!(
        "block 0 {{\n  for i0 in 0..M {{\n    for i2 in 0..N [{marks}] {{\n      v0 = 0.0 (+)\n      for i1 in 0..{k_end} {{\n        v0 += a[i0, i1] * b[i1, i2]\n      }}\n      c[i0, i2] = v0\n    }} }}\n}}\n"
    )
}

#[test]
fn mark_arguments_name_loads_of_the_loop_by_their_printed_form() {
    let ok = format!(
        "{MARKED}{}",
        matmul_tile("tile(packed b[i1, i2]), block reduction", "K")
    );
    let p = parse_program(&ok).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.to_string(), ok);
    let tile = p.blocks[0].loops[1].schedule.tile.expect("a tile");
    // Loads of the body, innermost loop first: a[i0, i1] is 0, b[i1, i2] is 1.
    assert_eq!(tile.packed.iter().collect::<Vec<_>>(), vec![1]);
    loops::verify(&p).unwrap_or_else(|e| panic!("{e}"));
    // The row panel's loads, after the tile's.
    let rows = format!(
        "{MARKED}{}",
        matmul_tile(
            "tile(packed b[i1, i2]), rows(packed a[i0, i1]), block reduction",
            "K"
        )
    );
    let p = parse_program(&rows).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.to_string(), rows);
    let tile = p.blocks[0].loops[1].schedule.tile.expect("a tile");
    assert_eq!(tile.rows.iter().collect::<Vec<_>>(), vec![0]);
    assert_eq!(tile.packed.iter().collect::<Vec<_>>(), vec![1]);
    loops::verify(&p).unwrap_or_else(|e| panic!("{e}"));
    let cases = [
        (
            matmul_tile("tile(packed c[i0, i2])", "K"),
            "expected a load of this loop's body, found `c[i0,` (line 13, column 33)",
        ),
        (
            matmul_tile("tile(packed q[i0])", "K"),
            "expected a tensor declared in the header, found `q[i0])]`",
        ),
        (
            matmul_tile("tile(b[i1, i2])", "K"),
            "expected `packed`, found `b[i1,`",
        ),
        (
            matmul_tile("jammed(b[i1, i2])", "K"),
            "expected `,` or `]` (only `split`, `tile`, `rows` and `parallel` take an argument)",
        ),
        (
            matmul_tile("rows(packed a[i0, i1]), tile", "K"),
            "expected `tile` before `rows`",
        ),
        (
            matmul_tile("tile, rows", "K"),
            "expected `rows(packed ...)`",
        ),
        (
            matmul_tile("tile, rows(a[i0, i1])", "K"),
            "expected `packed`, found `a[i0,`",
        ),
        (
            matmul_tile("tile, rows(packed a[i0, i1]), rows(packed a[i0, i1])", "K"),
            "expected each mark once",
        ),
        (
            "block 0 {\n  for i1 in 0..R {\n    for i0 in 0..C [parallel(lines y[0, i0], y[0, i0])] {\n      y[0, i0] += x[i1, i0]\n    } }\n}\n".into(),
            "expected one write after `lines`",
        ),
        (
            "block 0 {\n  for i1 in 0..R {\n    for i0 in 0..C [parallel(lines x[i1, i0])] {\n      y[0, i0] += x[i1, i0]\n    } }\n}\n".into(),
            "expected a write of this loop's body, found `x[i1,`",
        ),
    ];
    for (body, want) in cases {
        let got = error_of(&format!("{MARKED}{body}"));
        assert!(got.contains(want), "{body}\ngot:  {got}\nwant: {want}");
    }
}

#[test]
fn the_verifier_checks_which_loads_and_writes_a_mark_names() {
    let packed = "names a load that is not an operand of the innermost reduction, of a float tensor the block does not write, moving with the columns and not the rows, and not a sliding window";
    let rows = "names a load that is not an operand of the innermost reduction, of a float tensor the block does not write, moving with the rows and not the columns, and not a sliding window along the rows";
    let lines = "needs an inner parallel loop and a write along it at unit stride, free of the other loops, the block writing only its tensor, not a row buffer";
    let cases = [
        // [tile(packed ..)]: a load moving with the rows, a sliding window, a
        // reduction whose range uses the column loop.
        (
            matmul_tile("tile(packed a[i0, i1])", "K"),
            format!("block 0, loop i2: [tile(packed a[i0, i1])] {packed}"),
        ),
        (
            "block 0 {\n  for i0 in 0..O {\n    for i1 in 0..W - 2 [tile(packed s[i1 + i2])] {\n      v0 = 0.0 (+)\n      for i2 in 0..3 {\n        v0 += s[i1 + i2] * w[i0, i2]\n      }\n      u[i0, i1] = v0\n    } }\n}\n".into(),
            format!("block 0, loop i1: [tile(packed s[i1 + i2])] {packed}"),
        ),
        (
            matmul_tile("tile(packed b[i1, i2])", "i2"),
            format!("block 0, loop i2: [tile(packed b[i1, i2])] {packed}"),
        ),
        // [rows(packed ..)]: a load moving with the columns, a sliding window
        // along the rows, a reduction whose range uses the row loop.
        (
            matmul_tile("tile, rows(packed b[i1, i2])", "K"),
            format!("block 0, loop i2: [rows(packed b[i1, i2])] {rows}"),
        ),
        (
            "block 0 {\n  for i1 in 0..W - 2 {\n    for i0 in 0..O [tile, rows(packed s[i1 + i2])] {\n      v0 = 0.0 (+)\n      for i2 in 0..3 {\n        v0 += s[i1 + i2] * w[i0, i2]\n      }\n      u[i0, i1] = v0\n    } }\n}\n".into(),
            format!("block 0, loop i0: [rows(packed s[i1 + i2])] {rows}"),
        ),
        (
            matmul_tile("tile, rows(packed a[i0, i1])", "i0"),
            format!("block 0, loop i2: [rows(packed a[i0, i1])] {rows}"),
        ),
        // [parallel(lines ..)]: an outer loop, a write moving with the loop
        // outside, two tensors written, a row buffer, a stride of two.
        (
            "block 0 {\n  for i0 in 0..C [parallel(lines y[0, i0])] {\n    y[0, i0] = 0.0\n  }\n}\n".into(),
            format!("block 0, loop i0: [parallel(lines y[0, i0])] {lines}"),
        ),
        (
            "block 0 {\n  for i1 in 0..R {\n    for i0 in 0..C [parallel(lines z[i1, i0])] {\n      z[i1, i0] += x[i1, i0]\n    } }\n}\n".into(),
            format!("block 0, loop i0: [parallel(lines z[i1, i0])] {lines}"),
        ),
        (
            "block 0 {\n  for i1 in 0..R {\n    for i0 in 0..C [parallel(lines y[0, i0])] {\n      y[0, i0] += x[i1, i0]\n      z[0, i0] += x[i1, i0]\n    } }\n}\n".into(),
            format!("block 0, loop i0: [parallel(lines y[0, i0])] {lines}"),
        ),
        (
            "block 0 {\n  for i1 in 0..R {\n    for i0 in 0..C [parallel(lines t[0, i0])] {\n      t[0, i0] += x[i1, i0]\n    } }\n}\n".into(),
            format!("block 0, loop i0: [parallel(lines t[0, i0])] {lines}"),
        ),
        (
            "block 0 {\n  for i1 in 0..R {\n    for i0 in 0..C [parallel(lines z[0, 2 * i0])] {\n      z[0, 2 * i0]? += x[i1, i0]\n    } }\n}\n".into(),
            format!("block 0, loop i0: [parallel(lines z[0, 2 * i0])] {lines}"),
        ),
    ];
    for (body, want) in cases {
        let got = violations(&format!("{MARKED}{body}"));
        assert!(got.contains(&want), "{body}\ngot:  {got}\nwant: {want}");
    }
}
