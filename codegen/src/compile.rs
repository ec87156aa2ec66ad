//! The one compile driver: a [`Program`] to the optimized [`LoopProgram`] every
//! backend emits, under [`CompileOptions`] (target, safety, scheduling, passes).
//!
//! Every path that compiles a program goes through [`compile`]: the CLI, the JIT,
//! the Rust backend, the build-time API and the tests; so a program compiles to the
//! same loop IR whichever way it is run.
//!
//! Safety and scheduling are independent options:
//!
//! - [`Checks`] says how generated Rust checks array accesses: [`Checks::Proven`]
//!   (the default) skips the checks the bounds pass proved unnecessary,
//!   [`Checks::Full`] keeps safe indexing everywhere, with no `unsafe` at all;
//! - [`CompileOptions::schedule`] runs the schedule passes (`pad`, `order`, `tile`,
//!   `split`, `parallel`, `rows`) and lets the backends honor their marks.
//!
//! One combination is refused rather than silently changed: full checks with a
//! schedule for the Rust target. The Rust backend realizes a schedule with `unsafe`
//! code (threads writing disjoint rows of one buffer through raw pointers, per-CPU
//! copies behind `#[target_feature]`, cache-line-aligned buffers read unchecked), and
//! [`Checks::Full`] promises generated code without any; ask for
//! [`CompileOptions::safe`] (full checks, no schedule) instead.
//!
//! ```
//! use uop_codegen::compile::{compile, CompileOptions};
//! use uop_codegen::uop::{Builder, DType, UnaryOp};
//!
//! let mut b = Builder::new(DType::F32);
//! let x = b.input("x", DType::F32, &["N"])?;
//! let y = b.unary(UnaryOp::Exp, x)?;
//! let z = b.unary(UnaryOp::Neg, y)?;
//! let program = b.combine(&[x], &[z])?;
//!
//! let optimized = compile(&program, &CompileOptions::default())?;
//! assert!(optimized.to_string().contains("t2[i0] = -exp(x[i0])"));
//! // Without the schedule passes: fused all the same, but no loop marked parallel.
//! let plain = compile(&program, &CompileOptions::default().schedule(false))?;
//! assert!(!plain.to_string().contains("parallel"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use thiserror::Error;

use crate::loops::{self, LoopProgram};
use crate::pass::{self, PassError, PassOptions, PassTime};
use crate::uop::Program;

/// The passes that decide how loops run fast (DESIGN.md §6, step 7): what
/// [`CompileOptions::schedule`]`(false)` leaves out.
pub const SCHEDULE_PASSES: [&str; 14] = [
    "pad",
    "order",
    "channels",
    "tile",
    "pack",
    "transpose",
    "split",
    "jam",
    "chunk",
    "parallel",
    "align",
    "rows",
    "line",
    "share",
];

/// How much checking generated array accesses keep (the Rust backend).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Checks {
    /// Accesses proven in range use `get_unchecked` after the entry has checked
    /// every length (fast; `unsafe` only there).
    #[default]
    Proven,
    /// Every access uses safe indexing; no `unsafe` anywhere.
    Full,
}

/// The backend a program is compiled for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// Any backend: the loop program suits the interpreters, Rust and Cranelift.
    #[default]
    Any,
    /// Rust source (`backend::rust`).
    Rust,
    /// Machine code through Cranelift (JIT or object file).
    Cranelift,
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendKind::Any => "any backend",
            BackendKind::Rust => "Rust",
            BackendKind::Cranelift => "Cranelift",
        })
    }
}

/// How to compile a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// The backend the loop program is for.
    pub backend: BackendKind,
    /// How generated accesses are checked (Rust target only).
    pub checks: Checks,
    /// Run the schedule passes ([`SCHEDULE_PASSES`]) and honor their marks.
    pub schedule: bool,
    /// Further passes to skip (`--disable-pass`).
    pub passes: PassOptions,
}

impl Default for CompileOptions {
    /// Any target, proven checks, scheduled, every pass: what `uop run` uses.
    fn default() -> Self {
        CompileOptions {
            backend: BackendKind::Any,
            checks: Checks::Proven,
            schedule: true,
            passes: PassOptions::default(),
        }
    }
}

/// Why a program could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CompileError {
    /// A pass name in the options is not a pass.
    #[error(transparent)]
    Pass(#[from] PassError),
    /// Full checks asked of a target that has no such mode.
    #[error("full checks (safe indexing only) exist for the Rust target, not for {0}")]
    ChecksNeedRust(BackendKind),
    /// Full checks and a schedule asked of the Rust target (see the module docs).
    #[error(
        "full checks promise Rust without `unsafe`, but the Rust backend runs a schedule \
         (threads, per-CPU copies, aligned buffers) with `unsafe`: turn scheduling off \
         with full checks"
    )]
    FullChecksScheduled,
    /// Options made for one backend handed to another.
    #[error("these options are for {found}; the {expected} backend cannot use them")]
    WrongTarget {
        /// The backend compiling.
        expected: BackendKind,
        /// The target the options name.
        found: BackendKind,
    },
}

impl CompileOptions {
    /// The default options for `backend`.
    pub fn for_backend(backend: BackendKind) -> Self {
        CompileOptions {
            backend,
            ..CompileOptions::default()
        }
    }

    /// Full checks and no schedule for the Rust target: generated code with no
    /// `unsafe` at all, slower.
    pub fn safe() -> Self {
        CompileOptions {
            backend: BackendKind::Rust,
            checks: Checks::Full,
            schedule: false,
            passes: PassOptions::default(),
        }
    }

    /// These options with `target`.
    pub fn backend(mut self, backend: BackendKind) -> Self {
        self.backend = backend;
        self
    }

    /// These options with `checks`.
    pub fn checks(mut self, checks: Checks) -> Self {
        self.checks = checks;
        self
    }

    /// These options with the schedule passes on or off.
    pub fn schedule(mut self, schedule: bool) -> Self {
        self.schedule = schedule;
        self
    }

    /// These options with the pass `name` skipped too.
    pub fn disable_pass(mut self, name: impl Into<String>) -> Self {
        self.passes.disabled.push(name.into());
        self
    }

    /// The options the `expected` backend compiles with: these, with an [`Any`]
    /// target made `expected`.
    ///
    /// # Errors
    ///
    /// [`CompileError::WrongTarget`] when the options name another backend.
    ///
    /// [`Any`]: BackendKind::Any
    pub fn narrow_to(&self, expected: BackendKind) -> Result<CompileOptions, CompileError> {
        match self.backend {
            BackendKind::Any => Ok(self.clone().backend(expected)),
            t if t == expected => Ok(self.clone()),
            found => Err(CompileError::WrongTarget { expected, found }),
        }
    }

    /// Checks that the options make sense together.
    ///
    /// # Errors
    ///
    /// [`CompileError::ChecksNeedRust`], [`CompileError::FullChecksScheduled`] and
    /// [`CompileError::Pass`] for an unknown pass name.
    pub fn validate(&self) -> Result<(), CompileError> {
        if self.checks == Checks::Full {
            if self.backend != BackendKind::Rust {
                return Err(CompileError::ChecksNeedRust(self.backend));
            }
            if self.schedule {
                return Err(CompileError::FullChecksScheduled);
            }
        }
        pass::pipeline_names_check(&self.passes)?;
        Ok(())
    }

    /// The optimizer's options: the disabled passes, and the schedule passes when
    /// scheduling is off.
    pub fn pass_options(&self) -> PassOptions {
        let mut disabled = self.passes.disabled.clone();
        if !self.schedule {
            disabled.extend(SCHEDULE_PASSES.iter().map(|s| s.to_string()));
        }
        PassOptions {
            disabled,
            verify_each_pass: self.passes.verify_each_pass,
        }
    }
}

/// Lowers `program` and runs the optimizer's pipeline under `options`: the loop
/// program every backend emits.
///
/// # Errors
///
/// [`CompileError`] when the options are invalid (see [`CompileOptions::validate`]).
pub fn compile(program: &Program, options: &CompileOptions) -> Result<LoopProgram, CompileError> {
    optimize(&loops::lower(program), options)
}

/// Like [`compile`], for a program already lowered (a gradient's, a hand-built one).
///
/// # Errors
///
/// As [`compile`].
pub fn optimize(
    lowered: &LoopProgram,
    options: &CompileOptions,
) -> Result<LoopProgram, CompileError> {
    options.validate()?;
    Ok(pass::optimize(lowered, &options.pass_options())?)
}

/// Like [`compile`], timing each pass that ran (`--time-passes`).
///
/// # Errors
///
/// As [`compile`].
pub fn compile_timed(
    program: &Program,
    options: &CompileOptions,
) -> Result<(LoopProgram, Vec<PassTime>), CompileError> {
    optimize_timed(&loops::lower(program), options)
}

/// Like [`optimize`], timing each pass that ran.
///
/// # Errors
///
/// As [`compile`].
pub fn optimize_timed(
    lowered: &LoopProgram,
    options: &CompileOptions,
) -> Result<(LoopProgram, Vec<PassTime>), CompileError> {
    options.validate()?;
    Ok(pass::optimize_timed(lowered, &options.pass_options())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_checks_with_a_schedule_is_refused_not_changed() {
        let opts = CompileOptions::for_backend(BackendKind::Rust).checks(Checks::Full);
        assert_eq!(opts.validate(), Err(CompileError::FullChecksScheduled));
        assert_eq!(CompileOptions::safe().validate(), Ok(()));
        assert_eq!(
            CompileOptions::default()
                .checks(Checks::Full)
                .schedule(false)
                .validate(),
            Err(CompileError::ChecksNeedRust(BackendKind::Any))
        );
    }

    #[test]
    fn every_schedule_pass_is_a_pass() {
        let opts = CompileOptions::default().schedule(false);
        assert_eq!(opts.validate(), Ok(()));
        assert_eq!(opts.pass_options().disabled, SCHEDULE_PASSES.to_vec());
    }

    #[test]
    fn options_for_one_backend_are_not_taken_by_another() {
        let rust = CompileOptions::for_backend(BackendKind::Rust);
        assert_eq!(rust.narrow_to(BackendKind::Rust), Ok(rust.clone()));
        assert_eq!(
            rust.narrow_to(BackendKind::Cranelift),
            Err(CompileError::WrongTarget {
                expected: BackendKind::Cranelift,
                found: BackendKind::Rust
            })
        );
        assert_eq!(
            CompileOptions::default()
                .narrow_to(BackendKind::Cranelift)
                .map(|o| o.backend),
            Ok(BackendKind::Cranelift)
        );
    }
}
