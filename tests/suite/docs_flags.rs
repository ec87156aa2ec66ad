//! The command summaries in the docs cannot lag the command line: every flag of every
//! command's `--help` (clap's definitions) must appear in that command's synopsis in
//! the README and `docs/cli.md`, and in any other doc that shows a synopsis of it.
//!
//! A synopsis is a line of a fenced block starting with `uop COMMAND`, with the
//! indented lines that continue it.

use std::path::Path;

use crate::common;
use common::{stdout, uop};

/// The docs that must summarize every command.
const COMPLETE: &[&str] = &["README.md", "docs/cli.md"];

/// Docs with a synopsis of some commands, each of which must be complete.
const PARTIAL: &[&str] = &["docs/gradients.md"];

/// The commands `uop --help` lists (without `help`).
fn commands() -> Vec<String> {
    let help = stdout(&uop(&["--help"]));
    let (_, after) = help.split_once("Commands:\n").expect("a command list");
    after
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags of `uop COMMAND --help`, without `--help` and `--version`.
fn flags(command: &str) -> Vec<String> {
    let help = stdout(&uop(&[command, "--help"]));
    let mut out: Vec<String> = Vec::new();
    for line in help.lines().filter(|l| l.trim_start().starts_with('-')) {
        // Only the flag column (`-o, --output <FILE>`): the description may name others.
        let column = line.trim_start().split("  ").next().unwrap_or_default();
        for word in column.split(|c: char| c.is_whitespace() || c == ',') {
            if let Some(name) = word.strip_prefix("--") {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                let flag = format!("--{name}");
                if !name.is_empty()
                    && flag != "--help"
                    && flag != "--version"
                    && !out.contains(&flag)
                {
                    out.push(flag);
                }
            }
        }
    }
    out
}

/// The synopsis lines of `command` in the fenced blocks of `text`.
fn synopsis(text: &str, command: &str) -> String {
    let head = format!("uop {command}");
    let mut out = String::new();
    let mut in_block = false;
    let mut continuing = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            continuing = false;
            continue;
        }
        if !in_block {
            continue;
        }
        let starts = line
            .strip_prefix(&head)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '));
        if starts || (continuing && line.starts_with(' ') && !line.trim_start().starts_with("uop "))
        {
            out.push_str(line);
            out.push('\n');
            continuing = true;
        } else {
            continuing = false;
        }
    }
    out
}

/// Whether `text` mentions `flag` as a whole flag (`--dim` is not found in `--dims`).
fn mentions(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(at, _)| {
        text[at + flag.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-'))
    })
}

fn read(doc: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc)).expect("a doc")
}

#[test]
fn every_flag_of_every_command_is_in_the_summaries() {
    let commands = commands();
    assert!(commands.len() >= 8, "{commands:?}");
    let mut missing = Vec::new();
    for command in &commands {
        let flags = flags(command);
        for doc in COMPLETE.iter().chain(PARTIAL) {
            let summary = synopsis(&read(doc), command);
            if summary.is_empty() {
                if COMPLETE.contains(doc) {
                    missing.push(format!("{doc}: no synopsis of `uop {command}`"));
                }
                continue;
            }
            for flag in &flags {
                if !mentions(&summary, flag) {
                    missing.push(format!("{doc}: `uop {command}` lacks {flag}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the summaries lag --help:\n{}",
        missing.join("\n")
    );
}

#[test]
fn flags_are_read_from_the_help_and_synopses_from_blocks() {
    let run = flags("run");
    for f in ["--input", "--dim", "--random", "--backend", "--streams"] {
        assert!(run.contains(&f.to_string()), "{run:?}");
    }
    let text = "x\n```text\nuop run F [--a]\n        [--b]\nuop runner [--c]\n```\nuop run [--d]\n";
    assert_eq!(synopsis(text, "run"), "uop run F [--a]\n        [--b]\n");
    assert!(mentions("[--dim NAME]", "--dim") && !mentions("[--dims]", "--dim"));
}
