//! Graph files (`fn`, `while`, `case`, `parallel`, ...) through the `uop` binary:
//! `uop run` on the graph executor and the graph interpreter with NNC's numbers,
//! `uop stats` on graphs, `uop print --stage
//! graph|hierarchy`, and clear errors for what graphs do not have yet.

use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop::npy::read_npy;

use crate::common;
use common::{scratch, stderr, stdout, uop, write};

fn scalar(v: f64) -> Tensor {
    Tensor::new(DType::F32, vec![], vec![v]).expect("rank 0")
}

/// Runs `file` with scalar inputs and returns each output's single value.
fn run_scalars(test: &str, file: &str, inputs: &[(&str, f64)], outputs: &[&str]) -> Vec<f64> {
    let dir = scratch(test);
    let mut args: Vec<String> = vec!["run".into(), file.into()];
    for (name, v) in inputs {
        let path = write(&dir, &format!("{name}.npy"), &scalar(*v));
        args.extend(["--input".into(), format!("{name}={path}")]);
    }
    for name in outputs {
        let path = dir.join(format!("{name}.npy"));
        args.extend(["--output".into(), format!("{name}={}", path.display())]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = uop(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    outputs
        .iter()
        .map(|name| {
            let t = read_npy(&dir.join(format!("{name}.npy"))).expect("output written");
            assert_eq!(t.shape, Vec::<usize>::new());
            t.data[0]
        })
        .collect()
}

#[test]
fn the_power_loop_gives_nnc_numbers() {
    let out = run_scalars(
        "graph-power",
        "examples/graphs/power_loop.uop",
        &[("x", 0.34), ("y", 1.11)],
        &["out", "n"],
    );
    let expected = 0.34f32 * 1.11f32.powi(5);
    assert!((out[0] - expected as f64).abs() < 1e-6, "{out:?}");
    assert_eq!(out[1], 5.0);
}

#[test]
fn the_piecewise_case_gives_nnc_numbers() {
    for (x, expected) in [(-1.0, 0.0), (0.76, 0.76), (1.226, 1.113), (2.1, 1.5)] {
        let out = run_scalars(
            "graph-piecewise",
            "examples/graphs/piecewise.uop",
            &[("x", x)],
            &["r"],
        );
        assert!((out[0] - expected).abs() < 1e-6, "x = {x}: {out:?}");
    }
}

#[test]
fn the_case_inside_a_loop_gives_nnc_numbers() {
    for (x, expected) in [(1.226, 0.3042375), (0.8, 0.24)] {
        let out = run_scalars(
            "graph-piecewise-loop",
            "examples/graphs/piecewise_loop.uop",
            &[("x", x)],
            &["r"],
        );
        assert!((out[0] - expected).abs() < 1e-6, "x = {x}: {out:?}");
    }
}

#[test]
fn parallel_rows_run_on_random_inputs_and_print_their_shape() {
    let out = run_rows(&[]);
    assert!(out.starts_with("y: f32[3, 5]\n"), "{out}");
}

#[test]
fn the_hierarchy_shows_loop_invariants_outside_and_state_inside() {
    let o = uop(&["print", "examples/graphs/rows.uop", "--stage", "hierarchy"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    // exp(w) is computed once at the top level; the row reads stay in the body.
    assert_eq!(lines[1], "%2 = exp(%1.1)");
    assert!(lines[2].starts_with("%9 = parallel(R, %1)"), "{text}");
    assert!(lines[3].starts_with("  fn body("), "{text}");
    assert_eq!(lines[4], "    %4 = reindex(%3.1, [N], [$i, i0])");
}

#[test]
fn a_graph_prints_back_as_text_that_parses_to_the_same_text() {
    let dir = scratch("graph-print");
    let o = uop(&[
        "print",
        "examples/graphs/piecewise_loop.uop",
        "--stage",
        "graph",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = stdout(&o);
    assert!(first.contains("= while("), "{first}");
    let path = dir.join("printed.uop");
    std::fs::write(&path, &first).expect("write");
    let o = uop(&["print", path.to_str().expect("utf-8"), "--stage", "graph"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), first);
}

#[test]
fn what_graphs_do_not_have_yet_is_a_clear_error() {
    let o = uop(&["print", "examples/graphs/power_loop.uop", "--stage", "opt"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(
        "a graph has the stages `graph`, `hierarchy`, `grad`, `prepared`, `kernels`, `memory`, `schedule` and `partitions`"
    ));
    let o = uop(&["stats", "examples/graphs/power_loop.uop", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--json: `uop stats` on a graph counts nodes and kernels only"),
        "{}",
        stderr(&o)
    );
}

/// Runs `file` with scalar inputs on `backend` and returns each output's value.
fn run_on(backend: &str, file: &str, inputs: &[(&str, f64)], outputs: &[&str]) -> Vec<f64> {
    let dir = scratch(&format!("graph-backend-{backend}"));
    let mut args: Vec<String> = vec![
        "run".into(),
        file.into(),
        "--backend".into(),
        backend.into(),
    ];
    for (name, v) in inputs {
        let path = write(&dir, &format!("{name}.npy"), &scalar(*v));
        args.extend(["--input".into(), format!("{name}={path}")]);
    }
    for name in outputs {
        let path = dir.join(format!("{name}.npy"));
        args.extend(["--output".into(), format!("{name}={}", path.display())]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = uop(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    outputs
        .iter()
        .map(|name| {
            read_npy(&dir.join(format!("{name}.npy")))
                .expect("output")
                .data[0]
        })
        .collect()
}

#[test]
fn every_graph_backend_gives_nnc_numbers() {
    let expected = f64::from(0.34f32 * 1.11f32.powi(5));
    for backend in ["cranelift", "loops", "interp"] {
        let out = run_on(
            backend,
            "examples/graphs/power_loop.uop",
            &[("x", 0.34), ("y", 1.11)],
            &["out", "n"],
        );
        assert_eq!(out, vec![expected, 5.0], "{backend}");
        let out = run_on(
            backend,
            "examples/graphs/piecewise_loop.uop",
            &[("x", 1.226)],
            &["r"],
        );
        assert!((out[0] - 0.3042375).abs() < 1e-6, "{backend}: {out:?}");
    }
}

#[test]
fn run_help_says_the_graph_interpreter_is_the_oracle() {
    let o = uop(&["run", "--help"]);
    assert!(o.status.success());
    let help = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("`interp` is the graph interpreter (the oracle)"),
        "{help}"
    );
}

#[test]
fn stats_on_a_graph_gives_node_counts_and_kernels_per_body() {
    let o = uop(&["stats", "--graph", "examples/graphs/mlp.uop"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let row = |label: &str| {
        text.lines()
            .find(|l| l.starts_with(label))
            .and_then(|l| l.split_whitespace().last())
            .map(str::to_string)
    };
    assert_eq!(row("kernels").as_deref(), Some("3"), "{text}");
    assert_eq!(row("  top level").as_deref(), Some("3"), "{text}");
    let o = uop(&["stats", "examples/graphs/piecewise_loop.uop"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains(" while body "), "{text}");
    assert!(text.contains(" case branch 2 "), "{text}");
    let before: usize = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .expect("count");
    let after: usize = text
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .expect("count");
    assert!(text.starts_with("nodes before prepare"), "{text}");
    assert!(after < before, "{text}");
}

#[test]
fn an_error_inside_a_function_body_is_shown_at_its_place() {
    let dir = scratch("graph-error");
    let path = dir.join("bad.uop");
    std::fs::write(
        &path,
        "input x: f32[]\nfn more(v) { return lt(v, 5) }\nfn step(v) { return mul(v, q) }\ny = while(more, step, x)\noutput y\n",
    )
    .expect("write");
    let o = uop(&["run", path.to_str().expect("utf-8"), "--random", "1"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("unknown name `q`"), "{err}");
    assert!(err.contains("line 3, column 28"), "{err}");
}

#[test]
fn a_program_prints_as_a_graph_of_calls() {
    let o = uop(&[
        "print",
        "examples/programs/softmax.uop",
        "--stage",
        "hierarchy",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("input(%1 x: "), "{}", stdout(&o));
}

/// A graph with something for each prepare pass.
const PREPARE_ME: &str = "\
input x: f32[N]
a = mul(x, 1)
c = const(f32, [2], 1.0, 2.0)
s = reduce_sum(exp(c), [0])
b = exp(a)
d = exp(x)
fn th(v) { return mul(v, s) }
fn el(v) { return neg(v) }
r = if(1, th, el, add(b, d))
unused = tanh(x)
output r
";

const PREPARED: &str = "\
input x: f32[N]
s = const(f32, [1], 10.107337951660156)
t16 = kernel_k0(x, s)  # kernel k0 = {%6 exp, %9 add, %11 mul}; kernels have no text form yet
output t16
";

#[test]
fn print_stage_prepared_shows_the_graph_after_the_prepare_passes() {
    let dir = scratch("graph-prepared");
    let path = dir.join("g.uop");
    std::fs::write(&path, PREPARE_ME).expect("written");
    let file = path.to_str().expect("utf-8");
    let o = uop(&["print", file, "--stage", "prepared", "--verify"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), PREPARED);
    // The same graph after each pass, then the result.
    let o = uop(&["print", file, "--stage", "prepared", "--print-after", "all"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let headers: Vec<&str> = out.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(headers.len(), 9, "{out}");
    assert!(headers[0].starts_with("# after pass simplify: "));
    assert!(headers[4].starts_with("# after pass kernels: "));
    assert!(headers[5].starts_with("# after pass consts: "));
    assert!(headers[6].starts_with("# after pass loops: "));
    assert!(headers[7].starts_with("# after pass memory: "));
    assert_eq!(headers[8], "# prepared");
    assert!(out.ends_with(PREPARED));
    let o = uop(&[
        "print",
        file,
        "--stage",
        "prepared",
        "--print-after",
        "fold",
    ]);
    let out = stdout(&o);
    assert!(out.starts_with("# after pass fold: "), "{out}");
    assert!(
        out.contains("unused = tanh(x)"),
        "dead has not run after fold: {out}"
    );
}

#[test]
fn time_passes_prints_a_table_and_disable_pass_and_rewrite_limit_change_the_result() {
    let dir = scratch("graph-prepared-flags");
    let path = dir.join("g.uop");
    std::fs::write(&path, PREPARE_ME).expect("written");
    let file = path.to_str().expect("utf-8");
    let o = uop(&["print", file, "--stage", "prepared", "--time-passes"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stderr(&o);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 10, "{table}");
    for word in ["pass", "wall ms", "nodes", "kernels", "changed"] {
        assert!(lines[0].contains(word), "{table}");
    }
    assert!(
        lines[4].starts_with("dead") && lines[4].contains("yes"),
        "{table}"
    );
    assert!(lines[4].contains("15 -> 5"), "{table}");
    // Without `dead`, the bypassed nodes stay.
    let o = uop(&[
        "print",
        file,
        "--stage",
        "prepared",
        "--disable-pass",
        "dead",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("unused = tanh(x)"));
    // No rewrite at all: the graph as parsed.
    let o = uop(&[
        "print",
        file,
        "--stage",
        "prepared",
        "--rewrite-limit",
        "0",
        "--verify",
    ]);
    let parsed = uop(&["print", file, "--stage", "graph"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&parsed));
    // One rewrite: only `mul(x, 1)` bypassed.
    let o = uop(&["print", file, "--stage", "prepared", "--rewrite-limit", "1"]);
    assert!(stdout(&o).contains("b = exp(x)") && stdout(&o).contains("a = mul(x, 1)"));
}

#[test]
fn prepare_flags_name_graph_passes() {
    let o = uop(&[
        "print",
        "examples/graphs/power_loop.uop",
        "--stage",
        "prepared",
        "--disable-pass",
        "fuse",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(
            "--disable-pass fuse: there is no graph pass `fuse` (graph passes: simplify, fold, cse, dead, kernels, consts, loops, memory; decisions: split-joins)"
        ),
        "{}",
        stderr(&o)
    );
    let o = uop(&[
        "print",
        "examples/graphs/power_loop.uop",
        "--stage",
        "prepared",
        "--print-after",
        "fuse",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--print-after fuse: there is no graph pass"));
    let o = uop(&[
        "print",
        "examples/graphs/power_loop.uop",
        "--stage",
        "graph",
        "--time-passes",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--time-passes applies to --stage prepared"));
    // A program is a graph too.
    let o = uop(&[
        "print",
        "examples/programs/softmax.uop",
        "--stage",
        "prepared",
        "--verify",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("input "), "{}", stdout(&o));
}

#[test]
fn print_stage_kernels_lists_each_kernel_with_its_members_and_program() {
    let o = uop(&["print", "examples/graphs/mlp.uop", "--stage", "kernels"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let headers: Vec<&str> = out.lines().filter(|l| l.starts_with("kernel ")).collect();
    assert_eq!(
        headers,
        [
            "kernel k0 = {%2 matmul, %3 add, %4 relu}",
            "kernel k1 = {%5 matmul, %6 add, %7 relu}",
            "kernel k2 = {%8 matmul, %9 add, %10 relu}",
        ]
    );
    assert!(out.contains("  v4 = maximum(v3, 0.0)\n"), "{out}");
}

#[test]
fn print_stage_kernels_notes_a_split_join_and_disable_pass_turns_it_off() {
    let dir = scratch("split-joins");
    let file = dir.join("towers.uop");
    std::fs::write(
        &file,
        "input x: f32[B, D]\ninput v: f32[D, D]\ninput w: f32[D, D]\n\
         y = add(relu(matmul(x, v)), relu(matmul(x, w)))\noutput y\n",
    )
    .expect("written");
    let file = file.display().to_string();
    let headers = |extra: &[&str]| {
        let mut args = vec!["print", file.as_str(), "--stage", "kernels"];
        args.extend(extra);
        let o = uop(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
            .lines()
            .filter(|l| l.starts_with("kernel ") || l.starts_with("  #"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        headers(&[]),
        [
            "kernel k0 = {%2 matmul, %3 relu}",
            "kernel k1 = {%4 matmul, %5 relu}",
            "kernel k2 = {%6 add}",
            "  # split-joins: %6 add joins %3 and %5, independent branches with a contraction \
             each: kept out of their kernels",
        ]
    );
    assert_eq!(
        headers(&["--disable-pass", "split-joins"]),
        [
            "kernel k0 = {%4 matmul, %5 relu}",
            "kernel k1 = {%2 matmul, %3 relu, %6 add}",
        ]
    );
}

/// Runs `file` on seeded random inputs with `dims` on `backend`; returns output `y`.
fn run_random(backend: &str, file: &str, dims: &[&str]) -> Tensor {
    let dir = scratch(&format!("graph-random-{backend}"));
    let out = dir.join("y.npy");
    let out_arg = format!("y={}", out.display());
    let mut args = vec!["run", file, "--random", "3", "--backend", backend];
    for d in dims {
        args.extend(["--dim", d]);
    }
    args.extend(["--output", &out_arg]);
    let o = uop(&args);
    assert!(o.status.success(), "{backend} {file}: {}", stderr(&o));
    read_npy(&out).expect("output written")
}

#[test]
fn the_chunked_mlp_gives_the_mlps_results_on_every_backend() {
    // 2,500 rows: chunks of 1,024, 1,024 and a ragged 452.
    let dims = ["B=2500", "D=3", "H=5", "O=2"];
    let expected = run_random("interp", "examples/graphs/mlp.uop", &dims);
    assert_eq!(expected.shape, [2500, 2]);
    for backend in ["interp", "cranelift", "loops"] {
        let found = run_random(backend, "examples/graphs/chunked_mlp.uop", &dims);
        assert_eq!(found.shape, expected.shape, "{backend}");
        // The interpreter: bit for bit; the JIT may reassociate the matmul's sums.
        let tolerance = if backend == "interp" { 0.0 } else { 1e-5 };
        for (f, e) in found.data.iter().zip(&expected.data) {
            assert!(
                (f - e).abs() <= tolerance * e.abs().max(1.0),
                "{backend}: {f} vs {e}"
            );
        }
    }
    let o = uop(&[
        "print",
        "examples/graphs/chunked_mlp.uop",
        "--stage",
        "partitions",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with("# 1 chunk node(s), partitions 0..=1\n"),
        "{text}"
    );
    assert!(text.contains("sink "), "{text}");
}

/// `uop run examples/graphs/rows.uop --random 1 --dim ...` with extra arguments;
/// stdout.
fn run_rows(extra: &[&str]) -> String {
    let mut args = vec![
        "run",
        "examples/graphs/rows.uop",
        "--random",
        "1",
        "--dim",
        "R=3",
        "--dim",
        "N=5",
    ];
    args.extend(extra);
    let o = uop(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn streams_give_the_same_printed_results_for_every_count() {
    let one = run_rows(&["--streams", "1"]);
    assert!(one.starts_with("y: f32[3, 5]\n"), "{one}");
    for n in ["2", "3", "4"] {
        assert_eq!(run_rows(&["--streams", n]), one, "--streams {n}");
    }
    assert_eq!(run_rows(&[]), one, "the default");
}

#[test]
fn bad_stream_counts_and_misplaced_streams_are_one_error_line() {
    for (value, message) in [
        (
            "0",
            "error: invalid value '0' for '--streams <N>': a graph needs at least one stream\n",
        ),
        (
            "two",
            "error: invalid value 'two' for '--streams <N>': expected a number of streams, at least 1\n",
        ),
    ] {
        let o = uop(&["run", "examples/graphs/power_loop.uop", "--streams", value]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).starts_with(message), "{}", stderr(&o));
    }
    let o = uop(&[
        "run",
        "examples/graphs/rows.uop",
        "--random",
        "1",
        "--dim",
        "R=2",
        "--dim",
        "N=3",
        "--backend",
        "interp",
        "--streams",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: --streams: the graph interpreter (--backend interp) runs every node in order\n"
    );
}

#[test]
fn run_help_describes_streams() {
    let o = uop(&["run", "--help"]);
    assert!(o.status.success());
    let help = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(
            "--streams <N> Graphs on the executor: at most N streams run independent nodes at once"
        ),
        "{help}"
    );
}

#[test]
fn a_chunk_loop_that_mixes_rows_is_refused_on_every_backend_naming_the_node() {
    let dir = scratch("mixing-rows");
    let file = dir.join("flip.uop");
    std::fs::write(
        &file,
        "input x: f32[N, 3]\na = chunk(x, size=2)\ny = flip(a, axis=0)\noutput y\n",
    )
    .expect("written");
    let file = file.display().to_string();
    for backend in ["interp", "cranelift", "loops"] {
        let o = uop(&[
            "run",
            &file,
            "--random",
            "1",
            "--dim",
            "N=5",
            "--backend",
            backend,
        ]);
        assert!(!o.status.success(), "{backend}");
        let err = stderr(&o);
        assert!(
            err.contains("%3 (call flip) mixes the rows of the loop of chunk %2")
                || err.contains("(kernel k0) mixes the rows of the loop of chunk %2"),
            "{backend}: {err}"
        );
        assert!(!err.contains("panicked"), "{backend}: {err}");
    }
}
