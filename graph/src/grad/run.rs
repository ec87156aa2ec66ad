//! Calling a gradient graph: its arguments and tape capacities from a forward run.

use std::collections::HashMap;

use uop_codegen::sizes::element_count;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::concrete_shape;

use super::{GradError, GraphGradRole, GraphGradient};
use crate::interp::{RunOptions, Trace, bind_graph_inputs, run_with};
use crate::ir::Graph;

impl GraphGradient {
    /// The gradient graph's arguments, in order: the forward `inputs`, the `seeds`
    /// (in `spec.seeds` order) and the supplied forward values, taken from
    /// `outputs` (the forward graph's outputs).
    pub fn arguments(
        &self,
        inputs: &[Tensor],
        seeds: &[Tensor],
        outputs: &[Tensor],
    ) -> Result<Vec<Tensor>, GradError> {
        if seeds.len() != self.spec.seeds.len() {
            return Err(GradError::Spec(format!(
                "expected {} seeds, got {}",
                self.spec.seeds.len(),
                seeds.len()
            )));
        }
        let mut args = Vec::with_capacity(self.inputs.len());
        for i in &self.inputs {
            let (list, what) = match i.role {
                GraphGradRole::Input => (inputs, "forward inputs"),
                GraphGradRole::Seed => (seeds, "seeds"),
                GraphGradRole::Supplied => (outputs, "forward outputs"),
            };
            let at = match i.role {
                GraphGradRole::Seed => self.spec.seeds.iter().position(|&o| o == i.index),
                _ => Some(i.index),
            };
            let t = at.and_then(|k| list.get(k)).ok_or_else(|| {
                GradError::Spec(format!(
                    "{what}: {} given, item {} is missing",
                    list.len(),
                    i.index
                ))
            })?;
            args.push(t.clone());
        }
        Ok(args)
    }

    /// The `$params` of the gradient graph: `params` (the forward graph's) and each
    /// tape's rows, the most iterations its `while` ran in the forward run `trace`.
    pub fn params(&self, trace: &Trace, params: &HashMap<String, i64>) -> HashMap<String, i64> {
        let mut out = params.clone();
        for t in &self.tapes {
            let trips = trace
                .trips
                .get(&t.node)
                .and_then(|v| v.iter().max())
                .copied()
                .unwrap_or(0);
            out.insert(t.param.clone(), i64::try_from(trips).unwrap_or(i64::MAX));
        }
        out
    }

    /// The bytes the tapes hold for a run of `forward` on `inputs` that recorded
    /// `trace` (each tape once: a tape inside a loop body is rebuilt per
    /// iteration, not kept).
    pub fn tape_bytes(
        &self,
        forward: &Graph,
        inputs: &[Tensor],
        trace: &Trace,
        params: &HashMap<String, i64>,
    ) -> Result<u128, GradError> {
        let mut b = bind_graph_inputs(forward, inputs, params)?;
        b.params.extend(params.iter().map(|(k, v)| (k.clone(), *v)));
        let rows = self.params(trace, params);
        let size = forward.dtype.size() as u128;
        let mut total: u128 = 0;
        for t in &self.tapes {
            let r = rows.get(&t.param).copied().unwrap_or(0) as u128;
            for ty in &t.row {
                let shape = concrete_shape(&t.param, &ty.shape, &b)
                    .map_err(|e| GradError::Graph(e.to_string()))?;
                let n = element_count(&shape).unwrap_or(usize::MAX) as u128;
                total = total.saturating_add(r.saturating_mul(n).saturating_mul(size));
            }
        }
        Ok(total)
    }

    /// Runs the forward graph and then the gradient graph with the graph
    /// interpreter (the oracle); returns one gradient per entry of `spec.wrt`.
    pub fn run(
        &self,
        forward: &Graph,
        inputs: &[Tensor],
        seeds: &[Tensor],
        params: &HashMap<String, i64>,
    ) -> Result<Vec<Tensor>, GradError> {
        let fwd = run_with(forward, inputs, params, &RunOptions::default())?;
        let args = self.arguments(inputs, seeds, &fwd.outputs)?;
        let p = self.params(&fwd.trace, params);
        Ok(crate::interp::run(&self.graph, &args, &p)?)
    }
}
