//! The program of a call left unfused (one op, DESIGN.md §21): a call binding a
//! `parallel` index (`$i`) becomes a one-op kernel typed with the graph's symbolic
//! dims ([`call_program_in`]).
//!
//! A dim the call's lists name that none of its inputs carries (`reindex_reduce(t,
//! [R, N], [$i, i0])` where the input is `[N]`) cannot be a dim of the kernel: a
//! kernel binds its dims from its inputs' shapes. It becomes a `$param` of the
//! kernel instead (`$dim_R`), which the graph function passes from its sizes
//! (`sz.dim_r_param`, bound from the graph's inputs at entry). The kernel backend
//! is unchanged: a size that is a `$param` is what it already supports.

use std::collections::HashSet;

use uop_codegen::index::Expr;
use uop_codegen::text::MacroError;
use uop_codegen::uop::Program;

use crate::infer::{call_program_in, graph_dims, list_names};
use crate::ir::{Call, Graph, ValueType};

/// A call's one-op program and the `$params` standing for dims: `(param, dim)`.
pub(super) struct OneOp {
    /// The program.
    pub program: Program,
    /// Each `$param` of the program that is a graph dim, and that dim.
    pub dim_params: Vec<(String, String)>,
}

/// The one-op program of `call` in `graph` on inputs of `types`.
pub(super) fn one_op_program(
    graph: &Graph,
    call: &Call,
    types: &[ValueType],
) -> Result<OneOp, MacroError> {
    let mut carried: HashSet<&str> = HashSet::new();
    for t in types {
        for d in &t.shape {
            if let Expr::Name(n) = d {
                carried.insert(n);
            }
        }
    }
    let named = list_names(call);
    let mut taken: HashSet<String> = graph
        .params
        .iter()
        .chain(call.bind.iter().map(|(n, _)| n))
        .cloned()
        .collect();
    let mut params = graph.params.clone();
    let mut dim_params = Vec::new();
    let mut dims = graph_dims(graph);
    for (n, e) in &mut dims {
        if carried.contains(n.as_str()) || !named.contains(n) {
            continue;
        }
        let mut p = format!("dim_{n}");
        let mut k = 2;
        while taken.contains(&p) {
            p = format!("dim_{n}_{k}");
            k += 1;
        }
        taken.insert(p.clone());
        params.push(p.clone());
        dim_params.push((p.clone(), n.clone()));
        *e = Expr::Param(p);
    }
    let (program, _) = call_program_in(graph.dtype, &params, &graph.registry, call, types, &dims)?;
    Ok(OneOp {
        program,
        dim_params,
    })
}
