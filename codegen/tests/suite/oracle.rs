//! The differential oracle (`uop_codegen::testing`): random programs agree on every
//! stage (reference interpreter, loop IR before passes, after each pass alone, after
//! the pipeline); a wrong, failing or panicking stage is caught and named; and a
//! failing program shrinks to a tiny `.uop` reproducer that parses back.
//!
//! `UOP_ORACLE_CASES=N` runs N random programs instead of the default few hundred.

use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::testing::{
    Backend, Case, CheckOptions, Difference, Failure, GenConfig, LoopsBackend, Stage, Tolerance,
    check_program, random_case, random_case_with, random_program, reproducer, shrink,
    shrink_failure,
};
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::{BinaryOp, DType, Operand, Program, ReduceOp, Uop};

fn oracle_cases(default: u64) -> u64 {
    std::env::var("UOP_ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Checks `count` programs from `cfg`; on a mismatch, shrinks it and fails with the
/// reproducer, so a CI failure is directly actionable.
fn check_many(cfg: &GenConfig, seeds: std::ops::Range<u64>) {
    let opts = CheckOptions::default();
    for seed in seeds {
        let program = random_program(seed, cfg);
        let Ok(case) = random_case_with(&program, seed, cfg) else {
            panic!("seed {seed}: no case for a generated program");
        };
        if let Err(mismatch) = check_program(&program, &case, &opts) {
            let failure = Failure {
                program,
                case,
                mismatch,
            };
            let small = shrink_failure(&failure, cfg, &opts, seed);
            panic!(
                "seed {seed}: {}\nshrunk: {}\n{}",
                failure.mismatch,
                small.mismatch,
                reproducer(&small.program).text
            );
        }
    }
}

#[test]
fn random_f32_programs_agree_on_every_stage() {
    check_many(&GenConfig::default(), 0..oracle_cases(300));
}

#[test]
fn random_f64_programs_without_params_agree_on_every_stage() {
    let cfg = GenConfig {
        dtype: DType::F64,
        allow_params: false,
        max_nodes: 20,
        ..GenConfig::default()
    };
    let n = oracle_cases(300) / 3;
    check_many(&cfg, 1_000_000..1_000_000 + n);
}

/// A stage under test that runs the reference interpreter and then damages the result.
struct Damaged {
    damage: fn(&mut Vec<Tensor>) -> Result<(), String>,
}

impl Backend for Damaged {
    fn name(&self) -> String {
        "damaged".into()
    }

    fn run(&self, p: &Program, case: &Case) -> Result<Vec<Tensor>, String> {
        let mut out = interp::run(p, &case.inputs, &case.params).map_err(|e| e.to_string())?;
        (self.damage)(&mut out)?;
        Ok(out)
    }
}

fn backend(damage: fn(&mut Vec<Tensor>) -> Result<(), String>) -> CheckOptions {
    CheckOptions {
        backends: vec![Box::new(Damaged { damage })],
        ..CheckOptions::default()
    }
}

/// `y = exp(x)` over `x: f32[N]`, with a case of three elements.
fn exp_program() -> (Program, Case) {
    let src = "input x: f32[N]\ny = exp(x)\noutput y\n";
    let program = parse_program(src, &Registry::new()).expect("valid program");
    let case = Case {
        inputs: vec![Tensor::new(DType::F32, vec![3], vec![0.0, 1.0, -1.0]).expect("3 values")],
        params: Default::default(),
    };
    (program, case)
}

#[test]
fn an_agreeing_backend_passes() {
    let (program, case) = exp_program();
    let opts = CheckOptions {
        backends: vec![Box::new(LoopsBackend::default())],
        ..CheckOptions::default()
    };
    assert_eq!(check_program(&program, &case, &opts), Ok(()));
}

#[test]
fn a_wrong_element_is_reported_with_its_stage_position_and_values() {
    let (program, case) = exp_program();
    let opts = backend(|out| {
        out[0].data[2] += 0.25;
        Ok(())
    });
    let m = check_program(&program, &case, &opts).expect_err("the damage is seen");
    assert_eq!(m.stage, Stage::Backend("damaged".into()));
    let expected = DType::F32.round((-1.0f64).exp());
    assert_eq!(
        m.difference,
        Difference::Value {
            output: 0,
            name: "y".into(),
            index: vec![2],
            expected,
            found: expected + 0.25,
        }
    );
    let text = m.to_string();
    assert!(text.contains("backend `damaged`"), "{text}");
    assert!(text.contains("output 0 `y` at [2]"), "{text}");
}

#[test]
fn zero_signs_and_nan_payloads_do_not_count_but_infinities_do() {
    let (program, mut case) = exp_program();
    case.inputs[0].data = vec![f64::NEG_INFINITY, f64::NAN, 0.0];
    // exp(-inf) = +0.0; a stage answering -0.0 or another NaN agrees.
    let opts = backend(|out| {
        out[0].data[0] = -0.0;
        out[0].data[1] = f64::from_bits(0x7ff8_0000_0000_0abc);
        Ok(())
    });
    assert_eq!(check_program(&program, &case, &opts), Ok(()));
    case.inputs[0].data = vec![f64::INFINITY, 0.0, 0.0];
    let opts = backend(|out| {
        out[0].data[0] = f64::MAX;
        Ok(())
    });
    assert!(check_program(&program, &case, &opts).is_err());
}

#[test]
fn a_tolerance_accepts_small_float_differences() {
    let (program, case) = exp_program();
    let nudge = |out: &mut Vec<Tensor>| {
        out[0].data[1] *= 1.0 + 1e-6;
        Ok(())
    };
    assert!(check_program(&program, &case, &backend(nudge)).is_err());
    let tolerant = CheckOptions {
        tolerance: Some(Tolerance {
            abs: 0.0,
            rel: 1e-5,
        }),
        ..backend(nudge)
    };
    assert_eq!(check_program(&program, &case, &tolerant), Ok(()));
}

#[test]
fn a_stage_failing_or_panicking_where_the_reference_runs_is_a_mismatch() {
    let (program, case) = exp_program();
    let m = check_program(&program, &case, &backend(|_| Err("no code for exp".into())))
        .expect_err("failure is a mismatch");
    assert_eq!(
        m.difference,
        Difference::StageFailed {
            error: "no code for exp".into()
        }
    );
    let m = check_program(&program, &case, &backend(|_| panic!("emitter bug")))
        .expect_err("a panic is a mismatch");
    assert_eq!(
        m.difference,
        Difference::StageFailed {
            error: "panicked: emitter bug".into()
        }
    );
}

/// Runs fine even where the reference fails: a stage that "succeeds" on bad input.
struct Lenient;

impl Backend for Lenient {
    fn name(&self) -> String {
        "lenient".into()
    }

    fn run(&self, p: &Program, _case: &Case) -> Result<Vec<Tensor>, String> {
        Ok(vec![Tensor::zeros(DType::F32, vec![0]); p.outputs.len()])
    }
}

#[test]
fn errors_must_agree_too() {
    let (program, mut case) = exp_program();
    // An f64 tensor for an f32 input: every built-in stage rejects it alike.
    case.inputs[0].dtype = DType::F64;
    assert_eq!(
        check_program(&program, &case, &CheckOptions::default()),
        Ok(())
    );
    let opts = CheckOptions {
        backends: vec![Box::new(Lenient)],
        ..CheckOptions::default()
    };
    let m = check_program(&program, &case, &opts).expect_err("the reference failed");
    assert_eq!(m.stage, Stage::Backend("lenient".into()));
    assert!(
        matches!(&m.difference, Difference::ReferenceFailed { error } if error.contains("must be f32")),
        "{m}"
    );
}

#[test]
fn disabled_passes_still_check_the_other_stages() {
    let (program, case) = exp_program();
    let opts = CheckOptions {
        disabled_passes: uop_codegen::pass::pipeline()
            .iter()
            .map(|p| p.name.to_string())
            .collect(),
        ..CheckOptions::default()
    };
    assert_eq!(check_program(&program, &case, &opts), Ok(()));
}

fn has_reduce_max(p: &Program) -> bool {
    p.nodes.iter().any(|n| {
        matches!(
            n.op,
            Uop::Reduce {
                op: ReduceOp::Max,
                ..
            }
        )
    })
}

#[test]
fn shrinking_keeps_the_failure_and_ends_tiny() {
    let cfg = GenConfig {
        max_nodes: 20,
        ..GenConfig::default()
    };
    let mut shrunk = 0;
    for seed in 0..200 {
        let program = random_program(seed, &cfg);
        if !has_reduce_max(&program) || program.nodes.len() < 6 {
            continue;
        }
        let small = shrink(&program, has_reduce_max);
        assert!(has_reduce_max(&small), "seed {seed}");
        // One input feeding the reduction, as one output.
        let computed = small.nodes.len() - small.inputs.len();
        assert_eq!(
            (computed, small.inputs.len(), small.outputs.len()),
            (1, 1, 1),
            "seed {seed}:\n{}",
            reproducer(&small).text
        );
        let repro = reproducer(&small);
        assert_eq!(repro.problem, None, "seed {seed}:\n{}", repro.text);
        shrunk += 1;
        if shrunk == 5 {
            break;
        }
    }
    assert_eq!(shrunk, 5, "enough random programs hold a reduce_max");
}

/// The reference interpreter on the program with every `sub` turned into `add`: a
/// deliberately wrong "backend" for the fuzz-and-shrink loop to find.
struct SubIsAdd;

impl Backend for SubIsAdd {
    fn name(&self) -> String {
        "sub-is-add".into()
    }

    fn run(&self, p: &Program, case: &Case) -> Result<Vec<Tensor>, String> {
        let mut wrong = p.clone();
        for node in &mut wrong.nodes {
            if let Uop::Binary { op, .. } = &mut node.op
                && *op == BinaryOp::Sub
            {
                *op = BinaryOp::Add;
            }
        }
        interp::run(&wrong, &case.inputs, &case.params).map_err(|e| e.to_string())
    }
}

#[test]
fn a_found_bug_shrinks_to_a_one_line_reproducer() {
    let cfg = GenConfig::default();
    let opts = CheckOptions {
        backends: vec![Box::new(SubIsAdd)],
        ..CheckOptions::default()
    };
    let found = (0..500).find_map(|seed| {
        let program = random_program(seed, &cfg);
        let case = random_case(&program, seed).expect("a case");
        let mismatch = check_program(&program, &case, &opts).err()?;
        Some((
            seed,
            Failure {
                program,
                case,
                mismatch,
            },
        ))
    });
    let (seed, failure) = found.expect("some random program subtracts");
    assert_eq!(failure.mismatch.stage, Stage::Backend("sub-is-add".into()));
    let small = shrink_failure(&failure, &cfg, &opts, seed);
    assert_eq!(small.mismatch.stage, failure.mismatch.stage);
    let computed: Vec<&Uop> = small
        .program
        .nodes
        .iter()
        .map(|n| &n.op)
        .filter(|op| **op != Uop::Input)
        .collect();
    assert!(
        matches!(computed.as_slice(), [Uop::Binary { op: BinaryOp::Sub, a, b }]
            if [a, b].iter().all(|o| matches!(o, Operand::Node(_) | Operand::Const(_) | Operand::Param(_)))),
        "{}",
        reproducer(&small.program).text
    );
    assert_eq!(
        check_program(&small.program, &small.case, &opts).err(),
        Some(small.mismatch.clone())
    );
    let repro = reproducer(&small.program);
    assert_eq!(repro.problem, None);
    let back = parse_program(&repro.text, &Registry::new()).expect("the reproducer parses");
    assert_eq!(back, small.program);
}
