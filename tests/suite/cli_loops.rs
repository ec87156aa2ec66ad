//! Loops through the `uop` binary: `--max-iterations` bounds every `while` of
//! `uop run` and `uop grad` on every backend with an error naming the loop, and a
//! run that fails or is interrupted leaves no output file behind (outputs are
//! written to temporaries and renamed only after the whole run succeeded).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop::npy::read_npy;

use crate::common;
use common::{scratch, stderr, uop, write};

/// A `while` that counts `z` up by one until it reaches `$n` (never, for a
/// negative `x` and a huge `$n`).
const COUNT_TO_N: &str = "param n\ninput x: f32[]\n\
fn more(z, i) { return lt(i, $n) }\n\
fn step(z, i) { return add(z, 1), add(i, 1) }\n\
z, trips = while(more, step, x, 0)\noutput z, trips\n";

/// The files in `dir` (sorted names).
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("scratch dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The scratch dir of `test` with the graph as `g.uop` and `x.npy` holding 0.
fn setup(test: &str) -> (std::path::PathBuf, String, String) {
    let dir = scratch(test);
    let graph = dir.join("g.uop");
    std::fs::write(&graph, COUNT_TO_N).expect("graph file");
    let x = write(
        &dir,
        "x.npy",
        &Tensor::new(DType::F32, vec![], vec![0.0]).expect("scalar"),
    );
    (dir, graph.display().to_string(), x)
}

#[test]
fn max_iterations_stops_a_run_on_every_backend_with_an_error_naming_the_loop() {
    let (dir, graph, x) = setup("loops-max-run");
    let out = dir.join("out");
    std::fs::create_dir(&out).expect("output dir");
    let z = out.join("z.npy").display().to_string();
    for backend in ["cranelift", "loops", "interp"] {
        let o = uop(&[
            "run",
            &graph,
            "--input",
            &format!("x={x}"),
            "--param",
            "n=1000",
            "--max-iterations",
            "999",
            "--backend",
            backend,
            "--output",
            &format!("z={z}"),
        ]);
        assert!(!o.status.success(), "{backend}");
        assert!(
            stderr(&o).contains(
                "the `while` giving `z`, `trips` did not end within 999 iterations (--max-iterations 999)"
            ),
            "{backend}: {}",
            stderr(&o)
        );
        assert_eq!(files_in(&out), Vec::<String>::new(), "{backend}");
        // Exactly the limit is allowed.
        let o = uop(&[
            "run",
            &graph,
            "--input",
            &format!("x={x}"),
            "--param",
            "n=1000",
            "--max-iterations",
            "1000",
            "--backend",
            backend,
            "--output",
            &format!("z={z}"),
        ]);
        assert!(o.status.success(), "{backend}: {}", stderr(&o));
        assert_eq!(read_npy(Path::new(&z)).expect("z").data, vec![1000.0]);
        std::fs::remove_file(&z).expect("written");
    }
}

#[test]
fn max_iterations_stops_a_gradient_and_writes_no_gradient_file() {
    let (dir, graph, x) = setup("loops-max-grad");
    let g = dir.join("g_x.npy").display().to_string();
    for backend in ["cranelift", "interp"] {
        let o = uop(&[
            "grad",
            &graph,
            "--input",
            &format!("x={x}"),
            "--param",
            "n=100",
            "--max-iterations",
            "10",
            "--backend",
            backend,
            "--grad",
            &format!("x={g}"),
        ]);
        assert!(!o.status.success(), "{backend}");
        assert!(
            stderr(&o).contains("the `while` giving `z`, `trips` did not end within 10 iterations"),
            "{backend}: {}",
            stderr(&o)
        );
        assert!(!Path::new(&g).exists(), "{backend}");
        let o = uop(&[
            "grad",
            &graph,
            "--input",
            &format!("x={x}"),
            "--param",
            "n=100",
            "--max-iterations",
            "100",
            "--backend",
            backend,
            "--grad",
            &format!("x={g}"),
        ]);
        assert!(o.status.success(), "{backend}: {}", stderr(&o));
        assert_eq!(read_npy(Path::new(&g)).expect("g_x").data, vec![1.0]);
        std::fs::remove_file(&g).expect("written");
    }
}

#[test]
fn a_failed_run_keeps_an_existing_output_file_as_it_was() {
    let (dir, graph, x) = setup("loops-failed-keeps");
    let z = dir.join("z.npy");
    std::fs::write(&z, b"the old contents").expect("old file");
    let o = uop(&[
        "run",
        &graph,
        "--input",
        &format!("x={x}"),
        "--param",
        "n=100",
        "--max-iterations",
        "5",
        "--output",
        &format!("z={}", z.display()),
    ]);
    assert!(!o.status.success());
    assert_eq!(std::fs::read(&z).expect("still there"), b"the old contents");
    assert_eq!(files_in(&dir), ["g.uop", "x.npy", "z.npy"]);
}

#[cfg(unix)]
#[test]
fn an_interrupted_run_leaves_no_output_file() {
    let (dir, graph, x) = setup("loops-interrupted");
    let z = dir.join("z.npy").display().to_string();
    // An endless loop (no limit): the run is interrupted as Ctrl-C would.
    let mut child = Command::new(env!("CARGO_BIN_EXE_uop"))
        .args([
            "run",
            &graph,
            "--input",
            &format!("x={x}"),
            "--param",
            "n=9223372036854775807",
            "--output",
            &format!("z={z}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("uop starts");
    std::thread::sleep(Duration::from_millis(500));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let start = Instant::now();
    let status = child.wait().expect("uop ends");
    assert!(!status.success(), "an endless loop cannot succeed");
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(files_in(&dir), ["g.uop", "x.npy"]);
}
