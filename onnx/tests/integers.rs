//! Integer data at run time: ONNX's integer semantics on the graph interpreter (the
//! oracle) and the executor (Cranelift), computed in the graph's float type with casts
//! at the edges. Integer Div truncates toward zero, Mod takes the divisor's sign (or
//! the dividend's with `fmod=1`), Cast from a float truncates; a model without floats
//! runs in f64, where every i32 is exact; int64 data must fit i32, and integers an f32
//! graph computes with must lie within ±2^24; each is a clear error naming the input.

use std::collections::HashMap;

use prost::Message;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_onnx::proto::tensor_shape_proto::Dimension;
use uop_onnx::proto::tensor_shape_proto::dimension::Value as Dim;
use uop_onnx::proto::type_proto::{Tensor as TensorType, Value as TypeValue};
use uop_onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto,
    TypeProto, ValueInfoProto,
};
use uop_onnx::{ElemType, HostData, HostTensor, ImportOptions, Imported, import};

const FLOAT: i32 = 1;
const INT32: i32 = 6;
const INT64: i32 = 7;

fn value(name: &str, elem: i32, n: i64) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(TypeValue::TensorType(TensorType {
                elem_type: Some(elem),
                shape: Some(TensorShapeProto {
                    dim: vec![Dimension {
                        value: Some(Dim::DimValue(n)),
                        ..Default::default()
                    }],
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn node(op: &str, inputs: &[&str], output: &str, attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        name: Some(output.into()),
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

fn import_model(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
) -> Imported {
    let bytes = ModelProto {
        ir_version: Some(10),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(GraphProto {
            node: nodes,
            input: inputs,
            output: outputs,
            name: Some("g".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    import(&bytes, &ImportOptions::default()).expect("the model imports")
}

fn host(elem: ElemType, data: HostData) -> HostTensor {
    let n = match &data {
        HostData::Float(v) => v.len(),
        HostData::Int(v) => v.len(),
    };
    HostTensor {
        elem,
        shape: vec![n],
        data,
    }
}

/// Runs `m` on the interpreter and the executor; both must agree, and the
/// interpreter's outputs are returned as ONNX tensors.
fn run(m: &Imported, given: &[(&str, HostTensor)]) -> Vec<HostTensor> {
    let given: HashMap<String, HostTensor> = given
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    let inputs = m.graph_inputs(&given).expect("the inputs convert");
    let oracle = uop_graph::run(&m.graph, &inputs, &HashMap::new()).expect("the graph runs");
    let exe = uop_exec::compile(&m.graph).expect("the graph compiles");
    let jit: Vec<Tensor> = exe.run(&inputs).expect("the executor runs");
    let (want, got) = (m.model_outputs(&oracle), m.model_outputs(&jit));
    assert_eq!(want, got, "interpreter and executor");
    want
}

fn ints(v: &[i64]) -> HostData {
    HostData::Int(v.to_vec())
}

#[test]
fn integer_div_truncates_and_mod_takes_the_divisor_sign_or_with_fmod_the_dividend_sign() {
    let m = import_model(
        vec![
            node("Div", &["a", "b"], "q", vec![]),
            node("Mod", &["a", "b"], "m", vec![]),
            node("Mod", &["a", "b"], "f", vec![int_attr("fmod", 1)]),
        ],
        vec![value("a", INT32, 4), value("b", INT32, 4)],
        vec![
            value("q", INT32, 4),
            value("m", INT32, 4),
            value("f", INT32, 4),
        ],
    );
    assert_eq!(
        m.graph.dtype,
        DType::F64,
        "a model without floats runs in f64"
    );
    let a = host(ElemType::Int32, ints(&[7, -7, 7, -7]));
    let b = host(ElemType::Int32, ints(&[2, 2, -2, -2]));
    let out = run(&m, &[("a", a), ("b", b)]);
    assert_eq!(out[0].data, ints(&[3, -3, -3, 3]));
    assert_eq!(out[1].data, ints(&[1, 1, -1, -1]));
    assert_eq!(out[2].data, ints(&[1, -1, 1, -1]));
    assert!(out.iter().all(|t| t.elem == ElemType::Int32));
}

#[test]
fn a_model_without_floats_computes_every_i32_exactly() {
    let m = import_model(
        vec![
            node("Add", &["a", "b"], "s", vec![]),
            node("Max", &["a", "b"], "hi", vec![]),
            node("Neg", &["a"], "n", vec![]),
            node("Equal", &["a", "b"], "e", vec![]),
        ],
        vec![value("a", INT64, 2), value("b", INT64, 2)],
        vec![
            value("s", INT64, 2),
            value("hi", INT64, 2),
            value("n", INT64, 2),
            value("e", 9, 2),
        ],
    );
    let big = (1 << 30) + 1;
    let a = host(ElemType::Int64, ints(&[big, -big]));
    let b = host(ElemType::Int64, ints(&[big, 3]));
    let out = run(&m, &[("a", a), ("b", b)]);
    assert_eq!(out[0].data, ints(&[2 * big, 3 - big]));
    assert_eq!(out[1].data, ints(&[big, 3]));
    assert_eq!(out[2].data, ints(&[-big, big]));
    assert_eq!(out[3].data, ints(&[1, 0]));
    assert_eq!(out[3].elem, ElemType::Bool);
}

#[test]
fn cast_from_float_truncates_toward_zero_and_integers_cast_back_exactly() {
    let m = import_model(
        vec![
            node("Cast", &["x"], "i", vec![int_attr("to", i64::from(INT32))]),
            node("Cast", &["i"], "y", vec![int_attr("to", i64::from(FLOAT))]),
            node("Mul", &["y", "x"], "z", vec![]),
        ],
        vec![value("x", FLOAT, 4)],
        vec![value("i", INT32, 4), value("z", FLOAT, 4)],
    );
    assert_eq!(m.graph.dtype, DType::F32);
    let x = host(
        ElemType::Float,
        HostData::Float(vec![2.75, -2.75, 0.5, -7.0]),
    );
    let out = run(&m, &[("x", x)]);
    assert_eq!(out[0].data, ints(&[2, -2, 0, -7]));
    assert_eq!(
        out[1].data,
        HostData::Float(vec![5.5, 5.5, 0.0, 49.0]),
        "the truncated values, back in f32, times x"
    );
}

#[test]
fn int64_data_no_index_reads_is_held_as_f64_data_exact_beyond_i32() {
    // Integers only: the graph runs in f64. `a` reaches no index operand, so it
    // is held in the float type, where 2^40 and 2^41 are exact.
    let m = import_model(
        vec![node("Add", &["a", "a"], "s", vec![])],
        vec![value("a", INT64, 1)],
        vec![value("s", INT64, 1)],
    );
    let out = run(&m, &[("a", host(ElemType::Int64, ints(&[1 << 40])))]);
    assert_eq!(out[0].data, ints(&[1 << 41]));
}

#[test]
fn integers_an_f32_graph_computes_with_must_lie_within_2_to_the_24() {
    let m = import_model(
        vec![
            node("Cast", &["k"], "kf", vec![int_attr("to", i64::from(FLOAT))]),
            node("Add", &["x", "kf"], "y", vec![]),
        ],
        vec![value("x", FLOAT, 1), value("k", INT32, 1)],
        vec![value("y", FLOAT, 1)],
    );
    let x = host(ElemType::Float, HostData::Float(vec![0.5]));
    let fits = host(ElemType::Int32, ints(&[1 << 24]));
    let out = run(&m, &[("x", x.clone()), ("k", fits)]);
    assert_eq!(out[0].data, HostData::Float(vec![16_777_216.0]));
    let given = HashMap::from([
        ("x".to_string(), x),
        (
            "k".to_string(),
            host(ElemType::Int32, ints(&[(1 << 24) + 1])),
        ),
    ]);
    let e = m
        .graph_inputs(&given)
        .expect_err("2^24 + 1 is not exact in f32");
    assert!(e.to_string().contains("`k`"), "{e}");
    assert!(e.to_string().contains("is not exact in f32"), "{e}");
}

#[test]
fn small_integers_wrap_as_two_s_complement_after_every_op() {
    const UINT8: i32 = 2;
    const INT8: i32 = 3;
    let m = import_model(
        vec![
            node("Sub", &["a", "b"], "d", vec![]),
            node("Mul", &["a", "b"], "p", vec![]),
            // (a * b) wraps before the division, as ONNX computes it.
            node("Div", &["p", "b"], "q", vec![]),
            node("Add", &["c", "c"], "s", vec![]),
        ],
        vec![
            value("a", UINT8, 2),
            value("b", UINT8, 2),
            value("c", INT8, 2),
        ],
        vec![
            value("d", UINT8, 2),
            value("q", UINT8, 2),
            value("s", INT8, 2),
        ],
    );
    let a = host(ElemType::UInt8, ints(&[3, 200]));
    let b = host(ElemType::UInt8, ints(&[5, 2]));
    let c = host(ElemType::Int8, ints(&[100, -100]));
    let out = run(&m, &[("a", a), ("b", b), ("c", c)]);
    assert_eq!(out[0].data, ints(&[254, 198]));
    // 200 * 2 = 400 wraps to 144; 144 / 2 = 72 (not 200).
    assert_eq!(out[1].data, ints(&[3, 72]));
    assert_eq!(out[2].data, ints(&[-56, 56]));
}
