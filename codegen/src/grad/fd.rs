//! Checking gradient programs against central finite differences, in f64.
//!
//! The loss is `L = sum over float outputs y of sum(s_y * y)` with seeded random
//! seeds `s_y` uniform in [-1, 1) (0, and the term left out, where `y` is not
//! finite: a scatter target nothing reached holds -inf). For every element `x_k` of
//! every checked input the numeric derivative is `(L(x + h e_k) - L(x - h e_k)) / 2h`
//! with `h = step`
//! (default `1e-6`), for every element or a seeded sample of them
//! ([`FdOptions::sample`]); it must match the gradient program within
//! `abs + rel * max(|analytic|, |numeric|)` (defaults `1e-6` and `1e-5`).
//!
//! Central differences have error `O(h^2 f''')` plus rounding `O(eps |L| / h)`, about
//! `1e-10 |L|` in f64 at the default step, well inside the tolerance as long as the
//! point is further than `h` from any kink: callers choose data accordingly (`|x|`
//! away from 0 for `abs` / `sign`, distinct values for max / min, positive inputs for
//! `log`, `sqrt` and the base of `pow`).

use std::collections::HashMap;
use std::ops::ControlFlow;

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
    /// Absolute tolerance (the same meaning as `Tolerance::abs` of the oracle).
    pub abs: f64,
    /// Relative tolerance (as `Tolerance::rel`).
    pub rel: f64,
    /// Seeds the random output seeds `s_y` (and the sampled elements).
    pub seed: u64,
    /// At most this many elements of each checked input are perturbed, drawn at
    /// random (seeded by `seed`) without repetition; `None` checks every element.
    /// Each element costs two runs of the forward program, so large inputs are
    /// sampled to keep a check's time bounded.
    pub sample: Option<usize>,
    /// The most trips any `while` of a graph may run during a check (so that
    /// nothing hangs). Programs have no loops; only graph checks read it.
    pub max_iterations: u64,
}

impl Default for FdOptions {
    fn default() -> Self {
        FdOptions {
            step: 1e-6,
            abs: 1e-6,
            rel: 1e-5,
            seed: 0,
            sample: None,
            max_iterations: 10_000,
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
    let mut checked = 0;
    let mut max_error = 0.0f64;
    let mut mismatch = None;
    let gradient = walk(forward, wrt, supplied, inputs, params, options, |e| {
        // A NaN on either side is a mismatch too.
        if e.error.is_nan() || e.error > e.allowed {
            mismatch = Some(FdError::Mismatch {
                input: e.input.to_string(),
                index: e.index,
                analytic: e.analytic,
                numeric: e.numeric,
            });
            return ControlFlow::Break(());
        }
        max_error = max_error.max(e.error);
        checked += 1;
        ControlFlow::Continue(())
    })?;
    match mismatch {
        Some(error) => Err(error),
        None => Ok(FdReport {
            checked,
            max_error,
            gradient,
        }),
    }
}

/// One input's comparison of [`compare_gradient`].
#[derive(Clone, Debug, PartialEq)]
pub struct InputComparison {
    /// The input's name.
    pub input: String,
    /// Elements compared.
    pub checked: usize,
    /// The element whose error is worst relative to what the tolerance allows
    /// (a NaN on either side is worst of all); `None` for an input without elements.
    pub worst: Option<ElementComparison>,
}

impl InputComparison {
    /// True when every element is within the tolerance.
    pub fn passed(&self) -> bool {
        self.worst.as_ref().is_none_or(ElementComparison::passed)
    }
}

/// The gradient program and finite differences at one element of an input.
#[derive(Clone, Debug, PartialEq)]
pub struct ElementComparison {
    /// Row-major position of the element.
    pub index: usize,
    /// What the gradient program computed.
    pub analytic: f64,
    /// The central difference.
    pub numeric: f64,
    /// `|analytic - numeric|`.
    pub error: f64,
    /// What the tolerance allows here: `abs + rel * max(|analytic|, |numeric|)`.
    pub allowed: f64,
}

impl ElementComparison {
    /// True when the error is within the tolerance (and not NaN).
    pub fn passed(&self) -> bool {
        self.error <= self.allowed
    }

    /// How bad the element is: error over allowance, infinite for a NaN.
    fn badness(&self) -> f64 {
        if self.error.is_nan() {
            f64::INFINITY
        } else {
            self.error / self.allowed.max(f64::MIN_POSITIVE)
        }
    }
}

/// Like [`check_gradient`], comparing every checked element instead of stopping at
/// the first mismatch: per input of `wrt`, the elements compared and the worst one.
/// What `uop grad --check` prints.
pub fn compare_gradient(
    forward: &Program,
    wrt: &[NodeId],
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    options: &FdOptions,
) -> Result<Vec<InputComparison>, FdError> {
    let mut out: Vec<InputComparison> = wrt
        .iter()
        .map(|w| InputComparison {
            input: forward.node(*w).name.clone(),
            checked: 0,
            worst: None,
        })
        .collect();
    walk(forward, wrt, &[], inputs, params, options, |e| {
        let slot = &mut out[e.position];
        slot.checked += 1;
        let this = ElementComparison {
            index: e.index,
            analytic: e.analytic,
            numeric: e.numeric,
            error: e.error,
            allowed: e.allowed,
        };
        if slot
            .worst
            .as_ref()
            .is_none_or(|w| this.badness() > w.badness())
        {
            slot.worst = Some(this);
        }
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

/// One element of a walk: the gradient program's value and the central difference.
struct Element<'a> {
    /// Position of the input in `wrt`.
    position: usize,
    input: &'a str,
    index: usize,
    analytic: f64,
    numeric: f64,
    error: f64,
    allowed: f64,
}

/// Builds and runs the gradient program of `forward` (in f64) at `inputs`, then
/// visits the checked elements of every input of `wrt` in order with their central
/// differences, until `visit` breaks. Gives the gradient program.
fn walk(
    forward: &Program,
    wrt: &[NodeId],
    supplied: &[NodeId],
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    options: &FdOptions,
    mut visit: impl FnMut(Element<'_>) -> ControlFlow<()>,
) -> Result<Gradient, FdError> {
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
    for (position, (w, g)) in wrt.iter().zip(&analytic).enumerate() {
        let slot = forward.inputs.iter().position(|i| i == w).unwrap_or(0);
        let input = forward.node(*w).name.as_str();
        for e in elements(inputs[slot].len(), options.sample, &mut rng) {
            let mut point = inputs.clone();
            point[slot].data[e] += h;
            let up = loss(&point)?;
            point[slot].data[e] -= 2.0 * h;
            let down = loss(&point)?;
            let numeric = (up - down) / (2.0 * h);
            let a = g.data[e];
            let element = Element {
                position,
                input,
                index: e,
                analytic: a,
                numeric,
                error: (a - numeric).abs(),
                allowed: options.abs + options.rel * a.abs().max(numeric.abs()),
            };
            if visit(element).is_break() {
                return Ok(grad);
            }
        }
    }
    Ok(grad)
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
