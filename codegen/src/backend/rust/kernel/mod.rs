//! One kernel: the optimized loop program of a uop program as three public items —
//! a shapes struct, a function computing it from the input dims, and the kernel
//! function — plus a private function checking the sizes it computes.
//!
//! Names: loop indices are `i{id}` and carried variables `v{id}`, exactly as
//! `uop print --stage loops` shows them, so the generated code can be read next to
//! the printed IR; tensors, dims and `$params` keep their program names in
//! snake_case.
//!
//! The emitter is split by phase, one file each:
//!
//! | file | what it emits |
//! |---|---|
//! | `plan` | the plan, made before printing: each nest's realization, the target facts the loops use, the tiles' panels, the loops threads share out |
//! | `syntax` | identifiers, literals, precedence |
//! | `expr` | index and float expressions, math calls, contractions |
//! | `access` | subscripts, offsets, loads and stores |
//! | `nest` | statements, carried variables, ranges, plain loop nests |
//! | `rows` | joined blocks and temporaries held one row at a time |
//! | `threads` | blocks folded in pieces, parallel work |
//! | `split` | split reductions, chunked and realigned element-wise loops |
//! | `tile` | register tiles and packed panels |
//! | `block` | cache-blocked nests and transposed copies |
//! | `items` | the shapes struct, sizes function and kernel function |
//! | `dispatch` | the per-CPU copies of the loops ([`Target::X86_64`]) and the choice |
//! | `oracle` | with `RustOptions::oracle`, the program's text and a call on data of any shape, for the oracle |

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{ToTokens, quote};

use crate::index::{Expr, IndexOp, list};
use crate::loops::{
    Access, Block, Carried, Loop, LoopProgram, Stmt, Subscript, TensorDecl, TensorId, TensorKind,
    Value, VarId,
};
use crate::uop::{Accum, BinaryOp, DType, UnaryOp};

use crate::loops::analysis::value_mentions;

use super::names::{Scope, camel, kernel_items};
use super::runtime::{Helper, RESERVED, path};
use super::{Checks, EmitError};
use crate::compile::CompileOptions;
use crate::signature::Signature;
use crate::target::Target;

mod access;
mod block;
mod dispatch;
mod expr;
mod items;
mod nest;
mod oracle;
mod plan;
mod rows;
mod split;
mod syntax;
mod threads;
mod tile;

use self::dispatch::Fact;
use self::plan::{PanelUse, Plan, Realize, contraction, math_call};
use self::{access::*, expr::*, items::*, nest::*, syntax::*, threads::*};

/// What the emitter needs of one kernel.
#[derive(Clone, Debug)]
pub(super) struct KernelSource {
    /// The kernel's function name.
    pub name: String,
    /// The source program in the `.uop` text format (for the doc comment).
    pub text: String,
    /// Doc paragraphs shown before the source program (e.g. how a gradient
    /// kernel's arguments relate to its forward kernel); may be empty.
    pub note: String,
    /// The optimized loop program.
    pub loops: LoopProgram,
    /// Its interface (derived once, when the kernel is added).
    pub signature: Signature,
}

/// Binding strength of a Rust expression (higher binds tighter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    /// `if` / closures / ranges: always parenthesized as an operand.
    Lowest,
    Compare,
    Sum,
    Product,
    Cast,
    Prefix,
    /// Method calls, indexing, calls, paths, literals, blocks.
    Postfix,
}

/// The type of an emitted scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    /// The program's float type.
    Float,
    /// An `i32` element, not converted yet (exact as an index).
    Int,
    /// A float literal without suffix, whose type comes from its context.
    Literal(f64),
}

/// An emitted scalar expression.
struct Out {
    ts: TokenStream,
    prec: Prec,
    ty: Ty,
}

/// A carried variable held as partial results (split lanes, tile cells): how to
/// declare the array, move a cell into the variable and back, and name the cell.
struct Partials {
    declare: TokenStream,
    load: TokenStream,
    save: TokenStream,
    var: Ident,
    cell: TokenStream,
}

/// What the statements being printed read differently from the loop IR: inside a
/// tile's reduction ([`Gen::tile_reduction`]), the loads its plan packs, each read
/// from its panel cell. Passed down explicitly; the default reads everything in
/// place.
#[derive(Default)]
struct Cx {
    /// The loads packed into the column panel, each with the read of its cell
    /// within one reduction iteration's run of cells.
    packed: Vec<(Value, TokenStream)>,
    /// The loads packed into the row panel, each with its read: its cell where the
    /// copy packs rows (`PR`), else in place.
    rows: Vec<(Value, TokenStream)>,
}

impl Cx {
    /// The read of `v`'s panel cell and its precedence, when `v` is a packed load.
    fn packed_cell(&self, v: &Value) -> Option<(TokenStream, Prec)> {
        let find = |cells: &[(Value, TokenStream)]| {
            cells
                .iter()
                .find(|(load, _)| load == v)
                .map(|(_, cell)| cell.clone())
        };
        find(&self.packed)
            .map(|cell| (cell, Prec::Prefix))
            .or_else(|| find(&self.rows).map(|cell| (cell, Prec::Lowest)))
    }

    /// The loads read from the column panel only, whatever the copy: the indices
    /// only they use are not needed in the reduction.
    fn loads(&self) -> Vec<Value> {
        self.packed.iter().map(|(v, _)| v.clone()).collect()
    }
}

/// The per-kernel emitter.
struct Gen<'a> {
    name: &'a str,
    p: &'a LoopProgram,
    /// The kernel's interface, which the entry checks and the items' signatures
    /// are written from.
    sig: Signature,
    checks: Checks,
    is32: bool,
    float: Ident,
    tensors: Vec<Ident>,
    dims: HashMap<String, Ident>,
    params: HashMap<String, Ident>,
    /// Whether the block being generated has an unchecked access (and so needs
    /// an `unsafe` block around it).
    unsafe_used: RefCell<bool>,
    /// Dims (`N`) and params (`$kh`) the function being generated mentions.
    used: RefCell<BTreeSet<String>>,
    /// Entry-evaluated size expressions that are not a literal, dim or param, in order.
    sizes: Vec<Expr>,
    /// Whether schedule annotations are honored (tiles, split reductions); only
    /// with [`Checks::Proven`], whose loops run in a per-CPU function.
    scheduled: bool,
    /// What the loops need, planned before anything is printed ([`Gen::plan`]):
    /// the target constants they use and the tiles' packed panels, which the
    /// kernel allocates and passes.
    plan: Plan,
    /// Some block has a parallel loop or one folded in pieces: the loops run on
    /// every thread of a [`Part`](uop_runtime::Part) at once, serial blocks on the
    /// first thread only.
    threaded: bool,
    /// The blocks folded in pieces, planned before emission ([`Gen::pieces_plan`]):
    /// what the kernel allocates and passes.
    pieces: Vec<Pieces>,
}

/// A block whose outermost loop is folded in pieces ([`Schedule::pieces`](crate::loops::Schedule::pieces)):
/// its partial results live in one buffer per carried variable, `v{var}_pieces`,
/// which the kernel allocates and the threads share.
struct Pieces {
    /// The outermost loop.
    outer: Loop,
    /// The inner loops (for the piece length).
    inner: Vec<Loop>,
    /// The block's carried variables.
    vars: Vec<Carried>,
}

/// Emits one kernel's items.
pub(super) fn emit(k: &KernelSource, options: &CompileOptions) -> Result<TokenStream, EmitError> {
    let (g, mut scope) = planned(k, options)?;
    g.items(k, &mut scope)
}

/// The oracle's entry to the kernel: `{name}_program` and `{name}_dyn`
/// ([`oracle`](self::oracle)).
pub(super) fn oracle(k: &KernelSource, options: &CompileOptions) -> Result<TokenStream, EmitError> {
    let (g, _) = planned(k, options)?;
    Ok(g.oracle_items(k))
}

/// Whether the kernel's loops take memory of their own, so that it has a
/// `{name}_with_scratch` ([`Gen::takes_scratch`]).
pub(super) fn takes_scratch(k: &KernelSource, options: &CompileOptions) -> Result<bool, EmitError> {
    Ok(planned(k, options)?.0.takes_scratch())
}

/// The emitter of one kernel with its plan made, and the scope of its names.
fn planned<'a>(
    k: &'a KernelSource,
    options: &CompileOptions,
) -> Result<(Gen<'a>, Scope), EmitError> {
    let (checks, schedule) = (options.checks, options.schedule);
    let p = &k.loops;
    let is32 = match p.dtype {
        DType::F32 => true,
        DType::F64 => false,
        DType::I32 => {
            return Err(EmitError::Unsupported {
                kernel: k.name.clone(),
                message: "the program's float type is i32".into(),
            });
        }
    };
    let mut reserved: Vec<&str> = RESERVED.to_vec();
    reserved.extend(["shapes", "sizes", "at", "i64", "usize"]);
    // The kernel's companions, which its bodies call; not the kernel's own name,
    // which nothing calls (a parameter may take it: kernel `x_shape`, input `x`).
    let items = kernel_items(&k.name);
    reserved.extend(items[1..].iter().map(String::as_str));
    reserved.extend([
        "row", "col", "lane", "value", "values", "scratch", "parts", "part",
    ]);
    reserved.extend(Fact::ALL.map(Fact::name));
    let mut scope = Scope::with_reserved(&reserved);
    let mut tensors = vec![ident("_"); p.tensors.len()];
    let order = p
        .inputs
        .iter()
        .chain(&p.outputs)
        .copied()
        .chain((0..p.tensors.len()).map(TensorId));
    for t in order {
        if tensors[t.0] == "_" {
            tensors[t.0] = ident(&scope.fresh(&p.tensors[t.0].name));
        }
    }
    // The interface comes from the kernel's one description.
    let sig = p.signature();
    let mut params = HashMap::new();
    for name in &sig.params {
        params.insert(name.clone(), ident(&scope.fresh(name)));
    }
    let mut dims = HashMap::new();
    for spec in &sig.inputs {
        for d in &spec.shape {
            if let Expr::Name(n) = d
                && !dims.contains_key(n)
            {
                dims.insert(n.clone(), ident(&scope.fresh(n)));
            }
        }
    }
    let mut g = Gen {
        name: &k.name,
        p,
        sig,
        checks,
        is32,
        float: ident(if is32 { "f32" } else { "f64" }),
        tensors,
        dims,
        params,
        unsafe_used: RefCell::new(false),
        used: RefCell::new(BTreeSet::new()),
        sizes: Vec::new(),
        scheduled: schedule,
        plan: Plan::default(),
        threaded: schedule && p.blocks.iter().any(threads_work),
        pieces: Vec::new(),
    };
    g.sizes = g.entry_sizes();
    g.pieces = g.pieces_plan();
    g.plan = g.plan();
    Ok((g, scope))
}

impl Gen<'_> {
    fn kernel_lit(&self) -> TokenStream {
        let n = self.name;
        quote!(#n)
    }

    /// The runtime's `h`, as generated code names it (`rt::check_len`).
    fn need(&self, h: Helper) -> TokenStream {
        path(h)
    }

    fn unsupported(&self, message: impl Into<String>) -> EmitError {
        EmitError::Unsupported {
            kernel: self.name.to_string(),
            message: message.into(),
        }
    }

    fn tensor_kind(&self, t: TensorId) -> TensorKind {
        self.p.tensors[t.0].kind
    }

    /// Whether the loops take memory of their own from a scratch: a temporary
    /// kept whole, a row a thread keeps whose length is not a literal (shorter
    /// ones live on the stack), a tile's panel, or pieces' partial results.
    fn takes_scratch(&self) -> bool {
        let touched = touched_tensors(self.p);
        let heap = |(i, decl): (usize, &TensorDecl)| {
            decl.kind == TensorKind::Temp
                && match self.row_local(TensorId(i)) {
                    None => true,
                    Some(_) => touched.contains(&TensorId(i)) && row_literal_len(decl).is_none(),
                }
        };
        self.p.tensors.iter().enumerate().any(heap)
            || !self.plan.panels.is_empty()
            || !self.pieces.is_empty()
    }

    /// The number of the thread's part, for the scratch's key of a buffer each
    /// thread keeps: `part.index()` in a thread team, else 0.
    fn part_index(&self) -> TokenStream {
        if self.threaded {
            quote!(part.index())
        } else {
            quote!(0)
        }
    }

    /// The number of parts the loops run on: `parts` (bound before a thread team
    /// starts) when threaded, else `1`.
    fn parts_count(&self) -> TokenStream {
        if self.threaded {
            quote!(parts)
        } else {
            quote!(1)
        }
    }
}
