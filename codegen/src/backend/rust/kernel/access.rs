//! Accesses: subscripts, offsets (unchecked, checked), loads and stores.

use super::*;

impl Gen<'_> {
    /// The `i64` subscripts of an access.
    pub(super) fn subscripts(&self, a: &Access) -> Result<Vec<(TokenStream, Prec)>, EmitError> {
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
    pub(super) fn shape(&self, t: TensorId) -> Result<Vec<(TokenStream, Prec)>, EmitError> {
        self.p.tensors[t.0]
            .shape
            .iter()
            .map(|e| self.idx(e))
            .collect()
    }

    /// The row-major offset of an access known to be in range, as a `usize`.
    pub(super) fn offset_unchecked(&self, a: &Access) -> Result<TokenStream, EmitError> {
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
    pub(super) fn offset_in(
        &self,
        decl: &TensorDecl,
        a: &Access,
    ) -> Result<TokenStream, EmitError> {
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
    pub(super) fn offset_checked(&self, a: &Access) -> Result<TokenStream, EmitError> {
        let f = self.need(Helper::Offset);
        let subs = self.subscripts(a)?.into_iter().map(|(t, _)| t);
        let shape = self.shape(a.tensor)?.into_iter().map(|(t, _)| t);
        Ok(quote!(#f([#(#subs),*], [#(#shape),*])))
    }

    pub(super) fn load(&self, a: &Access, fill: f64) -> Result<Out, EmitError> {
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
    pub(super) fn store(
        &self,
        cx: &Cx,
        a: &Access,
        op: Option<Accum>,
        v: &Value,
    ) -> Result<TokenStream, EmitError> {
        let target_int = self.p.tensors[a.tensor.0].dtype == DType::I32;
        let vo = self.value_in(cx, v)?;
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
    pub(super) fn store_value(
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

    /// How many elements apart two neighbours along `axis` of tensor `t` are.
    pub(super) fn row_stride(&self, t: TensorId, axis: usize) -> Result<TokenStream, EmitError> {
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
}

/// The axes of a row-local temporary but its row axis.
pub(super) fn row_shape(decl: &TensorDecl) -> Vec<&Expr> {
    decl.shape
        .iter()
        .enumerate()
        .filter(|(axis, _)| Some(*axis) != decl.row_local)
        .map(|(_, d)| d)
        .collect()
}

/// The length of one row of a row-local temporary when it is a literal small
/// enough for the stack (up to 4 KB of f32).
pub(super) fn row_literal_len(decl: &TensorDecl) -> Option<i64> {
    const STACK_ELEMENTS: i64 = 1024;
    let len = row_shape(decl).iter().try_fold(1_i64, |n, d| match d {
        Expr::Int(v) => n.checked_mul(*v),
        _ => None,
    })?;
    (0..=STACK_ELEMENTS).contains(&len).then_some(len)
}
