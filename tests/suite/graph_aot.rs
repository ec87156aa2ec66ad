//! Whole graphs ahead of time (DESIGN.md §21, `uop_graph::emit`): every example graph
//! (`examples/graphs`) and random graphs (`uop_graph::random`) emitted as Rust into
//! ONE scratch crate (one module per graph, `#![deny(warnings)]`, clippy with
//! `-D warnings`), built once, run, and compared with the graph interpreter on the same inputs.
//!
//! Each case's workspace first reports its arena's length for the case's sizes
//! (`arena_len`), which must be the memory plan's (`plan_memory_apart(..).arena_bytes
//! / size_of::<T>()`); then the case runs three times on it (later calls reuse its arena) and
//! must give the same results each time; later calls keep no memory and allocate
//! nothing, the kernels' own temporaries included (lent by the workspace's scratch;
//! a counting global allocator in the scratch crate, see `runner`). Results are compared bit for bit when
//! every op is exact in both (`neg abs add sub mul where lt reindex`, as in
//! `exec/tests/suite/differential.rs`), else within `1e-4 · max(1, |expected|)` (the kernels'
//! vector math and reassociated sums). A graph the interpreter refuses at run time
//! must make the generated function return an error too.
//!
//! Graphs with i32 values (a `while` carrying an index vector, and its recompute
//! gradient) keep them in the f32 arena's cells (`rt::graph::ints`).
//!
//! `UOP_GRAPH_AOT_SWEEP=N` emits N random graphs instead of the CI's 200.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::common;
use common::{cargo_in_linted, scratch_crate};
use uop::codegen::backend::names::Idents;
use uop::codegen::backend::rust::RustOptions;
use uop::codegen::index::Expr;
use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop_graph::emit::GraphModule;
use uop_graph::grad::{GraphGradSpec, TapeMode, gradient};
use uop_graph::memory::plan_memory_apart;
use uop_graph::pass::{PrepareOptions, prepare};
use uop_graph::random::{RandomOptions, random_graph, random_inputs};
use uop_graph::text::parse_graph;
use uop_graph::{Graph, Op, RunOptions, default_registry, run_with};

/// Random graphs in CI.
const CI_SEEDS: u64 = 200;

/// The loop bound of the interpreter (random loops end after at most 3 iterations).
const MAX_ITERATIONS: u64 = 1000;

/// Ops whose results are exact (one rounding) in the interpreter and in kernels.
const EXACT: [&str; 8] = ["neg", "abs", "add", "sub", "mul", "where", "lt", "reindex"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn seeds() -> u64 {
    std::env::var("UOP_GRAPH_AOT_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_SEEDS)
}

/// One graph of the scratch crate.
struct Case {
    /// What it is (file or seed), for messages.
    what: String,
    graph: Graph,
    inputs: Vec<Tensor>,
    /// The `$params`, in the graph's order (the generated function's arguments).
    params: Vec<i64>,
    /// The interpreter's outputs, or its error.
    expected: Result<Vec<Tensor>, String>,
    exact: bool,
    /// The arena's elements in the memory plan of the emitted code
    /// (`plan_memory_apart` of the prepared graph for the inputs' dims), which the
    /// workspace's `arena_len` must equal (`None`: no plan for these dims).
    arena: Option<usize>,
}

fn exact(g: &Graph) -> bool {
    g.nodes().iter().all(|n| match &n.op {
        Op::Call(c) => EXACT.contains(&c.op.as_str()),
        _ => true,
    })
}

fn case(what: String, graph: Graph, inputs: Vec<Tensor>) -> Case {
    case_with(what, graph, inputs, &HashMap::new())
}

fn case_with(
    what: String,
    graph: Graph,
    inputs: Vec<Tensor>,
    params: &HashMap<String, i64>,
) -> Case {
    let options = RunOptions {
        max_iterations: Some(MAX_ITERATIONS),
    };
    let expected = run_with(&graph, &inputs, params, &options)
        .map(|r| r.outputs)
        .map_err(|e| e.to_string());
    Case {
        what,
        exact: exact(&graph),
        arena: planned_arena(&graph, &inputs, params),
        params: graph
            .params
            .iter()
            .map(|p| params.get(p).copied().expect("every $param has a value"))
            .collect(),
        graph,
        inputs,
        expected,
    }
}

/// The arena's elements in `plan_memory_apart` of the prepared graph (prepared as
/// the emitter prepares it) for the dims of `inputs` and the `params`.
fn planned_arena(graph: &Graph, inputs: &[Tensor], params: &HashMap<String, i64>) -> Option<usize> {
    let (prepared, _) = prepare(graph.clone(), &PrepareOptions::default()).ok()?;
    let mut dims = params.clone();
    let types = prepared.input_node().map_or(&[][..], |n| &n.outputs);
    for (t, ty) in inputs.iter().zip(types) {
        for (d, n) in ty.shape.iter().zip(&t.shape) {
            if let Expr::Name(name) = d {
                dims.insert(name.clone(), i64::try_from(*n).ok()?);
            }
        }
    }
    let plan = plan_memory_apart(&prepared, &dims).ok()?;
    Some(plan.arena_bytes / prepared.dtype.size())
}

/// The example graphs with `$params`, and their values: `graph_grad/rnn.uop` for 3
/// steps (inputs of size 3 per dim).
fn rnn() -> (Graph, Vec<Tensor>, HashMap<String, i64>) {
    let text = std::fs::read_to_string(root().join("examples/graph_grad/rnn.uop")).expect("rnn");
    let g = parse_graph(&text, default_registry()).expect("rnn parses");
    let inputs = random_inputs(&g, 3, 5);
    (g, inputs, HashMap::from([("steps".to_string(), 3)]))
}

/// A forward graph to differentiate: what it is, the graph, its inputs and params.
type Forward = (String, Graph, Vec<Tensor>, HashMap<String, i64>);

/// The gradient graph (`uop_graph::grad`, every float output seeded, every float
/// input wanted, the stack tape) of every example graph, of the RNN and of a chunked
/// graph without weights (its gradient is a chunk loop over the input and the seed
/// together), with random seeds and the tape sizes of a forward run; the gradient of
/// `chunked_mlp.uop` in chunks of 2 rows over 7 sums its weights' gradients over the
/// four chunks (`sum_chunks` in the generated loop).
fn gradient_cases() -> Vec<Case> {
    let mut forward: Vec<Forward> = example_cases()
        .into_iter()
        .map(|c| (c.what, c.graph, c.inputs, HashMap::new()))
        .collect();
    let (g, inputs, params) = rnn();
    forward.push(("examples/graph_grad/rnn.uop".into(), g, inputs, params));
    let text = "input x: f32[N, 2]\nxc = chunk(x, size=2)\ny = neg(xc)\noutput y\n";
    let g = parse_graph(text, default_registry()).expect("the chunked graph parses");
    let inputs = random_inputs(&g, 5, 7);
    forward.push(("a chunked neg".into(), g, inputs, HashMap::new()));
    let g = chunked_mlp_in_chunks_of_2();
    let inputs = random_inputs(&g, 7, 3);
    forward.push(("chunked_mlp.uop, 7 rows".into(), g, inputs, HashMap::new()));
    let mut cases = Vec::new();
    for (what, g, inputs, params) in forward {
        let grad = match gradient(&g, &GraphGradSpec::all(&g)) {
            Ok(grad) => grad,
            Err(e) => {
                let chunked = g.nodes().iter().any(|n| matches!(n.op, Op::Chunk { .. }));
                assert!(chunked && e.to_string().contains("chunk"), "{what}: {e}");
                continue;
            }
        };
        let run = run_with(&g, &inputs, &params, &RunOptions::default())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let seeds: Vec<Tensor> = grad
            .spec
            .seeds
            .iter()
            .map(|&o| {
                let out = &run.outputs[o];
                let data = (0..out.data.len()).map(|i| 0.5 + 0.25 * i as f64).collect();
                Tensor::new(out.dtype, out.shape.clone(), data).expect("seed")
            })
            .collect();
        let args = grad
            .arguments(&inputs, &seeds, &run.outputs)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let grad_params = grad.params(&run.trace, &params);
        if what.starts_with("chunked_mlp") {
            // Its weights' gradients are sums over the chunks, added up in the loop.
            let mut module = GraphModule::new(RustOptions::default());
            module.add("g", &grad.graph, None).expect("emits");
            let source = module.source().expect("source");
            assert!(source.contains("rt::graph::accumulate("), "{source}");
        }
        if what.ends_with("rows.uop") {
            // The gradient of a `parallel` row read is a one-op kernel whose output
            // has a dim (`R`) no input of it carries: the kernel takes it as a
            // `$param` (`$dim_R`) the graph function passes from its sizes.
            let mut module = GraphModule::new(RustOptions::default());
            module.add("g", &grad.graph, None).expect("emits");
            let source = module.source().expect("source");
            assert!(source.contains("let dim_r_param = x_dims[0];"), "{source}");
            assert!(source.contains(", sz.dim_r_param, "), "{source}");
        }
        cases.push(case_with(
            format!("the gradient of {what}"),
            grad.graph,
            args,
            &grad_params,
        ));
    }
    cases
}

/// A `while` whose state holds an i32 index vector (rotated every iteration, read
/// by a `select`): issue 40's i32 loop state, kept in the f32 arena's cells.
const I32_STATE: &str = "input x: f32[N]\ninput idx: i32[M]\n\
fn more(i, v) { return lt(reduce_sum(v, [0]), 50) }\n\
fn step(i, v) { return reindex(i, [M], [(i0 + 1) % M]), add(mul(v, 2), reduce_sum(select(v, i, axis=0), [0])) }\n\
j, y = while(more, step, idx, x)\noutput j, y\n";

/// The graph with i32 loop state, and its gradient with the recompute tape (the
/// stack tape refuses an integer state): both emit, compile and give the
/// interpreter's results, the index vector an output too.
fn i32_state_cases() -> Vec<Case> {
    let g = parse_graph(I32_STATE, default_registry()).expect("the i32 graph parses");
    let x = Tensor::new(DType::F32, vec![3], vec![0.5, 1.0, -0.25]).expect("x");
    let idx = Tensor::new(DType::I32, vec![2], vec![2.0, 0.0]).expect("idx");
    let inputs = vec![x, idx];
    let spec = GraphGradSpec {
        tape: TapeMode::Recompute,
        ..GraphGradSpec::all(&g)
    };
    let grad = gradient(&g, &spec).expect("the recompute tape takes an i32 state");
    let run = run_with(&g, &inputs, &HashMap::new(), &RunOptions::default()).expect("runs");
    let seeds: Vec<Tensor> = grad
        .spec
        .seeds
        .iter()
        .map(|&o| {
            let out = &run.outputs[o];
            let data = (0..out.data.len()).map(|i| 1.0 + 0.5 * i as f64).collect();
            Tensor::new(out.dtype, out.shape.clone(), data).expect("seed")
        })
        .collect();
    let args = grad
        .arguments(&inputs, &seeds, &run.outputs)
        .expect("the gradient's arguments");
    let params = grad.params(&run.trace, &HashMap::new());
    vec![
        case("an i32 index vector as while state".into(), g, inputs),
        case_with(
            "the recompute gradient of an i32 while state".into(),
            grad.graph,
            args,
            &params,
        ),
    ]
}

/// `examples/graphs/chunked_mlp.uop` in chunks of 2 rows (of 1024 in the file).
fn chunked_mlp_in_chunks_of_2() -> Graph {
    let chunked = root().join("examples/graphs/chunked_mlp.uop");
    let text = std::fs::read_to_string(&chunked).expect("chunked_mlp");
    assert!(text.contains("size=1024"), "chunked_mlp.uop changed");
    let text = text.replace("size=1024", "size=2");
    parse_graph(&text, default_registry()).expect("parses")
}

/// The example graphs, inputs of size 3 per dim.
fn example_cases() -> Vec<Case> {
    let dir = root().join("examples/graphs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/graphs")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "uop"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "only {} example graphs", files.len());
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read");
            let g = parse_graph(&text, default_registry())
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let inputs = random_inputs(&g, 3, 11);
            case(p.display().to_string(), g, inputs)
        })
        .collect()
}

/// `values` as Rust literals of `dtype`, exact.
fn literals(t: &Tensor) -> String {
    let items: Vec<String> = t
        .data
        .iter()
        .map(|v| match t.dtype {
            DType::F32 => format!("f32::from_bits({:#x})", (*v as f32).to_bits()),
            DType::F64 => format!("f64::from_bits({:#x})", v.to_bits()),
            DType::I32 => format!("{}", *v as i32),
        })
        .collect();
    format!("vec![{}]", items.join(", "))
}

fn elem(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I32 => "i32",
    }
}

/// The function of `main.rs` that runs case `k` three times on one workspace and
/// prints its outputs as f64 bit patterns, one line per output, or the error. The
/// second and third calls must give the first's results, keep no memory and
/// allocate nothing.
fn runner(k: usize, c: &Case) -> String {
    let m = format!("g{k}");
    let camel = format!("G{k}");
    let mut f = String::new();
    let _ = writeln!(f, "fn case{k}() -> Result<Vec<Vec<u64>>, String> {{");
    let _ = writeln!(f, "    let mut ws = {m}::{camel}Workspace::new();");
    let mut args = Vec::new();
    let mut shapes = Vec::new();
    for (i, t) in c.inputs.iter().enumerate() {
        let _ = writeln!(
            f,
            "    let in{i}: Vec<{}> = {};",
            elem(t.dtype),
            literals(t)
        );
        let shape = format!("{:?}", t.shape);
        args.push(format!("&in{i}, {shape}"));
        shapes.push(shape);
    }
    for p in &c.params {
        shapes.push(format!("{p}_i64"));
        args.push(format!("{p}_i64"));
    }
    let _ = writeln!(
        f,
        "    let sz = {m}::{m}_sizes({}).map_err(|e| e.to_string())?;",
        shapes.join(", ")
    );
    let outputs: Vec<DType> = c
        .graph
        .interface
        .outputs
        .iter()
        .map(|s| c.graph.source_type(s).map_or(DType::F32, |t| t.dtype))
        .collect();
    let fields = output_fields(&c.graph);
    for (i, (d, field)) in outputs.iter().zip(&fields).enumerate() {
        let _ = writeln!(
            f,
            "    let mut out{i} = vec![{}::default(); sz.{field}.iter().product::<usize>()];",
            elem(*d)
        );
        args.push(format!("&mut out{i}"));
    }
    if let Some(n) = c.arena {
        let _ = writeln!(
            f,
            "    let arena = ws.arena_len(&sz).map_err(|e| e.to_string())?;"
        );
        let _ = writeln!(
            f,
            "    if arena != {n} {{ return Err(format!(\"arena_len is {{arena}}, the plan's arena {n}\")); }}"
        );
    }
    let _ = writeln!(f, "    let mut runs = Vec::new();");
    let _ = writeln!(f, "    let mut counts = Vec::new();");
    let _ = writeln!(f, "    for _ in 0..3 {{");
    let _ = writeln!(
        f,
        "        let (before, live) = (allocations(), live_bytes());"
    );
    let _ = writeln!(
        f,
        "        {m}::{m}(&mut ws, {}).map_err(|e| e.to_string())?;",
        args.join(", ")
    );
    let _ = writeln!(
        f,
        "        counts.push((allocations() - before, live_bytes().wrapping_sub(live)));"
    );
    let outs: Vec<String> = (0..outputs.len())
        .map(|i| format!("out{i}.iter().map(|v| f64::from(*v).to_bits()).collect::<Vec<u64>>()"))
        .collect();
    let _ = writeln!(f, "        runs.push(vec![{}]);", outs.join(", "));
    let _ = writeln!(f, "    }}");
    let _ = writeln!(
        f,
        "    if runs[0] != runs[1] || runs[0] != runs[2] {{ return Err(\"a later call differs\".into()); }}"
    );
    let _ = writeln!(
        f,
        "    if counts[1].1 != 0 || counts[2].1 != 0 {{ return Err(format!(\"a later call keeps memory: {{counts:?}}\")); }}"
    );
    let _ = writeln!(
        f,
        "    if counts[1].0 != 0 || counts[2].0 != 0 {{ return Err(format!(\"later calls allocate (count, bytes kept): {{counts:?}}\")); }}"
    );
    let _ = writeln!(f, "    Ok(runs.remove(0))");
    let _ = writeln!(f, "}}");
    f
}

/// The sizes struct's field of each output's shape, as the emitter names them (the
/// codegen's shared identifier rule).
fn output_fields(g: &Graph) -> Vec<String> {
    let mut names = Idents::default();
    g.interface
        .outputs
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let raw = s
                .as_ref()
                .and_then(|r| g.node(r.node).and_then(|n| n.name(r.output)))
                .map_or(format!("out{k}"), str::to_string);
            format!("{}_out_shape", names.fresh(&raw))
        })
        .collect()
}

/// The scratch crate's global allocator, counting every allocation: a second call
/// on one workspace must make none (`runner`).
const COUNTING_ALLOCATOR: &str = r#"
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting allocations and reallocations and the bytes live.
struct Counting;

// SAFETY: every call is the system allocator's, with the caller's arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller keeps `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller keeps `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller keeps `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations so far, in every thread.
fn allocations() -> usize {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Bytes allocated and not freed (wrapping).
fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}
"#;

/// Emits every case into one crate, lints, builds and runs it; its output.
fn build_and_run(cases: &[Case]) -> String {
    let mut main = String::from("#![deny(warnings)]\n\n");
    for k in 0..cases.len() {
        let _ = writeln!(main, "mod g{k};");
    }
    main.push_str(COUNTING_ALLOCATOR);
    main.push_str("\nfn main() {\n");
    for k in 0..cases.len() {
        let _ = writeln!(main, "    report({k}, case{k}());");
    }
    main.push_str("}\n\nfn report(k: usize, r: Result<Vec<Vec<u64>>, String>) {\n    match r {\n        Ok(outs) => {\n            for o in outs {\n                let bits: Vec<String> = o.iter().map(|b| format!(\"{b:x}\")).collect();\n                println!(\"{k} ok {}\", bits.join(\" \"));\n            }\n            println!(\"{k} end\");\n        }\n        Err(e) => println!(\"{k} err {e}\"),\n    }\n}\n\n");
    let mut files = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let mut module = GraphModule::new(RustOptions::default().schedule(false));
        module
            .add(&format!("g{k}"), &c.graph, None)
            .unwrap_or_else(|e| panic!("{}: {e}", c.what));
        let source = module
            .source()
            .unwrap_or_else(|e| panic!("{}: {e}", c.what));
        files.push((format!("g{k}.rs"), source));
        main.push_str(&runner(k, c));
        main.push('\n');
    }
    files.push(("main.rs".into(), main));
    // Unoptimized (`testing::scratch::SCRATCH_PROFILE`): the cases are small, and an optimized
    // build of this crate took four times the CPU for a run that takes milliseconds
    // either way (docs/build-time.md).
    let dir = scratch_crate("uop_graph_aot", "", &files);
    // Built once with clippy linting as it compiles (`-D warnings` through the
    // crate's `#![deny(warnings)]`), then run.
    let out = cargo_in_linted(&dir, "run", &[]);
    assert!(
        out.status.success(),
        "the scratch crate does not pass clippy, build or run:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Same bits (`-0` as `+0`, NaN as NaN), or within the tolerance.
fn same(found: f64, expected: f64, exact: bool) -> bool {
    if found.is_nan() || expected.is_nan() {
        return found.is_nan() && expected.is_nan();
    }
    if exact {
        found == expected
    } else {
        found == expected || (found - expected).abs() <= 1e-4 * expected.abs().max(1.0)
    }
}

/// Every case's printed result against the interpreter's.
fn compare(cases: &[Case], printed: &str) {
    let mut found: HashMap<usize, Result<Vec<Vec<f64>>, String>> = HashMap::new();
    for line in printed.lines() {
        let mut parts = line.splitn(3, ' ');
        let k: usize = parts
            .next()
            .and_then(|k| k.parse().ok())
            .expect("case number");
        match (parts.next(), parts.next()) {
            (Some("ok"), rest) => {
                let values = rest
                    .unwrap_or("")
                    .split_whitespace()
                    .map(|b| f64::from_bits(u64::from_str_radix(b, 16).expect("hex")))
                    .collect();
                if let Ok(v) = found.entry(k).or_insert_with(|| Ok(Vec::new())) {
                    v.push(values);
                }
            }
            (Some("end"), _) => {
                found.entry(k).or_insert_with(|| Ok(Vec::new()));
            }
            (Some("err"), rest) => {
                found.insert(k, Err(rest.unwrap_or("").to_string()));
            }
            _ => panic!("unexpected line {line}"),
        }
    }
    let mut failures = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let got = found.remove(&k).unwrap_or(Err("no result printed".into()));
        match (&c.expected, got) {
            (Ok(expected), Ok(got)) => {
                let equal = expected.len() == got.len()
                    && expected.iter().zip(&got).all(|(e, g)| {
                        e.data.len() == g.len()
                            && e.data.iter().zip(g).all(|(e, g)| same(*g, *e, c.exact))
                    });
                if !equal {
                    failures.push(format!(
                        "{}: different results:\ninterpreter {:?}\ngenerated   {got:?}",
                        c.what,
                        expected.iter().map(|t| &t.data).collect::<Vec<_>>()
                    ));
                }
            }
            (Err(_), Err(_)) => {}
            (Err(e), Ok(_)) => failures.push(format!(
                "{}: the interpreter fails ({e}), the generated code does not",
                c.what
            )),
            (Ok(_), Err(e)) => failures.push(format!("{}: the generated code fails: {e}", c.what)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} graphs differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn example_gradient_and_random_graphs_compiled_into_one_crate_give_the_interpreters_results() {
    let mut cases = example_cases();
    cases.extend(gradient_cases());
    cases.extend(i32_state_cases());
    let (g, inputs, params) = rnn();
    cases.push(case_with(
        "examples/graph_grad/rnn.uop".into(),
        g,
        inputs,
        &params,
    ));
    // Chunks of 2 rows of a batch of 7: three full chunks and a last one of 1 row.
    let g = chunked_mlp_in_chunks_of_2();
    let inputs = random_inputs(&g, 7, 3);
    cases.push(case("chunked_mlp.uop, 7 rows".into(), g, inputs));
    for seed in 0..seeds() {
        let g = random_graph(seed, &RandomOptions::default())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let inputs = random_inputs(&g, 3, seed.wrapping_mul(7));
        cases.push(case(format!("random graph {seed}"), g, inputs));
    }
    // Every graph the interpreter runs has a memory plan to check `arena_len`
    // against.
    for c in &cases {
        assert!(
            c.arena.is_some() || c.expected.is_err(),
            "{}: no memory plan for its inputs",
            c.what
        );
    }
    let printed = build_and_run(&cases);
    compare(&cases, &printed);
}
