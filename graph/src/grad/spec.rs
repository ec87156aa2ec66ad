//! What to differentiate ([`GraphGradSpec`]), what comes out ([`GraphGradient`]),
//! and what can go wrong ([`GradError`]).

use thiserror::Error;
use uop_codegen::uop::DType;

use crate::builder::BuildError;
use crate::ir::{Graph, NodeId, Ref, Source, ValueType};

/// How the gradient of a `while` gets the states of the forward iterations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TapeMode {
    /// The forward stacks every float state of every iteration into a tape of
    /// `$tape_N` rows (N = the while's node id): memory `rows × bytes of the float
    /// state`, one body evaluation per iteration forward and one backward.
    #[default]
    Stack,
    /// The backward recomputes the state of iteration k from the initial state:
    /// memory one state, `N·(N−1)/2` extra body evaluations for N iterations.
    Recompute,
}

impl TapeMode {
    /// `stack` or `recompute`.
    pub fn name(self) -> &'static str {
        match self {
            TapeMode::Stack => "stack",
            TapeMode::Recompute => "recompute",
        }
    }
}

/// What to differentiate: the gradient graph computes, for every input in `wrt`,
/// the gradient of `sum over seeded outputs y of sum(g_y * y)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphGradSpec {
    /// Graph outputs (positions in the graph's output list) whose gradients are
    /// passed in (`g_` + the output's name); outputs not listed contribute nothing.
    pub seeds: Vec<usize>,
    /// Float graph inputs (positions in the input list) to differentiate with
    /// respect to, in order.
    pub wrt: Vec<usize>,
    /// Graph outputs whose forward values are passed in instead of recomputed.
    pub supplied: Vec<usize>,
    /// How `while` loops keep their states.
    pub tape: TapeMode,
}

impl GraphGradSpec {
    /// Every float output seeded, every float input wanted, nothing supplied, the
    /// default tape.
    pub fn all(graph: &Graph) -> Self {
        let inputs = graph.input_node().map_or(&[][..], |n| &n.outputs[..]);
        GraphGradSpec {
            seeds: float_outputs(graph),
            wrt: (0..inputs.len())
                .filter(|&k| inputs[k].dtype.is_float())
                .collect(),
            supplied: Vec::new(),
            tape: TapeMode::default(),
        }
    }

    /// Checks the request against `graph`: the input types and, per output, the
    /// ref it returns (none for a number) and its type.
    #[allow(clippy::type_complexity)]
    pub(crate) fn check(
        &self,
        graph: &Graph,
    ) -> Result<(Vec<ValueType>, Vec<(Option<Ref>, ValueType)>), GradError> {
        let inputs = graph
            .input_node()
            .map(|n| n.outputs.clone())
            .ok_or_else(|| GradError::Graph("the graph has no Input node".into()))?;
        let mut outputs = Vec::new();
        for s in &graph.interface.outputs {
            let ty = graph
                .source_type(s)
                .ok_or_else(|| GradError::Graph(format!("output {s:?} names no value")))?;
            outputs.push((s.as_ref(), ty));
        }
        if self.wrt.is_empty() {
            return Err(GradError::Spec(
                "no gradient asked for: `wrt` is empty".into(),
            ));
        }
        let input_name = |k: usize| {
            graph
                .input_node()
                .and_then(|n| n.name(k))
                .map_or_else(|| format!("#{k}"), str::to_string)
        };
        for (i, &k) in self.wrt.iter().enumerate() {
            let Some(ty) = inputs.get(k) else {
                return Err(GradError::Spec(format!(
                    "wrt: the graph has {} inputs, there is no input {k}",
                    inputs.len()
                )));
            };
            if !ty.dtype.is_float() {
                return Err(GradError::NotFloat {
                    name: input_name(k),
                    dtype: ty.dtype,
                });
            }
            if self.wrt[..i].contains(&k) {
                return Err(GradError::Spec(format!(
                    "input `{}` is listed twice in wrt",
                    input_name(k)
                )));
            }
        }
        for (list, what) in [(&self.seeds, "seeds"), (&self.supplied, "supplied")] {
            for (i, &o) in list.iter().enumerate() {
                let Some((_, ty)) = outputs.get(o) else {
                    return Err(GradError::Spec(format!(
                        "{what}: the graph has {} outputs, there is no output {o}",
                        outputs.len()
                    )));
                };
                if !ty.dtype.is_float() {
                    return Err(GradError::NotFloat {
                        name: super::output_name(graph, o),
                        dtype: ty.dtype,
                    });
                }
                if list[..i].contains(&o) {
                    return Err(GradError::Spec(format!(
                        "output `{}` is listed twice in {what}",
                        super::output_name(graph, o)
                    )));
                }
            }
        }
        Ok((inputs, outputs))
    }
}

/// The float outputs of `graph`, each position once (an output that repeats an
/// earlier one is left out: its seed would be the same value's).
pub fn float_outputs(graph: &Graph) -> Vec<usize> {
    let mut seen: Vec<&Source> = Vec::new();
    let mut out = Vec::new();
    for (o, s) in graph.interface.outputs.iter().enumerate() {
        let float = graph.source_type(s).is_some_and(|t| t.dtype.is_float());
        if float && !seen.contains(&s) {
            out.push(o);
        }
        seen.push(s);
    }
    out
}

/// What an input of the gradient graph is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphGradRole {
    /// Forward input `index`, under its own name.
    Input,
    /// The gradient flowing into forward output `index`.
    Seed,
    /// The forward value of output `index`.
    Supplied,
}

/// One input of the gradient graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphGradInput {
    /// What it is.
    pub role: GraphGradRole,
    /// The forward input or output it stands for.
    pub index: usize,
}

/// A tape capacity: a `$param` of the gradient graph giving the rows of the tape of
/// one forward `while` ([`TapeMode::Stack`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapeParam {
    /// The param's name (without `$`).
    pub param: String,
    /// The forward `while` node.
    pub node: NodeId,
    /// Bytes of one row: the float states the tape keeps (symbolic sizes evaluated
    /// when a run's bindings are known).
    pub row: Vec<ValueType>,
}

/// A gradient graph and how to call it.
#[derive(Clone, Debug)]
pub struct GraphGradient {
    /// The gradient graph: inputs as `inputs` says, outputs the gradients with
    /// respect to `spec.wrt`, in order.
    pub graph: Graph,
    /// One entry per input of `graph`, in order.
    pub inputs: Vec<GraphGradInput>,
    /// The tape capacities the graph declares as `$params` (empty with
    /// [`TapeMode::Recompute`]).
    pub tapes: Vec<TapeParam>,
    /// The request it answers.
    pub spec: GraphGradSpec,
}

/// A gradient graph cannot be built or run as asked.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum GradError {
    /// The request does not fit the graph.
    #[error("{0}")]
    Spec(String),
    /// Integer values have no gradient.
    #[error("`{name}` is {dtype}: only float values have gradients")]
    NotFloat {
        /// The input or output.
        name: String,
        /// Its element type.
        dtype: DType,
    },
    /// A construct the gradient does not support.
    #[error("{node}: {message}")]
    Unsupported {
        /// The forward node.
        node: NodeId,
        /// What and why.
        message: String,
    },
    /// The forward graph is not valid, or building the gradient graph failed.
    #[error("{0}")]
    Graph(String),
    /// Running the forward or gradient graph failed.
    #[error(transparent)]
    Run(#[from] crate::interp::GraphRunError),
}

impl GradError {
    /// A [`BuildError`] of the gradient graph (a bug of a rule if it happens).
    pub(crate) fn build(e: BuildError) -> Self {
        GradError::Graph(format!("building the gradient graph: {e}"))
    }

    /// An unsupported construct at `node`.
    pub(crate) fn unsupported(node: NodeId, message: impl Into<String>) -> Self {
        GradError::Unsupported {
            node,
            message: message.into(),
        }
    }
}
