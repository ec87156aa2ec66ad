//! Every existing `.uop` program is graph text: it parses to a graph with the
//! inputs, outputs and params `parse_program` gives, prints back stably, and the
//! graph interpreter gives the uop interpreter's numbers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use uop_codegen::index::Expr;
use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::parse_program;
use uop_codegen::uop::Program;
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Graph, Op, default_registry, run};

/// Every `.uop` file of the repository's example and kernel directories.
fn programs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "examples/programs",
        "prebuilt/kernels",
        "examples/custom_op",
    ] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "uop"))
            .collect();
        found.sort();
        files.extend(found);
    }
    assert!(files.len() >= 19, "found only {files:?}");
    files
}

fn load(path: &Path) -> (String, Program, Graph) {
    let src = std::fs::read_to_string(path).expect("readable");
    let registry = default_registry();
    let program = parse_program(&src, &registry).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let graph = parse_graph(&src, registry).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    (src, program, graph)
}

#[test]
fn every_program_parses_to_a_graph_with_its_interface() {
    for path in programs() {
        let (_, program, graph) = load(&path);
        let input = graph.input_node().expect("an Input node");
        let declared: Vec<(String, String)> = program
            .inputs
            .iter()
            .map(|id| {
                let n = program.node(*id);
                let shape: Vec<String> = n.shape.iter().map(Expr::to_string).collect();
                (
                    n.name.clone(),
                    format!("{}[{}]", n.dtype.name(), shape.join(", ")),
                )
            })
            .collect();
        let graph_inputs: Vec<(String, String)> = (0..input.outputs.len())
            .map(|k| {
                (
                    input.name(k).unwrap_or_default().to_string(),
                    input.outputs[k].to_string(),
                )
            })
            .collect();
        assert_eq!(graph_inputs, declared, "{path:?}");
        assert_eq!(graph.params, program.params, "{path:?}");
        assert_eq!(graph.dtype, program.dtype, "{path:?}");
        assert_eq!(
            graph.interface.outputs.len(),
            program.outputs.len(),
            "{path:?}"
        );
        for (s, id) in graph.interface.outputs.iter().zip(&program.outputs) {
            let r = s.as_ref().expect("outputs are values");
            let name = graph.node(r.node).and_then(|n| n.name(r.output));
            assert_eq!(name, Some(program.node(*id).name.as_str()), "{path:?}");
            let ty = graph.type_of(r).expect("typed");
            let shape: Vec<String> = program
                .node(*id)
                .shape
                .iter()
                .map(Expr::to_string)
                .collect();
            assert_eq!(ty.shape.len(), shape.len(), "{path:?}");
        }
        // Only calls: programs have no control flow; nested calls are nodes of their own.
        assert!(
            graph.nodes()[1..]
                .iter()
                .all(|n| matches!(n.op, Op::Call(_))),
            "{path:?}"
        );
    }
}

#[test]
fn nested_calls_become_separate_call_nodes() {
    let src = "input a: f32[M, K]\ninput b: f32[M, K]\nc = reduce_sum(mul(a, b), [1])\noutput c";
    let g = parse_graph(src, default_registry()).expect("parses");
    let ops: Vec<String> = g.nodes()[1..]
        .iter()
        .map(|n| match &n.op {
            Op::Call(c) => c.op.clone(),
            other => other.kind().to_string(),
        })
        .collect();
    assert_eq!(ops, ["mul", "reduce_sum"]);
    assert_eq!(g.nodes()[2].inputs, vec![g.nodes()[1].output(0)]);
    assert_eq!(
        print_graph(&g),
        "input a: f32[M, K]\ninput b: f32[M, K]\nt2 = mul(a, b)\nc = reduce_sum(t2, [1])\noutput c\n"
    );
}

#[test]
fn every_program_prints_back_stably() {
    for path in programs() {
        let (_, _, graph) = load(&path);
        let first = print_graph(&graph);
        let again = parse_graph(&first, default_registry())
            .unwrap_or_else(|e| panic!("{path:?}: {e}\n{first}"));
        assert_eq!(print_graph(&again), first, "{path:?}");
    }
}

/// Sizes for every dimension name of `program` (3 each) and its params (2 each).
fn sizes(program: &Program) -> (Vec<Tensor>, HashMap<String, i64>) {
    let params: HashMap<String, i64> = program.params.iter().map(|p| (p.clone(), 2)).collect();
    let inputs = program
        .inputs
        .iter()
        .enumerate()
        .map(|(k, id)| {
            let n = program.node(*id);
            let shape = n
                .shape
                .iter()
                .map(|d| match d {
                    Expr::Int(v) => *v as usize,
                    _ => 3,
                })
                .collect();
            let mut t = Tensor::random(n.dtype, shape, 7 + k as u64);
            if !n.dtype.is_float() {
                // Indices in range for the ops that read them (select, gather).
                for v in &mut t.data {
                    *v = v.abs() % 3.0;
                }
            }
            t
        })
        .collect();
    (inputs, params)
}

/// Runs `graph` with the graph interpreter and `program` with the uop interpreter
/// on the same inputs; both give the same numbers (to the bit).
fn same_numbers(graph: &Graph, program: &Program, what: &str) {
    let (inputs, params) = sizes(program);
    let expected = interp::run(program, &inputs, &params)
        .unwrap_or_else(|e| panic!("{what}: uop interpreter: {e}"));
    let found = run(graph, &inputs, &params).unwrap_or_else(|e| panic!("{what}: graph: {e}"));
    assert_eq!(found.len(), expected.len(), "{what}");
    for (f, e) in found.iter().zip(&expected) {
        assert_eq!(f.shape, e.shape, "{what}");
        let bits = |t: &Tensor| t.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(f), bits(e), "{what}");
    }
}

#[test]
fn every_program_gives_the_uop_interpreters_numbers() {
    for path in programs() {
        let (_, program, graph) = load(&path);
        same_numbers(&graph, &program, &format!("{path:?}"));
    }
}
