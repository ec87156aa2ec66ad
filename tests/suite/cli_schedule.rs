//! `uop print --stage schedule` (issue 21): the static schedule of the prepared graph
//! as text and as DOT, `--streams N`, and clear errors for misused flags.

use crate::common;
use common::{scratch, stderr, stdout, uop};

const DIAMOND: &str = "\
input x: f32[4]
n1 = exp(x)
n2 = sin(n1)
n3 = cos(n1)
n4 = add(n2, n3)
output n4
";

/// Writes the diamond into a scratch directory and returns its path.
fn diamond(test: &str) -> String {
    let dir = scratch(test);
    let path = dir.join("diamond.uop");
    std::fs::write(&path, DIAMOND).expect("written");
    path.display().to_string()
}

#[test]
fn print_stage_schedule_shows_streams_steps_and_ranks() {
    let file = diamond("schedule_text");
    let o = uop(&[
        "print",
        &file,
        "--stage",
        "schedule",
        "--disable-pass",
        "kernels",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "schedule: 2 streams, 2 signals\n\
         stream 0:\n  run %2 exp  rank 2\n  signal s0\n  run %3 sin  rank 1\n  wait s1\n  run %5 add  rank 0\n\
         stream 1:\n  wait s0\n  run %4 cos  rank 1\n  signal s1\n"
    );
}

#[test]
fn print_stage_schedule_with_one_stream_has_no_signals() {
    let file = diamond("schedule_one");
    let o = uop(&[
        "print",
        &file,
        "--stage",
        "schedule",
        "--disable-pass",
        "kernels",
        "--streams",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "schedule: 1 stream, 0 signals\nstream 0:\n  run %2 exp  rank 2\n  run %3 sin  rank 1\n  \
         run %4 cos  rank 1\n  run %5 add  rank 0\n"
    );
}

#[test]
fn print_stage_schedule_dot_colours_streams_and_dashes_signals() {
    let file = diamond("schedule_dot");
    let o = uop(&[
        "print",
        &file,
        "--stage",
        "schedule",
        "--disable-pass",
        "kernels",
        "--dot",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dot = stdout(&o);
    assert!(dot.starts_with("digraph schedule {\n"), "{dot}");
    assert!(
        dot.contains("n2 [label=\"%2 exp\\nstream 0, rank 2\", fillcolor=lightblue];"),
        "{dot}"
    );
    assert!(
        dot.contains("n4 [label=\"%4 cos\\nstream 1, rank 1\", fillcolor=lightsalmon];"),
        "{dot}"
    );
    assert!(
        dot.contains("  n2 -> n4 [style=dashed, label=\"s0\"];\n"),
        "{dot}"
    );
    assert!(dot.ends_with("}\n"), "{dot}");
}

#[test]
fn schedule_flags_at_another_stage_and_zero_streams_are_errors() {
    let file = diamond("schedule_errors");
    let o = uop(&["print", &file, "--stage", "graph", "--dot"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: --dot applies to --stage schedule"),
        "{}",
        stderr(&o)
    );
    let o = uop(&["print", &file, "--stage", "schedule", "--streams", "0"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("error: --streams: a schedule needs at least one stream"),
        "{}",
        stderr(&o)
    );
}
