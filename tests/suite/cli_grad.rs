//! `uop grad` and `uop print --stage grad` as a user runs them: gradients written
//! to .npy files or printed, ones as the default seed, and one clear error for each
//! mistake.

use std::path::Path;

use uop::codegen::tensor::Tensor;
use uop::codegen::text::parse_program;
use uop::codegen::uop::DType;
use uop::npy::read_npy;

use crate::common;
use common::{scratch, stderr, stdout, uop, write};

fn file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write program");
    path.to_string_lossy().into_owned()
}

fn vector(data: &[f64]) -> Tensor {
    Tensor::new(DType::F32, vec![data.len()], data.to_vec()).expect("consistent")
}

/// y = x * w and s = sum(x * x): g_x = seed_y * w + 2 x seed_s, g_w = seed_y * x.
const PROGRAM: &str = "input x: f32[N]\ninput w: f32[N]\ny = mul(x, w)\ns = reduce_sum(mul(x, x), [0])\noutput y, s\n";

#[test]
fn gradients_from_npy_inputs_and_seeds_are_written_to_npy() {
    let dir = scratch("grad-files");
    let prog = file(&dir, "p.uop", PROGRAM);
    let x = write(&dir, "x.npy", &vector(&[1.0, 2.0, 3.0]));
    let w = write(&dir, "w.npy", &vector(&[4.0, 5.0, 6.0]));
    let sy = write(&dir, "sy.npy", &vector(&[1.0, 0.0, -1.0]));
    let ss = write(&dir, "ss.npy", &vector(&[0.5]));
    let (gx, gw) = (dir.join("gx.npy"), dir.join("gw.npy"));
    let o = uop(&[
        "grad",
        &prog,
        "--input",
        &format!("x={x}"),
        "--input",
        &format!("w={w}"),
        "--seed",
        &format!("y={sy}"),
        "--seed",
        &format!("s={ss}"),
        "--grad",
        &format!("x={}", gx.display()),
        "--grad",
        &format!("w={}", gw.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "", "everything went to files");
    // g_x = [1*4 + 2*1*0.5, 0*5 + 2*2*0.5, -1*6 + 2*3*0.5]
    assert_eq!(read_npy(&gx).expect("g_x").data, vec![5.0, 2.0, -3.0]);
    assert_eq!(read_npy(&gw).expect("g_w").data, vec![1.0, 0.0, -3.0]);
}

#[test]
fn a_missing_seed_means_ones_and_grad_without_a_file_prints() {
    let dir = scratch("grad-ones");
    let prog = file(&dir, "p.uop", PROGRAM);
    let x = write(&dir, "x.npy", &vector(&[1.0, 2.0, 3.0]));
    let w = write(&dir, "w.npy", &vector(&[4.0, 5.0, 6.0]));
    let o = uop(&[
        "grad",
        &prog,
        "--input",
        &format!("x={x}"),
        "--input",
        &format!("w={w}"),
        "--grad",
        "x",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // g_x = w + 2x
    assert_eq!(stdout(&o), "g_x: f32[3]\n[ 6,  9, 12]\n");
}

#[test]
fn without_grad_every_float_input_is_printed_for_random_data_too() {
    let dir = scratch("grad-all");
    let prog = file(&dir, "p.uop", PROGRAM);
    let o = uop(&["grad", &prog, "--random", "3", "--dim", "N=2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("g_x: f32[2]\n"), "{out}");
    assert!(out.contains("g_w: f32[2]\n"), "{out}");
}

#[test]
fn grad_of_something_that_is_not_an_input_is_a_clear_error() {
    let dir = scratch("grad-not-input");
    let prog = file(&dir, "p.uop", PROGRAM);
    let o = uop(&[
        "grad", &prog, "--random", "1", "--dim", "N=2", "--grad", "y",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: --grad y: `y` is not an input of the program; gradients are taken with respect \
         to inputs (its inputs are: `x`, `w`)\n"
    );
    let o = uop(&[
        "grad", &prog, "--random", "1", "--dim", "N=2", "--grad", "nope",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("the program has no tensor `nope`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn seeds_must_name_an_output_and_match_its_shape() {
    let dir = scratch("grad-seeds");
    let prog = file(&dir, "p.uop", PROGRAM);
    let bad = write(&dir, "bad.npy", &vector(&[1.0, 2.0]));
    let o = uop(&[
        "grad",
        &prog,
        "--random",
        "1",
        "--dim",
        "N=3",
        "--seed",
        &format!("x={bad}"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--seed x: the program has no float output `x`"),
        "{}",
        stderr(&o)
    );
    let o = uop(&[
        "grad",
        &prog,
        "--random",
        "1",
        "--dim",
        "N=3",
        "--seed",
        &format!("y={bad}"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("holds f32[2], but output `y` is f32[3]"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn integer_inputs_have_no_gradient() {
    let dir = scratch("grad-int");
    let prog = file(
        &dir,
        "p.uop",
        "input x: f32[R, N]\ninput i: i32[R, M]\ny = select(x, i, axis=1)\noutput y\n",
    );
    let o = uop(&[
        "grad", &prog, "--random", "1", "--dim", "R=1", "--dim", "N=2", "--dim", "M=2", "--grad",
        "i",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: --grad i: `i` is i32, and only float inputs have gradients\n"
    );
}

#[test]
fn print_stage_grad_writes_the_gradient_program_as_uop_text() {
    let o = uop(&["print", "examples/programs/softmax.uop", "--stage", "grad"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("# gradient program"), "{out}");
    assert!(
        out.contains("#   g_y: seed: the gradient flowing into output `y`"),
        "{out}"
    );
    assert!(out.contains("input g_y: f32[B, N]\n"), "{out}");
    assert!(out.ends_with("output g_x\n"), "{out}");
    assert!(!out.contains("block 0 {"), "no loop IR in the text: {out}");
    let program = parse_program(&out, &uop::ops::registry()).expect("the text parses");
    assert_eq!(program.inputs.len(), 2);
    assert_eq!(program.outputs.len(), 1);
}

/// The session shown in the README's "Gradients" section.
#[test]
fn readme_attention_example_output() {
    let o = uop(&[
        "grad",
        "examples/custom_op/attention.uop",
        "--random",
        "1",
        "--dim",
        "T=2",
        "--dim",
        "S=3",
        "--dim",
        "D=2",
        "--dim",
        "E=2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README");
    let shown = readme
        .split("$ uop grad examples/custom_op/attention.uop --random 1 --dim T=2 --dim S=3 --dim D=2 --dim E=2\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README shows the session");
    assert_eq!(stdout(&o), shown);
}

/// y = x³: g_x = 3 x² g_y; differentiating sum(g_x) again gives 6 x g_y (w.r.t. x)
/// and 3 x² (w.r.t. g_y).
const CUBE: &str = "input x: f32[N]\ny = mul(mul(x, x), x)\noutput y\n";

#[test]
fn the_gradient_text_differentiates_again_to_the_in_process_second_order() {
    use uop::codegen::build::full_gradient_spec;
    use uop::codegen::grad::{GradRole, gradient};
    use uop::codegen::interp;

    let dir = scratch("second-order");
    let cube = file(&dir, "cube.uop", CUBE);
    let o = uop(&["print", &cube, "--stage", "grad"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let first = file(&dir, "cube_grad.uop", &text);

    let x = vector(&[1.0, 2.0, -1.0]);
    let seed = vector(&[1.0, 1.0, 1.0]);
    let (xf, sf) = (write(&dir, "x.npy", &x), write(&dir, "g_y.npy", &seed));
    let (gx, gs) = (dir.join("gx.npy"), dir.join("gs.npy"));
    let o = uop(&[
        "grad",
        &first,
        "--input",
        &format!("x={xf}"),
        "--input",
        &format!("g_y={sf}"),
        "--grad",
        &format!("x={}", gx.display()),
        "--grad",
        &format!("g_y={}", gs.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (gx, gs) = (read_npy(&gx).expect("g_x"), read_npy(&gs).expect("g_g_y"));
    assert_eq!(gx.data, vec![6.0, 12.0, -6.0]);
    assert_eq!(gs.data, vec![3.0, 12.0, 3.0]);

    // The same second order in process, without the text in between.
    let registry = uop::ops::registry();
    let program = parse_program(CUBE, &registry).expect("parses");
    let g1 = gradient(&program, &full_gradient_spec(&program)).expect("first order");
    let g2 = gradient(&g1.program, &full_gradient_spec(&g1.program)).expect("second order");
    // Its arguments: the first-order program's inputs (x, g_y) and a seed of ones
    // for its output g_x, as `uop grad` gives them.
    let first_inputs = [x, seed.clone()];
    let args: Vec<Tensor> = g2
        .inputs
        .iter()
        .map(|i| match i.role {
            GradRole::Input => {
                let k = g1.program.inputs.iter().position(|n| *n == i.forward);
                first_inputs[k.expect("a first-order input")].clone()
            }
            GradRole::Seed => seed.clone(),
            GradRole::Supplied => panic!("nothing is supplied in a full gradient"),
        })
        .collect();
    let params = std::collections::HashMap::new();
    let out = interp::run(&g2.program, &args, &params).expect("runs");
    assert_eq!(out[0].data, gx.data);
    assert_eq!(out[1].data, gs.data);
}

/// `uop grad` on a graph file with scalar inputs: each wanted gradient's value.
fn graph_grads(test: &str, file: &str, inputs: &[(&str, f64)], extra: &[&str]) -> Vec<f64> {
    let dir = scratch(test);
    let mut args: Vec<String> = vec!["grad".into(), file.into()];
    for (name, v) in inputs {
        let t = Tensor::new(DType::F32, vec![], vec![*v]).expect("rank 0");
        let path = write(&dir, &format!("{name}.npy"), &t);
        args.extend(["--input".into(), format!("{name}={path}")]);
    }
    let mut outs = Vec::new();
    for (name, _) in inputs {
        let path = dir.join(format!("g_{name}.npy"));
        args.extend(["--grad".into(), format!("{name}={}", path.display())]);
        outs.push(path);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = uop(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    outs.iter()
        .map(|p| read_npy(p).expect("gradient written").data[0])
        .collect()
}

#[test]
fn graph_gradients_give_nnc_numbers() {
    // power_loop.uop seeds both float outputs (out and the count n, which has no
    // gradient): d out/dx = 1.11^5, d out/dy = 5 * 0.34 * 1.11^4.
    for extra in [&[][..], &["--tape", "recompute"], &["--backend", "interp"]] {
        let d = graph_grads(
            "grad-graph-power",
            "examples/graphs/power_loop.uop",
            &[("x", 0.34), ("y", 1.11)],
            extra,
        );
        assert!((d[0] - 1.685_058_2).abs() < 1e-6, "{extra:?}: {d:?}");
        assert!(
            (d[1] - 5.0 * 0.34 * 1.11f64.powi(4)).abs() < 1e-5,
            "{extra:?}: {d:?}"
        );
    }
    for (x, want) in [(-1.0, 0.0), (0.76, 1.0), (1.226, 0.5), (2.1, 0.0)] {
        let d = graph_grads(
            "grad-graph-case",
            "examples/graphs/piecewise.uop",
            &[("x", x)],
            &[],
        );
        assert_eq!(d, [want], "x = {x}");
    }
    let d = graph_grads(
        "grad-graph-case-loop",
        "examples/graphs/piecewise_loop.uop",
        &[("x", 1.226)],
        &[],
    );
    assert!((d[0] - 0.3 * 0.0625).abs() < 1e-7, "{d:?}");
}

/// Every example graph has a gradient, the chunked one included (its gradient
/// graph loops over the same chunks).
#[test]
fn every_example_graph_has_a_gradient() {
    let mut chunked = 0;
    for entry in std::fs::read_dir("examples/graphs").expect("examples") {
        let path = entry.expect("entry").path();
        let path = path.to_str().expect("utf-8");
        let text = std::fs::read_to_string(path).expect("read");
        if text.contains("chunk(") {
            chunked += 1;
            let o = uop(&["print", path, "--stage", "grad"]);
            assert!(o.status.success(), "{path}: {}", stderr(&o));
            assert!(stdout(&o).contains("= chunk(x, g_y, size=1024)"), "{path}");
            assert!(stdout(&o).contains("g_w1 = sum_chunks("), "{path}");
        }
        let mut args: Vec<String> = vec!["grad".into(), path.into(), "--random".into(), "1".into()];
        for dim in ["N", "C", "H", "W", "K", "T", "D", "B", "O", "R", "F", "E"] {
            if text.contains(&format!("{dim},")) || text.contains(&format!("{dim}]")) {
                let size = if dim == "H" || dim == "W" { 4 } else { 2 };
                args.extend(["--dim".into(), format!("{dim}={size}")]);
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = uop(&args);
        assert!(o.status.success(), "{path}: {}", stderr(&o));
        let o = uop(&["print", path, "--stage", "grad"]);
        assert!(o.status.success(), "{path}: {}", stderr(&o));
        assert!(stdout(&o).starts_with("# gradient "), "{path}");
    }
    assert_eq!(chunked, 1, "examples/graphs/chunked_mlp.uop");
}

#[test]
fn tape_applies_to_graphs_only() {
    let dir = scratch("grad-tape-program");
    let prog = file(&dir, "p.uop", PROGRAM);
    let o = uop(&[
        "grad", &prog, "--random", "1", "--dim", "N=2", "--tape", "stack",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--tape applies to graphs"),
        "{}",
        stderr(&o)
    );
}

/// `uop grad --check`: finite differences against the gradient program, one row per
/// input with its worst element; exit code 1 past the tolerance.
#[test]
fn grad_check_prints_the_worst_error_per_input_and_passes() {
    let o = uop(&[
        "grad",
        "examples/programs/layer_norm.uop",
        "--random",
        "1",
        "--dim",
        "B=2",
        "--dim",
        "N=4",
        "--check",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("finite differences (f64, step 0.000001)"),
        "{out}"
    );
    assert!(lines[1].starts_with("input"), "{out}");
    let program = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/programs/layer_norm.uop"),
    )
    .expect("reads");
    let parsed = parse_program(&program, &uop::ops::registry()).expect("parses");
    assert_eq!(
        lines.len(),
        2 + parsed.inputs.len(),
        "one row per float input: {out}"
    );
    assert!(lines[2..].iter().all(|l| l.ends_with("ok")), "{out}");
}

#[test]
fn grad_check_fails_past_the_tolerance() {
    let dir = scratch("grad-check-tight");
    // exp's gradient is right, but no finite difference matches it to 0.
    let path = file(&dir, "e.uop", "input x: f64[N]\ny = exp(x)\noutput y\n");
    let o = uop(&[
        "grad", &path, "--random", "3", "--dim", "N=3", "--check", "--rel", "0", "--abs", "0",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("FAILED"), "{}", stdout(&o));
    assert_eq!(
        stderr(&o).lines().next(),
        Some(
            "error: the gradient with respect to `x` differs from finite differences past the tolerance"
        )
    );
    let o = uop(&["grad", &path, "--random", "3", "--dim", "N=3", "--rel", "0"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--rel needs --check: {}",
        stderr(&o)
    );
}

/// A graph's gradient graph against finite differences on the graph interpreter: one
/// row per input, through a `while`.
#[test]
fn grad_check_takes_graphs_through_control_flow() {
    let o = uop(&[
        "grad",
        "examples/graph_grad/rnn.uop",
        "--random",
        "1",
        "--dim",
        "T=5",
        "--dim",
        "E=3",
        "--dim",
        "H=4",
        "--param",
        "steps=5",
        "--check",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().skip(2).collect();
    let names: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.split_whitespace().next())
        .collect();
    assert_eq!(names, ["xs", "h0", "w", "u"], "{out}");
    assert!(rows.iter().all(|r| r.ends_with("ok")), "{out}");
    let o = uop(&[
        "grad",
        "examples/graphs/power_loop.uop",
        "--random",
        "1",
        "--check",
        "--rel",
        "0",
        "--abs",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).starts_with("error: the gradient graph differs from finite differences"),
        "{}",
        stderr(&o)
    );
}
