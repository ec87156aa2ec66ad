//! Binding a program to concrete sizes: input shapes and `$param` values become
//! [`Bindings`], checked against the program's declared dims and assertions, and
//! every node's shape is evaluated.

use std::collections::HashMap;

use crate::index::{Bindings, Expr, list};

use super::error::BindError;
use super::graph::Program;

impl Program {
    /// Binds named dims from the actual input shapes and checks everything the
    /// program requires of them: ranks, fixed sizes, shared names, params, `[=]` assertions.
    pub fn bind(
        &self,
        input_shapes: &[&[usize]],
        params: &HashMap<String, i64>,
    ) -> Result<Bindings, BindError> {
        if input_shapes.len() != self.inputs.len() {
            return Err(BindError::InputCount {
                expected: self.inputs.len(),
                found: input_shapes.len(),
            });
        }
        let mut b = Bindings::default();
        let mut bound_by: HashMap<&str, &str> = HashMap::new();
        for (id, shape) in self.inputs.iter().zip(input_shapes) {
            let node = self.node(*id);
            if node.shape.len() != shape.len() {
                return Err(BindError::Input {
                    input: node.name.clone(),
                    message: format!(
                        "expected rank {} (shape {}), got shape {:?}",
                        node.shape.len(),
                        list(&node.shape),
                        shape
                    ),
                });
            }
            for (dim, &size) in node.shape.iter().zip(shape.iter()) {
                let size = size as i64;
                match dim {
                    Expr::Int(v) if *v != size => {
                        return Err(BindError::Input {
                            input: node.name.clone(),
                            message: format!(
                                "expected shape {}, got {:?}",
                                list(&node.shape),
                                shape
                            ),
                        });
                    }
                    Expr::Name(n) => match b.names.get(n) {
                        Some(&prev) if prev != size => {
                            return Err(BindError::DimConflict {
                                name: n.clone(),
                                first_input: bound_by[n.as_str()].to_string(),
                                first: prev,
                                second_input: node.name.clone(),
                                second: size,
                            });
                        }
                        Some(_) => {}
                        None => {
                            b.names.insert(n.clone(), size);
                            bound_by.insert(n, &node.name);
                        }
                    },
                    _ => {}
                }
            }
        }
        for p in &self.params {
            let v = params
                .get(p)
                .ok_or_else(|| BindError::MissingParam(p.clone()))?;
            b.params.insert(p.clone(), *v);
        }
        for (l, r) in &self.assertions {
            let (lv, rv) = (l.eval(&b)?, r.eval(&b)?);
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

    /// The concrete shape of every node under `b` (an error if any size is negative).
    pub fn shapes(&self, b: &Bindings) -> Result<Vec<Vec<usize>>, BindError> {
        self.nodes
            .iter()
            .map(|node| {
                node.shape
                    .iter()
                    .map(|d| {
                        let v = d.eval(b).map_err(|e| BindError::Size {
                            node: node.name.clone(),
                            message: e.to_string(),
                        })?;
                        usize::try_from(v).map_err(|_| BindError::Size {
                            node: node.name.clone(),
                            message: format!("`{d}` is {v}, a negative size"),
                        })
                    })
                    .collect()
            })
            .collect()
    }
}
