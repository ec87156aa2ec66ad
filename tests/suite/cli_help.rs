//! `uop --help`, `uop COMMAND --help` and `uop --version`: every command's help ends
//! with examples, and every example runs (they are read from the help text, so they
//! cannot go stale); the help names the default engine and the oracle.

use crate::common;
use common::{stderr, stdout, uop};

/// The commands whose `--help` must end with examples (`None`: `uop --help`).
const COMMANDS: [Option<&str>; 10] = [
    None,
    Some("run"),
    Some("print"),
    Some("ops"),
    Some("fuzz"),
    Some("stats"),
    Some("grad"),
    Some("emit"),
    Some("bench"),
    Some("import"),
];

/// The help text of `command`.
fn help(command: Option<&str>) -> String {
    let args: Vec<&str> = command.into_iter().chain(["--help"]).collect();
    let o = uop(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    stdout(&o)
}

/// The example command lines of a help text: the lines `  uop ...` after `Examples:`.
fn examples(help: &str) -> Vec<String> {
    let Some((_, after)) = help.split_once("\nExamples:\n") else {
        return vec![];
    };
    after
        .lines()
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn every_command_help_ends_with_one_or_two_examples_of_itself() {
    for command in COMMANDS {
        let text = help(command);
        let found = examples(&text);
        assert!(
            (1..=2).contains(&found.len()),
            "{command:?}: {found:?} in\n{text}"
        );
        let prefix = match command {
            Some(c) => format!("uop {c}"),
            None => "uop ".to_string(),
        };
        for line in &found {
            assert!(line.starts_with(&prefix), "{command:?}: {line}");
        }
    }
}

#[test]
fn every_example_in_the_help_runs() {
    for command in COMMANDS {
        for line in examples(&help(command)) {
            let words: Vec<&str> = line.split_whitespace().skip(1).collect();
            let o = uop(&words);
            assert_eq!(o.status.code(), Some(0), "`{line}`: {}", stderr(&o));
            assert!(!stdout(&o).is_empty(), "`{line}` printed nothing");
        }
    }
}

#[test]
fn version_prints_the_name_and_the_crate_version() {
    for flag in ["--version", "-V"] {
        let o = uop(&[flag]);
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(stdout(&o), "uop 0.1.0\n");
        assert_eq!(stderr(&o), "");
    }
}

#[test]
fn run_help_names_the_jit_default_and_the_interpreter_oracle() {
    let text = help(Some("run"));
    assert!(
        text.contains("`cranelift` (the default) JIT-compiles it"),
        "{text}"
    );
    assert!(
        text.contains("`interp` is the reference interpreter (the oracle"),
        "{text}"
    );
    let text = help(Some("grad"));
    assert!(text.contains("[default: cranelift]"), "{text}");
    assert!(text.contains("the oracle"), "{text}");
}
