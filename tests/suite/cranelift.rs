//! The Cranelift JIT from the root crate: every golden case's program (macro ops
//! included) against the interpreter on random data, the example programs, and the
//! `uop run --backend cranelift` / `uop emit` commands.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use uop::codegen::interp;
use uop::codegen::testing::{GenConfig, random_case_with};
use uop::codegen::text::parse_program;
use uop::codegen::uop::Program;
use uop::jit::{self, Options};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `.uop` programs under `dir`, recursively, named `file_name` (or any `.uop` file).
fn programs_under(dir: &Path, file_name: Option<&str>, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            programs_under(&path, file_name, out);
        } else if match file_name {
            Some(n) => path.file_name().is_some_and(|f| f == n),
            None => path.extension().is_some_and(|e| e == "uop"),
        } {
            out.push(path);
        }
    }
    out.sort();
}

fn load(path: &Path) -> Program {
    let src = std::fs::read_to_string(path).expect("readable");
    parse_program(&src, &uop::ops::registry()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Scalar JIT code is bit-identical to the interpreter, except in f32 programs using
/// the inline math, within 1e-6 of the larger of 1 and the value (about 8 f32 ulps);
/// vectorized code within 1e-5.
fn jit_agrees(path: &Path) {
    let program = load(path);
    let math = uop::cranelift::uses_inline_math(&program);
    let cfg = GenConfig {
        max_dim: 8,
        max_elements: 8192,
        ..GenConfig::default()
    };
    let case =
        random_case_with(&program, 1, &cfg).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let expected = interp::run(&program, &case.inputs, &case.params)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for opts in [
        Options {
            vectorize: false,
            ..Options::default()
        },
        Options::default(),
    ] {
        let kernel = jit::compile_with(&program, &opts)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let got = kernel
            .run(&case.inputs, &case.params)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (e, g) in expected.iter().zip(&got) {
            assert_eq!(e.shape, g.shape);
            for (a, b) in e.data.iter().zip(&g.data) {
                let exact = a == b || (a.is_nan() && b.is_nan());
                let near = (a - b).abs() <= 1e-5 * (1.0 + a.abs());
                let math_near = (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0);
                assert!(
                    exact || (opts.vectorize && near) || (math && math_near),
                    "{} ({opts:?}): {a} vs {b}",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn golden_case_programs_run_through_the_jit() {
    let mut paths = Vec::new();
    programs_under(
        &root().join("tests/golden/cases"),
        Some("program.uop"),
        &mut paths,
    );
    assert!(
        paths.len() >= 100,
        "only {} golden cases under tests/golden/cases (expected the whole suite, 200+)",
        paths.len()
    );
    for path in &paths {
        jit_agrees(path);
    }
}

#[test]
fn example_programs_run_through_the_jit() {
    let mut paths = Vec::new();
    programs_under(&root().join("examples/programs"), None, &mut paths);
    assert!(!paths.is_empty());
    for path in &paths {
        jit_agrees(path);
    }
}

fn uop(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_uop"))
        .args(args)
        .output()
        .expect("the uop binary runs")
}

#[test]
fn run_with_the_cranelift_backend_prints_what_the_interpreter_prints() {
    let program = root().join("examples/programs/softmax.uop");
    let program = program.to_str().expect("utf-8 path");
    let args = |backend| {
        let out = uop(&[
            "run",
            program,
            "--random",
            "3",
            "--dim",
            "B=2",
            "--dim",
            "N=5",
            "--backend",
            backend,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(args("cranelift"), args("interp"));
}

#[test]
fn emit_writes_headers_clif_and_objects() {
    let program = root().join("examples/programs/matmul.uop");
    let program = program.to_str().expect("utf-8 path");
    let header = uop(&["emit", program, "--target", "header", "--name", "mm"]);
    assert!(header.status.success());
    let header = String::from_utf8_lossy(&header.stdout);
    assert!(
        header.contains("int32_t mm(const void *const *inputs"),
        "{header}"
    );
    assert!(header.contains("inputs[1]  b: float[K, N]"), "{header}");

    let clif = uop(&["emit", program, "--target", "clif"]);
    assert!(clif.status.success());
    assert!(String::from_utf8_lossy(&clif.stdout).contains("function %matmul("));

    let missing = uop(&["emit", program, "--target", "object"]);
    assert!(!missing.status.success(), "an object needs -o");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("uop-emit");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("mm.o");
    let path = path.to_str().expect("utf-8 path");
    let object = uop(&["emit", program, "--target", "object", "-o", path]);
    assert!(
        object.status.success(),
        "{}",
        String::from_utf8_lossy(&object.stderr)
    );
    let bytes = std::fs::read(path).expect("written");
    assert!(
        bytes.starts_with(b"\x7fELF") || bytes.len() > 64,
        "an object file"
    );
}

#[test]
fn the_facade_compiles_once_per_program() {
    let program = load(&root().join("examples/programs/layer_norm.uop"));
    let a = jit::compile(&program).expect("compiles");
    let b = jit::compile(&program).expect("compiles");
    assert!(a.shares_code_with(&b));
    let shapes: [&[usize]; 3] = [&[2, 4], &[4], &[4]];
    assert_eq!(
        a.output_shapes(&shapes, &HashMap::new()).expect("fits"),
        vec![vec![2, 4]]
    );
}

/// The smallest golden case calling each macro op (fewest non-comment lines, then
/// name), as `tests/suite/ops_reference.rs` picks it: (op, program).
fn smallest_case_per_op() -> Vec<(String, Program)> {
    let mut paths = Vec::new();
    programs_under(
        &root().join("tests/golden/cases"),
        Some("program.uop"),
        &mut paths,
    );
    let texts: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            let name = p
                .parent()
                .and_then(|d| d.strip_prefix(root().join("tests/golden/cases")).ok())
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, std::fs::read_to_string(p).expect("readable"))
        })
        .collect();
    let calls = |text: &str, op: &str| {
        let pattern = format!("{op}(");
        text.match_indices(&pattern).any(|(at, _)| {
            !text[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    let registry = uop::ops::registry();
    let mut out = Vec::new();
    for op in registry.iter() {
        let smallest = texts
            .iter()
            .filter(|(_, text)| calls(text, &op.name))
            .min_by_key(|(name, text)| {
                (
                    text.lines().filter(|l| !l.starts_with('#')).count(),
                    name.clone(),
                )
            });
        if let Some((case, text)) = smallest {
            let program = parse_program(text, &registry)
                .unwrap_or_else(|e| panic!("golden case {case} does not parse: {e}"));
            out.push((op.name.clone(), program));
        }
    }
    out
}

/// The gradient program of every float input, every float output seeded (what
/// `uop grad` differentiates by default).
fn full_gradient(program: &Program) -> Option<Program> {
    let wrt: Vec<_> = program
        .inputs
        .iter()
        .copied()
        .filter(|i| program.node(*i).dtype.is_float())
        .collect();
    let mut seeds = Vec::new();
    for o in &program.outputs {
        if program.node(*o).dtype.is_float() && !seeds.contains(o) {
            seeds.push(*o);
        }
    }
    if wrt.is_empty() || seeds.is_empty() {
        return None;
    }
    let spec = uop::codegen::grad::GradSpec {
        seeds,
        wrt,
        supplied: vec![],
    };
    uop::codegen::grad::gradient(program, &spec)
        .ok()
        .map(|g| g.program)
}

/// The two register allocators, in the order the measurements print them.
const ALLOCATORS: [(&str, bool); 2] = [("backtracking", false), ("single_pass", true)];

/// Per register allocator (in [`ALLOCATORS`] order): (lowering + passes, Cranelift)
/// in ms.
type Times = [(f64, f64); 2];

/// Median of `reps` uncached compiles with each register allocator, the two
/// interleaved so load changes on the machine hit both alike.
fn compile_times(program: &Program, reps: usize) -> Times {
    use std::time::Instant;
    use uop::cranelift;
    let mut passes = [Vec::new(), Vec::new()];
    let mut clif = [Vec::new(), Vec::new()];
    for _ in 0..reps {
        for (k, (_, fast_compile)) in ALLOCATORS.into_iter().enumerate() {
            let opts = Options {
                fast_compile,
                ..Options::default()
            };
            let t0 = Instant::now();
            let optimized = cranelift::optimized(program).expect("optimizes");
            let t1 = Instant::now();
            let kernel = cranelift::compile_uncached(&optimized, &opts).expect("compiles");
            let t2 = Instant::now();
            drop(kernel);
            passes[k].push((t1 - t0).as_secs_f64() * 1e3);
            clif[k].push((t2 - t1).as_secs_f64() * 1e3);
        }
    }
    [0, 1].map(|k| (median(&mut passes[k]), median(&mut clif[k])))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Compile latency of every library op, forward and backward, with both register
/// allocators: run with
/// `cargo test --release --test suite cranelift::compile_latency -- --ignored --nocapture`
/// (`UOP_LATENCY_ALL=1` prints every op, not just the summary and the slowest).
#[test]
#[ignore = "a measurement: prints a table of timings"]
fn compile_latency_of_every_library_op() {
    let cases = smallest_case_per_op();
    assert!(!cases.is_empty(), "the golden cases are missing");
    let reps = 7;
    let mut rows: Vec<(String, &str, Times)> = Vec::new();
    for (op, program) in &cases {
        rows.push((op.clone(), "forward", compile_times(program, reps)));
        if let Some(g) = full_gradient(program) {
            rows.push((op.clone(), "backward", compile_times(&g, reps)));
        }
    }
    let default = usize::from(Options::default().fast_compile);
    if std::env::var_os("UOP_LATENCY_ALL").is_some() {
        for (op, dir, t) in &rows {
            let (p, c) = t[default];
            println!(
                "{op:24} {dir:8} passes {p:7.3} ms  cranelift {c:7.3} ms  total {:7.3} ms",
                p + c
            );
        }
    }
    println!(
        "| direction | register allocator | ops | passes median | Cranelift median | total median | total max | ops under 1 ms |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for dir in ["forward", "backward"] {
        for (k, (allocator, _)) in ALLOCATORS.into_iter().enumerate() {
            let of: Vec<(f64, f64)> = rows.iter().filter(|r| r.1 == dir).map(|r| r.2[k]).collect();
            let mut p: Vec<f64> = of.iter().map(|r| r.0).collect();
            let mut c: Vec<f64> = of.iter().map(|r| r.1).collect();
            let mut t: Vec<f64> = of.iter().map(|r| r.0 + r.1).collect();
            let under = t.iter().filter(|&&x| x < 1.0).count();
            let max = t.iter().copied().fold(0.0, f64::max);
            println!(
                "| {dir} | {allocator} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {max:.1} ms | {under} |",
                of.len(),
                median(&mut p),
                median(&mut c),
                median(&mut t)
            );
        }
    }
    let total = |t: &Times, k: usize| t[k].0 + t[k].1;
    rows.sort_by(|a, b| total(&b.2, default).total_cmp(&total(&a.2, default)));
    println!("\nslowest with the default allocator (passes / Cranelift / total):");
    for (op, dir, t) in rows.iter().take(8) {
        let (p, c) = t[default];
        println!("| {op} ({dir}) | {p:.2} ms | {c:.2} ms | {:.2} ms |", p + c);
    }
}

/// Deterministic data in [-1, 1) (the generator of the benches).
fn bench_data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Run time of the JIT kernels with each register allocator on the workloads of
/// `benches/kernels.rs` (conv2d with batch 1 instead of 8, to keep the run short):
/// `cargo test --release --test suite cranelift::run_time_with_both_register_allocators -- --ignored --nocapture`.
/// The two kernels of a workload run alternately (order swapped every round), so
/// the machine's load hits both alike; the ratio of medians is what counts.
#[test]
#[ignore = "a measurement: prints a table of timings"]
fn run_time_with_both_register_allocators() {
    use std::time::Instant;
    use uop::jit::{Input, Output};
    let rounds: usize = std::env::var("UOP_REGALLOC_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let workloads: [(&str, &str, Vec<Vec<usize>>); 8] = [
        ("gelu_chain 4M", "gelu_chain", vec![vec![4 << 20]]),
        ("softmax 4096x1024", "softmax", vec![vec![4096, 1024]]),
        (
            "layernorm 4096x1024",
            "layernorm",
            vec![vec![4096, 1024], vec![1024], vec![1024]],
        ),
        ("column_sum 4096x1024", "column_sum", vec![vec![4096, 1024]]),
        ("sum 16M", "sum", vec![vec![16 << 20]]),
        ("matmul 512", "matmul", vec![vec![512, 512], vec![512, 512]]),
        (
            "conv2d 1x64x56x56 k3",
            "conv2d",
            vec![vec![1, 64, 56, 56], vec![64, 64, 3, 3]],
        ),
        ("transpose 1024", "transpose", vec![vec![1024, 1024]]),
    ];
    println!("| workload | backtracking | single_pass | single_pass / backtracking |");
    println!("|---|---|---|---|");
    let mut log_ratios = Vec::new();
    for (id, file, shapes) in workloads {
        let program = load(&root().join(format!("prebuilt/kernels/{file}.uop")));
        let kernels = ALLOCATORS.map(|(_, fast_compile)| {
            let opts = Options {
                fast_compile,
                ..Options::default()
            };
            jit::compile_with(&program, &opts).expect("compiles")
        });
        let data: Vec<Vec<f32>> = shapes
            .iter()
            .enumerate()
            .map(|(k, s)| bench_data(s.iter().product(), k as u64 + 1))
            .collect();
        let args: Vec<(Input<'_>, &[usize])> = data
            .iter()
            .zip(&shapes)
            .map(|(d, s)| (Input::F32(d), s.as_slice()))
            .collect();
        let shape_refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let out_shapes = kernels[0]
            .output_shapes(&shape_refs, &HashMap::new())
            .expect("shapes fit");
        let mut outs: Vec<Vec<f32>> = out_shapes
            .iter()
            .map(|s| vec![0.0; s.iter().product()])
            .collect();
        let mut times = [Vec::new(), Vec::new()];
        for round in 0..=rounds {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for k in order {
                let mut slices: Vec<Output<'_>> = outs.iter_mut().map(|v| Output::F32(v)).collect();
                let t = Instant::now();
                kernels[k]
                    .run_slices(&args, &HashMap::new(), &mut slices)
                    .expect("runs");
                // Round 0 warms caches and pages up; it is not counted.
                if round > 0 {
                    times[k].push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
        let [a, b] = [0, 1].map(|k| median(&mut times[k]));
        log_ratios.push((b / a).ln());
        println!("| {id} | {a:.2} ms | {b:.2} ms | {:.2} |", b / a);
    }
    let geomean = (log_ratios.iter().sum::<f64>() / log_ratios.len() as f64).exp();
    println!("| geometric mean | | | {geomean:.2} |");
}
