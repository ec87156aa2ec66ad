//! `uop run` with the executor's flags: on a graph, `--disable-pass` (graph passes and
//! loop-IR passes), `--time-passes` and `--rewrite-limit` change how it is compiled,
//! never its numbers; a program runs on the executor's streams (`--streams N`) with
//! the numbers it has alone, for every N.

use crate::common::{stderr, stdout, uop};

/// `uop run FILE --random 1` with `extra` arguments: the output (stdout) and stderr,
/// the run asserted to succeed.
fn run(file: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec!["run", file, "--random", "1"];
    args.extend(extra);
    let o = uop(&args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    (stdout(&o), stderr(&o))
}

const ROWS: &str = "examples/graphs/rows.uop";
const ROWS_DIMS: [&str; 4] = ["--dim", "R=3", "--dim", "N=5"];
const MATMUL: &str = "examples/programs/matmul.uop";
const MATMUL_DIMS: [&str; 6] = ["--dim", "M=5", "--dim", "K=7", "--dim", "N=3"];

fn with(dims: &[&'static str], extra: &[&'static str]) -> Vec<&'static str> {
    dims.iter().chain(extra).copied().collect()
}

#[test]
fn a_graph_without_a_loop_pass_or_a_graph_pass_gives_the_same_numbers() {
    let (all, _) = run(ROWS, &ROWS_DIMS);
    assert!(all.starts_with("y: f32[3, 5]\n"), "{all}");
    for pass in ["fuse", "subst", "cse", "simplify", "split-joins"] {
        let (out, _) = run(ROWS, &with(&ROWS_DIMS, &["--disable-pass", pass]));
        assert_eq!(out, all, "--disable-pass {pass}");
    }
    let (out, _) = run(
        ROWS,
        &with(
            &ROWS_DIMS,
            &["--disable-pass", "fuse", "--disable-pass", "dead"],
        ),
    );
    assert_eq!(out, all, "--disable-pass fuse --disable-pass dead");
}

#[test]
fn time_passes_prints_the_graph_passes_then_the_loop_passes_on_stderr() {
    let (plain, _) = run(ROWS, &ROWS_DIMS);
    let (out, err) = run(ROWS, &with(&ROWS_DIMS, &["--time-passes"]));
    assert_eq!(out, plain, "the table goes to stderr only");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with("pass") && lines[0].contains("wall ms"),
        "{err}"
    );
    let loop_table = lines
        .iter()
        .position(|l| l.starts_with("loop pass"))
        .unwrap_or_else(|| panic!("no loop-pass table:\n{err}"));
    for pass in ["simplify", "kernels", "memory"] {
        assert!(
            lines[1..loop_table].iter().any(|l| l.starts_with(pass)),
            "{pass}:\n{err}"
        );
    }
    for pass in ["fuse", "bounds", "parallel"] {
        assert!(
            lines[loop_table..].iter().any(|l| l.starts_with(pass)),
            "{pass}:\n{err}"
        );
    }
    assert!(lines.last().unwrap().starts_with("total"), "{err}");
    // A disabled loop pass does not run, so it has no row.
    let (_, err) = run(
        ROWS,
        &with(&ROWS_DIMS, &["--time-passes", "--disable-pass", "fuse"]),
    );
    assert!(!err.lines().any(|l| l.starts_with("fuse ")), "{err}");
}

#[test]
fn a_rewrite_limit_changes_the_graph_not_the_numbers() {
    let (all, _) = run(ROWS, &ROWS_DIMS);
    for limit in ["0", "1", "3"] {
        let (out, _) = run(ROWS, &with(&ROWS_DIMS, &["--rewrite-limit", limit]));
        assert_eq!(out, all, "--rewrite-limit {limit}");
    }
    // The limit shows in the table: no rewrite at all.
    let (_, err) = run(
        ROWS,
        &with(&ROWS_DIMS, &["--rewrite-limit", "0", "--time-passes"]),
    );
    let total = err.lines().find(|l| l.starts_with("total")).unwrap();
    assert!(total.ends_with(" 0"), "{err}");
}

#[test]
fn a_program_on_streams_gives_its_numbers_for_every_count() {
    let (alone, _) = run(MATMUL, &MATMUL_DIMS);
    assert!(alone.starts_with("c: f32[5, 3]\n"), "{alone}");
    for n in ["1", "2", "3"] {
        let (out, _) = run(MATMUL, &with(&MATMUL_DIMS, &["--streams", n]));
        assert_eq!(out, alone, "--streams {n}");
    }
    let (out, _) = run(
        MATMUL,
        &with(&MATMUL_DIMS, &["--streams", "3", "--backend", "loops"]),
    );
    assert_eq!(out, alone, "--streams 3 --backend loops");
    // --time-passes runs it on the executor too: one kernel.
    let (out, err) = run(MATMUL, &with(&MATMUL_DIMS, &["--time-passes"]));
    assert_eq!(out, alone);
    let loop_total = err.lines().last().unwrap();
    assert!(
        loop_total.starts_with("total") && loop_total.ends_with(" 1"),
        "{err}"
    );
}

#[test]
fn misplaced_and_unknown_pass_flags_are_one_error_line() {
    let error = |args: &[&str]| {
        let o = uop(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        stderr(&o)
    };
    let mut args = vec!["run", ROWS, "--random", "1"];
    args.extend(ROWS_DIMS);
    let nope = [args.clone(), vec!["--disable-pass", "nope"]].concat();
    let message = error(&nope);
    assert!(
        message.starts_with(
            "error: --disable-pass nope: there is no pass `nope` (graph passes: simplify, fold, cse, dead, kernels, consts, loops, memory; decisions: split-joins; loop passes: dce, fuse, subst, bounds,"
        ),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
    for (flag, value, why) in [
        ("--disable-pass", Some("fuse"), "runs no passes"),
        ("--time-passes", None, "runs no passes"),
        ("--rewrite-limit", Some("2"), "runs no passes"),
        ("--streams", Some("2"), "runs every node in order"),
    ] {
        let mut a = [args.clone(), vec!["--backend", "interp", flag]].concat();
        a.extend(value);
        assert_eq!(
            error(&a),
            format!("error: {flag}: the graph interpreter (--backend interp) {why}\n")
        );
    }
    let mut a = vec!["run", MATMUL, "--random", "1", "--rewrite-limit", "1"];
    a.extend(MATMUL_DIMS);
    assert_eq!(
        error(&a),
        "error: --rewrite-limit applies to graphs (files with `fn`, `while`, `case`, ...): a program is one kernel, with no graph rewrites\n"
    );
}
