//! Names for what a macro op computes. A node a macro op makes gets a name hint
//! ([`Builder::name_hint`]): `max`, `shifted`, `exps`, `sum` in a softmax, so printed
//! programs and generated kernels read as written by hand instead of naming
//! temporaries `t1`, `t4`. Hints are suggestions: the program keeps every name
//! unique (`sum_1`), and a name the `.uop` text reserves gets a suffix too.

use uop_codegen::uop::{Builder, NodeId};

use crate::error::{Context, OpError};

/// Suggests `hint` as the name of `id` (made by `op`) and returns `id`.
pub(crate) fn named(
    b: &mut Builder,
    op: &'static str,
    id: NodeId,
    hint: &str,
) -> Result<NodeId, OpError> {
    b.name_hint(id, hint).op(op)?;
    Ok(id)
}
