//! The names a user wrote in a graph file are the names `uop run --output`,
//! `uop grad --seed` and the printed outputs use, on every backend (issue 40, item 1).

use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop::npy::read_npy;

use crate::common;
use common::{scratch, stderr, stdout, uop_in, write};

const FUN: &str = "fn f(v) { w = mul(v, 2); return w }";

/// The files: an inline call, `call`, `;`-separated statements, CRLF line
/// endings, two calls of one function.
fn files() -> Vec<(&'static str, String)> {
    vec![
        (
            "inline",
            format!("input x: f32[3]\n{FUN}\ny = f(x)\noutput y\n"),
        ),
        (
            "call",
            format!("input x: f32[3]\n{FUN}\ny = call(f, x)\noutput y\n"),
        ),
        (
            "semicolons",
            format!("input x: f32[3]; {FUN}; y = f(x); output y"),
        ),
        (
            "crlf",
            format!("input x: f32[3]\r\n{FUN}\r\ny = f(x)\r\noutput y\r\n"),
        ),
        (
            "alias",
            "input x: f32[3]\nfn f(v) { return v }\ny = f(x)\noutput y\n".into(),
        ),
    ]
}

fn x() -> Tensor {
    Tensor::new(DType::F32, vec![3], vec![1.0, 2.0, 3.0]).expect("x")
}

#[test]
fn output_takes_the_name_written_in_the_file_on_every_backend() {
    let dir = scratch("graph-names-output");
    let x = write(&dir, "x.npy", &x());
    for (name, src) in files() {
        let file = dir.join(format!("{name}.uop"));
        std::fs::write(&file, &src).expect("write");
        let expected = if name == "alias" {
            [1.0, 2.0, 3.0]
        } else {
            [2.0, 4.0, 6.0]
        };
        for backend in ["cranelift", "loops", "interp"] {
            let out = dir.join(format!("{name}-{backend}.npy"));
            let o = uop_in(
                &dir,
                &[
                    "run",
                    file.to_str().expect("utf-8"),
                    "--backend",
                    backend,
                    "--input",
                    &format!("x={x}"),
                    "--output",
                    &format!("y={}", out.display()),
                ],
            );
            assert!(o.status.success(), "{name} on {backend}: {}", stderr(&o));
            let y = read_npy(&out).expect("y written");
            assert_eq!(y.data, expected, "{name} on {backend}");
        }
    }
}

#[test]
fn two_calls_of_one_function_give_two_outputs_named_by_the_caller() {
    let dir = scratch("graph-names-two-calls");
    let file = dir.join("two.uop");
    std::fs::write(
        &file,
        format!("input x: f32[3]\n{FUN}\ny = f(x)\nz = f(y)\noutput y, z\n"),
    )
    .expect("write");
    let x = write(&dir, "x.npy", &x());
    let o = uop_in(
        &dir,
        &[
            "run",
            file.to_str().expect("utf-8"),
            "--input",
            &format!("x={x}"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("y: f32[3]"), "{text}");
    assert!(text.contains("\nz: f32[3]"), "{text}");
}

#[test]
fn grad_seed_takes_the_name_written_in_the_file() {
    let dir = scratch("graph-names-seed");
    let file = dir.join("seed.uop");
    std::fs::write(
        &file,
        format!("input x: f32[3]\n{FUN}\ny1 = f(x)\ny2 = call(f, x)\noutput y1, y2\n"),
    )
    .expect("write");
    let x = write(&dir, "x.npy", &x());
    let ones = write(
        &dir,
        "s.npy",
        &Tensor::new(DType::F32, vec![3], vec![1.0; 3]).expect("seed"),
    );
    let zeros = write(
        &dir,
        "z.npy",
        &Tensor::new(DType::F32, vec![3], vec![0.0; 3]).expect("seed"),
    );
    let o = uop_in(
        &dir,
        &[
            "grad",
            file.to_str().expect("utf-8"),
            "--input",
            &format!("x={x}"),
            "--seed",
            &format!("y1={ones}"),
            "--seed",
            &format!("y2={zeros}"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // d(2x)/dx seeded by ones on y1 and zeros on y2.
    let text = stdout(&o);
    assert!(text.contains("g_x: f32[3]"), "{text}");
    assert!(
        text.contains("2.0, 2.0, 2.0") || text.contains("2, 2, 2"),
        "{text}"
    );
}

#[test]
fn a_graph_file_gets_the_graph_parsers_error() {
    let dir = scratch("graph-names-errors");
    for (name, src, expected) in [
        (
            "case",
            "input x: f32[]\ns = lt(x, 0)\nr = case(s, [], x)\nfn f(v) { return v }\noutput r\n",
            "case: no branches (line 3",
        ),
        (
            "sink",
            "input x: f32[4]\ny = sink(x)\noutput y\n",
            "`sink(...)` gives no result",
        ),
        (
            "chunk",
            "input x: f32[4]\ny = chunk(x, size=2)\nz = nosuch(y)\noutput z\n",
            "unknown op or function `nosuch`",
        ),
    ] {
        let file = dir.join(format!("{name}.uop"));
        std::fs::write(&file, src).expect("write");
        let o = uop_in(
            &dir,
            &["run", file.to_str().expect("utf-8"), "--random", "1"],
        );
        assert!(!o.status.success(), "{name}");
        let e = stderr(&o);
        assert!(e.contains(expected), "{name}: {e}");
    }
}
