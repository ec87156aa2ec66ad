//! The one way the CLI writes files (`run --output`, `grad --grad`, `emit -o`):
//! all or nothing, never replacing what a path names with something else.
//!
//! - Every file is first written in full (and synced) to a temporary sibling in its
//!   target directory; only when all of them are written are they renamed over their
//!   targets. If any write fails, every temporary is removed and no target is touched,
//!   so an existing file keeps its contents.
//! - A target must be a regular file or not exist. A symbolic link is followed and the
//!   file it names is replaced (the link stays a link). A FIFO, a device node (such as
//!   `/dev/full`), a socket or a directory is refused before anything is written:
//!   renaming over it would replace the node, and writing into it could block (a FIFO)
//!   or only half succeed.
//! - Two outputs naming the same file (also through links) are an error.
//!
//! The renames come last and are not undone: one can fail only if the directory
//! changed under the command (then the temporaries not yet renamed are removed).

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{CliError, fail};

/// Files to write together: each a target path, the flag that named it (for
/// messages) and its bytes.
#[derive(Default)]
pub(crate) struct OutputFiles {
    files: Vec<(String, PathBuf, Vec<u8>)>,
}

impl OutputFiles {
    /// Adds a file; `what` names it in messages (`--output y`).
    pub(crate) fn add(&mut self, what: impl Into<String>, path: &Path, bytes: Vec<u8>) {
        self.files.push((what.into(), path.to_path_buf(), bytes));
    }

    /// Writes every file, or none (see the module docs).
    pub(crate) fn commit(self) -> Result<(), CliError> {
        // Where each file really goes, checked before anything is written.
        let mut targets: Vec<PathBuf> = Vec::with_capacity(self.files.len());
        let mut seen: HashMap<PathBuf, &str> = HashMap::new();
        for (what, path, _) in &self.files {
            let target = target_of(what, path)?;
            if let Some(first) = seen.insert(target.clone(), what) {
                return fail(format!(
                    "{first} and {what} both write {}: give each output its own file",
                    path.display()
                ));
            }
            targets.push(target);
        }
        let mut temps: Vec<PathBuf> = Vec::with_capacity(self.files.len());
        let cleanup = |temps: &[PathBuf]| {
            for t in temps {
                // Best effort: the temporary is ours and useless now; the error that
                // matters is the one reported.
                let _ = fs::remove_file(t);
            }
        };
        for ((what, path, bytes), target) in self.files.iter().zip(&targets) {
            let temp = temporary_sibling(target);
            if let Err(e) = write_new(&temp, bytes) {
                let _ = fs::remove_file(&temp);
                cleanup(&temps);
                return fail(format!(
                    "{what}: cannot write {}: {e} (nothing was written)",
                    path.display()
                ));
            }
            temps.push(temp);
        }
        for (k, (temp, target)) in temps.iter().zip(&targets).enumerate() {
            if let Err(e) = fs::rename(temp, target) {
                cleanup(&temps[k..]);
                let (what, path, _) = &self.files[k];
                return fail(format!(
                    "{what}: cannot replace {}: {e} ({k} of {} files were written)",
                    path.display(),
                    temps.len()
                ));
            }
        }
        Ok(())
    }
}

/// The regular file (existing or not) that writing `path` replaces: symbolic links
/// are followed; anything but a regular file is refused.
fn target_of(what: &str, path: &Path) -> Result<PathBuf, CliError> {
    let Some(name) = path.file_name() else {
        return fail(format!("{what}: {} is not a file path", path.display()));
    };
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => fs::canonicalize(path)
            .map_err(|e| CliError(format!("{what}: cannot resolve {}: {e}", path.display()))),
        Ok(meta) => fail(format!(
            "{what}: {} is {}, not a regular file; uop writes outputs only to regular \
             files (write to a file, then copy it)",
            path.display(),
            kind(&meta.file_type())
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if fs::symlink_metadata(path).is_ok() {
                return fail(format!(
                    "{what}: {} is a symbolic link to nothing; uop does not replace links",
                    path.display()
                ));
            }
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let dir = fs::canonicalize(parent).map_err(|e| {
                CliError(format!(
                    "{what}: cannot write {}: the directory {} {}",
                    path.display(),
                    parent.display(),
                    if e.kind() == std::io::ErrorKind::NotFound {
                        "does not exist".to_string()
                    } else {
                        format!("cannot be used: {e}")
                    }
                ))
            })?;
            Ok(dir.join(name))
        }
        Err(e) => fail(format!("{what}: cannot write {}: {e}", path.display())),
    }
}

fn kind(t: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// `.name.<pid>.<n>.tmp` next to `target`: same directory so the rename is atomic,
/// unique per process and call so concurrent writers never share one.
fn temporary_sibling(target: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    target.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Creates `path` (which must not exist), writes `bytes` and syncs: a full disk
/// (ENOSPC) or any other failure is an error here, before any rename.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
