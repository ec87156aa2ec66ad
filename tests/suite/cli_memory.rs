//! `uop print --stage memory`: the memory plan of a prepared graph for the sizes
//! `--dim` gives, and clear errors for a missing or unknown dim.

use crate::common;
use common::{stderr, stdout, uop};

#[test]
fn print_stage_memory_gives_every_buffer_and_the_three_numbers() {
    let o = uop(&[
        "print",
        "examples/graphs/mlp.uop",
        "--stage",
        "memory",
        "--dim",
        "B=64",
        "--dim",
        "D=784",
        "--dim",
        "H=256",
        "--dim",
        "O=10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "\
# memory plan for B=64, D=784, H=256, O=10 (bytes; every buffer at a multiple of 64)
value  type       bytes  offset  steps  shares
%11    f32[B, H]  65536       0  0..1
%12    f32[B, H]  65536   65536  1..2
sum of intermediates  131072
planned arena         131072  (best fit, largest first)
lower bound           131072
"
    );
}

#[test]
fn print_stage_memory_of_a_loop_shows_the_carried_state() {
    let o = uop(&[
        "print",
        "examples/graphs/power_loop.uop",
        "--stage",
        "memory",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("while %9 state 0: in place at 0"), "{text}");
    assert!(text.contains("while %9 state 1: in place at 64"), "{text}");
    assert!(text.ends_with("sum of intermediates  512\nplanned arena         192  (best fit, largest first)\nlower bound           192\n"), "{text}");
}

#[test]
fn a_missing_or_unknown_dim_is_a_clear_error() {
    let file = "examples/graphs/mlp.uop";
    let o = uop(&["print", file, "--stage", "memory", "--dim", "B=2"]);
    assert!(!o.status.success());
    assert_eq!(
        stderr(&o),
        "error: --stage memory: %11 (f32[B, H]): the size `H` has no value: pass --dim H=SIZE\n"
    );
    let o = uop(&["print", file, "--stage", "memory", "--dim", "Q=2"]);
    assert_eq!(
        stderr(&o),
        "error: --dim Q: the graph has no dimension `Q` (it has: B, D, H, O)\n"
    );
    let o = uop(&["print", file, "--stage", "memory", "--dim", "B=-1"]);
    assert!(
        stderr(&o).contains("a size cannot be negative"),
        "{}",
        stderr(&o)
    );
    let o = uop(&["print", file, "--stage", "prepared", "--dim", "B=2"]);
    assert_eq!(stderr(&o), "error: --dim applies to --stage memory\n");
}
