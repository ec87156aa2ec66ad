//! `uop-ops`: the macro-op library, tensor operations written in micro ops.
