//! `uop ops`: lists the ops a `.uop` program can call, with their signatures.

use clap::Args;
use uop_codegen::text::micro_ops;

use super::{CliError, registry};

/// Arguments of `uop ops`.
#[derive(Args, Debug)]
pub struct OpsArgs {
    /// Only ops whose name contains this text.
    filter: Option<String>,
}

/// Runs `uop ops`.
pub fn ops(args: &OpsArgs) -> Result<(), CliError> {
    print!("{}", listing(args.filter.as_deref().unwrap_or("")));
    Ok(())
}

/// The listing: micro ops, then the macro-op library, one `signature  doc` line each.
/// A macro op that extends a micro op of the same name (numpy broadcasting) is listed
/// with the macro ops only.
pub fn listing(filter: &str) -> String {
    let registry = registry();
    let micro: Vec<(String, String)> = micro_ops()
        .into_iter()
        .filter(|m| !registry.contains(&m.name))
        .map(|m| (m.signature, m.doc))
        .filter(|(s, _)| s.contains(filter))
        .collect();
    let macros: Vec<(String, String)> = registry
        .iter()
        .map(|m| (m.signature.clone(), m.doc.clone()))
        .filter(|(s, _)| s.contains(filter))
        .collect();
    // Long signatures put their doc on the next line rather than widening every row.
    const WIDTH: usize = 40;
    let mut out = String::new();
    for (title, rows) in [("micro ops", &micro), ("macro ops", &macros)] {
        if rows.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("{title} ({}):\n", rows.len()));
        for (sig, doc) in rows.iter() {
            if sig.len() <= WIDTH {
                out.push_str(&format!("  {sig:<WIDTH$}  {doc}\n"));
            } else {
                out.push_str(&format!("  {sig}\n  {:WIDTH$}  {doc}\n", ""));
            }
        }
    }
    out
}
