//! `Loop` and `Scan` import as the graph layer's sequential `scan` node: the body is
//! imported once, so a trip count of 100,000 imports as fast as one of 3; nested
//! Loops, Scan's axes and directions, and symbolic lengths, each checked against
//! numbers computed by hand, on the graph interpreter and the executor.

use std::collections::HashMap;
use std::time::Instant;

use prost::Message;
use uop_codegen::index::Expr;
use uop_onnx::proto::tensor_shape_proto::Dimension;
use uop_onnx::proto::tensor_shape_proto::dimension::Value as Dim;
use uop_onnx::proto::type_proto::{Tensor as TensorType, Value as TypeValue};
use uop_onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};
use uop_onnx::{ElemType, HostData, HostTensor, ImportOptions, Imported, import};

const FLOAT: i32 = 1;
const INT64: i32 = 7;
const BOOL: i32 = 9;

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

fn ints_attr(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        ints: v.to_vec(),
        r#type: Some(7),
        ..Default::default()
    }
}

fn graph_attr(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        g: Some(g),
        r#type: Some(5),
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

fn floats(name: &str, dims: &[i64], v: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(FLOAT),
        dims: dims.to_vec(),
        float_data: v.to_vec(),
        ..Default::default()
    }
}

fn true_tensor(name: &str) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(BOOL),
        dims: vec![],
        int32_data: vec![1],
        ..Default::default()
    }
}

fn model(
    opset: i64,
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    init: Vec<TensorProto>,
) -> Vec<u8> {
    ModelProto {
        ir_version: Some(10),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(opset),
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

fn host(shape: &[usize], v: &[f64]) -> HostTensor {
    HostTensor {
        elem: ElemType::Float,
        shape: shape.to_vec(),
        data: HostData::Float(v.to_vec()),
    }
}

/// The imported model's outputs on the interpreter, checked equal on the executor.
fn run(m: &Imported, inputs: &[(&str, HostTensor)]) -> Vec<Vec<f64>> {
    let given: HashMap<String, HostTensor> = inputs
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    let inputs = m.graph_inputs(&given).expect("converts");
    let out = uop_graph::run(&m.graph, &inputs, &HashMap::new()).expect("runs");
    let exe = uop_exec::compile(&m.graph).expect("compiles");
    assert_eq!(exe.run(&inputs).expect("runs"), out, "executor");
    out.into_iter().map(|t| t.data).collect()
}

fn scans(m: &Imported) -> usize {
    m.graph
        .nodes()
        .iter()
        .filter(|n| n.op.kind() == "scan")
        .count()
}

/// `y += x[i]` for i in 0..M, every `y` stacked (test_loop11's body: the counter
/// sliced into a constant table), with the table 1, 2, ..., `table` long.
fn counter_loop(m: i64, table: usize) -> Vec<u8> {
    let xs: Vec<f32> = (1..=table).map(|v| v as f32).collect();
    let body = GraphProto {
        name: Some("body".into()),
        input: vec![
            value("i", INT64, &[]),
            value("c", BOOL, &[]),
            value("y_in", FLOAT, &["1"]),
        ],
        output: vec![
            value("c_out", BOOL, &[]),
            value("y_out", FLOAT, &["1"]),
            value("scan_out", FLOAT, &["1"]),
        ],
        node: vec![
            node("Identity", &["c"], &["c_out"], vec![]),
            node("Add", &["i", "one"], &["end"], vec![]),
            node("Unsqueeze", &["i", "zero"], &["start1"], vec![]),
            node("Unsqueeze", &["end", "zero"], &["end1"], vec![]),
            node("Slice", &["table", "start1", "end1"], &["row"], vec![]),
            node("Add", &["y_in", "row"], &["y_out"], vec![]),
            node("Identity", &["y_out"], &["scan_out"], vec![]),
        ],
        initializer: vec![
            ints("one", &[], &[1]),
            ints("zero", &[1], &[0]),
            floats("table", &[table as i64], &xs),
        ],
        ..Default::default()
    };
    model(
        13,
        vec![node(
            "Loop",
            &["m", "cond", "y0"],
            &["y", "ys"],
            vec![graph_attr("body", body)],
        )],
        vec![value("y0", FLOAT, &["1"])],
        vec![value("y", FLOAT, &["1"]), value("ys", FLOAT, &["M", "1"])],
        vec![ints("m", &[], &[m]), true_tensor("cond")],
    )
}

#[test]
fn a_loop_with_scan_outputs_is_one_scan_node_whatever_its_trip_count() {
    let m = import(&counter_loop(5, 5), &ImportOptions::default()).expect("imports");
    assert_eq!(scans(&m), 1, "{}", uop_graph::text::print_graph(&m.graph));
    let out = run(&m, &[("y0", host(&[1], &[0.5]))]);
    assert_eq!(out[0], [15.5]);
    assert_eq!(out[1], [1.5, 3.5, 6.5, 10.5, 15.5]);
    let small = m.graph.len();
    let start = Instant::now();
    let big = import(&counter_loop(100_000, 100_000), &ImportOptions::default()).expect("imports");
    let took = start.elapsed();
    assert_eq!(
        big.graph.len(),
        small,
        "the graph does not grow with the trip count"
    );
    assert!(took.as_secs_f64() < 2.0, "import took {took:?}");
    assert_eq!(
        big.graph.nodes().last().map(|n| n.outputs[1].shape.clone()),
        Some(vec![Expr::Int(100_000), Expr::Int(1)])
    );
}

#[test]
fn a_loop_whose_condition_input_is_false_runs_zero_times() {
    let mut bytes = counter_loop(5, 5);
    let mut m = ModelProto::decode(bytes.as_slice()).unwrap();
    let g = m.graph.as_mut().unwrap();
    g.initializer[1].int32_data = vec![0];
    bytes = m.encode_to_vec();
    let m = import(&bytes, &ImportOptions::default()).expect("imports");
    let out = run(&m, &[("y0", host(&[1], &[0.5]))]);
    assert_eq!(out[0], [0.5]);
    assert!(out[1].is_empty());
}

/// An outer Loop of 3 whose body runs an inner Loop of 2 on its state, each inner
/// step `v <- 2 v + 1`, the inner scan outputs stacked twice over.
fn nested_loops() -> Vec<u8> {
    let inner = GraphProto {
        name: Some("inner".into()),
        input: vec![
            value("j", INT64, &[]),
            value("cj", BOOL, &[]),
            value("w_in", FLOAT, &[]),
        ],
        output: vec![
            value("cj_out", BOOL, &[]),
            value("w_out", FLOAT, &[]),
            value("w_scan", FLOAT, &[]),
        ],
        node: vec![
            node("Identity", &["cj"], &["cj_out"], vec![]),
            node("Mul", &["w_in", "two"], &["w2"], vec![]),
            node("Add", &["w2", "onef"], &["w_out"], vec![]),
            node("Identity", &["w_out"], &["w_scan"], vec![]),
        ],
        ..Default::default()
    };
    let outer = GraphProto {
        name: Some("outer".into()),
        input: vec![
            value("i", INT64, &[]),
            value("ci", BOOL, &[]),
            value("v_in", FLOAT, &[]),
        ],
        output: vec![
            value("ci_out", BOOL, &[]),
            value("v_out", FLOAT, &[]),
            value("v_scan", FLOAT, &["2"]),
        ],
        node: vec![
            node("Identity", &["ci"], &["ci_out"], vec![]),
            node(
                "Loop",
                &["two_i", "cond", "v_in"],
                &["v_out", "v_scan"],
                vec![graph_attr("body", inner)],
            ),
        ],
        ..Default::default()
    };
    model(
        13,
        vec![node(
            "Loop",
            &["three", "cond", "v0"],
            &["v", "vs"],
            vec![graph_attr("body", outer)],
        )],
        vec![value("v0", FLOAT, &[])],
        vec![value("v", FLOAT, &[]), value("vs", FLOAT, &["3", "2"])],
        vec![
            ints("three", &[], &[3]),
            ints("two_i", &[], &[2]),
            true_tensor("cond"),
            floats("two", &[], &[2.0]),
            floats("onef", &[], &[1.0]),
        ],
    )
}

#[test]
fn nested_loops_are_nested_scans() {
    let m = import(&nested_loops(), &ImportOptions::default()).expect("imports");
    assert_eq!(scans(&m), 2, "{}", uop_graph::text::print_graph(&m.graph));
    let out = run(&m, &[("v0", host(&[], &[0.0]))]);
    // 0 -> 1 -> 3 | -> 7 -> 15 | -> 31 -> 63
    assert_eq!(out[0], [63.0]);
    assert_eq!(out[1], [1.0, 3.0, 7.0, 15.0, 31.0, 63.0]);
}

/// Scan (opset 11) over `x: [2, L]` on axis 1 in reverse, the running sum stacked
/// on axis 0 forwards and its double on axis 1 in reverse.
fn scan_model(len: &str) -> Vec<u8> {
    let body = GraphProto {
        name: Some("body".into()),
        input: vec![value("s_in", FLOAT, &["2"]), value("col", FLOAT, &["2"])],
        output: vec![
            value("s_out", FLOAT, &["2"]),
            value("a", FLOAT, &["2"]),
            value("b", FLOAT, &["2"]),
        ],
        node: vec![
            node("Add", &["s_in", "col"], &["s_out"], vec![]),
            node("Identity", &["s_out"], &["a"], vec![]),
            node("Add", &["s_out", "s_out"], &["b"], vec![]),
        ],
        ..Default::default()
    };
    model(
        11,
        vec![node(
            "Scan",
            &["s0", "x"],
            &["s", "as", "bs"],
            vec![
                graph_attr("body", body),
                int_attr("num_scan_inputs", 1),
                ints_attr("scan_input_axes", &[-1]),
                ints_attr("scan_input_directions", &[1]),
                ints_attr("scan_output_axes", &[0, -1]),
                ints_attr("scan_output_directions", &[0, 1]),
            ],
        )],
        vec![value("s0", FLOAT, &["2"]), value("x", FLOAT, &["2", len])],
        vec![
            value("s", FLOAT, &["2"]),
            value("as", FLOAT, &[len, "2"]),
            value("bs", FLOAT, &["2", len]),
        ],
        vec![],
    )
}

#[test]
fn scan_axes_and_directions_and_a_symbolic_length() {
    for len in ["3", "L"] {
        let m = import(&scan_model(len), &ImportOptions::default()).expect("imports");
        assert_eq!(scans(&m), 1);
        let x = host(&[2, 3], &[1.0, 2.0, 3.0, 10.0, 20.0, 30.0]);
        let out = run(&m, &[("s0", host(&[2], &[0.0, 0.0])), ("x", x)]);
        // Columns 2, 1, 0: sums (3, 30), (5, 50), (6, 60).
        assert_eq!(out[0], [6.0, 60.0], "{len}");
        assert_eq!(out[1], [3.0, 30.0, 5.0, 50.0, 6.0, 60.0], "{len}");
        // Doubled, iteration t at column 2 - t: columns (12, 10, 6), (120, 100, 60).
        assert_eq!(out[2], [12.0, 10.0, 6.0, 120.0, 100.0, 60.0], "{len}");
    }
}

#[test]
fn a_loop_whose_trip_count_is_a_symbolic_size_runs_that_many_times() {
    // M = Shape(x)[0] (x: [N]): y <- y + x[i], every y stacked.
    let body = GraphProto {
        name: Some("body".into()),
        input: vec![
            value("i", INT64, &[]),
            value("c", BOOL, &[]),
            value("y_in", FLOAT, &["1"]),
        ],
        output: vec![
            value("c_out", BOOL, &[]),
            value("y_out", FLOAT, &["1"]),
            value("scan_out", FLOAT, &["1"]),
        ],
        node: vec![
            node("Identity", &["c"], &["c_out"], vec![]),
            node("Add", &["i", "one"], &["end"], vec![]),
            node("Unsqueeze", &["i", "zero"], &["start1"], vec![]),
            node("Unsqueeze", &["end", "zero"], &["end1"], vec![]),
            node("Slice", &["x", "start1", "end1"], &["row"], vec![]),
            node("Add", &["y_in", "row"], &["y_out"], vec![]),
            node("Identity", &["y_out"], &["scan_out"], vec![]),
        ],
        initializer: vec![ints("one", &[], &[1]), ints("zero", &[1], &[0])],
        ..Default::default()
    };
    let bytes = model(
        13,
        vec![
            node("Shape", &["x"], &["shape"], vec![]),
            node("Gather", &["shape", "zero_s"], &["m"], vec![]),
            node(
                "Loop",
                &["m", "cond", "y0"],
                &["y", "ys"],
                vec![graph_attr("body", body)],
            ),
        ],
        vec![value("x", FLOAT, &["N"]), value("y0", FLOAT, &["1"])],
        vec![value("y", FLOAT, &["1"]), value("ys", FLOAT, &["N", "1"])],
        vec![ints("zero_s", &[], &[0]), true_tensor("cond")],
    );
    let m = import(&bytes, &ImportOptions::default()).expect("imports");
    assert_eq!(scans(&m), 1);
    assert_eq!(
        m.graph.nodes().last().map(|n| n.outputs[1].shape.clone()),
        Some(vec![Expr::name("N"), Expr::Int(1)])
    );
    let out = run(
        &m,
        &[
            ("x", host(&[4], &[1.0, 2.0, 3.0, 4.0])),
            ("y0", host(&[1], &[0.0])),
        ],
    );
    assert_eq!(out[0], [10.0]);
    assert_eq!(out[1], [1.0, 3.0, 6.0, 10.0]);
}
