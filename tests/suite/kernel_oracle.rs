//! The oracle's entries of generated Rust kernels (`RustOptions::oracle`,
//! `uop_build::Build::oracle` in a build script): `NAME_program` and `NAME_dyn` compile
//! without warnings or clippy lints in a user crate, and `uop::testing::check_kernel`
//! checks the real generated kernels through them against the reference
//! interpreter. The scratch binary runs one kernel's `NAME_dyn` per call on the case
//! it reads from stdin; the test's kernel closure is that process.

use std::io::Write as _;
use std::process::{Command, Stdio};

use uop::codegen::backend::rust::{RustModule, RustOptions};
use uop::codegen::text::parse_program;
use uop::testing::{DynOutputs, OpCheck, OpCheckError, check_kernel};

use crate::common::{cargo_in_linted, scratch_crate};

/// Programs covering what the adapter converts: f32 and f64, an i32 input, a
/// `$param`, a rank-0 input, two outputs of different ranks.
const PROGRAMS: &[(&str, &str)] = &[
    (
        "softmax_rows",
        "input x: f32[B, N]\ny = softmax(x, axis=1)\noutput y\n",
    ),
    (
        "gather_scaled",
        "param k\ninput t: f64[V, D]\ninput i: i32[N, D]\ninput s: f64[]\n\
         g = select(t, i, axis=0)\nsb = reindex(s, [N, D], [])\nh = mul(g, sb)\n\
         r = reduce_sum(h, [1])\nout = add(r, $k)\noutput h, out\n",
    ),
    (
        "matmul",
        "input a: f32[M, K]\ninput b: f32[K, N]\nc = matmul(a, b)\noutput c\n",
    ),
];

/// The scratch binary: reads `NAME` and the case, calls `kernels::NAME_dyn`, prints
/// each output as `out RANK DIMS... VALUES...` (or `err MESSAGE`).
fn main_rs() -> String {
    let mut arms = String::new();
    for (name, _) in PROGRAMS {
        arms.push_str(&format!(
            "        \"{name}\" => kernels::{name}_dyn(&refs, &params),\n"
        ));
    }
    format!(
        r#"#![deny(warnings)]
mod kernels {{
    include!("kernels.rs");
}}

use std::io::Read;

fn main() {{
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).expect("stdin");
    let mut lines = text.lines();
    let name = lines.next().expect("a kernel name");
    let mut inputs: Vec<(Vec<f64>, Vec<usize>)> = Vec::new();
    let mut params: Vec<i64> = Vec::new();
    for line in lines {{
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first() {{
            Some(&"param") => params.push(words[1].parse().expect("param")),
            Some(&"input") => {{
                let rank: usize = words[1].parse().expect("rank");
                let shape = words[2..2 + rank].iter().map(|w| w.parse().expect("dim")).collect();
                let data = words[2 + rank..].iter().map(|w| w.parse().expect("value")).collect();
                inputs.push((data, shape));
            }}
            _ => {{}}
        }}
    }}
    let refs: Vec<(&[f64], &[usize])> =
        inputs.iter().map(|(d, s)| (d.as_slice(), s.as_slice())).collect();
    let result = match name {{
{arms}        _ => Err(format!("no kernel {{name}}")),
    }};
    match result {{
        Ok(outputs) => {{
            for (shape, data) in outputs {{
                let mut line = format!("out {{}}", shape.len());
                for d in &shape {{
                    line.push_str(&format!(" {{d}}"));
                }}
                for v in &data {{
                    line.push_str(&format!(" {{v:?}}"));
                }}
                println!("{{line}}");
            }}
        }}
        Err(e) => println!("err {{e}}"),
    }}
}}
"#
    )
}

/// Runs the built scratch binary on one case.
fn run_binary(
    binary: &std::path::Path,
    name: &str,
    inputs: &[(&[f64], &[usize])],
    params: &[i64],
) -> Result<DynOutputs, String> {
    let mut case = format!("{name}\n");
    for (data, shape) in inputs {
        case.push_str(&format!("input {}", shape.len()));
        for d in *shape {
            case.push_str(&format!(" {d}"));
        }
        for v in *data {
            case.push_str(&format!(" {v:?}"));
        }
        case.push('\n');
    }
    for p in params {
        case.push_str(&format!("param {p}\n"));
    }
    let mut child = Command::new(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(case.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if let Some(e) = text.strip_prefix("err ") {
        return Err(e.trim().to_string());
    }
    text.lines()
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let rank: usize = words[1].parse().map_err(|_| line.to_string())?;
            let shape = words[2..2 + rank]
                .iter()
                .map(|w| w.parse().unwrap_or(0))
                .collect();
            let data = words[2 + rank..]
                .iter()
                .map(|w| w.parse().unwrap_or(f64::NAN))
                .collect();
            Ok((shape, data))
        })
        .collect()
}

#[test]
fn generated_kernels_are_checked_by_the_oracle_through_their_dyn_entries() {
    let registry = uop::ops::registry();
    let mut module = RustModule::new(RustOptions::default().oracle(true));
    for (name, text) in PROGRAMS {
        let program = parse_program(text, &registry).expect("parses");
        module.add(name, &program).expect("adds");
    }
    let source = module.source().expect("emits");
    let dir = scratch_crate(
        "uop_kernel_oracle",
        "",
        &[("main.rs", main_rs()), ("kernels.rs", source)],
    );
    let out = cargo_in_linted(&dir, "build", &[]);
    assert!(
        out.status.success(),
        "the oracle entries do not compile cleanly:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let binary = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(uop::codegen::testing::scratch::SCRATCH_TARGET)
        .join("debug")
        .join("uop_kernel_oracle");
    let module_source = std::fs::read_to_string(dir.join("src/kernels.rs")).expect("reads");
    for (name, _) in PROGRAMS {
        // The program text the kernel carries is what the oracle runs.
        let marker = format!("pub fn {name}_program() -> &'static str {{");
        assert!(module_source.contains(&marker), "{name}: no {marker}");
        let program_text = program_text(&module_source, name);
        let opts = OpCheck {
            cases: 8,
            ..OpCheck::default()
        };
        let kernel = |inputs: &[(&[f64], &[usize])], params: &[i64]| {
            run_binary(&binary, name, inputs, params)
        };
        let report =
            check_kernel(&program_text, kernel, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(report.cases, 8, "{name}");
    }
}

/// The string literal `NAME_program` returns, unescaped.
fn program_text(source: &str, name: &str) -> String {
    let start = source
        .find(&format!("pub fn {name}_program()"))
        .expect("the program function");
    let open = start + source[start..].find('"').expect("a literal");
    let close = open + 1 + source[open + 1..].find("\"\n").expect("its end");
    source[open + 1..close]
        .replace("\\n", "\n")
        .replace("\\\"", "\"")
}

#[test]
fn a_wrong_kernel_is_caught_with_its_case() {
    let program = "input x: f32[N]\ny = relu(x)\noutput y\n";
    let wrong = |inputs: &[(&[f64], &[usize])], _: &[i64]| -> Result<DynOutputs, String> {
        let (data, shape) = inputs[0];
        // max(x, 0) written as |x|: right on every positive element only.
        Ok(vec![(
            shape.to_vec(),
            data.iter().map(|v| v.abs()).collect(),
        )])
    };
    let err = check_kernel(program, wrong, &OpCheck::default()).expect_err("|x| is not relu");
    let OpCheckError::Mismatch { case, .. } = &err else {
        panic!("{err}")
    };
    assert!(case.starts_with("x: ["), "{case}");
    assert!(err.to_string().contains("the generated kernel"), "{err}");
}
