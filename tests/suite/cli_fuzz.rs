//! `uop fuzz`, `uop stats` and the optimizer flags of `uop print` / `uop run`, as a
//! user runs them. Nothing here depends on what a particular pass does: pass
//! effects are the passes' own tests.

use uop::codegen::pass::pipeline;

use crate::common;
use common::{scratch, stderr, stdout, uop, uop_in};

const MATMUL: &str = "examples/programs/matmul.uop";

#[test]
fn fuzz_checks_n_programs_and_exits_0() {
    let dir = scratch("fuzz-ok");
    for flag in [&["--self"][..], &["--backend", "loops"]] {
        let mut args = vec!["fuzz"];
        args.extend_from_slice(flag);
        args.extend_from_slice(&["--cases", "40", "--seed", "1000", "--max-nodes", "8"]);
        let o = uop_in(&dir, &args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stdout(&o),
            "40 random programs (seeds 1000..1040) agree on every stage\n"
        );
    }
    let written = std::fs::read_dir(&dir).expect("scratch dir").count();
    assert_eq!(written, 0, "no reproducer is written when nothing fails");
}

#[test]
fn fuzz_self_and_backend_are_one_choice() {
    let o = uop(&["fuzz", "--self", "--backend", "loops", "--cases", "1"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

/// The values of a flat JSON object of numbers and nulls, by key.
fn flat_json(text: &str) -> Vec<(String, Option<u64>)> {
    let body = text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not one object: {text}"));
    body.split(',')
        .map(|field| {
            let (k, v) = field
                .split_once(':')
                .unwrap_or_else(|| panic!("bad field {field}"));
            let key = k.trim().trim_matches('"').to_string();
            let value = match v.trim() {
                "null" => None,
                n => Some(n.parse().unwrap_or_else(|_| panic!("bad number {n}"))),
            };
            (key, value)
        })
        .collect()
}

fn field(fields: &[(String, Option<u64>)], key: &str) -> Option<u64> {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .unwrap_or_else(|| panic!("no field {key} in {fields:?}"))
        .1
}

#[test]
fn stats_json_gives_counts_and_bytes_before_and_after() {
    let o = uop(&[
        "stats", MATMUL, "--json", "--dim", "M=2", "--dim", "K=3", "--dim", "N=4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fields = flat_json(&stdout(&o));
    for key in [
        "blocks_before",
        "blocks_after",
        "loops_before",
        "loops_after",
        "temporaries_before",
        "temporaries_after",
        "temp_bytes_before",
        "temp_bytes_after",
    ] {
        assert!(field(&fields, key).is_some(), "{key} in {fields:?}");
    }
    // The lowering allocates aa, bb and their product ([M, K, N]) and the sum [M, 1, N], f32.
    assert_eq!(field(&fields, "temporaries_before"), Some(4));
    assert_eq!(
        field(&fields, "temp_bytes_before"),
        Some((3 * 2 * 3 * 4 + 2 * 4) * 4)
    );

    // Without the sizes, bytes are unknown.
    let o = uop(&["stats", MATMUL, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fields = flat_json(&stdout(&o));
    assert_eq!(field(&fields, "temp_bytes_before"), None);
    assert!(field(&fields, "blocks_before").is_some());
}

#[test]
fn stats_table_names_the_missing_sizes() {
    let o = uop(&["stats", MATMUL, "--dim", "M=2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let first = out.lines().next().unwrap_or_default();
    assert!(first.contains("before") && first.contains("after"), "{out}");
    for row in ["blocks", "loops", "temporaries", "temp bytes"] {
        assert!(out.lines().any(|l| l.starts_with(row)), "{row} in {out}");
    }
    assert!(out.contains("--dim K=SIZE --dim N=SIZE"), "{out}");
}

#[test]
fn stats_rejects_unknown_dims_and_params() {
    let o = uop(&["stats", MATMUL, "--dim", "Q=2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no dimension `Q` (it has: K, M, N)"),
        "{}",
        stderr(&o)
    );
    let o = uop(&["stats", MATMUL, "--param", "p=2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no parameter `$p`"), "{}", stderr(&o));
}

#[test]
fn print_after_each_pass_shows_one_header_per_pass() {
    let o = uop(&["print", MATMUL, "--after-each-pass"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lowered = uop(&["print", MATMUL, "--stage", "loops"]);
    assert!(
        out.starts_with(&format!("# lowered\n{}", stdout(&lowered))),
        "{out}"
    );
    let headers: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("# after pass "))
        .collect();
    assert_eq!(headers.len(), pipeline().len(), "{out}");
    for (header, pass) in headers.iter().zip(pipeline()) {
        assert_eq!(*header, format!("# after pass {}: {}", pass.name, pass.doc));
    }
    if let Some(first) = pipeline().first() {
        let o = uop(&[
            "print",
            MATMUL,
            "--after-each-pass",
            "--disable-pass",
            first.name,
        ]);
        let out = stdout(&o);
        assert!(
            out.contains(&format!("# pass {} is disabled", first.name)),
            "{out}"
        );
        let headers = out
            .lines()
            .filter(|l| l.starts_with("# after pass "))
            .count();
        // A pass may run more than once in the pipeline (dce does); disabling it skips every run.
        let runs = pipeline().iter().filter(|p| p.name == first.name).count();
        assert_eq!(headers + runs, pipeline().len(), "{out}");
    }
}

#[test]
fn print_stage_opt_shows_the_optimized_loop_ir() {
    let o = uop(&["print", MATMUL, "--stage", "opt"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for decl in [
        "input  a: f32[M, K]",
        "input  b: f32[K, N]",
        "output c: f32[M, N]",
    ] {
        assert!(out.contains(decl), "{decl} in {out}");
    }
    let o = uop(&["print", MATMUL, "--stage", "opt", "--after-each-pass"]);
    assert!(
        !o.status.success(),
        "--stage and --after-each-pass are exclusive"
    );
}

#[test]
fn print_verify_checks_the_loop_ir_after_lowering_and_every_pass() {
    for stage in [
        &["--stage", "loops"][..],
        &["--stage", "opt"],
        &["--after-each-pass"],
    ] {
        let plain = uop(&[&["print", MATMUL][..], stage].concat());
        let verified = uop(&[&["print", MATMUL, "--verify"][..], stage].concat());
        assert!(
            verified.status.success(),
            "{stage:?}: {}",
            stderr(&verified)
        );
        assert_eq!(stdout(&verified), stdout(&plain), "{stage:?}");
    }
    let o = uop(&["print", MATMUL, "--stage", "uops", "--verify"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: --verify applies to --stage loops, opt (or --after-each-pass), prepared, \
         kernels or memory\n"
    );
}

#[test]
fn run_on_the_optimized_loop_ir_matches_the_interpreter() {
    let common = [
        "run", MATMUL, "--random", "3", "--dim", "M=3", "--dim", "K=4", "--dim", "N=2",
    ];
    let interp = uop(&[&common[..], &["--backend", "interp"]].concat());
    assert!(interp.status.success(), "{}", stderr(&interp));
    let mut loops_args = common.to_vec();
    loops_args.extend_from_slice(&["--backend", "loops"]);
    for pass in pipeline() {
        loops_args.extend_from_slice(&["--disable-pass", pass.name]);
    }
    for args in [
        &loops_args[..],
        &[&common[..], &["--backend", "loops"]].concat(),
    ] {
        let o = uop(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), stdout(&interp), "{args:?}");
    }
}

#[test]
fn an_unknown_pass_name_is_a_clear_error_everywhere() {
    let valid = if pipeline().is_empty() {
        "the pipeline has no passes".to_string()
    } else {
        let names: Vec<&str> = pipeline().iter().map(|p| p.name).collect();
        format!("passes: {}", names.join(", "))
    };
    let expected = format!("error: --disable-pass nope: there is no pass `nope` ({valid})\n");
    for cmd in [
        vec!["print", MATMUL, "--stage", "opt"],
        vec!["print", MATMUL, "--after-each-pass"],
        vec![
            "run", MATMUL, "--random", "1", "--dim", "M=1", "--dim", "K=1", "--dim", "N=1",
        ],
        vec!["stats", MATMUL],
        vec!["fuzz", "--self", "--cases", "1"],
    ] {
        let mut args = cmd.clone();
        args.extend_from_slice(&["--disable-pass", "nope"]);
        let o = uop(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&o), expected, "{args:?}");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
}

#[test]
fn fuzz_max_nodes_is_capped_with_a_message() {
    for bad in ["0", "257", "100000000"] {
        let o = uop(&["fuzz", "--self", "--cases", "1", "--max-nodes", bad]);
        assert_eq!(o.status.code(), Some(2), "--max-nodes {bad}");
        assert!(
            stderr(&o).contains("random programs have 1 to 256 uops"),
            "--max-nodes {bad}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn stats_time_prints_one_row_per_stage_and_pass() {
    let o = uop(&["stats", MATMUL, "--time"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("stage"))
        .collect();
    let names: Vec<&str> = rows
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut want = vec!["stage", "parse", "lower"];
    want.extend(pipeline().iter().map(|_| "pass"));
    want.push("total");
    assert_eq!(names, want, "{out}");
    for p in pipeline() {
        assert!(out.contains(&format!("pass {}", p.name)), "{out}");
    }
}

/// A program of one's own: `uop fuzz FILE` runs it on random sizes and data through
/// every stage and the JIT, `--dim` fixing sizes and `--min-size` the smallest.
#[test]
fn fuzz_checks_a_given_program_on_every_stage_and_the_jit() {
    let o = uop(&[
        "fuzz",
        "examples/programs/softmax.uop",
        "--cases",
        "12",
        "--dim",
        "N=5",
        "--min-size",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("examples/programs/softmax.uop: 12 cases ("),
        "{out}"
    );
    assert!(
        out.contains("agree with the reference interpreter on"),
        "{out}"
    );
}

#[test]
fn fuzz_of_a_file_names_unknown_dims_and_refuses_random_program_flags() {
    let o = uop(&["fuzz", MATMUL, "--dim", "Q=3", "--cases", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("the program has no named dim `Q` (its inputs' dims: K, M, N)"),
        "{}",
        stderr(&o)
    );
    let o = uop(&["fuzz", MATMUL, "--max-nodes", "4"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = uop(&["fuzz", "--dim", "M=2"]);
    assert_eq!(o.status.code(), Some(2), "--dim needs FILE: {}", stderr(&o));
}

#[test]
fn fuzz_of_a_graph_file_says_it_takes_programs() {
    let o = uop(&["fuzz", "examples/graphs/power_loop.uop", "--cases", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("this file is a graph"),
        "{}",
        stderr(&o)
    );
}
