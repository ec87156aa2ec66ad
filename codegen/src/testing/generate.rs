//! Random micro-op programs and random cases (sizes, `$params`, data) to run them on.
//!
//! [`random_program`] grows a random DAG through the checked [`Builder`], so the
//! builder's own validation decides what is well formed; a step the builder rejects,
//! or whose tensors would be negative-sized or too large, is rolled back and another
//! one is tried. Every uop kind appears: reindex with shifts, flips, strides,
//! `/` and `%`, windows and broadcasts; scatters with collisions; reductions;
//! `select` with an i32 index input; `iota`; `where`; comparisons; scalar and
//! `$param` operands; `dA0[=dB0]` size assertions between inputs.
//!
//! [`random_case`] picks concrete sizes consistent with a program (shared dims
//! equal, assertions holding, no negative or huge tensor) and data in a moderate
//! range, with i32 index tensors partly out of range.
//!
//! ```
//! use uop_codegen::{interp, testing::{GenConfig, random_case, random_program}};
//!
//! let program = random_program(7, &GenConfig::default());
//! let case = random_case(&program, 1);
//! let outputs = interp::run(&program, &case.inputs, &case.params)?;
//! assert_eq!(outputs.len(), program.outputs.len());
//! # Ok::<(), interp::RunError>(())
//! ```

use std::collections::{HashMap, HashSet};

use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng, rngs::StdRng};
use thiserror::Error;

use crate::index::{Bindings, DimRef, Expr, IndexOp};
use crate::tensor::Tensor;
use crate::uop::{
    Accum, BinaryOp, Builder, DType, NodeId, Operand, Program, ReduceOp, UnaryOp, UopError,
};

/// Limits and switches for [`random_program`] (and the sizes [`random_case_with`] picks).
#[derive(Clone, Debug, PartialEq)]
pub struct GenConfig {
    /// Roughly how many uops to build after the inputs (at least one is always built).
    pub max_nodes: usize,
    /// Most float inputs declared up front (at least one); `select` adds i32 inputs.
    pub max_inputs: usize,
    /// Largest rank of an input; intermediate tensors may have up to two more axes
    /// (windows, outer products).
    pub max_rank: usize,
    /// Largest concrete size of an input axis, literal or named.
    pub max_dim: usize,
    /// Largest number of elements of any tensor of the program, for the chosen sizes.
    pub max_elements: usize,
    /// Most outputs.
    pub max_outputs: usize,
    /// Whether `$params` may appear (in sizes, indices and as operands).
    pub allow_params: bool,
    /// The float type of the program (f32 or f64).
    pub dtype: DType,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_nodes: 12,
            max_inputs: 3,
            max_rank: 3,
            max_dim: 5,
            max_elements: 256,
            max_outputs: 3,
            allow_params: true,
            dtype: DType::F32,
        }
    }
}

/// Concrete inputs and `$param` values for one run of a program.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// One tensor per declared input, in order.
    pub inputs: Vec<Tensor>,
    /// A value for every declared `$param`.
    pub params: HashMap<String, i64>,
}

/// No sizes consistent with a program were found within the configured limits.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "no sizes found for the program's inputs and params within max_dim {max_dim} and \
     max_elements {max_elements}{detail}"
)]
pub struct CaseError {
    /// The size limit that was searched.
    pub max_dim: usize,
    /// The element limit that was searched.
    pub max_elements: usize,
    /// Why, when it is certain (e.g. an assertion between two different literals).
    pub detail: String,
}

/// A random, always valid program (same seed and config, same program).
///
/// If nothing interesting can be built within the limits, the program falls back to
/// a single `neg` of one input, so callers never see an error.
pub fn random_program(seed: u64, cfg: &GenConfig) -> Program {
    let cfg = sanitized(cfg);
    for retry in 0..8u64 {
        let mut generator =
            Generator::new(seed.wrapping_add(retry.wrapping_mul(0x9e37_79b9)), &cfg);
        if let Some(program) = generator.run()
            // The canonical size search must succeed: it is random_case's fallback.
            && canonical_sizes(&program, &cfg).is_ok()
        {
            return program;
        }
    }
    fallback_program(cfg.dtype)
}

/// Random sizes, params and data for `program` within [`GenConfig::default`]'s limits.
///
/// # Panics
///
/// If no consistent sizes exist within those limits, which never happens for
/// programs from [`random_program`] with the default config; use
/// [`random_case_with`] for other programs or configs.
pub fn random_case(program: &Program, seed: u64) -> Case {
    random_case_with(program, seed, &GenConfig::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Random sizes, params and data for `program`, with named dims at most
/// `cfg.max_dim` and every tensor at most `cfg.max_elements` elements.
///
/// Always succeeds for programs [`random_program`] made with the same config.
pub fn random_case_with(program: &Program, seed: u64, cfg: &GenConfig) -> Result<Case, CaseError> {
    let cfg = sanitized(cfg);
    let mut rng = StdRng::seed_from_u64(seed);
    let sizes = match search_sizes(program, &cfg, &mut rng) {
        Ok(s) => s,
        Err(_) => canonical_sizes(program, &cfg)?,
    };
    Ok(fill_case(program, &sizes, &mut rng))
}

/// The seed of the size search every generated program is checked against.
const CANONICAL_SEED: u64 = 0x5eed;

/// Attempts of one size search before giving up.
const SIZE_ATTEMPTS: usize = 300;

fn sanitized(cfg: &GenConfig) -> GenConfig {
    GenConfig {
        max_inputs: cfg.max_inputs.max(1),
        // Sizes are drawn and compared as i64: keep the limits well inside it.
        max_dim: cfg.max_dim.clamp(1, 1 << 16),
        max_elements: cfg.max_elements.clamp(1, 1 << 40),
        max_outputs: cfg.max_outputs.max(1),
        dtype: if cfg.dtype.is_float() {
            cfg.dtype
        } else {
            DType::F32
        },
        ..cfg.clone()
    }
}

fn fallback_program(dtype: DType) -> Program {
    let mut b = Builder::new(dtype);
    let built = b
        .input("x", dtype, &["N"])
        .and_then(|x| Ok((x, b.unary(UnaryOp::Neg, x)?)))
        .and_then(|(x, y)| b.combine(&[x], &[y]));
    match built {
        Ok(p) => p,
        // A one-input `neg` is valid by construction; reaching this is a builder bug.
        Err(e) => unreachable!("the fallback program is valid: {e}"),
    }
}

// ------------------------------------------------------------------ sizes

/// Concrete input shapes and param values.
#[derive(Clone, Debug)]
struct Sizes {
    shapes: Vec<Vec<usize>>,
    params: HashMap<String, i64>,
}

fn canonical_sizes(program: &Program, cfg: &GenConfig) -> Result<Sizes, CaseError> {
    search_sizes(program, cfg, &mut StdRng::seed_from_u64(CANONICAL_SEED))
}

/// A concrete size for a named dim: 1 often (broadcast-like edge), 0 rarely (empty tensors).
fn random_dim(rng: &mut StdRng, max_dim: usize) -> i64 {
    let r: f64 = rng.random();
    if r < 0.03 {
        0
    } else if r < 0.25 {
        1
    } else {
        rng.random_range(1..=max_dim as i64)
    }
}

fn random_param(rng: &mut StdRng) -> i64 {
    if rng.random_bool(0.1) {
        0
    } else {
        rng.random_range(1..=3)
    }
}

/// Union-find root of a named dim.
fn root(parent: &HashMap<String, String>, name: &str) -> String {
    let mut n = name.to_string();
    while let Some(p) = parent.get(&n) {
        if *p == n {
            break;
        }
        n = p.clone();
    }
    n
}

/// Rejection sampling of sizes: dims tied by `Name == Name` / `Name == literal`
/// assertions are drawn once; everything else is checked by [`Program::bind`] and
/// [`Program::shapes`] themselves.
fn search_sizes(program: &Program, cfg: &GenConfig, rng: &mut StdRng) -> Result<Sizes, CaseError> {
    let fail = |detail: String| CaseError {
        max_dim: cfg.max_dim,
        max_elements: cfg.max_elements,
        detail,
    };
    let mut names: Vec<String> = Vec::new();
    for id in &program.inputs {
        for d in &program.node(*id).shape {
            if let Expr::Name(n) = d
                && !names.contains(n)
            {
                names.push(n.clone());
            }
        }
    }
    let mut parent: HashMap<String, String> =
        names.iter().map(|n| (n.clone(), n.clone())).collect();
    let mut fixed: HashMap<String, i64> = HashMap::new();
    for (l, r) in &program.assertions {
        match (l, r) {
            (Expr::Name(a), Expr::Name(b)) => {
                let (ra, rb) = (root(&parent, a), root(&parent, b));
                if ra != rb {
                    if let Some(v) = fixed.remove(&ra) {
                        fixed.insert(rb.clone(), v);
                    }
                    parent.insert(ra, rb);
                }
            }
            (Expr::Name(a), Expr::Int(v)) | (Expr::Int(v), Expr::Name(a)) => {
                fixed.insert(root(&parent, a), *v);
            }
            (Expr::Int(a), Expr::Int(b)) if a != b => {
                return Err(fail(format!(": the assertion {a} == {b} never holds")));
            }
            _ => {}
        }
    }
    for _ in 0..SIZE_ATTEMPTS {
        let params: HashMap<String, i64> = program
            .params
            .iter()
            .map(|p| (p.clone(), random_param(rng)))
            .collect();
        let mut values: HashMap<String, i64> = HashMap::new();
        for n in &names {
            let r = root(&parent, n);
            let v = match fixed.get(&r) {
                Some(v) => *v,
                None => match values.get(&r) {
                    Some(v) => *v,
                    None => random_dim(rng, cfg.max_dim),
                },
            };
            values.insert(r, v);
            values.insert(n.clone(), v);
        }
        let Some(shapes) = input_shapes(program, &values) else {
            continue;
        };
        let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let Ok(bindings) = program.bind(&refs, &params) else {
            continue;
        };
        let Ok(all) = program.shapes(&bindings) else {
            continue;
        };
        if reduces_an_empty_axis_to_a_position(program, &all) {
            // An error on every backend (argmax of nothing), not a case to compare.
            continue;
        }
        let small = all.iter().all(|s| {
            s.iter()
                .try_fold(1usize, |acc, &d| acc.checked_mul(d))
                .is_some_and(|n| n <= cfg.max_elements)
        });
        if small {
            return Ok(Sizes { shapes, params });
        }
    }
    Err(fail(String::new()))
}

/// True when an `argmax` / `argmin` of `program` reduces an axis that is empty
/// under the node shapes `all`.
fn reduces_an_empty_axis_to_a_position(program: &Program, all: &[Vec<usize>]) -> bool {
    program.nodes.iter().any(|n| match &n.op {
        crate::uop::Uop::Reduce {
            op: ReduceOp::Argmax | ReduceOp::Argmin,
            axes,
            x,
        } => axes.iter().any(|&a| all[x.0][a] == 0),
        _ => false,
    })
}

fn input_shapes(program: &Program, values: &HashMap<String, i64>) -> Option<Vec<Vec<usize>>> {
    program
        .inputs
        .iter()
        .map(|id| {
            program
                .node(*id)
                .shape
                .iter()
                .map(|d| match d {
                    Expr::Int(v) => usize::try_from(*v).ok(),
                    Expr::Name(n) => values.get(n).and_then(|v| usize::try_from(*v).ok()),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Random data for the chosen sizes.
fn fill_case(program: &Program, sizes: &Sizes, rng: &mut StdRng) -> Case {
    // Shapes were checked by the search, so binding cannot fail here; if it somehow
    // did, index tensors just get the generic range.
    let refs: Vec<&[usize]> = sizes.shapes.iter().map(Vec::as_slice).collect();
    let all_shapes = program
        .bind(&refs, &sizes.params)
        .ok()
        .and_then(|b| program.shapes(&b).ok());
    let inputs = program
        .inputs
        .iter()
        .zip(&sizes.shapes)
        .map(|(id, shape)| {
            let dtype = program.node(*id).dtype;
            let n: usize = shape.iter().product();
            let data = if dtype == DType::I32 {
                let extent = gathered_extent(program, *id, all_shapes.as_deref());
                (0..n).map(|_| random_index(rng, extent)).collect()
            } else {
                (0..n).map(|_| dtype.round(random_value(rng))).collect()
            };
            Tensor {
                dtype,
                shape: shape.clone(),
                data,
            }
        })
        .collect();
    Case {
        inputs,
        params: sizes.params.clone(),
    }
}

/// Moderate values; a fifth are small exact numbers so ties (argmax) and equalities
/// (eq, where) actually happen.
fn random_value(rng: &mut StdRng) -> f64 {
    if rng.random_bool(0.2) {
        *[-1.0, 0.0, 0.5, 1.0, 2.0].choose(rng).unwrap_or(&0.0)
    } else {
        rng.random_range(-2.0..2.0)
    }
}

/// The size of the axis an i32 input gathers along (the smallest, if several selects use it).
fn gathered_extent(program: &Program, index: NodeId, shapes: Option<&[Vec<usize>]>) -> i64 {
    let shapes = match shapes {
        Some(s) => s,
        None => return 4,
    };
    program
        .nodes
        .iter()
        .filter_map(|n| match &n.op {
            crate::uop::Uop::Select { axis, x, index: i } if *i == index => {
                Some(shapes[x.0][*axis] as i64)
            }
            _ => None,
        })
        .min()
        .unwrap_or(4)
}

/// Mostly in `[0, extent)`, sometimes just outside on either side.
fn random_index(rng: &mut StdRng, extent: i64) -> f64 {
    if extent > 0 && rng.random_bool(0.8) {
        rng.random_range(0..extent) as f64
    } else {
        *[-1, extent, extent + 1].choose(rng).unwrap_or(&-1) as f64
    }
}

// ------------------------------------------------------------------ generation

/// Everything a rolled-back step must restore.
#[derive(Clone)]
struct State {
    b: Builder,
    /// Declared inputs, float and i32, in declaration order.
    inputs: Vec<NodeId>,
    /// Float tensors usable as operands (inputs and built nodes).
    floats: Vec<NodeId>,
    /// Nodes read by some other node.
    used: HashSet<NodeId>,
    /// Declared dim names.
    names: Vec<String>,
    /// Uops built so far.
    built: usize,
}

struct Generator<'a> {
    cfg: &'a GenConfig,
    rng: StdRng,
    st: State,
    params: Vec<String>,
    /// Witness sizes: every kept node's shape is non-negative and small under each.
    /// They are drawn like [`random_case`]'s sizes, so its search rarely rejects.
    samples: Vec<Bindings>,
    /// Counter for fresh names.
    fresh: usize,
}

const SAMPLES: usize = 6;

#[derive(Clone, Copy, Debug)]
enum Step {
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

const STEPS: &[(Step, u32)] = &[
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

fn dim_ref(source: usize, axis: usize) -> Expr {
    Expr::Dim(DimRef { source, axis }, None)
}

impl<'a> Generator<'a> {
    fn new(seed: u64, cfg: &'a GenConfig) -> Self {
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

    fn run(&mut self) -> Option<Program> {
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
    fn choose_outputs(&mut self) -> Vec<NodeId> {
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

    fn fresh_name(&mut self) -> String {
        self.fresh += 1;
        format!("N{}", self.fresh)
    }

    /// A dim for a new input: a shared name, a new name, an alias of a name (a new
    /// name that the witnesses keep equal to an old one, so `[=]` may tie them), or
    /// a literal.
    fn input_dim(&mut self) -> Expr {
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

    fn float_input(&mut self, name: &str) {
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
    fn fits(&self, id: NodeId) -> bool {
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
    fn keep(&mut self, built: Result<NodeId, UopError>) -> Option<NodeId> {
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
    fn pick(&mut self) -> NodeId {
        let n = self.st.floats.len();
        let back = (self.rng.random::<f64>().powi(2) * n as f64) as usize;
        self.st.floats[n - 1 - back.min(n - 1)]
    }

    fn shape(&self, id: NodeId) -> Vec<Expr> {
        self.st.b.shape(id).to_vec()
    }

    fn scalar(&mut self) -> Operand {
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

    fn param_expr(&mut self) -> Option<Expr> {
        let p = self.params.choose(&mut self.rng)?;
        Some(Expr::Param(p.clone()))
    }

    /// A small size for a new axis: a literal, a declared name or a `$param`.
    fn new_axis_size(&mut self) -> Expr {
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

    fn step(&mut self, step: Step) -> Option<NodeId> {
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

    /// A reindex made of a per-axis transform of each axis of `x`, new broadcast
    /// axes and a permutation.
    fn reindex(&mut self, x: NodeId) -> Option<NodeId> {
        let xs = self.shape(x);
        // Output axes as (size) slots; index expressions use `Index(slot)` until the
        // slots are permuted into their final positions.
        let mut slots: Vec<Expr> = Vec::new();
        let mut index: Vec<Expr> = Vec::new();
        for (k, size_k) in xs.iter().enumerate() {
            let size = if self.rng.random_bool(0.5) {
                dim_ref(0, k)
            } else {
                size_k.clone()
            };
            let s = slots.len();
            let i = Expr::Index(s);
            let off = Expr::Int(self.rng.random_range(-2..=2));
            let c = Expr::Int(self.rng.random_range(1..=3));
            match self.rng.random_range(0..10) {
                // identity
                0 | 1 => {
                    slots.push(size);
                    index.push(i);
                }
                // shift / crop / pad: reads before the start or past the end give the fill
                2 => {
                    slots.push(size + Expr::Int(self.rng.random_range(-1..=2)));
                    index.push(i + off);
                }
                // flip
                3 => {
                    slots.push(size.clone());
                    index.push(size - Expr::Int(1) - i);
                }
                // stride 2
                4 => {
                    slots.push(Expr::bin(IndexOp::Div, size + Expr::Int(1), Expr::Int(2)));
                    index.push(Expr::Int(2) * i + Expr::Int(self.rng.random_range(0..=1)));
                }
                // upsample
                5 => {
                    slots.push(Expr::Int(2) * size);
                    index.push(Expr::bin(IndexOp::Div, i, Expr::Int(2)));
                }
                // wrap around
                6 => {
                    slots.push(size + Expr::Int(self.rng.random_range(0..=2)));
                    index.push(Expr::bin(IndexOp::Mod, i, c));
                }
                // shift by a param, clamped so the size stays non-negative
                7 => {
                    let p = self.param_expr().unwrap_or(Expr::Int(1));
                    slots.push(Expr::bin(IndexOp::Max, size - p.clone(), Expr::Int(0)));
                    index.push(i + p);
                }
                // a window (convolution style): two output axes read one input axis
                8 => {
                    let w = self.param_expr().unwrap_or(c);
                    slots.push(size - w.clone() + Expr::Int(1));
                    slots.push(w);
                    index.push(i + Expr::Index(s + 1));
                }
                // drop the axis: read one fixed position
                _ => {
                    let at = if self.rng.random_bool(0.3) {
                        self.param_expr().unwrap_or(Expr::Int(0))
                    } else {
                        Expr::Int(self.rng.random_range(-1..=1))
                    };
                    index.push(at);
                }
            }
        }
        for _ in 0..self.rng.random_range(0..=2) {
            if self.rng.random_bool(0.4) {
                let size = self.new_axis_size();
                slots.push(size);
            }
        }
        let mut order: Vec<usize> = (0..slots.len()).collect();
        if self.rng.random_bool(0.4) {
            order.shuffle(&mut self.rng);
        }
        let mut position = vec![0; slots.len()];
        for (pos, &slot) in order.iter().enumerate() {
            position[slot] = pos;
        }
        let shape = order.iter().map(|&s| slots[s].clone()).collect();
        let index = index
            .iter()
            .map(|e| {
                e.map_leaves(&mut |leaf| match leaf {
                    Expr::Index(s) => Some(Expr::Index(position[*s])),
                    _ => None,
                })
            })
            .collect();
        let fill = *[0.0, 0.0, 1.0, -1.5].choose(&mut self.rng).unwrap_or(&0.0);
        let made = self.st.b.reindex_exprs(x, shape, &[x], index, fill);
        self.keep(made)
    }

    /// Reindexes `y` to exactly `target`: each axis of `y` reads an output axis
    /// (the same position when it exists) or a fixed position.
    fn conform(&mut self, y: NodeId, target: &[Expr]) -> Option<NodeId> {
        if self.st.b.shape(y) == target {
            return Some(y);
        }
        let ry = self.st.b.shape(y).len();
        let index = (0..ry)
            .map(|k| {
                if target.is_empty() {
                    Expr::Int(0)
                } else if k < target.len() && self.rng.random_bool(0.8) {
                    let i = Expr::Index(k);
                    if self.rng.random_bool(0.2) {
                        i + Expr::Int(self.rng.random_range(-1..=1))
                    } else {
                        i
                    }
                } else if self.rng.random_bool(0.5) {
                    Expr::Index(self.rng.random_range(0..target.len()))
                } else {
                    Expr::Int(0)
                }
            })
            .collect();
        let made = self.st.b.reindex_exprs(y, target.to_vec(), &[], index, 0.0);
        self.keep(made)
    }

    fn scatter(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let xs = self.shape(x);
        let mut shape = Vec::new();
        let mut index = Vec::new();
        for (k, size) in xs.iter().enumerate() {
            let i = Expr::Index(k);
            match self.rng.random_range(0..6) {
                // keep, possibly shifted: targets past either end are dropped
                0 | 1 => {
                    shape.push(size.clone());
                    index.push(i + Expr::Int(self.rng.random_range(-1..=1)));
                }
                // collapse the axis: everything along it collides
                2 => {}
                // pairs collide
                3 => {
                    shape.push(Expr::bin(
                        IndexOp::Div,
                        size.clone() + Expr::Int(1),
                        Expr::Int(2),
                    ));
                    index.push(Expr::bin(IndexOp::Div, i, Expr::Int(2)));
                }
                // wrap into a few cells
                4 => {
                    let c = self.rng.random_range(1..=3);
                    shape.push(Expr::Int(c));
                    index.push(Expr::bin(IndexOp::Mod, i, Expr::Int(c)));
                }
                // flip
                _ => {
                    shape.push(dim_ref(0, k));
                    index.push(dim_ref(0, k) - Expr::Int(1) - i);
                }
            }
        }
        if self.rng.random_bool(0.25) {
            // A new axis hit at one position (sometimes outside it: all dropped).
            let c = self.rng.random_range(1..=3);
            shape.push(Expr::Int(c));
            index.push(Expr::Int(self.rng.random_range(0..=c)));
        }
        let mut order: Vec<usize> = (0..shape.len()).collect();
        if self.rng.random_bool(0.3) {
            order.shuffle(&mut self.rng);
        }
        let shape = order.iter().map(|&k| shape[k].clone()).collect();
        let index = order.iter().map(|&k| index[k].clone()).collect();
        let op = *[Accum::Add, Accum::Add, Accum::Max, Accum::Min]
            .choose(&mut self.rng)
            .unwrap_or(&Accum::Add);
        let made = self.st.b.reindex_reduce_exprs(x, shape, &[x], index, op);
        let y = self.keep(made)?;
        if op != Accum::Add && self.rng.random_bool(0.5) {
            // Untouched cells hold ±inf; clamp so later arithmetic stays finite.
            let lo = self.st.b.binary(BinaryOp::Maximum, y, -4.0);
            let lo = self.keep(lo)?;
            let hi = self.st.b.binary(BinaryOp::Minimum, lo, 4.0);
            return self.keep(hi);
        }
        Some(y)
    }

    fn unary(&mut self) -> Option<NodeId> {
        let mut x = self.pick();
        let op = *UnaryOp::ALL.choose(&mut self.rng)?;
        if matches!(op, UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt) && self.rng.random_bool(0.6)
        {
            // Mostly keep the argument in the domain; sometimes let NaN through.
            let a = self.st.b.unary(UnaryOp::Abs, x);
            x = self.keep(a)?;
        }
        let made = self.st.b.unary(op, x);
        self.keep(made)
    }

    fn binary(&mut self) -> Option<NodeId> {
        let op = *BinaryOp::ALL.choose(&mut self.rng)?;
        let x = self.pick();
        let (a, b): (Operand, Operand) = match self.rng.random_range(0..10) {
            0..=6 => {
                let y = self.pick();
                let xs = self.shape(x);
                let y = self.conform(y, &xs)?;
                (x.into(), y.into())
            }
            7 | 8 => (x.into(), self.scalar()),
            _ => (self.scalar(), x.into()),
        };
        let made = self.st.b.binary(op, a, b);
        self.keep(made)
    }

    fn where_(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let xs = self.shape(x);
        let cond = if self.rng.random_bool(0.7) {
            let cmp =
                *[BinaryOp::Gt, BinaryOp::Lt, BinaryOp::Ge, BinaryOp::Eq].choose(&mut self.rng)?;
            let rhs = self.scalar();
            let c = self.st.b.binary(cmp, x, rhs);
            self.keep(c)?
        } else {
            x
        };
        let branch = |g: &mut Self| -> Option<Operand> {
            if g.rng.random_bool(0.7) {
                let y = g.pick();
                Some(g.conform(y, &xs)?.into())
            } else {
                Some(g.scalar())
            }
        };
        let a = branch(self)?;
        let b = branch(self)?;
        let made = self.st.b.where_(cond, a, b);
        self.keep(made)
    }

    fn reduce(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let rank = self.st.b.shape(x).len();
        let op = *ReduceOp::ALL.choose(&mut self.rng)?;
        let mut axes: Vec<usize> = match self.rng.random_range(0..6) {
            0 => (0..rank).collect(),
            1 => vec![],
            _ => (0..rank).filter(|_| self.rng.random_bool(0.5)).collect(),
        };
        axes.shuffle(&mut self.rng);
        let made = self.st.b.reduce(op, &axes, x);
        self.keep(made)
    }

    /// `select` with a new i32 index input whose dims are `x`'s where they are plain.
    fn select(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let xs = self.shape(x);
        if xs.is_empty() {
            return None;
        }
        let axis = self.rng.random_range(0..xs.len());
        let mut dims = Vec::new();
        for (k, d) in xs.iter().enumerate() {
            let dim = if k == axis {
                if self.rng.random_bool(0.5) {
                    Expr::Int(self.rng.random_range(1..=3))
                } else {
                    self.input_dim()
                }
            } else if matches!(d, Expr::Name(_) | Expr::Int(_)) {
                d.clone()
            } else {
                self.input_dim()
            };
            dims.push(dim);
        }
        let name = format!("idx{}", self.st.inputs.len());
        let idx = self.st.b.input_exprs(&name, DType::I32, dims).ok()?;
        if !self.fits(idx) {
            return None;
        }
        self.st.inputs.push(idx);
        let mut target = self.shape(idx);
        target[axis] = xs[axis].clone();
        let x = self.conform(x, &target)?;
        let made = self.st.b.select(axis, x, idx);
        self.keep(made)
    }

    fn iota(&mut self) -> Option<NodeId> {
        let (shape, sources) = if self.rng.random_bool(0.7) {
            let x = self.pick();
            let rank = self.st.b.shape(x).len();
            (
                (0..rank).map(|k| dim_ref(0, k)).collect::<Vec<_>>(),
                vec![x],
            )
        } else {
            let rank = self.rng.random_range(1..=self.cfg.max_rank.max(1));
            ((0..rank).map(|_| self.new_axis_size()).collect(), vec![])
        };
        if shape.is_empty() {
            return None;
        }
        let axis = self.rng.random_range(0..shape.len());
        let made = self.st.b.iota_exprs(shape, &sources, axis);
        let i = self.keep(made)?;
        if self.rng.random_bool(0.5) {
            // A mask: compare the position with a value, as one-hot encodings do.
            let x = self.pick();
            let is = self.shape(i);
            let x = self.conform(x, &is)?;
            let m = self.st.b.binary(BinaryOp::Eq, i, x);
            return self.keep(m);
        }
        Some(i)
    }

    /// An outer product of two tensors over the axes of both (NNC's matmul form,
    /// `dA`/`dB` references), optionally contracting one pair of axes of equal size
    /// (`dAk[=dBm]`), then a reduction.
    fn contract(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let y = self.pick();
        let (xs, ys) = (self.shape(x), self.shape(y));
        let pair = self.contractible_pair(&xs, &ys);
        let mut shape: Vec<Expr> = (0..xs.len()).map(|k| dim_ref(0, k)).collect();
        let mut y_index = Vec::new();
        for m in 0..ys.len() {
            match pair {
                Some((k, pm)) if pm == m => {
                    shape[k] = Expr::Dim(
                        DimRef { source: 0, axis: k },
                        Some(DimRef { source: 1, axis: m }),
                    );
                    y_index.push(Expr::Index(k));
                }
                _ => {
                    y_index.push(Expr::Index(shape.len()));
                    shape.push(dim_ref(1, m));
                }
            }
        }
        let x_index = (0..xs.len()).map(Expr::Index).collect();
        let made = self
            .st
            .b
            .reindex_exprs(x, shape.clone(), &[x, y], x_index, 0.0);
        let xx = self.keep(made)?;
        let made = self
            .st
            .b
            .reindex_exprs(y, shape.clone(), &[x, y], y_index, 0.0);
        let yy = self.keep(made)?;
        let op =
            *[BinaryOp::Mul, BinaryOp::Mul, BinaryOp::Add, BinaryOp::Sub].choose(&mut self.rng)?;
        let made = self.st.b.binary(op, xx, yy);
        let prod = self.keep(made)?;
        let axes: Vec<usize> = match pair {
            Some((k, _)) => vec![k],
            None => (0..shape.len())
                .filter(|_| self.rng.random_bool(0.3))
                .collect(),
        };
        let made = self.st.b.reduce(ReduceOp::Sum, &axes, prod);
        self.keep(made)
    }

    /// Axes `(k, m)` of two shapes that are plain dims equal under every witness,
    /// so a `[=]` assertion between them can hold.
    fn contractible_pair(&mut self, xs: &[Expr], ys: &[Expr]) -> Option<(usize, usize)> {
        let plain = |e: &Expr| matches!(e, Expr::Name(_) | Expr::Int(_));
        let mut pairs = Vec::new();
        for (k, a) in xs.iter().enumerate() {
            for (m, b) in ys.iter().enumerate() {
                let equal = plain(a)
                    && plain(b)
                    && self
                        .samples
                        .iter()
                        .all(|s| matches!((a.eval(s), b.eval(s)), (Ok(u), Ok(v)) if u == v));
                if equal {
                    pairs.push((k, m));
                }
            }
        }
        pairs.choose(&mut self.rng).copied()
    }
}

/// Witness sizes avoid 0 so that kept shapes are not trivially empty.
fn random_dim_nonzero(rng: &mut StdRng, max_dim: usize) -> i64 {
    if rng.random_bool(0.25) {
        1
    } else {
        rng.random_range(1..=max_dim as i64)
    }
}
