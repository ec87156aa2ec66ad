//! Random micro-op programs and random cases (sizes, `$params`, data) to run them on.
//!
//! [`random_program`] grows a random DAG through the checked [`Builder`], so the
//! builder's own validation decides what is well formed; a step the builder rejects,
//! or whose tensors would be negative-sized or too large, is rolled back and another
//! one is tried. Every uop kind appears: reindex with shifts, flips, strides,
//! `/` and `%`, windows and broadcasts; scatters with collisions; reductions;
//! `select` with an i32 index input; `iota`; `where`; comparisons; scalar and
//! `$param` operands; `dA0[=dB0]` size assertions between inputs.
//!
//! [`random_case`] picks concrete sizes consistent with a program (shared dims
//! equal, assertions holding, no negative or huge tensor) and data in a moderate
//! range, with i32 index tensors partly out of range.
//!
//! ```
//! use uop_codegen::{interp, testing::{GenConfig, random_case, random_program}};
//!
//! let program = random_program(7, &GenConfig::default());
//! let case = random_case(&program, 1)?;
//! let outputs = interp::run(&program, &case.inputs, &case.params)?;
//! assert_eq!(outputs.len(), program.outputs.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod case;
mod program;
mod steps;

use case::{canonical_sizes, fill_case, search_sizes};
use program::Generator;

use std::collections::{BTreeMap, HashMap};

use rand::{SeedableRng, rngs::StdRng};
use thiserror::Error;

use crate::tensor::Tensor;
use crate::uop::{Builder, DType, Program, UnaryOp};

/// Limits and switches for [`random_program`] (and the sizes [`random_case_with`] picks).
#[derive(Clone, Debug, PartialEq)]
pub struct GenConfig {
    /// Roughly how many uops to build after the inputs (at least one is always built).
    pub max_nodes: usize,
    /// Most float inputs declared up front (at least one); `select` adds i32 inputs.
    pub max_inputs: usize,
    /// Largest rank of an input; intermediate tensors may have up to two more axes
    /// (windows, outer products).
    pub max_rank: usize,
    /// Largest concrete size of an input axis, literal or named.
    pub max_dim: usize,
    /// Largest number of elements of any tensor of the program, for the chosen sizes.
    pub max_elements: usize,
    /// Most outputs.
    pub max_outputs: usize,
    /// Whether `$params` may appear (in sizes, indices and as operands).
    pub allow_params: bool,
    /// The float type of the program (f32 or f64).
    pub dtype: DType,
    /// Smallest concrete size of a named dim in a case ([`random_case_with`]); 0 (the
    /// default) lets cases have empty tensors now and then.
    pub min_dim: usize,
    /// Named dims with a fixed size in every case (e.g. `D = 64` for an op written
    /// for that width); the others are drawn.
    pub dims: BTreeMap<String, i64>,
    /// `$params` with a fixed value in every case; the others are drawn (0 to 3).
    pub params: BTreeMap<String, i64>,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_nodes: 12,
            max_inputs: 3,
            max_rank: 3,
            max_dim: 5,
            max_elements: 256,
            max_outputs: 3,
            allow_params: true,
            dtype: DType::F32,
            min_dim: 0,
            dims: BTreeMap::new(),
            params: BTreeMap::new(),
        }
    }
}

/// Concrete inputs and `$param` values for one run of a program.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// One tensor per declared input, in order.
    pub inputs: Vec<Tensor>,
    /// A value for every declared `$param`.
    pub params: HashMap<String, i64>,
}

/// No sizes consistent with a program were found within the configured limits.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "no sizes found for the program's inputs and params within max_dim {max_dim} and \
     max_elements {max_elements}{detail}"
)]
pub struct CaseError {
    /// The size limit that was searched.
    pub max_dim: usize,
    /// The element limit that was searched.
    pub max_elements: usize,
    /// Why, when it is certain (e.g. an assertion between two different literals).
    pub detail: String,
}

/// A random, always valid program (same seed and config, same program).
///
/// If nothing interesting can be built within the limits, the program falls back to
/// a single `neg` of one input, so callers never see an error.
pub fn random_program(seed: u64, cfg: &GenConfig) -> Program {
    let cfg = sanitized(cfg);
    for retry in 0..8u64 {
        let mut generator =
            Generator::new(seed.wrapping_add(retry.wrapping_mul(0x9e37_79b9)), &cfg);
        if let Some(program) = generator.run()
            // The canonical size search must succeed: it is random_case's fallback.
            && canonical_sizes(&program, &cfg).is_ok()
        {
            return program;
        }
    }
    fallback_program(cfg.dtype)
}

/// Random sizes, params and data for `program` within [`GenConfig::default`]'s limits.
///
/// # Errors
///
/// [`CaseError`] when no consistent sizes exist within those limits (never for
/// programs from [`random_program`] with the default config); [`random_case_with`]
/// takes other limits, fixed dims and a minimum size.
pub fn random_case(program: &Program, seed: u64) -> Result<Case, CaseError> {
    random_case_with(program, seed, &GenConfig::default())
}

/// Random sizes, params and data for `program`, with named dims from `cfg.min_dim`
/// to `cfg.max_dim` (those in `cfg.dims` fixed), `$params` from `cfg.params` or
/// drawn, and every tensor at most `cfg.max_elements` elements.
///
/// Always succeeds for programs [`random_program`] made with the same config.
pub fn random_case_with(program: &Program, seed: u64, cfg: &GenConfig) -> Result<Case, CaseError> {
    let cfg = sanitized(cfg);
    let mut rng = StdRng::seed_from_u64(seed);
    let sizes = match search_sizes(program, &cfg, &mut rng) {
        Ok(s) => s,
        Err(_) => canonical_sizes(program, &cfg)?,
    };
    Ok(fill_case(program, &sizes, &mut rng))
}

/// The seed of the size search every generated program is checked against.
const CANONICAL_SEED: u64 = 0x5eed;

/// Attempts of one size search before giving up.
const SIZE_ATTEMPTS: usize = 300;

fn sanitized(cfg: &GenConfig) -> GenConfig {
    GenConfig {
        max_inputs: cfg.max_inputs.max(1),
        // Sizes are drawn and compared as i64: keep the limits well inside it.
        max_dim: cfg.max_dim.clamp(1, 1 << 16),
        min_dim: cfg.min_dim.min(1 << 16),
        max_elements: cfg.max_elements.clamp(1, 1 << 40),
        max_outputs: cfg.max_outputs.max(1),
        dtype: if cfg.dtype.is_float() {
            cfg.dtype
        } else {
            DType::F32
        },
        ..cfg.clone()
    }
}

fn fallback_program(dtype: DType) -> Program {
    let mut b = Builder::new(dtype);
    let built = b
        .input("x", dtype, &["N"])
        .and_then(|x| Ok((x, b.unary(UnaryOp::Neg, x)?)))
        .and_then(|(x, y)| b.combine(&[x], &[y]));
    match built {
        Ok(p) => p,
        // A one-input `neg` is valid by construction; reaching this is a builder bug.
        Err(e) => unreachable!("the fallback program is valid: {e}"),
    }
}
