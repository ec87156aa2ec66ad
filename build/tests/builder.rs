//! The one build-time builder (`uop_build::Build`): programs become kernels, graphs
//! and ONNX models graph functions, all in one Rust file; errors name the file, the
//! kernel or the graph. (That the generated code compiles and matches the
//! interpreters is shown by the examples `examples/build-time` and
//! `examples/graph-aot`, and by the suite's `graph_aot` and `generated_clippy`.)

use std::path::PathBuf;

use uop_build::{Build, BuildError, DType, Source, TapeMode};
use uop_codegen::build::with_float_type;
use uop_codegen::text::parse_program;

const SOFTMAX: &str = "\
input x: f32[B, N]
m = reduce_max(x, [1])
e = exp(sub(x, reindex(m, [B, N], [i0, 0])))
s = reduce_sum(e, [1])
y = div(e, reindex(s, [B, N], [i0, 0]))
output y
";

const LOOP: &str = "input x: f32[N]\nfn more(v) { return lt(reduce_sum(v, [0]), 100) }\n\
                    fn twice(v) { return mul(v, 2) }\ny = while(more, twice, x)\noutput y\n";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn programs_become_kernels_with_float_types_and_gradients() {
    let mut b = Build::new();
    let names = b
        .add(
            Source::text("softmax", SOFTMAX)
                .dtypes(&[DType::F32, DType::F64])
                .with_gradient(),
        )
        .expect("adds");
    assert_eq!(
        names,
        [
            "softmax_f32",
            "softmax_f32_grad",
            "softmax_f64",
            "softmax_f64_grad"
        ]
    );
    // Macro ops are there without a registry line.
    b.add(Source::text(
        "mlp",
        "input x: f32[B, 4]\ninput w: f32[3, 4]\ny = linear(x, w)\noutput y\n",
    ))
    .expect("a macro op");
    let src = b.source().expect("emits");
    assert!(src.contains("pub fn softmax_f64_grad("), "{src}");
    assert!(src.contains(
        "pub fn softmax_f64(\n    x: &[f64],\n    x_shape: [usize; 2],\n    y: &mut [f64],\n)"
    ));
    assert!(
        !src.contains("---- graphs ----"),
        "no graph, no graph section"
    );
    assert!(
        with_float_type(
            &parse_program(SOFTMAX, &Default::default()).expect("parses"),
            DType::I32
        )
        .is_none()
    );
}

#[test]
fn programs_graphs_and_models_share_one_file_and_one_runtime_import() {
    let mut b = Build::new();
    b.add(Source::text("softmax", SOFTMAX)).expect("a kernel");
    let names = b
        .add(Source::graph_text("doubling", LOOP).with_gradient_tape(TapeMode::Recompute))
        .expect("a graph and its gradient");
    assert_eq!(names, ["doubling", "doubling_grad"]);
    let model = root().join("examples/graph-aot/model/classifier.onnx");
    assert_eq!(
        b.add(Source::onnx(&model)).expect("a model"),
        ["classifier"]
    );
    assert_eq!(
        b.names(),
        ["softmax", "doubling", "doubling_grad", "classifier"]
    );
    let src = b.source().expect("emits");
    assert_eq!(src.matches("use uop_runtime as rt;").count(), 1);
    for f in [
        "pub fn softmax(",
        "pub fn doubling(\n    ws: &mut DoublingWorkspace,",
        "pub fn doubling_grad(",
        "pub fn classifier(\n    ws: &mut ClassifierWorkspace,",
        "pub fn classifier_sizes(",
    ] {
        assert!(src.contains(f), "{f}");
    }
    // Standalone: the runtime's own source, once.
    let standalone = b.standalone(true).source().expect("emits");
    assert!(!standalone.contains("use uop_runtime"));
    assert_eq!(standalone.matches("pub enum KernelError").count(), 1);
}

#[test]
fn a_name_is_one_item_whether_kernel_or_graph() {
    let mut b = Build::new();
    b.add(Source::text("softmax", SOFTMAX)).expect("a kernel");
    let e = b
        .add(Source::graph_text("softmax", LOOP))
        .expect_err("the kernel's name")
        .to_string();
    assert!(
        e.contains("`softmax` is already an item of the module"),
        "{e}"
    );
    b.add(Source::graph_text("doubling", LOOP))
        .expect("a graph");
    let e = b
        .add(Source::text("doubling_sizes", SOFTMAX))
        .expect_err("the graph's sizes function")
        .to_string();
    assert!(e.contains("already an item of the module"), "{e}");
}

#[test]
fn errors_name_the_file_the_text_or_the_modifier() {
    let mut b = Build::new();
    let e = b
        .add(Source::text(
            "broken",
            "input x: f32[N]\ny = exp(z)\noutput y\n",
        ))
        .expect_err("does not parse")
        .to_string();
    assert!(e.starts_with("<text of broken>:") && e.contains('z'), "{e}");
    let e = b
        .add(Source::file("/nonexistent/p.uop"))
        .expect_err("no file");
    assert!(matches!(e, BuildError::Read { .. }), "{e}");
    let e = b
        .add(Source::graph_file("no/such/file.uop"))
        .expect_err("no file");
    assert!(
        e.to_string().starts_with("cannot read no/such/file.uop: "),
        "{e}"
    );
    let e = b
        .add(Source::graph_text(
            "bad",
            "input x: f32[N]\ny = nosuchop(x)\n",
        ))
        .expect_err("does not parse")
        .to_string();
    assert!(e.starts_with("<text of bad>: "), "{e}");
    let e = b
        .add(Source::graph_text("fn", "input x: f32[N]\noutput x\n"))
        .expect_err("a keyword")
        .to_string();
    assert!(e.contains("graph `fn`"), "{e}");
    let e = b
        .add(Source::text("fn", SOFTMAX))
        .expect_err("a keyword")
        .to_string();
    assert!(e.contains("Rust keyword"), "{e}");
    b.add(Source::text("free", SOFTMAX))
        .expect("a C library name is fine in Rust");
    let e = b
        .add(Source::dir("/nonexistent").named("x"))
        .expect_err("named folder");
    assert!(matches!(e, BuildError::Source(_)), "{e}");
    let e = b
        .add(Source::graph_text("g", LOOP).dtypes(&[DType::F64]))
        .expect_err("dtypes of a graph")
        .to_string();
    assert!(e.contains("`dtypes` is for programs"), "{e}");
    let not_onnx = root().join("examples/graphs/mlp.uop");
    let e = b
        .add(Source::onnx(&not_onnx))
        .expect_err("not a model")
        .to_string();
    assert!(e.starts_with(&format!("{}: ", not_onnx.display())), "{e}");
}

#[test]
fn write_outside_a_build_script_needs_a_path() {
    if std::env::var_os("OUT_DIR").is_none() {
        let b = Build::new();
        assert!(matches!(b.write("kernels.rs"), Err(BuildError::NoOutDir)));
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mut b = Build::new();
    b.add(Source::text("softmax", SOFTMAX)).expect("adds");
    let path = dir.join("uop_build_write_to.rs");
    b.write_to(&path).expect("writes");
    assert_eq!(
        std::fs::read_to_string(&path).expect("reads"),
        b.source().expect("emits")
    );
}
