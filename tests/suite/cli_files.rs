//! How `uop run`, `uop grad` and `uop emit` write files: all outputs or none, existing
//! files kept intact on failure, special files (links to devices, FIFOs) refused
//! without being replaced, and one file per output.

use std::fs;
use std::path::Path;

use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;

use crate::common;
use common::{scratch, stderr, uop_in, write};

/// Two outputs of one input: `y = exp(x)`, `z = -x`.
const TWO: &str = "input x: f32[N]\ny = exp(x)\nz = neg(x)\noutput y, z\n";

/// A scratch directory holding `two.uop` and `x.npy`.
fn setup(test: &str) -> std::path::PathBuf {
    let dir = scratch(test);
    fs::write(dir.join("two.uop"), TWO).expect("program");
    let x = Tensor::new(DType::F32, vec![3], vec![0.0, 1.0, -2.0]).expect("tensor");
    write(&dir, "x.npy", &x);
    fs::create_dir(dir.join("out")).expect("out dir");
    dir
}

/// The names in `dir`, sorted (hidden temporaries included).
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("readable dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn run(dir: &Path, outputs: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "two.uop", "--input", "x=x.npy"];
    for o in outputs {
        args.extend(["--output", o]);
    }
    uop_in(dir, &args)
}

#[test]
fn when_the_second_directory_is_missing_the_first_output_is_not_written() {
    let dir = setup("second-dir-missing");
    let o = run(&dir, &["y=out/y.npy", "z=missing/z.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "--output z: cannot write missing/z.npy: the directory missing does not exist"
        ),
        "{}",
        stderr(&o)
    );
    assert!(
        entries(&dir.join("out")).is_empty(),
        "{:?}",
        entries(&dir.join("out"))
    );
}

#[test]
fn when_writing_the_second_fails_the_first_temporary_is_removed_and_old_files_kept() {
    let dir = setup("second-write-fails");
    fs::write(dir.join("out/y.npy"), b"old contents").expect("old file");
    // /proc exists but no file can be created in it, even by root: the failure comes
    // while writing, after the first output's temporary was written.
    let o = run(&dir, &["y=out/y.npy", "z=/proc/uop-test-z.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--output z: cannot write /proc/uop-test-z.npy")
            && stderr(&o).contains("nothing was written"),
        "{}",
        stderr(&o)
    );
    assert_eq!(entries(&dir.join("out")), ["y.npy"]);
    assert_eq!(
        fs::read(dir.join("out/y.npy")).expect("kept"),
        b"old contents"
    );
}

#[test]
fn a_link_to_dev_full_is_refused_and_stays_a_link() {
    let dir = setup("dev-full");
    let link = dir.join("out/y.npy");
    std::os::unix::fs::symlink("/dev/full", &link).expect("symlink");
    let o = run(&dir, &["y=out/y.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--output y: out/y.npy is a device, not a regular file"),
        "{}",
        stderr(&o)
    );
    let meta = fs::symlink_metadata(&link).expect("still there");
    assert!(meta.file_type().is_symlink());
    assert_eq!(fs::read_link(&link).expect("link"), Path::new("/dev/full"));
    assert_eq!(entries(&dir.join("out")), ["y.npy"]);
}

#[test]
fn a_fifo_is_refused_without_opening_it() {
    let dir = setup("fifo");
    let fifo = dir.join("out/y.npy");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    // Opening a FIFO for writing would block with no reader: the command returning at
    // all shows it was not opened.
    let o = run(&dir, &["y=out/y.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--output y: out/y.npy is a FIFO, not a regular file"),
        "{}",
        stderr(&o)
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(
        fs::symlink_metadata(&fifo)
            .expect("kept")
            .file_type()
            .is_fifo()
    );
}

#[test]
fn a_link_to_a_regular_file_is_written_through() {
    let dir = setup("link-to-file");
    fs::write(dir.join("real.npy"), b"old").expect("target");
    std::os::unix::fs::symlink(dir.join("real.npy"), dir.join("out/y.npy")).expect("symlink");
    let o = run(&dir, &["y=out/y.npy"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        fs::symlink_metadata(dir.join("out/y.npy"))
            .expect("link")
            .file_type()
            .is_symlink()
    );
    let bytes = fs::read(dir.join("real.npy")).expect("written");
    assert!(
        bytes.starts_with(b"\x93NUMPY"),
        "the link's target holds the output"
    );
}

#[test]
fn two_outputs_to_one_file_are_an_error() {
    let dir = setup("same-file");
    let o = run(&dir, &["y=out/a.npy", "z=out/../out/a.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--output y and --output z both write"),
        "{}",
        stderr(&o)
    );
    assert!(entries(&dir.join("out")).is_empty());
}

#[test]
fn grad_writes_all_gradients_or_none() {
    let dir = setup("grad");
    let prog = "input a: f32[N]\ninput b: f32[N]\ny = mul(a, b)\noutput y\n";
    fs::write(dir.join("ab.uop"), prog).expect("program");
    let x = Tensor::new(DType::F32, vec![2], vec![1.0, 2.0]).expect("tensor");
    write(&dir, "a.npy", &x);
    write(&dir, "b.npy", &x);
    let o = uop_in(
        &dir,
        &[
            "grad",
            "ab.uop",
            "--input",
            "a=a.npy",
            "--input",
            "b=b.npy",
            "--grad",
            "a=out/ga.npy",
            "--grad",
            "b=missing/gb.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--grad b: cannot write missing/gb.npy"),
        "{}",
        stderr(&o)
    );
    assert!(entries(&dir.join("out")).is_empty());
}

#[test]
fn emit_refuses_a_fifo_and_replaces_a_regular_file_whole() {
    let dir = setup("emit");
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("out/k.rs"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let o = uop_in(
        &dir,
        &["emit", "two.uop", "--target", "rust", "-o", "out/k.rs"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("-o: out/k.rs is a FIFO"),
        "{}",
        stderr(&o)
    );

    fs::write(dir.join("out/old.clif"), b"old").expect("old");
    let o = uop_in(
        &dir,
        &["emit", "two.uop", "--target", "clif", "-o", "out/old.clif"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(fs::read(dir.join("out/old.clif")).expect("written"), b"old");
    assert_eq!(
        entries(&dir.join("out")),
        ["k.rs", "old.clif"],
        "no temporaries left"
    );
}
