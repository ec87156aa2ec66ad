//! The one error convention of the `uop` command (docs/cli.md): every failure's first
//! line on stderr is `error: ...`; a command line that does not parse exits with 2
//! (clap's usage hint after the first line), any other failure with 1 and one line
//! (plus the caret rendering for source errors); nothing is printed on stdout.

use crate::common;
use common::{stderr, stdout, uop};

/// Asserts a usage error: exit code 2, `first` as the first line, a pointer to
/// `--help` after it, nothing on stdout.
fn usage_error(args: &[&str], first: &str) {
    let o = uop(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().next(), Some(first), "{args:?}: {err}");
    assert!(err.contains("--help"), "{args:?}: {err}");
    assert_eq!(stdout(&o), "", "{args:?}");
}

#[test]
fn command_lines_that_do_not_parse_exit_2_with_an_error_line_first() {
    usage_error(&[], "error: a command is required");
    usage_error(
        &["frobnicate"],
        "error: unrecognized subcommand 'frobnicate'",
    );
    usage_error(
        &["run", "examples/programs/matmul.uop", "--bogus"],
        "error: unexpected argument '--bogus' found",
    );
    usage_error(
        &["run"],
        "error: the following required arguments were not provided:",
    );
    usage_error(
        &["run", "examples/programs/matmul.uop", "--backend", "fast"],
        "error: invalid value 'fast' for '--backend <BACKEND>'",
    );
    usage_error(
        &["fuzz", "--cases", "many"],
        "error: invalid value 'many' for '--cases <N>': invalid digit found in string",
    );
    usage_error(
        &[
            "run",
            "examples/programs/matmul.uop",
            "--save-inputs",
            "dir",
        ],
        "error: the following required arguments were not provided:",
    );
}

#[test]
fn failures_of_a_command_exit_1_with_one_error_line() {
    let cases: [(&[&str], &str); 3] = [
        (
            &["run", "no/such/file.uop"],
            "error: cannot read no/such/file.uop: No such file or directory (os error 2)\n",
        ),
        (
            &["run", "examples/programs/matmul.uop", "--param", "p"],
            "error: --param expects NAME=VALUE, got `p`\n",
        ),
        (
            &["run", "examples/programs/matmul.uop"],
            "error: input `a` is not given: pass --input a=FILE.npy, or --random SEED for random data\n",
        ),
    ];
    for (args, message) in cases {
        let o = uop(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&o), message, "{args:?}");
        assert_eq!(stdout(&o), "", "{args:?}");
    }
}

#[test]
fn help_is_not_an_error() {
    let o = uop(&["run", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("Run a program"), "{}", stdout(&o));
    assert_eq!(stderr(&o), "");
}
