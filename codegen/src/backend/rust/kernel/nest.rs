//! Nests: statements, carried variables, loop ranges, and the plain realization of a loop nest (which hands marked loops to their realization).

use super::*;

impl Gen<'_> {
    /// Statement `s` as printed in context `cx`.
    pub(super) fn stmt(&self, cx: &Cx, s: &Stmt) -> Result<TokenStream, EmitError> {
        match s {
            Stmt::Store { access, value } => self.store(cx, access, None, value),
            Stmt::Accumulate { access, op, value } => self.store(cx, access, Some(*op), value),
            Stmt::Update { var, op, value } => {
                let v = ident(&format!("v{}", var.0));
                if let (true, Accum::Add, Value::Binary(BinaryOp::Mul, a, b)) =
                    (self.scheduled, op, value)
                {
                    let f = self.need(Helper::MulAdd(self.is32));
                    let a = self.float(self.value_in(cx, a)?, Prec::Lowest, false);
                    let b = self.float(self.value_in(cx, b)?, Prec::Lowest, false);
                    return Ok(quote!(#v = #f(FMA, #a, #b, #v);));
                }
                let x = self.float(self.value_in(cx, value)?, Prec::Lowest, false);
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
        if self.is_shared(l) {
            let n = l.id.0;
            let (lo, hi) = (ident(&format!("i{n}_lo")), ident(&format!("i{n}_hi")));
            return Ok((quote!(#lo), quote!(#hi)));
        }
        self.own_range(l)
    }

    /// `start` and `end` of a loop as the IR gives them (for a shared loop, the
    /// whole range the threads share out).
    pub(super) fn own_range(&self, l: &Loop) -> Result<(TokenStream, TokenStream), EmitError> {
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
        self.stmts_in(&Cx::default(), stmts)
    }

    /// The statements of a loop, in order, as printed in context `cx`.
    pub(super) fn stmts_in(&self, cx: &Cx, stmts: &[Stmt]) -> Result<TokenStream, EmitError> {
        let code = stmts
            .iter()
            .map(|s| self.stmt(cx, s))
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
        match self.realize(loops) {
            Realize::Tile { block_reduction } => return self.tile(loops, block_reduction, range),
            Realize::Split => return self.split(l, range),
            Realize::Blocked { .. } => return self.blocked(l, &inner[0], range),
            Realize::Plain => {}
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
        if self.chunks(l, inner) {
            return self.chunked(l, &i, start, end);
        }
        let carried = l.carried.iter().map(|c| self.carried(c));
        let body = self.nest(inner)?;
        let stmts = self.stmts(&l.stmts)?;
        if let Some(a) = self.line_split(l, inner) {
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
    uses_index_but(loops, n, &[])
}

/// Whether loop `n`'s index appears in `loops` outside the operands equal to one
/// of `read_elsewhere` (a tile's packed loads, read from its panel; like the
/// printing, only operands of statement values count, not loads in subscripts).
pub(super) fn uses_index_but(loops: &[Loop], n: usize, read_elsewhere: &[Value]) -> bool {
    let mut found = false;
    let mut expr = |e: &Expr| found |= e.indices().contains(&n);
    for l in loops {
        expr(&l.start);
        expr(&l.end);
        for s in &l.stmts {
            visit_stmt_exprs(s, read_elsewhere, &mut expr);
        }
    }
    found
}

/// Calls `f` on every index expression of statement `s`, except inside the
/// operands of its value equal to one of `skip`.
pub(super) fn visit_stmt_exprs(s: &Stmt, skip: &[Value], f: &mut impl FnMut(&Expr)) {
    match s {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            visit_access_exprs(access, f);
            visit_value_exprs(value, skip, f);
        }
        Stmt::Update { value, .. } => visit_value_exprs(value, skip, f),
    }
}

pub(super) fn visit_access_exprs(a: &Access, f: &mut impl FnMut(&Expr)) {
    for s in &a.index {
        match s {
            Subscript::Expr(e) => f(e),
            Subscript::Value(v) => visit_value_exprs(v, &[], f),
        }
    }
}

pub(super) fn visit_value_exprs(v: &Value, skip: &[Value], f: &mut impl FnMut(&Expr)) {
    if skip.contains(v) {
        return;
    }
    match v {
        Value::Load { access, .. } => visit_access_exprs(access, f),
        Value::Index(e) => f(e),
        Value::Var(_) | Value::Const(_) | Value::Param(_) => {}
        Value::Unary(_, x) => visit_value_exprs(x, skip, f),
        Value::Binary(_, a, b) => {
            visit_value_exprs(a, skip, f);
            visit_value_exprs(b, skip, f);
        }
        Value::Where(c, a, b) => {
            visit_value_exprs(c, skip, f);
            visit_value_exprs(a, skip, f);
            visit_value_exprs(b, skip, f);
        }
    }
}
