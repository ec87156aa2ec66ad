//! `uop fuzz`: random programs through the differential oracle
//! ([`uop_codegen::testing::check_program`]), shrinking the first failure to a
//! `.uop` reproducer.
//!
//! The flags are shaped for more backends: `--backend NAME` picks what is checked
//! against the interpreters, and `--self` is the alias for `--backend loops`, the
//! optimizer's own loop IR (lowering, each pass alone, the pipeline);
//! `--backend cranelift` adds the JIT-compiled machine code as one more stage. (The
//! Rust backend is fuzzed by its test, which compiles batches of programs into a
//! scratch crate: `UOP_RUST_FUZZ_CASES=N cargo test --profile fast-build --test
//! rust_backend_oracle`.)
//!
//! Program `k` of a run has seed `--seed + k` (its case uses the same seed), so the
//! seed printed with a failure reproduces it alone: `uop fuzz --self --seed S --cases 1`.
//!
//! `uop fuzz FILE` checks one program of yours instead ([`crate::testing::check_op`]):
//! random sizes (`--min-size`, `--max-size`, fixed ones with `--dim`) and data, every
//! stage and the JIT (not with `--self` / `--backend loops`) against the reference
//! interpreter; a failing case is named by its seed, which reruns it alone.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use uop_codegen::testing::{
    CheckOptions, Failure, GenConfig, Tolerance, check_program, random_case_with, random_program,
    reproducer, shrink_failure,
};
use uop_codegen::uop::Program;
use uop_cranelift::CraneliftBackend;

use super::{CliError, fail, int_assignments, pass_options};
use crate::testing::{OpCheck, OpCheckError, check_op};

/// What `uop fuzz` checks against the interpreters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FuzzBackend {
    /// The optimizer: the loop IR before passes, after each pass alone and after the
    /// whole pipeline (what `--self` means).
    Loops,
    /// The Cranelift JIT, after the optimizer's stages. Vectorized reductions reassociate
    /// float additions, so values are compared within rel 1e-4, abs 1e-5 (`Tolerance`).
    Cranelift,
}

impl FuzzBackend {
    /// The flag that selects this backend, for the rerun hint.
    fn flag(self) -> &'static str {
        match self {
            FuzzBackend::Loops => "--self",
            FuzzBackend::Cranelift => "--backend cranelift",
        }
    }
}

/// Arguments of `uop fuzz`.
#[derive(Args, Debug)]
pub struct FuzzArgs {
    /// A program of yours (`.uop`) to check on random sizes and data, every stage and
    /// the JIT against the reference interpreter, instead of random programs.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// With FILE: the size of a named dimension in every case, as NAME=INT (the others
    /// are drawn).
    #[arg(long = "dim", value_name = "NAME=INT", requires = "file")]
    dims: Vec<String>,
    /// With FILE: the value of a $param in every case, as NAME=INT (the others are
    /// drawn from 0 to 3).
    #[arg(long = "param", value_name = "NAME=INT", requires = "file")]
    params: Vec<String>,
    /// With FILE: the smallest size drawn for a named dimension (0 allows empty tensors).
    #[arg(long = "min-size", value_name = "N", default_value_t = OpCheck::default().min_dim,
          requires = "file")]
    min_size: usize,
    /// With FILE: the largest size drawn for a named dimension.
    #[arg(long = "max-size", value_name = "N", default_value_t = OpCheck::default().max_dim,
          requires = "file")]
    max_size: usize,
    /// Check the optimizer against the interpreters (the same as `--backend loops`).
    #[arg(long = "self", conflicts_with = "backend")]
    self_check: bool,
    /// What to check against the reference interpreter.
    #[arg(long, value_enum)]
    backend: Option<FuzzBackend>,
    /// How many random programs to check.
    #[arg(long, default_value_t = 100, value_name = "N")]
    cases: u64,
    /// Seed of the first program; program k uses seed S + k.
    #[arg(long, default_value_t = 0, value_name = "S")]
    seed: u64,
    /// Roughly how many uops each random program has (1 to 256).
    #[arg(long, value_name = "K", default_value_t = GenConfig::default().max_nodes,
          value_parser = max_nodes, conflicts_with = "file")]
    max_nodes: usize,
    /// Skip this optimizer pass, alone and in the pipeline (repeatable).
    #[arg(long = "disable-pass", value_name = "NAME")]
    disable_pass: Vec<String>,
}

/// The largest `--max-nodes`: every random program is run on every path and a failure
/// is shrunk, so bigger programs only make a run take very long without finding more.
pub const MAX_NODES: usize = 256;

/// Parses `--max-nodes`: an integer from 1 to [`MAX_NODES`].
fn max_nodes(arg: &str) -> Result<usize, String> {
    let n: usize = arg
        .parse()
        .map_err(|_| format!("`{arg}` is not a whole number"))?;
    if (1..=MAX_NODES).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "{n} is out of range: random programs have 1 to {MAX_NODES} uops (larger \
             ones take very long to check and to shrink)"
        ))
    }
}

/// Runs `uop fuzz`.
pub fn fuzz(args: &FuzzArgs) -> Result<(), CliError> {
    if let Some(file) = &args.file {
        return fuzz_file(args, file);
    }
    let backend = args.backend.unwrap_or(FuzzBackend::Loops);
    let pass_opts = pass_options(&args.disable_pass)?;
    let cfg = GenConfig {
        max_nodes: args.max_nodes,
        ..GenConfig::default()
    };
    let opts = match backend {
        // The built-in stages of check_program are exactly the optimizer's.
        FuzzBackend::Loops => CheckOptions {
            disabled_passes: pass_opts.disabled,
            ..CheckOptions::default()
        },
        FuzzBackend::Cranelift => CheckOptions {
            disabled_passes: pass_opts.disabled,
            tolerance: Some(Tolerance {
                abs: 1e-5,
                rel: 1e-4,
            }),
            backends: vec![Box::new(CraneliftBackend)],
        },
    };
    let found = quietly(|| search(args, &cfg, &opts))?;
    let Some((seed, failure)) = found else {
        println!(
            "{} random programs (seeds {}..{}) agree on every stage",
            args.cases,
            args.seed,
            args.seed.wrapping_add(args.cases)
        );
        return Ok(());
    };
    // An empty directory joins to a bare file name: the message shows `fuzz-failure-S.uop`.
    report(args, seed, &failure, &cfg, &opts, Path::new(""))
}

/// `uop fuzz FILE`: the program through [`crate::testing::check_op`] (`--backend
/// loops` leaves the JIT out).
fn fuzz_file(args: &FuzzArgs, file: &Path) -> Result<(), CliError> {
    let program = super::load_program(file, "fuzz")?;
    let pass_opts = pass_options(&args.disable_pass)?;
    let opts = OpCheck {
        cases: args.cases,
        seed: args.seed,
        min_dim: args.min_size,
        max_dim: args.max_size,
        dims: int_assignments("--dim", &args.dims)?.into_iter().collect(),
        params: int_assignments("--param", &args.params)?
            .into_iter()
            .collect(),
        disabled_passes: pass_opts.disabled,
        jit: args.backend != Some(FuzzBackend::Loops) && !args.self_check,
        ..OpCheck::default()
    };
    if opts.min_dim > opts.max_dim {
        return fail(format!(
            "--min-size {} is larger than --max-size {}",
            opts.min_dim, opts.max_dim
        ));
    }
    match quietly(|| check_op(&program, &opts)) {
        Ok(report) => {
            println!("{}: {report}", file.display());
            Ok(())
        }
        Err(OpCheckError::Mismatch {
            seed,
            case,
            mismatch,
        }) => fail(format!(
            "{}: case seed {seed} ({case}): {mismatch}\nrerun it alone: uop fuzz {} --seed {seed} --cases 1{}",
            file.display(),
            file.display(),
            rerun_flags(args)
        )),
        Err(e) => fail(format!("{}: {e}", file.display())),
    }
}

/// The flags that shape the cases, for the rerun hint.
fn rerun_flags(args: &FuzzArgs) -> String {
    let mut out = String::new();
    for d in &args.dims {
        out.push_str(&format!(" --dim {d}"));
    }
    for p in &args.params {
        out.push_str(&format!(" --param {p}"));
    }
    out.push_str(&format!(
        " --min-size {} --max-size {}",
        args.min_size, args.max_size
    ));
    for p in &args.disable_pass {
        out.push_str(&format!(" --disable-pass {p}"));
    }
    out
}

/// Checks the programs in order, with a progress bar; the first failure and its seed.
fn search(
    args: &FuzzArgs,
    cfg: &GenConfig,
    opts: &CheckOptions,
) -> Result<Option<(u64, Failure)>, CliError> {
    let bar = ProgressBar::new(args.cases);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} programs, {elapsed} ({eta} left)")
    {
        bar.set_style(style);
    }
    for k in 0..args.cases {
        let seed = args.seed.wrapping_add(k);
        let program = random_program(seed, cfg);
        let case = random_case_with(&program, seed, cfg).map_err(|e| {
            CliError(format!(
                "seed {seed}: the generator made a program it has no case for ({e}); \
                 this is a bug in uop's generator"
            ))
        })?;
        if let Err(mismatch) = check_program(&program, &case, opts) {
            bar.abandon();
            return Ok(Some((
                seed,
                Failure {
                    program,
                    case,
                    mismatch,
                },
            )));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(None)
}

/// Shrinks the failure, prints it with its reproducer, writes the reproducer file
/// `fuzz-failure-SEED.uop` into `dir`; always an error (the exit code says "failed").
fn report(
    args: &FuzzArgs,
    seed: u64,
    failure: &Failure,
    cfg: &GenConfig,
    opts: &CheckOptions,
    dir: &Path,
) -> Result<(), CliError> {
    println!("seed {seed}: {}", failure.mismatch);
    eprintln!(
        "shrinking a program of {} uops...",
        computed_nodes(&failure.program)
    );
    let small = quietly(|| shrink_failure(failure, cfg, opts, seed));
    let repro = reproducer(&small.program);
    let backend = args.backend.unwrap_or(FuzzBackend::Loops);
    let mut text = format!(
        "# uop fuzz: seed {seed} (rerun: uop fuzz {} --seed {seed} --cases 1 --max-nodes {})\n",
        backend.flag(),
        args.max_nodes
    );
    for line in small.mismatch.to_string().lines() {
        text.push_str(&format!("# {line}\n"));
    }
    text.push_str(&format!("# fails on {}\n", describe_case(&small)));
    if let Some(problem) = &repro.problem {
        text.push_str(&format!("# warning: {problem}\n"));
    }
    text.push_str(&repro.text);
    let n = computed_nodes(&small.program);
    println!(
        "shrunk to {n} uop{}: {}\n",
        if n == 1 { "" } else { "s" },
        small.mismatch
    );
    print!("{text}");
    let path = dir.join(format!("fuzz-failure-{seed}.uop"));
    std::fs::write(&path, &text)
        .map_err(|e| CliError(format!("cannot write {}: {e}", path.display())))?;
    fail(format!(
        "seed {seed} fails; reproducer written to {}",
        path.display()
    ))
}

fn computed_nodes(p: &Program) -> usize {
    p.nodes.len() - p.inputs.len()
}

/// The input shapes and params of the shrunk case, e.g. `x0: [3, 1], $p0 = 2`.
fn describe_case(f: &Failure) -> String {
    crate::testing::describe_case(&f.program, &f.case)
}

/// Runs `f` without the default panic message: stages that panic are caught and
/// reported by the oracle, and shrinking may make them panic hundreds of times.
/// A panic that escapes `f` (a bug outside the stages) is still shown.
fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    out.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("uop fuzz panicked: {message}");
        std::panic::resume_unwind(payload)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use uop_codegen::tensor::Tensor;
    use uop_codegen::testing::{Backend, Case, Stage};
    use uop_codegen::text::{Registry, parse_program};
    use uop_codegen::{interp, uop::Uop};

    /// Wrong wherever a program takes an `exp`: adds 1 to every output element.
    struct ExpIsOff;

    impl Backend for ExpIsOff {
        fn name(&self) -> String {
            "exp-is-off".into()
        }

        fn run(&self, p: &Program, case: &Case) -> Result<Vec<Tensor>, String> {
            let mut out = interp::run(p, &case.inputs, &case.params).map_err(|e| e.to_string())?;
            if p.nodes.iter().any(|n| n.op.kind() == "exp") {
                out.iter_mut()
                    .flat_map(|t| t.data.iter_mut())
                    .for_each(|v| *v += 1.0);
            }
            Ok(out)
        }
    }

    #[test]
    fn a_failure_is_shrunk_printed_and_written_as_a_reproducer() {
        let dir = std::env::temp_dir().join(format!("uop-fuzz-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let args = FuzzArgs {
            file: None,
            dims: vec![],
            params: vec![],
            min_size: 1,
            max_size: 8,
            self_check: true,
            backend: None,
            cases: 1,
            seed: 0,
            max_nodes: 12,
            disable_pass: vec![],
        };
        let cfg = GenConfig::default();
        let opts = CheckOptions {
            backends: vec![Box::new(ExpIsOff)],
            ..CheckOptions::default()
        };
        let src = "input x: f32[N]\ninput y: f32[N]\na = exp(x)\nb = mul(a, y)\nc = neg(y)\noutput b, c\n";
        let program = parse_program(src, &Registry::new()).expect("valid");
        let case = random_case_with(&program, 7, &cfg).expect("a case");
        let mismatch = check_program(&program, &case, &opts).expect_err("exp is off");
        let failure = Failure {
            program,
            case,
            mismatch,
        };
        let err = report(&args, 7, &failure, &cfg, &opts, &dir).expect_err("a failure");
        let path = dir.join("fuzz-failure-7.uop");
        assert!(err.0.contains(&path.display().to_string()), "{err}");
        let text = std::fs::read_to_string(&path).expect("the reproducer is written");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            text.starts_with("# uop fuzz: seed 7 (rerun: uop fuzz --self --seed 7"),
            "{text}"
        );
        assert!(text.contains("# fails on x: ["), "{text}");
        let small = parse_program(&text, &Registry::new()).expect("the reproducer parses");
        let computed: Vec<&str> = small
            .nodes
            .iter()
            .filter(|n| n.op != Uop::Input)
            .map(|n| n.op.kind())
            .collect();
        assert_eq!(computed, vec!["exp"], "{text}");
        assert_eq!(failure.mismatch.stage, Stage::Backend("exp-is-off".into()));
    }
}
