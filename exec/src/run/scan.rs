//! The executor's `scan` (rules in `uop_graph::scan`): the body runs `count` times in
//! order. The state and the slices of the scanned inputs are passed to the body in
//! buffers of the scan's own (outside the arena: the plan gives a `scan`'s body
//! parameters no slot), reused from one iteration to the next; each iteration's state
//! results are copied into the buffers the next one reads, its other results into the
//! stacked outputs (planned for the whole construct) at the iteration's position.

use std::sync::Arc;

use uop_codegen::index::{Bindings, Expr};
use uop_codegen::uop::concrete_shape;
use uop_graph::{GraphRunError, ScanAxis, ValueType};

use super::{Machine, node_error};
use crate::build::{Body, Step};
use crate::memory::Memory;
use crate::value::{Buf, Data, Shape, Value};

/// What a `scan` step is.
pub(crate) struct ScanStep<'s> {
    /// The iteration count.
    pub count: &'s Expr,
    /// How many inputs and outputs are state.
    pub carried: usize,
    /// The axis of each scanned input.
    pub scanned: &'s [ScanAxis],
    /// The axis of each stacked output.
    pub stacked: &'s [ScanAxis],
    /// The body; parameter 0 is the index.
    pub body: &'s Body,
    /// The output types.
    pub types: &'s [ValueType],
}

impl Machine<'_> {
    /// Runs `scan` step `step` on `inputs` (the initial state, then the scanned inputs).
    pub(super) fn scan(
        &mut self,
        step: &Step,
        s: &ScanStep<'_>,
        inputs: Vec<Value>,
    ) -> Result<(), GraphRunError> {
        let node = step.node;
        let err = |m: String| node_error(node, m);
        let mut b = Bindings::clone(&self.bindings);
        b.params
            .extend(self.params.iter().map(|(k, v)| (k.clone(), *v)));
        let n = s
            .count
            .eval(&b)
            .map_err(|e| err(format!("the count `{}`: {e}", s.count)))?;
        let n = usize::try_from(n).map_err(|_| err(format!("the count `{}` is {n}", s.count)))?;
        if inputs.len() != s.carried + s.scanned.len() || step.outputs.len() != s.types.len() {
            return Err(err(
                "the scan's inputs or outputs do not match its node".into()
            ));
        }
        let (init, xs) = inputs.split_at(s.carried);
        for (k, (x, a)) in xs.iter().zip(s.scanned).enumerate() {
            if x.shape.get(a.axis) != Some(&n) {
                return Err(err(format!(
                    "scanned input {k} of shape {:?} does not have {n} positions on axis {}",
                    x.shape, a.axis
                )));
            }
        }
        for (slot, ty) in step.outputs.iter().zip(s.types).skip(s.carried) {
            let shape =
                concrete_shape(&node.to_string(), &ty.shape, &b).map_err(|e| err(e.to_string()))?;
            let previous = self.store.take(*slot);
            let v = self
                .mem
                .place(*slot, previous, ty.dtype, &shape)
                .map_err(err)?;
            self.store.set(*slot, Some(v));
        }
        let mut state: Vec<Value> = init.to_vec();
        let mut spare: Vec<Option<Value>> = vec![None; s.carried];
        let mut slices: Vec<Option<Value>> = vec![None; xs.len()];
        let mut index = Arc::new(Buf::I32(vec![0]));
        for t in 0..n {
            match Arc::get_mut(&mut index) {
                Some(Buf::I32(v)) => v[0] = t as i32,
                _ => index = Arc::new(Buf::I32(vec![t as i32])),
            }
            let mut args = Vec::with_capacity(1 + state.len() + xs.len());
            args.push(Value {
                shape: Shape::new(&[]),
                data: Data::Owned(index.clone()),
            });
            args.extend(state.iter().cloned());
            for ((x, a), buf) in xs.iter().zip(s.scanned).zip(&mut slices) {
                let mut shape = x.shape.to_vec();
                shape.remove(a.axis);
                let mut v = self.mem.owned(buf.take(), x.dtype(), &shape);
                let p = a.position(t, n);
                rows(&self.mem, x, &mut v, a.axis, p, Direction::Take).map_err(err)?;
                args.push(v.clone());
                *buf = Some(v);
            }
            let results = self.body(node, s.body, args)?;
            for p in &s.body.params {
                self.store.set(*p, None);
            }
            self.scan_results(step, s, (t, n), &mut state, &mut spare, results)?;
        }
        for (k, (slot, v)) in step.outputs.iter().zip(state).enumerate() {
            let v = self
                .deliver(*slot, v)
                .map_err(|m| err(format!("state {k}: {m}")))?;
            self.store.set(*slot, Some(v));
        }
        Ok(())
    }

    /// Iteration `t` of `n`'s `results`: the state copied into buffers of the scan's
    /// own (the spare ones), the rest written into the stacked outputs.
    fn scan_results(
        &mut self,
        step: &Step,
        s: &ScanStep<'_>,
        (t, n): (usize, usize),
        state: &mut [Value],
        spare: &mut [Option<Value>],
        results: Vec<Value>,
    ) -> Result<(), GraphRunError> {
        let node = step.node;
        let err = |m: String| node_error(node, m);
        if results.len() != step.outputs.len() {
            return Err(err(format!(
                "the body gave {} values for {} outputs",
                results.len(),
                step.outputs.len()
            )));
        }
        for (k, (new, old)) in results.iter().zip(state.iter()).enumerate() {
            if new.dtype() != old.dtype() || new.shape != old.shape {
                return Err(err(format!(
                    "the body turned state {k} from {}{:?} into {}{:?}",
                    old.dtype().name(),
                    old.shape,
                    new.dtype().name(),
                    new.shape
                )));
            }
        }
        let mut fresh = Vec::with_capacity(state.len());
        for (k, new) in results.iter().take(s.carried).enumerate() {
            let mut v = self.mem.owned(spare[k].take(), new.dtype(), &new.shape);
            self.mem
                .copy(&mut v, 0, new)
                .map_err(|m| err(format!("state {k}: {m}")))?;
            fresh.push(v);
        }
        for (k, ((y, a), slot)) in results[s.carried..]
            .iter()
            .zip(s.stacked)
            .zip(&step.outputs[s.carried..])
            .enumerate()
        {
            let mut out = self
                .store
                .take(*slot)
                .ok_or_else(|| err(format!("stacked output {k} has no storage")))?;
            let written = rows(
                &self.mem,
                y,
                &mut out,
                a.axis,
                a.position(t, n),
                Direction::Put,
            );
            self.store.set(*slot, Some(out));
            written.map_err(|m| err(format!("stacked output {k}, iteration {t}: {m}")))?;
        }
        drop(results);
        for (k, v) in fresh.into_iter().enumerate() {
            let old = std::mem::replace(&mut state[k], v);
            spare[k] = Some(old);
        }
        Ok(())
    }
}

/// Which way [`rows`] copies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Position `p` of `full`'s axis into `part`.
    Take,
    /// `part` into position `p` of `full`'s axis.
    Put,
}

/// Copies between position `p` of `full`'s `axis` and `part` (`full`'s shape without
/// the axis), `dir` saying which way.
fn rows(
    mem: &Memory<'_>,
    full_or_part: &Value,
    other: &mut Value,
    axis: usize,
    p: usize,
    dir: Direction,
) -> Result<(), String> {
    let (full_shape, part_len) = match dir {
        Direction::Take => (full_or_part.shape.clone(), other.len()),
        Direction::Put => (other.shape.clone(), full_or_part.len()),
    };
    if axis >= full_shape.len() || p >= full_shape[axis] {
        return Err(format!(
            "position {p} of axis {axis} is outside a value of shape {full_shape:?}"
        ));
    }
    let outer: usize = full_shape[..axis].iter().product();
    let len = full_shape[axis];
    let inner: usize = full_shape[axis + 1..].iter().product();
    if outer * inner != part_len {
        return Err(format!(
            "{part_len} elements do not make one position of a value of shape {full_shape:?}"
        ));
    }
    let src = mem.read(full_or_part);
    let dst = mem.write(other)?;
    if src.dtype != dst.dtype {
        return Err(format!(
            "a {} value cannot be copied into a {} one",
            src.dtype.name(),
            dst.dtype.name()
        ));
    }
    let full_len = outer * len * inner;
    let (full_n, part_n) = match dir {
        Direction::Take => (src.len, dst.len),
        Direction::Put => (dst.len, src.len),
    };
    if full_n < full_len || part_n < part_len {
        return Err("a value is smaller than its shape".into());
    }
    let size = src.dtype.size();
    for o in 0..outer {
        let full_at = (o * len + p) * inner * size;
        let part_at = o * inner * size;
        let (from, to) = match dir {
            Direction::Take => (full_at, part_at),
            Direction::Put => (part_at, full_at),
        };
        // SAFETY: both buffers are valid for their `len` elements (owned buffers or
        // arena views checked against the arena), and `from + inner` / `to + inner`
        // are within them (checked above); `copy` allows overlap.
        unsafe {
            std::ptr::copy(
                src.ptr.cast_const().add(from),
                dst.ptr.add(to),
                inner * size,
            );
        }
    }
    Ok(())
}
