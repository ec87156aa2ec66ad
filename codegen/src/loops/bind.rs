//! Binding a loop program to concrete sizes, by the same rules as a uop
//! [`Program`](crate::uop::Program) (see [`bind_inputs`]).

use std::collections::HashMap;

use crate::index::Bindings;
use crate::uop::{BindError, InputDecl, bind_inputs, concrete_shape};

use super::ir::LoopProgram;

impl LoopProgram {
    /// Binds named dims from the actual input shapes (in call order) and checks ranks,
    /// fixed sizes, shared names, params and `[=]` assertions.
    pub fn bind(
        &self,
        input_shapes: &[&[usize]],
        params: &HashMap<String, i64>,
    ) -> Result<Bindings, BindError> {
        let decls: Vec<InputDecl> = self
            .inputs
            .iter()
            .map(|t| {
                let decl = &self.tensors[t.0];
                InputDecl {
                    name: &decl.name,
                    shape: &decl.shape,
                }
            })
            .collect();
        bind_inputs(&decls, &self.params, &self.assertions, input_shapes, params)
    }

    /// The concrete shape of every tensor under `b` (an error if any size is negative).
    pub fn shapes(&self, b: &Bindings) -> Result<Vec<Vec<usize>>, BindError> {
        self.tensors
            .iter()
            .map(|t| concrete_shape(&t.name, &t.shape, b))
            .collect()
    }
}
