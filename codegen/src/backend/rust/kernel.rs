//! One kernel: the optimized loop program of a uop program as three public items —
//! a shapes struct, a function computing it from the input dims, and the kernel
//! function — plus a private function checking the sizes it computes.
//!
//! Names: loop indices are `i{id}` and carried variables `v{id}`, exactly as
//! `uop print --stage loops` shows them, so the generated code can be read next to
//! the printed IR; tensors, dims and `$params` keep their program names in
//! snake_case.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;

use crate::index::{Expr, IndexOp, list};
use crate::loops::{
    Access, Block, Carried, Loop, LoopProgram, Stmt, Subscript, TensorDecl, TensorId, TensorKind,
    Value, VarId,
};
use crate::uop::{Accum, BinaryOp, DType, UnaryOp};

use crate::loops::analysis::{access_mentions, value_mentions};

use super::names::{Scope, camel, kernel_items};
use super::runtime::{Helper, RESERVED, path};
use super::{Checks, EmitError};
use crate::compile::CompileOptions;
use crate::signature::Signature;

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

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

fn lit(text: &str) -> TokenStream {
    // Only called with literal text this module formats itself.
    match Literal::from_str(text) {
        Ok(l) => quote!(#l),
        Err(_) => unreachable!("`{text}` is a valid Rust literal"),
    }
}

fn int_lit(v: i64) -> (TokenStream, Prec) {
    if v < 0 {
        let abs = lit(&v.unsigned_abs().to_string());
        (quote!(-#abs), Prec::Prefix)
    } else {
        (lit(&v.to_string()), Prec::Postfix)
    }
}

fn paren(ts: TokenStream, prec: Prec, min: Prec) -> TokenStream {
    if prec < min { quote!((#ts)) } else { ts }
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
    /// The target constants (`FMA`, `LANES`, `MR`, `NR`, `KC`) the loops use.
    consts: RefCell<BTreeSet<&'static str>>,
    /// Some block has a parallel loop or one folded in pieces: the loops run on
    /// every thread of a [`Part`](uop_runtime::Part) at once, serial blocks on the
    /// first thread only.
    threaded: bool,
    /// Inside a tile's reduction: loads read from the tile's packed panel instead,
    /// each with its cell's offset within one reduction iteration's run of cells.
    packed: RefCell<Vec<(Value, TokenStream)>>,
    /// The tiles' packed panels: one buffer per thread each, allocated by the
    /// kernel and passed to the loops.
    panels: RefCell<Vec<Panel>>,
    /// While an inner parallel loop's nest is emitted: that loop's id and this
    /// thread's part of its range, which [`Gen::range`] gives instead of its own.
    share: RefCell<Option<(usize, TokenStream, TokenStream)>>,
    /// The blocks folded in pieces so far: what the kernel allocates and passes.
    pieces: RefCell<Vec<Pieces>>,
}

/// A tile's packed panel, `i{c}_panel`: `loads` runs of `NR` cells per reduction
/// iteration, for at most `KC` iterations of the outermost reduction loop (`trips`:
/// each reduction loop's trip count, outermost first).
struct Panel {
    name: Ident,
    trips: Vec<TokenStream>,
    loads: usize,
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

/// Iterations of a block folded in pieces that one piece holds (the outer loop's
/// iterations times the inner loops'): as many as a thread must get before a team
/// starts, so two pieces are enough for two threads. A fixed number, so the result
/// does not depend on the thread count.
const PIECE: i64 = 1 << 15;

/// Threads sharing an inner loop's range split it only at multiples of this many
/// iterations from its start, so that with unit-stride writes (a column sum's
/// output row) they rarely write the same cache line in every outer iteration.
const SHARE_STEP: i64 = 64;

/// Emits one kernel's items.
pub(super) fn emit(k: &KernelSource, options: &CompileOptions) -> Result<TokenStream, EmitError> {
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
        "row", "col", "lane", "value", "values", "FMA", "LANES", "MR", "NR", "KC", "TB", "VEC",
    ]);
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
        consts: RefCell::new(BTreeSet::new()),
        threaded: schedule && p.blocks.iter().any(threads_work),
        packed: RefCell::new(Vec::new()),
        panels: RefCell::new(Vec::new()),
        share: RefCell::new(None),
        pieces: RefCell::new(Vec::new()),
    };
    g.sizes = g.entry_sizes();
    let mut scope_for_locals = scope;
    g.items(k, &mut scope_for_locals)
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

    // ------------------------------------------------------------ index values

    /// An index expression as `i64` Rust, in plain (unchecked) arithmetic.
    fn idx(&self, e: &Expr) -> Result<(TokenStream, Prec), EmitError> {
        Ok(match e {
            Expr::Int(v) => int_lit(*v),
            Expr::Index(n) => {
                let i = ident(&format!("i{n}"));
                (quote!(#i), Prec::Postfix)
            }
            Expr::Name(n) => {
                let id = self
                    .dims
                    .get(n)
                    .ok_or_else(|| self.unsupported(format!("dim `{n}` is not an input's")))?;
                self.used.borrow_mut().insert(n.clone());
                (quote!(#id), Prec::Postfix)
            }
            Expr::Param(pn) => {
                let id = self
                    .params
                    .get(pn)
                    .ok_or_else(|| self.unsupported(format!("`${pn}` is not declared")))?;
                self.used.borrow_mut().insert(format!("${pn}"));
                (quote!(#id), Prec::Postfix)
            }
            Expr::Dim(..) => {
                return Err(self.unsupported(format!("unresolved shape reference `{e}`")));
            }
            Expr::Neg(a) => {
                // `-(-a)`, never `--a` (clippy's `double_negations`).
                let a = self.idx_operand(a, Prec::Postfix)?;
                (quote!(-#a), Prec::Prefix)
            }
            Expr::Bin(op, a, b) => match op {
                IndexOp::Add | IndexOp::Sub | IndexOp::Mul => {
                    let prec = if *op == IndexOp::Mul {
                        Prec::Product
                    } else {
                        Prec::Sum
                    };
                    let a = self.idx_operand(a, prec)?;
                    let b = self.idx_operand(b, next(prec))?;
                    let ts = match op {
                        IndexOp::Add => quote!(#a + #b),
                        IndexOp::Sub => quote!(#a - #b),
                        _ => quote!(#a * #b),
                    };
                    (ts, prec)
                }
                IndexOp::Div | IndexOp::Mod => {
                    let (at, ap) = self.idx(a)?;
                    let (bt, _) = self.idx(b)?;
                    // For a positive divisor Euclid's quotient is the floor quotient.
                    let positive = matches!(**b, Expr::Int(k) if k > 0);
                    if positive && !matches!(**a, Expr::Int(_)) {
                        let at = paren(at, ap, Prec::Postfix);
                        if *op == IndexOp::Div {
                            (quote!(#at.div_euclid(#bt)), Prec::Postfix)
                        } else {
                            (quote!(#at.rem_euclid(#bt)), Prec::Postfix)
                        }
                    } else {
                        let f = self.need(if *op == IndexOp::Div {
                            Helper::FloorDiv
                        } else {
                            Helper::FloorMod
                        });
                        (quote!(#f(#at, #bt)), Prec::Postfix)
                    }
                }
                IndexOp::Min | IndexOp::Max => {
                    let (at, _) = self.idx(a)?;
                    let (bt, _) = self.idx(b)?;
                    if *op == IndexOp::Min {
                        (quote!(i64::min(#at, #bt)), Prec::Postfix)
                    } else {
                        (quote!(i64::max(#at, #bt)), Prec::Postfix)
                    }
                }
            },
        })
    }

    fn idx_operand(&self, e: &Expr, min: Prec) -> Result<TokenStream, EmitError> {
        let (ts, prec) = self.idx(e)?;
        Ok(paren(ts, prec, min))
    }

    /// An index expression evaluated with overflow checks, inside a function
    /// returning `Option` (the `_sizes` function).
    fn checked_idx(&self, e: &Expr) -> Result<TokenStream, EmitError> {
        let call = |method: &str, a: &Expr, b: Option<&Expr>| -> Result<TokenStream, EmitError> {
            let m = ident(method);
            let at = self.checked_idx(a)?;
            let args = match b {
                Some(b) => {
                    let bt = self.checked_idx(b)?;
                    quote!(#at, #bt)
                }
                None => at,
            };
            Ok(quote!(i64::#m(#args)?))
        };
        Ok(match e {
            Expr::Int(_) | Expr::Index(_) | Expr::Name(_) | Expr::Param(_) | Expr::Dim(..) => {
                self.idx(e)?.0
            }
            Expr::Neg(a) => call("checked_neg", a, None)?,
            Expr::Bin(op, a, b) => match op {
                IndexOp::Add => call("checked_add", a, Some(b))?,
                IndexOp::Sub => call("checked_sub", a, Some(b))?,
                IndexOp::Mul => call("checked_mul", a, Some(b))?,
                IndexOp::Div | IndexOp::Mod => {
                    let at = self.checked_idx(a)?;
                    let bt = self.checked_idx(b)?;
                    // Checked: a zero divisor, and the one overflowing quotient, give `None`.
                    let f = self.need(if *op == IndexOp::Div {
                        Helper::CheckedFloorDiv
                    } else {
                        Helper::CheckedFloorMod
                    });
                    quote!(#f(#at, #bt)?)
                }
                IndexOp::Min => {
                    let (at, bt) = (self.checked_idx(a)?, self.checked_idx(b)?);
                    quote!(i64::min(#at, #bt))
                }
                IndexOp::Max => {
                    let (at, bt) = (self.checked_idx(a)?, self.checked_idx(b)?);
                    quote!(i64::max(#at, #bt))
                }
            },
        })
    }

    /// Every expression the kernel evaluates before its loops that could overflow:
    /// output and temporary shapes, assertion sides and loop bounds without loop
    /// indices. Literals, dims and params are left out (they cannot).
    fn entry_sizes(&self) -> Vec<Expr> {
        let mut out: Vec<Expr> = Vec::new();
        let mut add = |e: &Expr| {
            let trivial = matches!(e, Expr::Int(_) | Expr::Name(_) | Expr::Param(_));
            if !trivial && e.indices().is_empty() && !out.contains(e) {
                out.push(e.clone());
            }
        };
        for spec in &self.sig.outputs {
            spec.shape.iter().for_each(&mut add);
        }
        for t in &self.p.tensors {
            if t.kind == TensorKind::Temp {
                t.shape.iter().for_each(&mut add);
            }
        }
        for (l, r) in &self.sig.assertions {
            add(l);
            add(r);
        }
        for b in &self.p.blocks {
            for l in &b.loops {
                add(&l.start);
                add(&l.end);
            }
        }
        out
    }

    /// An entry-evaluated expression's value: itself if trivial, else `sizes[k]`.
    fn entry_value(&self, e: &Expr) -> Result<TokenStream, EmitError> {
        match self.sizes.iter().position(|s| s == e) {
            Some(k) => {
                let k = lit(&k.to_string());
                Ok(quote!(sizes[#k]))
            }
            None => Ok(self.idx(e)?.0),
        }
    }

    /// A `usize` size of an output shape.
    fn entry_usize(&self, e: &Expr) -> Result<TokenStream, EmitError> {
        Ok(match e {
            Expr::Int(v) if *v >= 0 => lit(&v.to_string()),
            Expr::Name(_) => {
                let v = self.idx(e)?.0;
                quote!(#v as usize)
            }
            _ => {
                let v = self.entry_value(e)?;
                let f = self.need(Helper::Size);
                let (k, text) = (self.kernel_lit(), e.to_string());
                quote!(#f(#k, #text, #v)?)
            }
        })
    }

    // ------------------------------------------------------------ float values

    fn float_lit(&self, v: f64, typed: bool) -> Out {
        let t = &self.float;
        let v = if self.is32 { v as f32 as f64 } else { v };
        if v.is_nan() {
            return Out {
                ts: quote!(#t::NAN),
                prec: Prec::Postfix,
                ty: Ty::Float,
            };
        }
        if v.is_infinite() {
            let ts = if v > 0.0 {
                quote!(#t::INFINITY)
            } else {
                quote!(#t::NEG_INFINITY)
            };
            return Out {
                ts,
                prec: Prec::Postfix,
                ty: Ty::Float,
            };
        }
        if let Some(name) = named_constant(v.abs(), self.is32) {
            // `1.1283792` is `FRAC_2_SQRT_PI` in f32: the constant by its name, as
            // clippy's `approx_constant` asks (exactly the same value).
            let c = Ident::new(name, Span::call_site());
            let ts = quote!(core::#t::consts::#c);
            let (ts, prec) = if v.is_sign_negative() {
                (quote!(-#ts), Prec::Prefix)
            } else {
                (ts, Prec::Postfix)
            };
            return Out {
                ts,
                prec,
                ty: Ty::Float,
            };
        }
        let text = if self.is32 {
            format!("{:?}", (v as f32).abs())
        } else {
            format!("{:?}", v.abs())
        };
        let text = if typed {
            format!("{text}_{}", if self.is32 { "f32" } else { "f64" })
        } else {
            text
        };
        let l = lit(&text);
        let (ts, prec) = if v.is_sign_negative() {
            (quote!(-#l), Prec::Prefix)
        } else {
            (l, Prec::Postfix)
        };
        Out {
            ts,
            prec,
            ty: if typed { Ty::Float } else { Ty::Literal(v) },
        }
    }

    /// `o` as a float operand binding at least as tightly as `min`; `typed` asks for
    /// a literal to carry its type suffix (method receivers, literal-only operations).
    fn float(&self, o: Out, min: Prec, typed: bool) -> TokenStream {
        let t = &self.float;
        let o = match o.ty {
            Ty::Int => {
                let ts = paren(o.ts, o.prec, Prec::Cast);
                Out {
                    ts: quote!(#ts as #t),
                    prec: Prec::Cast,
                    ty: Ty::Float,
                }
            }
            Ty::Literal(v) if typed => self.float_lit(v, true),
            _ => o,
        };
        paren(o.ts, o.prec, min)
    }

    fn value(&self, v: &Value) -> Result<Out, EmitError> {
        let t = &self.float;
        let float_out = |ts: TokenStream, prec: Prec| Out {
            ts,
            prec,
            ty: Ty::Float,
        };
        if let Some((_, cell)) = self.packed.borrow().iter().find(|(load, _)| load == v) {
            return Ok(float_out(cell.clone(), Prec::Prefix));
        }
        Ok(match v {
            Value::Load { access, fill } => self.load(access, *fill)?,
            Value::Var(var) => {
                let v = ident(&format!("v{}", var.0));
                float_out(quote!(#v), Prec::Postfix)
            }
            Value::Const(c) => self.float_lit(*c, false),
            Value::Param(name) => {
                let (e, prec) = self.idx(&Expr::Param(name.clone()))?;
                let e = paren(e, prec, Prec::Cast);
                float_out(quote!(#e as #t), Prec::Cast)
            }
            Value::Index(Expr::Int(k)) => self.float_lit(*k as f64, false),
            Value::Index(e) => {
                let (e, prec) = self.idx(e)?;
                let e = paren(e, prec, Prec::Cast);
                float_out(quote!(#e as #t), Prec::Cast)
            }
            Value::Unary(op, x) => self.unary(*op, x)?,
            Value::Binary(op, a, b) => self.binary(*op, a, b)?,
            Value::Where(c, a, b) => {
                if let Value::Const(c) = **c {
                    // A constant condition chooses at generation time.
                    return self.value(if c != 0.0 { a } else { b });
                }
                let c = match &**c {
                    // `where(a < b, ..)` reads as `if a < b`, which is the same test.
                    Value::Binary(op, x, y) if op.is_comparison() => self.comparison(*op, x, y)?,
                    _ => {
                        let c = self.value(c)?;
                        let c = self.float(c, Prec::Sum, true);
                        quote!(#c != 0.0)
                    }
                };
                let (a, b) = (self.value(a)?, self.value(b)?);
                let both_literal = matches!(a.ty, Ty::Literal(_)) && matches!(b.ty, Ty::Literal(_));
                let a = self.float(a, Prec::Lowest, both_literal);
                let b = self.float(b, Prec::Lowest, both_literal);
                float_out(quote!(if #c { #a } else { #b }), Prec::Lowest)
            }
        })
    }

    /// A call of the f32 function `name` of the runtime's `vmath`
    /// (`rt::vmath::exp_f32`), which LLVM inlines and vectorizes. Its multiply-adds
    /// are fused in the per-CPU copies with FMA (argument `FMA`); unscheduled kernels,
    /// compiled for the baseline target only, pass `false`.
    fn vmath_call(
        &self,
        name: &'static str,
        args: &[&Value],
    ) -> Result<(TokenStream, Prec), EmitError> {
        let f = self.need(Helper::Vmath(name));
        let mut ts = Vec::with_capacity(args.len());
        for a in args {
            ts.push(self.float(self.value(a)?, Prec::Lowest, false));
        }
        let call = if name == "pow_f32" {
            // Evaluated in f64, far beyond f32's precision: one instance.
            quote!(#f(#(#ts),*))
        } else if self.scheduled {
            self.consts.borrow_mut().insert("FMA");
            quote!(#f(FMA, #(#ts),*))
        } else {
            quote!(#f(false, #(#ts),*))
        };
        Ok((call, Prec::Postfix))
    }

    fn unary(&self, op: UnaryOp, x: &Value) -> Result<Out, EmitError> {
        let xo = self.value(x)?;
        if op == UnaryOp::Neg {
            if let Ty::Literal(c) = xo.ty {
                return Ok(self.float_lit(-c, false));
            }
            // `-(-x)`, never `--x` (clippy's `double_negations`).
            let x = self.float(xo, Prec::Postfix, false);
            return Ok(Out {
                ts: quote!(-#x),
                prec: Prec::Prefix,
                ty: Ty::Float,
            });
        }
        let recv = self.float(xo, Prec::Postfix, true);
        let (ts, prec) = match op {
            UnaryOp::Neg => unreachable!("handled above"),
            UnaryOp::Abs => (quote!(#recv.abs()), Prec::Postfix),
            UnaryOp::Exp if self.is32 => self.vmath_call("exp_f32", &[x])?,
            UnaryOp::Exp => (quote!(#recv.exp()), Prec::Postfix),
            UnaryOp::Log if self.is32 => self.vmath_call("ln_f32", &[x])?,
            UnaryOp::Log => (quote!(#recv.ln()), Prec::Postfix),
            UnaryOp::Sqrt => (quote!(#recv.sqrt()), Prec::Postfix),
            UnaryOp::Rsqrt if self.is32 => {
                // In f64 and rounded once, like the reference: exact, and cheap.
                let x = self.float(self.value(x)?, Prec::Lowest, true);
                (quote!((1.0 / f64::from(#x).sqrt()) as f32), Prec::Cast)
            }
            UnaryOp::Rsqrt => (quote!(1.0 / #recv.sqrt()), Prec::Product),
            UnaryOp::Recip => {
                let x = self.float(self.value(x)?, Prec::Prefix, false);
                (quote!(1.0 / #x), Prec::Product)
            }
            UnaryOp::Tanh if self.is32 => self.vmath_call("tanh_f32", &[x])?,
            UnaryOp::Tanh => (quote!(#recv.tanh()), Prec::Postfix),
            UnaryOp::Sigmoid if self.is32 => self.vmath_call("sigmoid_f32", &[x])?,
            UnaryOp::Sigmoid => {
                let x = self.float(self.value(x)?, Prec::Prefix, true);
                (quote!(1.0 / (1.0 + (-#x).exp())), Prec::Product)
            }
            UnaryOp::Sin if self.is32 => self.vmath_call("sin_f32", &[x])?,
            UnaryOp::Sin => (quote!(#recv.sin()), Prec::Postfix),
            UnaryOp::Cos if self.is32 => self.vmath_call("cos_f32", &[x])?,
            UnaryOp::Cos => (quote!(#recv.cos()), Prec::Postfix),
            UnaryOp::Erf if self.is32 => self.vmath_call("erf_f32", &[x])?,
            UnaryOp::Erf => {
                let f = self.need(Helper::ErfF64);
                let x = self.float(self.value(x)?, Prec::Lowest, false);
                (quote!(#f(#x)), Prec::Postfix)
            }
            UnaryOp::Floor => (quote!(#recv.floor()), Prec::Postfix),
            UnaryOp::Ceil => (quote!(#recv.ceil()), Prec::Postfix),
            UnaryOp::Sign => {
                let f = self.need(Helper::Sign(self.is32));
                let x = self.float(self.value(x)?, Prec::Lowest, false);
                (quote!(#f(#x)), Prec::Postfix)
            }
        };
        Ok(Out {
            ts,
            prec,
            ty: Ty::Float,
        })
    }

    /// `a * b + c` (or `- c`, or `c - a * b`) as one `mul_add(FMA, ..)`: in scheduled
    /// kernels every multiply feeding an add or subtract is contracted, so the
    /// per-CPU copies with FMA round it once (the documented reassociation,
    /// `docs/decisions.md`). `None` when neither operand is a product of
    /// non-literals.
    fn contracted(&self, op: BinaryOp, a: &Value, b: &Value) -> Result<Option<Out>, EmitError> {
        let product = |v: &Value| match v {
            Value::Binary(BinaryOp::Mul, p, q)
                if !(matches!(**p, Value::Const(_)) && matches!(**q, Value::Const(_))) =>
            {
                Some((p.as_ref().clone(), q.as_ref().clone()))
            }
            _ => None,
        };
        let neg = |v: Value| Value::Unary(UnaryOp::Neg, Box::new(v));
        let (p, q, c) = match (op, product(a), product(b)) {
            (BinaryOp::Add, Some((p, q)), _) => (p, q, b.clone()),
            (BinaryOp::Add, None, Some((p, q))) => (p, q, a.clone()),
            (BinaryOp::Sub, Some((p, q)), _) => (p, q, neg(b.clone())),
            (BinaryOp::Sub, None, Some((p, q))) => (neg(p), q, a.clone()),
            _ => return Ok(None),
        };
        let f = self.need(Helper::MulAdd(self.is32));
        self.consts.borrow_mut().insert("FMA");
        let [p, q, c] = [p, q, c].map(|v| self.value(&v));
        let [p, q, c] = [p?, q?, c?].map(|v| self.float(v, Prec::Lowest, false));
        Ok(Some(Out {
            ts: quote!(#f(FMA, #p, #q, #c)),
            prec: Prec::Postfix,
            ty: Ty::Float,
        }))
    }

    fn binary(&self, op: BinaryOp, a: &Value, b: &Value) -> Result<Out, EmitError> {
        if self.scheduled
            && matches!(op, BinaryOp::Add | BinaryOp::Sub)
            && let Some(out) = self.contracted(op, a, b)?
        {
            return Ok(out);
        }
        let t = &self.float;
        let (ao, bo) = (self.value(a)?, self.value(b)?);
        let both_literal = matches!(ao.ty, Ty::Literal(_)) && matches!(bo.ty, Ty::Literal(_));
        let infix = |prec: Prec, ao: Out, bo: Out| {
            (
                self.float(ao, prec, both_literal),
                self.float(bo, next(prec), false),
            )
        };
        let (ts, prec) = match op {
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => {
                let prec = if matches!(op, BinaryOp::Add | BinaryOp::Sub) {
                    Prec::Sum
                } else {
                    Prec::Product
                };
                let (a, b) = infix(prec, ao, bo);
                let ts = match op {
                    BinaryOp::Add => quote!(#a + #b),
                    BinaryOp::Sub => quote!(#a - #b),
                    BinaryOp::Mul => quote!(#a * #b),
                    _ => quote!(#a / #b),
                };
                (ts, prec)
            }
            BinaryOp::Pow if self.is32 => self.vmath_call("pow_f32", &[a, b])?,
            BinaryOp::Pow => {
                let a = self.float(ao, Prec::Postfix, true);
                let b = self.float(bo, Prec::Lowest, false);
                (quote!(#a.powf(#b)), Prec::Postfix)
            }
            BinaryOp::Maximum | BinaryOp::Minimum => {
                let f = self.need(if op == BinaryOp::Maximum {
                    Helper::Maximum(self.is32)
                } else {
                    Helper::Minimum(self.is32)
                });
                let a = self.float(ao, Prec::Lowest, false);
                let b = self.float(bo, Prec::Lowest, false);
                (quote!(#f(#a, #b)), Prec::Postfix)
            }
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => {
                let cmp = self.comparison(op, a, b)?;
                (quote!(#t::from(#cmp)), Prec::Postfix)
            }
        };
        Ok(Out {
            ts,
            prec,
            ty: Ty::Float,
        })
    }

    /// `a < b` (a `bool`) for a comparison operator.
    fn comparison(&self, op: BinaryOp, a: &Value, b: &Value) -> Result<TokenStream, EmitError> {
        if a == b && matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
            // `x != x` is how the IR asks for NaN (argmax); say so.
            let x = self.float(self.value(a)?, Prec::Postfix, true);
            return Ok(if op == BinaryOp::Ne {
                quote!(#x.is_nan())
            } else {
                quote!(!#x.is_nan())
            });
        }
        let (ao, bo) = (self.value(a)?, self.value(b)?);
        let both_literal = matches!(ao.ty, Ty::Literal(_)) && matches!(bo.ty, Ty::Literal(_));
        // `x as f32 < y` would parse `f32<` as generics: a cast on the left is parenthesized.
        let left_min = if ao.prec == Prec::Cast || ao.ty == Ty::Int {
            Prec::Prefix
        } else {
            Prec::Sum
        };
        let a = self.float(ao, left_min, both_literal);
        let b = self.float(bo, Prec::Sum, false);
        Ok(match op {
            BinaryOp::Eq => quote!(#a == #b),
            BinaryOp::Ne => quote!(#a != #b),
            BinaryOp::Lt => quote!(#a < #b),
            BinaryOp::Le => quote!(#a <= #b),
            BinaryOp::Gt => quote!(#a > #b),
            _ => quote!(#a >= #b),
        })
    }

    // ------------------------------------------------------------ accesses

    /// The `i64` subscripts of an access.
    fn subscripts(&self, a: &Access) -> Result<Vec<(TokenStream, Prec)>, EmitError> {
        a.index
            .iter()
            .map(|s| match s {
                Subscript::Expr(e) => self.idx(e),
                Subscript::Value(v) => {
                    let o = self.value(v)?;
                    Ok(if o.ty == Ty::Int {
                        let x = paren(o.ts, o.prec, Prec::Cast);
                        (quote!(#x as i64), Prec::Cast)
                    } else {
                        // Saturating like the reference: NaN gives 0, infinities fall outside.
                        let x = self.float(o, Prec::Postfix, true);
                        (quote!(#x.floor() as i64), Prec::Cast)
                    })
                }
            })
            .collect()
    }

    /// The `i64` sizes of a tensor's axes.
    fn shape(&self, t: TensorId) -> Result<Vec<(TokenStream, Prec)>, EmitError> {
        self.p.tensors[t.0]
            .shape
            .iter()
            .map(|e| self.idx(e))
            .collect()
    }

    /// The row-major offset of an access known to be in range, as a `usize`.
    fn offset_unchecked(&self, a: &Access) -> Result<TokenStream, EmitError> {
        if let Some(axis) = self.row_local(a.tensor) {
            // One row is kept: the row axis has size 1 there.
            let mut decl = self.p.tensors[a.tensor.0].clone();
            decl.shape[axis] = Expr::Int(1);
            let mut a = a.clone();
            a.index[axis] = Subscript::Expr(Expr::Int(0));
            return self.offset_in(&decl, &a);
        }
        self.offset_in(&self.p.tensors[a.tensor.0], a)
    }

    /// The row-major offset of `a` into a tensor of `decl`'s shape.
    fn offset_in(&self, decl: &TensorDecl, a: &Access) -> Result<TokenStream, EmitError> {
        let all_exprs: Option<Vec<&Expr>> = a
            .index
            .iter()
            .map(|s| match s {
                Subscript::Expr(e) => Some(e),
                Subscript::Value(_) => None,
            })
            .collect();
        let (ts, prec) = match all_exprs {
            Some(exprs) => {
                // Horner's rule, `(i0 * h + i1) * w + i2`, which reads like hand-written
                // indexing and costs one multiply per axis.
                let mut off = Expr::Int(0);
                for (e, d) in exprs.iter().zip(&decl.shape) {
                    let scaled = match (&off, d) {
                        (Expr::Int(0), _) => Expr::Int(0),
                        (_, Expr::Int(1)) => off,
                        _ => off * d.clone(),
                    };
                    off = plus(scaled, e.simplify());
                }
                if off == Expr::Int(0) {
                    return Ok(quote!(0));
                }
                self.idx(&off)?
            }
            None => {
                // Horner's rule over the subscripts, in tokens.
                let subs = self.subscripts(a)?;
                let shape = decl
                    .shape
                    .iter()
                    .map(|e| self.idx(e))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut acc: Option<(TokenStream, Prec)> = None;
                for ((s, sp), (d, dp)) in subs.into_iter().zip(shape) {
                    acc = Some(match acc {
                        None => (s, sp),
                        Some((x, xp)) => {
                            let x = paren(x, xp, Prec::Product);
                            let d = paren(d, dp, Prec::Cast);
                            let s = paren(s, sp, Prec::Product);
                            (quote!(#x * #d + #s), Prec::Sum)
                        }
                    });
                }
                acc.unwrap_or_else(|| int_lit(0))
            }
        };
        let ts = paren(ts, prec, Prec::Cast);
        Ok(quote!(#ts as usize))
    }

    /// `offset([subscripts], [sizes])` for an access that may be out of range.
    fn offset_checked(&self, a: &Access) -> Result<TokenStream, EmitError> {
        let f = self.need(Helper::Offset);
        let subs = self.subscripts(a)?.into_iter().map(|(t, _)| t);
        let shape = self.shape(a.tensor)?.into_iter().map(|(t, _)| t);
        Ok(quote!(#f([#(#subs),*], [#(#shape),*])))
    }

    fn load(&self, a: &Access, fill: f64) -> Result<Out, EmitError> {
        let x = &self.tensors[a.tensor.0];
        let is_int = self.p.tensors[a.tensor.0].dtype == DType::I32;
        let ty = if is_int { Ty::Int } else { Ty::Float };
        let fast = self.checks == Checks::Proven;
        if !a.checked {
            let at = self.offset_unchecked(a)?;
            return Ok(if fast {
                *self.unsafe_used.borrow_mut() = true;
                Out {
                    ts: quote!(*#x.get_unchecked(#at)),
                    prec: Prec::Prefix,
                    ty,
                }
            } else {
                Out {
                    ts: quote!(#x[#at]),
                    prec: Prec::Postfix,
                    ty,
                }
            });
        }
        let off = self.offset_checked(a)?;
        let fill = if is_int {
            int_lit(DType::I32.round(fill) as i64).0
        } else {
            self.float_lit(fill, false).ts
        };
        let read = if fast {
            // In range by the check in `offset`, and the buffer's length was checked.
            *self.unsafe_used.borrow_mut() = true;
            quote!(*#x.get_unchecked(at))
        } else {
            quote!(#x[at])
        };
        Ok(Out {
            ts: quote!(#off.map_or(#fill, |at| #read)),
            prec: Prec::Postfix,
            ty,
        })
    }

    /// `place = value`, `place op= value`, skipped when a checked access is out of range.
    fn store(&self, a: &Access, op: Option<Accum>, v: &Value) -> Result<TokenStream, EmitError> {
        let target_int = self.p.tensors[a.tensor.0].dtype == DType::I32;
        let vo = self.value(v)?;
        let value = if target_int {
            if vo.ty == Ty::Int {
                vo.ts
            } else {
                let f = self.float(vo, Prec::Cast, true);
                quote!(#f as i32)
            }
        } else {
            self.float(vo, Prec::Lowest, false)
        };
        self.store_value(a, op, value)
    }

    /// `a op= value` for the emitted `value` (of `a`'s element type).
    fn store_value(
        &self,
        a: &Access,
        op: Option<Accum>,
        value: TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let x = &self.tensors[a.tensor.0];
        if self.tensor_kind(a.tensor) == TensorKind::Input {
            return Err(self.unsupported(format!(
                "the input `{}` is written",
                self.p.tensors[a.tensor.0].name
            )));
        }
        let target_int = self.p.tensors[a.tensor.0].dtype == DType::I32;
        let fast = self.checks == Checks::Proven;
        let (at, checked) = if a.checked {
            (quote!(at), Some(self.offset_checked(a)?))
        } else {
            (self.offset_unchecked(a)?, None)
        };
        let (place, current) = if fast {
            *self.unsafe_used.borrow_mut() = true;
            (
                quote!(*#x.get_unchecked_mut(#at)),
                quote!(*#x.get_unchecked(#at)),
            )
        } else {
            (quote!(#x[#at]), quote!(#x[#at]))
        };
        let stmt = match op {
            None => quote!(#place = #value;),
            Some(Accum::Add) => quote!(#place += #value;),
            Some(Accum::Mul) => quote!(#place *= #value;),
            Some(m @ (Accum::Max | Accum::Min)) => {
                if target_int {
                    return Err(self.unsupported("max/min accumulation into an i32 tensor"));
                }
                let f = self.need(if m == Accum::Max {
                    Helper::Maximum(self.is32)
                } else {
                    Helper::Minimum(self.is32)
                });
                quote!(#place = #f(#current, #value);)
            }
        };
        Ok(match checked {
            Some(off) => quote!(if let Some(at) = #off { #stmt }),
            None => stmt,
        })
    }

    // ------------------------------------------------------------ statements

    fn stmt(&self, s: &Stmt) -> Result<TokenStream, EmitError> {
        match s {
            Stmt::Store { access, value } => self.store(access, None, value),
            Stmt::Accumulate { access, op, value } => self.store(access, Some(*op), value),
            Stmt::Update { var, op, value } => {
                let v = ident(&format!("v{}", var.0));
                if let (true, Accum::Add, Value::Binary(BinaryOp::Mul, a, b)) =
                    (self.scheduled, op, value)
                {
                    let f = self.need(Helper::MulAdd(self.is32));
                    let a = self.float(self.value(a)?, Prec::Lowest, false);
                    let b = self.float(self.value(b)?, Prec::Lowest, false);
                    self.consts.borrow_mut().insert("FMA");
                    return Ok(quote!(#v = #f(FMA, #a, #b, #v);));
                }
                let x = self.float(self.value(value)?, Prec::Lowest, false);
                Ok(self.update(&v, *op, x))
            }
        }
    }

    /// `v op= x` for a carried variable `v`.
    fn update(&self, v: &Ident, op: Accum, x: TokenStream) -> TokenStream {
        {
            {
                match op {
                    Accum::Add => quote!(#v += #x;),
                    Accum::Mul => quote!(#v *= #x;),
                    Accum::Max => {
                        let f = self.need(Helper::Maximum(self.is32));
                        quote!(#v = #f(#v, #x);)
                    }
                    Accum::Min => {
                        let f = self.need(Helper::Minimum(self.is32));
                        quote!(#v = #f(#v, #x);)
                    }
                }
            }
        }
    }

    fn carried(&self, c: &Carried) -> TokenStream {
        let v = ident(&format!("v{}", c.var.0));
        let init = self.float_lit(c.op.identity(), true).ts;
        quote!(let mut #v = #init;)
    }

    /// A group of blocks (one block, or a block and those [joined](crate::loops::Schedule::joined)
    /// to it); one `unsafe` block around it when it has unchecked accesses (so that
    /// each access reads plainly as `*x.get_unchecked(..)`).
    fn group(&self, blocks: &[Block]) -> Result<TokenStream, EmitError> {
        *self.unsafe_used.borrow_mut() = false;
        let b = &blocks[0];
        // Joined blocks share their outermost loop only.
        let lone = blocks.len() == 1;
        if self.threaded && lone && b.loops.first().is_some_and(|l| l.schedule.pieces) {
            return self.in_pieces(b);
        }
        let depth = b
            .loops
            .iter()
            .position(|l| l.schedule.parallel)
            .filter(|&d| self.threaded && (d == 0 || lone));
        let parallel = depth.is_some();
        // This thread's part of an inner parallel loop, the same in every
        // iteration of the loops outside it.
        let mut take_inner = TokenStream::new();
        if let Some(d) = depth.filter(|&d| d > 0) {
            let l = &b.loops[d];
            let (start, end) = self.range(l)?;
            let n = l.id.0;
            let (lo, hi) = (ident(&format!("i{n}_lo")), ident(&format!("i{n}_hi")));
            let step = lit(&format!("{SHARE_STEP}"));
            let phase = self.line_phase(b, l)?;
            take_inner = quote!(let (#lo, #hi) = part.range_in_steps(#start, #end, #step, #phase););
            *self.share.borrow_mut() = Some((n, quote!(#lo), quote!(#hi)));
        }
        let code = self.group_code(blocks, depth == Some(0), take_inner);
        *self.share.borrow_mut() = None;
        let code = code?;
        Ok(if !self.threaded {
            code
        } else if parallel && *self.unsafe_used.borrow() {
            // Already one block (`unsafe { .. }`, see `group_code`).
            quote!(#code part.wait();)
        } else if parallel {
            quote!({ #code } part.wait();)
        } else {
            // A serial block runs on the first thread while the others wait.
            quote! {
                if part.first() {
                    #code
                }
                part.wait();
            }
        })
    }

    /// The code of a group of blocks, its outermost loop over this thread's part
    /// when `outer_parallel`, after `take_part` (an inner loop's part).
    fn group_code(
        &self,
        blocks: &[Block],
        outer_parallel: bool,
        take_inner: TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let b = &blocks[0];
        // This thread's part of a parallel loop.
        let part = match b.loops.first() {
            Some(l) if outer_parallel => {
                let (start, end) = self.range(l)?;
                let n = l.id.0;
                let (lo, hi) = (ident(&format!("i{n}_lo")), ident(&format!("i{n}_hi")));
                Some((
                    quote!(let (#lo, #hi) = part.range(#start, #end);),
                    (quote!(#lo), quote!(#hi)),
                ))
            }
            _ => None,
        };
        let (take_part, range) = match part {
            Some((take, range)) => (take, Some(range)),
            None => (take_inner, None),
        };
        let code = match blocks {
            [b] => {
                let carried = b.carried.iter().map(|c| self.carried(c));
                let nest = self.nest_over(&b.loops, range)?;
                let stmts = self.stmts(&b.stmts)?;
                quote!(#take_part #(#carried)* #nest #stmts)
            }
            _ => {
                let rows = self.joined(blocks, range)?;
                quote!(#take_part #rows)
            }
        };
        Ok(if *self.unsafe_used.borrow() {
            quote!(unsafe { #code })
        } else {
            code
        })
    }

    /// For an inner loop `l` of `b` shared out among threads: how many of its first
    /// iterations lie before a cache line boundary of what it writes, when the
    /// block writes one tensor at unit stride along `l` and at an offset free of the
    /// other loops; else `0` (cuts at whole steps).
    fn line_phase(&self, b: &Block, l: &Loop) -> Result<TokenStream, EmitError> {
        let n = l.id.0;
        let writes: Vec<_> = crate::loops::analysis::block_accesses(b)
            .into_iter()
            .filter(|a| a.write)
            .collect();
        let Some(w) = writes.first() else {
            return Ok(quote!(0));
        };
        let only_l = w.access.index.iter().all(|s| match s {
            Subscript::Expr(e) => e.indices().iter().all(|&m| m == n),
            Subscript::Value(_) => false,
        });
        // Row buffers are each thread's own, not shared.
        if !only_l
            || self.row_local(w.access.tensor).is_some()
            || writes.iter().any(|a| a.access.tensor != w.access.tensor)
            || crate::loops::analysis::stride::stride(&w.access, n)
                != crate::loops::analysis::stride::Stride::Unit
        {
            return Ok(quote!(0));
        }
        // The element written in the loop's first iteration.
        let mut first = w.access.clone();
        for s in &mut first.index {
            if let Subscript::Expr(e) = s {
                *e = substitute(e, n, &l.start).simplify();
            }
        }
        let f = self.need(Helper::LinePhase);
        let t = &self.tensors[first.tensor.0];
        let at = self.offset_unchecked(&first)?;
        Ok(quote!(#f(#t.as_ptr(), #at)))
    }

    /// A block folded in pieces: each thread folds its share of the pieces into
    /// fresh variables and keeps each piece's results in `v{var}_pieces`; after a
    /// barrier the first thread combines them in piece order and runs the block's
    /// statements. The pieces do not depend on the thread count, so neither does
    /// the result.
    fn in_pieces(&self, b: &Block) -> Result<TokenStream, EmitError> {
        let l = &b.loops[0];
        let n = l.id.0;
        let (start, end) = self.range(l)?;
        let local = |what: &str| ident(&format!("i{n}_{what}"));
        let (piece, len, count) = (local("piece"), local("piece_len"), local("pieces"));
        let (lo, hi) = (local("piece_lo"), local("piece_hi"));
        let (first, last) = (local("start"), local("end"));
        let piece_start = if l.start == Expr::Int(0) {
            quote!(#piece * #len)
        } else {
            quote!(#start + #piece * #len)
        };
        let carried: Vec<_> = b.carried.iter().map(|c| self.carried(c)).collect();
        let nest = self.nest_over(&b.loops, Some((quote!(#first), quote!(#last))))?;
        let mut keep = Vec::new();
        let mut combine = Vec::new();
        for c in &b.carried {
            let v = ident(&format!("v{}", c.var.0));
            let buffer = ident(&format!("v{}_pieces", c.var.0));
            keep.push(quote!(*#buffer.get_unchecked_mut(#piece as usize) = #v;));
            combine.push(self.update(&v, c.op, quote!(*#buffer.get_unchecked(#piece as usize))));
        }
        let stmts = self.stmts(&b.stmts)?;
        self.pieces.borrow_mut().push(Pieces {
            outer: l.clone(),
            inner: b.loops[1..].to_vec(),
            vars: b.carried.clone(),
        });
        // The piece buffers hold one value per piece, each piece written by the
        // one thread that folds it.
        Ok(quote! {
            unsafe {
                let (#lo, #hi) = part.range(0, #count);
                for #piece in #lo..#hi {
                    let #first = #piece_start;
                    let #last = (#first + #len).min(#end);
                    #(#carried)*
                    #nest
                    #(#keep)*
                }
            }
            part.wait();
            if part.first() {
                unsafe {
                    #(#carried)*
                    for #piece in 0..#count {
                        #(#combine)*
                    }
                    #stmts
                }
            }
            part.wait();
        })
    }

    /// Joined blocks as one loop over their rows: each block's row in turn, its
    /// outer loop's index bound to the shared one. The row-local temporaries they
    /// use get a buffer of one row here (on each thread).
    fn joined(
        &self,
        blocks: &[Block],
        range: Option<(TokenStream, TokenStream)>,
    ) -> Result<TokenStream, EmitError> {
        let l = &blocks[0].loops[0];
        let (start, end) = match range {
            Some(r) => r,
            None => self.range(l)?,
        };
        let n = l.id.0;
        let mut used = false;
        let mut bodies = Vec::new();
        for (k, b) in blocks.iter().enumerate() {
            let (outer, inner) = (&b.loops[0], &b.loops[1..]);
            let m = outer.id.0;
            let mut body: Vec<TokenStream> =
                outer.carried.iter().map(|c| self.carried(c)).collect();
            body.push(self.nest(inner)?);
            body.push(self.stmts(&outer.stmts)?);
            let body = quote!(#(#body)*);
            // Decided on the code, not the IR: a block whose only use of the index
            // went into a row kept per thread does not mention it.
            let im = ident(&format!("i{m}"));
            if mentions(&body, &im) {
                used = true;
                if k > 0 {
                    let i = ident(&format!("i{n}"));
                    bodies.push(quote!(let #im = #i;));
                }
            }
            bodies.push(body);
        }
        let i = ident(&format!("{}i{n}", if used { "" } else { "_" }));
        let rows = self
            .stack_rows(blocks)
            .into_iter()
            .map(|(t, len)| self.row_buffer(t, len));
        Ok(quote! {
            #(#rows)*
            for #i in #start..#end {
                #(#bodies)*
            }
        })
    }

    /// The row-local temporaries kept on the stack that some block of `blocks`
    /// touches, in tensor order, with the length of their row.
    fn stack_rows(&self, blocks: &[Block]) -> BTreeMap<TensorId, i64> {
        blocks
            .iter()
            .flat_map(crate::loops::analysis::block_accesses)
            .filter_map(|a| Some((a.access.tensor, self.row_on_stack(a.access.tensor)?)))
            .collect()
    }

    /// The length of a row-local temporary's row when the loops keep it on the
    /// stack (a small literal); other row buffers are allocated per thread by the
    /// kernel and passed in.
    fn row_on_stack(&self, t: TensorId) -> Option<i64> {
        self.row_local(t)?;
        row_literal_len(&self.p.tensors[t.0])
    }

    /// The row axis of a temporary this kernel keeps one row of.
    fn row_local(&self, t: TensorId) -> Option<usize> {
        let decl = &self.p.tensors[t.0];
        if self.scheduled && decl.kind == TensorKind::Temp {
            decl.row_local
        } else {
            None
        }
    }

    /// `let mut t = [0.0; len];`: one row of a row-local temporary, on the stack.
    fn row_buffer(&self, t: TensorId, len: i64) -> TokenStream {
        let id = &self.tensors[t.0];
        let len = lit(&format!("{len}"));
        let (e, zero) = self.elem_zero(t);
        quote!(let mut #id: [#e; #len] = [#zero; #len];)
    }

    /// A tensor's element type and its zero.
    fn elem_zero(&self, t: TensorId) -> (TokenStream, TokenStream) {
        match self.p.tensors[t.0].dtype {
            DType::I32 => (quote!(i32), quote!(0)),
            _ => {
                let f = &self.float;
                (quote!(#f), quote!(0.0))
            }
        }
    }

    /// `start` and `end` of a loop, ready to be written as `start..end` (this
    /// thread's part of it, for the inner loop a team shares out).
    fn range(&self, l: &Loop) -> Result<(TokenStream, TokenStream), EmitError> {
        if let Some((n, lo, hi)) = &*self.share.borrow()
            && *n == l.id.0
        {
            return Ok((lo.clone(), hi.clone()));
        }
        let (start, sp) = self.idx(&l.start)?;
        let start = paren(start, sp, Prec::Sum);
        let end = match (&l.start, &l.end) {
            // Literal bounds alone would leave the index type to inference.
            (Expr::Int(_), Expr::Int(e)) if *e >= 0 => lit(&format!("{e}_i64")),
            _ => {
                let (end, ep) = self.idx(&l.end)?;
                paren(end, ep, Prec::Sum)
            }
        };
        Ok((start, end))
    }

    /// The statements of a loop, in order.
    fn stmts(&self, stmts: &[Stmt]) -> Result<TokenStream, EmitError> {
        let code = stmts
            .iter()
            .map(|s| self.stmt(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(quote!(#(#code)*))
    }

    fn nest(&self, loops: &[Loop]) -> Result<TokenStream, EmitError> {
        self.nest_over(loops, None)
    }

    /// `loops`, the first over `range` when given (else its own range), honoring a
    /// tile or split schedule.
    fn nest_over(
        &self,
        loops: &[Loop],
        range: Option<(TokenStream, TokenStream)>,
    ) -> Result<TokenStream, EmitError> {
        let Some((l, inner)) = loops.split_first() else {
            return Ok(TokenStream::new());
        };
        if self.scheduled {
            if let Some(tile) = inner.first().and_then(|c| c.schedule.tile) {
                return self.tile(loops, tile.block_reduction, range);
            }
            if inner.is_empty() && l.schedule.split {
                return self.split(l, range);
            }
            if inner.len() == 1 && inner[0].schedule.blocked {
                return self.blocked(l, &inner[0], range);
            }
        }
        let (start, end) = match range {
            Some(r) => r,
            None => self.range(l)?,
        };
        self.nest_in(loops, start, end)
    }

    /// A nest `R C` run in `TB × TB` blocks, rows of blocks outermost.
    fn blocked(
        &self,
        rl: &Loop,
        cl: &Loop,
        range: Option<(TokenStream, TokenStream)>,
    ) -> Result<TokenStream, EmitError> {
        let (rs, re) = match range {
            Some(r) => r,
            None => self.range(rl)?,
        };
        let (cs, ce) = self.range(cl)?;
        if let Some((dst, src)) = self.transpose_copy(rl, cl) {
            return self.blocked_transpose(rl, cl, dst, src, (rs, re), (cs, ce));
        }
        self.consts.borrow_mut().insert("TB");
        let (r, c) = (rl.id.0, cl.id.0);
        let local = |n: usize, what: &str| ident(&format!("i{n}_{what}"));
        let (r_block, r_end) = (local(r, "block"), local(r, "end"));
        let (c_block, c_end) = (local(c, "block"), local(c, "end"));
        let used = |n| uses_index(std::slice::from_ref(cl), n);
        let ri = ident(&format!("{}i{r}", if used(r) { "" } else { "_" }));
        let ci = ident(&format!("{}i{c}", if used(c) { "" } else { "_" }));
        let stmts = self.stmts(&cl.stmts)?;
        Ok(quote! {
            for #r_block in (#rs..#re).step_by(TB) {
                let #r_end = (#r_block + TB as i64).min(#re);
                for #c_block in (#cs..#ce).step_by(TB) {
                    let #c_end = (#c_block + TB as i64).min(#ce);
                    for #ri in #r_block..#r_end {
                        for #ci in #c_block..#c_end {
                            #stmts
                        }
                    }
                }
            }
        })
    }

    /// The accesses of a blocked nest the [`Helper::Transpose`] helper can copy
    /// ([`crate::loops::analysis::transpose_copy`]), into a tensor this kernel writes and
    /// between buffers it holds whole.
    fn transpose_copy<'l>(&self, rl: &Loop, cl: &'l Loop) -> Option<(&'l Access, &'l Access)> {
        let (dst, src) = crate::loops::analysis::transpose_copy(self.p, rl, cl)?;
        let whole = |a: &Access| self.row_local(a.tensor).is_none();
        (whole(dst) && whole(src) && self.tensor_kind(dst.tensor) != TensorKind::Input)
            .then_some((dst, src))
    }

    /// A [`Self::transpose_copy`] nest, copied by the [`Helper::Transpose`] helper
    /// (which tiles it) from its first element's place in either tensor and the
    /// strides of the other direction: one call for the rows this thread owns.
    fn blocked_transpose(
        &self,
        rl: &Loop,
        cl: &Loop,
        dst: &Access,
        src: &Access,
        (rs, re): (TokenStream, TokenStream),
        (cs, ce): (TokenStream, TokenStream),
    ) -> Result<TokenStream, EmitError> {
        self.consts.borrow_mut().insert("VEC");
        *self.unsafe_used.borrow_mut() = true;
        let (r, c) = (rl.id.0, cl.id.0);
        let (ri, ci) = (ident(&format!("i{r}")), ident(&format!("i{c}")));
        let (rows, cols) = (ident(&format!("i{r}_rows")), ident(&format!("i{c}_cols")));
        let pointer = |a: &Access, write: bool| {
            let x = &self.tensors[a.tensor.0];
            let base =
                if write || (self.threaded && self.tensor_kind(a.tensor) != TensorKind::Input) {
                    quote!(#x.as_mut_ptr())
                } else {
                    quote!(#x.as_ptr())
                };
            let at = self.offset_unchecked(a)?;
            Ok::<_, EmitError>(quote!(#base.add(#at)))
        };
        let (to, from) = (pointer(dst, true)?, pointer(src, false)?);
        let stride = |a: &Access, l: usize| match crate::loops::analysis::unit_axis(a, l) {
            Some(axis) => self.row_stride(a.tensor, axis),
            None => Err(self.unsupported("a transposed copy's stride")),
        };
        let (to_stride, from_stride) = (stride(dst, r)?, stride(src, c)?);
        let f = self.need(Helper::Transpose(self.is32));
        Ok(quote! {
            let (#ri, #ci) = (#rs, #cs);
            let (#rows, #cols) = ((#re - #ri) as usize, (#ce - #ci) as usize);
            #f(#from, #from_stride, #to, #to_stride, #rows, #cols, VEC);
        })
    }

    /// How many elements apart two neighbours along `axis` of tensor `t` are.
    fn row_stride(&self, t: TensorId, axis: usize) -> Result<TokenStream, EmitError> {
        let later = &self.p.tensors[t.0].shape[axis + 1..];
        let product = later
            .iter()
            .cloned()
            .reduce(|a, b| a * b)
            .unwrap_or(Expr::Int(1))
            .simplify();
        let (ts, prec) = self.idx(&product)?;
        let ts = paren(ts, prec, Prec::Cast);
        Ok(quote!(#ts as usize))
    }

    /// `loops` with the first one running over `start..end`.
    fn nest_in(
        &self,
        loops: &[Loop],
        start: TokenStream,
        end: TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let Some((l, inner)) = loops.split_first() else {
            return Ok(TokenStream::new());
        };
        let used = uses_index(loops, l.id.0);
        let i = ident(&format!("{}i{}", if used { "" } else { "_" }, l.id.0));
        if self.scheduled && self.is32 && inner.is_empty() && elementwise_math(l) {
            return self.chunked(l, &i, start, end);
        }
        let carried = l.carried.iter().map(|c| self.carried(c));
        let body = self.nest(inner)?;
        let stmts = self.stmts(&l.stmts)?;
        if let (true, true, Some(a)) = (self.scheduled, inner.is_empty(), self.line_access(l, true))
        {
            // Two runs of the loop, split where the store starts a cache line, so
            // that the second's vector stores never straddle two lines (the first
            // is empty when the buffer is aligned; a column sum on a `Vec` went from
            // 0.19 to 0.15 ms, and an aligned one stayed at 0.16). The body is
            // written twice on purpose: one loop over both ranges (`for run in
            // [start..first, first..end]`) made `softmax_4096x1024` 24% slower
            // (`uop bench --backend rust`, AVX2, see `docs/decisions.md`).
            let n = l.id.0;
            let first = ident(&format!("i{n}_first"));
            let first_line = self.first_on_line(&first, &a, &i, &start, &end)?;
            let carried: Vec<_> = carried.collect();
            return Ok(quote! {
                #first_line
                for #i in #start..#first {
                    #(#carried)*
                    #stmts
                }
                for #i in #first..#end {
                    #(#carried)*
                    #stmts
                }
            });
        }
        Ok(quote! {
            for #i in #start..#end {
                #(#carried)*
                #body
                #stmts
            }
        })
    }

    /// An element-wise innermost loop (one store of a math-heavy value, see
    /// [`elementwise_math`]) over `start..end` in chunks of `LANES` iterations
    /// (four vectors), starting where the store starts a cache line: each chunk's
    /// values are computed into a local array, then stored; the iterations before
    /// the first chunk and after the last run plainly. The stores go through a raw
    /// pointer (`Shared`) that LLVM cannot tell apart from the inputs, so in a
    /// plain or merely unrolled loop each vector's loads wait for the previous
    /// vector's store, and one long `exp` chain runs at a time; computing the
    /// chunk first lets four chains overlap (gelu 4M on one Zen 5 core: 1.23 ms
    /// plain, 1.03 buffered). Each element gets the value it got before (the
    /// value does not read the stored tensor).
    fn chunked(
        &self,
        l: &Loop,
        i: &Ident,
        start: TokenStream,
        end: TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let [Stmt::Store { access, value }] = l.stmts.as_slice() else {
            return Err(self.unsupported("a chunked loop with other than one store"));
        };
        self.consts.borrow_mut().insert("LANES");
        let n = l.id.0;
        let local = |what: &str| ident(&format!("i{n}_{what}"));
        let (lo, hi, main, chunk) = (local("start"), local("end"), local("main"), local("chunk"));
        let computed = self.float(self.value(value)?, Prec::Lowest, false);
        let put = self.store_value(access, None, quote!(value))?;
        // Each half numbers its lanes only if it uses the index.
        let in_value = crate::loops::analysis::value_mentions(value, n);
        let in_access = crate::loops::analysis::access_mentions(access, n);
        let lanes = |used: bool, all: TokenStream, plain: TokenStream| {
            if used {
                (
                    quote!((lane, value) in #all.enumerate()),
                    quote!(let #i = #chunk + lane as i64;),
                )
            } else {
                (quote!(value in #plain), TokenStream::new())
            }
        };
        let (compute_over, bind_value) =
            lanes(in_value, quote!(values.iter_mut()), quote!(&mut values));
        let (store_over, bind_access) =
            lanes(in_access, quote!(values.into_iter()), quote!(values));
        let plain = self.stmts(&l.stmts)?;
        let zero = lit(&format!("0.0_{}", self.float));
        let first = local("first");
        let first_line = self.first_on_line(&first, access, i, &quote!(#lo), &quote!(#hi))?;
        Ok(quote! {
            let (#lo, #hi) = (#start, #end);
            #first_line
            let #main = #first + (#hi - #first) / LANES as i64 * LANES as i64;
            for #chunk in (#first..#main).step_by(LANES) {
                let mut values = [#zero; LANES];
                for #compute_over {
                    #bind_value
                    *value = #computed;
                }
                for #store_over {
                    #bind_access
                    #put
                }
            }
            for #i in (#lo..#first).chain(#main..#hi) {
                #plain
            }
        })
    }

    /// A split reduction over `range` (else the loop's own): `LANES` partial
    /// results per variable the loop updates, combined in order after the whole
    /// chunks; the last iterations run plainly.
    fn split(
        &self,
        l: &Loop,
        range: Option<(TokenStream, TokenStream)>,
    ) -> Result<TokenStream, EmitError> {
        self.consts.borrow_mut().insert("LANES");
        let ranged = range.is_some();
        let (start, end) = match range {
            Some(r) => r,
            None => self.range(l)?,
        };
        let shared = self
            .share
            .borrow()
            .as_ref()
            .is_some_and(|(n, ..)| *n == l.id.0);
        let main_value = if l.start == Expr::Int(0) && !ranged && !shared {
            let (e, ep) = self.idx(&l.end)?;
            let end = paren(e, ep, Prec::Product);
            quote!(#end / LANES as i64 * LANES as i64)
        } else {
            quote!(#start + (#end - #start) / LANES as i64 * LANES as i64)
        };
        let n = l.id.0;
        let (i, chunk, main) = (
            ident(&format!("i{n}")),
            ident(&format!("i{n}_chunk")),
            ident(&format!("i{n}_main")),
        );
        let mut vars: Vec<Accum> = Vec::new();
        let mut ids = Vec::new();
        for s in &l.stmts {
            if let Stmt::Update { var, op, .. } = s
                && !ids.contains(var)
            {
                ids.push(*var);
                vars.push(*op);
            }
        }
        let mut setup = Vec::new();
        let mut load = Vec::new();
        let mut save = Vec::new();
        let mut fold = Vec::new();
        let mut combine = Vec::new();
        for (var, op) in ids.iter().zip(&vars) {
            let p = self.partials(
                *var,
                *op,
                "lanes",
                |init| quote!([#init; LANES]),
                quote!([lane]),
            );
            let lanes = ident(&format!("v{}_lanes", var.0));
            let (v, get, put) = (&p.var, &p.load, &p.save);
            let upper = self.update(v, *op, quote!(#lanes[lane + half]));
            fold.push(quote!(#get #upper #put));
            combine.push(self.update(v, *op, quote!(#lanes[0])));
            setup.push(p.declare);
            load.push(p.load);
            save.push(p.save);
        }
        let carried: Vec<_> = l.carried.iter().map(|c| self.carried(c)).collect();
        let used = uses_index(std::slice::from_ref(l), n);
        let lane_index = used.then(|| quote!(let #i = #chunk + lane as i64;));
        let chunk = if used {
            chunk
        } else {
            ident(&format!("_i{n}_chunk"))
        };
        let tail_i = if used {
            i.clone()
        } else {
            ident(&format!("_i{n}"))
        };
        let lane_body = self.stmts(&l.stmts)?;
        let tail = self.stmts(&l.stmts)?;
        let lane_step = quote! {
            #(#load)*
            #(#carried)*
            #lane_body
            #(#save)*
        };
        // A piece of a long reduction starts its whole chunks where its first input
        // starts a cache line (see `realigned_chunks`); a short one, such as a row
        // of a softmax, would pay more for that than it gains.
        let chunks = match self.line_access(l, false).filter(|_| ranged) {
            Some(a) => self.realigned_chunks(l, &a, &ids, &lane_step, &start)?,
            None => quote! {
                for #chunk in (#start..#main).step_by(LANES) {
                    for lane in 0..LANES {
                        #lane_index
                        #lane_step
                    }
                }
            },
        };
        Ok(quote! {
            let #main = #main_value;
            #(#setup)*
            #chunks
            // The upper half of the partial results folded onto the lower one until
            // one is left: a fixed order, in vector operations.
            let mut half = LANES / 2;
            while half > 0 {
                for lane in 0..half {
                    #(#fold)*
                }
                half /= 2;
            }
            #(#combine)*
            for #tail_i in #main..#end {
                #(#carried)*
                #tail
            }
        })
    }

    /// The whole chunks of a split loop (its lane body `lane_step`, the partial
    /// results of `vars`) moved to start where `a`'s element starts a cache line,
    /// so that no vector load of `a` straddles two lines, with every lane adding
    /// the same elements in the same order as chunks from `start` would: the
    /// iterations before the first whole chunk go to the last lanes, those after
    /// the last one to the first, and the partial results are rotated back into
    /// place afterwards. The result does not depend on where the buffer starts.
    /// A 64 MB sum from a buffer 16 bytes off a line, standalone: 1.6 → 1.2 ms.
    fn realigned_chunks(
        &self,
        l: &Loop,
        a: &Access,
        vars: &[VarId],
        lane_step: &TokenStream,
        start: &TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let n = l.id.0;
        let local = |what: &str| ident(&format!("i{n}_{what}"));
        let (i, chunk, main) = (ident(&format!("i{n}")), local("chunk"), local("main"));
        let (first, last) = (local("first"), local("last"));
        let first_line = self.first_on_line(&first, a, &i, start, &quote!(#main))?;
        let rotate = self.need(Helper::RotatedRight);
        let lanes = vars.iter().map(|v| ident(&format!("v{}_lanes", v.0)));
        Ok(quote! {
            #first_line
            let #last = #first + (#main - #first) / LANES as i64 * LANES as i64;
            for #i in #start..#first {
                let lane = LANES - (#first - #i) as usize;
                #lane_step
            }
            for #chunk in (#first..#last).step_by(LANES) {
                for lane in 0..LANES {
                    let #i = #chunk + lane as i64;
                    #lane_step
                }
            }
            for #i in #last..#main {
                let lane = (#i - #last) as usize;
                #lane_step
            }
            #(#lanes = #rotate(#lanes, (#first - #start) as usize);)*
        })
    }

    /// The first access of `l`'s body that is unchecked, has unit stride along `l`
    /// and is a store (`write`) or a load of an input: where its vector stores go,
    /// or what a split loop's vectors read. `None` if there is none.
    fn line_access(&self, l: &Loop, write: bool) -> Option<Access> {
        let n = l.id.0;
        let mut found = None;
        for s in &l.stmts {
            crate::loops::analysis::walk::stmt_accesses(s, &mut |a, is_write| {
                let wanted = if write {
                    is_write
                } else {
                    !is_write && self.tensor_kind(a.tensor) == TensorKind::Input
                };
                if found.is_none()
                    && wanted
                    && !a.checked
                    && crate::loops::analysis::stride::stride(a, n)
                        == crate::loops::analysis::stride::Stride::Unit
                {
                    found = Some(a.clone());
                }
            });
        }
        found
    }

    /// `let {first} = ..;`: the first iteration from `start` (at most `end`) at which
    /// `a`'s element starts a cache line, after binding the loop index `i` to
    /// `start` for the offset (the loops that follow shadow it).
    fn first_on_line(
        &self,
        first: &Ident,
        a: &Access,
        i: &Ident,
        start: &TokenStream,
        end: &TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let f = self.need(Helper::LinePhase);
        let t = &self.tensors[a.tensor.0];
        let at = self.offset_unchecked(a)?;
        Ok(quote! {
            let #i = #start;
            let #first = (#i + #f(#t.as_ptr(), #at)).min(#end);
        })
    }

    /// A carried variable kept as an array of partial results, `v{n}_{suffix}`
    /// (`array(identity)` gives its initial value), one cell per `index`.
    fn partials(
        &self,
        var: VarId,
        op: Accum,
        suffix: &str,
        array: impl Fn(&TokenStream) -> TokenStream,
        index: TokenStream,
    ) -> Partials {
        let v = ident(&format!("v{}", var.0));
        let name = ident(&format!("v{}_{suffix}", var.0));
        let init = array(&self.float_lit(op.identity(), true).ts);
        let cell = quote!(#name #index);
        Partials {
            declare: quote!(let mut #name = #init;),
            load: quote!(let mut #v = #cell;),
            save: quote!(#cell = #v;),
            var: v,
            cell,
        }
    }

    /// A register tile over `loops = [R, C, K…]`: `MR` rows of `R` by `NR` columns of
    /// `C`, the carried variables of `C` kept as an `MR × NR` array while the
    /// reduction loops `K…` run (blocked by `KC` when `block_reduction`). The last
    /// tile of a row or column range moves back to end where the range ends and
    /// writes only the cells no earlier tile wrote, so no iteration runs untiled
    /// unless the whole range is smaller than a tile.
    fn tile(
        &self,
        loops: &[Loop],
        block_reduction: bool,
        range: Option<(TokenStream, TokenStream)>,
    ) -> Result<TokenStream, EmitError> {
        let ranged = range.is_some();
        let [rl, cl, reduce @ ..] = loops else {
            return Err(self.unsupported("a tile without a row and a column loop"));
        };
        let Some(first) = reduce.first() else {
            return Err(self.unsupported("a tile without a reduction loop"));
        };
        {
            let mut consts = self.consts.borrow_mut();
            consts.insert("MR");
            consts.insert("NR");
            if block_reduction {
                consts.insert("KC");
            }
        }
        let (rs, re) = match range {
            Some(r) => r,
            None => self.range(rl)?,
        };
        let (cs, ce) = self.range(cl)?;
        let (r, c) = (rl.id.0, cl.id.0);
        let local = |n: usize, what: &str| ident(&format!("i{n}_{what}"));
        let (ri, ci) = (ident(&format!("i{r}")), ident(&format!("i{c}")));
        let (r_start, c_start) = (local(r, "start"), local(c, "start"));
        let (r_tile, c_tile) = (local(r, "tile"), local(c, "tile"));
        let mut setup = Vec::new();
        let mut load = Vec::new();
        let mut save = Vec::new();
        let mut result = Vec::new();
        for c in &cl.carried {
            let p = self.partials(
                c.var,
                c.op,
                "tile",
                |init| quote!([[#init; NR]; MR]),
                quote!([row][col]),
            );
            setup.push(p.declare);
            load.push(p.load);
            save.push(p.save);
            let (v, cell) = (p.var, p.cell);
            result.push(quote!(let #v = #cell;));
        }
        let stores = self.stmts(&cl.stmts)?;
        let (ks, kend) = self.range(first)?;
        let (k_block, k_end) = (local(first.id.0, "block"), local(first.id.0, "end"));
        let finish = if block_reduction {
            let added: Vec<Stmt> = cl
                .stmts
                .iter()
                .map(|s| match s {
                    Stmt::Store { access, value } => Stmt::Accumulate {
                        access: access.clone(),
                        op: Accum::Add,
                        value: value.clone(),
                    },
                    other => other.clone(),
                })
                .collect();
            let accumulate = self.stmts(&added)?;
            quote!(if #k_block == #ks { #stores } else { #accumulate })
        } else {
            stores
        };
        // The loads every row reads alike are copied once per column tile into a
        // contiguous panel that all row tiles then read in order.
        let packed = if block_reduction {
            self.packable(rl, cl, reduce)
        } else {
            Vec::new()
        };
        let (k_start, k_stop) = if block_reduction {
            (quote!(#k_block), quote!(#k_end))
        } else {
            (ks.clone(), kend.clone())
        };
        let (pack, reduce) = if packed.is_empty() {
            (TokenStream::new(), reduce.to_vec())
        } else {
            self.pack(cl, reduce, &packed, k_start.clone(), k_stop.clone())?
        };
        let reduce = reduce.as_slice();
        let at = local(c, "at");
        let step = match packed.len() {
            0 => TokenStream::new(),
            1 => quote!(#at += NR as i64;),
            p => quote!(#at += (#p * NR) as i64;),
        };
        let start_at = (!packed.is_empty()).then(|| quote!(let mut #at = 0_i64;));
        let body_ri = uses_index(reduce, r).then(|| quote!(let #ri = #r_tile + row as i64;));
        let body_ci = uses_index(reduce, c).then(|| quote!(let #ci = #c_tile + col as i64;));
        let rows_cols = |body: TokenStream| {
            quote! {
                for row in 0..MR {
                    #body_ri
                    for col in 0..NR {
                        #body_ci
                        #(#load)*
                        #body
                        #(#save)*
                    }
                }
                #step
            }
        };
        let reduction = self.tile_reduction(reduce, &rows_cols, k_start, k_stop);
        self.packed.borrow_mut().clear();
        let reduction = reduction?;
        // Columns outside rows: a block of the reduction's column panel stays in the
        // cache while every row tile passes over it.
        let tiles = quote! {
            for #c_start in (#cs..#ce).step_by(NR) {
                // The last tile moves back to fit and writes only the cells it adds.
                let #c_tile = #c_start.min(#ce - NR as i64);
                #pack
                for #r_start in (#rs..#re).step_by(MR) {
                    let #r_tile = #r_start.min(#re - MR as i64);
                    #(#setup)*
                    #start_at
                    #reduction
                    for row in 0..MR {
                        let #ri = #r_tile + row as i64;
                        if #ri < #r_start {
                            continue;
                        }
                        for col in 0..NR {
                            let #ci = #c_tile + col as i64;
                            if #ci < #c_start {
                                continue;
                            }
                            #(#result)*
                            #finish
                        }
                    }
                }
            }
        };
        let tiles = if block_reduction {
            quote! {
                for #k_block in (#ks..#kend).step_by(KC) {
                    let #k_end = (#k_block + KC as i64).min(#kend);
                    #tiles
                }
            }
        } else {
            tiles
        };
        let plain = self.nest_in(loops, rs.clone(), re.clone())?;
        let span = |l: &Loop, start: &TokenStream, end: &TokenStream| {
            if l.start == Expr::Int(0) && !(ranged && l.id == rl.id) {
                end.clone()
            } else {
                quote!((#end - #start))
            }
        };
        let (rows, cols) = (span(rl, &rs, &re), span(cl, &cs, &ce));
        Ok(quote! {
            if #rows >= MR as i64 && #cols >= NR as i64 {
                #tiles
            } else {
                #plain
            }
        })
    }

    /// The reduction loops of a tile, the outermost over `start..end`, with the
    /// innermost body run for every row and column by `rows_cols`.
    fn tile_reduction(
        &self,
        reduce: &[Loop],
        rows_cols: &dyn Fn(TokenStream) -> TokenStream,
        start: TokenStream,
        end: TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let Some((l, inner)) = reduce.split_first() else {
            return Ok(TokenStream::new());
        };
        let used = uses_index(reduce, l.id.0);
        let i = ident(&format!("{}i{}", if used { "" } else { "_" }, l.id.0));
        let body = if inner.is_empty() {
            let stmts = self.stmts(&l.stmts);
            rows_cols(stmts?)
        } else {
            let (s, e) = self.range(&inner[0])?;
            self.tile_reduction(inner, rows_cols, s, e)?
        };
        Ok(quote! {
            for #i in #start..#end {
                #body
            }
        })
    }

    /// The loads of a tile's reduction worth packing: float loads that depend on the
    /// column but not on the row (matmul's `b[k, j]`), so every row tile reads the
    /// same values. Not a sliding window, whose column subscript also moves with the
    /// reduction (conv's `x_pad[c, h + kh, w + kw]`): its panel would hold each value
    /// several times, and measured no faster than reading the rows in place. None
    /// when a reduction loop's range depends on a loop index: the kernel sizes the
    /// panel before any loop runs, from dims and params alone.
    fn packable(&self, rl: &Loop, cl: &Loop, reduce: &[Loop]) -> Vec<Value> {
        let Some(innermost) = reduce.last() else {
            return Vec::new();
        };
        if reduce
            .iter()
            .any(|l| !l.start.indices().is_empty() || !l.end.indices().is_empty())
        {
            return Vec::new();
        }
        let mut out: Vec<Value> = Vec::new();
        let mut visit = |v: &Value| {
            if let Value::Load { access, .. } = v
                && self.p.tensors[access.tensor.0].dtype != DType::I32
                && access_mentions(access, cl.id.0)
                && !access_mentions(access, rl.id.0)
                && !sliding(access, cl, reduce)
                && !out.contains(v)
            {
                out.push(v.clone());
            }
        };
        for s in &innermost.stmts {
            let (Stmt::Store { value, .. }
            | Stmt::Accumulate { value, .. }
            | Stmt::Update { value, .. }) = s;
            visit_top_loads(value, &mut visit);
        }
        out
    }

    /// Copies the `packed` loads of a column tile into its panel `i{c}_panel`, `NR`
    /// cells per load and reduction iteration, in the order the reduction runs (its
    /// outermost loop over `start..end`). Returns that code and the reduction loops
    /// with each packed load replaced by a marker, which [`Gen::value`] emits as a
    /// read of its panel cell (`self.packed`, set here until the caller clears it).
    fn pack(
        &self,
        cl: &Loop,
        reduce: &[Loop],
        packed: &[Value],
        start: TokenStream,
        end: TokenStream,
    ) -> Result<(TokenStream, Vec<Loop>), EmitError> {
        let c = cl.id.0;
        let local = |what: &str| ident(&format!("i{c}_{what}"));
        let (panel, view, at) = (local("panel"), local("packed"), local("at"));
        let (ci, c_tile) = (ident(&format!("i{c}")), local("tile"));
        let t = &self.float;
        // The loops of the copy use only the indices the packed loads use.
        let copies = packed
            .iter()
            .enumerate()
            .map(|(j, v)| {
                let x = self.value(v)?;
                let x = self.float(x, Prec::Lowest, false);
                let cell = panel_cell(&at, j);
                Ok(quote!(*#panel.get_unchecked_mut(#cell) = #x;))
            })
            .collect::<Result<Vec<_>, EmitError>>()?;
        let p = packed.len();
        let step = if p == 1 {
            quote!(NR as i64)
        } else {
            quote!((#p * NR) as i64)
        };
        let mut copy = quote! {
            for col in 0..NR {
                let #ci = #c_tile + col as i64;
                #(#copies)*
            }
            #at += #step;
        };
        let mut trips = Vec::new();
        for (i, l) in reduce.iter().enumerate().rev() {
            let (s, e) = self.range(l)?;
            trips.push(if l.start == Expr::Int(0) {
                e.clone()
            } else {
                quote!((#e - #s))
            });
            let (s, e) = if i == 0 {
                (start.clone(), end.clone())
            } else {
                (s, e)
            };
            let used = packed.iter().any(|v| value_mentions(v, l.id.0));
            let index = ident(&format!("{}i{}", if used { "" } else { "_" }, l.id.0));
            copy = quote!(for #index in #s..#e { #copy });
        }
        trips.reverse();
        let mut panels = self.panels.borrow_mut();
        if !panels.iter().any(|q| q.name == panel) {
            panels.push(Panel {
                name: panel.clone(),
                trips,
                loads: p,
            });
        }
        let mut markers = Vec::new();
        {
            let mut map = self.packed.borrow_mut();
            for (j, v) in packed.iter().enumerate() {
                let marker = Value::Param(format!("{panel}[{j}]"));
                let cell = panel_cell(&at, j);
                map.push((marker.clone(), quote!(*#view.get_unchecked(#cell))));
                markers.push((v.clone(), marker));
            }
        }
        let reduce = reduce
            .iter()
            .map(|l| {
                let mut l = l.clone();
                for s in &mut l.stmts {
                    let (Stmt::Store { value, .. }
                    | Stmt::Accumulate { value, .. }
                    | Stmt::Update { value, .. }) = s;
                    replace_loads(value, &markers);
                }
                l
            })
            .collect();
        let code = quote! {
            let mut #at = 0_i64;
            #copy
            let #view: &[#t] = #panel;
        };
        Ok((code, reduce))
    }

    // ------------------------------------------------------------ items

    fn take_used(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.used.borrow_mut())
    }

    /// `let [n, k] = dims("kernel", "x", x_shape)?;` for every input, with `_` for
    /// dims `wanted` does not contain, plus the conflict and fixed-size checks when
    /// `checks` is set.
    fn bind_dims(
        &self,
        scope: &mut Scope,
        wanted: &BTreeSet<String>,
        checks: bool,
    ) -> Result<TokenStream, EmitError> {
        let kernel = self.kernel_lit();
        let mut out = TokenStream::new();
        let mut bound: HashMap<&str, &str> = HashMap::new();
        let mut wanted = wanted.clone();
        if checks {
            // A dim another input also names is compared, so it is always bound.
            let mut seen = BTreeSet::new();
            for spec in &self.sig.inputs {
                for d in &spec.shape {
                    if let Expr::Name(n) = d
                        && !seen.insert(n.clone())
                    {
                        wanted.insert(n.clone());
                    }
                }
            }
        }
        for (spec, t) in self.sig.inputs.iter().zip(&self.p.inputs) {
            let input_name = spec.name.as_str();
            let mut pats = Vec::new();
            let mut tests = Vec::new();
            for (axis, d) in spec.shape.iter().enumerate() {
                match d {
                    Expr::Name(n) if !bound.contains_key(n.as_str()) => {
                        bound.insert(n, input_name);
                        if wanted.contains(n) {
                            let id = &self.dims[n];
                            pats.push(quote!(#id));
                        } else {
                            pats.push(quote!(_));
                        }
                    }
                    Expr::Name(n) if checks => {
                        let id = &self.dims[n];
                        let other = ident(&scope.fresh(&format!("{n}_{input_name}")));
                        let first_input = bound[n.as_str()];
                        let n = n.as_str();
                        tests.push(quote! {
                            if #other != #id {
                                return Err(KernelError::DimConflict {
                                    kernel: #kernel,
                                    dim: #n,
                                    first_input: #first_input,
                                    first: #id as usize,
                                    second_input: #input_name,
                                    second: #other as usize,
                                });
                            }
                        });
                        pats.push(quote!(#other));
                    }
                    Expr::Int(v) if checks => {
                        let got = ident(&scope.fresh(&format!("{input_name}_{axis}")));
                        let expected = lit(&v.to_string());
                        let axis = lit(&axis.to_string());
                        tests.push(quote! {
                            if #got != #expected {
                                return Err(KernelError::FixedSize {
                                    kernel: #kernel,
                                    input: #input_name,
                                    axis: #axis,
                                    expected: #expected,
                                    found: #got as usize,
                                });
                            }
                        });
                        pats.push(quote!(#got));
                    }
                    _ => pats.push(quote!(_)),
                }
            }
            // Checking that every size fits in i64 is worth a line even when no dim is used.
            let named = pats.iter().any(|p| p.to_string() != "_");
            if named || (checks && !spec.shape.is_empty()) {
                let shape_arg = self.shape_arg(*t);
                let f = self.need(Helper::Dims);
                let pat = if named {
                    quote!(let [#(#pats),*] =)
                } else {
                    quote!()
                };
                out.extend(quote! {
                    #pat #f(#kernel, #input_name, #shape_arg)?;
                });
            }
            out.extend(tests);
        }
        Ok(out)
    }

    fn shape_arg(&self, t: TensorId) -> Ident {
        // Names come from the scope: `{tensor ident}_shape`, which `items` reserved.
        ident(&format!("{}_shape", self.tensors[t.0]))
    }

    fn items(&self, k: &KernelSource, scope: &mut Scope) -> Result<TokenStream, EmitError> {
        let (p, sig) = (self.p, &self.sig);
        let kernel = self.kernel_lit();
        let t = &self.float;
        for (spec, input) in sig.inputs.iter().zip(&p.inputs) {
            let name = format!("{}_shape", self.tensors[input.0]);
            if scope.fresh(&name) != name {
                return Err(self.unsupported(format!(
                    "`{name}` names both a tensor and the shape of `{}`",
                    spec.name
                )));
            }
        }
        let shapes_fn = ident(&format!("{}_shapes", k.name));
        let sizes_fn = ident(&format!("{}_sizes", k.name));
        let kernel_fn = ident(&k.name);
        let shapes_ty = ident(&format!("{}Shapes", camel(&k.name)));
        let elem = |dtype: DType| match dtype {
            DType::I32 => quote!(i32),
            _ => quote!(#t),
        };

        // ---- body first: it decides which dims the kernel binds.
        let _ = self.take_used();
        let mut body = TokenStream::new();
        for group in self.groups() {
            body.extend(self.group(group)?);
        }
        let mut temps = TokenStream::new();
        // Row buffers the kernel allocates (per thread) and the length of each.
        let mut row_lens = Vec::new();
        for (i, decl) in p.tensors.iter().enumerate() {
            if decl.kind != TensorKind::Temp {
                continue;
            }
            let id = &self.tensors[i];
            let dims = decl
                .shape
                .iter()
                .map(|e| self.idx(e).map(|x| x.0))
                .collect::<Result<Vec<_>, _>>()?;
            let name = decl.name.as_str();
            if let Some(axis) = self.row_local(TensorId(i)) {
                // The loops keep one row; its shape and the whole one must be valid.
                let f = self.need(Helper::BufferLen);
                temps.extend(quote!(#f(#kernel, #name, &[#(#dims),*])?;));
                if row_literal_len(decl).is_none() {
                    let mut row = dims.clone();
                    row[axis] = quote!(1);
                    let len = ident(&scope.fresh(&format!("{id}_row")));
                    temps.extend(quote!(let #len = #f(#kernel, #name, &[#(#row),*])?;));
                    row_lens.push((TensorId(i), len));
                }
                continue;
            }
            let e = elem(decl.dtype);
            // Scheduled kernels' temporaries start a cache line (their vectors
            // then never straddle two); unscheduled ones have no `unsafe` at all.
            let buffer = if self.scheduled {
                let f = self.need(Helper::ZeroedLines);
                let lines = self.need(Helper::Lines);
                quote!(let mut #id: #lines<#e> = #f(#kernel, #name, &[#(#dims),*])?;)
            } else {
                let f = self.need(Helper::Zeroed);
                quote!(let mut #id: Vec<#e> = #f(#kernel, #name, &[#(#dims),*])?;)
            };
            temps.extend(buffer);
        }
        temps.extend(self.piece_buffers()?);
        let body_used = self.take_used();
        let (per_cpu, body) = if self.scheduled && !body.is_empty() {
            self.per_cpu(k, body, &body_used, &row_lens)?
        } else {
            (TokenStream::new(), body)
        };

        // ---- the sizes function
        let mut sizes_item = TokenStream::new();
        let mut sizes_args = Vec::new();
        if !self.sizes.is_empty() {
            let exprs = self
                .sizes
                .iter()
                .map(|e| self.checked_idx(e))
                .collect::<Result<Vec<_>, _>>()?;
            let used = self.take_used();
            let mut params = Vec::new();
            let mut docs = Vec::new();
            for e in &self.sizes {
                docs.push(format!(" - `{e}`"));
            }
            for name in self.dim_order() {
                if used.contains(&name) {
                    sizes_args.push(self.dims[&name].clone());
                }
            }
            for pn in &sig.params {
                if used.contains(&format!("${pn}")) {
                    sizes_args.push(self.params[pn].clone());
                }
            }
            params.extend(sizes_args.iter().map(|a| quote!(#a: i64)));
            let n = lit(&self.sizes.len().to_string());
            let doc = format!(
                " The sizes `{}` evaluates from its dims and parameters before it runs, \
                 or `None` when one overflows or divides by zero:",
                k.name
            );
            sizes_item = quote! {
                #[doc = #doc]
                #(#[doc = #docs])*
                fn #sizes_fn(#(#params),*) -> Option<[i64; #n]> {
                    Some([#(#exprs),*])
                }
            };
        }

        // ---- the shapes function
        let mut shape_fields = Vec::new();
        let mut shape_values = Vec::new();
        let mut len_methods = Vec::new();
        let mut element_checks = Vec::new();
        for (spec, o) in sig.outputs.iter().zip(&p.outputs) {
            let f = &self.tensors[o.0];
            let rank = lit(&spec.rank().to_string());
            let doc = format!(
                " Shape of the output `{}`: `{}`.",
                spec.name,
                list(&spec.shape)
            );
            shape_fields.push(quote!(#[doc = #doc] pub #f: [usize; #rank]));
            let vals = spec
                .shape
                .iter()
                .map(|e| self.entry_usize(e))
                .collect::<Result<Vec<_>, _>>()?;
            shape_values.push(quote!(#f: [#(#vals),*]));
            let check = self.need(Helper::CheckElements);
            let name = spec.name.as_str();
            element_checks.push(quote!(#check(#kernel, #name, &shapes.#f)?;));
            let m = ident(&format!("{f}_len"));
            let doc = format!(
                " Elements of `{}`: the length `{}` requires of that buffer.",
                spec.name, k.name
            );
            len_methods.push(quote! {
                #[doc = #doc]
                pub fn #m(&self) -> usize {
                    self.#f.iter().product()
                }
            });
        }
        let mut asserts = Vec::new();
        for (l, r) in &sig.assertions {
            let (lv, rv) = (self.entry_value(l)?, self.entry_value(r)?);
            let (ls, rs) = (l.to_string(), r.to_string());
            asserts.push(quote! {
                if #lv != #rv {
                    return Err(KernelError::Assertion {
                        kernel: #kernel,
                        left: #ls,
                        right: #rs,
                        left_value: #lv,
                        right_value: #rv,
                    });
                }
            });
        }
        let sizes_call = if self.sizes.is_empty() {
            quote!()
        } else {
            let uses = shape_values
                .iter()
                .chain(&asserts)
                .any(|ts| ts.to_string().contains("sizes ["));
            let call = quote!(#sizes_fn(#(#sizes_args),*).ok_or(KernelError::Overflow { kernel: #kernel })?);
            if uses {
                quote!(let sizes = #call;)
            } else {
                quote!(#call;)
            }
        };
        let shapes_used = {
            let mut u = self.take_used();
            u.extend(sizes_args.iter().filter_map(|a| self.name_of(a)));
            u
        };
        let mut shapes_scope = scope.clone();
        let shapes_binds = self.bind_dims(&mut shapes_scope, &shapes_used, true)?;
        let _ = self.take_used();

        // ---- signatures
        let mut shape_params = Vec::new();
        let mut buffer_params = Vec::new();
        let mut shape_args = Vec::new();
        let mut len_checks = Vec::new();
        for (spec, i) in sig.inputs.iter().zip(&p.inputs) {
            let (x, xs) = (&self.tensors[i.0], self.shape_arg(*i));
            let rank = lit(&spec.rank().to_string());
            let e = elem(spec.dtype);
            // A rank-0 input has nothing for its shapes function to check.
            let unused = ident(&format!("_{xs}"));
            let shape_param = if spec.shape.is_empty() { &unused } else { &xs };
            shape_params.push(quote!(#shape_param: [usize; #rank]));
            buffer_params.push(quote!(#x: &[#e], #xs: [usize; #rank]));
            shape_args.push(quote!(#xs));
            let f = self.need(Helper::CheckLen);
            let name = spec.name.as_str();
            len_checks.push(quote!(#f(#kernel, #name, #x.len(), &#xs)?;));
        }
        let mut param_params = Vec::new();
        let mut shapes_param_params = Vec::new();
        for pn in &sig.params {
            let id = &self.params[pn];
            param_params.push(quote!(#id: i64));
            let used = shapes_used.contains(&format!("${pn}"));
            let sid = if used {
                id.clone()
            } else {
                ident(&format!("_{id}"))
            };
            shapes_param_params.push(quote!(#sid: i64));
            shape_args.push(quote!(#id));
        }
        let mut out_params = Vec::new();
        let mut zero_fills = Vec::new();
        for (spec, o) in sig.outputs.iter().zip(&p.outputs) {
            let y = &self.tensors[o.0];
            let e = elem(spec.dtype);
            out_params.push(quote!(#y: &mut [#e]));
            let f = self.need(Helper::CheckLen);
            let name = spec.name.as_str();
            len_checks.push(quote!(#f(#kernel, #name, #y.len(), &shapes.#y)?;));
            if !crate::loops::analysis::fully_written_first(p, *o) {
                let zero = if spec.dtype == DType::I32 {
                    quote!(0)
                } else {
                    quote!(0.0)
                };
                zero_fills.push(quote!(#y.fill(#zero);));
            }
        }
        let mut kernel_scope = scope.clone();
        let kernel_binds = self.bind_dims(&mut kernel_scope, &body_used, false)?;

        // ---- docs
        let shapes_doc = format!(
            " Output shapes of [`{}`], computed by [`{}_shapes`] from the input shapes{}.",
            k.name,
            k.name,
            if sig.params.is_empty() {
                ""
            } else {
                " and parameters"
            }
        );
        let shapes_fn_doc = vec![
            format!(
                " The output shapes of [`{}`] for inputs of the given shapes{}: what to \
                 allocate before calling it.",
                k.name,
                if sig.params.is_empty() {
                    ""
                } else {
                    " and these parameters"
                }
            ),
            String::new(),
            " # Errors".into(),
            String::new(),
            format!(
                " [`KernelError`] when the shapes do not fit the contract documented on [`{}`].",
                k.name
            ),
        ];
        let kernel_doc = self.kernel_doc(k);
        let too_many = sig.inputs.len() * 2 + sig.params.len() + sig.outputs.len() > 7;
        let allow = if too_many {
            // The signature mirrors the program: a buffer and a shape per input, one
            // argument per parameter and output.
            quote!(#[allow(clippy::too_many_arguments)])
        } else {
            quote!()
        };
        let shapes_allow = if sig.inputs.len() + sig.params.len() > 7 {
            quote!(#[allow(clippy::too_many_arguments)])
        } else {
            quote!()
        };
        let mut fast_doc = Vec::new();
        if self.checks == Checks::Proven && body.to_string().contains("unsafe") {
            fast_doc.push(String::new());
            fast_doc.push(
                " `unsafe` blocks hold the loops whose accesses skip bounds checks: those \
                 the bounds pass proved in range for every size this function accepts, \
                 and those just checked by `offset`. Both rely on the buffer lengths \
                 checked above them."
                    .to_string(),
            );
        }
        // A crate may call only some of a file's kernels: an unused one is not worth
        // a warning there (and what the kernel calls is then not reported either).
        let unused_ok = quote!(#[allow(dead_code)]);
        Ok(quote! {
            #[doc = #shapes_doc]
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            #unused_ok
            pub struct #shapes_ty {
                #(#shape_fields,)*
            }

            #unused_ok
            impl #shapes_ty {
                #(#len_methods)*
            }

            #(#[doc = #shapes_fn_doc])*
            #shapes_allow
            #unused_ok
            pub fn #shapes_fn(#(#shape_params,)* #(#shapes_param_params),*) -> Result<#shapes_ty, KernelError> {
                #shapes_binds
                #sizes_call
                #(#asserts)*
                let shapes = #shapes_ty { #(#shape_values),* };
                #(#element_checks)*
                Ok(shapes)
            }

            #sizes_item

            #(#[doc = #kernel_doc])*
            #(#[doc = #fast_doc])*
            #allow
            #unused_ok
            pub fn #kernel_fn(#(#buffer_params,)* #(#param_params,)* #(#out_params),*) -> Result<(), KernelError> {
                let shapes = #shapes_fn(#(#shape_args),*)?;
                #(#len_checks)*
                #kernel_binds
                #(#zero_fills)*
                #temps
                #body
                Ok(())
            }

            #per_cpu
        })
    }

    /// The loops moved into `{name}_loops`, generic over the target constants, with
    /// one copy compiled for each x86-64 feature level: returns those items and the
    /// code that picks one at run time and calls it.
    fn per_cpu(
        &self,
        k: &KernelSource,
        body: TokenStream,
        used: &BTreeSet<String>,
        row_lens: &[(TensorId, Ident)],
    ) -> Result<(TokenStream, TokenStream), EmitError> {
        let p = self.p;
        let name = &k.name;
        let loops_fn = ident(&format!("{name}_loops"));
        let avx2_fn = ident(&format!("{name}_avx2"));
        let avx512_fn = ident(&format!("{name}_avx512"));
        let t = &self.float;
        let mut params = Vec::new();
        let mut args = Vec::new();
        let mut forward = Vec::new();
        // Threaded: every thread runs the loops on its part; what they write is
        // shared as `Shared` buffers, made once before the threads start.
        let mut share = Vec::new();
        let mut allocs = Vec::new();
        let shared = if self.threaded {
            let shared = self.need(Helper::Shared);
            let part = self.need(Helper::Part);
            params.push(quote!(part: #part<'_>));
            args.push(quote!(part));
            forward.push(quote!(part));
            Some(shared)
        } else {
            None
        };
        let touched = touched_tensors(p);
        let tensors = p.inputs.iter().chain(&p.outputs).copied().chain(
            (0..p.tensors.len()).map(TensorId).filter(|&t| {
                self.tensor_kind(t) == TensorKind::Temp && self.row_on_stack(t).is_none()
            }),
        );
        for tid in tensors {
            if !touched.contains(&tid) {
                continue;
            }
            let id = &self.tensors[tid.0];
            let (e, _) = self.elem_zero(tid);
            let row_len = row_lens.iter().find(|(t, _)| *t == tid).map(|(_, len)| len);
            match self.tensor_kind(tid) {
                TensorKind::Input => {
                    params.push(quote!(#id: &[#e]));
                    args.push(quote!(#id));
                }
                _ if row_len.is_some() => {
                    // Each thread its own row.
                    let lines = self.need(Helper::Lines);
                    allocs.push(quote!(let mut #id: #lines<#e> = #lines::zeroed(#row_len);));
                    params.push(quote!(#id: &mut [#e]));
                    args.push(quote!(&mut #id));
                }
                kind => {
                    let buffer = if kind == TensorKind::Temp {
                        quote!(&mut #id)
                    } else {
                        quote!(#id)
                    };
                    match &shared {
                        Some(sh) => {
                            params.push(quote!(#id: #sh<'_, #e>));
                            share.push(quote!(let #id = #sh::new(#buffer);));
                            args.push(quote!(#id));
                        }
                        None => {
                            params.push(quote!(#id: &mut [#e]));
                            args.push(buffer);
                        }
                    }
                }
            }
            forward.push(quote!(#id));
        }
        for d in self.dim_order() {
            if used.contains(&d) {
                let id = &self.dims[&d];
                params.push(quote!(#id: i64));
                args.push(quote!(#id));
                forward.push(quote!(#id));
            }
        }
        for pn in &p.params {
            if used.contains(&format!("${pn}")) {
                let id = &self.params[pn];
                params.push(quote!(#id: i64));
                args.push(quote!(#id));
                forward.push(quote!(#id));
            }
        }
        for pc in self.pieces.borrow().iter() {
            let n = pc.outer.id.0;
            if let Some(sh) = &shared {
                for c in &pc.vars {
                    let b = ident(&format!("v{}_pieces", c.var.0));
                    params.push(quote!(#b: #sh<'_, #t>));
                    share.push(quote!(let #b = #sh::new(&mut #b);));
                    args.push(quote!(#b));
                    forward.push(quote!(#b));
                }
            }
            for what in ["piece_len", "pieces"] {
                let id = ident(&format!("i{n}_{what}"));
                params.push(quote!(#id: i64));
                args.push(quote!(#id));
                forward.push(quote!(#id));
            }
        }
        // Per target: fused multiply-add, partial results of a split reduction,
        // register tile rows × columns, reduction block of a tile.
        let consts = self.consts.borrow().clone();
        let targets = [
            ("FMA", ["false", "true", "true"]),
            ("LANES", ["16", "32", "64"]),
            ("MR", ["4", "6", "4"]),
            ("NR", ["8", "16", "64"]),
            ("KC", ["256", "256", "1024"]),
            ("TB", ["16", "16", "16"]),
            ("VEC", ["16", "32", "64"]),
        ];
        // Each thread its own panel per packed tile, with room for the largest
        // `KC` × `NR` of any target.
        let widest = |c: &str| {
            targets
                .iter()
                .find(|(name, _)| *name == c)
                .map_or(1, |(_, v)| {
                    v.iter().filter_map(|x| x.parse().ok()).max().unwrap_or(1)
                })
        };
        for panel in self.panels.borrow().iter() {
            let name = &panel.name;
            let kc = lit(&widest("KC").to_string());
            let cells = lit(&(widest("NR") * panel.loads).to_string());
            let len = match panel.trips.as_slice() {
                [first, inner @ ..] if !inner.is_empty() => {
                    quote!((#first.min(#kc) #(* #inner)*).max(0))
                }
                trips => quote!(#(#trips)*.clamp(0, #kc)),
            };
            let lines = self.need(Helper::Lines);
            allocs.push(quote! {
                let mut #name: #lines<#t> = #lines::zeroed(#len as usize * #cells);
            });
            params.push(quote!(#name: &mut [#t]));
            args.push(quote!(&mut #name));
            forward.push(quote!(#name));
        }
        let mut generics = Vec::new();
        let mut values: [Vec<TokenStream>; 3] = Default::default();
        for (c, per_target) in targets {
            if !consts.contains(c) {
                continue;
            }
            let id = ident(c);
            generics.push(if c == "FMA" {
                quote!(const #id: bool)
            } else {
                quote!(const #id: usize)
            });
            for (v, value) in values.iter_mut().zip(per_target) {
                v.push(TokenStream::from_str(value).map_err(|e| self.unsupported(e.to_string()))?);
            }
        }
        let [generic, avx2, avx512] = &values;
        let turbofish = |v: &Vec<TokenStream>| {
            if v.is_empty() {
                quote!()
            } else {
                quote!(::<#(#v),*>)
            }
        };
        let (generic, avx2, avx512) = (turbofish(generic), turbofish(avx2), turbofish(avx512));
        let generics = if generics.is_empty() {
            quote!()
        } else {
            quote!(<#(#generics),*>)
        };
        let allow_ranges = if consts.iter().any(|c| matches!(*c, "LANES" | "MR")) {
            // Lanes and tile cells are indexed by their position on purpose.
            quote!(#[allow(clippy::needless_range_loop)])
        } else {
            quote!()
        };
        let allow_args = if params.len() > 7 {
            quote!(#[allow(clippy::too_many_arguments)])
        } else {
            quote!()
        };
        let loops_doc = format!(
            " The loops of [`{name}`], generic over the target: `FMA` (fused multiply-add \
             available), `LANES` (partial results of a split reduction, values per chunk of an element-wise math loop), `MR` × `NR` \
             (register tile), `KC` (reduction block of a tile), `TB` (cache block of \
             an element-wise nest) and `VEC` (bytes of a vector register), as far as it \
             uses them."
        );
        let safety = if self.panels.borrow().is_empty() {
            " Every buffer has the length its shape gives (checked by the kernel)."
        } else {
            " Every buffer has the length its shape gives (checked by the kernel), every \
             panel room for `KC` × `NR` cells per packed load and inner reduction \
             iteration."
        };
        let avx2_doc = format!(" [`{name}_loops`] compiled for x86-64 with AVX2 and FMA.");
        let avx512_doc = format!(" [`{name}_loops`] compiled for x86-64 with AVX-512.");
        let items = quote! {
            #[doc = #loops_doc]
            ///
            /// # Safety
            ///
            #[doc = #safety]
            #[inline(always)]
            #allow_ranges
            #allow_args
            unsafe fn #loops_fn #generics(#(#params),*) {
                #body
            }

            #[doc = #avx2_doc]
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            #allow_args
            unsafe fn #avx2_fn(#(#params),*) {
                unsafe { #loops_fn #avx2(#(#forward),*) }
            }

            #[doc = #avx512_doc]
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
            #allow_args
            unsafe fn #avx512_fn(#(#params),*) {
                unsafe { #loops_fn #avx512(#(#forward),*) }
            }
        };
        // Inside a thread team the copy returns from the team's closure.
        let done = if self.threaded {
            quote!(return;)
        } else {
            quote!(return Ok(());)
        };
        let level = self.need(Helper::CpuLevel);
        let dispatch = quote! {
            // The widest vectors this CPU has; the lengths were checked above.
            #[cfg(target_arch = "x86_64")]
            match #level() {
                2 => {
                    unsafe { #avx512_fn(#(#args),*) };
                    #done
                }
                1 => {
                    unsafe { #avx2_fn(#(#args),*) };
                    #done
                }
                _ => {}
            }
            unsafe { #loops_fn #generic(#(#args),*) };
        };
        let run = if self.threaded {
            let in_parts = self.need(Helper::Parts);
            let work = self.parallel_work()?;
            // Its dims are the loops' own, already bound for the body; keep them
            // out of what the sizes function records next.
            let _ = self.take_used();
            quote! {
                #(#share)*
                // Threads for the parallel loops, as many as the work is worth.
                #in_parts(#work, |part| {
                    #(#allocs)*
                    #dispatch
                });
            }
        } else {
            quote!(#(#allocs)* #dispatch)
        };
        Ok((items, run))
    }

    /// For each block folded in pieces: the piece length and count, and a buffer
    /// per carried variable for the pieces' results, all fixed by the sizes alone.
    fn piece_buffers(&self) -> Result<TokenStream, EmitError> {
        let mut out = TokenStream::new();
        let t = &self.float;
        for pc in self.pieces.borrow().iter() {
            let n = pc.outer.id.0;
            let local = |what: &str| ident(&format!("i{n}_{what}"));
            let (len, count) = (local("piece_len"), local("pieces"));
            let piece = lit(&format!("{PIECE}_i64"));
            let spans = pc
                .inner
                .iter()
                .filter(|m| {
                    let free = |e: &Expr| e.indices().is_empty();
                    free(&m.start) && free(&m.end)
                })
                .map(|m| self.span(m))
                .collect::<Result<Vec<_>, _>>()?;
            // Whole outer iterations: as many as make up a piece.
            let len_value = match &spans[..] {
                [] => piece,
                [span] => quote!((#piece / #span.max(1)).max(1)),
                _ => quote! {
                    (#piece / [#(#spans),*].iter().fold(1_i64, |w, &s| w.saturating_mul(s.max(1)))).max(1)
                },
            };
            let span = self.span(&pc.outer)?;
            let buffers = pc.vars.iter().map(|c| {
                let b = ident(&format!("v{}_pieces", c.var.0));
                quote!(let mut #b: Vec<#t> = vec![0.0; #count as usize];)
            });
            out.extend(quote! {
                let #len = #len_value;
                let #count = (#span + #len - 1) / #len;
                #(#buffers)*
            });
        }
        Ok(out)
    }

    /// The number of iterations of a loop whose bounds are free of loop indices.
    fn span(&self, l: &Loop) -> Result<TokenStream, EmitError> {
        let (start, end) = self.range(l)?;
        Ok(match (&l.start, &l.end) {
            (Expr::Int(0), Expr::Name(_) | Expr::Int(_)) => end,
            _ => quote!((#end - #start).max(0)),
        })
    }

    /// The iterations of the blocks that run on several threads, as a saturating
    /// sum of products of the loop ranges that do not depend on other loops.
    fn parallel_work(&self) -> Result<TokenStream, EmitError> {
        let mut blocks = Vec::new();
        for b in &self.p.blocks {
            if !threads_work(b) {
                continue;
            }
            let mut spans = Vec::new();
            for m in &b.loops {
                let free = |e: &Expr| b.loops.iter().all(|o| !e.indices().contains(&o.id.0));
                if free(&m.start) && free(&m.end) {
                    let (s, e) = self.range(m)?;
                    spans.push(if m.start == Expr::Int(0) {
                        e
                    } else {
                        quote!(#e - #s)
                    });
                }
            }
            blocks.push(quote!(&[#(#spans),*]));
        }
        Ok(quote!(&[#(#blocks),*]))
    }

    /// The blocks in runs of one block and the blocks joined to it (when the
    /// schedule is honored; else one block each).
    fn groups(&self) -> Vec<&[Block]> {
        let blocks = &self.p.blocks;
        let mut out = Vec::new();
        let mut first = 0;
        for k in 1..=blocks.len() {
            let joined = self.scheduled
                && blocks
                    .get(k)
                    .and_then(|b| b.loops.first())
                    .is_some_and(|l| l.schedule.joined);
            if !joined {
                out.push(&blocks[first..k]);
                first = k;
            }
        }
        out
    }

    /// Dims in binding order (first input first).
    fn dim_order(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for spec in &self.sig.inputs {
            for d in &spec.shape {
                if let Expr::Name(n) = d
                    && !out.contains(n)
                {
                    out.push(n.clone());
                }
            }
        }
        out
    }

    /// The program name (`N` or `$kh`) behind a generated dim or param identifier.
    fn name_of(&self, id: &Ident) -> Option<String> {
        self.dims
            .iter()
            .find(|(_, v)| *v == id)
            .map(|(k, _)| k.clone())
            .or_else(|| {
                self.params
                    .iter()
                    .find(|(_, v)| *v == id)
                    .map(|(k, _)| format!("${k}"))
            })
    }

    fn kernel_doc(&self, k: &KernelSource) -> Vec<String> {
        let mut d = vec![
            format!(" `{}`, generated by uop from this program:", k.name),
            String::new(),
            " ```text".into(),
        ];
        d.extend(k.text.lines().map(|l| format!(" {l}")));
        d.push(" ```".into());
        if !k.note.is_empty() {
            d.push(String::new());
            d.extend(k.note.lines().map(|l| format!(" {l}")));
        }
        d.push(String::new());
        d.push(" # Shapes".into());
        d.push(String::new());
        let sig = &k.signature;
        for t in &sig.inputs {
            d.push(format!(
                " - input `{}`: `{}{}`",
                t.name,
                t.dtype,
                list(&t.shape)
            ));
        }
        for pn in &sig.params {
            d.push(format!(" - parameter `${pn}`"));
        }
        for t in &sig.outputs {
            d.push(format!(
                " - output `{}`: `{}{}`",
                t.name,
                t.dtype,
                list(&t.shape)
            ));
        }
        for (l, r) in &sig.assertions {
            d.push(format!(" - assertion `{l} == {r}`"));
        }
        d.push(String::new());
        d.push(
            " Each buffer is dense and row-major, its length the product of its shape. \
             Dims with the same name must be equal; outputs are fully overwritten."
                .into(),
        );
        d.push(String::new());
        d.push(" # Errors".into());
        d.push(String::new());
        d.push(format!(
            " [`KernelError`] when a buffer length, a dimension or an assertion does not \
             hold; nothing is written then. [`{}_shapes`] gives the output shapes.",
            k.name
        ));
        d
    }
}

/// `x + s`, flattened into a left-associated sum so it prints without parentheses.
fn plus(x: Expr, s: Expr) -> Expr {
    match (x, s) {
        (Expr::Int(0), s) => s,
        (x, Expr::Int(0)) => x,
        (x, Expr::Bin(IndexOp::Add, a, b)) => plus(plus(x, *a), *b),
        (x, Expr::Bin(IndexOp::Sub, a, b)) => Expr::bin(IndexOp::Sub, plus(x, *a), *b),
        (x, s) => x + s,
    }
}

/// The next-tighter precedence, for right operands of left-associative operators.
fn next(p: Prec) -> Prec {
    match p {
        Prec::Lowest => Prec::Compare,
        Prec::Compare => Prec::Sum,
        Prec::Sum => Prec::Product,
        Prec::Product => Prec::Cast,
        Prec::Cast => Prec::Prefix,
        Prec::Prefix | Prec::Postfix => Prec::Postfix,
    }
}

/// The axes of a row-local temporary but its row axis.
fn row_shape(decl: &TensorDecl) -> Vec<&Expr> {
    decl.shape
        .iter()
        .enumerate()
        .filter(|(axis, _)| Some(*axis) != decl.row_local)
        .map(|(_, d)| d)
        .collect()
}

/// The name in `f32::consts` / `f64::consts` of a constant whose value is exactly
/// `v` in the float type (f32 when `is32`), if any.
fn named_constant(v: f64, is32: bool) -> Option<&'static str> {
    use std::f64::consts as c;
    const CONSTS: [(&str, f64); 19] = [
        ("E", c::E),
        ("FRAC_1_PI", c::FRAC_1_PI),
        ("FRAC_1_SQRT_2", c::FRAC_1_SQRT_2),
        ("FRAC_2_PI", c::FRAC_2_PI),
        ("FRAC_2_SQRT_PI", c::FRAC_2_SQRT_PI),
        ("FRAC_PI_2", c::FRAC_PI_2),
        ("FRAC_PI_3", c::FRAC_PI_3),
        ("FRAC_PI_4", c::FRAC_PI_4),
        ("FRAC_PI_6", c::FRAC_PI_6),
        ("FRAC_PI_8", c::FRAC_PI_8),
        ("LN_10", c::LN_10),
        ("LN_2", c::LN_2),
        ("LOG10_E", c::LOG10_E),
        ("LOG2_E", c::LOG2_E),
        ("LOG2_10", c::LOG2_10),
        ("LOG10_2", c::LOG10_2),
        ("PI", c::PI),
        ("SQRT_2", c::SQRT_2),
        ("TAU", c::TAU),
    ];
    CONSTS.iter().find_map(|&(name, k)| {
        let same = if is32 {
            (k as f32).to_bits() == (v as f32).to_bits()
        } else {
            k.to_bits() == v.to_bits()
        };
        same.then_some(name)
    })
}

/// The length of one row of a row-local temporary when it is a literal small
/// enough for the stack (up to 4 KB of f32).
fn row_literal_len(decl: &TensorDecl) -> Option<i64> {
    const STACK_ELEMENTS: i64 = 1024;
    let len = row_shape(decl).iter().try_fold(1_i64, |n, d| match d {
        Expr::Int(v) => n.checked_mul(*v),
        _ => None,
    })?;
    (0..=STACK_ELEMENTS).contains(&len).then_some(len)
}

/// `e` with loop `n`'s variable replaced by `by`.
fn substitute(e: &Expr, n: usize, by: &Expr) -> Expr {
    match e {
        Expr::Index(m) if *m == n => by.clone(),
        Expr::Neg(a) => Expr::Neg(Box::new(substitute(a, n, by))),
        Expr::Bin(op, a, b) => Expr::bin(*op, substitute(a, n, by), substitute(b, n, by)),
        other => other.clone(),
    }
}

/// Whether some loop of `b` may run on several threads.
fn threads_work(b: &Block) -> bool {
    b.loops.iter().any(|l| l.schedule.parallel)
        || b.loops.first().is_some_and(|l| l.schedule.pieces)
}

/// The tensors some statement of `p` reads or writes.
fn touched_tensors(p: &LoopProgram) -> BTreeSet<TensorId> {
    let mut out = BTreeSet::new();
    for b in &p.blocks {
        for a in crate::loops::analysis::block_accesses(b) {
            out.insert(a.access.tensor);
        }
    }
    out
}

/// Whether a subscript of `a` moves with column loop `cl` and with a loop of
/// `reduce` at once (or is data-dependent and moves with `cl`).
fn sliding(a: &Access, cl: &Loop, reduce: &[Loop]) -> bool {
    a.index.iter().any(|s| match s {
        Subscript::Expr(e) => {
            let ids = e.indices();
            ids.contains(&cl.id.0) && reduce.iter().any(|l| ids.contains(&l.id.0))
        }
        Subscript::Value(v) => value_mentions(v, cl.id.0),
    })
}

/// Calls `f` on `v` and on every operand of it down to its loads (not inside the
/// subscripts of a load).
fn visit_top_loads(v: &Value, f: &mut impl FnMut(&Value)) {
    f(v);
    match v {
        Value::Unary(_, x) => visit_top_loads(x, f),
        Value::Binary(_, a, b) => {
            visit_top_loads(a, f);
            visit_top_loads(b, f);
        }
        Value::Where(c, a, b) => {
            visit_top_loads(c, f);
            visit_top_loads(a, f);
            visit_top_loads(b, f);
        }
        Value::Load { .. }
        | Value::Var(_)
        | Value::Const(_)
        | Value::Param(_)
        | Value::Index(_) => {}
    }
}

/// Replaces every value equal to the first of a pair of `pairs` by the second.
fn replace_loads(v: &mut Value, pairs: &[(Value, Value)]) {
    if let Some((_, to)) = pairs.iter().find(|(from, _)| from == v) {
        *v = to.clone();
        return;
    }
    match v {
        Value::Unary(_, x) => replace_loads(x, pairs),
        Value::Binary(_, a, b) => {
            replace_loads(a, pairs);
            replace_loads(b, pairs);
        }
        Value::Where(c, a, b) => {
            replace_loads(c, pairs);
            replace_loads(a, pairs);
            replace_loads(b, pairs);
        }
        Value::Load { .. }
        | Value::Var(_)
        | Value::Const(_)
        | Value::Param(_)
        | Value::Index(_) => {}
    }
}

/// The offset of packed load `j`'s cell for column `col` in a panel, `at` being
/// where the current reduction iteration's cells start.
fn panel_cell(at: &Ident, j: usize) -> TokenStream {
    if j == 0 {
        quote!((#at + col as i64) as usize)
    } else {
        quote!((#at + (#j * NR + col) as i64) as usize)
    }
}

/// Whether `l` is one store (no carried variables, no accumulation, no checked
/// access) of a value that calls a vectorizable math function (`exp`, `tanh`, ...)
/// and does not read the stored tensor: a loop whose time goes into long
/// dependency chains, which [`Gen::chunked`] overlaps.
fn elementwise_math(l: &Loop) -> bool {
    fn math(v: &Value) -> bool {
        match v {
            Value::Unary(op, x) => {
                matches!(
                    op,
                    UnaryOp::Exp
                        | UnaryOp::Log
                        | UnaryOp::Tanh
                        | UnaryOp::Sigmoid
                        | UnaryOp::Sin
                        | UnaryOp::Cos
                        | UnaryOp::Erf
                ) || math(x)
            }
            Value::Binary(op, a, b) => *op == BinaryOp::Pow || math(a) || math(b),
            Value::Where(c, a, b) => math(c) || math(a) || math(b),
            Value::Load { .. }
            | Value::Var(_)
            | Value::Const(_)
            | Value::Param(_)
            | Value::Index(_) => false,
        }
    }
    let [store @ Stmt::Store { access, value }] = l.stmts.as_slice() else {
        return false;
    };
    // Reads of the stored tensor, in the value or in a data-dependent subscript,
    // would see a chunk's stores late.
    let mut reads_target = false;
    crate::loops::analysis::stmt_accesses(store, &mut |a, write| {
        reads_target |= !write && a.tensor == access.tensor;
    });
    l.carried.is_empty() && !access.checked && math(value) && !reads_target
}

/// Whether `tokens` (nested groups included) mention `name`.
fn mentions(tokens: &TokenStream, name: &Ident) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == *name,
        proc_macro2::TokenTree::Group(g) => mentions(&g.stream(), name),
        _ => false,
    })
}

/// Whether loop `n`'s index appears anywhere in `loops` (the loop and those inside).
fn uses_index(loops: &[Loop], n: usize) -> bool {
    let mut found = false;
    let mut expr = |e: &Expr| found |= e.indices().contains(&n);
    for l in loops {
        expr(&l.start);
        expr(&l.end);
        for s in &l.stmts {
            visit_stmt_exprs(s, &mut expr);
        }
    }
    found
}

fn visit_stmt_exprs(s: &Stmt, f: &mut impl FnMut(&Expr)) {
    match s {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            visit_access_exprs(access, f);
            visit_value_exprs(value, f);
        }
        Stmt::Update { value, .. } => visit_value_exprs(value, f),
    }
}

fn visit_access_exprs(a: &Access, f: &mut impl FnMut(&Expr)) {
    for s in &a.index {
        match s {
            Subscript::Expr(e) => f(e),
            Subscript::Value(v) => visit_value_exprs(v, f),
        }
    }
}

fn visit_value_exprs(v: &Value, f: &mut impl FnMut(&Expr)) {
    match v {
        Value::Load { access, .. } => visit_access_exprs(access, f),
        Value::Index(e) => f(e),
        Value::Var(_) | Value::Const(_) | Value::Param(_) => {}
        Value::Unary(_, x) => visit_value_exprs(x, f),
        Value::Binary(_, a, b) => {
            visit_value_exprs(a, f);
            visit_value_exprs(b, f);
        }
        Value::Where(c, a, b) => {
            visit_value_exprs(c, f);
            visit_value_exprs(a, f);
            visit_value_exprs(b, f);
        }
    }
}
