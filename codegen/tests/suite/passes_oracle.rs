//! The randomized oracle for the optimizer: on random programs and random cases, the
//! loop IR after every single pass, and after the whole pipeline, gives exactly the
//! reference interpreter's results (bit for bit, NaN equal to NaN). Fusion and
//! substitution never reorder float operations, so no tolerance is needed.
//!
//! `UOP_ORACLE_CASES=20000 cargo test --profile fast-build -p uop-codegen --test suite passes_oracle::`
//! runs a long sweep; the default keeps CI to a few seconds. `UOP_ORACLE_NODES=30`
//! grows larger programs (more blocks to fuse).

use std::collections::HashMap;

use uop_codegen::interp::{self, RunError};
use uop_codegen::loops::{self, LoopProgram};
use uop_codegen::pass::{self, PassOptions};
use uop_codegen::tensor::Tensor;
use uop_codegen::testing::{Case, GenConfig, random_case_with, random_program};
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::{DType, Program};

const DEFAULT_PROGRAMS: u64 = 300;

fn programs() -> u64 {
    std::env::var("UOP_ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_PROGRAMS)
}

/// The generator's config, with `UOP_ORACLE_NODES` overriding the program size.
fn config(dtype: DType) -> GenConfig {
    let base = GenConfig::default();
    let max_nodes = std::env::var("UOP_ORACLE_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(base.max_nodes);
    GenConfig {
        dtype,
        max_nodes,
        ..base
    }
}

fn same_bits(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// Where `got` differs from `want`, if anywhere.
fn difference(want: &[Tensor], got: &[Tensor]) -> Option<String> {
    if want.len() != got.len() {
        return Some(format!("{} outputs, expected {}", got.len(), want.len()));
    }
    for (k, (w, g)) in want.iter().zip(got).enumerate() {
        if w.shape != g.shape {
            return Some(format!(
                "output {k}: shape {:?}, expected {:?}",
                g.shape, w.shape
            ));
        }
        if let Some(at) = (0..w.data.len()).find(|&i| !same_bits(w.data[i], g.data[i])) {
            return Some(format!(
                "output {k}[{at}]: {} expected {}",
                g.data[at], w.data[at]
            ));
        }
    }
    None
}

/// Runs `stage` and compares with the reference outputs, panicking with a reproducer.
fn check_stage(
    seed: u64,
    program: &Program,
    stage: &str,
    lp: &LoopProgram,
    want: &[Tensor],
    case: &Case,
) {
    let got = interp::run_loops(lp, &case.inputs, &case.params);
    let problem = match got {
        Ok(got) => difference(want, &got),
        Err(e) => Some(format!("run_loops failed: {e}")),
    };
    if let Some(problem) = problem {
        panic!(
            "seed {seed}, after `{stage}`: {problem}\nprogram: {program:#?}\nlowered:\n{}\n{stage}:\n{lp}",
            loops::lower(program)
        );
    }
}

/// Every pass alone, and the pipeline, against the reference on one program.
fn check_program(seed: u64, cfg: &GenConfig) -> Option<()> {
    check_program_with(seed, &random_program(seed, cfg), cfg)
}

/// [`check_program`] on a given program (random case from `seed`).
fn check_program_with(seed: u64, program: &Program, cfg: &GenConfig) -> Option<()> {
    let program = program.clone();
    let case = random_case_with(&program, seed ^ 0xca5e, cfg).ok()?;
    let want = match interp::run(&program, &case.inputs, &case.params) {
        Ok(w) => w,
        // A case the reference itself rejects (e.g. an index overflow) has no oracle.
        Err(RunError::Bind(_)) => return None,
        Err(e) => panic!("seed {seed}: the reference failed: {e}"),
    };
    let lowered = loops::lower(&program);
    check_stage(seed, &program, "lower", &lowered, &want, &case);
    for p in pass::pipeline() {
        let alone = (p.run)(&lowered);
        if let Err(e) = loops::verify(&alone) {
            panic!("seed {seed}: {} alone: {e}\n{alone}", p.name);
        }
        check_stage(seed, &program, p.name, &alone, &want, &case);
    }
    let trace = pass::optimize_traced(&lowered, &PassOptions::default().verified(true))
        .unwrap_or_else(|e| panic!("{e}"));
    for (name, lp) in &trace {
        check_stage(seed, &program, name, lp, &want, &case);
    }
    Some(())
}

#[test]
fn every_pass_and_the_pipeline_match_the_reference_on_random_programs() {
    let n = programs();
    let mut checked = 0;
    for seed in 0..n {
        checked += usize::from(check_program(seed, &config(DType::F32)).is_some());
    }
    assert!(
        checked as u64 >= n * 9 / 10,
        "only {checked} of {n} programs ran"
    );
}

#[test]
fn f64_programs_match_too() {
    let cfg = config(DType::F64);
    let n = (programs() / 3).max(1);
    let mut checked = 0;
    for seed in 0..n {
        checked += usize::from(check_program(1_000_000 + seed, &cfg).is_some());
    }
    assert!(
        checked as u64 >= n * 9 / 10,
        "only {checked} of {n} programs ran"
    );
}

#[test]
fn the_pipeline_fuses_random_programs() {
    // Fusion must actually happen on random programs, or the oracle checks nothing.
    let (mut before, mut after) = (0, 0);
    for seed in 0..100 {
        let lowered = loops::lower(&random_program(seed, &GenConfig::default()));
        let optimized = pass::optimize(&lowered, &PassOptions::default().verified(true))
            .unwrap_or_else(|e| panic!("{e}"));
        let none = HashMap::new();
        before += pass::stats(&lowered, &none, &none).blocks;
        after += pass::stats(&optimized, &none, &none).blocks;
    }
    assert!(after * 2 < before, "{before} blocks became {after}");
}

/// Seeded choices for the padded-window programs (no dependency on the generator's
/// random stream, so these programs stay the same when it changes).
struct Choices(u64);

impl Choices {
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        // SplitMix64.
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        from[(z % from.len() as u64) as usize]
    }
}

/// A convolution or pooling over `[N, C, H, W]` with a random kernel, padding,
/// stride, dilation, reduction and fill: the window read reaches past the edges.
fn padded_window(seed: u64) -> String {
    let mut c = Choices(seed);
    let mut axis = |name: &str, i: usize, t: usize| {
        let (k, p, s, d) = (
            c.pick(&[1, 2, 3]),
            c.pick(&[0, 1, 2]),
            c.pick(&[1, 1, 2]),
            c.pick(&[1, 1, 2]),
        );
        let out = format!("({name} + {} - {}) / {s} + 1", 2 * p, d * (k - 1) + 1);
        let index = format!("{s} * i{i} + {d} * i{t} - {p}");
        (k, out, index)
    };
    let (kh, oh, ih) = axis("H", 2, 5);
    let (kw, ow, iw) = axis("W", 3, 6);
    let fill = c.pick(&["0.0", "1.5", "-inf"]);
    let space = format!("[N, O, {oh}, {ow}, C, {kh}, {kw}]");
    let (reduce, value) = if c.pick(&[true, false]) {
        ("reduce_sum", "mul(xx, kk)")
    } else {
        ("reduce_max", "add(xx, kk)")
    };
    format!(
        "input x: f32[N, C, H, W]\ninput k: f32[O, C, {kh}, {kw}]\n\
         xx = reindex(x, {space}, [i0, i4, {ih}, {iw}], fill={fill})\n\
         kk = reindex(k, {space}, [i1, i4, i5, i6])\n\
         s = {reduce}({value}, [4, 5, 6])\noutput s\n"
    )
}

#[test]
fn padded_windows_match_the_reference_and_lose_their_checks() {
    let cfg = config(DType::F32);
    let (mut checked, mut padded) = (0, 0);
    for seed in 0..programs().min(200) {
        let src = padded_window(seed);
        let program =
            parse_program(&src, &Registry::new()).unwrap_or_else(|e| panic!("{src}\n{e}"));
        let lowered = loops::lower(&program);
        let optimized = pass::optimize(&lowered, &PassOptions::default().verified(true))
            .unwrap_or_else(|e| panic!("{e}"));
        padded += usize::from(optimized.tensors.iter().any(|t| t.name == "x_pad"));
        if let Some(()) = check_program_with(seed, &program, &cfg) {
            checked += 1;
        }
    }
    assert!(checked >= 150, "only {checked} programs ran");
    assert!(padded >= 100, "only {padded} programs were padded");
}

#[test]
fn random_programs_exercise_the_pad_pass() {
    // The generator's shifted and windowed reindexes feed reductions: some of them
    // must get a padded copy, or the oracle above checks nothing of `pad`.
    let mut padded = 0;
    for seed in 0..programs() {
        let lowered = loops::lower(&random_program(seed, &GenConfig::default()));
        let trace = pass::optimize_traced(&lowered, &PassOptions::default().verified(true))
            .unwrap_or_else(|e| panic!("{e}"));
        let at = trace.iter().position(|(name, _)| *name == "pad");
        if let Some(at) = at.filter(|&at| at > 0)
            && trace[at].1.tensors.len() > trace[at - 1].1.tensors.len()
        {
            padded += 1;
        }
    }
    assert!(padded > 0, "no random program was padded");
}
