//! The machine that runs an executable's [`Steps`](crate::build::Steps) once: values in
//! slots, their elements in the run's arena where the memory plan places them
//! ([`Memory`]), kernels through their compiled code, the control flow of DESIGN.md
//! §13.2 and §19 with the graph interpreter's run-time errors (word for word, naming
//! the node).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uop_codegen::index::{Bindings, Expr};
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{DType, concrete_shape};
use uop_graph::infer::{call_program_in, list};
use uop_graph::{Call, Graph, GraphRunError, NodeId, ValueType};

use crate::build::{Body, Src, Step, StepKind};
use crate::kernel::{Compiled, Compiler};
use crate::memory::Memory;
use crate::pool::Pool;
use crate::store::Store;
use crate::value::{Buf, Data, Shape, Value};

mod scan;

/// A call's node, the concrete types of its inputs and the graph's dims.
pub(crate) type CallKey = (NodeId, Vec<(DType, Vec<usize>)>, Vec<(String, i64)>);

/// Programs of unfused calls, compiled per concrete input types.
pub(crate) type CallCache = Mutex<HashMap<CallKey, Arc<Compiled>>>;

fn node_error(node: NodeId, message: impl Into<String>) -> GraphRunError {
    GraphRunError::Node {
        node,
        message: message.into(),
    }
}

/// One run's state.
pub(crate) struct Machine<'a> {
    /// The prepared graph (for calls: dtype, params, registry).
    pub graph: &'a Graph,
    /// What compiles unfused calls.
    pub compiler: &'a Compiler,
    /// The most iterations one `while` may run.
    pub max_iterations: Option<u64>,
    /// Compiled unfused calls.
    pub calls: &'a CallCache,
    /// The value of every slot.
    pub store: &'a Store,
    /// The arena and the plan.
    pub mem: Memory<'a>,
    /// The `$params`.
    pub params: Cow<'a, HashMap<String, i64>>,
    /// The graph inputs' dims and the params (for `parallel` counts).
    pub bindings: Cow<'a, Bindings>,
    /// Spare lists (the run's, kept from run to run).
    pub pool: Pool,
}

impl<'a> Machine<'a> {
    /// A machine for another stream of the same run: the same store, arena, caches
    /// and graph; its own swaps, `$params` and bindings.
    pub(crate) fn fork(&self) -> Machine<'a> {
        Machine {
            graph: self.graph,
            compiler: self.compiler,
            max_iterations: self.max_iterations,
            calls: self.calls,
            store: self.store,
            mem: self.mem.clone(),
            params: self.params.clone(),
            bindings: self.bindings.clone(),
            pool: Pool::default(),
        }
    }

    fn value(&self, node: NodeId, slot: usize) -> Result<Value, GraphRunError> {
        self.store
            .get(slot)
            .ok_or_else(|| node_error(node, format!("reads slot {slot}, which has no value")))
    }

    fn result(&self, node: NodeId, src: &Src) -> Result<Value, GraphRunError> {
        match src {
            Src::Slot(s) => self.value(node, *s),
            Src::Value(v) => Ok(v.clone()),
        }
    }

    /// Runs `body`'s steps with its parameters set to `args`; returns its results.
    pub(crate) fn body(
        &mut self,
        owner: NodeId,
        body: &Body,
        mut args: Vec<Value>,
    ) -> Result<Vec<Value>, GraphRunError> {
        if args.len() != body.params.len() {
            return Err(node_error(
                owner,
                format!(
                    "a sub-function takes {} values, {} were given",
                    body.params.len(),
                    args.len()
                ),
            ));
        }
        for (p, a) in body.params.iter().zip(args.drain(..)) {
            self.store.set(*p, Some(a));
        }
        self.pool.give_values(args);
        self.run_body(body)?;
        let mut results = self.pool.values();
        for r in &body.results {
            results.push(self.result(owner, r)?);
        }
        Ok(results)
    }

    /// Runs steps in order.
    pub(crate) fn steps(&mut self, steps: &[Step]) -> Result<(), GraphRunError> {
        steps.iter().try_for_each(|s| self.step(s))
    }

    /// The values of the step's inputs, in a list from the pool.
    fn inputs(&mut self, step: &Step) -> Result<Vec<Value>, GraphRunError> {
        let mut list = self.pool.values();
        for s in &step.inputs {
            list.push(self.value(step.node, *s)?);
        }
        Ok(list)
    }

    /// Puts `values` into the step's output slots, each where the plan places it: a
    /// value already there stays, any other is copied there (a graph output, which the
    /// plan does not place, is kept when owned and copied out of the arena otherwise).
    fn set_outputs(&mut self, step: &Step, mut values: Vec<Value>) -> Result<(), GraphRunError> {
        if values.len() != step.outputs.len() {
            return Err(node_error(
                step.node,
                format!(
                    "gave {} values for {} outputs",
                    values.len(),
                    step.outputs.len()
                ),
            ));
        }
        for (s, v) in step.outputs.iter().zip(values.drain(..)) {
            let v = self.deliver(*s, v).map_err(|m| node_error(step.node, m))?;
            self.store.set(*s, Some(v));
        }
        self.pool.give_values(values);
        Ok(())
    }

    /// `v` as the value of slot number `slot`: itself when it is where the slot's value
    /// goes, else a copy there.
    fn deliver(&mut self, slot: usize, v: Value) -> Result<Value, String> {
        match (self.mem.planned(slot), &v.data) {
            (None, Data::Owned(_)) => return Ok(v),
            (Some(s), Data::Arena { offset, .. }) if self.mem.map(s.offset) == *offset => {
                return Ok(v);
            }
            _ => {}
        }
        let previous = self.store.take(slot);
        let mut placed = self.mem.place(slot, previous, v.dtype(), &v.shape)?;
        self.mem.copy(&mut placed, 0, &v)?;
        Ok(placed)
    }

    fn step(&mut self, step: &Step) -> Result<(), GraphRunError> {
        let node = step.node;
        match &step.kind {
            StepKind::Const(v) => self.store.set(step.outputs[0], Some(v.clone())),
            StepKind::Kernel { name, compiled } => {
                let params = std::mem::take(&mut self.params);
                let result = self.kernel(step, compiled, &params);
                self.params = params;
                result.map_err(|m| node_error(node, format!("kernel {name}: {m}")))?;
            }
            StepKind::Call(call) => self.call(step, call)?,
            StepKind::While { cond, body, names } => {
                let state = self.inputs(step)?;
                let out = self.while_loop(node, (cond, body), names, state)?;
                self.set_outputs(step, out)?;
            }
            StepKind::If { then, else_ } => {
                let mut args = self.inputs(step)?;
                let c = self.one_value(node, "condition", &args)?;
                args.remove(0);
                let out = self.body(node, if c != 0.0 { then } else { else_ }, args)?;
                self.set_outputs(step, out)?;
            }
            StepKind::Case { branches, mismatch } => {
                let mut args = self.inputs(step)?;
                let sel = self.one_value(node, "selector", &args)?;
                args.remove(0);
                let out = self.case(node, sel, branches, mismatch.as_ref(), args)?;
                self.set_outputs(step, out)?;
            }
            StepKind::Parallel { count, body, types } => {
                let args = self.inputs(step)?;
                self.parallel(step, count, body, types, args)?;
            }
            StepKind::Scan {
                count,
                carried,
                scanned,
                stacked,
                body,
                types,
            } => {
                let args = self.inputs(step)?;
                let s = scan::ScanStep {
                    count,
                    carried: *carried,
                    scanned,
                    stacked,
                    body,
                    types,
                };
                self.scan(step, &s, args)?;
            }
            StepKind::NoInline(body) => {
                let args = self.inputs(step)?;
                let out = self.body(node, body, args)?;
                self.set_outputs(step, out)?;
            }
            StepKind::Chunk | StepKind::SumChunks => {
                let args = self.inputs(step)?;
                self.set_outputs(step, args)?;
            }
            StepKind::Sink => {}
        }
        Ok(())
    }

    /// Runs compiled code: the output slots are taken out of the store while the
    /// inputs are borrowed from it, then put back.
    fn kernel(
        &mut self,
        step: &Step,
        compiled: &Compiled,
        params: &HashMap<String, i64>,
    ) -> Result<(), String> {
        let mut outs = self.pool.slots();
        outs.extend(step.outputs.iter().map(|s| self.store.take(*s)));
        let mut ins = self.pool.values();
        let mut result = Ok(());
        for s in &step.inputs {
            match self.store.get(*s) {
                Some(v) => ins.push(v),
                None => {
                    result = Err(format!("reads slot {s}, which has no value"));
                    break;
                }
            }
        }
        if result.is_ok() {
            result = compiled.run(&self.mem, &ins, params, &step.outputs, &mut outs);
        }
        self.pool.give_values(ins);
        for (s, v) in step.outputs.iter().zip(outs.drain(..)) {
            self.store.set(*s, v);
        }
        self.pool.give_slots(outs);
        result
    }

    fn call(&mut self, step: &Step, call: &Call) -> Result<(), GraphRunError> {
        let node = step.node;
        let inputs = self.inputs(step)?;
        let types: Vec<(DType, Vec<usize>)> = inputs
            .iter()
            .map(|v| (v.dtype(), v.shape.to_vec()))
            .collect();
        let mut dims: Vec<(String, i64)> = self
            .bindings
            .names
            .iter()
            .map(|(n, v)| (n.clone(), *v))
            .collect();
        dims.sort();
        let key = (node, types, dims);
        let cached = self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        let compiled = match cached {
            Some(c) => c,
            None => {
                let value_types: Vec<ValueType> = key
                    .1
                    .iter()
                    .map(|(d, s)| {
                        ValueType::new(*d, s.iter().map(|&n| Expr::Int(n as i64)).collect())
                    })
                    .collect();
                let dims: Vec<(String, Expr)> = key
                    .2
                    .iter()
                    .map(|(n, v)| (n.clone(), Expr::Int(*v)))
                    .collect();
                let (program, _) = call_program_in(
                    self.graph.dtype,
                    &self.graph.params,
                    &self.graph.registry,
                    call,
                    &value_types,
                    &dims,
                )
                .map_err(|err| {
                    node_error(
                        node,
                        format!("{} on ({}): {err}", call.op, list(&value_types)),
                    )
                })?;
                let compiled = Arc::new(
                    self.compiler
                        .compile(&program)
                        .map_err(|m| node_error(node, format!("{}: {m}", call.op)))?,
                );
                self.calls
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, compiled.clone());
                compiled
            }
        };
        let mut params = (*self.params).clone();
        for (name, k) in &call.bind {
            let index = inputs.get(*k).ok_or_else(|| {
                node_error(
                    node,
                    format!("${name} is bound to input {k}, which does not exist"),
                )
            })?;
            let v = self.one_value(node, &format!("${name}"), std::slice::from_ref(index))?;
            params.insert(name.clone(), v as i64);
        }
        self.kernel(step, &compiled, &params)
            .map_err(|m| node_error(node, format!("{}: {m}", call.op)))
    }

    /// `while`, with its state carried as the memory plan says
    /// ([`uop_graph::memory::Carried`]): the initial values are copied into the state
    /// slots (unless already there); the condition and the body read the state where
    /// it is; each result is written straight into the slot the next iteration reads
    /// (the body's kernels put it there) or copied there after the body; a state that
    /// alternates between two slots swaps them on odd iterations and is copied back to
    /// the first after an odd trip count. Nothing is allocated per iteration.
    fn while_loop(
        &mut self,
        node: NodeId,
        (cond, body): (&Body, &Body),
        names: &[Option<String>],
        initial: Vec<Value>,
    ) -> Result<Vec<Value>, GraphRunError> {
        let err = |m: String| node_error(node, m);
        let carried = self
            .mem
            .carried(node)
            .ok_or_else(|| err("the memory plan does not carry this loop's state".into()))?;
        if carried.len() != initial.len() {
            return Err(err(format!(
                "the memory plan carries {} state values, the loop has {}",
                carried.len(),
                initial.len()
            )));
        }
        let mut state = self.pool.values();
        for (c, v) in carried.iter().zip(&initial) {
            let slot = c.state();
            let mut at = self
                .mem
                .at(slot.offset, slot.bytes, v.dtype(), &v.shape)
                .map_err(err)?;
            if v.offset() != at.offset() {
                self.mem.copy(&mut at, 0, v).map_err(err)?;
            }
            state.push(at);
        }
        self.pool.give_values(initial);
        let mut trips = 0u64;
        let mut odd = false;
        loop {
            let mut swaps = 0;
            if odd {
                for c in carried {
                    if let uop_graph::memory::Carried::Alternate { slots } = c {
                        self.mem.swap(slots[0].offset, slots[1].offset);
                        swaps += 1;
                    }
                }
            }
            let iteration = self.iteration(node, (cond, body), names, carried, &mut state, trips);
            self.mem.unswap(swaps);
            if !iteration? {
                break;
            }
            odd = !odd;
            trips += 1;
        }
        if odd {
            for (c, v) in carried.iter().zip(state.iter_mut()) {
                if let uop_graph::memory::Carried::Alternate { slots } = c {
                    let mut home = self
                        .mem
                        .at(slots[0].offset, slots[0].bytes, v.dtype(), &v.shape)
                        .map_err(err)?;
                    self.mem.copy(&mut home, 0, v).map_err(err)?;
                    *v = home;
                }
            }
        }
        Ok(state)
    }

    /// One test of a `while`'s condition and, when it holds, one run of its body with
    /// the results carried into `state`. False when the loop ends.
    fn iteration(
        &mut self,
        node: NodeId,
        (cond, body): (&Body, &Body),
        names: &[Option<String>],
        carried: &[uop_graph::memory::Carried],
        state: &mut [Value],
        trips: u64,
    ) -> Result<bool, GraphRunError> {
        let mut args = self.pool.values();
        args.extend(state.iter().cloned());
        let c = self.body(node, cond, args)?;
        for p in &cond.params {
            self.store.set(*p, None);
        }
        let holds = self.one_value(node, "condition", &c)?;
        self.pool.give_values(c);
        if holds == 0.0 {
            return Ok(false);
        }
        if let Some(max) = self.max_iterations
            && trips >= max
        {
            return Err(uop_graph::too_many_iterations(node, names, max));
        }
        let mut args = self.pool.values();
        args.extend(state.iter().cloned());
        let next = self.body(node, body, args)?;
        for (k, (from, new)) in state.iter().zip(&next).enumerate() {
            if from.dtype() != new.dtype() || from.shape != new.shape {
                return Err(node_error(
                    node,
                    format!(
                        "the body turned state {k} from {}{:?} into {}{:?}",
                        from.dtype().name(),
                        from.shape,
                        new.dtype().name(),
                        new.shape
                    ),
                ));
            }
        }
        if next.len() != state.len() {
            return Err(node_error(
                node,
                format!(
                    "the body gave {} values for {} states",
                    next.len(),
                    state.len()
                ),
            ));
        }
        // Every result is read before any is written (a parallel assignment): the
        // plan puts each into a slot no other result is read from.
        for (k, (c, new)) in carried.iter().zip(&next).enumerate() {
            let slot = match c {
                uop_graph::memory::Carried::InPlace { slot } => *slot,
                uop_graph::memory::Carried::Alternate { slots } => slots[1],
            };
            let mut at = self
                .mem
                .at(slot.offset, slot.bytes, new.dtype(), &new.shape)
                .map_err(|m| node_error(node, m))?;
            if new.offset() != at.offset() {
                self.mem
                    .copy(&mut at, 0, new)
                    .map_err(|m| node_error(node, format!("state {k}: {m}")))?;
            }
            state[k] = at;
        }
        self.pool.give_values(next);
        for p in &body.params {
            self.store.set(*p, None);
        }
        Ok(true)
    }

    fn case(
        &mut self,
        node: NodeId,
        sel: f64,
        branches: &[Body],
        mismatch: Option<&(String, String)>,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, GraphRunError> {
        if sel.is_nan() {
            return Err(node_error(node, "the selector is nan"));
        }
        let k = sel.floor();
        if k < 0.0 {
            if let Some((args, outputs)) = mismatch {
                return Err(node_error(
                    node,
                    format!(
                        "the selector is {sel}, which passes the arguments through, but the arguments ({args}) do not have the output types ({outputs})"
                    ),
                ));
            }
            return Ok(args);
        }
        if k >= branches.len() as f64 {
            return Err(node_error(
                node,
                format!(
                    "the selector is {sel}, but there are {} branches",
                    branches.len()
                ),
            ));
        }
        self.body(node, &branches[k as usize], args)
    }

    /// `parallel`: iteration i's k-th result is copied into output k at row i.
    fn parallel(
        &mut self,
        step: &Step,
        count: &Expr,
        body: &Body,
        types: &[ValueType],
        args: Vec<Value>,
    ) -> Result<(), GraphRunError> {
        let node = step.node;
        let err = |m: String| node_error(node, m);
        let mut b = self.bindings.clone().into_owned();
        b.params
            .extend(self.params.iter().map(|(k, v)| (k.clone(), *v)));
        let n = count
            .eval(&b)
            .map_err(|e| err(format!("the count `{count}`: {e}")))?;
        let n = usize::try_from(n).map_err(|_| err(format!("the count `{count}` is {n}")))?;
        if n == 0 {
            for (slot, ty) in step.outputs.iter().zip(types) {
                let shape = concrete_shape(&node.to_string(), &ty.shape, &b)
                    .map_err(|e| err(e.to_string()))?;
                let previous = self.store.take(*slot);
                let v = self
                    .mem
                    .place(*slot, previous, ty.dtype, &shape)
                    .map_err(err)?;
                self.store.set(*slot, Some(v));
            }
            return Ok(());
        }
        let mut first: Vec<(DType, Vec<usize>)> = Vec::new();
        let mut index = Arc::new(Buf::I32(vec![0]));
        for i in 0..n {
            match Arc::get_mut(&mut index) {
                Some(Buf::I32(v)) => v[0] = i as i32,
                _ => index = Arc::new(Buf::I32(vec![i as i32])),
            }
            let mut call_args = self.pool.values();
            call_args.push(Value {
                shape: Shape::new(&[]),
                data: Data::Owned(index.clone()),
            });
            call_args.extend(args.iter().cloned());
            let results = self.body(node, body, call_args)?;
            if let Some(p) = body.params.first() {
                self.store.set(*p, None);
            }
            if results.len() != step.outputs.len() {
                return Err(err(format!(
                    "gave {} values for {} outputs",
                    results.len(),
                    step.outputs.len()
                )));
            }
            for (k, (r, slot)) in results.iter().zip(&step.outputs).enumerate() {
                if i == 0 {
                    first.push((r.dtype(), r.shape.to_vec()));
                    let mut shape = vec![n];
                    shape.extend(r.shape.iter());
                    let previous = self.store.take(*slot);
                    let v = self
                        .mem
                        .place(*slot, previous, r.dtype(), &shape)
                        .map_err(err)?;
                    self.store.set(*slot, Some(v));
                } else if (r.dtype(), &*r.shape) != (first[k].0, first[k].1.as_slice()) {
                    return Err(err(format!(
                        "iteration {i} gave result {k} of shape {:?}, iteration 0 of {:?}",
                        r.shape, first[k].1
                    )));
                }
                let mut out = self
                    .store
                    .take(*slot)
                    .ok_or_else(|| err(format!("output {k} has no storage")))?;
                let copied = self.mem.copy(&mut out, i * r.len(), r);
                self.store.set(*slot, Some(out));
                copied.map_err(|m| err(format!("result {k} of iteration {i}: {m}")))?;
            }
        }
        Ok(())
    }

    /// The one value of a condition, selector or index: `values[0]` must have one
    /// element.
    fn one_value(&self, node: NodeId, what: &str, values: &[Value]) -> Result<f64, GraphRunError> {
        match values.first() {
            Some(v) if v.len() == 1 => Ok(self.mem.get(v, 0).unwrap_or(f64::NAN)),
            Some(v) => Err(node_error(
                node,
                format!("the {what} must be one value, got shape {:?}", v.shape),
            )),
            None => Err(node_error(node, format!("the {what} is missing"))),
        }
    }

    /// The value of `src` as an owned tensor (a graph output).
    pub(crate) fn output(&self, node: NodeId, src: &Src) -> Result<Tensor, GraphRunError> {
        self.result(node, src).map(|v| self.mem.tensor(&v))
    }

    /// The value of `src` written into `t` (a graph output), in its buffers.
    pub(crate) fn output_into(
        &self,
        node: NodeId,
        src: &Src,
        t: &mut Tensor,
    ) -> Result<(), GraphRunError> {
        self.result(node, src).map(|v| self.mem.tensor_into(&v, t))
    }
}
