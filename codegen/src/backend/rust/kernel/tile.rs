//! Tile realization: register tiles of `MR` × `NR` cells, their reduction blocks of `KC`, and packed panels.

use super::*;

impl Gen<'_> {
    /// A register tile over `loops = [R, C, K…]`: `MR` rows of `R` by `NR` columns of
    /// `C`, the carried variables of `C` kept as an `MR × NR` array while the
    /// reduction loops `K…` run (blocked by `KC` when `block_reduction`). The last
    /// tile of a row or column range moves back to end where the range ends and
    /// writes only the cells no earlier tile wrote, so no iteration runs untiled
    /// unless the whole range is smaller than a tile; a tile that overlaps nothing
    /// stores its cells without checks (as whole vectors).
    ///
    /// Without packed loads the column tiles run outside the row tiles. With them
    /// ([`Gen::packable`]), each reduction block first copies every column tile's
    /// loads into the panel, one tile after another, then runs the rows in blocks of
    /// `MC`, the column tiles outside the row tiles of a block: the block's rows of
    /// the unpacked loads (matmul's `a`) stay in the cache while every column tile
    /// passes over them, and each column tile's run of the panel stays in the first
    /// level while the block's row tiles read it.
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
        // The cells of the tile `(row, col)`, each running `body`; `checked` skips
        // those an earlier tile wrote.
        let cells = |body: &TokenStream, checked: bool| {
            let (skip_row, skip_col) = if checked {
                (
                    quote!(if #ri < #r_start { continue; }),
                    quote!(if #ci < #c_start { continue; }),
                )
            } else {
                (TokenStream::new(), TokenStream::new())
            };
            quote! {
                for row in 0..MR {
                    let #ri = #r_tile + row as i64;
                    #skip_row
                    for col in 0..NR {
                        let #ci = #c_tile + col as i64;
                        #skip_col
                        #(#result)*
                        #body
                    }
                }
            }
        };
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
            let (whole_first, whole_added) = (cells(&stores, false), cells(&accumulate, false));
            let checked = cells(
                &quote!(if #k_block == #ks { #stores } else { #accumulate }),
                true,
            );
            quote! {
                if #r_tile == #r_start && #c_tile == #c_start {
                    // A tile that overlaps no earlier one: its cells without checks.
                    if #k_block == #ks { #whole_first } else { #whole_added }
                } else {
                    #checked
                }
            }
        } else {
            let (whole, checked) = (cells(&stores, false), cells(&stores, true));
            quote! {
                if #r_tile == #r_start && #c_tile == #c_start {
                    // A tile that overlaps no earlier one: its cells without checks.
                    #whole
                } else {
                    #checked
                }
            }
        };
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
        let (copy, mut cx) = if packed.is_empty() {
            (TokenStream::new(), Cx::default())
        } else {
            let (copy, cells) = self.pack(cl, false, reduce, &packed, &k_start, &k_stop)?;
            let cx = Cx {
                packed: cells,
                rows: Vec::new(),
            };
            (copy, cx)
        };
        // The row panel, where the columns pack (its row blocks are theirs).
        let rows_packed = if packed.is_empty() {
            Vec::new()
        } else {
            self.row_packable(loops)
        };
        let row_copy = if rows_packed.is_empty() {
            TokenStream::new()
        } else {
            let (copy, cells) = self.pack(rl, true, reduce, &rows_packed, &k_start, &k_stop)?;
            // Read from the panel where this copy packs rows, else in place.
            for (v, cell) in cells {
                let x = self.value(&v)?;
                let x = self.float(x, Prec::Lowest, false);
                cx.rows.push((v, quote!(if PR { #cell } else { #x })));
            }
            copy
        };
        let at = local(c, "at");
        let step = match packed.len() {
            0 => TokenStream::new(),
            1 => quote!(#at += NR as i64;),
            p => quote!(#at += (#p * NR) as i64;),
        };
        let row_at = local(r, "at");
        let row_step = match rows_packed.len() {
            0 => TokenStream::new(),
            1 => quote!(#row_at += MR as i64;),
            p => quote!(#row_at += (#p * MR) as i64;),
        };
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
                #row_step
            }
        };
        let reduction = self.tile_reduction(&cx, reduce, &rows_cols, k_start, k_stop)?;
        let column_tile = quote! {
            // The last tile moves back to fit and writes only the cells it adds.
            let #c_tile = #c_start.min(#ce - NR as i64);
        };
        let row_tile = quote!(let #r_tile = #r_start.min(#re - MR as i64););
        let tiles = if packed.is_empty() {
            // Columns outside rows: the column's loads stay in the cache while
            // every row tile passes over them.
            quote! {
                for #c_start in (#cs..#ce).step_by(NR) {
                    #column_tile
                    for #r_start in (#rs..#re).step_by(MR) {
                        #row_tile
                        #(#setup)*
                        #reduction
                        #finish
                    }
                }
            }
        } else {
            let (panel, view) = (local(c, "panel"), local(c, "packed"));
            let (r_block, r_block_end) = (local(r, "block"), local(r, "block_end"));
            let (c_first, c_next) = (local(c, "first"), local(c, "next"));
            let t = &self.float;
            let (row_pack, row_start) = if rows_packed.is_empty() {
                (TokenStream::new(), TokenStream::new())
            } else {
                let (row_panel, row_view) = (local(r, "row_panel"), local(r, "row_packed"));
                (
                    quote! {
                        if PR {
                            // The block's row-packed loads, one row tile's run after
                            // another.
                            let mut #row_at = 0_i64;
                            for #r_start in (#r_block..#r_block_end).step_by(MR) {
                                #row_tile
                                #row_copy
                            }
                        }
                        let #row_view: &[#t] = #row_panel;
                    },
                    // Every column tile reads the block's row panel from its start.
                    quote!(let mut #row_at = 0_i64;),
                )
            };
            quote! {
                // Every column tile's packed loads, one tile's run after another.
                let mut #at = 0_i64;
                for #c_start in (#cs..#ce).step_by(NR) {
                    #column_tile
                    #copy
                }
                let #view: &[#t] = #panel;
                // Rows in blocks of `MC`; within a block, columns outside rows.
                for #r_block in (#rs..#re).step_by(MC) {
                    let #r_block_end = (#r_block + MC as i64).min(#re);
                    #row_pack
                    let mut #c_next = 0_i64;
                    for #c_start in (#cs..#ce).step_by(NR) {
                        #column_tile
                        // This column tile's run of the panel starts where the
                        // previous one's ended.
                        let #c_first = #c_next;
                        #row_start
                        for #r_start in (#r_block..#r_block_end).step_by(MR) {
                            #row_tile
                            #(#setup)*
                            let mut #at = #c_first;
                            #reduction
                            #c_next = #at;
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
    /// reduction's values read them; none when the column loop's or a reduction
    /// loop's range depends on a loop index (the kernel sizes the panel, `KC` × `NR`
    /// per load and column tile, before any loop runs).
    pub(super) fn packable(&self, loops: &[Loop]) -> Vec<Value> {
        crate::plan::panel_loads(loops, crate::plan::Packing::Cells)
    }

    /// The loads of a tile `loops = [R, C, K…]` that it packs into its row panel,
    /// where it packs a column panel too: the panel plan's
    /// ([`plan::row_panel_loads`](crate::plan::row_panel_loads)).
    pub(super) fn row_packable(&self, loops: &[Loop]) -> Vec<Value> {
        crate::plan::row_panel_loads(loops)
    }

    /// Copies the `packed` loads of a column tile into its panel `i{c}_panel` from
    /// cell `i{c}_at` on, `NR` cells per load and reduction iteration, in the order
    /// the reduction runs (its outermost loop over `start..end`); for a row tile
    /// (`rows`, `l` the row loop) into `i{r}_row_panel`, `MR` cells. Returns that
    /// code and each packed load's read of its cell (as [`Gen::value_in`] prints it
    /// in the reduction).
    pub(super) fn pack(
        &self,
        l: &Loop,
        rows: bool,
        reduce: &[Loop],
        packed: &[Value],
        start: &TokenStream,
        end: &TokenStream,
    ) -> Result<(TokenStream, Vec<(Value, TokenStream)>), EmitError> {
        let c = l.id.0;
        let local = |what: &str| ident(&format!("i{c}_{what}"));
        let (panel, view) = if rows {
            (local("row_panel"), local("row_packed"))
        } else {
            (local("panel"), local("packed"))
        };
        let at = local("at");
        let (ci, c_tile) = (ident(&format!("i{c}")), local("tile"));
        let (cell, cells) = if rows {
            (quote!(row), quote!(MR))
        } else {
            (quote!(col), quote!(NR))
        };
        // The loops of the copy use only the indices the packed loads use.
        let copies = packed
            .iter()
            .enumerate()
            .map(|(j, v)| {
                let x = self.value(v)?;
                let x = self.float(x, Prec::Lowest, false);
                let at_cell = panel_cell(&at, j, &cell, &cells);
                Ok(quote!(*#panel.get_unchecked_mut(#at_cell) = #x;))
            })
            .collect::<Result<Vec<_>, EmitError>>()?;
        let p = packed.len();
        let step = if p == 1 {
            quote!(#cells as i64)
        } else {
            quote!((#p * #cells) as i64)
        };
        let mut copy = quote! {
            for #cell in 0..#cells {
                let #ci = #c_tile + #cell as i64;
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
        let reads = packed
            .iter()
            .enumerate()
            .map(|(j, v)| {
                let at_cell = panel_cell(&at, j, &cell, &cells);
                (v.clone(), quote!(*#view.get_unchecked(#at_cell)))
            })
            .collect();
        Ok((copy, reads))
    }
}

/// The offset of packed load `j`'s cell for column `col` (row `row`) in a panel of
/// `NR` (`MR`) cells per load, `at` being where the current reduction
/// iteration's cells start.
pub(super) fn panel_cell(
    at: &Ident,
    j: usize,
    cell: &TokenStream,
    cells: &TokenStream,
) -> TokenStream {
    if j == 0 {
        quote!((#at + #cell as i64) as usize)
    } else {
        quote!((#at + (#j * #cells + #cell) as i64) as usize)
    }
}
