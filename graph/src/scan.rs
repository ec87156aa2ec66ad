//! The rules of the sequential `scan` super node ([`Op::Scan`](crate::Op::Scan)),
//! shared by the type inference, the interpreter and the back ends: the body's
//! parameter types, the node's output types, and the slicing and stacking of
//! tensors along a scan axis.
//!
//! A `scan` of `count` iterations over `carried` states and scanned inputs `xs`
//! runs, for `t` in `0..count`: `state, ys_t = body(t, state, xs[k] at position
//! p_k(t) of its axis...)`, where `p_k(t)` is `t` forwards and `count - 1 - t` in
//! reverse; its outputs are the final state and each `ys` stacked along its axis at
//! position `q_k(t)` (the same rule). Zero iterations give the initial state and
//! stacked outputs with a zero-length axis.

use uop_codegen::index::{Expr, equal_sizes};
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;

use crate::ir::{ScanAxis, ValueType};
use crate::vocab::type_list as list;

/// What a `scan` node is, for its typing rules.
#[derive(Clone, Copy, Debug)]
pub struct ScanShape<'a> {
    /// The iteration count.
    pub count: &'a Expr,
    /// How many inputs are carried state.
    pub carried: usize,
    /// The axis of each scanned input.
    pub scanned: &'a [ScanAxis],
    /// The axis of each stacked output.
    pub stacked: &'a [ScanAxis],
}

/// The type of one slice of a value of type `t` along `axis` (the axis removed).
pub fn slice_type(t: &ValueType, axis: usize) -> Result<ValueType, String> {
    if axis >= t.shape.len() {
        return Err(format!("axis {axis} is not an axis of {t}"));
    }
    let mut shape = t.shape.clone();
    shape.remove(axis);
    Ok(ValueType::new(t.dtype, shape))
}

/// The type of `count` values of type `t` stacked along a new `axis`.
pub fn stacked_type(t: &ValueType, axis: usize, count: &Expr) -> Result<ValueType, String> {
    if axis > t.shape.len() {
        return Err(format!(
            "axis {axis} is not an axis of a value of {t} stacked (rank {})",
            t.shape.len() + 1
        ));
    }
    let mut shape = t.shape.clone();
    shape.insert(axis, count.clone());
    Ok(ValueType::new(t.dtype, shape))
}

/// The body's parameter types for inputs of `inputs`: the index (rank-0 i32), the
/// state, then one slice of each scanned input. Checks that every scanned input has
/// `count` positions on its axis.
pub fn body_params(s: &ScanShape, inputs: &[ValueType]) -> Result<Vec<ValueType>, String> {
    let Some(xs) = inputs.get(s.carried..) else {
        return Err(format!(
            "{} carried states, but only {} inputs",
            s.carried,
            inputs.len()
        ));
    };
    if xs.len() != s.scanned.len() {
        return Err(format!(
            "{} scanned inputs, but {} scan axes",
            xs.len(),
            s.scanned.len()
        ));
    }
    let mut params = vec![ValueType::scalar(DType::I32)];
    params.extend(inputs[..s.carried].iter().cloned());
    for (k, (x, a)) in xs.iter().zip(s.scanned).enumerate() {
        let slice = slice_type(x, a.axis).map_err(|m| format!("scanned input {k}: {m}"))?;
        if !equal_sizes(&x.shape[a.axis], s.count) {
            return Err(format!(
                "scanned input {k} ({x}) has {} positions on axis {}, but the scan runs {} iterations",
                x.shape[a.axis], a.axis, s.count
            ));
        }
        params.push(slice);
    }
    Ok(params)
}

/// The output types of a `scan` whose inputs are `inputs`, whose body takes `params`
/// and returns `results`.
pub fn output_types(
    s: &ScanShape,
    inputs: &[ValueType],
    params: &[ValueType],
    results: &[ValueType],
) -> Result<Vec<ValueType>, String> {
    let expected = body_params(s, inputs)?;
    if expected != params {
        return Err(format!(
            "the body's parameters: expected ({}), found ({})",
            list(&expected),
            list(params)
        ));
    }
    let state = &inputs[..s.carried];
    let Some(ys) = results.get(s.carried..) else {
        return Err(format!(
            "the body returns {} values, fewer than the {} states",
            results.len(),
            s.carried
        ));
    };
    if results[..s.carried] != *state {
        return Err(format!(
            "the body's results (the state): expected ({}), found ({})",
            list(state),
            list(&results[..s.carried])
        ));
    }
    if ys.len() != s.stacked.len() {
        return Err(format!(
            "the body returns {} values to stack, but there are {} stacked axes",
            ys.len(),
            s.stacked.len()
        ));
    }
    let mut out = state.to_vec();
    for (k, (y, a)) in ys.iter().zip(s.stacked).enumerate() {
        out.push(stacked_type(y, a.axis, s.count).map_err(|m| format!("stacked output {k}: {m}"))?);
    }
    Ok(out)
}

/// The attributes of a `scan` as its text writes them: `carried=C`, then `axes=[..]`
/// and `reverse=[..]` (of the scanned inputs) and `out_axes=[..]` and
/// `out_reverse=[..]` (of the stacked outputs) where any differs from the default
/// (axis 0, forwards).
pub fn attrs_text(carried: usize, scanned: &[ScanAxis], stacked: &[ScanAxis]) -> Vec<String> {
    let mut out = vec![format!("carried={carried}")];
    let mut lists = |axes: &[ScanAxis], axis_name: &str, reverse_name: &str| {
        let join = |f: &dyn Fn(&ScanAxis) -> usize| {
            axes.iter()
                .map(|a| f(a).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if axes.iter().any(|a| a.axis != 0) {
            out.push(format!("{axis_name}=[{}]", join(&|a| a.axis)));
        }
        if axes.iter().any(|a| a.reverse) {
            out.push(format!(
                "{reverse_name}=[{}]",
                join(&|a| usize::from(a.reverse))
            ));
        }
    };
    lists(scanned, "axes", "reverse");
    lists(stacked, "out_axes", "out_reverse");
    out
}

/// Element counts around `axis` of `shape`: (outer, length, inner).
pub fn split_at_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}

/// Position `p` of `t` along `axis`, the axis removed.
pub fn slice(t: &Tensor, axis: usize, p: usize) -> Result<Tensor, String> {
    if axis >= t.shape.len() || p >= t.shape[axis] {
        return Err(format!(
            "position {p} of axis {axis} is outside a value of shape {:?}",
            t.shape
        ));
    }
    let (outer, len, inner) = split_at_axis(&t.shape, axis);
    let mut data = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        let from = (o * len + p) * inner;
        data.extend_from_slice(&t.data[from..from + inner]);
    }
    let mut shape = t.shape.clone();
    shape.remove(axis);
    Tensor::new(t.dtype, shape, data).map_err(|e| e.to_string())
}

/// Writes `row` (the shape of `out` without `axis`) at position `p` of `out`'s
/// `axis`.
pub fn put_row(out: &mut Tensor, axis: usize, p: usize, row: &Tensor) -> Result<(), String> {
    let mut expected = out.shape.clone();
    if axis >= expected.len() || p >= expected[axis] {
        return Err(format!(
            "position {p} of axis {axis} is outside a value of shape {:?}",
            out.shape
        ));
    }
    expected.remove(axis);
    if row.shape != expected || row.dtype != out.dtype {
        return Err(format!(
            "a {}{:?} value where {}{expected:?} is stacked",
            row.dtype.name(),
            row.shape,
            out.dtype.name()
        ));
    }
    let (outer, len, inner) = split_at_axis(&out.shape, axis);
    for o in 0..outer {
        let to = (o * len + p) * inner;
        out.data[to..to + inner].copy_from_slice(&row.data[o * inner..(o + 1) * inner]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], data: &[f64]) -> Tensor {
        Tensor::new(DType::F32, shape.to_vec(), data.to_vec()).unwrap()
    }

    #[test]
    fn a_slice_removes_the_axis_and_put_row_writes_it_back() {
        let x = t(&[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let col = slice(&x, 1, 2).unwrap();
        assert_eq!(
            (col.shape.clone(), col.data.clone()),
            (vec![2], vec![2.0, 5.0])
        );
        let mut y = t(&[2, 3], &[0.0; 6]);
        put_row(&mut y, 1, 2, &col).unwrap();
        assert_eq!(y.data, vec![0.0, 0.0, 2.0, 0.0, 0.0, 5.0]);
        assert!(slice(&x, 1, 3).is_err());
        assert!(put_row(&mut y, 0, 0, &col).is_err());
    }

    #[test]
    fn reverse_axes_walk_from_the_end() {
        let a = ScanAxis {
            axis: 0,
            reverse: true,
        };
        assert_eq!((a.position(0, 4), a.position(3, 4)), (3, 0));
        assert_eq!(ScanAxis::new(0).position(1, 4), 1);
    }
}
