//! The forward part of a gradient graph: forward definitions written again into
//! the gradient graph (at the top level, and inside every backward body, which
//! recomputes the values its rules read), `while` loops extended with a trip
//! counter and, with [`TapeMode::Stack`], a tape of their states.

use std::collections::HashMap;

use uop_codegen::index::Expr;

use super::program::stacked;
use super::{Ctx, Env, GradError, TapeMode, TapeParam};
use crate::builder::Arg;
use crate::hierarchy::{Entry, SubFunction};
use crate::ir::{Interface, Node, NodeId, Op, Ref, Source, ValueType};

/// What a `while` written with a counter and tape recorded.
#[derive(Clone, Debug)]
pub(crate) struct Taped {
    /// The trip count (a rank-0 value of the float type).
    pub count: Ref,
    /// Per state: its tape (stack mode, float states).
    pub tapes: Vec<Option<Ref>>,
    /// The tape's rows (`$tape_N`).
    pub rows: Expr,
}

/// The values of one scope of the gradient graph: the forward refs visible there
/// and the tapes of its loops.
#[derive(Clone, Debug, Default)]
pub(crate) struct Frame {
    /// Forward ref -> gradient-graph ref.
    pub env: Env,
    /// Forward `while` node -> what it recorded.
    pub taped: HashMap<NodeId, Taped>,
}

impl Frame {
    /// A frame with values `env`.
    pub fn new(env: Env) -> Self {
        Frame {
            env,
            taped: HashMap::new(),
        }
    }

    /// The gradient-graph ref holding forward value `r`.
    pub fn get(&self, r: Ref) -> Result<Ref, GradError> {
        self.env
            .get(&r)
            .copied()
            .ok_or_else(|| GradError::Graph(format!("{r} has no value in the gradient graph")))
    }

    /// A sub-function's source.
    pub fn source(&self, s: &Source) -> Result<Source, GradError> {
        Ok(match s {
            Source::Ref(r) => Source::Ref(self.get(*r)?),
            Source::Scalar(v) => Source::Scalar(*v),
        })
    }
}

impl Ctx<'_> {
    /// Writes the definitions `entries` again; `record` says whether a backward
    /// pass will follow (then loops record their trip counts and tapes).
    pub(crate) fn emit_entries(
        &mut self,
        entries: &[Entry],
        frame: &mut Frame,
        record: bool,
    ) -> Result<(), GradError> {
        for e in entries {
            self.emit_entry(e, frame, record)?;
        }
        Ok(())
    }

    fn emit_entry(&mut self, e: &Entry, frame: &mut Frame, record: bool) -> Result<(), GradError> {
        let node = self.node(e.node)?;
        let inputs: Vec<Ref> = node
            .inputs
            .iter()
            .map(|r| frame.get(*r))
            .collect::<Result<_, _>>()?;
        let outputs = match &node.op {
            Op::Input { .. } | Op::Sink => return Ok(()),
            Op::Const(t) => vec![self.b.constant(t.clone())],
            Op::Call(_) => self.add(node.op.clone(), inputs)?,
            Op::Kernel(_) => {
                return Err(GradError::unsupported(
                    node.id,
                    "kernel nodes are not differentiated: take the gradient of the graph before `prepare`",
                ));
            }
            // The gradient loops at its first chunk node (`chunked.rs`); a chunk
            // inside that loop runs on the whole chunk: its values are its inputs.
            Op::Chunk { .. } => {
                for (k, r) in inputs.iter().enumerate() {
                    frame.env.insert(node.output(k), *r);
                }
                return Ok(());
            }
            Op::SumChunks => {
                return Err(GradError::unsupported(
                    node.id,
                    "no gradient through `sum_chunks`",
                ));
            }
            Op::While { .. }
                if record && (0..node.outputs.len()).any(|k| self.reach.has(node.output(k))) =>
            {
                return self.emit_recording_while(node, e, frame, inputs);
            }
            Op::Scan { .. }
                if record && (0..node.outputs.len()).any(|k| self.reach.has(node.output(k))) =>
            {
                return self.emit_recording_scan(node, e, frame, inputs);
            }
            Op::While { .. } | Op::Case { .. } | Op::If { .. } | Op::NoInline { .. } => {
                let mut op = node.op.clone();
                let subs: Vec<Interface> = e
                    .subs
                    .iter()
                    .map(|s| self.clone_sub(s, frame, &[]))
                    .collect::<Result<_, _>>()?;
                for (i, s) in op.interfaces_mut().into_iter().zip(subs) {
                    *i = s;
                }
                self.add(op, inputs)?
            }
            Op::Parallel { index, .. } | Op::Scan { index, .. } => {
                let mut op = node.op.clone();
                let sub = e
                    .subs
                    .first()
                    .ok_or_else(|| GradError::Graph(format!("{}: no body", node.id)))?;
                let body = self.clone_sub(sub, frame, std::slice::from_ref(index))?;
                if let Some(b) = op.interfaces_mut().into_iter().next() {
                    *b = body;
                }
                self.add(op, inputs)?
            }
        };
        self.map_outputs(node, &outputs, frame)
    }

    /// Records `outputs` as the values of `node`'s outputs (with their names).
    pub(crate) fn map_outputs(
        &mut self,
        node: &Node,
        outputs: &[Ref],
        frame: &mut Frame,
    ) -> Result<(), GradError> {
        for (k, r) in outputs.iter().enumerate() {
            frame.env.insert(node.output(k), *r);
            if let Some(name) = node.name(k) {
                self.b.name(*r, name).map_err(GradError::build)?;
            }
        }
        Ok(())
    }

    /// Adds a node of kind `op` to the gradient graph.
    pub(crate) fn add(&mut self, op: Op, inputs: Vec<Ref>) -> Result<Vec<Ref>, GradError> {
        self.b.add_multi(op, inputs).map_err(GradError::build)
    }

    /// Opens a sub-function with parameters `names` of `types`; its body is what is
    /// built next that depends on them (the hierarchy derives the nesting).
    pub(crate) fn open_sub(
        &mut self,
        names: Vec<String>,
        types: Vec<ValueType>,
    ) -> Result<(NodeId, Vec<Ref>), GradError> {
        let n = types.len();
        let i = self
            .b
            .sub_function(names, types, Box::new(|_, _| Ok(Vec::new())))
            .map_err(GradError::build)?;
        Ok((i.input, (0..n).map(|k| Ref::new(i.input, k)).collect()))
    }

    /// The parameter names and types of forward sub-function `sub`.
    pub(crate) fn params_of(
        &self,
        sub: &SubFunction,
    ) -> Result<(Vec<String>, Vec<ValueType>), GradError> {
        let input = self.node(sub.input)?;
        let names = (0..input.outputs.len())
            .map(|k| {
                input
                    .name(k)
                    .map_or_else(|| format!("p{k}"), str::to_string)
            })
            .collect();
        Ok((names, input.outputs.clone()))
    }

    /// Writes forward sub-function `sub` again (parameters as in the forward; a
    /// `parallel` body binds `index`), returning its interface.
    fn clone_sub(
        &mut self,
        sub: &SubFunction,
        frame: &Frame,
        index: &[String],
    ) -> Result<Interface, GradError> {
        let (names, types) = self.params_of(sub)?;
        let (input, params) = self.open_sub(names, types)?;
        let mut inner = frame.clone();
        for (k, p) in params.iter().enumerate() {
            inner.env.insert(Ref::new(sub.input, k), *p);
        }
        self.with_index(index.first().map(|n| (n.as_str(), params[0])), |cx| {
            cx.emit_entries(&sub.nodes, &mut inner, false)
        })?;
        let owner = self.node(sub.super_node)?;
        let outputs = owner.op.interfaces()[sub.branch]
            .outputs
            .iter()
            .map(|s| inner.source(s))
            .collect::<Result<_, _>>()?;
        Ok(Interface { input, outputs })
    }

    /// Runs `f` with `$name` bound to `index` (a `parallel` body), if given.
    pub(crate) fn with_index<T>(
        &mut self,
        index: Option<(&str, Ref)>,
        f: impl FnOnce(&mut Self) -> Result<T, GradError>,
    ) -> Result<T, GradError> {
        let Some((name, r)) = index else {
            return f(self);
        };
        self.b.bind(name, r);
        self.bound.push(name.to_string());
        let out = f(self);
        self.bound.pop();
        self.b.unbind();
        out
    }

    /// A `while` written with a trip counter and (stack mode) a tape of its float
    /// states: state `(s..., k, tapes...)`; the body writes `s` into row `k` of each
    /// tape before stepping.
    fn emit_recording_while(
        &mut self,
        node: &Node,
        e: &Entry,
        frame: &mut Frame,
        inputs: Vec<Ref>,
    ) -> Result<(), GradError> {
        let (cond, body) = match e.subs.as_slice() {
            [c, b] => (c, b),
            _ => {
                return Err(GradError::Graph(format!(
                    "{}: a while needs two subs",
                    node.id
                )));
            }
        };
        let n = node.outputs.len();
        let stack = self.mode == TapeMode::Stack;
        let mut rows = Expr::Int(0);
        let mut row_types = Vec::new();
        if stack {
            if let Some(k) = (0..n).find(|&k| !node.outputs[k].dtype.is_float()) {
                return Err(GradError::unsupported(
                    node.id,
                    format!(
                        "state {k} is {}: the stack tape keeps float states only (use the recompute tape)",
                        node.outputs[k].dtype.name()
                    ),
                ));
            }
            let param = self.tape_param(node.id);
            self.b.param(&param).map_err(GradError::build)?;
            rows = Expr::Param(param.clone());
            row_types = node.outputs.clone();
            self.tapes.push(TapeParam {
                param,
                node: node.id,
                row: row_types.clone(),
            });
        }
        let scalar = ValueType::scalar(self.fwd.dtype);
        let (names, types) = self.params_of(body)?;
        let mut all_names = names.clone();
        let mut all_types = types.clone();
        all_names.push("k".into());
        all_types.push(scalar.clone());
        for (k, t) in row_types.iter().enumerate() {
            all_names.push(format!("tape{k}"));
            all_types.push(stacked(t, &rows));
        }
        // init: the state, 0, empty tapes.
        let mut init = inputs;
        init.push(self.b.scalar(0.0));
        for t in row_types.iter().map(|t| stacked(t, &rows)) {
            let z = self.zeros(&t)?;
            init.push(z);
        }
        // cond: the forward condition on the first n parameters.
        let (cin, cparams) = self.open_sub(all_names.clone(), all_types.clone())?;
        let mut inner = frame.clone();
        for (k, p) in cparams.iter().take(n).enumerate() {
            inner.env.insert(Ref::new(cond.input, k), *p);
        }
        self.emit_entries(&cond.nodes, &mut inner, false)?;
        let cond_out = self.cond_source(node, 0, &inner)?;
        let cond_i = Interface {
            input: cin,
            outputs: cond_out,
        };
        // body: the forward body, k + 1, the tapes with row k written.
        let (bin, bparams) = self.open_sub(all_names, all_types)?;
        let mut inner = frame.clone();
        for (k, p) in bparams.iter().take(n).enumerate() {
            inner.env.insert(Ref::new(body.input, k), *p);
        }
        self.emit_entries(&body.nodes, &mut inner, false)?;
        let mut outputs = self.cond_source(node, 1, &inner)?;
        let k = bparams[n];
        outputs.push(Source::Ref(self.step(k, 1.0)?));
        for (j, t) in row_types.iter().enumerate() {
            let w = self.tape_write(bparams[n + 1 + j], k, bparams[j], t, &rows)?;
            outputs.push(Source::Ref(w));
        }
        let body_i = Interface {
            input: bin,
            outputs,
        };
        let out = self.add(
            Op::While {
                cond: cond_i,
                body: body_i,
            },
            init,
        )?;
        let mut count = out[n];
        if stack {
            count = self.guard_capacity(count, &rows)?;
        }
        let tapes = (0..n).map(|j| stack.then(|| out[n + 1 + j])).collect();
        frame.taped.insert(node.id, Taped { count, tapes, rows });
        self.map_outputs(node, &out[..n], frame)
    }

    /// Interface `k`'s results of forward node `node`, in `frame`'s values.
    fn cond_source(&self, node: &Node, k: usize, frame: &Frame) -> Result<Vec<Source>, GradError> {
        node.op.interfaces()[k]
            .outputs
            .iter()
            .map(|s| frame.source(s))
            .collect()
    }

    /// A fresh `$tape_N` name for the tape of forward while `node`.
    fn tape_param(&self, node: NodeId) -> String {
        let base = format!("tape_{}", node.0);
        let taken = |n: &str| {
            self.fwd.params.iter().any(|p| p == n) || self.tapes.iter().any(|t| t.param == n)
        };
        let mut name = base.clone();
        let mut i = 1;
        while taken(&name) {
            name = format!("{base}_{i}");
            i += 1;
        }
        name
    }

    /// `count` passed through a one-branch `case` whose selector is 1 (a run-time
    /// error naming the node) when the loop ran more iterations than the tape has
    /// rows.
    fn guard_capacity(&mut self, count: Ref, rows: &Expr) -> Result<Ref, GradError> {
        let Expr::Param(p) = rows else {
            return Ok(count);
        };
        let cap = self.step(count, -0.5)?;
        let within = self.less(cap, Arg::Param(p.clone()))?;
        let sel = self
            .b
            .call(
                "where",
                &[Arg::Tensor(within), Arg::Float(0.0), Arg::Float(1.0)],
                &[],
            )
            .map_err(GradError::build)?;
        let scalar = ValueType::scalar(self.fwd.dtype);
        let (input, params) = self.open_sub(vec!["n".into()], vec![scalar])?;
        let branch = Interface {
            input,
            outputs: vec![Source::Ref(params[0])],
        };
        let out = self.add(
            Op::Case {
                branches: vec![branch],
            },
            vec![sel, count],
        )?;
        self.b
            .name(out[0], "trips_within_tape")
            .map_err(GradError::build)?;
        Ok(out[0])
    }
}
