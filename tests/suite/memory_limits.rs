//! Class 2 of issue 17: memory that cannot be had. The bytes of every input, output
//! and temporary are accounted before anything is allocated; work that needs more
//! than the memory limit (`--max-memory`, by default the machine's available
//! memory) is refused with a message saying how much it needs, and reads are
//! bounded by what the format allows. Never an abort.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common;
use common::{scratch, stderr, stdout, uop, uop_in};

fn setup(test: &str, program: &str) -> PathBuf {
    let dir = scratch(test);
    fs::write(dir.join("p.uop"), program).expect("program");
    dir
}

/// Runs `uop ARGS` in `dir`, checks it fails cleanly with `message` and returns stderr.
fn fails_with(dir: &Path, args: &[&str], message: &str) -> String {
    let o = uop_in(dir, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(
        !err.contains("memory allocation"),
        "{args:?} aborted: {err}"
    );
    assert!(
        err.contains(message),
        "{args:?}: wanted `{message}`, got: {err}"
    );
    assert!(stdout(&o).is_empty(), "{args:?} printed: {}", stdout(&o));
    err
}

#[test]
fn a_matmul_of_a_hundred_thousand_cubed_is_refused_before_allocating() {
    let args = [
        "run",
        "examples/programs/matmul.uop",
        "--random",
        "1",
        "--dim",
        "M=100000",
        "--dim",
        "K=100000",
        "--dim",
        "N=100000",
    ];
    for backend in ["interp", "loops", "cranelift"] {
        let mut with = args.to_vec();
        with.extend(["--backend", backend]);
        let o = uop(&with);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{backend}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("memory allocation"),
            "{err}"
        );
        // The two random inputs alone are 2 x 10^10 values of 8 bytes.
        assert!(
            err.contains("this needs 160.0 GB for 2 buffers (the largest, `a`, 80.0 GB)"),
            "{backend}: {err}"
        );
        assert!(err.contains("(set it with --max-memory)"), "{err}");
    }
}

#[test]
fn a_param_sized_temporary_beyond_the_limit_is_refused() {
    let dir = setup(
        "param",
        "param p\ninput x: f32[N]\ny = reindex(x, [$p], [0])\noutput y\n",
    );
    // The interpreters hold 8 bytes a value; a kernel's caller holds the f64 output
    // and the kernel's f32 buffer, 12.
    for (backend, bytes) in [("interp", "8.0"), ("loops", "8.0"), ("cranelift", "12.0")] {
        let err = fails_with(
            &dir,
            &[
                "run",
                "p.uop",
                "--backend",
                backend,
                "--random",
                "1",
                "--dim",
                "N=1",
                "--param",
                "p=1000000000000",
            ],
            &format!("(the largest, `y`, {bytes} TB)"),
        );
        assert!(err.contains("more than the memory limit of"), "{err}");
    }
}

#[test]
fn one_hot_with_two_to_the_62_classes_is_refused() {
    let dir = setup(
        "onehot",
        "input ix: i32[N]\ny = one_hot(ix, 4611686018427387904)\noutput y\n",
    );
    for backend in ["interp", "loops", "cranelift"] {
        fails_with(
            &dir,
            &[
                "run",
                "p.uop",
                "--backend",
                backend,
                "--random",
                "1",
                "--dim",
                "N=4",
            ],
            "more than 9223372036854775807 elements",
        );
    }
    // Two classes short of overflowing, it is the memory that is refused.
    let dir = setup(
        "onehot_memory",
        "input ix: i32[N]\ny = one_hot(ix, 1152921504606846976)\noutput y\n",
    );
    fails_with(
        &dir,
        &[
            "run",
            "p.uop",
            "--backend",
            "loops",
            "--random",
            "1",
            "--dim",
            "N=4",
        ],
        "has 4611686018427387904 elements of 8 bytes: more bytes than fit in memory",
    );
    // The JIT holds f32 as 4 bytes, and its output's 2^64 bytes are more than any
    // buffer can hold: refused when the kernel binds the shapes, naming the output.
    fails_with(
        &dir,
        &["run", "p.uop", "--random", "1", "--dim", "N=4"],
        "output `y` of shape [N, 1152921504606846976] = [4, 1152921504606846976] is too \
         large: its size in bytes overflows the address range",
    );
}

#[test]
fn max_memory_refuses_what_it_does_not_allow_and_allows_what_it_does() {
    let dir = setup("max", "input x: f32[N]\ny = exp(x)\noutput y\n");
    let run = |limit: &str| {
        uop_in(
            &dir,
            &[
                "run",
                "p.uop",
                "--backend",
                "loops",
                "--random",
                "1",
                "--dim",
                "N=1000",
                "--max-memory",
                limit,
            ],
        )
    };
    let o = run("1K");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "this needs 8.0 kB for 1 buffer (the largest, `x`, 8.0 kB), more than the memory \
             limit of 1.0 kB"
        ),
        "{}",
        stderr(&o)
    );
    let o = run("1M");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("y: f32[1000]"), "{}", stdout(&o));
    // The interpreter's own tensors count too: its copy of x and y need 16 kB.
    let o = run("12K");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "this needs 16.0 kB for 2 buffers (the largest, `x`, 8.0 kB), more than the memory \
             limit of 12.3 kB"
        ),
        "{}",
        stderr(&o)
    );
    fails_with(
        &dir,
        &[
            "run",
            "p.uop",
            "--random",
            "1",
            "--dim",
            "N=4",
            "--max-memory",
            "4X",
        ],
        "--max-memory 4X: expected a size such as 4G",
    );
}

/// A `.npy` header for `dtype` and `shape` (a Python tuple), padded as numpy pads it.
fn npy_header(dtype: &str, shape: &str) -> Vec<u8> {
    let dict = format!("{{'descr': '{dtype}', 'fortran_order': False, 'shape': {shape}, }}");
    let mut text = dict.into_bytes();
    while (10 + text.len() + 1) % 64 != 0 {
        text.push(b' ');
    }
    text.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((text.len() as u16).to_le_bytes());
    out.extend(text);
    out
}

#[test]
fn a_npy_header_claiming_a_huge_shape_in_a_short_file_is_truncated_not_allocated() {
    let dir = setup("npy_huge", "input x: f32[N]\ny = exp(x)\noutput y\n");
    let mut bytes = npy_header("<f4", "(1000000000000,)");
    bytes.extend([0u8; 16]);
    fs::write(dir.join("x.npy"), bytes).expect("fixture");
    let o = uop_in(&dir, &["run", "p.uop", "--input", "x=x.npy"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "the data is truncated: shape [1000000000000] of float32 needs 4000000000000 bytes \
             after the header, the file has 16"
        ),
        "{err}"
    );
}

#[test]
fn a_npy_file_beyond_the_memory_limit_is_refused_before_reading_its_data() {
    let dir = setup("npy_limit", "input x: f32[N]\ny = exp(x)\noutput y\n");
    let mut bytes = npy_header("<f4", "(4096,)");
    bytes.extend(vec![0u8; 4 * 4096]);
    fs::write(dir.join("x.npy"), bytes).expect("fixture");
    let o = uop_in(
        &dir,
        &["run", "p.uop", "--input", "x=x.npy", "--max-memory", "8K"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("x.npy: this needs 65.5 kB for 3 buffers"),
        "{err}"
    );
}

#[test]
fn reading_dev_zero_is_bounded() {
    let dir = setup("devzero", "input x: f32[N]\ny = exp(x)\noutput y\n");
    fails_with(
        &dir,
        &["run", "p.uop", "--input", "x=/dev/zero"],
        "/dev/zero: not a .npy file",
    );
    fails_with(
        &dir,
        &["print", "/dev/zero"],
        "/dev/zero: the file is longer than 64 MiB, the most a .uop file may have",
    );
}

#[test]
fn a_npy_header_longer_than_any_writer_makes_is_refused() {
    let dir = setup("npy_header", "input x: f32[N]\ny = exp(x)\noutput y\n");
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend(0x4000_0000u32.to_le_bytes());
    bytes.extend([b' '; 64]);
    fs::write(dir.join("x.npy"), bytes).expect("fixture");
    fails_with(
        &dir,
        &["run", "p.uop", "--input", "x=x.npy"],
        "x.npy: the .npy header claims 1073741824 bytes, more than the 1048576 a header may have",
    );
}
