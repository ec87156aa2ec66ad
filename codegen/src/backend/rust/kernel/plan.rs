//! The kernel's plan, made from the loop program before anything is printed: how
//! each nest is realized ([`Realize`], the one choice [`Gen::nest_over`] and
//! [`Gen::nest_in`] act on), which target facts ([`Fact`]) the per-CPU loops use,
//! and which tiles pack which loads into which panels. The printing phases read
//! it; none of them records what it printed for the kernel's items to learn from.

use super::*;

/// How a nest `loops` (outermost first) is realized in a scheduled kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Realize {
    /// A register tile over `[R, C, K…]` (a `[tile]` mark on `C`), its reduction
    /// blocked by `KC` when `block_reduction`.
    Tile { block_reduction: bool },
    /// A split reduction (`[split]` on the innermost loop).
    Split,
    /// A cache-blocked element-wise nest `[R, C]` (`[blocked]` on `C`); `transpose`
    /// when it is a transposed copy the runtime's helper makes.
    Blocked { transpose: bool },
    /// The first loop written out, its inner loops realized in turn.
    Plain,
}

impl Plan {
    /// Records a tile's use of the panel `name`, the first use adding it.
    fn use_panel(&mut self, name: Ident, rows: bool, along: &Loop, reduce: &[Loop], loads: usize) {
        let used = PanelUse {
            along: along.clone(),
            reduce: reduce.to_vec(),
            loads,
        };
        match self.panels.iter_mut().find(|q| q.name == name) {
            Some(panel) => panel.uses.push(used),
            None => self.panels.push(Panel {
                name,
                rows,
                uses: vec![used],
            }),
        }
    }
}

/// The plan of one kernel ([`Gen::plan`]).
#[derive(Default)]
pub(super) struct Plan {
    /// The target constants (`FMA`, `LANES`, `MR`, …) the per-CPU loops use.
    pub facts: BTreeSet<Fact>,
    /// The tiles' packed panels, in the order the loops run them (one per column
    /// loop id, and one per row loop id of the tiles that pack rows).
    pub panels: Vec<Panel>,
    /// The inner parallel loops the threads share out, each by its place in the
    /// program (block, depth), as loop ids repeat across blocks: [`Gen::range`]
    /// gives this thread's part of it, `i{n}_lo..i{n}_hi`.
    pub shared: Vec<(usize, usize)>,
}

/// A packed panel, `i{c}_panel` along a tile's column loop `c`, or a row panel
/// (`rows`), `i{r}_row_panel` along its row loop `r`. Loop ids repeat across
/// blocks, so tiles of several blocks may share one; it is sized for the largest
/// of their [`PanelUse`]s.
pub(super) struct Panel {
    pub name: Ident,
    pub rows: bool,
    pub uses: Vec<PanelUse>,
}

/// One tile's use of a [`Panel`]: for every column tile of `along`, `loads` runs of
/// `NR` cells per reduction iteration, for at most `KC` iterations of the outermost
/// reduction loop (`reduce`: the reduction loops, outermost first, whose trip
/// counts size it); of a row panel, the same for the row tiles of one block of at
/// most `MC` rows of `along`, `MR` cells each.
pub(super) struct PanelUse {
    pub along: Loop,
    pub reduce: Vec<Loop>,
    pub loads: usize,
}

impl Gen<'_> {
    /// How `loops` is realized: the schedule marks, honored in scheduled kernels.
    pub(super) fn realize(&self, loops: &[Loop]) -> Realize {
        let Some((l, inner)) = loops.split_first() else {
            return Realize::Plain;
        };
        if !self.scheduled {
            return Realize::Plain;
        }
        if let Some(tile) = inner.first().and_then(|c| c.schedule.tile) {
            return Realize::Tile {
                block_reduction: tile.block_reduction,
            };
        }
        if inner.is_empty() && l.schedule.split {
            return Realize::Split;
        }
        if let [c] = inner
            && c.schedule.blocked
        {
            return Realize::Blocked {
                transpose: self.transpose_copy(l, c).is_some(),
            };
        }
        Realize::Plain
    }

    /// The depth of a group's parallel loop, when the kernel threads it: the
    /// outermost loop of any group, an inner loop of a lone block only.
    pub(super) fn parallel_depth(&self, blocks: &[Block]) -> Option<usize> {
        blocks[0]
            .loops
            .iter()
            .position(|l| l.schedule.parallel)
            .filter(|&d| self.threaded && (d == 0 || blocks.len() == 1))
    }

    /// Whether `l` is an inner loop the threads share out ([`Plan::shared`]).
    pub(super) fn is_shared(&self, l: &Loop) -> bool {
        self.plan
            .shared
            .iter()
            .any(|&(b, d)| std::ptr::eq(l, &self.p.blocks[b].loops[d]))
    }

    /// Whether the innermost loop `l` runs in chunks of `LANES` ([`Gen::chunked`]):
    /// marked [`chunked`](crate::loops::Schedule::chunked) (verified), in an f32
    /// kernel (the limit of this realization: `vmath` chunks of f32 lanes).
    pub(super) fn chunks(&self, l: &Loop, inner: &[Loop]) -> bool {
        self.scheduled && self.is32 && inner.is_empty() && l.schedule.chunked
    }

    /// The store whose cache lines the innermost loop `l` is split at (two runs,
    /// [`Gen::nest_in`]; a chunked loop's first chunk, [`Gen::chunked`]): marked
    /// [`line split`](crate::loops::Schedule::line_split) (verified: the mark
    /// guarantees the [`line_store`](crate::loops::analysis::line_store)), in a
    /// scheduled kernel.
    pub(super) fn line_split(&self, l: &Loop, inner: &[Loop]) -> Option<Access> {
        let marked = self.scheduled && inner.is_empty() && l.schedule.line_split;
        marked.then(|| crate::loops::analysis::line_store(l))?
    }

    /// The load a split loop run over a range starts its whole chunks at a cache
    /// line of ([`Gen::realigned_chunks`]): the one its mark names
    /// ([`aligned`](crate::loops::Schedule::aligned), verified
    /// [`alignable`](crate::loops::analysis::alignable)).
    pub(super) fn aligned_load(&self, l: &Loop) -> Option<Access> {
        crate::loops::analysis::aligned_load(l)
    }

    /// The kernel's plan: every nest's realization in the order the kernel runs
    /// them, with the facts and panels they need, and `FMA` when a statement is
    /// contracted or calls a math function.
    pub(super) fn plan(&self) -> Plan {
        let mut plan = Plan::default();
        if !self.scheduled {
            return plan;
        }
        let mut first = 0;
        for group in self.groups() {
            if let [b] = group
                && !self.folds_in_pieces(b)
                && let Some(d) = self.parallel_depth(group).filter(|&d| d > 0)
            {
                plan.shared.push((first, d));
            }
            first += group.len();
            match group {
                [b] => self.plan_over(&b.loops, &mut plan),
                // Joined blocks share their outermost loop; each nests the rest.
                blocks => {
                    for b in blocks {
                        self.plan_over(&b.loops[1..], &mut plan);
                    }
                }
            }
        }
        let mut fma = false;
        for b in &self.p.blocks {
            let stmts = b.loops.iter().flat_map(|l| &l.stmts).chain(&b.stmts);
            for s in stmts {
                fma |= self.stmt_fuses(s);
            }
        }
        if fma {
            plan.facts.insert(Fact::Fma);
        }
        plan
    }

    /// Plans `loops` as [`Gen::nest_over`] realizes them.
    fn plan_over(&self, loops: &[Loop], plan: &mut Plan) {
        if loops.is_empty() {
            return;
        }
        match self.realize(loops) {
            Realize::Tile { block_reduction } => {
                plan.facts.extend([Fact::Mr, Fact::Nr]);
                if block_reduction {
                    plan.facts.insert(Fact::Kc);
                    if self.plan_panel(loops, false, plan) {
                        plan.facts.insert(Fact::Mc);
                    }
                    if self.plan_panel(loops, true, plan) {
                        plan.facts.insert(Fact::Pr);
                    }
                }
                // The plain nest small ranges run.
                self.plan_in(loops, plan);
            }
            Realize::Split => {
                plan.facts.insert(Fact::Lanes);
            }
            Realize::Blocked { transpose } => {
                plan.facts
                    .insert(if transpose { Fact::Vec } else { Fact::Tb });
            }
            Realize::Plain => self.plan_in(loops, plan),
        }
    }

    /// Plans `loops` as [`Gen::nest_in`] realizes them.
    fn plan_in(&self, loops: &[Loop], plan: &mut Plan) {
        let Some((l, inner)) = loops.split_first() else {
            return;
        };
        if self.chunks(l, inner) {
            plan.facts.insert(Fact::Lanes);
        } else {
            self.plan_over(inner, plan);
        }
    }

    /// A panel of a tile `[R, C, K…]` whose reduction is blocked, when it packs
    /// some load: its column panel ([`Gen::packable`]), or with `rows` its row
    /// panel ([`Gen::row_packable`], only where the columns pack). Tiles of loops
    /// with the same id share a panel ([`Plan::use_panel`]). Whether the tile packs.
    fn plan_panel(&self, loops: &[Loop], rows: bool, plan: &mut Plan) -> bool {
        let [rl, cl, reduce @ ..] = loops else {
            return false;
        };
        let (loads, along, name) = if rows {
            let loads = self.row_packable(loops).len();
            (loads, rl, format!("i{}_row_panel", rl.id.0))
        } else {
            (
                self.packable(loops).len(),
                cl,
                format!("i{}_panel", cl.id.0),
            )
        };
        if loads > 0 {
            plan.use_panel(ident(&name), rows, along, reduce, loads);
        }
        loads > 0
    }

    /// Whether statement `s` is printed with a fused multiply-add (`FMA`): an
    /// accumulation of a product into a carried variable, or a value that does.
    fn stmt_fuses(&self, s: &Stmt) -> bool {
        match s {
            Stmt::Update {
                op: Accum::Add,
                value: Value::Binary(BinaryOp::Mul, ..),
                ..
            } => true,
            Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
                self.access_fuses(access) || self.value_fuses(value)
            }
            Stmt::Update { value, .. } => self.value_fuses(value),
        }
    }

    fn access_fuses(&self, a: &Access) -> bool {
        a.index.iter().any(|s| match s {
            Subscript::Value(v) => self.value_fuses(v),
            Subscript::Expr(_) => false,
        })
    }

    /// Whether value `v` is printed with `FMA`: a contraction ([`contraction`]) or
    /// a call of a math function that takes it ([`math_call`]), as
    /// [`Gen::value`] prints them.
    fn value_fuses(&self, v: &Value) -> bool {
        match v {
            Value::Load { access, .. } => self.access_fuses(access),
            Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => false,
            Value::Unary(op, x) => math_call(*op, self.is32).is_some() || self.value_fuses(x),
            Value::Binary(op, a, b) => {
                contraction(*op, a, b).is_some() || self.value_fuses(a) || self.value_fuses(b)
            }
            // A constant condition chooses at generation time.
            Value::Where(c, a, b) => match **c {
                Value::Const(c) => self.value_fuses(if c != 0.0 { a } else { b }),
                _ => self.value_fuses(c) || self.value_fuses(a) || self.value_fuses(b),
            },
        }
    }
}

/// `a op b` as `p * q + c` when `op` adds or subtracts a product of non-literals
/// (`c - p * q` is `(-p) * q + c`): the multiply-adds scheduled kernels contract.
pub(super) fn contraction(op: BinaryOp, a: &Value, b: &Value) -> Option<(Value, Value, Value)> {
    let product = |v: &Value| match v {
        Value::Binary(BinaryOp::Mul, p, q)
            if !(matches!(**p, Value::Const(_)) && matches!(**q, Value::Const(_))) =>
        {
            Some((p.as_ref().clone(), q.as_ref().clone()))
        }
        _ => None,
    };
    let neg = |v: Value| Value::Unary(UnaryOp::Neg, Box::new(v));
    match (op, product(a), product(b)) {
        (BinaryOp::Add, Some((p, q)), _) => Some((p, q, b.clone())),
        (BinaryOp::Add, None, Some((p, q))) => Some((p, q, a.clone())),
        (BinaryOp::Sub, Some((p, q)), _) => Some((p, q, neg(b.clone()))),
        (BinaryOp::Sub, None, Some((p, q))) => Some((neg(p), q, a.clone())),
        _ => None,
    }
}

/// The runtime's `vmath` function a unary op calls in an f32 kernel (`exp_f32`).
pub(super) fn math_call(op: UnaryOp, is32: bool) -> Option<&'static str> {
    if !is32 {
        return None;
    }
    Some(match op {
        UnaryOp::Exp => "exp_f32",
        UnaryOp::Log => "ln_f32",
        UnaryOp::Tanh => "tanh_f32",
        UnaryOp::Sigmoid => "sigmoid_f32",
        UnaryOp::Sin => "sin_f32",
        UnaryOp::Cos => "cos_f32",
        UnaryOp::Erf => "erf_f32",
        _ => return None,
    })
}
