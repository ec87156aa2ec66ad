//! Printing tensors on stdout, numpy style: nested brackets, and only the edges of
//! large tensors.

use std::fmt::Write;

use uop_codegen::tensor::{Tensor, strides};
use uop_codegen::uop::DType;

/// Tensors with more elements than this are summarised.
const SUMMARY_THRESHOLD: usize = 1000;
/// Elements kept at each edge of a summarised axis.
const EDGE_ITEMS: usize = 3;

/// `name: f32[2, 3]` followed by the values.
pub fn render(name: &str, t: &Tensor) -> String {
    let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    let mut out = format!("{name}: {}[{}]\n", t.dtype, dims.join(", "));
    let summarise = t.len() > SUMMARY_THRESHOLD;
    let cells: Vec<String> = t.data.iter().map(|&v| number(t.dtype, v)).collect();
    let width = cells.iter().map(|c| c.len()).max().unwrap_or(0);
    nested(&mut out, t, &cells, width, 0, 0, summarise);
    out.push('\n');
    out
}

fn number(dtype: DType, v: f64) -> String {
    match dtype {
        DType::I32 => format!("{}", v as i64),
        DType::F32 => format!("{}", v as f32),
        DType::F64 => format!("{v}"),
    }
}

fn nested(
    out: &mut String,
    t: &Tensor,
    cells: &[String],
    width: usize,
    axis: usize,
    offset: usize,
    summarise: bool,
) {
    if axis == t.shape.len() {
        let _ = write!(out, "{:>width$}", cells[offset]);
        return;
    }
    let n = t.shape[axis];
    let stride = strides(&t.shape)[axis];
    let shown: Vec<Option<usize>> = if summarise && n > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain([None])
            .chain((n - EDGE_ITEMS..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    };
    out.push('[');
    let last_axis = axis + 1 == t.shape.len();
    for (k, item) in shown.iter().enumerate() {
        if k > 0 {
            if last_axis {
                out.push_str(", ");
            } else {
                out.push(',');
                out.push_str(&"\n".repeat(t.shape.len() - axis - 1));
                out.push_str(&" ".repeat(axis + 1));
            }
        }
        match item {
            Some(i) => nested(
                out,
                t,
                cells,
                width,
                axis + 1,
                offset + i * stride,
                summarise,
            ),
            None => out.push_str("..."),
        }
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_print_like_numpy() {
        let t = Tensor::new(DType::F32, vec![2, 3], vec![1.0, 2.5, 3.0, -4.0, 5.0, 6.0]).unwrap();
        assert_eq!(
            render("y", &t),
            "y: f32[2, 3]\n[[  1, 2.5,   3],\n [ -4,   5,   6]]\n"
        );
    }

    #[test]
    fn scalars_print_bare() {
        let t = Tensor::new(DType::F64, vec![], vec![0.5]).unwrap();
        assert_eq!(render("s", &t), "s: f64[]\n0.5\n");
    }
}
