//! Emitted Rust is clean whatever the user's names (issue 40, item 5): graphs and
//! programs whose inputs, values, outputs and functions are named like Rust
//! keywords, the module's own items (`k0`, `arena`, `k0_shapes`), the kernels'
//! parameters and locals (`part`, `in_parts`, `cpu_level`, `e_row`), the runtime's
//! items and the generated names' patterns (`t4`, `v0`, `in0`), plus a kernel named
//! after a file with a non-ASCII name, all in one scratch crate checked with
//! `#![deny(warnings)]` (one `cargo check`: the names are batched into few graphs).

use uop::codegen::backend::rust::{RustModule, RustOptions};
use uop::codegen::text::parse_program;
use uop_graph::emit::GraphModule;
use uop_graph::text::parse_graph;

use crate::common;
use common::{cargo_in, scratch, scratch_crate, stderr, uop_in};

/// Names a user may write that the generated code also has a use for.
const HOSTILE: &[&str] = &[
    // Rust keywords and reserved words.
    "type",
    "match",
    "loop",
    "struct",
    "self",
    "mod",
    "use",
    "impl",
    "async",
    "await",
    "crate",
    "super",
    "dyn",
    "move",
    "ref",
    "break",
    "continue",
    "extern",
    "static",
    "unsafe",
    "pub",
    "enum",
    "trait",
    "mut",
    "box",
    "yield",
    "try",
    "abstract",
    "become",
    "do",
    "final",
    "macro",
    "override",
    "priv",
    "typeof",
    "unsized",
    "virtual",
    "gen",
    "for",
    "in",
    "as",
    "else",
    "let",
    "union",
    "Self",
    "loop_",
    // The module's items and the graph function's locals.
    "k0",
    "k1",
    "arena",
    "k0_shapes",
    "k0_with_scratch",
    "K0Shapes",
    "g0",
    "g0_k0",
    "g0_sizes",
    "G0Workspace",
    "g0_arena",
    "rt",
    "KernelError",
    "ws",
    "sz",
    "go",
    "left",
    "right",
    "index",
    "loops",
    "ends",
    "scratch",
    "off",
    "placement",
    "arena_len",
    "shapes",
    "sizes",
    "at",
    // The kernels' parameters, locals and the runtime's helpers.
    "part",
    "parts",
    "in_parts",
    "cpu_level",
    "e_row",
    "row",
    "col",
    "lane",
    "value",
    "values",
    "Shared",
    "Part",
    "Scratch",
    "check_len",
    "dims",
    "size",
    "offset",
    "i64",
    "usize",
    "x_shape",
    "core",
    "Ok",
    "Err",
    "Result",
    "Vec",
    "Some",
    "None",
    // Generated names' patterns.
    "t4",
    "t4_1",
    "v0",
    "in0",
    "p0_1",
    "out0",
    "chunk_start",
    "odd",
    "x_out",
    "param_n",
    "dim_n",
];

const BATCH: usize = 6;

/// Graphs naming, in turn, inputs, values and outputs, and functions (through
/// `call` and `while`) after each batch of hostile names.
fn graphs() -> Vec<String> {
    let mut out = Vec::new();
    for batch in HOSTILE.chunks(BATCH) {
        // Inputs.
        let mut src = String::new();
        for n in batch {
            src.push_str(&format!("input {n}: f32[N]\n"));
        }
        let sum = batch.iter().skip(1).fold(batch[0].to_string(), |acc, n| {
            format!("add({acc}, exp({n}))")
        });
        src.push_str(&format!(
            "y = reduce_sum({sum}, [0])\nz = mul({}, y)\noutput z, y\n",
            batch[0]
        ));
        out.push(src);
        // Values and outputs.
        let mut src = "input x: f32[N, M]\n".to_string();
        let mut last = "x".to_string();
        for n in batch {
            src.push_str(&format!("{n} = exp(reduce_max({last}, [1]))\n"));
            last = format!("reindex({n}, [N, M], [i0, 0])");
        }
        src.push_str(&format!("output {}\n", batch.join(", ")));
        out.push(src);
        // Functions.
        let mut src = "input x: f32[N]\ninput c: f32[]\n".to_string();
        let mut value = "x".to_string();
        for (k, n) in batch.iter().enumerate() {
            src.push_str(&format!("fn {n}(v, i) {{ return neg(v), add(i, 1) }}\n"));
            src.push_str(&format!("fn more_{k}(v, i) {{ return lt(i, c) }}\n"));
            src.push_str(&format!("a{k}, n{k} = call({n}, {value}, c)\n"));
            src.push_str(&format!("b{k}, m{k} = while(more_{k}, {n}, a{k}, 0)\n"));
            value = format!("b{k}");
        }
        src.push_str(&format!("output {value}\n"));
        out.push(src);
    }
    out
}

/// Programs naming their inputs and values after each batch: a softmax-like row
/// computation (rows, reductions, threads) per name.
fn programs() -> Vec<String> {
    let mut out = Vec::new();
    for batch in HOSTILE.chunks(BATCH) {
        let mut src = String::new();
        for n in batch {
            src.push_str(&format!("input {n}: f32[B, N]\n"));
        }
        let mut outputs = Vec::new();
        for (k, n) in batch.iter().enumerate() {
            src.push_str(&format!(
                "m{k} = reduce_max({n}, [1])\ne{k} = exp(sub({n}, reindex(m{k}, [B, N], [i0, 0])))\n\
                 s{k} = reduce_sum(e{k}, [1])\nr{k} = div(e{k}, reindex(s{k}, [B, N], [i0, 0]))\n"
            ));
            outputs.push(format!("r{k}"));
        }
        src.push_str(&format!("output {}\n", outputs.join(", ")));
        out.push(src);
    }
    out
}

#[test]
fn emitted_rust_compiles_without_warnings_whatever_the_names() {
    let mut graph_module = GraphModule::new(RustOptions::default().standalone(true));
    // The graph: `call` functions named like the kernels of graph `m`
    // (`m_k0`, `m_k0_shapes`) and its arena function (`m_arena`).
    let m = "input x: f32[N]\nfn k0(v) { return exp(v) }\nfn arena(v) { return neg(v) }\n\
             fn k0_shapes(v) { return abs(v) }\na = call(k0, x)\nb = call(arena, a)\n\
             c = call(k0_shapes, b)\noutput c\n";
    let g = parse_graph(m, uop_graph::default_registry()).expect("parses");
    graph_module.add("m", &g, Some(m)).expect("emits");
    for (k, src) in graphs().iter().enumerate() {
        let g = parse_graph(src, uop_graph::default_registry())
            .unwrap_or_else(|e| panic!("{e}\n{src}"));
        graph_module
            .add(&format!("g{k}"), &g, Some(src))
            .unwrap_or_else(|e| panic!("{e}\n{src}"));
    }
    let graphs = graph_module.source().expect("graph source");
    let registry = uop_ops::registry();
    let mut kernels = RustModule::new(RustOptions::default());
    // The softmax example, its input named like the kernel's local for `e`'s rows.
    let softmax = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/programs/softmax.uop"),
    )
    .expect("softmax example");
    for (k, name) in ["e_row", "part", "in_parts", "cpu_level"]
        .iter()
        .enumerate()
    {
        let src = softmax
            .replace("input x:", &format!("input {name}:"))
            .replace("(x, ", &format!("({name}, "));
        let p = parse_program(&src, &registry).unwrap_or_else(|e| panic!("{e}\n{src}"));
        kernels.add(&format!("softmax{k}"), &p).expect("emits");
    }
    for (k, src) in programs().iter().enumerate() {
        let p = parse_program(src, &registry).unwrap_or_else(|e| panic!("{e}\n{src}"));
        kernels
            .add(&format!("p{k}"), &p)
            .unwrap_or_else(|e| panic!("{e}\n{src}"));
    }
    let kernels = kernels.source().expect("kernel source");
    // A file named with non-ASCII letters gets a snake_case kernel name by default.
    let dir = scratch("generated-names-file");
    let file = dir.join("ñandú.uop");
    std::fs::write(&file, &programs()[0]).expect("write");
    let o = uop_in(&dir, &["emit", "ñandú.uop", "--target", "rust"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let named = String::from_utf8_lossy(&o.stdout).into_owned();
    let lib = "#![deny(warnings)]\n\n\
               /// Graphs, standalone.\npub mod graphs;\n\
               /// Programs, with the crate.\npub mod kernels;\n\
               /// A program from a file with a non-ASCII name.\npub mod named;\n";
    let dir = scratch_crate(
        "uop_generated_names",
        "",
        &[
            ("lib.rs", lib.to_string()),
            ("graphs.rs", graphs),
            ("kernels.rs", kernels),
            ("named.rs", named),
        ],
    );
    let out = cargo_in(&dir, "check", &["--lib"]);
    assert!(
        out.status.success(),
        "generated code has warnings or errors:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
