//! A program as a graph (DESIGN.md: a program is a graph): one Kernel node holding
//! the whole program, between the graph's Input node and its outputs. The executor
//! runs it as it runs any graph — on its streams and in its arena — and its kernel
//! compiles to the loop IR the program compiles to alone, so the numbers are the
//! program's.

use uop_codegen::uop::Program;
use uop_graph::{Graph, Interface, Kernel, Node, NodeId, Op, Ref, Source, ValueType};

/// The graph of one Kernel node running `program`: the program's inputs are the
/// graph's inputs (same names, types and shapes), its outputs the graph's outputs
/// (same names), its `$params` and size assertions the graph's.
///
/// ```
/// use uop_codegen::text::{Registry, parse_program};
/// use uop_codegen::tensor::Tensor;
///
/// let program = parse_program("input x: f32[N]\ny = mul(x, x)\noutput y\n", &Registry::new())?;
/// let graph = uop_exec::program_graph(&program);
/// let exe = uop_exec::compile(&graph)?;
/// let x = Tensor::new(program.dtype, vec![3], vec![1.0, 2.0, 3.0])?;
/// assert_eq!(exe.run(&[x])?[0].data, vec![1.0, 4.0, 9.0]);
/// assert_eq!(exe.kernel_count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn program_graph(program: &Program) -> Graph {
    let input = NodeId(1);
    let kernel = NodeId(2);
    let declared = |ids: &[uop_codegen::uop::NodeId]| -> (Vec<String>, Vec<ValueType>) {
        ids.iter()
            .map(|id| {
                let n = program.node(*id);
                (n.name.clone(), ValueType::new(n.dtype, n.shape.clone()))
            })
            .unzip()
    };
    let (input_names, input_types) = declared(&program.inputs);
    let (output_names, output_types) = declared(&program.outputs);
    let mut input_node = Node::new(
        input,
        Op::Input {
            names: input_names.clone(),
        },
        Vec::new(),
        input_types,
    );
    input_node.names = input_names.into_iter().map(Some).collect();
    let mut kernel_node = Node::new(
        kernel,
        Op::Kernel(Box::new(Kernel {
            name: "program".into(),
            program: program.clone(),
            members: Vec::new(),
            ops: Vec::new(),
            notes: Vec::new(),
        })),
        (0..program.inputs.len())
            .map(|k| Ref::new(input, k))
            .collect(),
        output_types,
    );
    kernel_node.names = output_names.into_iter().map(Some).collect();
    let interface = Interface {
        input,
        outputs: (0..program.outputs.len())
            .map(|k| Source::Ref(Ref::new(kernel, k)))
            .collect(),
    };
    let mut graph = Graph::from_nodes(program.dtype, interface, vec![input_node, kernel_node]);
    graph.params = program.params.clone();
    graph.assertions = program.assertions.clone();
    graph
}
