//! Macro ops: movement (being written).

use uop_codegen::text::Registry;

/// Registers this module's ops by name.
pub(crate) fn register(_registry: &mut Registry) {}
