//! Tile realization: register tiles of `MR` × `NR` cells, their reduction blocks of `KC`, and packed panels.

use super::*;

impl Gen<'_> {
    /// A register tile over `loops = [R, C, K…]`: `MR` rows of `R` by `NR` columns of
    /// `C`, the carried variables of `C` kept as an `MR × NR` array while the
    /// reduction loops `K…` run (blocked by `KC` when `block_reduction`). The last
    /// tile of a row or column range moves back to end where the range ends and
    /// writes only the cells no earlier tile wrote, so no iteration runs untiled
    /// unless the whole range is smaller than a tile.
    pub(super) fn tile(
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
            self.packable(loops)
        } else {
            Vec::new()
        };
        let (k_start, k_stop) = if block_reduction {
            (quote!(#k_block), quote!(#k_end))
        } else {
            (ks.clone(), kend.clone())
        };
        let (pack, cx) = if packed.is_empty() {
            (TokenStream::new(), Cx::default())
        } else {
            self.pack(cl, reduce, &packed, k_start.clone(), k_stop.clone())?
        };
        let at = local(c, "at");
        let step = match packed.len() {
            0 => TokenStream::new(),
            1 => quote!(#at += NR as i64;),
            p => quote!(#at += (#p * NR) as i64;),
        };
        let start_at = (!packed.is_empty()).then(|| quote!(let mut #at = 0_i64;));
        // Packed loads are read from the panel, without the row's or column's index.
        let skip = cx.loads();
        let body_ri =
            uses_index_but(reduce, r, &skip).then(|| quote!(let #ri = #r_tile + row as i64;));
        let body_ci =
            uses_index_but(reduce, c, &skip).then(|| quote!(let #ci = #c_tile + col as i64;));
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
        let reduction = self.tile_reduction(&cx, reduce, &rows_cols, k_start, k_stop)?;
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
    /// innermost body run for every row and column by `rows_cols`; the packed
    /// loads of `cx` are read from the panel.
    pub(super) fn tile_reduction(
        &self,
        cx: &Cx,
        reduce: &[Loop],
        rows_cols: &dyn Fn(TokenStream) -> TokenStream,
        start: TokenStream,
        end: TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let Some((l, inner)) = reduce.split_first() else {
            return Ok(TokenStream::new());
        };
        let used = uses_index_but(reduce, l.id.0, &cx.loads());
        let i = ident(&format!("{}i{}", if used { "" } else { "_" }, l.id.0));
        let body = if inner.is_empty() {
            let stmts = self.stmts_in(cx, &l.stmts);
            rows_cols(stmts?)
        } else {
            let (s, e) = self.range(&inner[0])?;
            self.tile_reduction(cx, inner, rows_cols, s, e)?
        };
        Ok(quote! {
            for #i in #start..#end {
                #body
            }
        })
    }

    /// The loads of a tile `loops = [R, C, K…]` it packs: the panel plan's
    /// ([`plan::panel_loads`](crate::plan::panel_loads)) for panels copied cell by
    /// cell, every load the mark names, once, in the order the innermost
    /// reduction's values read them; none when a reduction loop's range depends on
    /// a loop index (the kernel sizes the panel before any loop runs).
    pub(super) fn packable(&self, loops: &[Loop]) -> Vec<Value> {
        crate::plan::panel_loads(loops, crate::plan::Packing::Cells)
    }

    /// Copies the `packed` loads of a column tile into its panel `i{c}_panel`, `NR`
    /// cells per load and reduction iteration, in the order the reduction runs (its
    /// outermost loop over `start..end`). Returns that code and the context of the
    /// reduction, in which [`Gen::value_in`] reads each packed load from its cell.
    pub(super) fn pack(
        &self,
        cl: &Loop,
        reduce: &[Loop],
        packed: &[Value],
        start: TokenStream,
        end: TokenStream,
    ) -> Result<(TokenStream, Cx), EmitError> {
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
        for (i, l) in reduce.iter().enumerate().rev() {
            let (s, e) = self.range(l)?;
            let (s, e) = if i == 0 {
                (start.clone(), end.clone())
            } else {
                (s, e)
            };
            let used = packed.iter().any(|v| value_mentions(v, l.id.0));
            let index = ident(&format!("{}i{}", if used { "" } else { "_" }, l.id.0));
            copy = quote!(for #index in #s..#e { #copy });
        }
        let cx = Cx {
            packed: packed
                .iter()
                .enumerate()
                .map(|(j, v)| {
                    let cell = panel_cell(&at, j);
                    (v.clone(), quote!(*#view.get_unchecked(#cell)))
                })
                .collect(),
        };
        let code = quote! {
            let mut #at = 0_i64;
            #copy
            let #view: &[#t] = #panel;
        };
        Ok((code, cx))
    }
}

/// The offset of packed load `j`'s cell for column `col` in a panel, `at` being
/// where the current reduction iteration's cells start.
pub(super) fn panel_cell(at: &Ident, j: usize) -> TokenStream {
    if j == 0 {
        quote!((#at + col as i64) as usize)
    } else {
        quote!((#at + (#j * NR + col) as i64) as usize)
    }
}
