//! What the test files share.

use std::path::{Path, PathBuf};

/// `path` (relative to the workspace root, as the examples are named) from this
/// crate's folder, where the tests run; an absolute path stays as it is.
pub fn repo(path: impl AsRef<Path>) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}
