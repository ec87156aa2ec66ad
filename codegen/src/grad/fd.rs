//! Checking gradient programs against central finite differences, in f64.
//!
//! The loss is `L = sum over float outputs y of sum(s_y * y)` with seeded random
//! seeds `s_y` uniform in [-1, 1) (0, and the term left out, where `y` is not
//! finite: a scatter target nothing reached holds -inf). For every element `x_k` of
//! every checked input the numeric derivative is `(L(x + h e_k) - L(x - h e_k)) / 2h`
//! with `h = step`
//! (default `1e-6`), for every element or a seeded sample of them
//! ([`FdOptions::sample`]); it must match the gradient program within
//! `atol + rtol * max(|analytic|, |numeric|)` (defaults `1e-6` and `1e-5`).
//!
//! Central differences have error `O(h^2 f''')` plus rounding `O(eps |L| / h)`, about
//! `1e-10 |L|` in f64 at the default step, well inside the tolerance as long as the
//! point is further than `h` from any kink: callers choose data accordingly (`|x|`
//! away from 0 for `abs` / `sign`, distinct values for max / min, positive inputs for
//! `log`, `sqrt` and the base of `pow`).

use std::collections::HashMap;

use rand::{Rng, SeedableRng, rngs::StdRng};
use thiserror::Error;

use crate::interp::{self, RunError};
use crate::tensor::Tensor;
use crate::uop::{DType, NodeId, Program};

use super::build::{GradError, GradRole, GradSpec, Gradient, gradient, to_f64};

/// Step, tolerances and the seed of the random output seeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FdOptions {
    /// Finite-difference step `h`.
    pub step: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
    /// Seeds the random output seeds `s_y` (and the sampled elements).
    pub seed: u64,
    /// At most this many elements of each checked input are perturbed, drawn at
    /// random (seeded by `seed`) without repetition; `None` checks every element.
    /// Each element costs two runs of the forward program, so large inputs are
    /// sampled to keep a check's time bounded.
    pub sample: Option<usize>,
}

impl Default for FdOptions {
    fn default() -> Self {
        FdOptions {
            step: 1e-6,
            atol: 1e-6,
            rtol: 1e-5,
            seed: 0,
            sample: None,
        }
    }
}

/// A passed check.
#[derive(Clone, Debug, PartialEq)]
pub struct FdReport {
    /// Number of input elements compared.
    pub checked: usize,
    /// Largest `|analytic - numeric|` seen.
    pub max_error: f64,
    /// The gradient program that was checked (in f64).
    pub gradient: Gradient,
}

/// A failed check.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum FdError {
    /// The gradient program could not be built or run.
    #[error(transparent)]
    Grad(#[from] GradError),
    /// The forward program could not run.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The gradient disagrees with finite differences.
    #[error(
        "d loss / d {input}[{index}]: gradient program gives {analytic}, finite differences {numeric}"
    )]
    Mismatch {
        /// The input.
        input: String,
        /// Row-major position of the element.
        index: usize,
        /// What the gradient program computed.
        analytic: f64,
        /// The central difference.
        numeric: f64,
    },
}

/// Checks the gradient of `forward` with respect to the inputs `wrt` at the point
/// `inputs` (float inputs are converted to f64, as is the program). `supplied` is
/// passed on to [`GradSpec::supplied`], so that path is checked too.
pub fn check_gradient(
    forward: &Program,
    wrt: &[NodeId],
    supplied: &[NodeId],
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    options: &FdOptions,
) -> Result<FdReport, FdError> {
    let forward = to_f64(forward);
    let inputs: Vec<Tensor> = inputs.iter().map(as_f64).collect();
    let outputs = interp::run(&forward, &inputs, params)?;
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut seed_ids = Vec::new();
    let mut seeds = Vec::new();
    for (o, value) in forward.outputs.iter().zip(&outputs) {
        if value.dtype.is_float() && !seed_ids.contains(o) {
            seed_ids.push(*o);
            let data = value.data.iter().map(|v| seed_for(&mut rng, *v)).collect();
            seeds.push(Tensor {
                dtype: DType::F64,
                shape: value.shape.clone(),
                data,
            });
        }
    }
    let spec = GradSpec {
        seeds: seed_ids.clone(),
        wrt: wrt.to_vec(),
        supplied: supplied.to_vec(),
    };
    let grad = gradient(&forward, &spec)?;
    let analytic = grad.run(&forward, &inputs, &seeds, params)?;
    let loss = |point: &[Tensor]| -> Result<f64, RunError> {
        let outs = interp::run(&forward, point, params)?;
        let mut total = 0.0;
        for (id, s) in seed_ids.iter().zip(&seeds) {
            let k = forward.outputs.iter().position(|o| o == id).unwrap_or(0);
            total += outs[k]
                .data
                .iter()
                .zip(&s.data)
                .filter(|(_, s)| **s != 0.0)
                .map(|(y, s)| y * s)
                .sum::<f64>();
        }
        Ok(total)
    };
    let h = options.step;
    let mut checked = 0;
    let mut max_error = 0.0f64;
    for (w, g) in wrt.iter().zip(&analytic) {
        let slot = forward.inputs.iter().position(|i| i == w).unwrap_or(0);
        for e in elements(inputs[slot].len(), options.sample, &mut rng) {
            let mut point = inputs.clone();
            point[slot].data[e] += h;
            let up = loss(&point)?;
            point[slot].data[e] -= 2.0 * h;
            let down = loss(&point)?;
            let numeric = (up - down) / (2.0 * h);
            let a = g.data[e];
            let error = (a - numeric).abs();
            let allowed = options.atol + options.rtol * a.abs().max(numeric.abs());
            // A NaN on either side is a mismatch too.
            if error.is_nan() || error > allowed {
                return Err(FdError::Mismatch {
                    input: forward.node(*w).name.clone(),
                    index: e,
                    analytic: a,
                    numeric,
                });
            }
            max_error = max_error.max(error);
            checked += 1;
        }
    }
    Ok(FdReport {
        checked,
        max_error,
        gradient: grad,
    })
}

/// Checks the gradient of a gradient: builds the gradient of `forward` with respect
/// to `wrt` (seeds for all float outputs, drawn like [`check_gradient`]'s), then checks
/// that program with respect to every float input whose data it reads (forward inputs
/// and seeds) at the same point.
pub fn check_second_order(
    forward: &Program,
    wrt: &[NodeId],
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    options: &FdOptions,
) -> Result<FdReport, FdError> {
    let first = check_gradient(forward, wrt, &[], inputs, params, options)?;
    let grad = &first.gradient;
    let forward = to_f64(forward);
    let inputs: Vec<Tensor> = inputs.iter().map(as_f64).collect();
    let outputs = interp::run(&forward, &inputs, params)?;
    let mut rng = StdRng::seed_from_u64(options.seed ^ 0x5eed);
    let seeds: Vec<Tensor> = grad
        .spec
        .seeds
        .iter()
        .map(|o| {
            let k = forward.outputs.iter().position(|x| x == o).unwrap_or(0);
            let shape = outputs[k].shape.clone();
            let data = outputs[k]
                .data
                .iter()
                .map(|v| seed_for(&mut rng, *v))
                .collect();
            Tensor {
                dtype: DType::F64,
                shape,
                data,
            }
        })
        .collect();
    let args = grad.arguments(&forward, &inputs, &seeds, params)?;
    let wrt2: Vec<NodeId> = grad
        .program
        .inputs
        .iter()
        .zip(&grad.inputs)
        .filter(|(id, role)| {
            role.reads_data
                && role.role != GradRole::Supplied
                && grad.program.node(**id).dtype.is_float()
        })
        .map(|(id, _)| *id)
        .collect();
    let options = FdOptions {
        seed: options.seed.wrapping_add(1),
        ..*options
    };
    check_gradient(&grad.program, &wrt2, &[], &args, params, &options)
}

/// The positions of an input with `len` elements to perturb: all, or `sample` of
/// them drawn without repetition, in ascending order.
fn elements(len: usize, sample: Option<usize>, rng: &mut StdRng) -> Vec<usize> {
    match sample {
        Some(n) if n < len => {
            let mut picked = rand::seq::index::sample(rng, len, n).into_vec();
            picked.sort_unstable();
            picked
        }
        _ => (0..len).collect(),
    }
}

/// A random seed for an output element; 0 for a non-finite element (a scatter
/// target nothing reached holds -inf), which would make the loss itself non-finite.
fn seed_for(rng: &mut StdRng, value: f64) -> f64 {
    let s = rng.random_range(-1.0..1.0);
    if value.is_finite() { s } else { 0.0 }
}

fn as_f64(t: &Tensor) -> Tensor {
    let mut t = t.clone();
    if t.dtype.is_float() {
        t.dtype = DType::F64;
    }
    t
}
