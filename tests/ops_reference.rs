//! `docs/ops.md`, the reference table of every op, is printed from the code: its
//! signature and doc from the registry, and its definition in micro ops from the
//! smallest golden case that calls it, parsed and printed back as micro ops. This
//! test fails when the file drifts; `UOP_UPDATE_DOCS=1 cargo test --release --test
//! ops_reference` rewrites it.

use std::path::{Path, PathBuf};

use uop::codegen::text::{micro_ops, parse_program, print_program};

fn golden_programs() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cases");
    let mut out = Vec::new();
    let mut groups: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("golden cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    groups.sort();
    for group in groups {
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&group)
            .expect("group")
            .map(|e| e.expect("entry").path())
            .collect();
        cases.sort();
        for case in cases {
            if let Ok(text) = std::fs::read_to_string(case.join("program.uop")) {
                let name = case
                    .strip_prefix(&root)
                    .expect("under root")
                    .to_string_lossy()
                    .into_owned();
                out.push((name, text));
            }
        }
    }
    out
}

/// True when `text` calls `op` (not merely contains it inside a longer name).
fn calls(text: &str, op: &str) -> bool {
    let pattern = format!("{op}(");
    text.match_indices(&pattern).any(|(at, _)| {
        !text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn reference() -> String {
    let registry = uop::ops::registry();
    let programs = golden_programs();
    let mut md = String::from(
        "# Op reference\n\n\
         Generated from the code (`UOP_UPDATE_DOCS=1 cargo test --release --test ops_reference`);\n\
         a test fails when this file and the code disagree. `uop ops` prints the same list.\n\n\
         ## Micro ops\n\n| signature | meaning |\n|---|---|\n",
    );
    for m in micro_ops() {
        md.push_str(&format!("| `{}` | {} |\n", m.signature, m.doc));
    }
    md.push_str(
        "\n## Macro ops\n\nEach op with its signature (defaults shown), what it computes, and its\n\
         definition in micro ops on the smallest golden case that calls it.\n",
    );
    for op in registry.iter() {
        md.push_str(&format!("\n### `{}`\n\n{}\n\n", op.signature, op.doc));
        let example = programs
            .iter()
            .filter(|(_, text)| calls(text, &op.name))
            .min_by_key(|(name, text)| {
                (
                    text.lines().filter(|l| !l.starts_with('#')).count(),
                    name.clone(),
                )
            });
        let Some((case, text)) = example else {
            md.push_str("(no golden case)\n");
            continue;
        };
        let program = parse_program(text, &registry)
            .unwrap_or_else(|e| panic!("golden case {case} does not parse: {e}"));
        let source: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
        md.push_str(&format!(
            "Golden case `{case}`:\n\n```\n{source}```\n\nIn micro ops:\n\n```\n{}```\n",
            print_program(&program)
        ));
    }
    md
}

#[test]
fn the_op_reference_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ops.md");
    let fresh = reference();
    if std::env::var_os("UOP_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &fresh).expect("write docs/ops.md");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == fresh,
        "docs/ops.md is out of date: run `UOP_UPDATE_DOCS=1 cargo test --release --test ops_reference`"
    );
}
