//! Scratch crates: tests that write generated Rust into a crate of its own and build
//! it with cargo (the root, codegen and Cranelift suites) share one profile and one
//! target folder, so they share one build of `uop-runtime` (docs/build-time.md).

/// The `[profile.dev]` of every scratch crate: unoptimized, as a user's first
/// `cargo run` builds generated code (so `get_unchecked`'s and arithmetic's debug
/// checks are on), without debug info or incremental caches, which a crate built
/// once does not use.
pub const SCRATCH_PROFILE: &str = "[profile.dev]\ndebug = false\nincremental = false\n";

/// The target folder every scratch crate builds into, under a test's
/// `CARGO_TARGET_TMPDIR` (the workspace's `target/tmp`, the same for every crate).
pub const SCRATCH_TARGET: &str = "generated_crates_target";
