//! Printing a [`Program`] as `.uop` text that parses back to the same program.

use std::fmt::Write;

use crate::index::list;
use crate::uop::{Accum, DType, Node, NodeId, Operand, Program, Uop};

/// Prints `program` as `.uop` text: one line per param, input, node (operands by
/// name, no nesting), assertion, then the outputs.
///
/// `parse_program(&print_program(&p), &Registry::new())` gives `p` back exactly
/// (constants bit for bit, NaN payloads aside) for programs whose names the text
/// format accepts: identifiers, unique, not reserved words, micro-op names or
/// dimension names, every named dimension declared by one of the program's inputs.
/// Programs built by [`super::parse_program`] always qualify.
///
/// ```
/// use uop_codegen::text::{Registry, parse_program, print_program};
/// let src = "input x: f32[N]\ny = mul(exp(x), -0.5)\noutput y\n";
/// let program = parse_program(src, &Registry::new())?;
/// assert_eq!(
///     print_program(&program),
///     "input x: f32[N]\nt1 = exp(x)\ny = mul(t1, -0.5)\noutput y\n"
/// );
/// # Ok::<(), uop_codegen::text::TextError>(())
/// ```
pub fn print_program(program: &Program) -> String {
    let mut out = String::new();
    // The float type is implied by float inputs; without any, say it when it is not the default.
    let has_float_input = program
        .inputs
        .iter()
        .any(|i| program.node(*i).dtype.is_float());
    if !has_float_input && program.dtype != DType::F32 {
        line(&mut out, format_args!("dtype {}", program.dtype));
    }
    for p in &program.params {
        line(&mut out, format_args!("param {p}"));
    }
    for id in &program.inputs {
        let node = program.node(*id);
        line(
            &mut out,
            format_args!("input {}: {}{}", node.name, node.dtype, list(&node.shape)),
        );
    }
    for node in &program.nodes {
        if node.op == Uop::Input {
            continue;
        }
        line(
            &mut out,
            format_args!("{} = {}", node.name, call(program, node)),
        );
    }
    for (a, b) in &program.assertions {
        line(&mut out, format_args!("assert {a} == {b}"));
    }
    if !program.outputs.is_empty() {
        let names: Vec<&str> = program
            .outputs
            .iter()
            .map(|o| program.node(*o).name.as_str())
            .collect();
        line(&mut out, format_args!("output {}", names.join(", ")));
    }
    out
}

fn line(out: &mut String, args: std::fmt::Arguments<'_>) {
    // Writing to a String cannot fail.
    let _ = out.write_fmt(args);
    out.push('\n');
}

/// The call that builds `node`, operands by name.
fn call(program: &Program, node: &Node) -> String {
    let name = |id: &NodeId| program.node(*id).name.clone();
    let operand = |o: &Operand| match o {
        Operand::Node(id) => name(id),
        Operand::Const(v) => scalar(*v),
        Operand::Param(p) => format!("${p}"),
    };
    let shape = list(&node.shape);
    match &node.op {
        Uop::Input => "input".into(),
        Uop::Reindex { x, index, fill } => {
            let mut s = format!("reindex({}, {shape}, {}", name(x), list(index));
            // Any fill but +0.0 (including -0.0) is written out.
            if fill.to_bits() != 0f64.to_bits() {
                let _ = write!(s, ", fill={}", scalar(*fill));
            }
            s + ")"
        }
        Uop::ReindexReduce { x, index, op } => {
            let mut s = format!("reindex_reduce({}, {shape}, {}", name(x), list(index));
            if *op != Accum::Add {
                let _ = write!(s, ", op=\"{op}\"");
            }
            s + ")"
        }
        Uop::Unary { op, x } => format!("{op}({})", name(x)),
        Uop::Binary { op, a, b } => format!("{op}({}, {})", operand(a), operand(b)),
        Uop::Where { c, a, b } => format!("where({}, {}, {})", operand(c), operand(a), operand(b)),
        Uop::Reduce { axes, x, .. } => {
            let axes: Vec<String> = axes.iter().map(usize::to_string).collect();
            format!("{}({}, [{}])", node.op.kind(), name(x), axes.join(", "))
        }
        Uop::Select { axis, x, index } => {
            format!("select({}, {}, axis={axis})", name(x), name(index))
        }
        Uop::Iota { axis } => format!("iota({shape}, {axis})"),
        Uop::Cast { x } => format!("cast({}, \"{}\")", name(x), node.dtype.cast_target()),
    }
}

/// A scalar literal that parses back to the same `f64` (Rust's shortest round-trip form).
pub(crate) fn scalar(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v == f64::INFINITY {
        "inf".into()
    } else if v == f64::NEG_INFINITY {
        "-inf".into()
    } else {
        format!("{v:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_print_in_shortest_round_trip_form() {
        for v in [
            0.0,
            -0.0,
            1.0,
            2.5,
            1e-5,
            1e300,
            5e-324,
            f64::MAX,
            0.1 + 0.2,
        ] {
            let text = scalar(v);
            assert_eq!(
                text.parse::<f64>().map(f64::to_bits),
                Ok(v.to_bits()),
                "{text}"
            );
        }
        assert_eq!(scalar(-0.0), "-0.0");
        assert_eq!(scalar(1e-5), "1e-5");
        assert_eq!(scalar(f64::NEG_INFINITY), "-inf");
        assert_eq!(scalar(f64::NAN), "nan");
    }
}
