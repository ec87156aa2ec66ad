//! Split realization: reductions into `LANES` partial results, chunked element-wise math loops and cache-line realigned chunks.

use super::*;

impl Gen<'_> {
    /// An element-wise innermost loop (one store of a math-heavy value, see
    /// [`Schedule::chunked`](crate::loops::Schedule::chunked)) over `start..end` in chunks of `LANES` iterations
    /// (four vectors), starting where the store starts a cache line when the loop
    /// is also marked [`line split`](crate::loops::Schedule::line_split): each chunk's
    /// values are computed into a local array, then stored; the iterations before
    /// the first chunk and after the last run plainly. The stores go through a raw
    /// pointer (`Shared`) that LLVM cannot tell apart from the inputs, so in a
    /// plain or merely unrolled loop each vector's loads wait for the previous
    /// vector's store, and one long `exp` chain runs at a time; computing the
    /// chunk first lets four chains overlap (gelu 4M on one Zen 5 core: 1.23 ms
    /// plain, 1.03 buffered). Each element gets the value it got before (the
    /// value does not read the stored tensor).
    pub(super) fn chunked(
        &self,
        l: &Loop,
        i: &Ident,
        start: TokenStream,
        end: TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let [Stmt::Store { access, value }] = l.stmts.as_slice() else {
            return Err(self.unsupported("a chunked loop with other than one store"));
        };
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
        let first_line = match self.line_split(l, &[]) {
            Some(a) => self.first_on_line(&first, &a, i, &quote!(#lo), &quote!(#hi))?,
            None => quote!(let #first = #lo;),
        };
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
    pub(super) fn split(
        &self,
        l: &Loop,
        range: Option<(TokenStream, TokenStream)>,
    ) -> Result<TokenStream, EmitError> {
        let ranged = range.is_some();
        let (start, end) = match range {
            Some(r) => r,
            None => self.range(l)?,
        };
        let shared = self.is_shared(l);
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
        // A piece of a long reduction starts its whole chunks where the load its
        // mark names starts a cache line (see `realigned_chunks`; the `align` pass
        // names one only in a loop run in pieces).
        let chunks = match self.aligned_load(l).filter(|_| ranged) {
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
    pub(super) fn realigned_chunks(
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

    /// `let {first} = ..;`: the first iteration from `start` (at most `end`) at which
    /// `a`'s element starts a cache line, after binding the loop index `i` to
    /// `start` for the offset (the loops that follow shadow it).
    pub(super) fn first_on_line(
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
    pub(super) fn partials(
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
}
