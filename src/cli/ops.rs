//! `uop ops`: lists the ops a `.uop` program can call, with their signatures; with
//! `--onnx`, the ONNX ops a model may use, with their opsets (the importer's table,
//! `uop_onnx::registry::OPS`, the one `docs/onnx.md`'s table is generated from).

use clap::Args;
use uop_codegen::text::micro_ops;

use super::{CliError, registry};

/// Arguments of `uop ops`.
#[derive(Args, Debug)]
pub struct OpsArgs {
    /// Only ops whose name contains this text.
    filter: Option<String>,
    /// List the ONNX ops `.onnx` models may use (default domain), each with the
    /// opsets supported and what it becomes in uop.
    #[arg(long)]
    onnx: bool,
}

/// Runs `uop ops`.
pub fn ops(args: &OpsArgs) -> Result<(), CliError> {
    let filter = args.filter.as_deref().unwrap_or("");
    if args.onnx {
        print!("{}", onnx_listing(filter));
    } else {
        print!("{}", listing(filter));
    }
    Ok(())
}

/// The supported ONNX ops whose name contains `filter` (any case): `Name  opsets
/// A-B  what it becomes`, one a line.
pub fn onnx_listing(filter: &str) -> String {
    let filter = filter.to_lowercase();
    let rows: Vec<_> = uop_onnx::registry::OPS
        .iter()
        .filter(|o| o.name.to_lowercase().contains(&filter))
        .collect();
    let mut out = format!(
        "ONNX ops ({} of {}; default domain, opsets up to {}):\n",
        rows.len(),
        uop_onnx::registry::OPS.len(),
        uop_onnx::MAX_OPSET
    );
    let width = rows.iter().map(|o| o.name.len()).max().unwrap_or(0);
    for o in rows {
        let opsets = format!("{}-{}", o.since, uop_onnx::MAX_OPSET);
        out.push_str(&format!(
            "  {:<width$}  opsets {opsets:<5}  {}\n",
            o.name, o.uop
        ));
    }
    out
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
