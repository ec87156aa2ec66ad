//! Class 1 of issue 17: sizes that overflow. Every size, element count and
//! iteration count is checked; an overflow is an error naming the tensor and the
//! size expression, on every backend and under `uop grad`, never a panic, a crash
//! or a wrong answer. Each case checks the exit code, the message, that nothing
//! was printed on stdout and that nothing was written.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common;
use common::{scratch, stderr, stdout, uop_in};

const BACKENDS: [&str; 3] = ["interp", "loops", "cranelift"];

fn setup(test: &str, program: &str) -> PathBuf {
    let dir = scratch(test);
    fs::write(dir.join("p.uop"), program).expect("program");
    dir
}

/// Runs `uop ARGS` in `dir` and checks it fails cleanly with `message`.
fn fails_with(dir: &Path, args: &[&str], message: &str) {
    let o = uop_in(dir, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(
        err.contains(message),
        "{args:?}: wanted `{message}`, got: {err}"
    );
    assert!(stdout(&o).is_empty(), "{args:?} printed: {}", stdout(&o));
    let files: Vec<_> = fs::read_dir(dir).expect("dir").collect();
    assert_eq!(
        files.len(),
        1,
        "{args:?}: only the program is in the directory"
    );
}

fn run_args<'a>(backend: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "p.uop", "--backend", backend, "--output", "y=y.npy"];
    args.extend_from_slice(extra);
    args
}

#[test]
fn a_shape_whose_element_count_overflows_is_an_error_on_every_backend() {
    let dir = setup(
        "elements",
        "input a: f32[M, K]\n\
         y = reindex(a, [1099511627776, 1099511627776], [0, 0])\noutput y\n",
    );
    for backend in BACKENDS {
        fails_with(
            &dir,
            &run_args(backend, &["--random", "1", "--dim", "M=2", "--dim", "K=2"]),
            "the shape of `y`: `[1099511627776, 1099511627776]` is [1099511627776, \
             1099511627776], more than 9223372036854775807 elements",
        );
    }
}

#[test]
fn a_size_of_i64_max_is_refused_not_a_capacity_overflow() {
    let dir = setup(
        "i64max",
        "input a: f32[M, K]\ny = reindex(a, [9223372036854775807, K], [0, i1])\noutput y\n",
    );
    for backend in BACKENDS {
        fails_with(
            &dir,
            &run_args(backend, &["--random", "1", "--dim", "M=2", "--dim", "K=2"]),
            "the shape of `y`: `[9223372036854775807, K]` is [9223372036854775807, 2], more \
             than 9223372036854775807 elements",
        );
    }
}

#[test]
fn a_dim_whose_input_has_too_many_elements_is_refused() {
    let dir = setup("dim", "input a: f32[M, K]\ny = neg(a)\noutput y\n");
    fails_with(
        &dir,
        &run_args(
            "interp",
            &[
                "--random",
                "1",
                "--dim",
                "M=4611686018427387904",
                "--dim",
                "K=2",
            ],
        ),
        "the shape of `a`: `[M, K]` is [4611686018427387904, 2], more than \
         9223372036854775807 elements",
    );
}

#[test]
fn a_size_expression_that_overflows_names_the_tensor_and_the_expression() {
    let dir = setup(
        "expr",
        "input a: f32[M]\ny = reindex(a, [M * 4611686018427387904], [0])\noutput y\n",
    );
    for backend in BACKENDS {
        fails_with(
            &dir,
            &run_args(backend, &["--random", "1", "--dim", "M=4"]),
            "the shape of `y`: integer overflow in `4611686018427387904 * M`",
        );
    }
}

#[test]
fn a_negative_size_is_reported_as_negative_not_wrapped() {
    let dir = setup(
        "negative",
        "input a: f32[M]\ny = reindex(a, [M - 5], [i0])\noutput y\n",
    );
    for backend in BACKENDS {
        fails_with(
            &dir,
            &run_args(backend, &["--random", "1", "--dim", "M=2"]),
            "the shape of `y`: `M - 5` is -3, a negative size",
        );
    }
}

/// A sum over a 2^32 x 2^32 broadcast of one value: 2^64 iterations, which used to
/// wrap to 0 and print `[[0]]`.
const HUGE_SUM: &str = "input a: f64[N]\n\
    b = reindex(a, [4294967296, 4294967296], [0])\n\
    y = reduce_sum(b, [0, 1])\noutput y\n";

#[test]
fn a_reduction_of_two_to_the_64_terms_is_refused_not_summed_to_zero() {
    let dir = setup("reduction", HUGE_SUM);
    // The reference interpreter holds `b`: its shape is refused.
    fails_with(
        &dir,
        &run_args("interp", &["--random", "1", "--dim", "N=1"]),
        "the shape of `b`: `[4294967296, 4294967296]` is [4294967296, 4294967296], more \
         than 9223372036854775807 elements",
    );
    // The optimized loops never hold `b`: their iteration count is refused.
    for backend in ["loops", "cranelift"] {
        fails_with(
            &dir,
            &run_args(backend, &["--random", "1", "--dim", "N=1"]),
            "(computing `y`): the loops over 0..4294967296, 0..4294967296 run more than \
             9223372036854775807 iterations",
        );
    }
}

#[test]
fn an_iteration_count_that_overflows_is_refused_under_grad() {
    let dir = setup("grad", HUGE_SUM);
    for backend in ["loops", "cranelift"] {
        fails_with(
            &dir,
            &[
                "grad",
                "p.uop",
                "--backend",
                backend,
                "--random",
                "1",
                "--dim",
                "N=1",
            ],
            "run more than 9223372036854775807 iterations",
        );
    }
}

#[test]
fn a_dim_beyond_i64_is_not_an_integer() {
    let dir = setup("dimi64", "input a: f32[M]\ny = neg(a)\noutput y\n");
    fails_with(
        &dir,
        &run_args(
            "interp",
            &["--random", "1", "--dim", "M=9223372036854775808"],
        ),
        "--dim M: `9223372036854775808` is not an integer",
    );
}
