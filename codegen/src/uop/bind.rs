//! Binding a program to concrete sizes: input shapes and `$param` values become
//! [`Bindings`], checked against the program's declared dims and assertions, and
//! every node's shape is evaluated.
//!
//! The checks are free functions over declarations ([`bind_inputs`], and
//! [`concrete_shape`] of [`crate::sizes`])
//! so the uop [`Program`] and the loop IR bind inputs by exactly the same rules.

use std::collections::HashMap;

use crate::index::{Bindings, Expr, IndexOp, list};
use crate::sizes::concrete_shape;

use super::error::BindError;
use super::graph::Program;

/// A declared input as binding sees it: its name and symbolic shape (each dim a
/// named dimension or a literal).
#[derive(Clone, Copy, Debug)]
pub struct InputDecl<'a> {
    /// Input name, for messages.
    pub name: &'a str,
    /// Declared shape.
    pub shape: &'a [Expr],
}

/// Binds named dims from the actual input shapes and checks everything a program
/// requires of them: ranks, fixed sizes, shared names, `declared_params` all given,
/// and the `[=]` `assertions`.
pub fn bind_inputs(
    inputs: &[InputDecl<'_>],
    declared_params: &[String],
    assertions: &[(Expr, Expr)],
    input_shapes: &[&[usize]],
    params: &HashMap<String, i64>,
) -> Result<Bindings, BindError> {
    if input_shapes.len() != inputs.len() {
        return Err(BindError::InputCount {
            expected: inputs.len(),
            found: input_shapes.len(),
        });
    }
    let mut b = Bindings::default();
    let mut bound_by: HashMap<&str, &str> = HashMap::new();
    for (decl, shape) in inputs.iter().zip(input_shapes) {
        if decl.shape.len() != shape.len() {
            return Err(BindError::Input {
                input: decl.name.to_string(),
                message: format!(
                    "expected rank {} (shape {}), got shape {:?}",
                    decl.shape.len(),
                    list(decl.shape),
                    shape
                ),
            });
        }
        for (dim, &size) in decl.shape.iter().zip(shape.iter()) {
            let size = i64::try_from(size).map_err(|_| BindError::Input {
                input: decl.name.to_string(),
                message: format!("size {size} in shape {shape:?} exceeds {}", i64::MAX),
            })?;
            match dim {
                Expr::Int(v) if *v != size => {
                    return Err(BindError::Input {
                        input: decl.name.to_string(),
                        message: format!("expected shape {}, got {:?}", list(decl.shape), shape),
                    });
                }
                Expr::Name(n) => match b.names.get(n) {
                    Some(&prev) if prev != size => {
                        return Err(BindError::DimConflict {
                            name: n.clone(),
                            first_input: bound_by[n.as_str()].to_string(),
                            first: prev,
                            second_input: decl.name.to_string(),
                            second: size,
                        });
                    }
                    Some(_) => {}
                    None => {
                        b.names.insert(n.clone(), size);
                        bound_by.insert(n, decl.name);
                    }
                },
                _ => {}
            }
        }
    }
    for p in declared_params {
        let v = params
            .get(p)
            .ok_or_else(|| BindError::MissingParam(p.clone()))?;
        b.params.insert(p.clone(), *v);
    }
    for (l, r) in assertions {
        let (lv, rv) = (l.eval(&b)?, r.eval(&b)?);
        if let (Expr::Bin(IndexOp::Min, size, one), Expr::Int(1)) = (l, r)
            && **one == Expr::Int(1)
            && lv != rv
        {
            // The lowering's check that argmax / argmin have a non-empty axis.
            return Err(BindError::EmptyAxis {
                size: size.to_string(),
                value: size.eval(&b)?,
            });
        }
        if lv != rv {
            return Err(BindError::Assertion {
                left: l.to_string(),
                right: r.to_string(),
                left_value: lv,
                right_value: rv,
            });
        }
    }
    Ok(b)
}

impl Program {
    /// Binds named dims from the actual input shapes and checks everything the
    /// program requires of them: ranks, fixed sizes, shared names, params, `[=]` assertions.
    pub fn bind(
        &self,
        input_shapes: &[&[usize]],
        params: &HashMap<String, i64>,
    ) -> Result<Bindings, BindError> {
        let decls: Vec<InputDecl> = self
            .inputs
            .iter()
            .map(|id| {
                let node = self.node(*id);
                InputDecl {
                    name: &node.name,
                    shape: &node.shape,
                }
            })
            .collect();
        bind_inputs(&decls, &self.params, &self.assertions, input_shapes, params)
    }

    /// The concrete shape of every node under `b` (an error if any size is negative).
    pub fn shapes(&self, b: &Bindings) -> Result<Vec<Vec<usize>>, BindError> {
        self.nodes
            .iter()
            .map(|node| concrete_shape(&node.name, &node.shape, b))
            .collect()
    }
}
