//! Options that conflict or name nothing, and messages that must say what is wrong:
//! each case checks the exit code and the message, and that nothing was written.

use std::fs;

use crate::common;
use common::{scratch, stderr, stdout, uop_in};

const PROG: &str = "param p\ninput x: f32[N]\ninput y: f32[N]\ns = mul(add(x, y), $p)\noutput s\n";

fn setup(test: &str) -> std::path::PathBuf {
    let dir = scratch(test);
    fs::write(dir.join("p.uop"), PROG).expect("program");
    dir
}

fn fails_with(dir: &std::path::Path, args: &[&str], message: &str) {
    let o = uop_in(dir, args);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    assert!(
        stderr(&o).contains(message),
        "{args:?}: wanted `{message}`, got: {}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "{args:?} printed: {}", stdout(&o));
}

#[test]
fn a_name_given_twice_to_one_flag_is_an_error() {
    let dir = setup("repeated");
    let base = ["run", "p.uop", "--random", "1", "--dim", "N=2"];
    let cases: [(&[&str], &str); 4] = [
        (
            &["--param", "p=2", "--param", "p=3"],
            "--param p is given more than once",
        ),
        (
            &["--param", "p=2", "--dim", "N=3"],
            "--dim N is given more than once",
        ),
        (
            &["--param", "p=2", "--input", "x=a.npy", "--input", "x=b.npy"],
            "--input x is given more than once",
        ),
        (
            &[
                "--param", "p=2", "--output", "s=a.npy", "--output", "s=b.npy",
            ],
            "--output s is given more than once",
        ),
    ];
    for (extra, message) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        fails_with(&dir, &args, message);
    }
    let written: Vec<_> = fs::read_dir(&dir).expect("dir").collect();
    assert_eq!(written.len(), 1, "only the program is in the directory");
}

#[test]
fn an_unknown_dim_is_an_error_like_an_unknown_param() {
    let dir = setup("unknown-dim");
    fails_with(
        &dir,
        &[
            "run", "p.uop", "--random", "1", "--dim", "N=2", "--dim", "Q=3", "--param", "p=1",
        ],
        "--dim Q: the program has no dimension `Q` (it has: N)",
    );
    fails_with(
        &dir,
        &[
            "run", "p.uop", "--random", "1", "--dim", "N=2", "--param", "q=1",
        ],
        "--param q",
    );
}

#[test]
fn a_repeated_reduce_axis_is_reported_as_repeated() {
    let dir = scratch("repeated-axis");
    fs::write(
        dir.join("r.uop"),
        "input x: f32[N, M]\ny = reduce_sum(x, [1, 1])\noutput y\n",
    )
    .expect("program");
    fails_with(
        &dir,
        &["print", "r.uop"],
        "reduce_sum: axis 1 is listed more than once (line 2, column 19)",
    );
}

#[test]
fn full_checks_is_refused_where_it_would_be_ignored() {
    let dir = setup("full-checks");
    for target in ["object", "clif", "header"] {
        fails_with(
            &dir,
            &[
                "emit",
                "p.uop",
                "--target",
                target,
                "-o",
                "k.out",
                "--full-checks",
            ],
            "--full-checks is supported for --target rust only",
        );
    }
    assert!(!dir.join("k.out").exists());
}

#[test]
fn emit_grad_of_a_chunked_graph_sums_over_chunks_and_tape_applies_to_graphs_only() {
    let dir = setup("emit-grad-graph");
    // The weights' gradients are sums over the chunks, added up in the chunk loop.
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/graphs/chunked_mlp.uop"
    );
    fs::copy(example, dir.join("chunked.uop")).expect("graph");
    let o = uop_in(&dir, &["emit", "chunked.uop", "--grad", "-o", "g.rs"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rust = fs::read_to_string(dir.join("g.rs")).expect("written");
    assert!(
        rust.contains("pub fn chunked_grad_with_loop_ends("),
        "{rust}"
    );
    assert!(rust.contains("rt::graph::accumulate("), "{rust}");
    fs::remove_file(dir.join("g.rs")).expect("removed");
    fails_with(
        &dir,
        &["emit", "p.uop", "--tape", "recompute", "-o", "g.rs"],
        "--tape applies to the gradients of graphs with `while` loops",
    );
    assert!(!dir.join("g.rs").exists());
}

#[test]
fn emit_grad_passes_a_dim_no_input_of_a_kernel_carries_as_a_param() {
    let dir = setup("emit-grad-rows");
    // The gradient of a `parallel` row read: `reindex_reduce(.., [R, N], [$i, i0])`
    // on an `[N]` input, whose kernel gets `R` as `$dim_R` from the graph's sizes.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/graphs/rows.uop");
    fs::copy(example, dir.join("rows.uop")).expect("graph");
    let o = uop_in(&dir, &["emit", "rows.uop", "--grad", "-o", "g.rs"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rust = fs::read_to_string(dir.join("g.rs")).expect("written");
    assert!(rust.contains("pub fn rows_grad("), "{rust}");
    assert!(rust.contains("    dim_r: i64,\n"), "{rust}");
    assert!(rust.contains("pub dim_r_param: i64,"), "{rust}");
}
