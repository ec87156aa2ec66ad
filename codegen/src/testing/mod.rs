//! Test support for the randomized oracle (DESIGN.md §9), behind the feature
//! `testing` (which the crate's own tests and the `uop fuzz` command turn on; no
//! compiler module depends on it): random programs and
//! cases ([`generate`]), the differential check of every execution path against the
//! reference interpreter ([`differential`]), and greedy shrinking of a failing
//! program to a small `.uop` reproducer ([`shrink`](mod@shrink)); the profile and
//! target folder of the tests' scratch crates ([`scratch`]).
//!
//! ```
//! use uop_codegen::testing::{CheckOptions, GenConfig, check_program, random_case, random_program};
//!
//! for seed in 0..5 {
//!     let program = random_program(seed, &GenConfig::default());
//!     let case = random_case(&program, seed).expect("a case");
//!     if let Err(mismatch) = check_program(&program, &case, &CheckOptions::default()) {
//!         panic!("seed {seed}: {mismatch}");
//!     }
//! }
//! ```

pub mod differential;
pub mod generate;
pub mod programs;
pub mod scratch;
pub mod shrink;

pub use differential::{
    Backend, CheckOptions, Difference, LoopsBackend, Mismatch, Stage, Tolerance, check_program,
    compare_outputs,
};
pub use generate::{Case, CaseError, GenConfig, random_case, random_case_with, random_program};
pub use shrink::{
    CASE_TRIES, Failure, MAX_CANDIDATES, Reproducer, reproducer, shrink, shrink_failure,
};
