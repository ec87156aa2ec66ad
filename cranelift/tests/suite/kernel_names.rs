//! Every kernel name a user can give either works or is refused with a reason
//! (the rule of `uop_codegen::backend::names`, docs/kernel-names.md), on every
//! target:
//!
//! - generated Rust, calling the crate `uop-runtime` and standalone: one scratch
//!   crate holds a kernel under every accepted name (an f32 and an f64 program),
//!   `#![deny(warnings)]`, and a binary calls each and prints its outputs, which
//!   must be the interpreter's;
//! - object files and their C headers: every accepted name is compiled to an
//!   object, and one C program including the C library's common headers and every
//!   header (`gcc -Wall -Wextra -Werror -pedantic`) links all of them and calls
//!   each kernel, whose outputs must be the interpreter's.
//!
//! The C half needs `gcc`: without it the test fails, unless `UOP_SKIP_C_TESTS`
//! is set, in which case it says so on its output.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::gcc_or_skip;
use uop_codegen::backend::names::NameError;
use uop_codegen::backend::rust::{EmitError, RustModule, RustOptions};
use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::testing::scratch::{SCRATCH_PROFILE, SCRATCH_TARGET};
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::{DType, Program};
use uop_cranelift::{self as cranelift, JitError, Options};

/// Softmax over rows and a scaled `tanh`: calls `exp` and `tanh` (the C
/// library's in an object file), reductions, temporaries.
const SOFTMAX: &str = "input x: f32[B, N]\nm = reduce_max(x, [1])\n\
    e = exp(sub(x, reindex(m, [B, N], [i0, 0])))\ns = reduce_sum(e, [1])\n\
    y = div(e, reindex(s, [B, N], [i0, 0]))\nz = mul(tanh(x), 0.5)\noutput y\noutput z\n";

/// Names of the C library and of POSIX.
const C_LIBRARY: &[&str] = &[
    "free", "calloc", "malloc", "memset", "memcpy", "exp", "expf", "log", "tanh", "pow", "erf",
    "sin", "sqrt", "fmaf", "printf", "puts", "stdout", "errno", "abort", "exit", "read", "write",
    "time", "isnan",
];
/// C keywords, and C++ ones (the header is `extern "C"` for C++ callers).
const C_KEYWORDS: &[&str] = &[
    "int",
    "double",
    "char",
    "return",
    "static_assert",
    "bool",
    "asm",
    "class",
    "new",
    "this",
];
/// Rust keywords.
const RUST_KEYWORDS: &[&str] = &[
    "fn", "type", "self", "match", "gen", "try", "async", "yield", "box", "mod", "crate",
];
/// Names the runtime, the generated code or the JIT use internally.
const RUNTIME: &[&str] = &[
    "spin_until",
    "set_threads",
    "threads",
    "cpu_level",
    "check_len",
    "offset",
    "in_parts",
    "line_phase",
    "floor_div",
    "zeroed",
    "vmath",
    "exp_f32",
    "erf_f64",
    "rt",
    "uop_runtime",
    "kernel_error",
    "uop_kernel",
    "uop_exp",
    "uop_alloc",
    "uop_free",
];
/// Names Rust's prelude, std or generated bodies give meaning to.
const RUST_NAMES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "drop",
    "vec",
    "i64",
    "usize",
    "f32",
    "f64",
    "str",
    "shapes",
    "sizes",
    "at",
    "assert",
    "panic",
    "some",
    "ok",
    "err",
    "result",
    "option",
    "len",
    "from",
    "into",
    "union",
    "macro_rules",
    "raw",
    "safe",
    "default",
    "auto",
    "x",
    "y",
    "x_shape",
    "i0",
    "v0",
];
/// Not names at all, or `main`.
const MALFORMED: &[&str] = &["main", "Softmax", "_k", "9lives", "soft-max", ""];

/// Every name the tests try.
fn all_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = [C_LIBRARY, C_KEYWORDS, RUST_KEYWORDS, RUNTIME, RUST_NAMES]
        .concat()
        .into_iter()
        .collect();
    names.sort();
    names.dedup();
    names
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn program(dtype: DType) -> Program {
    let text = match dtype {
        DType::F32 => SOFTMAX.to_string(),
        _ => SOFTMAX.replace("f32", "f64"),
    };
    parse_program(&text, &Registry::new()).expect("parses")
}

fn input(dtype: DType) -> Tensor {
    let data = (0..3 * 5)
        .map(|k| ((k * 7) % 11) as f64 * 0.3 - 1.5)
        .collect();
    Tensor::new(dtype, vec![3, 5], data).expect("consistent")
}

/// The interpreter's outputs `y` then `z`, one after the other.
fn expected(dtype: DType) -> Vec<f64> {
    let out = interp::run(&program(dtype), &[input(dtype)], &HashMap::new()).expect("runs");
    out.into_iter().flat_map(|t| t.data).collect()
}

/// Checks lines `NAME_T v1 v2 ...` against the interpreter, and that every
/// kernel of `want` printed one.
fn check_printed(stdout: &str, want: &[String]) {
    let mut seen = Vec::new();
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        let kernel = words.next().expect("a kernel name");
        let dtype = if kernel.ends_with("_f32") {
            DType::F32
        } else {
            DType::F64
        };
        let got: Vec<f64> = words
            .map(|w| w.parse().unwrap_or_else(|_| panic!("a number: {w}")))
            .collect();
        let expected = expected(dtype);
        assert_eq!(got.len(), expected.len(), "{line}");
        for (g, e) in got.iter().zip(&expected) {
            // The C library's exp/tanh may differ from Rust's in the last bits.
            assert!(
                (g - e).abs() <= 1e-6 * (1.0 + e.abs()),
                "{kernel}: {g} vs {e}"
            );
        }
        seen.push(kernel.to_string());
    }
    seen.sort();
    let mut want = want.to_vec();
    want.sort();
    assert_eq!(seen, want, "every kernel ran once");
}

/// Writes `text` unless the file already holds it (so cargo sees no change).
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("scratch dir");
    std::fs::write(path, text).expect("write scratch file");
}

// ------------------------------------------------------------------ Rust

const RUST_REFUSED: &[&str] = &[
    "fn", "type", "self", "match", "gen", "try", "async", "yield", "box", "mod", "crate", "return",
];

#[test]
fn rust_refuses_keywords_main_and_rt_with_reasons() {
    let p = program(DType::F32);
    let mut m = RustModule::new(RustOptions::default());
    for name in RUST_REFUSED {
        match m.add(name, &p) {
            Err(EmitError::InvalidName(e @ NameError::Keyword { .. })) => {
                assert!(e.to_string().contains("Rust keyword"), "{e}");
            }
            other => panic!("{name}: {:?}", other.map(|_| ())),
        }
    }
    for name in MALFORMED {
        let err = m.add(name, &p).map(|_| ()).expect_err(name);
        assert!(matches!(err, EmitError::InvalidName(_)), "{name}: {err}");
    }
    let err = m.add("rt", &p).map(|_| ()).expect_err("rt");
    assert!(err.to_string().contains("`rt`"), "{err}");
    assert!(m.names().next().is_none(), "nothing was added");
    m.add("free", &p).expect("a C library name is fine in Rust");
}

/// Names given to the f64 program (the others name the f32 one).
const RUST_F64: &[&str] = &["exp", "tanh", "erf_f64", "f64", "free", "int", "spin_until"];

/// The kernels of one file: every accepted name, the f64 program under the
/// names of [`RUST_F64`], the f32 one under the others.
fn rust_kernels() -> Vec<(String, DType)> {
    let refused = |n: &&str| RUST_REFUSED.contains(n) || *n == "rt";
    all_names()
        .into_iter()
        .filter(|n| !refused(n))
        .map(|n| {
            let dtype = if RUST_F64.contains(&n) {
                DType::F64
            } else {
                DType::F32
            };
            (n.to_string(), dtype)
        })
        .collect()
}

fn rust_module(kernels: &[(String, DType)], standalone: bool) -> String {
    let mut m = RustModule::new(RustOptions::default().standalone(standalone));
    for (name, dtype) in kernels {
        m.add(name, &program(*dtype))
            .unwrap_or_else(|e| panic!("`{name}` refused: {e}"));
    }
    m.source().expect("emits")
}

/// A binary calling every kernel of both files, printing `NAME_T values...`.
fn rust_main(kernels: &[(String, DType)]) -> String {
    let mut main = String::from(
        "fn print(kernel: &str, t: &str, y: &[f64], z: &[f64]) {\n    \
         let v: Vec<String> = y.iter().chain(z).map(|v| format!(\"{v:e}\")).collect();\n    \
         println!(\"{kernel}_{t} {}\", v.join(\" \"));\n}\n\nfn main() {\n",
    );
    for module in ["with_runtime", "standalone"] {
        for (name, dtype) in kernels {
            let t = if *dtype == DType::F32 { "f32" } else { "f64" };
            let _ = writeln!(
                main,
                "    {{\n        let x: Vec<{t}> = (0..15).map(|k| ((k * 7) % 11) as {t} * 0.3 - 1.5).collect();\n        \
                 let (mut y, mut z) = (vec![0.0 as {t}; 15], vec![0.0 as {t}; 15]);\n        \
                 names::{module}::{name}(&x, [3, 5], &mut y, &mut z).expect(\"runs\");\n        \
                 let f = |v: &[{t}]| v.iter().map(|&v| v as f64).collect::<Vec<f64>>();\n        \
                 print(\"{module}_{name}\", \"{t}\", &f(&y), &f(&z));\n    }}"
            );
        }
    }
    main.push_str("}\n");
    main
}

#[test]
fn every_accepted_name_compiles_without_warnings_and_runs_in_both_rust_modes() {
    let kernels = rust_kernels();
    assert!(kernels.len() > 50, "{} kernels", kernels.len());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernel_names_crate");
    let manifest = format!(
        "[package]\nname = \"names\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\nuop-runtime = {{ path = {:?} }}\n\n{SCRATCH_PROFILE}\n[workspace]\n",
        root().join("runtime")
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    let lib = "#![deny(warnings)]\n//! Kernels under every accepted name.\n\n\
               /// With the crate `uop-runtime`.\npub mod with_runtime;\n\
               /// Standalone.\npub mod standalone;\n";
    write_if_changed(&dir.join("src/lib.rs"), lib);
    write_if_changed(
        &dir.join("src/with_runtime.rs"),
        &rust_module(&kernels, false),
    );
    write_if_changed(&dir.join("src/standalone.rs"), &rust_module(&kernels, true));
    write_if_changed(&dir.join("src/main.rs"), &rust_main(&kernels));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["run", "--offline", "--quiet"])
        .current_dir(&dir)
        .env(
            "CARGO_TARGET_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(SCRATCH_TARGET),
        )
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "the kernels do not compile or run:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<String> = ["with_runtime", "standalone"]
        .iter()
        .flat_map(|m| {
            kernels.iter().map(move |(n, d)| {
                let t = if *d == DType::F32 { "f32" } else { "f64" };
                format!("{m}_{n}_{t}")
            })
        })
        .collect();
    check_printed(&String::from_utf8_lossy(&out.stdout), &want);
}

// ------------------------------------------------------------------ C

/// The names C refuses, each with what its error must say.
fn c_refused() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = C_LIBRARY.iter().map(|n| (*n, "C library")).collect();
    for kw in C_KEYWORDS {
        let language = if ["class", "new", "this"].contains(kw) {
            "C++ keyword"
        } else {
            "C keyword"
        };
        out.push((kw, language));
    }
    out.push(("try", "C++ keyword"));
    for kw in ["default", "auto", "union"] {
        out.push((kw, "C keyword"));
    }
    out.push(("assert", "C library"));
    out.push(("main", "entry point"));
    out.push(("size_t", "`_t`"));
    out.push(("Softmax", "lowercase snake_case"));
    out.push(("_k", "lowercase snake_case"));
    out
}

#[test]
fn object_files_headers_and_extern_blocks_refuse_c_names_with_reasons() {
    for dtype in [DType::F32, DType::F64] {
        let optimized = cranelift::optimized(&program(dtype)).expect("optimizes");
        for (name, why) in c_refused() {
            let errors = [
                cranelift::emit_object(&optimized, name, &Options::default()).map(|_| ()),
                cranelift::c_header(&optimized, name).map(|_| ()),
                cranelift::emit_clif(&optimized, name, &Options::default()).map(|_| ()),
                cranelift::rust_extern_block(&optimized, name).map(|_| ()),
            ];
            for e in errors {
                match e {
                    Err(e @ JitError::Name(_)) => {
                        assert!(e.to_string().contains(why), "{name}: {e}");
                        assert!(e.to_string().contains(&format!("`{name}`")) || name == "main");
                    }
                    other => panic!("{name} ({dtype}): {other:?}"),
                }
            }
        }
        // A Rust extern block also needs a name Rust accepts.
        let err = cranelift::rust_extern_block(&optimized, "fn").expect_err("fn");
        assert!(err.to_string().contains("Rust keyword"), "{err}");
    }
}

/// Names given to the f64 program in C (the others name the f32 one).
const C_F64: &[&str] = &["spin_until", "fn", "uop_exp", "exp_f32", "f64"];

/// The C kernels: every name C accepts.
fn c_kernels() -> Vec<(String, DType)> {
    let refused: Vec<&str> = c_refused().into_iter().map(|(n, _)| n).collect();
    all_names()
        .into_iter()
        .filter(|n| !refused.contains(n))
        .map(|n| {
            let dtype = if C_F64.contains(&n) {
                DType::F64
            } else {
                DType::F32
            };
            (n.to_string(), dtype)
        })
        .collect()
}

#[test]
fn every_accepted_c_name_links_into_one_c_program_built_with_werror() {
    if !gcc_or_skip("every_accepted_c_name_links_into_one_c_program_built_with_werror") {
        return;
    }
    let kernels = c_kernels();
    assert!(kernels.len() > 50, "{} kernels", kernels.len());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernel_names_c");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let mut main = String::from(
        "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\
         #include <stdint.h>\n#include <ctype.h>\n#include <time.h>\n#include <errno.h>\n",
    );
    let mut objects = Vec::new();
    for (name, dtype) in &kernels {
        let optimized = cranelift::optimized(&program(*dtype)).expect("optimizes");
        let object = cranelift::emit_object(&optimized, name, &Options::default())
            .unwrap_or_else(|e| panic!("`{name}`: {e}"));
        std::fs::write(dir.join(format!("{name}.o")), object).expect("writes");
        let header = cranelift::c_header(&optimized, name).expect("header");
        std::fs::write(dir.join(format!("{name}.h")), header).expect("writes");
        let _ = writeln!(main, "#include \"{name}.h\"");
        objects.push(format!("{name}.o"));
    }
    main.push_str(
        "\nstatic void print(const char *kernel, const char *t, const double *v) {\n    \
         printf(\"%s_%s\", kernel, t);\n    for (int k = 0; k < 30; k++) printf(\" %.9g\", v[k]);\n    \
         printf(\"\\n\");\n}\n\nint main(void) {\n    int64_t dims[2] = {3, 5};\n    double v[30];\n",
    );
    for (name, dtype) in &kernels {
        let (c, t) = if *dtype == DType::F32 {
            ("float", "f32")
        } else {
            ("double", "f64")
        };
        let _ = writeln!(
            main,
            "    {{\n        {c} in_x[15], out_y[15], out_z[15];\n        \
             for (int k = 0; k < 15; k++) in_x[k] = ({c})(((k * 7) % 11) * 0.3 - 1.5);\n        \
             const void *inputs[1] = {{in_x}};\n        void *outputs[2] = {{out_y, out_z}};\n        \
             int64_t out_dims[{up}_NUM_OUTPUT_DIMS];\n        \
             if ({name}_shapes(dims, NULL, out_dims) != UOP_OK) return 1;\n        \
             if ({name}(inputs, dims, NULL, outputs, out_dims) != UOP_OK) return 2;\n        \
             for (int k = 0; k < 15; k++) {{ v[k] = out_y[k]; v[15 + k] = out_z[k]; }}\n        \
             print(\"{name}\", \"{t}\", v);\n    }}",
            up = name.to_ascii_uppercase()
        );
    }
    main.push_str("    return 0;\n}\n");
    std::fs::write(dir.join("main.c"), main).expect("writes");
    let built = Command::new("gcc")
        .current_dir(&dir)
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "main.c",
        ])
        .args(&objects)
        .args(["-lm", "-o", "main"])
        .output()
        .expect("gcc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(dir.join("main")).output().expect("runs");
    assert!(run.status.success(), "exit {:?}", run.status);
    let want: Vec<String> = kernels
        .iter()
        .map(|(n, d)| format!("{n}_{}", if *d == DType::F32 { "f32" } else { "f64" }))
        .collect();
    check_printed(&String::from_utf8_lossy(&run.stdout), &want);
}
