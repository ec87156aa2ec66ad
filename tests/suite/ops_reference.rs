//! `docs/ops.md`, the reference table of every op, is printed from the code: its
//! signature and doc from the registry, and its definition in micro ops from the
//! smallest golden case that calls it, parsed and printed back as micro ops. The
//! table of what the optimizer does to each op in `docs/optimizer.md` (blocks and
//! temporaries before and after, from `pass::stats` on the same case) is generated here too,
//! between its `<!-- op-stats -->` markers. The test fails when either drifts;
//! `UOP_UPDATE_DOCS=1 cargo test --profile fast-build --test suite ops_reference::` rewrites them.

use std::path::{Path, PathBuf};

use std::collections::HashMap;

use uop::codegen::pass::{self, PassOptions, Stats};
use uop::codegen::text::{micro_ops, parse_program, print_program};
use uop::codegen::uop::Program;
use uop::codegen::{loops, text::Registry};
use uop::npy::read_npy;

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

/// The smallest golden case calling `op`: (case name, program text).
fn example<'a>(programs: &'a [(String, String)], op: &str) -> Option<&'a (String, String)> {
    programs
        .iter()
        .filter(|(_, text)| calls(text, op))
        .min_by_key(|(name, text)| {
            (
                text.lines().filter(|l| !l.starts_with('#')).count(),
                name.clone(),
            )
        })
}

fn parse(case: &str, text: &str, registry: &Registry) -> Program {
    parse_program(text, registry)
        .unwrap_or_else(|e| panic!("golden case {case} does not parse: {e}"))
}

fn reference() -> String {
    let registry = uop::ops::registry();
    let programs = golden_programs();
    let mut md = String::from(
        "# Op reference\n\n\
         Generated from the code (`UOP_UPDATE_DOCS=1 cargo test --profile fast-build --test suite ops_reference::`);\n\
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
        let example = example(&programs, &op.name);
        let Some((case, text)) = example else {
            md.push_str("(no golden case)\n");
            continue;
        };
        let program = parse(case, text, &registry);
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

/// Blocks and temporaries of an op's golden case before and after optimization, with
/// sizes from the case's input files.
fn case_stats(case: &str, program: &Program) -> (Stats, Stats) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/cases")
        .join(case);
    let shapes: Vec<Vec<usize>> = program
        .inputs
        .iter()
        .map(|i| {
            let file = dir
                .join("inputs")
                .join(format!("{}.npy", program.node(*i).name));
            read_npy(&file).expect("golden input").shape
        })
        .collect();
    let params: HashMap<String, i64> = std::fs::read_to_string(dir.join("params.txt"))
        .map(|t| {
            t.lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().parse().expect("int")))
                .collect()
        })
        .unwrap_or_default();
    let slices: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let dims = program.bind(&slices, &params).expect("case binds").names;
    let lowered = loops::lower(program);
    let optimized = pass::optimize(&lowered, &PassOptions::default()).expect("pipeline");
    (
        pass::stats(&lowered, &dims, &params),
        pass::stats(&optimized, &dims, &params),
    )
}

fn stats_table() -> String {
    let registry = uop::ops::registry();
    let programs = golden_programs();
    let mut md = String::from(
        "| op | golden case | blocks | temporaries | temporary bytes |\n|---|---|---|---|---|\n",
    );
    for op in registry.iter() {
        let Some((case, text)) = example(&programs, &op.name) else {
            continue;
        };
        let (before, after) = case_stats(case, &parse(case, text, &registry));
        let bytes = |s: &Stats| s.temp_bytes.map_or("?".into(), |b| b.to_string());
        md.push_str(&format!(
            "| `{}` | `{case}` | {} → {} | {} → {} | {} → {} |\n",
            op.name,
            before.blocks,
            after.blocks,
            before.temporaries,
            after.temporaries,
            bytes(&before),
            bytes(&after),
        ));
    }
    md
}

const BEGIN: &str = "<!-- op-stats:begin -->\n";
const END: &str = "<!-- op-stats:end -->";

#[test]
fn the_optimizer_doc_stats_table_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/optimizer.md");
    let doc = std::fs::read_to_string(&path).expect("docs/optimizer.md");
    let (Some(start), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("docs/optimizer.md lacks the {BEGIN:?} / {END:?} markers");
    };
    let fresh = format!("{}{BEGIN}{}{}", &doc[..start], stats_table(), &doc[end..]);
    if std::env::var_os("UOP_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &fresh).expect("write docs/optimizer.md");
        return;
    }
    assert!(
        doc == fresh,
        "the op stats table in docs/optimizer.md is out of date: run `UOP_UPDATE_DOCS=1 cargo test --profile fast-build --test suite ops_reference::`"
    );
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
        "docs/ops.md is out of date: run `UOP_UPDATE_DOCS=1 cargo test --profile fast-build --test suite ops_reference::`"
    );
}
