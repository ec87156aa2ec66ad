//! The gradient of a `scan`: a reverse scan.
//!
//! The forward scan is written recording its tape as more stacked outputs of its
//! own: the index and every state before each iteration, stacked on axis 0. The
//! backward is a scan of the same count whose every scanned input is read in the
//! opposite direction, so that its iteration `u` sees forward iteration
//! `t = count - 1 - u`: the seeds of the stacked outputs, the tape (the index `t`,
//! bound as the forward body's `$index`, and the states) and the forward's scanned
//! inputs. Its state is the gradient of every float state (the carried gradients,
//! from the seeds of the final state) and one accumulator per enclosing value the
//! body reads. Each iteration recomputes the forward body on the taped state, runs
//! its backward pass and returns the gradients of the state parameters, the
//! accumulators plus the body's contributions, and — stacked, written where the
//! forward read them — the gradients of the scanned inputs' slices.

use super::clone::{Frame, Taped};
use super::reach::free_refs;
use super::{Adj, Ctx, GradError};
use crate::hierarchy::{Entry, SubFunction};
use crate::ir::{Interface, Node, Op, Ref, ScanAxis, Source, ValueType};

/// A forward `scan`'s fields.
struct Fields<'a> {
    count: &'a uop_codegen::index::Expr,
    index: &'a str,
    carried: usize,
    scanned: &'a [ScanAxis],
    stacked: &'a [ScanAxis],
}

fn fields(node: &Node) -> Result<Fields<'_>, GradError> {
    match &node.op {
        Op::Scan {
            count,
            index,
            carried,
            scanned,
            stacked,
            ..
        } => Ok(Fields {
            count,
            index,
            carried: *carried,
            scanned,
            stacked,
        }),
        _ => Err(GradError::Graph(format!("{}: not a scan", node.id))),
    }
}

/// `a` read in the opposite direction.
fn flipped(a: ScanAxis) -> ScanAxis {
    ScanAxis {
        axis: a.axis,
        reverse: !a.reverse,
    }
}

impl Ctx<'_> {
    /// The forward `scan` `node` written again with its tape (module docs) as extra
    /// stacked outputs: the index, then every state.
    pub(crate) fn emit_recording_scan(
        &mut self,
        node: &Node,
        e: &Entry,
        frame: &mut Frame,
        inputs: Vec<Ref>,
    ) -> Result<(), GradError> {
        let f = fields(node)?;
        let sub = e
            .subs
            .first()
            .ok_or_else(|| GradError::Graph(format!("{}: a scan needs a body", node.id)))?;
        let (names, types) = self.params_of(sub)?;
        let (input, params) = self.open_sub(names, types)?;
        let mut inner = frame.clone();
        for (k, p) in params.iter().enumerate() {
            inner.env.insert(Ref::new(sub.input, k), *p);
        }
        self.with_index(Some((f.index, params[0])), |cx| {
            cx.emit_entries(&sub.nodes, &mut inner, false)
        })?;
        let mut outputs: Vec<Source> = node.op.interfaces()[0]
            .outputs
            .iter()
            .map(|s| inner.source(s))
            .collect::<Result<_, _>>()?;
        outputs.extend(params[..=f.carried].iter().map(|p| Source::Ref(*p)));
        let mut stacked = f.stacked.to_vec();
        stacked.extend(vec![ScanAxis::new(0); 1 + f.carried]);
        let op = Op::Scan {
            count: f.count.clone(),
            index: f.index.to_string(),
            carried: f.carried,
            scanned: f.scanned.to_vec(),
            stacked,
            body: Interface { input, outputs },
        };
        let out = self.add(op, inputs)?;
        let n = node.outputs.len();
        let tapes = out[n + 1..].iter().map(|r| Some(*r)).collect();
        frame.taped.insert(
            node.id,
            Taped {
                count: out[n],
                tapes,
                rows: f.count.clone(),
            },
        );
        self.map_outputs(node, &out[..n], frame)
    }

    /// The forward body of scan `node` recomputed in `inner` (its index bound to
    /// `index`), then its backward pass seeded with `seeds` (result position,
    /// gradient); returns the gradients.
    fn body_backward(
        &mut self,
        node: &Node,
        body: &SubFunction,
        index: (&str, Ref),
        inner: &mut Frame,
        seeds: &[(usize, Ref)],
    ) -> Result<Adj, GradError> {
        let results = node.op.interfaces()[0].outputs.clone();
        self.with_index(Some(index), |cx| {
            cx.emit_entries(&body.nodes, inner, true)?;
            let mut local = Adj::new();
            for &(out, g) in seeds {
                if let Some(Source::Ref(r)) = results.get(out)
                    && (r.node == body.input || cx.reach.has(*r))
                {
                    cx.accumulate(&mut local, *r, g)?;
                }
            }
            cx.backward_entries(&body.nodes, inner, &mut local)?;
            Ok(local)
        })
    }

    /// The backward scan of forward `node` (module docs).
    pub(crate) fn backward_scan(
        &mut self,
        node: &Node,
        e: &Entry,
        seeds: &[Option<Ref>],
        frame: &Frame,
        adj: &mut Adj,
    ) -> Result<(), GradError> {
        let f = fields(node)?;
        let body = e
            .subs
            .first()
            .ok_or_else(|| GradError::Graph(format!("{}: a scan needs a body", node.id)))?;
        let float: Vec<usize> = (0..f.carried)
            .filter(|&k| node.outputs[k].dtype.is_float())
            .collect();
        let xs_wanted: Vec<usize> = (0..f.scanned.len())
            .filter(|&j| self.reach.has(node.inputs[f.carried + j]))
            .collect();
        let captures: Vec<Ref> = free_refs(self.fwd, body)
            .into_iter()
            .filter(|r| self.reach.has(*r))
            .collect();
        let init_wanted = float.iter().any(|&k| self.reach.has(node.inputs[k]));
        if !init_wanted && xs_wanted.is_empty() && captures.is_empty() {
            return Ok(());
        }
        let taped =
            frame.taped.get(&node.id).cloned().ok_or_else(|| {
                GradError::Graph(format!("{}: the scan recorded no tape", node.id))
            })?;
        let cap_types = captures
            .iter()
            .map(|c| self.fwd.type_of(*c).cloned())
            .collect::<Option<Vec<ValueType>>>()
            .ok_or_else(|| GradError::Graph(format!("{}: reads a missing value", node.id)))?;
        let (fwd_names, fwd_types) = self.params_of(body)?;
        // Backward inputs: carried (g_s, acc), then scanned (seeds, index tape,
        // state tapes, xs).
        let mut inputs = Vec::new();
        let mut names = vec![format!("{}_grad", f.index)];
        let mut types = vec![fwd_types[0].clone()];
        for &k in &float {
            inputs.push(match seeds[k] {
                Some(s) => s,
                None => self.zeros(&node.outputs[k])?,
            });
            names.push(format!("g{k}"));
            types.push(node.outputs[k].clone());
        }
        for (j, t) in cap_types.iter().enumerate() {
            inputs.push(self.zeros(t)?);
            names.push(format!("acc{j}"));
            types.push(t.clone());
        }
        let mut scanned = Vec::new();
        let mut seeded: Vec<usize> = Vec::new();
        for (k, a) in f.stacked.iter().enumerate() {
            let Some(s) = seeds[f.carried + k] else {
                continue;
            };
            seeded.push(k);
            inputs.push(s);
            scanned.push(flipped(*a));
            names.push(format!("gy{k}"));
            let mut t = node.outputs[f.carried + k].clone();
            t.shape.remove(a.axis);
            types.push(t);
        }
        let tape_at = 1 + float.len() + captures.len() + seeded.len();
        inputs.push(taped.count);
        scanned.push(flipped(ScanAxis::new(0)));
        for t in &taped.tapes {
            inputs.push(t.ok_or_else(|| GradError::Graph("a state has no tape".into()))?);
            scanned.push(flipped(ScanAxis::new(0)));
        }
        for (j, a) in f.scanned.iter().enumerate() {
            inputs.push(frame.get(node.inputs[f.carried + j])?);
            scanned.push(flipped(*a));
        }
        names.extend(fwd_names);
        types.extend(fwd_types.iter().cloned());
        let (bin, bparams) = self.open_sub(names, types)?;
        // The forward body on iteration t's parameters, then its backward pass,
        // seeded by the carried gradients and the seeds' slices.
        let mut inner = frame.clone();
        for k in 0..fwd_types.len() {
            inner
                .env
                .insert(Ref::new(body.input, k), bparams[tape_at + k]);
        }
        let mut seeds_at: Vec<(usize, Ref)> = float
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, bparams[1 + i]))
            .collect();
        let first_seed = 1 + float.len() + captures.len();
        seeds_at.extend(
            seeded
                .iter()
                .enumerate()
                .map(|(i, &k)| (f.carried + k, bparams[first_seed + i])),
        );
        let local = self.body_backward(
            node,
            body,
            (f.index, bparams[tape_at]),
            &mut inner,
            &seeds_at,
        )?;
        let wanted = Wanted {
            float: &float,
            captures: &captures,
            xs: &xs_wanted,
        };
        let (outputs, stacked) =
            self.backward_results(node, body, &f, &wanted, &local, &bparams, &fwd_types)?;
        let op = Op::Scan {
            count: f.count.clone(),
            index: format!("{}_grad", f.index),
            carried: float.len() + captures.len(),
            scanned,
            stacked,
            body: Interface {
                input: bin,
                outputs,
            },
        };
        let out = self.add(op, inputs)?;
        // The outputs in order: the initial states', the captures', the scanned
        // inputs' gradients (every capture and wanted input is reachable).
        let targets = float
            .iter()
            .map(|&k| node.inputs[k])
            .chain(captures.iter().copied())
            .chain(xs_wanted.iter().map(|&j| node.inputs[f.carried + j]));
        for (t, g) in targets.zip(out) {
            if self.reach.has(t) {
                self.accumulate(adj, t, g)?;
            }
        }
        Ok(())
    }

    /// The backward body's results: the carried gradients of the float states, the
    /// captures' accumulators, then the wanted scanned inputs' gradients, with how
    /// those are stacked.
    #[allow(clippy::too_many_arguments)]
    fn backward_results(
        &mut self,
        node: &Node,
        body: &SubFunction,
        f: &Fields<'_>,
        wanted: &Wanted<'_>,
        local: &Adj,
        bparams: &[Ref],
        fwd_types: &[ValueType],
    ) -> Result<(Vec<Source>, Vec<ScanAxis>), GradError> {
        let mut outputs = Vec::new();
        for &k in wanted.float {
            let p = Ref::new(body.input, 1 + k);
            outputs.push(Source::Ref(self.gradient_or_zeros(
                local,
                p,
                &node.outputs[k],
            )?));
        }
        for (i, c) in wanted.captures.iter().enumerate() {
            let acc = bparams[1 + wanted.float.len() + i];
            outputs.push(Source::Ref(match local.get(c) {
                Some(g) => self.b.op("add", &[acc, *g]).map_err(GradError::build)?,
                None => acc,
            }));
        }
        let mut stacked = Vec::new();
        for &j in wanted.xs {
            let p = Ref::new(body.input, 1 + f.carried + j);
            outputs.push(Source::Ref(self.gradient_or_zeros(
                local,
                p,
                &fwd_types[1 + f.carried + j],
            )?));
            stacked.push(flipped(f.scanned[j]));
        }
        Ok((outputs, stacked))
    }
}

/// What a backward scan differentiates: the float states (positions), the captured
/// outer values, the scanned inputs (positions).
struct Wanted<'a> {
    float: &'a [usize],
    captures: &'a [Ref],
    xs: &'a [usize],
}
