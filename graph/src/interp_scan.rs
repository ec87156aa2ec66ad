//! The graph interpreter's `scan` ([`Op::Scan`](crate::Op::Scan), rules in
//! [`crate::scan`]): the body runs `count` times in order, on the state and one slice
//! of each scanned input; its state results replace the state, its other results are
//! written into the stacked outputs at the iteration's position.

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{DType, concrete_shape};

use super::{GraphRunError, Machine, node_error};
use crate::hierarchy::Entry;
use crate::ir::{Node, Op};
use crate::scan::{put_row, slice};

impl Machine<'_> {
    /// Runs the `scan` `node` (placed as `e`) on its `inputs`.
    pub(super) fn scan(
        &mut self,
        node: &Node,
        e: &Entry,
        inputs: Vec<Tensor>,
    ) -> Result<Vec<Tensor>, GraphRunError> {
        let Op::Scan {
            count,
            carried,
            scanned,
            stacked,
            ..
        } = &node.op
        else {
            return Err(node_error(node.id, "not a scan"));
        };
        let err = |m: String| node_error(node.id, m);
        let mut b = self.bindings.clone();
        b.params
            .extend(self.params.iter().map(|(k, v)| (k.clone(), *v)));
        let n = eval_count(count, &b).map_err(err)?;
        let body = e
            .subs
            .first()
            .ok_or_else(|| node_error(node.id, "a scan needs a body"))?;
        let (init, xs) = inputs.split_at((*carried).min(inputs.len()));
        for (k, (x, a)) in xs.iter().zip(scanned).enumerate() {
            if x.shape.get(a.axis) != Some(&n) {
                return Err(err(format!(
                    "scanned input {k} of shape {:?} does not have {n} positions on axis {}",
                    x.shape, a.axis
                )));
            }
        }
        let mut outs = Vec::new();
        for (k, ty) in node.outputs.iter().enumerate().skip(*carried) {
            let shape = concrete_shape(&node.id.to_string(), &ty.shape, &b)
                .map_err(|e| err(format!("stacked output {}: {e}", k - carried)))?;
            outs.push(
                Tensor::try_filled(&node.id.to_string(), ty.dtype, shape, 0.0)
                    .map_err(|e| err(e.to_string()))?,
            );
        }
        let mut state = init.to_vec();
        for t in 0..n {
            let mut args = vec![Tensor::filled(DType::I32, Vec::new(), t as f64)];
            args.append(&mut state);
            for (x, a) in xs.iter().zip(scanned) {
                args.push(slice(x, a.axis, a.position(t, n)).map_err(err)?);
            }
            let mut results = self.sub_function(node, body, args)?;
            if results.len() != carried + stacked.len() {
                return Err(err(format!(
                    "the body gave {} values for {carried} states and {} stacked outputs",
                    results.len(),
                    stacked.len()
                )));
            }
            let ys = results.split_off(*carried);
            for (k, (old, new)) in init.iter().zip(&results).enumerate() {
                if old.dtype != new.dtype || old.shape != new.shape {
                    return Err(err(format!(
                        "the body turned state {k} from {}{:?} into {}{:?}",
                        old.dtype.name(),
                        old.shape,
                        new.dtype.name(),
                        new.shape
                    )));
                }
            }
            state = results;
            for (k, ((y, a), out)) in ys.iter().zip(stacked).zip(&mut outs).enumerate() {
                put_row(out, a.axis, a.position(t, n), y)
                    .map_err(|m| err(format!("stacked output {k}, iteration {t}: {m}")))?;
            }
        }
        self.trace.trips.entry(node.id).or_default().push(n as u64);
        state.extend(outs);
        Ok(state)
    }
}

/// The iteration count `count` under `b`, checked to be a size.
pub(crate) fn eval_count(count: &Expr, b: &uop_codegen::index::Bindings) -> Result<usize, String> {
    let n = count
        .eval(b)
        .map_err(|e| format!("the count `{count}`: {e}"))?;
    usize::try_from(n).map_err(|_| format!("the count `{count}` is {n}, below 0"))
}
