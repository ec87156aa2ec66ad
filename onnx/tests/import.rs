//! The importer's contract: bad files and unsupported models get clear errors (never
//! a panic), symbolic sizes stay symbolic through folded shape arithmetic, and ONNX
//! names that uop's text cannot spell are mapped and kept.

use std::collections::HashMap;

use prost::Message;
use uop_codegen::index::Expr;
use uop_onnx::proto::tensor_shape_proto::Dimension;
use uop_onnx::proto::tensor_shape_proto::dimension::Value as Dim;
use uop_onnx::proto::type_proto::{Tensor as TensorType, Value as TypeValue};
use uop_onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};
use uop_onnx::{DecodeError, HostData, HostTensor, ImportError, ImportOptions, import};

const FLOAT: i32 = 1;
const INT64: i32 = 7;
const FLOAT16: i32 = 10;

fn value(name: &str, elem: i32, dims: &[&str]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d.parse::<i64>() {
                Ok(v) => Dim::DimValue(v),
                Err(_) => Dim::DimParam(d.to_string()),
            }),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(TypeValue::TensorType(TensorType {
                elem_type: Some(elem),
                shape: Some(TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn node(op: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        name: Some(format!("{op}_{}", outputs[0])),
        attribute: attrs,
        ..Default::default()
    }
}

fn int_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        i: Some(v),
        r#type: Some(2),
        ..Default::default()
    }
}

fn ints(name: &str, dims: &[i64], v: &[i64]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(INT64),
        dims: dims.to_vec(),
        int64_data: v.to_vec(),
        ..Default::default()
    }
}

fn model(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    init: Vec<TensorProto>,
) -> Vec<u8> {
    ModelProto {
        ir_version: Some(10),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(GraphProto {
            node: nodes,
            input: inputs,
            output: outputs,
            initializer: init,
            name: Some("g".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

fn relu_model() -> Vec<u8> {
    model(
        vec![node("Relu", &["x"], &["y"], vec![])],
        vec![value("x", FLOAT, &["2"])],
        vec![value("y", FLOAT, &["2"])],
        vec![],
    )
}

#[test]
fn empty_truncated_corrupt_and_non_onnx_files_are_errors() {
    let opts = ImportOptions::default();
    assert!(matches!(
        import(&[], &opts),
        Err(ImportError::Decode(DecodeError::Empty))
    ));
    let good = relu_model();
    assert!(import(&good, &opts).is_ok());
    for cut in 1..good.len() {
        // Cut inside a field: a protobuf error; cut between fields: a model without
        // its opset or graph. Never a panic, never a model.
        if let Ok(m) = import(&good[..cut], &opts) {
            panic!(
                "a model cut at {cut} bytes of {} imported: {m:?}",
                good.len()
            );
        }
    }
    let mut corrupt = good.clone();
    corrupt[0] = 0xff;
    assert!(matches!(
        import(&corrupt, &opts),
        Err(ImportError::Decode(_))
    ));
    let text = b"input x: f32[2]\ny = relu(x)\noutput y\n";
    let e = import(text, &opts).expect_err("a .uop file is not ONNX");
    assert!(matches!(e, ImportError::Decode(_)), "{e}");
    let tensor = ints("t", &[2], &[1, 2]).encode_to_vec();
    let e = import(&tensor, &opts).expect_err("a tensor is not a model");
    assert!(matches!(e, ImportError::Decode(_)), "{e}");
    let versionless = ModelProto {
        graph: Some(GraphProto::default()),
        ..Default::default()
    };
    let e = import(&versionless.encode_to_vec(), &opts).expect_err("no ir_version");
    assert_eq!(e.to_string(), "not an ONNX model: it has no ir_version");
}

#[test]
fn an_unsupported_op_names_op_node_and_opset() {
    let bytes = model(
        vec![
            node("Relu", &["x"], &["r"], vec![]),
            node("NonZero", &["r"], &["y"], vec![]),
        ],
        vec![value("x", FLOAT, &["2"])],
        vec![value("y", INT64, &["1", "2"])],
        vec![],
    );
    let e = import(&bytes, &ImportOptions::default()).expect_err("NonZero is not supported");
    assert_eq!(
        e.to_string(),
        "unsupported op NonZero (node `NonZero_y`, opset 17)"
    );
}

#[test]
fn an_unsupported_dtype_names_the_tensor_and_the_type() {
    let bytes = model(
        vec![node("Relu", &["x"], &["y"], vec![])],
        vec![value("x", FLOAT16, &["2"])],
        vec![value("y", FLOAT16, &["2"])],
        vec![],
    );
    let e = import(&bytes, &ImportOptions::default()).expect_err("f16 is not supported");
    assert!(
        e.to_string()
            .starts_with("`x`: element type FLOAT16 is not supported"),
        "{e}"
    );
}

#[test]
fn int64_values_that_do_not_fit_i32_are_an_error() {
    let bytes = model(
        vec![node("Gather", &["x", "idx"], &["y"], vec![])],
        vec![value("x", FLOAT, &["4"])],
        vec![value("y", FLOAT, &["1"])],
        vec![ints("idx", &[1], &[1 << 40])],
    );
    let e = import(&bytes, &ImportOptions::default()).expect_err("index out of i32");
    assert!(e.to_string().contains("out of range"), "{e}");
}

/// `input.1: [batch size, 3, 4]` flattened to `[batch size, 12]` with the shape
/// computed by `Shape → Gather → Unsqueeze → Concat → Reshape`, as exporters write it.
fn dynamic_reshape() -> Vec<u8> {
    model(
        vec![
            node("Shape", &["input.1"], &["onnx::Shape_1"], vec![]),
            node(
                "Gather",
                &["onnx::Shape_1", "zero"],
                &["b"],
                vec![int_attr("axis", 0)],
            ),
            node("Unsqueeze", &["b", "axes0"], &["b1"], vec![]),
            node(
                "Concat",
                &["b1", "minus1"],
                &["shape"],
                vec![int_attr("axis", 0)],
            ),
            node("Reshape", &["input.1", "shape"], &["out.0"], vec![]),
        ],
        vec![value("input.1", FLOAT, &["batch size", "3", "4"])],
        vec![value("out.0", FLOAT, &["batch size", "12"])],
        vec![
            ints("zero", &[], &[0]),
            ints("axes0", &[1], &[0]),
            ints("minus1", &[1], &[-1]),
        ],
    )
}

#[test]
fn shape_arithmetic_folds_over_a_symbolic_batch_and_names_are_mapped() {
    let m = import(&dynamic_reshape(), &ImportOptions::default()).expect("imports");
    assert_eq!(m.inputs[0].onnx, "input.1");
    assert_eq!(m.inputs[0].uop, "input_1");
    assert_eq!(m.names.uop("batch size"), Some("batch_size"));
    assert_eq!(m.outputs[0].uop, "out_0");
    assert_eq!(
        m.outputs[0].shape,
        vec![Expr::name("batch_size"), Expr::Int(12)],
        "the batch stays symbolic"
    );
    let text = uop_graph::text::print_graph(&m.graph);
    assert!(
        text.contains("input input_1: f32[batch_size, 3, 4]"),
        "{text}"
    );
    for batch in [1usize, 3] {
        let data: Vec<f64> = (0..batch * 12).map(|k| k as f64).collect();
        let x = HostTensor {
            elem: uop_onnx::ElemType::Float,
            shape: vec![batch, 3, 4],
            data: HostData::Float(data.clone()),
        };
        let given = HashMap::from([("input.1".to_string(), x)]);
        let inputs = m.graph_inputs(&given).expect("converts");
        let out = uop_graph::run(&m.graph, &inputs, &HashMap::new()).expect("runs");
        let y = &m.model_outputs(&out)[0];
        assert_eq!(y.shape, vec![batch, 12]);
        assert_eq!(y.data, HostData::Float(data));
    }
}

#[test]
fn a_shape_from_a_graph_input_must_be_given_at_import() {
    let bytes = model(
        vec![node("Reshape", &["x", "s"], &["y"], vec![])],
        vec![value("x", FLOAT, &["6"]), value("s", INT64, &["2"])],
        vec![value("y", FLOAT, &["2", "3"])],
        vec![],
    );
    let e = import(&bytes, &ImportOptions::default()).expect_err("the shape is an input");
    assert!(
        matches!(&e, ImportError::NeedsConstant { input, .. } if input == "s"),
        "{e}"
    );
    let s = HostTensor {
        elem: uop_onnx::ElemType::Int64,
        shape: vec![2],
        data: HostData::Int(vec![2, 3]),
    };
    let options = ImportOptions {
        constants: HashMap::from([("s".to_string(), s)]),
        ..ImportOptions::default()
    };
    let m = import(&bytes, &options).expect("imports with the shape given");
    assert_eq!(m.inputs.len(), 1, "`s` is bound, no longer an input");
    assert_eq!(m.outputs[0].shape, vec![Expr::Int(2), Expr::Int(3)]);
}

#[test]
fn input_data_of_the_wrong_type_is_an_error() {
    let m = import(&relu_model(), &ImportOptions::default()).expect("imports");
    let x = HostTensor {
        elem: uop_onnx::ElemType::Int64,
        shape: vec![2],
        data: HostData::Int(vec![1, 2]),
    };
    let e = m
        .graph_inputs(&HashMap::from([("x".to_string(), x)]))
        .expect_err("int64 for float");
    assert_eq!(
        e.to_string(),
        "`x`: the model takes FLOAT, the data is INT64"
    );
}

fn floats(name: &str, dims: &[i64], v: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(FLOAT),
        dims: dims.to_vec(),
        float_data: v.to_vec(),
        ..Default::default()
    }
}

/// `y <- 2 y` while `sum(y) < bound`, at most 10 times: the body computes its
/// condition, so the Loop becomes a `while` node.
fn doubling_loop(bound: f32) -> Vec<u8> {
    let body = GraphProto {
        name: Some("body".into()),
        input: vec![
            value("i", INT64, &[]),
            value("c", 9, &[]),
            value("y_in", FLOAT, &["1"]),
        ],
        output: vec![value("c_out", 9, &[]), value("y_out", FLOAT, &["1"])],
        node: vec![
            node("Mul", &["y_in", "two"], &["y_out"], vec![]),
            node(
                "ReduceSum",
                &["y_out"],
                &["s"],
                vec![int_attr("keepdims", 0)],
            ),
            node("Less", &["s", "hundred"], &["c_out"], vec![]),
        ],
        ..Default::default()
    };
    let graph_attr = AttributeProto {
        name: Some("body".into()),
        g: Some(body),
        r#type: Some(5),
        ..Default::default()
    };
    let mut cond = ints("cond", &[], &[1]);
    cond.data_type = Some(9);
    cond.int64_data.clear();
    cond.int32_data = vec![1];
    model(
        vec![node("Loop", &["m", "cond", "y0"], &["y"], vec![graph_attr])],
        vec![value("y0", FLOAT, &["1"])],
        vec![value("y", FLOAT, &["1"])],
        vec![
            ints("m", &[], &[10]),
            cond,
            floats("two", &[1], &[2.0]),
            floats("hundred", &[], &[bound]),
        ],
    )
}

#[test]
fn a_loop_whose_body_computes_its_condition_becomes_a_while() {
    let m = import(&doubling_loop(100.0), &ImportOptions::default()).expect("imports");
    assert!(
        m.graph.nodes().iter().any(|n| n.op.kind() == "while"),
        "{}",
        uop_graph::text::print_graph(&m.graph)
    );
    let y0 = HostTensor {
        elem: uop_onnx::ElemType::Float,
        shape: vec![1],
        data: HostData::Float(vec![1.0]),
    };
    let inputs = m
        .graph_inputs(&HashMap::from([("y0".to_string(), y0)]))
        .expect("converts");
    let out = uop_graph::run(&m.graph, &inputs, &HashMap::new()).expect("runs");
    assert_eq!(
        out[0].data,
        vec![128.0],
        "1 doubled until the sum is 100 or more"
    );
    let exe = uop_exec::compile(&m.graph).expect("compiles");
    assert_eq!(exe.run(&inputs).expect("runs")[0].data, vec![128.0]);
    let m = import(&doubling_loop(1e9), &ImportOptions::default()).expect("imports");
    let out = uop_graph::run(&m.graph, &inputs, &HashMap::new()).expect("runs");
    assert_eq!(
        out[0].data,
        vec![1024.0],
        "the trip count M = 10 stops it first"
    );
}

/// `If(x > 0)`: the then-branch is a Loop doubling the outer `y0` while
/// `sum(y) < 100` (at most 1e6 trips), the else-branch returns `y0`. With `y0 = 0`
/// the loop never ends early, so it must not run when `x <= 0`.
fn guarded_loop() -> Vec<u8> {
    let body = GraphProto {
        name: Some("body".into()),
        input: vec![
            value("i", INT64, &[]),
            value("c", 9, &[]),
            value("y_in", FLOAT, &["1"]),
        ],
        output: vec![value("c_out", 9, &[]), value("y_out", FLOAT, &["1"])],
        node: vec![
            node("Mul", &["y_in", "two"], &["y_out"], vec![]),
            node(
                "ReduceSum",
                &["y_out"],
                &["s"],
                vec![int_attr("keepdims", 0)],
            ),
            node("Less", &["s", "hundred"], &["c_out"], vec![]),
        ],
        ..Default::default()
    };
    let graph_attr = |name: &str, g: GraphProto| AttributeProto {
        name: Some(name.into()),
        g: Some(g),
        r#type: Some(5),
        ..Default::default()
    };
    let then_branch = GraphProto {
        name: Some("then".into()),
        output: vec![value("grown", FLOAT, &["1"])],
        node: vec![node(
            "Loop",
            &["m", "cond", "y0"],
            &["grown"],
            vec![graph_attr("body", body)],
        )],
        ..Default::default()
    };
    let else_branch = GraphProto {
        name: Some("else".into()),
        output: vec![value("kept", FLOAT, &["1"])],
        node: vec![node("Identity", &["y0"], &["kept"], vec![])],
        ..Default::default()
    };
    let mut cond = ints("cond", &[], &[1]);
    cond.data_type = Some(9);
    cond.int64_data.clear();
    cond.int32_data = vec![1];
    model(
        vec![
            node("Greater", &["x", "zero"], &["positive"], vec![]),
            node(
                "If",
                &["positive"],
                &["y"],
                vec![
                    graph_attr("then_branch", then_branch),
                    graph_attr("else_branch", else_branch),
                ],
            ),
        ],
        vec![value("x", FLOAT, &[]), value("y0", FLOAT, &["1"])],
        vec![value("y", FLOAT, &["1"])],
        vec![
            ints("m", &[], &[1_000_000]),
            cond,
            floats("zero", &[], &[0.0]),
            floats("two", &[1], &[2.0]),
            floats("hundred", &[], &[100.0]),
        ],
    )
}

#[test]
fn an_if_runs_only_the_loop_of_the_branch_it_takes() {
    let m = import(&guarded_loop(), &ImportOptions::default()).expect("imports");
    let float = |shape: Vec<usize>, v: f64| HostTensor {
        elem: uop_onnx::ElemType::Float,
        shape,
        data: HostData::Float(vec![v]),
    };
    let exe = uop_exec::compile_with(
        &m.graph,
        &uop_exec::ExecOptions {
            max_iterations: Some(1000),
            ..Default::default()
        },
    )
    .expect("compiles");
    let options = uop_graph::RunOptions {
        max_iterations: Some(1000),
    };
    // (x, y0) -> y: the loop would pass 1000 trips if it ran for x = -1.
    for (x, y0, y) in [(-1.0, 0.0, 0.0), (1.0, 1.0, 128.0)] {
        let given = HashMap::from([
            ("x".to_string(), float(vec![], x)),
            ("y0".to_string(), float(vec![1], y0)),
        ]);
        let inputs = m.graph_inputs(&given).expect("converts");
        let out = uop_graph::run_with(&m.graph, &inputs, &HashMap::new(), &options)
            .unwrap_or_else(|e| panic!("x = {x}: {e}"));
        assert_eq!(out.outputs[0].data, vec![y], "interpreter, x = {x}");
        let out = exe.run(&inputs).unwrap_or_else(|e| panic!("x = {x}: {e}"));
        assert_eq!(out[0].data, vec![y], "executor, x = {x}");
    }
}

/// Silero VAD's pattern: an int64 input compared with a constant
/// (`Reshape → Gather → Equal`) selects a result; another int64 input indexes.
fn rate_switch(extra: Vec<NodeProto>, out: &str) -> Vec<u8> {
    let mut nodes = vec![
        node("Reshape", &["sr", "one"], &["sr1"], vec![]),
        node(
            "Gather",
            &["sr1", "zero"],
            &["sr0"],
            vec![int_attr("axis", 0)],
        ),
        node("Equal", &["sr0", "rate"], &["is16k"], vec![]),
        node(
            "Gather",
            &["x", "idx"],
            &["picked"],
            vec![int_attr("axis", 0)],
        ),
        node("Neg", &["picked"], &["negated"], vec![]),
        node("Where", &["is16k", "picked", "negated"], &["y"], vec![]),
    ];
    nodes.extend(extra);
    model(
        nodes,
        vec![
            value("x", FLOAT, &["3"]),
            value("sr", INT64, &[]),
            value("idx", INT64, &["2"]),
        ],
        vec![value(out, FLOAT, &["2"])],
        vec![
            ints("one", &[1], &[1]),
            ints("zero", &[], &[0]),
            ints("rate", &[], &[16000]),
        ],
    )
}

fn int64(shape: &[usize], v: &[i64]) -> HostTensor {
    HostTensor {
        elem: uop_onnx::ElemType::Int64,
        shape: shape.to_vec(),
        data: HostData::Int(v.to_vec()),
    }
}

#[test]
fn an_integer_input_used_as_data_is_held_in_the_float_type_and_indices_stay_i32() {
    let m = import(&rate_switch(vec![], "y"), &ImportOptions::default()).expect("imports");
    let text = uop_graph::text::print_graph(&m.graph);
    assert!(text.contains("input sr: f32[]"), "{text}");
    assert!(text.contains("input idx: i32[2]"), "{text}");
    let exe = uop_exec::compile(&m.graph).expect("compiles");
    for (rate, want) in [(16000, vec![30.0, 10.0]), (8000, vec![-30.0, -10.0])] {
        let given = HashMap::from([
            (
                "x".to_string(),
                HostTensor {
                    elem: uop_onnx::ElemType::Float,
                    shape: vec![3],
                    data: HostData::Float(vec![10.0, 20.0, 30.0]),
                },
            ),
            ("sr".to_string(), int64(&[], &[rate])),
            ("idx".to_string(), int64(&[2], &[-1, 0])),
        ]);
        let inputs = m.graph_inputs(&given).expect("converts");
        let out = uop_graph::run(&m.graph, &inputs, &HashMap::new()).expect("runs");
        assert_eq!(out[0].data, want, "sr = {rate} on the interpreter");
        assert_eq!(exe.run(&inputs).expect("runs")[0].data, want, "executor");
    }
    let too_big = HashMap::from([
        (
            "x".to_string(),
            HostTensor {
                elem: uop_onnx::ElemType::Float,
                shape: vec![3],
                data: HostData::Float(vec![0.0; 3]),
            },
        ),
        ("sr".to_string(), int64(&[], &[(1 << 24) + 1])),
        ("idx".to_string(), int64(&[2], &[0, 0])),
    ]);
    let e = m.graph_inputs(&too_big).expect_err("not exact in f32");
    assert_eq!(
        e.to_string(),
        "`sr`: INT64 value 16777217 is not exact in f32, the type this model holds it in"
    );
}

#[test]
fn integer_arithmetic_on_an_input_held_as_data_is_checked_exact_in_f32() {
    let bytes = rate_switch(vec![node("Add", &["sr0", "rate"], &["next"], vec![])], "y");
    let m = import(&bytes, &ImportOptions::default()).expect("int arithmetic at run time");
    // Held in f32, `sr` must be exact there: a value past 2^24 is refused.
    let too_big = HashMap::from([
        (
            "x".to_string(),
            HostTensor {
                elem: uop_onnx::ElemType::Float,
                shape: vec![3],
                data: HostData::Float(vec![0.0; 3]),
            },
        ),
        ("sr".to_string(), int64(&[], &[(1 << 24) + 1])),
        ("idx".to_string(), int64(&[2], &[0, 0])),
    ]);
    assert!(
        m.graph_inputs(&too_big).is_err(),
        "2^24 + 1 is not exact in f32"
    );
}

#[test]
fn float_initializers_become_inputs_on_request_and_shapes_stay_constants() {
    // y = reshape(x * w.1, s): `w.1` may be an input, `s` (a shape) may not.
    let bytes = model(
        vec![
            node("Mul", &["x", "w.1"], &["p"], vec![]),
            node("Reshape", &["p", "s"], &["y"], vec![]),
        ],
        vec![value("x", FLOAT, &["2"])],
        vec![value("y", FLOAT, &["1", "2"])],
        vec![floats("w.1", &[2], &[3.0, 4.0]), ints("s", &[2], &[1, 2])],
    );
    let options = ImportOptions {
        initializer_inputs: vec!["w.1".into()],
        ..ImportOptions::default()
    };
    let m = import(&bytes, &options).expect("imports");
    let names: Vec<(&str, &str)> = m
        .inputs
        .iter()
        .map(|p| (p.onnx.as_str(), p.uop.as_str()))
        .collect();
    assert_eq!(names, [("x", "x"), ("w.1", "w_1")]);
    let x = uop_codegen::tensor::Tensor::new(uop_codegen::uop::DType::F32, vec![2], vec![1.0, 2.0])
        .unwrap();
    let w = uop_codegen::tensor::Tensor::new(uop_codegen::uop::DType::F32, vec![2], vec![5.0, 6.0])
        .unwrap();
    let out = uop_graph::run(&m.graph, &[x, w], &HashMap::new()).expect("runs");
    assert_eq!(
        out[0].data,
        vec![5.0, 12.0],
        "the weights given at run time are used"
    );
    let shape_as_input = ImportOptions {
        initializer_inputs: vec!["s".into()],
        ..ImportOptions::default()
    };
    let e = import(&bytes, &shape_as_input).unwrap_err();
    assert!(e.to_string().contains("only float initializers"), "{e}");
}
