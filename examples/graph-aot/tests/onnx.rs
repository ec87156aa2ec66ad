//! The ONNX model `model/classifier.onnx`, emitted as Rust at build time (uop-build
//! imports it with uop-onnx and writes it through the graph AOT), against the graph
//! interpreter running the same import of the same file, for several batch sizes;
//! and a wrong input length is the runtime's error, not a panic.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_example_graph_aot::{ClassifierWorkspace, KernelError, classifier, classifier_sizes};
use uop_onnx::{ImportOptions, import};

const MODEL: &[u8] = include_bytes!("../model/classifier.onnx");

/// What the graph interpreter computes for the imported model.
fn reference(x: &[f32], batch: usize) -> Vec<f64> {
    let model = import(MODEL, &ImportOptions::default()).expect("the model imports");
    let data = x.iter().map(|&v| f64::from(v)).collect();
    let input = Tensor::new(DType::F32, vec![batch, 4], data).expect("consistent");
    let mut out = uop_graph::run(&model.graph, &[input], &HashMap::new()).expect("runs");
    out.remove(0).data
}

#[test]
fn the_model_built_to_rust_gives_the_interpreters_probabilities() {
    let mut ws = ClassifierWorkspace::new();
    for batch in [1, 3, 17] {
        let x: Vec<f32> = (0..batch * 4)
            .map(|i| ((i * 37) % 23) as f32 / 7.0 - 1.5)
            .collect();
        let sizes = classifier_sizes([batch, 4]).expect("sizes");
        assert_eq!(sizes.probs_out_shape, [batch, 3]);
        let mut probs = vec![0.0f32; batch * 3];
        classifier(&mut ws, &x, [batch, 4], &mut probs).expect("runs");
        let expected = reference(&x, batch);
        assert_eq!(expected.len(), probs.len());
        for (found, want) in probs.iter().zip(&expected) {
            assert!(
                (f64::from(*found) - want).abs() <= 1e-5,
                "batch {batch}: {found} vs {want}"
            );
        }
        // Each row is a distribution.
        for row in probs.chunks(3) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        }
    }
}

#[test]
fn a_wrong_input_length_is_the_runtimes_error() {
    let mut ws = ClassifierWorkspace::new();
    let mut probs = vec![0.0f32; 6];
    let err = classifier(&mut ws, &[0.0; 7], [2, 4], &mut probs).expect_err("7 of 8");
    assert!(matches!(err, KernelError::Length { .. }), "{err}");
}
