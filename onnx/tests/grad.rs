//! Gradients of imported models: for every committed node test, the gradient graph
//! of the imported model (`uop_graph::grad`, every float input differentiated)
//! matches central finite differences at the test's own inputs, in f64.
//!
//! The cases listed in [`EXCLUDED`] are not differentiable where the test data puts
//! them (or have nothing to differentiate); the list is checked too: an excluded case
//! whose gradient check passes fails this test, so the list cannot go stale. Cases
//! whose inputs are all integers have nothing to differentiate and are counted apart.

#[allow(dead_code)]
mod node_harness;

use std::collections::HashMap;
use std::path::Path;

use node_harness::{case_names, load_case};
use uop_graph::grad::GraphGradSpec;
use uop_graph::grad::fd::{FdOptions, check_gradient};

/// Cases whose gradient is not checked, and why.
const EXCLUDED: &[(&str, &str)] = &[
    ("test_acosh_example", "acosh at x = 1 (infinite slope)"),
    (
        "test_attention_4d_causal_nonpad_negative_offset_structural_empty_expanded",
        "fully masked rows: softmax over -inf is NaN, replaced by 0 with `where`, whose \
         untaken NaN branch makes the gradient NaN",
    ),
    (
        "test_argmax_keepdims_example",
        "ties in the data: the index jumps",
    ),
    (
        "test_argmax_keepdims_example_select_last_index",
        "ties in the data",
    ),
    (
        "test_argmax_negative_axis_keepdims_example",
        "ties in the data",
    ),
    (
        "test_argmax_negative_axis_keepdims_example_select_last_index",
        "ties in the data",
    ),
    ("test_argmax_no_keepdims_example", "ties in the data"),
    (
        "test_argmax_no_keepdims_example_select_last_index",
        "ties in the data",
    ),
    (
        "test_argmin_keepdims_example_select_last_index",
        "ties in the data",
    ),
    (
        "test_argmin_negative_axis_keepdims_example_select_last_index",
        "ties in the data",
    ),
    (
        "test_argmin_no_keepdims_example_select_last_index",
        "ties in the data",
    ),
    ("test_constant", "no input"),
    ("test_constantofshape_float_ones", "no float input"),
    ("test_constantofshape_int_shape_zero", "no float input"),
    ("test_constantofshape_int_zeros", "no float input"),
    ("test_elu_example", "x = 0, a kink"),
    ("test_floor_example", "integral x, a step"),
    ("test_hardmax_one_hot", "ties in the data"),
    ("test_leakyrelu_example", "x = 0, a kink"),
    ("test_onehot_negative_indices", "no float input"),
    ("test_onehot_out_of_range_indices", "no float input"),
    ("test_pow", "0^y"),
    (
        "test_range_float_type_positive_delta",
        "no input left (all bound at import)",
    ),
    (
        "test_range_int32_type_negative_delta",
        "no input left (all bound at import)",
    ),
    (
        "test_reduce_min_default_axes_keepdims_example",
        "ties in the data",
    ),
    ("test_selu_example", "x = 0, a kink"),
    (
        "test_training_dropout",
        "not imported: random training-mode Dropout",
    ),
    (
        "test_training_dropout_default",
        "not imported: random training-mode Dropout",
    ),
];

#[test]
fn gradients_of_imported_models_match_finite_differences() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/onnx/node");
    let names = case_names(&dir);
    let options = FdOptions {
        sample: Some(4),
        ..FdOptions::default()
    };
    let mut checked = 0;
    let mut integers_only = 0;
    let mut failures = Vec::new();
    for name in &names {
        let excluded = EXCLUDED.iter().any(|(n, _)| n == name);
        let loaded = load_case(&dir.join(name), &[]);
        if let Ok(c) = &loaded
            && !excluded
            && c.imported.inputs.iter().all(|p| p.elem.is_int())
            && !c.imported.inputs.is_empty()
        {
            // Integer data only: nothing to differentiate.
            integers_only += 1;
            continue;
        }
        let result = loaded.and_then(|c| {
            // Integer inputs held in the float type (no index use) are data, not
            // something to differentiate: finite differences would step across
            // the integers.
            let mut spec = GraphGradSpec::all(&c.imported.graph);
            spec.wrt
                .retain(|&k| c.imported.inputs.get(k).is_none_or(|p| !p.elem.is_int()));
            check_gradient(
                &c.imported.graph,
                &spec,
                &c.inputs,
                &HashMap::new(),
                &options,
            )
            .map_err(|e| e.to_string())
        });
        match (result, excluded) {
            (Ok(_), false) => checked += 1,
            (Err(e), false) => failures.push(format!("{name}: {e}")),
            (Ok(_), true) => failures.push(format!("{name}: excluded, but its gradient checks")),
            (Err(_), true) => {}
        }
    }
    println!(
        "{checked} gradients checked, {} excluded, {integers_only} of integers only",
        EXCLUDED.len()
    );
    assert!(checked >= 500, "only {checked} gradients checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
