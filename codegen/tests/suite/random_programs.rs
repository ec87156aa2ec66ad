//! The random program generator (`uop_codegen::testing`): its programs are always
//! valid, its cases always fit their program, the reference interpreter runs every
//! one of them, and together they cover every uop.

use std::collections::{BTreeSet, HashMap};

use uop_codegen::interp;
use uop_codegen::testing::{GenConfig, random_case, random_case_with, random_program};
use uop_codegen::uop::{BinaryOp, Builder, DType, Program, ReduceOp, UnaryOp, Uop};

const PROGRAMS: u64 = 300;

/// What a batch of generated programs and cases exercised.
#[derive(Default)]
struct Coverage {
    kinds: BTreeSet<&'static str>,
    unary: BTreeSet<&'static str>,
    binary: BTreeSet<&'static str>,
    reduce: BTreeSet<&'static str>,
    scatter: BTreeSet<&'static str>,
    scalar_operands: usize,
    param_operands: usize,
    with_params: usize,
    with_assertions: usize,
    multi_output: usize,
    with_unused_inputs: usize,
    rank_0_nodes: usize,
    max_rank: usize,
    input_sizes: BTreeSet<usize>,
    out_of_range_indices: usize,
    values: usize,
    finite_values: usize,
}

impl Coverage {
    fn program(&mut self, p: &Program) {
        self.with_params += usize::from(!p.params.is_empty());
        self.with_assertions += usize::from(!p.assertions.is_empty());
        self.multi_output += usize::from(p.outputs.len() > 1);
        self.with_unused_inputs += usize::from(!p.unused_inputs().is_empty());
        for node in &p.nodes {
            self.rank_0_nodes += usize::from(node.shape.is_empty());
            self.max_rank = self.max_rank.max(node.shape.len());
            let kind = match &node.op {
                Uop::Input => "input",
                Uop::Reindex { .. } => "reindex",
                Uop::ReindexReduce { op, .. } => {
                    self.scatter.insert(op.name());
                    "reindex_reduce"
                }
                Uop::Unary { op, .. } => {
                    self.unary.insert(op.name());
                    "unary"
                }
                Uop::Binary { op, .. } => {
                    self.binary.insert(op.name());
                    "binary"
                }
                Uop::Where { .. } => "where",
                Uop::Reduce { op, .. } => {
                    self.reduce.insert(op.name());
                    "reduce"
                }
                Uop::Select { .. } => "select",
                Uop::Iota { .. } => "iota",
                Uop::Cast { .. } => "cast",
            };
            self.kinds.insert(kind);
            for operand in node.op.operands() {
                match operand {
                    uop_codegen::uop::Operand::Const(_) => self.scalar_operands += 1,
                    uop_codegen::uop::Operand::Param(_) => self.param_operands += 1,
                    uop_codegen::uop::Operand::Node(_) => {}
                }
            }
        }
    }
}

/// Runs `program` on a case and checks the outputs against `Program::shapes`.
fn run_case(program: &Program, case_seed: u64, cov: &mut Coverage) {
    let case = random_case(program, case_seed).expect("a case");
    let describe = || format!("program {program:#?}\ncase {case:?}");
    let outputs = interp::run(program, &case.inputs, &case.params)
        .unwrap_or_else(|e| panic!("{e}\n{}", describe()));
    let shapes: Vec<&[usize]> = case.inputs.iter().map(|t| t.shape.as_slice()).collect();
    let bindings = program
        .bind(&shapes, &case.params)
        .unwrap_or_else(|e| panic!("{e}\n{}", describe()));
    let all = program
        .shapes(&bindings)
        .unwrap_or_else(|e| panic!("{e}\n{}", describe()));
    assert_eq!(outputs.len(), program.outputs.len());
    for (out, id) in outputs.iter().zip(&program.outputs) {
        assert_eq!(out.shape, all[id.0], "output `{}`", program.node(*id).name);
        assert_eq!(out.dtype, program.dtype);
        assert_eq!(out.data.len(), out.shape.iter().product::<usize>());
        cov.values += out.data.len();
        cov.finite_values += out.data.iter().filter(|v| v.is_finite()).count();
    }
    for (t, id) in case.inputs.iter().zip(&program.inputs) {
        assert_eq!(t.dtype, program.node(*id).dtype);
        cov.input_sizes.extend(t.shape.iter().copied());
        if t.dtype == DType::I32 {
            cov.out_of_range_indices += t.data.iter().filter(|v| **v < 0.0).count();
        }
    }
}

#[test]
fn hundreds_of_random_programs_run_and_cover_every_uop() {
    let cfg = GenConfig::default();
    let mut cov = Coverage::default();
    for seed in 0..PROGRAMS {
        let program = random_program(seed, &cfg);
        cov.program(&program);
        for case_seed in [seed, seed + 1_000_003] {
            run_case(&program, case_seed, &mut cov);
        }
    }

    let every_kind: BTreeSet<&str> = [
        "input",
        "reindex",
        "reindex_reduce",
        "unary",
        "binary",
        "where",
        "reduce",
        "select",
        "iota",
    ]
    .into_iter()
    .collect();
    assert_eq!(cov.kinds, every_kind);
    let names = |all: &[&'static str]| all.iter().copied().collect::<BTreeSet<_>>();
    assert_eq!(
        cov.unary,
        names(&UnaryOp::ALL.iter().map(|o| o.name()).collect::<Vec<_>>())
    );
    assert_eq!(
        cov.binary,
        names(&BinaryOp::ALL.iter().map(|o| o.name()).collect::<Vec<_>>())
    );
    assert_eq!(
        cov.reduce,
        names(&ReduceOp::ALL.iter().map(|o| o.name()).collect::<Vec<_>>())
    );
    assert_eq!(cov.scatter, names(&["add", "max", "min"]));

    let enough = PROGRAMS as usize / 20;
    assert!(cov.scalar_operands > enough, "constant operands");
    assert!(cov.param_operands > 0, "$param operands");
    assert!(cov.with_params > enough, "programs with $params");
    assert!(cov.with_assertions > 0, "programs with [=] assertions");
    assert!(cov.multi_output > enough, "programs with several outputs");
    assert!(cov.with_unused_inputs > 0, "programs with unused inputs");
    assert!(cov.rank_0_nodes > enough, "rank-0 tensors");
    assert!(cov.max_rank >= 4, "high-rank intermediates");
    assert!(cov.input_sizes.contains(&0), "empty inputs");
    assert!(cov.input_sizes.contains(&1), "size-1 axes");
    assert!(cov.out_of_range_indices > 0, "out-of-range select indices");
    // NaN and ±inf happen (log of negatives, empty max), but not everywhere.
    assert!(
        cov.finite_values * 10 > cov.values * 7,
        "{} of {} output values are finite",
        cov.finite_values,
        cov.values
    );
}

#[test]
fn generation_is_deterministic() {
    let cfg = GenConfig::default();
    for seed in [0, 1, 42, 1 << 40] {
        let p = random_program(seed, &cfg);
        assert_eq!(p, random_program(seed, &cfg));
        assert_eq!(random_case(&p, seed), random_case(&p, seed));
    }
}

#[test]
fn f64_programs_without_params() {
    let cfg = GenConfig {
        dtype: DType::F64,
        allow_params: false,
        ..GenConfig::default()
    };
    let mut cov = Coverage::default();
    for seed in 0..60 {
        let program = random_program(seed, &cfg);
        assert_eq!(program.dtype, DType::F64);
        assert!(program.params.is_empty());
        let case = random_case_with(&program, seed, &cfg).unwrap();
        assert!(case.params.is_empty());
        let outputs = interp::run(&program, &case.inputs, &case.params)
            .unwrap_or_else(|e| panic!("{e}\n{program:#?}"));
        assert!(outputs.iter().all(|t| t.dtype == DType::F64));
        cov.program(&program);
    }
    assert!(cov.kinds.len() > 5);
}

#[test]
fn tight_limits_are_respected() {
    let cfg = GenConfig {
        max_nodes: 4,
        max_inputs: 1,
        max_rank: 1,
        max_dim: 2,
        max_elements: 8,
        max_outputs: 1,
        ..GenConfig::default()
    };
    for seed in 0..100 {
        let program = random_program(seed, &cfg);
        assert_eq!(program.outputs.len(), 1);
        let case = random_case_with(&program, seed, &cfg).unwrap();
        let shapes: Vec<&[usize]> = case.inputs.iter().map(|t| t.shape.as_slice()).collect();
        let bindings = program.bind(&shapes, &case.params).unwrap();
        for shape in program.shapes(&bindings).unwrap() {
            assert!(shape.iter().product::<usize>() <= 8, "{shape:?}");
        }
        interp::run(&program, &case.inputs, &case.params)
            .unwrap_or_else(|e| panic!("{e}\n{program:#?}"));
    }
}

#[test]
fn cases_for_hand_written_programs_satisfy_their_assertions() {
    // The convolution of NNC's test, channel counts tied by `[=]`.
    let mut b = Builder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N", "H", "W", "C"]).unwrap();
    let w = b.input("w", DType::F32, &["O", "KH", "KW", "CW"]).unwrap();
    let shape = [
        "dA0",
        "dA1 - dB1 + 1",
        "dA2 - dB2 + 1",
        "dB1",
        "dB2",
        "dA3[=dB3]",
        "dB0",
    ];
    let xx = b
        .reindex(x, &shape, &[x, w], &["i0", "i1 + i3", "i2 + i4", "i5"])
        .unwrap();
    let ww = b
        .reindex(w, &shape, &[x, w], &["i6", "i3", "i4", "i5"])
        .unwrap();
    let prod = b.binary(BinaryOp::Mul, xx, ww).unwrap();
    let y = b.reduce(ReduceOp::Sum, &[3, 4, 5], prod).unwrap();
    let program = b.combine(&[x, w], &[y]).unwrap();
    let cfg = GenConfig {
        max_dim: 4,
        max_elements: 2048,
        ..GenConfig::default()
    };
    for seed in 0..20 {
        let case = random_case_with(&program, seed, &cfg).unwrap();
        let (xs, ws) = (&case.inputs[0].shape, &case.inputs[1].shape);
        assert_eq!(xs[3], ws[3], "channels agree");
        // The output height and width `dA1 - dB1 + 1` may be 0, never negative.
        assert!(xs[1] + 1 >= ws[1] && xs[2] + 1 >= ws[2], "{xs:?} {ws:?}");
        interp::run(&program, &case.inputs, &HashMap::new()).unwrap();
    }
}

#[test]
fn an_impossible_program_has_no_case() {
    let mut b = Builder::new(DType::F32);
    let x = b.input("x", DType::F32, &["3"]).unwrap();
    let y = b.input("y", DType::F32, &["4"]).unwrap();
    let z = b.reindex(x, &["dA0[=dB0]"], &[x, y], &["i0"]).unwrap();
    let program = b.combine(&[x, y], &[z]).unwrap();
    let err = random_case_with(&program, 0, &GenConfig::default()).unwrap_err();
    assert!(err.to_string().contains("3 == 4"), "{err}");
}

#[test]
fn cases_respect_a_minimum_size_and_fixed_dims_and_params() {
    let src = "param p\ninput x: f32[N, D]\ny = add(x, $p)\noutput y\n";
    let program =
        uop_codegen::text::parse_program(src, &uop_codegen::text::Registry::new()).unwrap();
    let cfg = GenConfig {
        min_dim: 2,
        max_dim: 4,
        dims: [("D".to_string(), 7)].into(),
        params: [("p".to_string(), 5)].into(),
        ..GenConfig::default()
    };
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..50 {
        let case = random_case_with(&program, seed, &cfg).unwrap();
        let shape = &case.inputs[0].shape;
        assert!((2..=4).contains(&shape[0]), "{shape:?}");
        assert_eq!(shape[1], 7);
        assert_eq!(case.params["p"], 5);
        seen.insert(shape[0]);
    }
    assert_eq!(seen.len(), 3, "every size from 2 to 4 is drawn: {seen:?}");
}

#[test]
fn a_program_without_a_case_in_the_limits_is_an_error_not_a_panic() {
    let src = "input x: f32[100, 100]\ny = neg(x)\noutput y\n";
    let program =
        uop_codegen::text::parse_program(src, &uop_codegen::text::Registry::new()).unwrap();
    let err = random_case(&program, 1).expect_err("10,000 elements exceed the default 256");
    assert!(err.to_string().contains("max_elements 256"), "{err}");
    let cfg = GenConfig {
        max_elements: 10_000,
        ..GenConfig::default()
    };
    assert!(random_case_with(&program, 1, &cfg).is_ok());
}

#[test]
fn a_fixed_dim_that_contradicts_an_assertion_is_named() {
    let src =
        "input x: f32[N]\ninput y: f32[M]\nassert N == M\na = neg(x)\nb = neg(y)\noutput a, b\n";
    let program =
        uop_codegen::text::parse_program(src, &uop_codegen::text::Registry::new()).unwrap();
    let cfg = GenConfig {
        dims: [("N".to_string(), 2), ("M".to_string(), 3)].into(),
        ..GenConfig::default()
    };
    let err = random_case_with(&program, 0, &cfg).expect_err("N = M cannot be 2 and 3");
    assert!(err.to_string().contains("an assertion makes it"), "{err}");
}
