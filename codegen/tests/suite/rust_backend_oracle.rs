//! The Rust backend against the reference interpreter on random programs.
//!
//! A batch of programs from the random generator (half f32, half f64) is emitted
//! into one scratch crate — every kernel with `Checks::Proven`, a quarter of them
//! also with `Checks::Full` — which is built once with `cargo build --offline`
//! under `CARGO_TARGET_TMPDIR`, unoptimized (so `get_unchecked` checks its bounds
//! in `Checks::Proven` kernels: a wrong proof fails the test instead of reading
//! past a buffer), with warnings denied. Its binary reads
//! random cases from a file, runs the kernels and prints the outputs bit for bit;
//! every output must match the interpreter's:
//!
//! - exactly, unless the program uses a function whose Rust implementation may
//!   differ from the interpreter's in the last bits (`exp`, `log`, `tanh`,
//!   `sigmoid`, `sin`, `cos`, `pow` in f32; `erf` in both types), or multiplies
//!   values that are then added (a sum, an add or a subtract: on FMA hardware the
//!   scheduled kernels round `a * b + c` once instead of twice);
//! - otherwise within a relative 1e-4 (f32) or 1e-12 (f64) of the larger of 1
//!   and the value.
//!
//! A quarter of the programs are also emitted with the `line` and `align` passes
//! off (module `unaligned`): the loops those marks split at a cache line then run
//! plainly, and must give the same results.
//!
//! Three kernels of the snapshots (matmul, conv2d, a row and a column sum) run at sizes up to 70 with
//! all passes and with `pack` and `share` disabled (tiles reading their loads in
//! place, inner parallel loops in equal parts), against the interpreter the same way.
//!
//! `UOP_RUST_FUZZ_CASES=N` runs N programs instead of the CI batch of 100.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use uop_codegen::backend::rust::{RustModule, RustOptions};
use uop_codegen::interp;
use uop_codegen::loops::LoopProgram;
use uop_codegen::tensor::Tensor;
use uop_codegen::testing::scratch::{SCRATCH_PROFILE, SCRATCH_TARGET};
use uop_codegen::testing::{GenConfig, random_case, random_case_with, random_program};
use uop_codegen::text::print_program;
use uop_codegen::uop::{BinaryOp, DType, Program, UnaryOp, Uop};

const CASES_PER_PROGRAM: u64 = 3;

/// Casts both ways (the random programs have none): floats truncated toward zero into
/// i32 (saturating; `x / 0` gives ±inf and NaN), i32 read back in the float type.
const CAST: &str = "\
input x: f32[N]
input k: i32[N]
a = cast(mul(x, 1000.5), \"i32\")
c = cast(div(x, 0.0), \"i32\")
y = add(add(cast(a, \"float\"), cast(k, \"float\")), cast(c, \"float\"))
output y
";

/// One kernel of the scratch crate: where it lives and what it computes.
struct Entry {
    module: &'static str,
    name: String,
    program: Program,
    loops: LoopProgram,
}

/// How closely a kernel must match the interpreter.
fn tolerance(p: &Program) -> f64 {
    let inexact_unary = |op: UnaryOp| match op {
        UnaryOp::Erf => true,
        UnaryOp::Exp
        | UnaryOp::Log
        | UnaryOp::Tanh
        | UnaryOp::Sigmoid
        | UnaryOp::Sin
        | UnaryOp::Cos => p.dtype == DType::F32,
        _ => false,
    };
    let binary = |want: &[BinaryOp]| {
        p.nodes
            .iter()
            .any(|n| matches!(&n.op, Uop::Binary { op, .. } if want.contains(op)))
    };
    let sums = p
        .nodes
        .iter()
        .any(|n| matches!(n.op, Uop::Reduce { .. } | Uop::ReindexReduce { .. }));
    let contracted = binary(&[BinaryOp::Mul]) && (sums || binary(&[BinaryOp::Add, BinaryOp::Sub]));
    let inexact = contracted
        || p.nodes.iter().any(|n| match &n.op {
            Uop::Unary { op, .. } => inexact_unary(*op),
            Uop::Binary {
                op: BinaryOp::Pow, ..
            } => p.dtype == DType::F32,
            _ => false,
        });
    match (inexact, p.dtype) {
        (false, _) => 0.0,
        (true, DType::F64) => 1e-12,
        (true, _) => 1e-4,
    }
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    got == want
        || (got.is_nan() && want.is_nan())
        || (tol > 0.0 && (got - want).abs() <= tol * want.abs().max(1.0))
}

fn rust_elem(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I32 => "i32",
    }
}

/// The scratch crate's `main.rs`: a driver per kernel and a dispatcher.
fn driver(entries: &[Entry]) -> String {
    let mut s = String::from(
        "use std::io::Read;\n\
         struct Input { shape: Vec<usize>, data: Vec<f64> }\n\
         fn rank<const R: usize>(s: &[usize]) -> [usize; R] { s.try_into().expect(\"rank\") }\n",
    );
    for e in entries {
        let p = &e.loops;
        let _ = writeln!(
            s,
            "#[allow(unused_variables)]\nfn run_{m}_{n}(ins: &[Input], params: &[i64], lens: &[usize]) -> Result<Vec<Vec<f64>>, String> {{",
            m = e.module,
            n = e.name
        );
        let mut args = Vec::new();
        for (k, t) in p.inputs.iter().enumerate() {
            let d = &p.tensors[t.0];
            let ty = rust_elem(d.dtype);
            let _ = writeln!(
                s,
                "  let a{k}: Vec<{ty}> = ins[{k}].data.iter().map(|&v| v as {ty}).collect();"
            );
            args.push(format!("&a{k}"));
            args.push(format!("rank::<{}>(&ins[{k}].shape)", d.shape.len()));
        }
        for k in 0..p.params.len() {
            args.push(format!("params[{k}]"));
        }
        for (k, t) in p.outputs.iter().enumerate() {
            let d = &p.tensors[t.0];
            let ty = rust_elem(d.dtype);
            // Garbage in the output buffers: a kernel must overwrite (or zero) them.
            let init = if d.dtype == DType::I32 { "7" } else { "7.5" };
            let _ = writeln!(s, "  let mut o{k}: Vec<{ty}> = vec![{init}; lens[{k}]];");
            args.push(format!("&mut o{k}"));
        }
        let _ = writeln!(
            s,
            "  {m}::{n}({args}).map_err(|e| e.to_string())?;",
            m = e.module,
            n = e.name,
            args = args.join(", ")
        );
        let outs: Vec<String> = (0..p.outputs.len())
            .map(|k| format!("o{k}.iter().map(|&v| v as f64).collect()"))
            .collect();
        let _ = writeln!(s, "  Ok(vec![{}])\n}}", outs.join(", "));
    }
    s.push_str(
        "fn main() {\n\
         let mut text = String::new();\n\
         std::io::stdin().read_to_string(&mut text).expect(\"stdin\");\n\
         let mut out = String::new();\n\
         for case in text.split(\"case \").skip(1) {\n\
           let mut lines = case.lines();\n\
           let head: Vec<&str> = lines.next().expect(\"head\").split(' ').collect();\n\
           let (mut ins, mut params, mut lens) = (Vec::new(), Vec::new(), Vec::new());\n\
           for line in lines {\n\
             let w: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();\n\
             match w.first() {\n\
               Some(&\"param\") => params.push(w[1].parse::<i64>().expect(\"param\")),\n\
               Some(&\"len\") => lens.push(w[1].parse::<usize>().expect(\"len\")),\n\
               Some(&\"input\") => {\n\
                 let r: usize = w[1].parse().expect(\"rank\");\n\
                 let shape = w[2..2 + r].iter().map(|d| d.parse().expect(\"dim\")).collect();\n\
                 let data = w[2 + r..].iter().map(|b| f64::from_bits(u64::from_str_radix(b, 16).expect(\"bits\"))).collect();\n\
                 ins.push(Input { shape, data });\n\
               }\n\
               _ => {}\n\
             }\n\
           }\n\
           let result = match (head[0], head[1]) {\n",
    );
    for e in entries {
        let _ = writeln!(
            s,
            "    (\"{m}\", \"{n}\") => run_{m}_{n}(&ins, &params, &lens),",
            m = e.module,
            n = e.name
        );
    }
    s.push_str(
        "    _ => Err(\"no such kernel\".to_string()),\n\
           };\n\
           match result {\n\
             Ok(outs) => {\n\
               out.push_str(\"ok\\n\");\n\
               for o in outs {\n\
                 out.push_str(\"out\");\n\
                 for v in o { out.push_str(&format!(\" {:x}\", v.to_bits())); }\n\
                 out.push('\\n');\n\
               }\n\
             }\n\
             Err(e) => out.push_str(&format!(\"err {e}\\n\")),\n\
           }\n\
         }\n\
         print!(\"{out}\");\n\
         }\n",
    );
    s
}

fn write_crate(dir: &Path, modules: &[(&str, String)], main: &str) {
    std::fs::create_dir_all(dir.join("src")).expect("scratch dir");
    // The generated code calls the runtime crate, as a user's crate would.
    let runtime = concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime");
    let manifest = format!(
        "[package]\nname = \"uop_rust_fuzz\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\nuop-runtime = {{ path = {runtime:?} }}\n\n\
         {SCRATCH_PROFILE}\n[workspace]\n"
    );
    // The kernels live in a library (as public modules, as a user's crate would
    // export them) with warnings denied; the test driver is the binary.
    let mut lib_rs = String::from("#![deny(warnings)]\n");
    let mut main_rs = String::new();
    for (m, src) in modules {
        let _ = writeln!(lib_rs, "pub mod {m};");
        let _ = writeln!(main_rs, "use uop_rust_fuzz::{m};");
        write_if_changed(&dir.join("src").join(format!("{m}.rs")), src);
    }
    main_rs.push_str(main);
    write_if_changed(&dir.join("src/lib.rs"), &lib_rs);
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    write_if_changed(&dir.join("src/main.rs"), &main_rs);
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    std::fs::write(path, text).expect("write scratch file");
}

fn build(dir: &Path) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(SCRATCH_TARGET);
    let output = Command::new(cargo)
        .args(["build", "--offline", "--quiet"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "the generated crate does not build:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    target.join("debug").join("uop_rust_fuzz")
}

fn case_text(
    module: &str,
    name: &str,
    inputs: &[Tensor],
    params: &[i64],
    lens: &[usize],
) -> String {
    let mut s = format!("case {module} {name}\n");
    for p in params {
        let _ = writeln!(s, "param {p}");
    }
    for l in lens {
        let _ = writeln!(s, "len {l}");
    }
    for t in inputs {
        let _ = write!(s, "input {}", t.shape.len());
        for d in &t.shape {
            let _ = write!(s, " {d}");
        }
        for v in &t.data {
            let _ = write!(s, " {:x}", v.to_bits());
        }
        s.push('\n');
    }
    s
}

fn parse_results(stdout: &str) -> Vec<Result<Vec<Vec<f64>>, String>> {
    let mut results = Vec::new();
    for line in stdout.lines() {
        if line == "ok" {
            results.push(Ok(Vec::new()));
        } else if let Some(e) = line.strip_prefix("err ") {
            results.push(Err(e.to_string()));
        } else if let Some(rest) = line.strip_prefix("out") {
            let values = rest
                .split_whitespace()
                .map(|b| f64::from_bits(u64::from_str_radix(b, 16).expect("bits")))
                .collect();
            if let Some(Ok(outs)) = results.last_mut() {
                outs.push(values);
            }
        }
    }
    results
}

#[test]
fn generated_kernels_match_the_interpreter_on_random_programs() {
    let programs: u64 = std::env::var("UOP_RUST_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let mut proven = RustModule::new(RustOptions::default());
    let mut full = RustModule::new(RustOptions::safe());
    let mut unmarked = RustOptions::default();
    unmarked.compile = unmarked.compile.disable_pass("line").disable_pass("align");
    let mut unaligned = RustModule::new(unmarked);
    let mut entries = Vec::new();
    for seed in 0..programs {
        let cfg = GenConfig {
            dtype: if seed % 2 == 0 {
                DType::F32
            } else {
                DType::F64
            },
            ..GenConfig::default()
        };
        let program = random_program(seed, &cfg);
        let name = format!("k{seed}");
        proven.add(&name, &program).expect("emit proven");
        let loops = proven.loops(&name).expect("added").clone();
        // A quarter of the programs in each of the other modules.
        for (module, copy, pick) in [("full", &mut full, 0), ("unaligned", &mut unaligned, 1)] {
            if seed % 4 == pick {
                copy.add(&name, &program).expect(module);
                entries.push(Entry {
                    module,
                    name: name.clone(),
                    program: program.clone(),
                    loops: copy.loops(&name).expect("added").clone(),
                });
            }
        }
        entries.push(Entry {
            module: "proven",
            name,
            program,
            loops,
        });
    }
    // The unaligned kernels differ from the proven ones where it counts: some of
    // their proven copies split loops at a cache line.
    let split_somewhere = entries.iter().filter(|e| e.module == "unaligned").any(|e| {
        let marked = proven.loops(&e.name).expect("added");
        marked
            .blocks
            .iter()
            .flat_map(|b| &b.loops)
            .any(|l| l.schedule.line_split)
    });
    assert!(
        split_somewhere || programs < 8,
        "no unaligned kernel lost a [line split]"
    );
    // Kernels that tile, pack and share columns out, at sizes large enough for
    // their tiles, with the `pack` and `share` passes on (in `proven`) and off (in
    // `unpacked`: the tiles read their loads in place, inner parallel loops are
    // shared out in equal parts).
    let mut off = RustOptions::default();
    off.compile = off.compile.disable_pass("pack").disable_pass("share");
    let mut unpacked = RustModule::new(off);
    let kernels = [
        ("matmul", crate::rust_backend::MATMUL),
        ("conv2d", crate::rust_backend::CONV2D),
        ("sums", crate::rust_backend::SUMS),
        ("cast", CAST),
    ];
    for (kernel, text) in kernels {
        let program = uop_codegen::text::parse_program(text, &uop_codegen::text::Registry::new())
            .expect("parses");
        let name = format!("big_{kernel}");
        proven.add(&name, &program).expect("emit proven");
        unpacked.add(&name, &program).expect("emit unpacked");
        for (module, m) in [("proven", &proven), ("unpacked", &unpacked)] {
            entries.push(Entry {
                module,
                name: name.clone(),
                program: program.clone(),
                loops: m.loops(&name).expect("added").clone(),
            });
        }
    }
    let unpacked_source = unpacked.source().expect("unpacked source");
    assert!(
        !unpacked_source.contains("_panel") && !unpacked_source.contains("range_in_steps"),
        "with `pack` and `share` off, no panel and no line-aligned shares"
    );
    let proven_source = proven.source().expect("proven source");
    assert!(proven_source.contains("_panel") && proven_source.contains("range_in_steps"));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rust_backend_oracle");
    let modules = [
        ("proven", proven_source),
        ("full", full.source().expect("full source")),
        ("unaligned", unaligned.source().expect("unaligned source")),
        ("unpacked", unpacked_source),
    ];
    write_crate(&dir, &modules, &driver(&entries));
    let binary = build(&dir);

    // Sizes up to 70 (a tile is at most 5 rows by 16 columns on AVX2).
    let big = GenConfig {
        max_dim: 70,
        max_elements: 40_000,
        ..GenConfig::default()
    };
    let mut input = String::new();
    let mut expected = Vec::new();
    for (k, e) in entries.iter().enumerate() {
        for c in 0..CASES_PER_PROGRAM {
            let case = if e.name.starts_with("big_") {
                // The same cases for a kernel with and without `pack` and `share`.
                let seed = e.name.bytes().map(u64::from).sum::<u64>() * 1000 + c;
                random_case_with(&e.program, seed, &big).expect("sizes")
            } else {
                random_case(&e.program, 1000 * k as u64 + c).expect("a case")
            };
            let want = interp::run(&e.program, &case.inputs, &case.params);
            let lens: Vec<usize> = match &want {
                Ok(outs) => outs.iter().map(|t| t.data.len()).collect(),
                Err(_) => vec![0; e.program.outputs.len()],
            };
            let params: Vec<i64> = e.program.params.iter().map(|p| case.params[p]).collect();
            input.push_str(&case_text(e.module, &e.name, &case.inputs, &params, &lens));
            expected.push((k, case, want));
        }
    }
    let mut child = Command::new(&binary)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run the generated crate");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("write cases");
    }
    let output = child.wait_with_output().expect("generated crate output");
    assert!(output.status.success(), "the generated crate failed");
    let results = parse_results(&String::from_utf8_lossy(&output.stdout));
    assert_eq!(results.len(), expected.len(), "one result per case");

    let mut failures = Vec::new();
    // Each big kernel's outputs with all passes, by name and case, to compare the
    // unpacked kernel's with bit for bit.
    let mut big_outputs: Vec<(String, u64, Vec<Vec<f64>>)> = Vec::new();
    let mut case_of = std::collections::HashMap::new();
    for ((k, case, want), got) in expected.iter().zip(results) {
        let e = &entries[*k];
        // The big kernels' sums are reassociated at these sizes (`[split]`,
        // `[pieces]`, blocked tiles): within 1e-4 of the interpreter (f32).
        let big = e.name.starts_with("big_");
        let tol = if big { 1e-4 } else { tolerance(&e.program) };
        let nth = case_of.entry((e.module, e.name.clone())).or_insert(0_u64);
        *nth += 1;
        if big && let Ok(outs) = &got {
            let same = big_outputs
                .iter()
                .find(|(n, c, _)| *n == e.name && *c == *nth);
            match same {
                Some((_, _, packed)) if packed != outs => failures.push(format!(
                    "{}::{} case {nth}: differs from the kernel with all passes",
                    e.module, e.name
                )),
                Some(_) => {}
                None => big_outputs.push((e.name.clone(), *nth, outs.clone())),
            }
        }
        let report = |what: String| {
            format!(
                "{}::{} (case inputs {:?}, params {:?}): {what}\nprogram:\n{}\nloops:\n{}",
                e.module,
                e.name,
                case.inputs.iter().map(|t| &t.shape).collect::<Vec<_>>(),
                case.params,
                print_program(&e.program),
                e.loops
            )
        };
        match (want, got) {
            (Ok(want), Ok(got)) => {
                for (o, (w, g)) in want.iter().zip(&got).enumerate() {
                    let bad = w.data.iter().zip(g).position(|(&w, &g)| !close(g, w, tol));
                    if let Some(at) = bad {
                        failures.push(report(format!(
                            "output {o} differs at {at}: got {}, want {}",
                            g[at], w.data[at]
                        )));
                    }
                }
            }
            (Err(_), Err(_)) => {}
            (Ok(_), Err(msg)) => {
                failures.push(report(format!("kernel refused a valid case: {msg}")))
            }
            (Err(err), Ok(_)) => {
                failures.push(report(format!("kernel accepted an invalid case ({err})")))
            }
        }
    }
    let count = failures.len();
    assert!(
        failures.is_empty(),
        "{count} of {} cases differ:\n\n{}",
        expected.len(),
        failures
            .into_iter()
            .take(3)
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}
