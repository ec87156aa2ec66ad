//! Checking gradient graphs against central finite differences, in f64.
//!
//! The loss is `L = sum over seeded outputs y of sum(s_y * y)` with seeds `s_y`
//! uniform in [-1, 1) from [`FdOptions::seed`]. For each checked element `x_k` the
//! numeric derivative is `(L(x + h e_k) - L(x - h e_k)) / 2h`; it must match the
//! gradient graph (run by the graph interpreter) within
//! `abs + rel * max(|analytic|, |numeric|)`. An element whose perturbed runs
//! take another branch or another trip count than the unperturbed run (a branch
//! boundary within `h`) is skipped and counted: the derivative is not defined there.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;

use super::{GradError, GraphGradSpec, gradient};
use crate::interp::{RunOptions, Trace, run_with};
use crate::ir::{Graph, Op};
use crate::random::Rng;

/// Step, tolerances, seeds, sampling and the loop limit of a check: the
/// kernel compiler's options, one type for programs and graphs.
pub use uop_codegen::grad::fd::FdOptions;

/// What a passed check compared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FdReport {
    /// Elements compared.
    pub checked: usize,
    /// Elements skipped at a branch or trip-count boundary.
    pub skipped: usize,
    /// The largest `|analytic - numeric|`.
    pub max_error: f64,
}

/// The graph with every float value in f64 (constants converted).
pub fn to_f64(graph: &Graph) -> Graph {
    let mut g = graph.clone();
    g.dtype = DType::F64;
    for n in &mut g.nodes {
        for t in &mut n.outputs {
            if t.dtype.is_float() {
                t.dtype = DType::F64;
            }
        }
        match &mut n.op {
            Op::Const(t) if t.dtype.is_float() => t.dtype = DType::F64,
            Op::Kernel(k) => k.program = uop_codegen::grad::to_f64(&k.program),
            _ => {}
        }
    }
    g
}

/// Checks the gradient graph of `forward` for `spec` (its seeds, wanted inputs and
/// tape; `supplied` is ignored) at `inputs` against finite differences, both in f64.
pub fn check_gradient(
    forward: &Graph,
    spec: &GraphGradSpec,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    options: &FdOptions,
) -> Result<FdReport, GradError> {
    let f = to_f64(forward);
    let spec = GraphGradSpec {
        supplied: Vec::new(),
        ..spec.clone()
    };
    let inputs: Vec<Tensor> = inputs.iter().map(to_f64_tensor).collect();
    let run_options = RunOptions {
        max_iterations: Some(options.max_iterations),
    };
    let base = run_with(&f, &inputs, params, &run_options)?;
    let mut rng = Rng::new(options.seed);
    let seeds: Vec<Tensor> = spec
        .seeds
        .iter()
        .map(|&o| {
            let y = &base.outputs[o];
            let data = (0..y.len())
                .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
                .collect();
            Tensor::new(DType::F64, y.shape.clone(), data)
                .map_err(|e| GradError::Graph(e.to_string()))
        })
        .collect::<Result<_, _>>()?;
    let loss = |outputs: &[Tensor]| -> f64 {
        spec.seeds
            .iter()
            .zip(&seeds)
            .map(|(&o, s)| {
                outputs[o]
                    .data
                    .iter()
                    .zip(&s.data)
                    .map(|(y, s)| y * s)
                    .sum::<f64>()
            })
            .sum()
    };
    let grad = gradient(&f, &spec)?;
    let args = grad.arguments(&inputs, &seeds, &base.outputs)?;
    let p = grad.params(&base.trace, params);
    let analytic = crate::interp::run(&grad.graph, &args, &p)?;
    let mut report = FdReport::default();
    for (w, &k) in spec.wrt.iter().enumerate() {
        let n = inputs[k].len();
        let mut elements: Vec<usize> = (0..n).collect();
        if let Some(m) = options.sample {
            while elements.len() > m {
                let drop = rng.below(elements.len());
                elements.swap_remove(drop);
            }
        }
        for e in elements {
            let at = |d: f64| -> Result<(f64, Trace), GradError> {
                let mut x = inputs.clone();
                x[k].data[e] += d;
                let r = run_with(&f, &x, params, &run_options)?;
                Ok((loss(&r.outputs), r.trace))
            };
            let (plus, tp) = at(options.step)?;
            let (minus, tm) = at(-options.step)?;
            if !same_path(&tp, &base.trace) || !same_path(&tm, &base.trace) {
                report.skipped += 1;
                continue;
            }
            let numeric = (plus - minus) / (2.0 * options.step);
            let a = analytic[w].data[e];
            let err = (a - numeric).abs();
            let tol = options.abs + options.rel * a.abs().max(numeric.abs());
            if err.is_nan() || err > tol {
                return Err(GradError::Spec(format!(
                    "d/d {}[{e}]: the gradient graph gives {a}, finite differences {numeric} (error {err:e} > tolerance {tol:e})",
                    input_name(forward, k)
                )));
            }
            report.max_error = report.max_error.max(err);
            report.checked += 1;
        }
    }
    Ok(report)
}

/// The same branches and trip counts.
fn same_path(a: &Trace, b: &Trace) -> bool {
    a.trips == b.trips && a.branches == b.branches
}

fn input_name(g: &Graph, k: usize) -> String {
    g.input_node()
        .and_then(|n| n.name(k))
        .map_or_else(|| format!("#{k}"), str::to_string)
}

fn to_f64_tensor(t: &Tensor) -> Tensor {
    let mut t = t.clone();
    if t.dtype.is_float() {
        t.dtype = DType::F64;
    }
    t
}
