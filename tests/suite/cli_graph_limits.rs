//! Graphs too large to run or to build are refused at once, before anything is
//! allocated, with no output file left behind (issue 40, items 2 and 3).

use std::time::{Duration, Instant};

use crate::common;
use common::{scratch, stderr, uop_in};

const BODY: &str = "fn b($i, v) { return mul(v, 2) }";

#[test]
fn parallel_counts_too_large_are_refused_on_every_backend() {
    let dir = scratch("graph-limits-parallel");
    for (count, extra, expected) in [
        (
            "1099511627776",
            None,
            "needs 17.6 TB, more than the memory limit",
        ),
        ("9223372036854775807", None, "more bytes than fit in memory"),
        (
            "100000000000",
            Some("1G"),
            "needs 1.6 TB, more than the memory limit of 1.1 GB",
        ),
    ] {
        let file = dir.join(format!("p{count}.uop"));
        std::fs::write(
            &file,
            format!("input x: f32[4]\n{BODY}\ny = parallel({count}, b, x)\noutput y\n"),
        )
        .expect("write");
        for backend in ["cranelift", "interp"] {
            let out = dir.join("y.npy");
            let mut args = vec![
                "run".to_string(),
                file.display().to_string(),
                "--random".into(),
                "1".into(),
                "--backend".into(),
                backend.into(),
                "--output".into(),
                format!("y={}", out.display()),
            ];
            if let Some(limit) = extra {
                args.extend(["--max-memory".into(), limit.into()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let start = Instant::now();
            let o = uop_in(&dir, &args);
            assert!(start.elapsed() < Duration::from_secs(10));
            assert!(!o.status.success(), "{count} on {backend}");
            let e = stderr(&o);
            assert!(e.starts_with("error: value `y` (the `parallel` %"), "{e}");
            assert!(e.contains(expected), "{e}");
            assert!(!out.exists(), "no output file is left behind");
        }
    }
}

#[test]
fn thirty_levels_of_doubling_are_refused_by_run_and_print() {
    let dir = scratch("graph-limits-doubling");
    let mut src = "input x: f32[4]\nfn f30(v) { return mul(v, 2) }\n".to_string();
    for k in (0..30).rev() {
        src.push_str(&format!(
            "fn f{k}(v) {{ a = f{}(v); return f{}(a) }}\n",
            k + 1,
            k + 1
        ));
    }
    src.push_str("y = f0(x)\noutput y\n");
    let file = dir.join("doubling.uop");
    std::fs::write(&file, src).expect("write");
    let path = file.display().to_string();
    for args in [
        vec!["run", path.as_str(), "--random", "1"],
        vec!["print", path.as_str(), "--stage", "graph"],
    ] {
        let start = Instant::now();
        let o = uop_in(&dir, &args);
        assert!(start.elapsed() < Duration::from_secs(5), "{args:?}");
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(e.contains("expanding the functions would build"), "{e}");
        assert!(e.contains("`f0` uses `f1` uses"), "{e}");
    }
}

/// Every value fits `--max-memory`, but the values a run holds at once do not: the
/// executor refuses the run from its memory plan's arena before allocating it, the
/// interpreter when it holds too much, each naming the user's values; no output
/// file is left behind. With a larger limit the same run succeeds.
#[test]
fn a_memory_plan_over_the_limit_is_refused_before_it_runs() {
    let dir = scratch("graph-limits-arena");
    let file = dir.join("arena.uop");
    std::fs::write(
        &file,
        "input x: f32[N]\nfn more(v, i) { return lt(i, 1) }\n\
         fn step(v, i) { return exp(v), add(i, 1) }\na = exp(x)\nb = sin(x)\n\
         c, n = while(more, step, a, 0)\nd, m = while(more, step, b, 0)\n\
         z = add(c, d)\noutput z\n",
    )
    .expect("write");
    let path = file.display().to_string();
    let out = dir.join("z.npy");
    let target = format!("z={}", out.display());
    for (backend, expected) in [
        ("cranelift", "the run's intermediates need 200.0 MB at once"),
        ("loops", "the run's intermediates need 200.0 MB at once"),
        (
            "interp",
            "in `a`: exp: this needs 160.0 MB for 2 buffers (the largest, `x`",
        ),
    ] {
        let args = [
            "run",
            &path,
            "--random",
            "1",
            "--dim",
            "N=10000000",
            "--max-memory",
            "150M",
            "--backend",
            backend,
            "--output",
            &target,
        ];
        let o = uop_in(&dir, &args);
        assert!(!o.status.success(), "{backend}");
        let e = stderr(&o);
        assert!(e.contains(expected), "{backend}: {e}");
        assert!(!e.contains("_in0"), "{backend}: {e}");
        assert!(!out.exists(), "no output file is left behind");
    }
    let args = [
        "run",
        &path,
        "--random",
        "1",
        "--dim",
        "N=10000000",
        "--max-memory",
        "400M",
        "--output",
        &target,
    ];
    let o = uop_in(&dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.exists());
}

/// The cases quoted in issue 40's "Why" that a run reaches, on every backend: a
/// `[2^40, 2^40]` reindex inside a `while` body, a `parallel` body and under a
/// fused top-level reduction, `parallel(1e9, ...)` under `--max-memory 1G`, a
/// `while` that never ends under `--max-iterations`, `y = sink(x)`, and the
/// user's name `y` for an inline call's result. Each gives the right answer or a
/// clear `error:` naming the user's value, with no output file left behind.
#[test]
fn the_issues_quoted_graphs_give_an_answer_or_a_clear_error_on_every_backend() {
    let dir = scratch("graph-limits-why");
    let huge = "reindex(v, [1099511627776, 1099511627776], [0])";
    let cases: Vec<(String, Option<&str>)> = vec![
        (
            format!(
                "input x: f32[4]\nfn more(v, i) {{ return lt(i, 1) }}\n\
                 fn step(v, i) {{ r = {huge}; return add(v, sum(sum(r))), add(i, 1) }}\n\
                 y, n = while(more, step, x, 0)\noutput y\n"
            ),
            Some("error: value `r` (the `reindex` %"),
        ),
        (
            format!(
                "input x: f32[4]\nfn b($i, v) {{ r = {huge}; return sum(sum(r)) }}\n\
                 y = parallel(2, b, x)\noutput y\n"
            ),
            Some("error: value `r` (the `reindex` %"),
        ),
        (
            format!(
                "input x: f32[4]\nfn f(v) {{ return v }}\nr = {}\ny = sum(sum(r))\noutput y\n",
                huge.replace("(v,", "(x,")
            ),
            Some("error: value `r` (the `reindex` %"),
        ),
        (
            "input x: f32[4]\nfn b($i, v) { return mul(v, 2) }\n\
             y = parallel(1000000000, b, x)\noutput y\n"
                .into(),
            Some("needs 16.0 GB, more than the memory limit of 1.1 GB"),
        ),
        (
            "input x: f32[]\nfn more(v) { return lt(v, 1e30) }\nfn step(v) { return sub(v, 1) }\n\
             y = while(more, step, x)\noutput y\n"
                .into(),
            Some("the `while` giving `y` did not end within 100 iterations"),
        ),
        (
            "input x: f32[4]\nfn f(v) { return v }\ny = sink(x)\noutput y\n".into(),
            Some("sink.uop: `sink(...)` gives no result"),
        ),
        (
            "input x: f32[4]\nfn f(v) { w = mul(v, 2); return w }\ny = f(x)\noutput y\n".into(),
            None,
        ),
    ];
    for (k, (src, expected)) in cases.iter().enumerate() {
        let name = if src.contains("sink(x)") {
            "sink.uop".to_string()
        } else {
            format!("why{k}.uop")
        };
        let file = dir.join(&name);
        std::fs::write(&file, src).expect("write");
        let path = file.display().to_string();
        for backend in ["cranelift", "loops", "interp"] {
            let out = dir.join("y.npy");
            let _ = std::fs::remove_file(&out);
            let target = format!("y={}", out.display());
            let args = [
                "run",
                &path,
                "--random",
                "1",
                "--backend",
                backend,
                "--max-memory",
                "1G",
                "--max-iterations",
                "100",
                "--output",
                &target,
            ];
            let start = Instant::now();
            let o = uop_in(&dir, &args);
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{name} on {backend}"
            );
            let e = stderr(&o);
            match expected {
                Some(expected) => {
                    assert!(!o.status.success(), "{name} on {backend}");
                    assert!(e.starts_with("error: "), "{name} on {backend}: {e}");
                    assert!(e.contains(expected), "{name} on {backend}: {e}");
                    assert!(!out.exists(), "{name} on {backend}: no output file");
                }
                None => {
                    assert!(o.status.success(), "{name} on {backend}: {e}");
                    assert!(out.exists(), "{name} on {backend}: `y` written");
                }
            }
        }
    }
}
