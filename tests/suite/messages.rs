//! Class 5 of issue 17 (the leftovers): messages that used to mislead, and
//! `argmax` / `argmin` over an empty axis, which is an error on every backend as in
//! numpy and torch. Each case checks the exit code, the message and that nothing
//! panicked.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common;
use common::{scratch, stderr, stdout, uop_in};

fn setup(test: &str, program: &[u8]) -> PathBuf {
    let dir = scratch(test);
    fs::write(dir.join("p.uop"), program).expect("program");
    dir
}

fn fails_with(dir: &Path, args: &[&str], message: &str) -> String {
    let o = uop_in(dir, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(
        err.contains(message),
        "{args:?}: wanted `{message}`, got: {err}"
    );
    assert!(stdout(&o).is_empty(), "{args:?} printed: {}", stdout(&o));
    err
}

#[test]
fn argmax_over_an_empty_axis_is_an_error_on_every_backend() {
    for op in ["reduce_argmax", "reduce_argmin"] {
        let program = format!("input x: f32[N, K]\ny = {op}(x, [1])\noutput y\n");
        let dir = setup(op, program.as_bytes());
        let base = [
            "run", "p.uop", "--random", "1", "--dim", "N=2", "--dim", "K=0",
        ];
        let name = op.trim_start_matches("reduce_");
        let mut args = base.to_vec();
        args.extend(["--backend", "interp"]);
        fails_with(
            &dir,
            &args,
            &format!("`y`: {name} over axis 1, whose size `K` is 0: an empty axis has no {name}"),
        );
        for backend in ["loops", "cranelift"] {
            let mut args = base.to_vec();
            args.extend(["--backend", backend]);
            fails_with(
                &dir,
                &args,
                "argmax / argmin over an empty axis: its size `K` is 0",
            );
        }
        // A non-empty axis still runs.
        let o = uop_in(
            &dir,
            &[
                "run", "p.uop", "--random", "1", "--dim", "N=2", "--dim", "K=3",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
}

#[test]
fn a_flat_sum_too_long_is_called_a_chain_not_nesting() {
    let terms = vec!["i0"; 300].join(" + ");
    let program = format!("input x: f32[N]\ny = reindex(x, [N], [{terms}])\noutput y\n");
    let dir = setup("chain", program.as_bytes());
    fails_with(
        &dir,
        &["print", "p.uop"],
        "at most 256 terms in one chain of `+ -` or `* / %`",
    );
}

#[test]
fn an_unfinished_assert_is_reported_on_its_own_line() {
    let dir = setup(
        "assert",
        b"input x: f32[M]\nassert M ==\ny = neg(x)\noutput y\n",
    );
    fails_with(
        &dir,
        &["print", "p.uop"],
        "expected a size expression after `==`, found end of line (line 2, column 12)",
    );
}

#[test]
fn a_byte_order_mark_is_skipped_and_a_non_utf8_byte_has_a_position() {
    let dir = setup(
        "bom",
        b"\xEF\xBB\xBFinput x: f32[N]\ny = neg(x)\noutput y\n",
    );
    let o = uop_in(&dir, &["run", "p.uop", "--random", "1", "--dim", "N=2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dir = setup("utf8", b"input x: f32[N]\ny = neg(x) # caf\xE9\noutput y\n");
    fails_with(
        &dir,
        &["print", "p.uop"],
        "p.uop:2:17: the file is not UTF-8 text (byte 0xe9 at offset 32)",
    );
}

#[test]
fn the_caret_keeps_the_tabs_of_the_line() {
    let dir = setup("tabs", b"input x: f32[N]\n\ty =\tnoop(x)\noutput y\n");
    let err = fails_with(&dir, &["print", "p.uop"], "noop");
    let caret = err
        .lines()
        .find(|l| l.trim_end().ends_with('^'))
        .expect("a caret line");
    assert!(caret.ends_with("| \t   \t^"), "{caret:?}");
}

#[test]
fn an_object_npy_is_named_as_such() {
    let dir = setup("object", b"input x: f32[N]\ny = neg(x)\noutput y\n");
    let dict = b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }          \n";
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((dict.len() as u16).to_le_bytes());
    bytes.extend(dict);
    bytes.extend([0u8; 16]);
    fs::write(dir.join("x.npy"), bytes).expect("fixture");
    let o = uop_in(&dir, &["run", "p.uop", "--input", "x=x.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("dtype object ('|O': Python objects, saved with pickling)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn stats_reports_an_overflowing_size_instead_of_a_question_mark() {
    let dir = setup(
        "stats",
        b"input x: f32[N]\nt = reindex(x, [N, N], [i0])\ny = reduce_sum(exp(t), [1])\noutput y\n",
    );
    fails_with(
        &dir,
        &["stats", "p.uop", "--dim", "N=4294967296"],
        "more than 9223372036854775807 elements",
    );
    let o = uop_in(&dir, &["stats", "p.uop", "--dim", "N=4"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains('?'), "{}", stdout(&o));
}
