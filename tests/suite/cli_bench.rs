//! `uop bench` as a user runs it, at `--quick` sizes: the table and the JSON lines
//! have the shape `peers.py` users expect; timings themselves are not asserted.
//! The Rust backend (the prebuilt kernels) is there only in a `uop` built with the
//! feature `prebuilt` (`cargo test --features prebuilt`, as `.ci/run` does).

use crate::common;
use common::{stderr, stdout, uop};

const NAMES: [&str; 9] = [
    "gelu_4M",
    "softmax_4096x1024",
    "layernorm_4096x1024",
    "sum_16M",
    "colsum_4096x1024",
    "matmul_512",
    "matmul_1024",
    "conv2d_8x64x56x56_k3",
    "transpose_1024",
];

/// The backends `uop bench` times by default, in order.
const BACKENDS: &[&str] = if cfg!(feature = "prebuilt") {
    &["rust", "cranelift"]
} else {
    &["cranelift"]
};

/// The raw value text of `key` in a flat one-line JSON object.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\": "))? + key.len() + 4;
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

#[test]
fn json_prints_one_object_per_workload_and_backend_with_every_field() {
    let o = uop(&["bench", "--quick", "--json", "--reps", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), BACKENDS.len() * NAMES.len(), "{out}");
    for (i, line) in lines.iter().enumerate() {
        assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
        let (name, backend) = (
            NAMES[i / BACKENDS.len()],
            format!("\"{}\"", BACKENDS[i % BACKENDS.len()]),
        );
        assert_eq!(
            field(line, "workload"),
            Some(format!("\"{name}\"").as_str())
        );
        assert_eq!(field(line, "backend"), Some(backend.as_str()));
        assert_eq!(field(line, "threads"), Some("1"));
        assert_eq!(field(line, "quick"), Some("true"));
        for key in [
            "ms",
            "metric",
            "pct_of_limit",
            "naive_ms",
            "speedup_vs_naive",
        ] {
            let v: f64 = field(line, key)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{key} missing or not a number in {line}"));
            assert!(v > 0.0, "{key} in {line}");
        }
        let diff: f64 = field(line, "max_rel_diff")
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert!(
            diff < 1e-4,
            "the kernel disagrees with the naive loop: {line}"
        );
        let unit = if name.starts_with("matmul") || name.starts_with("conv") {
            "\"GFLOP/s\""
        } else {
            "\"GB/s\""
        };
        assert_eq!(field(line, "unit"), Some(unit), "{line}");
        assert_eq!(
            field(line, "compile_ms").is_some(),
            backend == "\"cranelift\"",
            "{line}"
        );
    }
}

#[test]
fn backend_and_workload_select_one_line() {
    let o = uop(&[
        "bench",
        "--quick",
        "--json",
        "--threads",
        "1",
        "--backend",
        "cranelift",
        "--workload",
        "matmul_1024",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert_eq!(field(lines[0], "workload"), Some("\"matmul_1024\""));
    assert_eq!(field(lines[0], "backend"), Some("\"cranelift\""));
}

#[test]
fn no_naive_skips_the_naive_loop_and_prints_its_fields_as_null() {
    let o = uop(&[
        "bench",
        "--quick",
        "--json",
        "--no-naive",
        "--backend",
        "cranelift",
        "--workload",
        "matmul_512",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    for key in ["naive_ms", "speedup_vs_naive", "max_rel_diff"] {
        assert_eq!(field(lines[0], key), Some("null"), "{key}: {out}");
    }
    let ms: f64 = field(lines[0], "ms")
        .unwrap()
        .parse()
        .expect("ms is a number");
    assert!(ms > 0.0, "{out}");
}

#[test]
fn the_table_has_a_header_a_row_per_workload_and_backend_and_states_the_measured_limits() {
    let backend = BACKENDS[0];
    let o = uop(&["bench", "--quick", "--backend", backend, "--reps", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("workload") && lines[0].contains("% limit"),
        "{out}"
    );
    for (line, name) in lines[1..].iter().zip(NAMES) {
        assert!(
            line.starts_with(name) && line.contains(&format!(" {backend} ")),
            "{line}"
        );
    }
    // The measured limits, named: `limits on this machine: X GFLOP/s (LEVEL, 1 core), Y GB/s`.
    let limits = lines[NAMES.len() + 1];
    let rest = limits
        .strip_prefix("limits on this machine: ")
        .unwrap_or_else(|| panic!("{out}"));
    let (gflops, rest) = rest.split_once(" GFLOP/s (").expect("a GFLOP/s figure");
    let (level, rest) = rest
        .split_once(", 1 core), ")
        .expect("the level and 1 core");
    let gbs = rest.strip_suffix(" GB/s (triad)").expect("a GB/s figure");
    for v in [gflops, gbs] {
        let v: f64 = v.parse().unwrap_or_else(|_| panic!("{limits}"));
        assert!(v.is_finite() && v > 0.0, "{limits}");
    }
    assert!(
        ["sse2", "avx2+fma", "avx512+fma"].contains(&level),
        "{limits}"
    );
    assert_eq!(lines.len(), NAMES.len() + 3, "{out}");
}

#[cfg(feature = "prebuilt")]
#[test]
fn two_threads_apply_to_the_rust_backend_and_the_two_thread_limits() {
    let o = uop(&[
        "bench",
        "--quick",
        "--json",
        "--threads",
        "2",
        "--workload",
        "softmax_4096x1024",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(field(lines[0], "backend"), Some("\"rust\""));
    assert_eq!(field(lines[0], "threads"), Some("2"));
    assert_eq!(field(lines[1], "backend"), Some("\"cranelift\""));
    assert_eq!(field(lines[1], "threads"), Some("1"));
    // Each row against the limits measured on its own thread count (positive numbers;
    // two threads share two cores with other work, so no ratio is asserted).
    for line in &lines {
        let limit: f64 = field(line, "limit").and_then(|v| v.parse().ok()).unwrap();
        assert!(limit.is_finite() && limit > 0.0, "{line}");
    }
}

#[cfg(not(feature = "prebuilt"))]
#[test]
fn the_rust_backend_needs_the_prebuilt_feature() {
    let o = uop(&["bench", "--quick", "--backend", "rust", "--reps", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: --backend rust: this uop is built without the prebuilt Rust-backend kernels; \
         build it with the feature `prebuilt` (cargo install --path . --features prebuilt)\n"
    );
    assert_eq!(stdout(&o), "");
}

#[test]
fn zero_threads_is_refused() {
    let o = uop(&["bench", "--quick", "--threads", "0"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("at least 1"), "{}", stderr(&o));
}

#[test]
fn an_unknown_workload_is_refused_with_the_list_of_names() {
    let o = uop(&["bench", "--quick", "--workload", "gelu"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("unknown workload `gelu`") && e.contains("conv2d_8x64x56x56_k3"),
        "{e}"
    );
}

/// `uop bench --graph` on the transformer block at small sizes.
fn graph_bench(extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "bench",
        "--graph",
        "examples/graphs/transformer_block.uop",
        "--dim",
        "T=8",
        "--dim",
        "D=8",
        "--dim",
        "F=16",
        "--reps",
        "3",
    ];
    args.extend_from_slice(extra);
    uop(&args)
}

#[test]
fn graph_json_is_one_object_with_the_first_call_and_the_median_of_later_calls() {
    let o = graph_bench(&["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    let line = lines[0];
    assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
    assert_eq!(
        field(line, "file"),
        Some("\"examples/graphs/transformer_block.uop\"")
    );
    assert_eq!(field(line, "backend"), Some("\"cranelift\""));
    assert_eq!(field(line, "reps"), Some("3"));
    assert_eq!(field(line, "warmup"), Some("1"));
    for key in ["ms", "first_ms"] {
        let v: f64 = field(line, key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} missing or not a number in {line}"));
        assert!(v.is_finite() && v > 0.0, "{key} in {line}");
    }
    assert!(
        line.contains("\"dims\": {\"T\": 8, \"D\": 8, \"F\": 16}"),
        "{line}"
    );
}

#[test]
fn graph_runs_on_the_loop_interpreter_and_a_program_as_a_graph_of_one_kernel() {
    let o = graph_bench(&["--json", "--backend", "loops", "--warmup", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(field(&out, "backend"), Some("\"loops\""), "{out}");
    assert_eq!(field(&out, "warmup"), Some("0"), "{out}");
    let o = uop(&[
        "bench",
        "--graph",
        "examples/programs/softmax.uop",
        "--dim",
        "B=4",
        "--dim",
        "N=8",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("first call") && out.contains("later calls"),
        "{out}"
    );
}

#[test]
fn graph_flags_and_workload_flags_do_not_mix() {
    for (extra, message) in [
        (&["--quick"][..], "--quick: applies to the workloads"),
        (&["--workload", "matmul_512"][..], "--workload: applies"),
        (
            &["--backend", "rust"][..],
            "--backend rust: the graph executor",
        ),
    ] {
        let o = graph_bench(extra);
        assert!(!o.status.success(), "{extra:?}");
        assert!(stderr(&o).contains(message), "{extra:?}: {}", stderr(&o));
    }
    let o = uop(&["bench", "--backend", "loops"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("pass --graph FILE"), "{}", stderr(&o));
    let o = uop(&["bench", "--dim", "T=8"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--graph"), "{}", stderr(&o));
    let o = uop(&[
        "bench",
        "--graph",
        "examples/programs/softmax.uop",
        "--reps",
        "0",
    ]);
    assert!(
        stderr(&o).contains("--reps must be at least 1"),
        "{}",
        stderr(&o)
    );
    let o = graph_bench(&["--dim", "X=3"]);
    assert!(stderr(&o).contains("no dimension `X`"), "{}", stderr(&o));
}
