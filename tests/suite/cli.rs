//! The `uop` binary as a user runs it: `uop run` on .npy files and random data,
//! `uop print` at each stage, and one clear error (exit code 1) for each kind of
//! mistake, with nothing written when a run fails.

use std::path::Path;

use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop::npy::read_npy;

use crate::common;
use common::{scratch, stderr, stdout, uop, write};

fn matrix(rows: usize, cols: usize, f: impl Fn(usize, usize) -> f64) -> Tensor {
    let data = (0..rows * cols).map(|k| f(k / cols, k % cols)).collect();
    Tensor::new(DType::F32, vec![rows, cols], data).expect("consistent")
}

#[test]
fn run_matmul_from_npy_files_matches_a_naive_loop() {
    let dir = scratch("cli-matmul");
    let a = matrix(4, 2, |i, j| (i * 2 + j) as f64 - 3.0);
    let b = matrix(2, 3, |i, j| (i as f64) * 0.5 - j as f64);
    let (pa, pb) = (write(&dir, "a.npy", &a), write(&dir, "b.npy", &b));
    let out = dir.join("c.npy");
    for backend in ["interp", "loops"] {
        let o = uop(&[
            "run",
            "examples/programs/matmul.uop",
            "--input",
            &format!("a={pa}"),
            "--input",
            &format!("b={pb}"),
            "--output",
            &format!("c={}", out.display()),
            "--backend",
            backend,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let c = read_npy(&out).expect("output written");
        assert_eq!(c.shape, vec![4, 3]);
        for i in 0..4 {
            for j in 0..3 {
                let expected: f64 = (0..2).map(|k| a.data[i * 2 + k] * b.data[k * 3 + j]).sum();
                assert_eq!(c.data[i * 3 + j], expected, "c[{i}, {j}] with {backend}");
            }
        }
    }
}

#[test]
fn outputs_without_a_file_are_printed_with_their_shape() {
    let o = uop(&[
        "run",
        "examples/programs/softmax.uop",
        "--random",
        "7",
        "--dim",
        "B=2",
        "--dim",
        "N=3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("y: f32[2, 3]\n[["), "{text}");
    // Each row of a softmax sums to one.
    let rows: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| {
            l.trim_matches(|c| c == '[' || c == ']' || c == ',' || c == ' ')
                .split(',')
                .map(|v| {
                    v.trim()
                        .trim_end_matches(']')
                        .parse::<f64>()
                        .expect("a number")
                })
                .sum()
        })
        .collect();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert!((r - 1.0).abs() < 1e-6, "row sums to {r}");
    }
}

#[test]
fn random_runs_are_reproducible_and_backends_agree() {
    let args = |backend: &'static str| {
        uop(&[
            "run",
            "examples/programs/conv_params.uop",
            "--random",
            "3",
            "--dim",
            "N=1",
            "--dim",
            "H=4",
            "--dim",
            "W=4",
            "--dim",
            "C=5",
            "--dim",
            "O=2",
            "--dim",
            "KH=3",
            "--dim",
            "KW=3",
            "--param",
            "kh=3",
            "--param",
            "kw=3",
            "--param",
            "kc=2",
            "--backend",
            backend,
        ])
    };
    let (a, b) = (args("interp"), args("loops"));
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b));
    assert_eq!(stdout(&a), stdout(&args("interp")));
}

#[test]
fn print_shows_the_program_and_its_loop_ir() {
    let o = uop(&["print", "examples/programs/matmul.uop"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("input a: f32[M, K]"), "{}", stdout(&o));
    let o = uop(&["print", "examples/programs/matmul.uop", "--stage", "loops"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("block 0 {") && text.contains("for i0 in 0..M"),
        "{text}"
    );
}

#[test]
fn print_reads_a_loop_program_and_verify_names_what_breaks_its_marks() {
    let dir = scratch("print-loops");
    let good = "input  x: f32[N]\noutput y: f32[N]\nblock 0 {\n  for i0 in 0..N {\n    y[i0] = x[i0] * 2.0\n  }\n}\n";
    let path = dir.join("double.loops");
    std::fs::write(&path, good).expect("write");
    let file = path.to_string_lossy().into_owned();
    // Printed back as it is, optimized by the pipeline (`parallel`, `line`).
    let o = uop(&["print", &file, "--stage", "loops", "--verify"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), good);
    let o = uop(&["print", &file, "--stage", "opt", "--verify"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("  for i0 in 0..N [parallel, line split] {\n"),
        "{}",
        stdout(&o)
    );
    let o = uop(&["print", &file, "--stage", "opt", "--disable-pass", "line"]);
    assert!(
        stdout(&o).contains("  for i0 in 0..N [parallel] {\n"),
        "{}",
        stdout(&o)
    );
    let o = uop(&["print", &file, "--after-each-pass", "--verify"]);
    assert!(stdout(&o).contains("# after pass line: "), "{}", stdout(&o));

    // A mark whose guarantee does not hold: the store is strided.
    let bad = good
        .replace("0..N {", "0..N [line split] {")
        .replace("y[i0] =", "y[N - 1 - i0] =");
    let path = dir.join("bad.loops");
    std::fs::write(&path, &bad).expect("write");
    let file = path.to_string_lossy().into_owned();
    let o = uop(&["print", &file, "--stage", "loops"]);
    assert!(
        o.status.success(),
        "without --verify it prints: {}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), bad);
    let message = format!(
        "error: --verify: {file}: invalid loop IR: block 0, loop i0: [line split] needs the \
         innermost loop, neither [split] nor [blocked], with an unchecked store of unit stride \
         along it\n"
    );
    for stage in [
        &["--stage", "loops"][..],
        &["--stage", "opt"],
        &["--after-each-pass"],
    ] {
        let o = uop(&[&["print", &file, "--verify"][..], stage].concat());
        assert_eq!(o.status.code(), Some(1), "{stage:?}");
        assert_eq!(stderr(&o), message, "{stage:?}");
        assert!(stdout(&o).is_empty(), "{stage:?}");
    }
    let o = uop(&["print", &file, "--stage", "grad"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("a loop program (`.loops`) has the stages `loops` and `opt`"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_example_program_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/programs");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).expect("examples exist") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "uop") {
            let o = uop(&["print", path.to_str().expect("utf-8 path")]);
            assert!(o.status.success(), "{}: {}", path.display(), stderr(&o));
            count += 1;
        }
    }
    assert!(count >= 5);
}

#[test]
fn a_syntax_error_shows_the_file_and_a_caret() {
    let dir = scratch("cli-syntax");
    let prog = dir.join("bad.uop");
    std::fs::write(
        &prog,
        "input a: f32[M, K]\nb = reindex(a, [M, K+], [i0, i1])\noutput b\n",
    )
    .expect("write");
    let o = uop(&["print", prog.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("bad.uop") && err.contains("line 2, column 22"),
        "{err}"
    );
    assert!(
        err.contains("2 | b = reindex(a, [M, K+], [i0, i1])"),
        "{err}"
    );
    assert!(err.lines().any(|l| l.trim_end().ends_with('^')), "{err}");
}

#[test]
fn mistakes_on_the_command_line_are_one_clear_error() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "examples/programs/matmul.uop"],
            "input `a` is not given",
        ),
        (
            &[
                "run",
                "examples/programs/matmul.uop",
                "--random",
                "1",
                "--dim",
                "M=2",
            ],
            "--dim K=SIZE",
        ),
        (
            &[
                "run",
                "examples/programs/matmul.uop",
                "--random",
                "1",
                "--dim",
                "M=2",
                "--dim",
                "K=2",
                "--dim",
                "N=2",
                "--output",
                "zz=x.npy",
            ],
            "no output `zz`",
        ),
        (
            &["run", "examples/programs/matmul.uop", "--input", "q=x.npy"],
            "no input `q`",
        ),
        (
            &[
                "run",
                "examples/programs/matmul.uop",
                "--random",
                "1",
                "--param",
                "kh=3",
            ],
            "no parameter `$kh`",
        ),
        (
            &["run", "examples/programs/matmul.uop", "--dim", "M"],
            "NAME=VALUE",
        ),
        (
            &["run", "examples/programs/matmul.uop", "--dim", "M=x"],
            "not an integer",
        ),
        (&["run", "no/such/file.uop"], "cannot read no/such/file.uop"),
        (
            &[
                "run",
                "examples/programs/conv_params.uop",
                "--random",
                "1",
                "--dim",
                "N=1",
                "--dim",
                "H=4",
                "--dim",
                "W=4",
                "--dim",
                "C=5",
                "--dim",
                "O=2",
                "--dim",
                "KH=3",
                "--dim",
                "KW=3",
            ],
            "pass --param kh=N",
        ),
    ];
    for (args, expected) in cases {
        let o = uop(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.starts_with("error: ") && err.contains(expected),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    }
}

#[test]
fn a_wrong_npy_input_names_the_file_and_nothing_is_written() {
    let dir = scratch("cli-wrong-npy");
    let out = dir.join("c.npy");
    let f64_matrix = Tensor::new(DType::F64, vec![2, 2], vec![1.0; 4]).expect("tensor");
    let bad_dtype = write(&dir, "f64.npy", &f64_matrix);
    let garbage = dir.join("garbage.npy");
    std::fs::write(&garbage, b"not numpy at all").expect("write");
    let rank3 = write(&dir, "rank3.npy", &Tensor::zeros(DType::F32, vec![2, 2, 2]));
    let good = write(&dir, "good.npy", &matrix(2, 2, |i, j| (i + j) as f64));
    let cases = [
        (bad_dtype.clone(), "is f32, but the file holds f64"),
        (
            garbage.to_string_lossy().into_owned(),
            "garbage.npy: not a .npy file",
        ),
        (rank3, "expected rank 2"),
    ];
    for (file, expected) in cases {
        let o = uop(&[
            "run",
            "examples/programs/matmul.uop",
            "--input",
            &format!("a={file}"),
            "--input",
            &format!("b={good}"),
            "--output",
            &format!("c={}", out.display()),
        ]);
        assert_eq!(o.status.code(), Some(1), "{file}");
        let err = stderr(&o);
        assert!(err.contains(expected), "{file}: {err}");
        assert!(!out.exists(), "no output is written when the run fails");
    }
}

#[test]
fn ops_lists_micro_and_macro_ops_with_signatures() {
    let o = uop(&["ops"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("micro ops (") && text.contains("macro ops ("),
        "{text}"
    );
    assert!(text.contains("softmax(x, axis=-1)"), "{text}");
    assert!(text.contains("reindex(x, [shape], [index]"), "{text}");
    let o = uop(&["ops", "pool"]);
    let text = stdout(&o);
    assert!(
        text.contains("max_pool2d(") && !text.contains("softmax"),
        "{text}"
    );
}

#[test]
fn macro_ops_run_by_name() {
    let dir = scratch("cli-macro");
    let prog = dir.join("ln.uop");
    std::fs::write(
        &prog,
        "input x: f32[B, N]\ninput g: f32[N]\ninput b: f32[N]\ny = layernorm(gelu(x), g, b, eps=1e-5)\noutput y\n",
    )
    .expect("write");
    let o = uop(&[
        "run",
        prog.to_str().expect("utf-8"),
        "--random",
        "1",
        "--dim",
        "B=2",
        "--dim",
        "N=4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("y: f32[2, 4]"), "{}", stdout(&o));
}

#[test]
fn emit_writes_rust_kernels_and_their_gradients() {
    let o = uop(&["emit", "examples/programs/softmax.uop", "--target", "rust"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("pub fn softmax("), "{}", stdout(&o));
    let o = uop(&[
        "emit",
        "examples/programs/softmax.uop",
        "--target",
        "rust",
        "--grad",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("pub fn softmax_grad(") && text.contains("g_y"),
        "{text}"
    );
}

#[test]
fn emit_grad_works_for_every_target() {
    let dir = scratch("emit-grad");
    let object = dir.join("softmax_grad.o");
    let cases: [(&str, &str); 4] = [
        ("rust", "pub fn softmax_grad("),
        (
            "clif",
            "function %softmax_grad(i64, i64, i64, i64, i64) -> i32",
        ),
        ("header", "int32_t softmax_grad(const void *const *inputs"),
        ("object", ""),
    ];
    for (target, expected) in cases {
        let mut args = vec![
            "emit",
            "examples/programs/softmax.uop",
            "--grad",
            "--target",
            target,
        ];
        let path = object.to_string_lossy().into_owned();
        if target == "object" {
            args.extend(["-o", path.as_str()]);
        }
        let o = uop(&args);
        assert!(o.status.success(), "{target}: {}", stderr(&o));
        assert!(stdout(&o).contains(expected), "{target}: {}", stdout(&o));
    }
    let bytes = std::fs::read(&object).expect("object written");
    assert_eq!(&bytes[..4], b"\x7fELF");
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("softmax_grad_shapes"),
        "the object defines its symbols"
    );
}

#[test]
fn emit_refuses_a_kernel_name_that_would_clash_and_says_why() {
    let dir = scratch("cli-names");
    let softmax = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/programs/softmax.uop"),
    )
    .expect("readable");
    let free = dir.join("free.uop");
    std::fs::write(&free, &softmax).expect("write");
    let free = free.to_str().expect("utf-8");
    let object = dir.join("k.o");
    let object = object.to_str().expect("utf-8");
    // From the file name: `free` would clash with the C library's, so the default
    // name is `k_free`, valid for every target (docs/kernel-names.md).
    let o = uop(&["emit", free, "--target", "header"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("k_free("), "{}", stdout(&o));
    // Named by the user, it is refused, and the error says why.
    let o = uop(&[
        "emit", free, "--target", "object", "-o", object, "--name", "free",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("`free`") && err.contains("stdlib.h"), "{err}");
    assert!(!Path::new(object).exists(), "nothing written");
    for (name, why) in [
        ("exp", "math.h"),
        ("main", "entry point"),
        ("int", "C keyword"),
        ("Free", "lowercase snake_case"),
    ] {
        for target in ["object", "header", "clif"] {
            let o = uop(&[
                "emit", free, "--target", target, "-o", object, "--name", name,
            ]);
            assert_eq!(o.status.code(), Some(1), "{name} {target}: {}", stderr(&o));
            assert!(stderr(&o).contains(why), "{name} {target}: {}", stderr(&o));
        }
    }
    // Rust takes C library and runtime names; it refuses its keywords.
    for name in ["free", "exp", "int", "spin_until"] {
        let o = uop(&["emit", free, "--name", name]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(stdout(&o).contains(&format!("pub fn {name}(")), "{name}");
    }
    let o = uop(&["emit", free, "--name", "fn"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("Rust keyword"), "{}", stderr(&o));
    // A name that works for C links: `spin_until` as an object file.
    let o = uop(&[
        "emit",
        free,
        "--target",
        "object",
        "-o",
        object,
        "--name",
        "spin_until",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(Path::new(object).exists());
}
