//! Expressions: index values (unchecked and checked arithmetic), float values, math calls and contractions.

use super::*;

impl Gen<'_> {
    /// An index expression as `i64` Rust, in plain (unchecked) arithmetic.
    pub(super) fn idx(&self, e: &Expr) -> Result<(TokenStream, Prec), EmitError> {
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

    pub(super) fn idx_operand(&self, e: &Expr, min: Prec) -> Result<TokenStream, EmitError> {
        let (ts, prec) = self.idx(e)?;
        Ok(paren(ts, prec, min))
    }

    /// An index expression evaluated with overflow checks, inside a function
    /// returning `Option` (the `_sizes` function).
    pub(super) fn checked_idx(&self, e: &Expr) -> Result<TokenStream, EmitError> {
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

    /// An entry-evaluated expression's value: itself if trivial, else `sizes[k]`.
    pub(super) fn entry_value(&self, e: &Expr) -> Result<TokenStream, EmitError> {
        match self.sizes.iter().position(|s| s == e) {
            Some(k) => {
                let k = lit(&k.to_string());
                Ok(quote!(sizes[#k]))
            }
            None => Ok(self.idx(e)?.0),
        }
    }

    /// A `usize` size of an output shape.
    pub(super) fn entry_usize(&self, e: &Expr) -> Result<TokenStream, EmitError> {
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

    pub(super) fn float_lit(&self, v: f64, typed: bool) -> Out {
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
    pub(super) fn float(&self, o: Out, min: Prec, typed: bool) -> TokenStream {
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

    /// Value `v` as printed outside a tile's reduction.
    pub(super) fn value(&self, v: &Value) -> Result<Out, EmitError> {
        self.value_in(&Cx::default(), v)
    }

    /// Value `v` as printed in context `cx` (a packed load reads its panel cell).
    pub(super) fn value_in(&self, cx: &Cx, v: &Value) -> Result<Out, EmitError> {
        let t = &self.float;
        let float_out = |ts: TokenStream, prec: Prec| Out {
            ts,
            prec,
            ty: Ty::Float,
        };
        if let Some((cell, prec)) = cx.packed_cell(v) {
            return Ok(float_out(cell, prec));
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
            Value::Unary(op, x) => self.unary(cx, *op, x)?,
            Value::Binary(op, a, b) => self.binary(cx, *op, a, b)?,
            Value::Where(c, a, b) => {
                if let Value::Const(c) = **c {
                    // A constant condition chooses at generation time.
                    return self.value_in(cx, if c != 0.0 { a } else { b });
                }
                let c = match &**c {
                    // `where(a < b, ..)` reads as `if a < b`, which is the same test.
                    Value::Binary(op, x, y) if op.is_comparison() => {
                        self.comparison(cx, *op, x, y)?
                    }
                    _ => {
                        let c = self.value_in(cx, c)?;
                        let c = self.float(c, Prec::Sum, true);
                        quote!(#c != 0.0)
                    }
                };
                let (a, b) = (self.value_in(cx, a)?, self.value_in(cx, b)?);
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
    pub(super) fn vmath_call(
        &self,
        cx: &Cx,
        name: &'static str,
        args: &[&Value],
    ) -> Result<(TokenStream, Prec), EmitError> {
        let f = self.need(Helper::Vmath(name));
        let mut ts = Vec::with_capacity(args.len());
        for a in args {
            ts.push(self.float(self.value_in(cx, a)?, Prec::Lowest, false));
        }
        let call = if name == "pow_f32" {
            // Evaluated in f64, far beyond f32's precision: one instance.
            quote!(#f(#(#ts),*))
        } else if self.scheduled {
            quote!(#f(FMA, #(#ts),*))
        } else {
            quote!(#f(false, #(#ts),*))
        };
        Ok((call, Prec::Postfix))
    }

    pub(super) fn unary(&self, cx: &Cx, op: UnaryOp, x: &Value) -> Result<Out, EmitError> {
        let xo = self.value_in(cx, x)?;
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
            _ if let Some(name) = math_call(op, self.is32) => self.vmath_call(cx, name, &[x])?,
            UnaryOp::Neg => unreachable!("handled above"),
            UnaryOp::Abs => (quote!(#recv.abs()), Prec::Postfix),
            UnaryOp::Exp => (quote!(#recv.exp()), Prec::Postfix),
            UnaryOp::Log => (quote!(#recv.ln()), Prec::Postfix),
            UnaryOp::Sqrt => (quote!(#recv.sqrt()), Prec::Postfix),
            UnaryOp::Rsqrt if self.is32 => {
                // In f64 and rounded once, like the reference: exact, and cheap.
                let x = self.float(self.value_in(cx, x)?, Prec::Lowest, true);
                (quote!((1.0 / f64::from(#x).sqrt()) as f32), Prec::Cast)
            }
            UnaryOp::Rsqrt => (quote!(1.0 / #recv.sqrt()), Prec::Product),
            UnaryOp::Recip => {
                let x = self.float(self.value_in(cx, x)?, Prec::Prefix, false);
                (quote!(1.0 / #x), Prec::Product)
            }
            UnaryOp::Tanh => (quote!(#recv.tanh()), Prec::Postfix),
            UnaryOp::Sigmoid => {
                let x = self.float(self.value_in(cx, x)?, Prec::Prefix, true);
                (quote!(1.0 / (1.0 + (-#x).exp())), Prec::Product)
            }
            UnaryOp::Sin => (quote!(#recv.sin()), Prec::Postfix),
            UnaryOp::Cos => (quote!(#recv.cos()), Prec::Postfix),
            UnaryOp::Erf => {
                let f = self.need(Helper::ErfF64);
                let x = self.float(self.value_in(cx, x)?, Prec::Lowest, false);
                (quote!(#f(#x)), Prec::Postfix)
            }
            UnaryOp::Floor => (quote!(#recv.floor()), Prec::Postfix),
            UnaryOp::Ceil => (quote!(#recv.ceil()), Prec::Postfix),
            UnaryOp::Sign => {
                let f = self.need(Helper::Sign(self.is32));
                let x = self.float(self.value_in(cx, x)?, Prec::Lowest, false);
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
    pub(super) fn contracted(
        &self,
        cx: &Cx,
        op: BinaryOp,
        a: &Value,
        b: &Value,
    ) -> Result<Option<Out>, EmitError> {
        let Some((p, q, c)) = contraction(op, a, b) else {
            return Ok(None);
        };
        let f = self.need(Helper::MulAdd(self.is32));
        let [p, q, c] = [p, q, c].map(|v| self.value_in(cx, &v));
        let [p, q, c] = [p?, q?, c?].map(|v| self.float(v, Prec::Lowest, false));
        Ok(Some(Out {
            ts: quote!(#f(FMA, #p, #q, #c)),
            prec: Prec::Postfix,
            ty: Ty::Float,
        }))
    }

    pub(super) fn binary(
        &self,
        cx: &Cx,
        op: BinaryOp,
        a: &Value,
        b: &Value,
    ) -> Result<Out, EmitError> {
        if self.scheduled
            && matches!(op, BinaryOp::Add | BinaryOp::Sub)
            && let Some(out) = self.contracted(cx, op, a, b)?
        {
            return Ok(out);
        }
        let t = &self.float;
        let (ao, bo) = (self.value_in(cx, a)?, self.value_in(cx, b)?);
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
            BinaryOp::Pow if self.is32 => self.vmath_call(cx, "pow_f32", &[a, b])?,
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
                let cmp = self.comparison(cx, op, a, b)?;
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
    pub(super) fn comparison(
        &self,
        cx: &Cx,
        op: BinaryOp,
        a: &Value,
        b: &Value,
    ) -> Result<TokenStream, EmitError> {
        if a == b && matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
            // `x != x` is how the IR asks for NaN (argmax); say so.
            let x = self.float(self.value_in(cx, a)?, Prec::Postfix, true);
            return Ok(if op == BinaryOp::Ne {
                quote!(#x.is_nan())
            } else {
                quote!(!#x.is_nan())
            });
        }
        let (ao, bo) = (self.value_in(cx, a)?, self.value_in(cx, b)?);
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
}

/// `x + s`, flattened into a left-associated sum so it prints without parentheses.
pub(super) fn plus(x: Expr, s: Expr) -> Expr {
    match (x, s) {
        (Expr::Int(0), s) => s,
        (x, Expr::Int(0)) => x,
        (x, Expr::Bin(IndexOp::Add, a, b)) => plus(plus(x, *a), *b),
        (x, Expr::Bin(IndexOp::Sub, a, b)) => Expr::bin(IndexOp::Sub, plus(x, *a), *b),
        (x, s) => x + s,
    }
}

/// The name in `f32::consts` / `f64::consts` of a constant whose value is exactly
/// `v` in the float type (f32 when `is32`), if any.
pub(super) fn named_constant(v: f64, is32: bool) -> Option<&'static str> {
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
