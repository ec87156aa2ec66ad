//! The gradient of a `while`: a backward `while` over the iterations N−1 down to 0.
//!
//! Its state is `(k, g_s..., acc_c...)`: the count of iterations left, the gradient
//! of every float state (the carried gradients) and one accumulator per loop
//! invariant the body reads. Each iteration takes `j = k − 1`, gets the state of
//! forward iteration j (a row of the tape, or recomputed from the initial state by
//! a `while` of j steps), recomputes the body on it, runs the body's backward pass
//! seeded with `g_s`, and returns `j`, the gradients of the body's parameters and
//! `acc_c` plus the body's contributions. The results are the gradients of the
//! initial state and of the invariants. The condition gets no gradient.

use super::clone::{Frame, Taped};
use super::{Adj, Ctx, GradError};
use crate::builder::Arg;
use crate::hierarchy::{Entry, SubFunction};
use crate::ir::{Interface, Node, Op, Ref, Source, ValueType};

use super::reach::free_refs;

impl Ctx<'_> {
    /// The backward `while` of forward `node` (module docs).
    pub(crate) fn backward_while(
        &mut self,
        node: &Node,
        e: &Entry,
        seeds: &[Option<Ref>],
        frame: &Frame,
        adj: &mut Adj,
    ) -> Result<(), GradError> {
        let body = match e.subs.as_slice() {
            [_, b] => b,
            _ => {
                return Err(GradError::Graph(format!(
                    "{}: a while needs two subs",
                    node.id
                )));
            }
        };
        let n = node.outputs.len();
        let float: Vec<usize> = (0..n)
            .filter(|&k| node.outputs[k].dtype.is_float())
            .collect();
        let captures: Vec<Ref> = free_refs(self.fwd, body)
            .into_iter()
            .filter(|r| self.reach.has(*r))
            .collect();
        let wanted_init = float.iter().any(|&k| self.reach.has(node.inputs[k]));
        if !wanted_init && captures.is_empty() {
            return Ok(());
        }
        let taped = frame.taped.get(&node.id).cloned().ok_or_else(|| {
            GradError::Graph(format!("{}: the loop recorded no trip count", node.id))
        })?;
        let scalar = ValueType::scalar(self.fwd.dtype);
        let mut cap_types = Vec::new();
        for c in &captures {
            cap_types.push(
                self.fwd
                    .type_of(*c)
                    .cloned()
                    .ok_or_else(|| GradError::Graph(format!("{c} is not a value")))?,
            );
        }
        // The initial backward state.
        let mut init = vec![taped.count];
        for &k in &float {
            init.push(match seeds[k] {
                Some(s) => s,
                None => self.zeros(&node.outputs[k])?,
            });
        }
        for t in &cap_types {
            init.push(self.zeros(t)?);
        }
        let mut names = vec!["k".to_string()];
        let mut types = vec![scalar.clone()];
        for &k in &float {
            names.push(format!("g{k}"));
            types.push(node.outputs[k].clone());
        }
        for (j, t) in cap_types.iter().enumerate() {
            names.push(format!("acc{j}"));
            types.push(t.clone());
        }
        // cond: k > 0.
        let (cin, cparams) = self.open_sub(names.clone(), types.clone())?;
        let more = self
            .b
            .call("gt", &[Arg::Tensor(cparams[0]), Arg::Float(0.0)], &[])
            .map_err(GradError::build)?;
        let cond = Interface {
            input: cin,
            outputs: vec![Source::Ref(more)],
        };
        // body.
        let (bin, bparams) = self.open_sub(names, types)?;
        let j = self.step(bparams[0], -1.0)?;
        let state = self.state_at(node, body, &taped, j, frame)?;
        let mut inner = frame.clone();
        for (k, s) in state.iter().enumerate() {
            inner.env.insert(Ref::new(body.input, k), *s);
        }
        self.emit_entries(&body.nodes, &mut inner, true)?;
        let mut local = Adj::new();
        let results = node.op.interfaces()[1].outputs.clone();
        for (i, &k) in float.iter().enumerate() {
            if let Source::Ref(r) = &results[k] {
                self.accumulate(&mut local, *r, bparams[1 + i])?;
            }
        }
        self.backward_entries(&body.nodes, &inner, &mut local)?;
        let mut outputs = vec![Source::Ref(j)];
        for &k in &float {
            let p = Ref::new(body.input, k);
            outputs.push(Source::Ref(self.gradient_or_zeros(
                &local,
                p,
                &node.outputs[k],
            )?));
        }
        for (i, c) in captures.iter().enumerate() {
            let acc = bparams[1 + float.len() + i];
            outputs.push(Source::Ref(match local.get(c) {
                Some(g) => self.b.op("add", &[acc, *g]).map_err(GradError::build)?,
                None => acc,
            }));
        }
        let body_i = Interface {
            input: bin,
            outputs,
        };
        let out = self.add(Op::While { cond, body: body_i }, init)?;
        for (i, &k) in float.iter().enumerate() {
            if self.reach.has(node.inputs[k]) {
                self.accumulate(adj, node.inputs[k], out[1 + i])?;
            }
        }
        for (i, c) in captures.iter().enumerate() {
            self.accumulate(adj, *c, out[1 + float.len() + i])?;
        }
        Ok(())
    }

    /// The forward state before iteration `j`: rows of the tape, or recomputed by
    /// running the body `j` times from the initial state.
    fn state_at(
        &mut self,
        node: &Node,
        body: &SubFunction,
        taped: &Taped,
        j: Ref,
        frame: &Frame,
    ) -> Result<Vec<Ref>, GradError> {
        let n = node.outputs.len();
        if taped.tapes.iter().all(Option::is_some) && n > 0 {
            let mut state = Vec::new();
            for (k, t) in taped.tapes.iter().enumerate() {
                let t = t.ok_or_else(|| GradError::Graph("a state has no tape".into()))?;
                state.push(self.tape_read(t, j, &node.outputs[k], &taped.rows)?);
            }
            return Ok(state);
        }
        // Recompute: while i < j: state = body(state), i += 1.
        let scalar = ValueType::scalar(self.fwd.dtype);
        let (mut names, mut types) = self.params_of(body)?;
        names.push("i".into());
        types.push(scalar);
        let (cin, cparams) = self.open_sub(names.clone(), types.clone())?;
        let more = self.less(cparams[n], Arg::Tensor(j))?;
        let cond = Interface {
            input: cin,
            outputs: vec![Source::Ref(more)],
        };
        let (bin, bparams) = self.open_sub(names, types)?;
        let mut inner = frame.clone();
        for (k, p) in bparams.iter().take(n).enumerate() {
            inner.env.insert(Ref::new(body.input, k), *p);
        }
        self.emit_entries(&body.nodes, &mut inner, false)?;
        let mut outputs: Vec<Source> = node.op.interfaces()[1]
            .outputs
            .iter()
            .map(|s| inner.source(s))
            .collect::<Result<_, _>>()?;
        outputs.push(Source::Ref(self.step(bparams[n], 1.0)?));
        let body_i = Interface {
            input: bin,
            outputs,
        };
        let mut init: Vec<Ref> = node
            .inputs
            .iter()
            .map(|r| frame.get(*r))
            .collect::<Result<_, _>>()?;
        init.push(self.b.scalar(0.0));
        let out = self.add(Op::While { cond, body: body_i }, init)?;
        Ok(out[..n].to_vec())
    }
}
