//! Nests: statements, carried variables, loop ranges, and the plain realization of a loop nest (which hands marked loops to their realization).

use super::*;

impl Gen<'_> {
    pub(super) fn stmt(&self, s: &Stmt) -> Result<TokenStream, EmitError> {
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
                    self.consts.borrow_mut().insert(Fact::Fma);
                    return Ok(quote!(#v = #f(FMA, #a, #b, #v);));
                }
                let x = self.float(self.value(value)?, Prec::Lowest, false);
                Ok(self.update(&v, *op, x))
            }
        }
    }

    /// `v op= x` for a carried variable `v`.
    pub(super) fn update(&self, v: &Ident, op: Accum, x: TokenStream) -> TokenStream {
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

    pub(super) fn carried(&self, c: &Carried) -> TokenStream {
        let v = ident(&format!("v{}", c.var.0));
        let init = self.float_lit(c.op.identity(), true).ts;
        quote!(let mut #v = #init;)
    }

    /// `start` and `end` of a loop, ready to be written as `start..end` (this
    /// thread's part of it, for the inner loop a team shares out).
    pub(super) fn range(&self, l: &Loop) -> Result<(TokenStream, TokenStream), EmitError> {
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
    pub(super) fn stmts(&self, stmts: &[Stmt]) -> Result<TokenStream, EmitError> {
        let code = stmts
            .iter()
            .map(|s| self.stmt(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(quote!(#(#code)*))
    }

    pub(super) fn nest(&self, loops: &[Loop]) -> Result<TokenStream, EmitError> {
        self.nest_over(loops, None)
    }

    /// `loops`, the first over `range` when given (else its own range), honoring a
    /// tile or split schedule.
    pub(super) fn nest_over(
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

    /// `loops` with the first one running over `start..end`.
    pub(super) fn nest_in(
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

    /// The number of iterations of a loop whose bounds are free of loop indices.
    pub(super) fn span(&self, l: &Loop) -> Result<TokenStream, EmitError> {
        let (start, end) = self.range(l)?;
        Ok(match (&l.start, &l.end) {
            (Expr::Int(0), Expr::Name(_) | Expr::Int(_)) => end,
            _ => quote!((#end - #start).max(0)),
        })
    }
}

/// `e` with loop `n`'s variable replaced by `by`.
pub(super) fn substitute(e: &Expr, n: usize, by: &Expr) -> Expr {
    match e {
        Expr::Index(m) if *m == n => by.clone(),
        Expr::Neg(a) => Expr::Neg(Box::new(substitute(a, n, by))),
        Expr::Bin(op, a, b) => Expr::bin(*op, substitute(a, n, by), substitute(b, n, by)),
        other => other.clone(),
    }
}

/// Whether loop `n`'s index appears anywhere in `loops` (the loop and those inside).
pub(super) fn uses_index(loops: &[Loop], n: usize) -> bool {
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

pub(super) fn visit_stmt_exprs(s: &Stmt, f: &mut impl FnMut(&Expr)) {
    match s {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            visit_access_exprs(access, f);
            visit_value_exprs(value, f);
        }
        Stmt::Update { value, .. } => visit_value_exprs(value, f),
    }
}

pub(super) fn visit_access_exprs(a: &Access, f: &mut impl FnMut(&Expr)) {
    for s in &a.index {
        match s {
            Subscript::Expr(e) => f(e),
            Subscript::Value(v) => visit_value_exprs(v, f),
        }
    }
}

pub(super) fn visit_value_exprs(v: &Value, f: &mut impl FnMut(&Expr)) {
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
