//! The generator's state and its main loop: inputs, witnesses, outputs, rollback.

use std::collections::HashSet;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng, rngs::StdRng};

use super::GenConfig;
use super::case::random_param;
use crate::index::{Bindings, DimRef, Expr};
use crate::uop::{Builder, NodeId, Operand, Program, UnaryOp, UopError};

/// Everything a rolled-back step must restore.
#[derive(Clone)]
pub(super) struct State {
    pub(super) b: Builder,
    /// Declared inputs, float and i32, in declaration order.
    pub(super) inputs: Vec<NodeId>,
    /// Float tensors usable as operands (inputs and built nodes).
    pub(super) floats: Vec<NodeId>,
    /// Nodes read by some other node.
    pub(super) used: HashSet<NodeId>,
    /// Declared dim names.
    pub(super) names: Vec<String>,
    /// Uops built so far.
    pub(super) built: usize,
}

/// A program under construction: the builder's state, the random source and the
/// witness sizes every kept node is checked against.
pub(super) struct Generator<'a> {
    pub(super) cfg: &'a GenConfig,
    pub(super) rng: StdRng,
    pub(super) st: State,
    pub(super) params: Vec<String>,
    /// Witness sizes: every kept node's shape is non-negative and small under each.
    /// They are drawn like [`random_case`]'s sizes, so its search rarely rejects.
    pub(super) samples: Vec<Bindings>,
    /// Counter for fresh names.
    pub(super) fresh: usize,
}

pub(super) const SAMPLES: usize = 6;

#[derive(Clone, Copy, Debug)]
pub(super) enum Step {
    Reindex,
    Scatter,
    Unary,
    Binary,
    Where,
    Reduce,
    Select,
    Iota,
    Contract,
}

pub(super) const STEPS: &[(Step, u32)] = &[
    (Step::Reindex, 5),
    (Step::Scatter, 2),
    (Step::Unary, 3),
    (Step::Binary, 5),
    (Step::Where, 2),
    (Step::Reduce, 3),
    (Step::Select, 1),
    (Step::Iota, 1),
    (Step::Contract, 2),
];

pub(super) fn dim_ref(source: usize, axis: usize) -> Expr {
    Expr::Dim(DimRef { source, axis }, None)
}

impl<'a> Generator<'a> {
    pub(super) fn new(seed: u64, cfg: &'a GenConfig) -> Self {
        Generator {
            cfg,
            rng: StdRng::seed_from_u64(seed),
            st: State {
                b: Builder::new(cfg.dtype),
                inputs: Vec::new(),
                floats: Vec::new(),
                used: HashSet::new(),
                names: Vec::new(),
                built: 0,
            },
            params: Vec::new(),
            samples: vec![Bindings::default(); SAMPLES],
            fresh: 0,
        }
    }

    pub(super) fn run(&mut self) -> Option<Program> {
        if self.cfg.allow_params {
            for k in 0..self.rng.random_range(0..=2) {
                let name = format!("p{k}");
                self.st.b.param(&name).ok()?;
                for s in &mut self.samples {
                    s.params.insert(name.clone(), random_param(&mut self.rng));
                }
                self.params.push(name);
            }
        }
        for k in 0..self.rng.random_range(1..=self.cfg.max_inputs) {
            self.float_input(&format!("x{k}"));
        }
        if self.st.floats.is_empty() {
            return None;
        }
        let target = self
            .rng
            .random_range(1.max(self.cfg.max_nodes / 2)..=self.cfg.max_nodes.max(1));
        let mut attempts = 0;
        while self.st.built < target && attempts < target * 6 {
            attempts += 1;
            let saved = self.st.clone();
            let step = STEPS
                .choose_weighted(&mut self.rng, |s| s.1)
                .map(|s| s.0)
                .unwrap_or(Step::Unary);
            if self.step(step).is_none() {
                self.st = saved;
            }
        }
        if self.st.built == 0 {
            let x = self.st.floats[0];
            let y = self.st.b.unary(UnaryOp::Neg, x).ok()?;
            self.keep(Ok(y))?;
        }
        let outputs = self.choose_outputs();
        self.st.b.combine(&self.st.inputs, &outputs).ok()
    }

    /// The last built node, and sometimes other unread nodes or intermediates.
    pub(super) fn choose_outputs(&mut self) -> Vec<NodeId> {
        let built: Vec<NodeId> = self
            .st
            .floats
            .iter()
            .copied()
            .filter(|n| !self.st.inputs.contains(n))
            .collect();
        let Some(&last) = built.last() else {
            return vec![];
        };
        let mut outputs = vec![last];
        let sinks: Vec<NodeId> = built
            .iter()
            .copied()
            .filter(|n| *n != last && !self.st.used.contains(n))
            .collect();
        for n in sinks {
            if outputs.len() < self.cfg.max_outputs && self.rng.random_bool(0.5) {
                outputs.push(n);
            }
        }
        if outputs.len() < self.cfg.max_outputs
            && self.rng.random_bool(0.15)
            && let Some(&n) = built.choose(&mut self.rng)
            && !outputs.contains(&n)
        {
            outputs.push(n);
        }
        outputs
    }

    pub(super) fn fresh_name(&mut self) -> String {
        self.fresh += 1;
        format!("N{}", self.fresh)
    }

    /// A dim for a new input: a shared name, a new name, an alias of a name (a new
    /// name that the witnesses keep equal to an old one, so `[=]` may tie them), or
    /// a literal.
    pub(super) fn input_dim(&mut self) -> Expr {
        let r: f64 = self.rng.random();
        if r < 0.35 && !self.st.names.is_empty() {
            let n = self
                .st
                .names
                .choose(&mut self.rng)
                .cloned()
                .unwrap_or_default();
            return Expr::Name(n);
        }
        if r < 0.75 || (self.st.names.is_empty() && r < 0.85) {
            let n = self.fresh_name();
            for s in &mut self.samples {
                s.names.insert(
                    n.clone(),
                    random_dim_nonzero(&mut self.rng, self.cfg.max_dim),
                );
            }
            self.st.names.push(n.clone());
            return Expr::Name(n);
        }
        if r < 0.85 {
            let old = self
                .st
                .names
                .choose(&mut self.rng)
                .cloned()
                .unwrap_or_default();
            let n = self.fresh_name();
            for s in &mut self.samples {
                let v = s.names.get(&old).copied().unwrap_or(1);
                s.names.insert(n.clone(), v);
            }
            self.st.names.push(n.clone());
            return Expr::Name(n);
        }
        Expr::Int(random_dim_nonzero(&mut self.rng, self.cfg.max_dim))
    }

    pub(super) fn float_input(&mut self, name: &str) {
        for _ in 0..8 {
            let saved = self.st.clone();
            let rank = self.rng.random_range(0..=self.cfg.max_rank);
            let dims = (0..rank).map(|_| self.input_dim()).collect();
            let made = self.st.b.input_exprs(name, self.cfg.dtype, dims);
            if let Ok(id) = made
                && self.fits(id)
            {
                self.st.inputs.push(id);
                self.st.floats.push(id);
                return;
            }
            self.st = saved;
        }
    }

    /// True when `id`'s shape is non-negative and within the element limit under every witness.
    pub(super) fn fits(&self, id: NodeId) -> bool {
        let shape = self.st.b.shape(id);
        self.samples.iter().all(|env| {
            let mut total: i64 = 1;
            for d in shape {
                match d.eval(env) {
                    Ok(v) if v >= 0 => total = total.saturating_mul(v),
                    _ => return false,
                }
            }
            total <= self.cfg.max_elements as i64
        })
    }

    /// Accepts a freshly built float node if it fits; `None` makes the step roll back.
    pub(super) fn keep(&mut self, built: Result<NodeId, UopError>) -> Option<NodeId> {
        let id = built.ok()?;
        if !self.fits(id) || self.st.b.shape(id).len() > self.cfg.max_rank + 2 {
            return None;
        }
        for n in self.st.b.node(id).op.inputs() {
            self.st.used.insert(n);
        }
        self.st.floats.push(id);
        self.st.built += 1;
        Some(id)
    }

    /// A float operand, favouring recent nodes so the graph grows deep, not wide.
    pub(super) fn pick(&mut self) -> NodeId {
        let n = self.st.floats.len();
        let back = (self.rng.random::<f64>().powi(2) * n as f64) as usize;
        self.st.floats[n - 1 - back.min(n - 1)]
    }

    pub(super) fn shape(&self, id: NodeId) -> Vec<Expr> {
        self.st.b.shape(id).to_vec()
    }

    pub(super) fn scalar(&mut self) -> Operand {
        if !self.params.is_empty() && self.rng.random_bool(0.25) {
            let p = self
                .params
                .choose(&mut self.rng)
                .cloned()
                .unwrap_or_default();
            return Operand::Param(p);
        }
        Operand::Const(
            *[-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0]
                .choose(&mut self.rng)
                .unwrap_or(&1.0),
        )
    }

    pub(super) fn param_expr(&mut self) -> Option<Expr> {
        let p = self.params.choose(&mut self.rng)?;
        Some(Expr::Param(p.clone()))
    }

    /// A small size for a new axis: a literal, a declared name or a `$param`.
    pub(super) fn new_axis_size(&mut self) -> Expr {
        let r: f64 = self.rng.random();
        if r < 0.2
            && let Some(p) = self.param_expr()
        {
            return p;
        }
        if r < 0.45
            && let Some(n) = self.st.names.choose(&mut self.rng)
        {
            return Expr::Name(n.clone());
        }
        Expr::Int(self.rng.random_range(1..=3))
    }

    pub(super) fn step(&mut self, step: Step) -> Option<NodeId> {
        match step {
            Step::Reindex => {
                let x = self.pick();
                self.reindex(x)
            }
            Step::Scatter => self.scatter(),
            Step::Unary => self.unary(),
            Step::Binary => self.binary(),
            Step::Where => self.where_(),
            Step::Reduce => self.reduce(),
            Step::Select => self.select(),
            Step::Iota => self.iota(),
            Step::Contract => self.contract(),
        }
    }
}

/// Witness sizes avoid 0 so that kept shapes are not trivially empty.
pub(super) fn random_dim_nonzero(rng: &mut StdRng, max_dim: usize) -> i64 {
    if rng.random_bool(0.25) {
        1
    } else {
        rng.random_range(1..=max_dim as i64)
    }
}
