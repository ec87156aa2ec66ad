//! The round-trip property of the text format, as a reusable check: random
//! program generators and hand-written tests both call [`check_round_trip`].

use crate::uop::Program;

use super::build::parse_program;
use super::print::print_program;
use super::registry::Registry;

/// Prints `program`, parses the text back and compares the result with `program`.
///
/// Equality is exact: names, node order, shapes, params, assertions, and every
/// constant bit for bit (so `-0.0` differs from `0.0`), except that any NaN equals
/// any NaN. The error describes the first difference and shows the printed text.
///
/// ```
/// use uop_codegen::text::check_round_trip;
/// use uop_codegen::uop::{Builder, DType, UnaryOp};
/// let mut b = Builder::new(DType::F64);
/// let x = b.input("x", DType::F64, &["N"])?;
/// let y = b.unary(UnaryOp::Exp, x)?;
/// check_round_trip(&b.combine(&[x], &[y])?)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_round_trip(program: &Program) -> Result<(), String> {
    let text = print_program(program);
    let parsed = parse_program(&text, &Registry::new()).map_err(|e| {
        format!("the printed program does not parse:\n{e}\n--- printed ---\n{text}")
    })?;
    // `Debug` shows every float in its shortest round-trip form (`-0.0`, `NaN`), so
    // equal Debug text is bit equality up to NaN payloads.
    if format!("{parsed:?}") == format!("{program:?}") {
        return Ok(());
    }
    Err(format!(
        "{}\n--- printed ---\n{text}--- printed again ---\n{}",
        first_difference(program, &parsed),
        print_program(&parsed)
    ))
}

/// Names the first field of two programs whose Debug forms differ.
fn first_difference(want: &Program, got: &Program) -> String {
    let fields: [(&str, String, String); 5] = [
        (
            "dtype",
            format!("{:?}", want.dtype),
            format!("{:?}", got.dtype),
        ),
        (
            "params",
            format!("{:?}", want.params),
            format!("{:?}", got.params),
        ),
        (
            "inputs",
            format!("{:?}", want.inputs),
            format!("{:?}", got.inputs),
        ),
        (
            "outputs",
            format!("{:?}", want.outputs),
            format!("{:?}", got.outputs),
        ),
        (
            "assertions",
            format!("{:?}", want.assertions),
            format!("{:?}", got.assertions),
        ),
    ];
    for (field, a, b) in fields {
        if a != b {
            return format!("{field} differ: {a} vs {b} after the round trip");
        }
    }
    for (k, (a, b)) in want.nodes.iter().zip(&got.nodes).enumerate() {
        let (a, b) = (format!("{a:?}"), format!("{b:?}"));
        if a != b {
            return format!("node {k} differs:\n  {a}\nafter the round trip:\n  {b}");
        }
    }
    format!(
        "the program has {} nodes, {} after the round trip",
        want.nodes.len(),
        got.nodes.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Expr;
    use crate::uop::{Builder, DType, UnaryOp};

    fn program() -> Program {
        let mut b = Builder::new(DType::F32);
        let x = b.input("x", DType::F32, &["N"]).expect("valid input");
        let y = b.unary(UnaryOp::Exp, x).expect("valid op");
        b.combine(&[x], &[y]).expect("valid program")
    }

    #[test]
    fn a_program_from_the_builder_round_trips() {
        assert_eq!(check_round_trip(&program()), Ok(()));
    }

    #[test]
    fn a_name_the_text_cannot_hold_is_reported_with_the_printed_text() {
        let mut p = program();
        p.nodes[1].name = "exp".into();
        let e = check_round_trip(&p).unwrap_err();
        assert!(e.starts_with("the printed program does not parse"), "{e}");
        assert!(e.contains("exp = exp(x)"), "{e}");
    }

    #[test]
    fn the_first_difference_is_named() {
        // An assertion the builder would have simplified comes back simplified.
        let mut p = program();
        p.assertions
            .push((Expr::name("N") + Expr::Int(0), Expr::Int(3)));
        let e = check_round_trip(&p).unwrap_err();
        assert!(e.starts_with("assertions differ"), "{e}");
        assert!(e.contains("assert N + 0 == 3"), "{e}");
    }
}
