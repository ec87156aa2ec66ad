//! Bytes of a value for concrete dims, with checked arithmetic.

use uop_codegen::index::{Bindings, Expr};

use crate::ir::ValueType;

/// The arena's alignment: every offset is a multiple of it. The runtime's, so that
/// the plan and the arena that generated code places at run time agree.
pub use uop_runtime::graph::ALIGN;

/// Why a size could not be computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SizeError {
    /// A dim or `$param` the shape names has no value (the name, `$p` for params).
    Missing(String),
    /// Anything else (overflow, a negative size, an index in a shape), in words.
    Other(String),
}

/// The names of `e` that `env` does not bind, in order of appearance.
pub(crate) fn missing(e: &Expr, env: &Bindings) -> Option<String> {
    let mut found = None;
    e.visit(&mut |leaf| {
        if found.is_some() {
            return;
        }
        match leaf {
            Expr::Name(n) if !env.names.contains_key(n) => found = Some(n.clone()),
            Expr::Param(p) if !env.params.contains_key(p) => found = Some(format!("${p}")),
            _ => {}
        }
    });
    found
}

/// The bytes of a value of type `ty` (not rounded).
pub(crate) fn bytes(ty: &ValueType, env: &Bindings) -> Result<usize, SizeError> {
    let mut total = ty.dtype.size();
    for d in &ty.shape {
        if let Some(name) = missing(d, env) {
            return Err(SizeError::Missing(name));
        }
        let v = d
            .eval(env)
            .map_err(|e| SizeError::Other(format!("the size `{d}`: {e}")))?;
        let v = usize::try_from(v)
            .map_err(|_| SizeError::Other(format!("the size `{d}` is {v}, below 0")))?;
        total = total
            .checked_mul(v)
            .ok_or_else(|| SizeError::Other(format!("{ty} has more bytes than fit in memory")))?;
    }
    Ok(total)
}

/// `bytes` rounded up to the alignment; `None` on overflow.
pub(crate) fn aligned(bytes: usize) -> Option<usize> {
    bytes.checked_next_multiple_of(ALIGN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use uop_codegen::uop::DType;

    fn env(pairs: &[(&str, i64)]) -> Bindings {
        let names: HashMap<String, i64> = pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Bindings {
            params: names.clone(),
            names,
            ..Bindings::default()
        }
    }

    #[test]
    fn sizes_are_products_of_the_dims_times_the_element_size() {
        let ty = ValueType::new(DType::F32, vec![Expr::name("B"), Expr::Int(3)]);
        assert_eq!(bytes(&ty, &env(&[("B", 5)])), Ok(60));
        let f64s = ValueType::new(DType::F64, vec![Expr::param("n")]);
        assert_eq!(bytes(&f64s, &env(&[("n", 2)])), Ok(16));
        assert_eq!(bytes(&ValueType::scalar(DType::I32), &env(&[])), Ok(4));
        assert_eq!(aligned(60), Some(64));
        assert_eq!(aligned(0), Some(0));
        assert_eq!(aligned(128), Some(128));
    }

    #[test]
    fn a_missing_dim_is_named_and_overflow_is_an_error() {
        let ty = ValueType::new(DType::F32, vec![Expr::name("B"), Expr::param("p")]);
        assert_eq!(
            bytes(&ty, &env(&[("B", 2)])),
            Err(SizeError::Missing("$p".into()))
        );
        assert_eq!(
            bytes(&ty, &env(&[("p", 2)])),
            Err(SizeError::Missing("B".into()))
        );
        let huge = env(&[("B", i64::MAX), ("p", i64::MAX)]);
        assert!(matches!(bytes(&ty, &huge), Err(SizeError::Other(_))));
        let negative = env(&[("B", -1), ("p", 1)]);
        assert!(matches!(bytes(&ty, &negative), Err(SizeError::Other(m)) if m.contains("below 0")));
        assert_eq!(aligned(usize::MAX), None);
    }
}
