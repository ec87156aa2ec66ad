//! The differential oracle: one program, one case, every execution path, compared
//! with the reference interpreter element by element.
//!
//! The stages, in the order they are checked ([`Stage`]):
//!
//! 1. the reference interpreter ([`interp::run`]) — the expected outputs;
//! 2. the loop-IR interpreter on the unoptimized lowering ([`loops::lower`] +
//!    [`interp::run_loops`]);
//! 3. the lowering after each pass of [`pass::pipeline`] *alone*, so a wrong pass is
//!    named even when a later pass would hide its mistake;
//! 4. the lowering after the whole pipeline ([`pass::optimize`]);
//! 5. every extra [`Backend`] in [`CheckOptions::backends`] (the Rust and Cranelift
//!    backends plug in here).
//!
//! **Equality.** Without a [`Tolerance`] the comparison is exact: every element must
//! be the same `f64`, with two deliberate exceptions. Any NaN equals any NaN (payloads
//! are not part of the semantics), and `-0.0` equals `0.0`: IEEE 754 defines them as
//! equal, and a legal rewrite such as starting a sum from its first term instead of
//! the identity `+0.0` changes the sign of a zero result. A sign of zero that matters
//! (`1 / x`, `sign`) still shows up downstream as `-inf` against `inf`. Infinities
//! must match exactly. A tolerance is for backends that reorder float operations.
//!
//! **Errors.** The reference and a stage that both fail agree (the case does not fit
//! the program); one failing where the other runs is a mismatch. A panic anywhere is
//! caught and reported as that stage failing.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::compile::{CompileOptions, compile, optimize};
use crate::interp;
use crate::loops::{self, LoopProgram};
use crate::pass::{self, PassOptions};
use crate::tensor::{Tensor, unflatten};
use crate::uop::{DType, Program};

use super::generate::Case;

/// An execution path under test, beyond the built-in interpreters: a code generator
/// (Rust, Cranelift) or anything else that runs a program on a case.
pub trait Backend {
    /// A short name for messages, e.g. `rust`.
    fn name(&self) -> String;
    /// Runs `p` on `case`, giving one tensor per output in order, or a message
    /// saying why it could not run.
    fn run(&self, p: &Program, case: &Case) -> Result<Vec<Tensor>, String>;
}

/// The loop-IR interpreter on the optimized lowering, as a [`Backend`]: the path
/// `uop run --backend loops` takes, with its own set of disabled passes.
#[derive(Clone, Debug, Default)]
pub struct LoopsBackend {
    /// Passes not to run.
    pub disabled_passes: Vec<String>,
}

impl Backend for LoopsBackend {
    fn name(&self) -> String {
        "loops".into()
    }

    fn run(&self, p: &Program, case: &Case) -> Result<Vec<Tensor>, String> {
        let opts = CompileOptions {
            passes: PassOptions {
                disabled: self.disabled_passes.clone(),
                verify_each_pass: true,
            },
            ..CompileOptions::default()
        };
        let optimized = compile(p, &opts).map_err(|e| e.to_string())?;
        interp::run_loops(&optimized, &case.inputs, &case.params).map_err(|e| e.to_string())
    }
}

/// How far a value may be from the reference's: `|found - expected| <= abs + rel *
/// max(|found|, |expected|)`. NaN and infinities must still match exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Absolute part.
    pub abs: f64,
    /// Relative part.
    pub rel: f64,
}

impl Tolerance {
    /// True when `found` is close enough to `expected`.
    pub fn accepts(&self, expected: f64, found: f64) -> bool {
        if expected.is_finite() && found.is_finite() {
            (found - expected).abs() <= self.abs + self.rel * found.abs().max(expected.abs())
        } else {
            same_value(expected, found)
        }
    }
}

/// Exact equality, except that NaN equals NaN and `-0.0` equals `0.0` (see the module docs).
fn same_value(expected: f64, found: f64) -> bool {
    (expected.is_nan() && found.is_nan()) || expected == found
}

/// What [`check_program`] runs and how it compares.
#[derive(Default)]
pub struct CheckOptions {
    /// `None` (the default): exact comparison. `Some`: values may differ this much.
    pub tolerance: Option<Tolerance>,
    /// Passes neither run alone nor in the pipeline.
    pub disabled_passes: Vec<String>,
    /// Extra stages, checked after the built-in ones in this order.
    pub backends: Vec<Box<dyn Backend>>,
}

impl fmt::Debug for CheckOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backends: Vec<String> = self.backends.iter().map(|b| b.name()).collect();
        f.debug_struct("CheckOptions")
            .field("tolerance", &self.tolerance)
            .field("disabled_passes", &self.disabled_passes)
            .field("backends", &backends)
            .finish()
    }
}

/// One execution path of a program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The reference interpreter of micro ops (only ever "differs" by panicking).
    Reference,
    /// The loop-IR interpreter on the lowering, before any pass.
    Lowered,
    /// The loop-IR interpreter after this one pass alone, applied to the lowering.
    Pass(String),
    /// The loop-IR interpreter after the whole pass pipeline.
    Optimized,
    /// An extra [`Backend`], by name.
    Backend(String),
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Reference => f.write_str("the reference interpreter"),
            Stage::Lowered => f.write_str("the loop IR before passes"),
            Stage::Pass(name) => write!(f, "the loop IR after pass `{name}` alone"),
            Stage::Optimized => f.write_str("the loop IR after the pass pipeline"),
            Stage::Backend(name) => write!(f, "backend `{name}`"),
        }
    }
}

/// How a stage's result differs from the reference's.
#[derive(Clone, Debug, PartialEq)]
pub enum Difference {
    /// The reference failed (or panicked) where the stage ran.
    ReferenceFailed {
        /// The reference's error.
        error: String,
    },
    /// The stage failed (or panicked) where the reference ran.
    StageFailed {
        /// The stage's error.
        error: String,
    },
    /// A different number of outputs.
    OutputCount {
        /// The reference's count.
        expected: usize,
        /// The stage's count.
        found: usize,
    },
    /// An output of a different shape.
    Shape {
        /// Position of the output.
        output: usize,
        /// Its name in the program.
        name: String,
        /// The reference's shape.
        expected: Vec<usize>,
        /// The stage's shape.
        found: Vec<usize>,
    },
    /// An output of a different element type.
    DType {
        /// Position of the output.
        output: usize,
        /// Its name in the program.
        name: String,
        /// The reference's type.
        expected: DType,
        /// The stage's type.
        found: DType,
    },
    /// The first element (row-major) whose values differ.
    Value {
        /// Position of the output.
        output: usize,
        /// Its name in the program.
        name: String,
        /// Multi-index of the element.
        index: Vec<usize>,
        /// The reference's value.
        expected: f64,
        /// The stage's value.
        found: f64,
    },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::ReferenceFailed { error } => write!(
                f,
                "the reference interpreter failed but this stage ran: {error}"
            ),
            Difference::StageFailed { error } => {
                write!(f, "it failed where the reference ran: {error}")
            }
            Difference::OutputCount { expected, found } => {
                write!(f, "it gave {found} outputs, the reference {expected}")
            }
            Difference::Shape {
                output,
                name,
                expected,
                found,
            } => write!(
                f,
                "output {output} `{name}` has shape {found:?}, the reference {expected:?}"
            ),
            Difference::DType {
                output,
                name,
                expected,
                found,
            } => write!(
                f,
                "output {output} `{name}` is {found}, the reference {expected}"
            ),
            Difference::Value {
                output,
                name,
                index,
                expected,
                found,
            } => write!(
                f,
                "output {output} `{name}` at {index:?}: expected {expected:?} ({:#018x}), found {found:?} ({:#018x})",
                expected.to_bits(),
                found.to_bits()
            ),
        }
    }
}

/// A stage disagreed with the reference interpreter.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The first stage (in checking order) that disagreed.
    pub stage: Stage,
    /// How.
    pub difference: Difference,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} disagrees with the reference interpreter: {}",
            self.stage, self.difference
        )
    }
}

impl std::error::Error for Mismatch {}

/// Runs `p` on `case` through every stage (see the module docs) and returns the
/// first disagreement with the reference interpreter.
///
/// ```
/// use uop_codegen::testing::{CheckOptions, check_program, random_case, random_program, GenConfig};
/// let program = random_program(3, &GenConfig::default());
/// let case = random_case(&program, 3).expect("a case");
/// assert_eq!(check_program(&program, &case, &CheckOptions::default()), Ok(()));
/// ```
pub fn check_program(p: &Program, case: &Case, opts: &CheckOptions) -> Result<(), Mismatch> {
    // Only a panic of the reference is a finding by itself; its errors are compared.
    let expected =
        guarded(|| Ok(interp::run(p, &case.inputs, &case.params).map_err(|e| e.to_string())))
            .map_err(|error| Mismatch {
                stage: Stage::Reference,
                difference: Difference::StageFailed { error },
            })?;
    let check = |stage: Stage, found: Result<Vec<Tensor>, String>| {
        let difference = match (&expected, found) {
            (Ok(expected), Ok(found)) => {
                compare_outputs(p, expected, &found, opts.tolerance.as_ref())
            }
            (Ok(_), Err(error)) => Some(Difference::StageFailed { error }),
            (Err(error), Ok(_)) => Some(Difference::ReferenceFailed {
                error: error.clone(),
            }),
            (Err(_), Err(_)) => None,
        };
        match difference {
            Some(difference) => Err(Mismatch { stage, difference }),
            None => Ok(()),
        }
    };
    let run = |lp: &LoopProgram| {
        interp::run_loops(lp, &case.inputs, &case.params).map_err(|e| e.to_string())
    };

    let lowered = match guarded(|| Ok(loops::lower(p))) {
        Ok(lowered) => lowered,
        Err(error) => return check(Stage::Lowered, Err(error)),
    };
    check(Stage::Lowered, guarded(|| run(&lowered)))?;

    let enabled = |name: &str| !opts.disabled_passes.iter().any(|d| d == name);
    for pass in pass::pipeline().iter().filter(|ps| enabled(ps.name)) {
        let found = guarded(|| run(&(pass.run)(&lowered)));
        check(Stage::Pass(pass.name.to_string()), found)?;
    }

    let compile_opts = CompileOptions {
        passes: PassOptions {
            disabled: opts.disabled_passes.clone(),
            verify_each_pass: true,
        },
        ..CompileOptions::default()
    };
    let found = guarded(|| {
        let optimized = optimize(&lowered, &compile_opts).map_err(|e| e.to_string())?;
        run(&optimized)
    });
    check(Stage::Optimized, found)?;

    for backend in &opts.backends {
        let found = guarded(|| backend.run(p, case));
        check(Stage::Backend(backend.name()), found)?;
    }
    Ok(())
}

/// Compares a stage's outputs with the reference's, giving the first difference:
/// the output count, then per output its type, shape and first differing element.
/// `p` names the outputs in messages.
pub fn compare_outputs(
    p: &Program,
    expected: &[Tensor],
    found: &[Tensor],
    tolerance: Option<&Tolerance>,
) -> Option<Difference> {
    if expected.len() != found.len() {
        return Some(Difference::OutputCount {
            expected: expected.len(),
            found: found.len(),
        });
    }
    let same = |e: f64, f: f64| match tolerance {
        Some(t) => t.accepts(e, f),
        None => same_value(e, f),
    };
    for (output, (e, f)) in expected.iter().zip(found).enumerate() {
        let name = p
            .outputs
            .get(output)
            .map_or_else(|| format!("#{output}"), |id| p.node(*id).name.clone());
        if e.dtype != f.dtype {
            return Some(Difference::DType {
                output,
                name,
                expected: e.dtype,
                found: f.dtype,
            });
        }
        if e.shape != f.shape || e.data.len() != f.data.len() {
            return Some(Difference::Shape {
                output,
                name,
                expected: e.shape.clone(),
                found: f.shape.clone(),
            });
        }
        if let Some(flat) = (0..e.data.len()).find(|&k| !same(e.data[k], f.data[k])) {
            return Some(Difference::Value {
                output,
                name,
                index: unflatten(flat, &e.shape),
                expected: e.data[flat],
                found: f.data[flat],
            });
        }
    }
    None
}

/// Runs `f`, turning a panic into an error message: a pass or backend that panics
/// on some program is a finding to report and shrink, not a reason to stop.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| Err(panic_message(&*payload)))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text payload".into());
    format!("panicked: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_of_either_sign_and_nans_of_any_payload_are_equal() {
        assert!(same_value(0.0, -0.0));
        assert!(same_value(f64::NAN, f64::from_bits(0x7ff8_0000_0000_0001)));
        assert!(!same_value(f64::INFINITY, f64::NEG_INFINITY));
        assert!(!same_value(1.0, 1.0 + f64::EPSILON));
    }

    #[test]
    fn a_tolerance_accepts_close_finite_values_only() {
        let t = Tolerance {
            abs: 1e-6,
            rel: 1e-3,
        };
        assert!(t.accepts(1000.0, 1000.5));
        assert!(!t.accepts(1000.0, 1002.0));
        assert!(t.accepts(0.0, 1e-7));
        assert!(!t.accepts(f64::INFINITY, f64::MAX));
        assert!(t.accepts(f64::NAN, f64::NAN));
    }

    #[test]
    fn flat_positions_unflatten_row_major() {
        assert_eq!(unflatten(5, &[2, 3]), vec![1, 2]);
        assert_eq!(unflatten(0, &[]), Vec::<usize>::new());
        assert_eq!(unflatten(7, &[2, 2, 2]), vec![1, 1, 1]);
    }

    #[test]
    fn panics_become_stage_errors() {
        let r: Result<(), String> = guarded(|| panic!("boom {}", 1));
        assert_eq!(r, Err("panicked: boom 1".into()));
    }
}
