//! The README runs as written, so it cannot go stale.
//!
//! The rules (the README states them under "Keeping this README true"):
//!
//! - Every line of a ```` ```sh ```` block that is not blank and not a `# comment` is a
//!   command. A `uop ...` command is run with the `uop` binary built for the tests, and
//!   so is `cargo run -- ...` (that is what it runs); each must exit 0. The
//!   others build, install or test uop and cannot run inside a test: they must be
//!   exactly [`NOT_RUN`], in order, so adding one is a deliberate change here.
//! - A ```` ```console ```` block holds `$ uop ...` commands, each followed by the
//!   exact standard output it prints.
//! - Commands run in document order in one scratch directory holding a copy of
//!   `examples/`, so files a command writes land there and later
//!   commands can read them.
//! - ```` ```rust ```` blocks are doc tests of the `uop` crate (`src/lib.rs` includes
//!   the README under `cfg(doctest)`); a ```` ```rust,ignore ```` block, or a
//!   ```` ```text ```` block quoting a file, is preceded by `<!-- excerpt: PATH -->`
//!   and must appear verbatim in that file (which the workspace builds or runs).
//! - ```` ```toml ```` blocks are manifests shown to the reader (how to depend on uop);
//!   `tests/suite/packaging.rs` checks that the crates they name package.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The README's commands that are not run here: they build, install or test uop.
const NOT_RUN: &[&str] = &[
    "cargo test --workspace --profile fast-build --features uop/prebuilt",
    "cargo install --path .",
    "cargo test --profile fast-build --test suite cli::",
    "cargo test -p uop-codegen --profile fast-build",
    "cargo run -p uop-example-build-time",
    "cargo test -p uop-example-build-time",
    "cargo run --release --example custom_op",
];

/// How `cargo run` is spelled in the README; the rest of the line is `uop`'s arguments.
const CARGO_RUN: &str = "cargo run -- ";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

/// A fenced block of the README.
#[derive(Debug)]
struct Block {
    /// The info string after the opening fence (`sh`, `rust,ignore`, ...).
    info: String,
    /// The path of an `<!-- excerpt: PATH -->` line right before the fence.
    excerpt: Option<String>,
    /// The lines between the fences, each with its newline.
    body: String,
    /// The line of the opening fence (1-based), for messages.
    line: usize,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    let mut previous = "";
    while let Some((n, line)) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let excerpt = previous
                .strip_prefix("<!-- excerpt: ")
                .and_then(|rest| rest.strip_suffix(" -->"))
                .map(str::to_string);
            let mut body = String::new();
            let mut closed = false;
            for (_, inner) in lines.by_ref() {
                if inner.starts_with("```") {
                    closed = true;
                    break;
                }
                body.push_str(inner);
                body.push('\n');
            }
            assert!(closed, "README.md:{}: the block is not closed", n + 1);
            out.push(Block {
                info: info.to_string(),
                excerpt,
                body,
                line: n + 1,
            });
            previous = "";
        } else {
            previous = line;
        }
    }
    out
}

/// One command of the README and what it must print (for `console` blocks).
#[derive(Debug)]
struct Step {
    command: String,
    expected_stdout: Option<String>,
    line: usize,
}

/// The commands of `sh` and `console` blocks, in document order.
fn steps(blocks: &[Block]) -> Vec<Step> {
    let mut out = Vec::new();
    for b in blocks {
        match b.info.as_str() {
            "sh" => {
                for (i, line) in b.body.lines().enumerate() {
                    let line = line.trim();
                    if !line.is_empty() && !line.starts_with('#') {
                        out.push(Step {
                            command: line.to_string(),
                            expected_stdout: None,
                            line: b.line + 1 + i,
                        });
                    }
                }
            }
            "console" => {
                for (i, line) in b.body.lines().enumerate() {
                    if let Some(command) = line.strip_prefix("$ ") {
                        out.push(Step {
                            command: command.to_string(),
                            expected_stdout: Some(String::new()),
                            line: b.line + 1 + i,
                        });
                    } else {
                        let step =
                            out.last_mut()
                                .filter(|s| s.line > b.line)
                                .unwrap_or_else(|| {
                                    panic!(
                                        "README.md:{}: console output before any `$ ` command",
                                        b.line + 1 + i
                                    )
                                });
                        let expected = step.expected_stdout.as_mut().expect("a console step");
                        expected.push_str(line);
                        expected.push('\n');
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The arguments of `uop` for a command the test runs, or `None` for one it does not.
fn uop_args(command: &str) -> Option<Vec<String>> {
    let rest = command
        .strip_prefix("uop ")
        .or_else(|| command.strip_prefix(CARGO_RUN))?;
    assert!(
        !rest.contains(['\'', '"', '`', '|', '>', '<', ';', '&', '*', '\\']),
        "`{command}`: README commands are plain words (no quotes, pipes, redirections or globs), \
         so that the test runs them exactly as a shell would"
    );
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Copies the directory `from` into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a scratch directory");
    for entry in std::fs::read_dir(from).expect("read a directory") {
        let entry = entry.expect("a directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// A fresh directory with a copy of `examples/`.
fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("clear the scratch directory");
    }
    copy_dir(&root().join("examples"), &dir.join("examples"));
    dir
}

#[test]
fn every_block_has_a_known_language() {
    for b in blocks(&readme()) {
        match (b.info.as_str(), &b.excerpt) {
            ("sh" | "console" | "rust" | "text" | "toml", _) | ("rust,ignore", Some(_)) => {}
            ("rust,ignore", None) => panic!(
                "README.md:{}: a `rust,ignore` block must quote a file the workspace compiles \
                 (`<!-- excerpt: PATH -->` on the line before it)",
                b.line
            ),
            (other, _) => panic!(
                "README.md:{}: block language `{other}`: use sh, console, text, toml, rust or \
                 rust,ignore (a block without one would be compiled as a Rust doc test)",
                b.line
            ),
        }
    }
}

#[test]
fn excerpts_appear_verbatim_in_their_files() {
    let quoted: Vec<Block> = blocks(&readme())
        .into_iter()
        .filter(|b| b.excerpt.is_some())
        .collect();
    assert!(quoted.len() >= 4, "the README quotes its example files");
    for b in quoted {
        let path = b.excerpt.as_deref().expect("an excerpt");
        let file = std::fs::read_to_string(root().join(path))
            .unwrap_or_else(|e| panic!("README.md:{}: excerpt of {path}: {e}", b.line));
        assert!(
            file.contains(&b.body),
            "README.md:{}: this block is no longer in {path}; copy it again:\n{}",
            b.line,
            b.body
        );
    }
}

#[test]
fn the_commands_not_run_are_exactly_the_listed_ones() {
    let blocks = blocks(&readme());
    let not_run: Vec<String> = steps(&blocks)
        .into_iter()
        .filter(|s| uop_args(&s.command).is_none())
        .map(|s| {
            assert!(
                s.expected_stdout.is_none(),
                "README.md:{}: a console block may only show `uop` commands",
                s.line
            );
            s.command
        })
        .collect();
    assert_eq!(not_run, NOT_RUN);
}

#[test]
fn the_readme_opens_with_the_first_run_and_the_command_ci_runs() {
    let blocks = blocks(&readme());
    let first = blocks.first().expect("the README has blocks");
    let commands: Vec<&str> = first.body.lines().collect();
    assert_eq!(first.info, "sh");
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(commands[0].starts_with("cargo run -- run examples/"));
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let ci_test = ci
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .expect(".ci/run has commands");
    assert_eq!(
        commands[1], ci_test,
        "the README and .ci/run run one test command"
    );
}

#[test]
fn the_rust_blocks_are_doc_tests() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    assert!(lib.contains("#[cfg(doctest)]") && lib.contains("include_str!(\"../README.md\")"));
    let rust = blocks(&readme())
        .into_iter()
        .filter(|b| b.info == "rust")
        .count();
    assert!(
        rust >= 2,
        "the README shows the JIT and the graph API in Rust"
    );
}

#[test]
fn every_command_runs_and_prints_what_the_readme_shows() {
    let dir = scratch();
    let steps = steps(&blocks(&readme()));
    let mut ran = 0;
    for step in &steps {
        let Some(args) = uop_args(&step.command) else {
            continue;
        };
        let out = Command::new(env!("CARGO_BIN_EXE_uop"))
            .args(&args)
            .current_dir(&dir)
            .output()
            .expect("uop runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "README.md:{}: `{}` failed:\n{}",
            step.line,
            step.command,
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some(expected) = &step.expected_stdout {
            assert_eq!(
                &stdout, expected,
                "README.md:{}: `{}` prints something else than the README shows",
                step.line, step.command
            );
        }
        ran += 1;
    }
    assert!(ran >= 20, "only {ran} README commands ran");
}
