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
    ///
    /// In phases: the names and ranges ([`TileNames`]), the carried cells
    /// ([`Gen::tile_carried`]), the code writing a tile's results
    /// ([`Gen::tile_finish`]), the panels ([`Gen::tile_panels`]), the reduction run
    /// for every cell, then the loops over the tiles ([`Gen::tile_loops`]), guarded
    /// by the plain nest for ranges smaller than a tile.
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
        let n = TileNames::new(rl.id.0, cl.id.0, first.id.0);
        let carried = self.tile_carried(cl);
        let (ks, kend) = self.range(first)?;
        let finish = self.tile_finish(cl, &n, &carried.result, block_reduction, &ks)?;
        let (k_start, k_stop) = if block_reduction {
            let (b, e) = (&n.k_block, &n.k_end);
            (quote!(#b), quote!(#e))
        } else {
            (ks.clone(), kend.clone())
        };
        let panels = self.tile_panels(loops, block_reduction, &k_start, &k_stop)?;
        let (at, row_at) = (&n.c_at, &n.r_at);
        let step = match panels.columns {
            0 => TokenStream::new(),
            1 => quote!(#at += NR as i64;),
            p => quote!(#at += (#p * NR) as i64;),
        };
        let row_step = match panels.rows {
            0 => TokenStream::new(),
            1 => quote!(#row_at += MR as i64;),
            p => quote!(#row_at += (#p * MR) as i64;),
        };
        // Packed loads are read from the panel, without the row's or column's index.
        let skip = panels.cx.loads();
        let (ri, ci, r_tile, c_tile) = (&n.ri, &n.ci, &n.r_tile, &n.c_tile);
        let body_ri =
            uses_index_but(reduce, rl.id.0, &skip).then(|| quote!(let #ri = #r_tile + row as i64;));
        let body_ci =
            uses_index_but(reduce, cl.id.0, &skip).then(|| quote!(let #ci = #c_tile + col as i64;));
        let (load, save) = (&carried.load, &carried.save);
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
        let reduction = self.tile_reduction(&panels.cx, reduce, &rows_cols, k_start, k_stop)?;
        let body = TileBody {
            setup: &carried.setup,
            reduction,
            finish,
        };
        let tiles = self.tile_loops(&n, (&rs, &re), (&cs, &ce), &panels, &body);
        let tiles = if block_reduction {
            let (k_block, k_end) = (&n.k_block, &n.k_end);
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

    /// The carried variables of the column loop `cl` as `MR × NR` arrays of partial
    /// results: declared before the reduction, loaded and saved around each cell's
    /// run, and read as the variable when the tile's results are written.
    fn tile_carried(&self, cl: &Loop) -> TileCarried {
        let mut carried = TileCarried::default();
        for c in &cl.carried {
            let p = self.partials(
                c.var,
                c.op,
                "tile",
                |init| quote!([[#init; NR]; MR]),
                quote!([row][col]),
            );
            carried.setup.push(p.declare);
            carried.load.push(p.load);
            carried.save.push(p.save);
            let (v, cell) = (p.var, p.cell);
            carried.result.push(quote!(let #v = #cell;));
        }
        carried
    }

    /// The code writing a tile's results: the column loop's statements for every
    /// cell (each cell's carried variables read by `result`); a tile that overlaps
    /// no earlier one writes every cell without checks, the last tile of a range
    /// only the cells it adds. With `block_reduction`, a block after the first
    /// (`ks` starts the first) adds its partial results to the stored ones.
    fn tile_finish(
        &self,
        cl: &Loop,
        n: &TileNames,
        result: &[TokenStream],
        block_reduction: bool,
        ks: &TokenStream,
    ) -> Result<TokenStream, EmitError> {
        let stores = self.stmts(&cl.stmts)?;
        let (ri, ci, r_start, c_start, r_tile, c_tile) =
            (&n.ri, &n.ci, &n.r_start, &n.c_start, &n.r_tile, &n.c_tile);
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
        if !block_reduction {
            let (whole, checked) = (cells(&stores, false), cells(&stores, true));
            return Ok(quote! {
                if #r_tile == #r_start && #c_tile == #c_start {
                    // A tile that overlaps no earlier one: its cells without checks.
                    #whole
                } else {
                    #checked
                }
            });
        }
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
        let k_block = &n.k_block;
        let checked = cells(
            &quote!(if #k_block == #ks { #stores } else { #accumulate }),
            true,
        );
        Ok(quote! {
            if #r_tile == #r_start && #c_tile == #c_start {
                // A tile that overlaps no earlier one: its cells without checks.
                if #k_block == #ks { #whole_first } else { #whole_added }
            } else {
                #checked
            }
        })
    }

    /// The panels of a tile over `loops` whose reduction runs `k_start..k_stop`:
    /// with `block_reduction`, the column tiles' packed loads ([`Gen::packable`])
    /// and, where the columns pack, the rows' ([`Gen::row_packable`]), each with the
    /// copy filling its panel and the reads of its cells.
    fn tile_panels(
        &self,
        loops: &[Loop],
        block_reduction: bool,
        k_start: &TokenStream,
        k_stop: &TokenStream,
    ) -> Result<TilePanels, EmitError> {
        let [rl, cl, reduce @ ..] = loops else {
            return Err(self.unsupported("a tile without a row and a column loop"));
        };
        let packed = if block_reduction {
            self.packable(loops)
        } else {
            Vec::new()
        };
        let (copy, mut cx) = if packed.is_empty() {
            (TokenStream::new(), Cx::default())
        } else {
            let (copy, cells) = self.pack(cl, false, reduce, &packed, k_start, k_stop)?;
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
            let (copy, cells) = self.pack(rl, true, reduce, &rows_packed, k_start, k_stop)?;
            // Read from the panel where this copy packs rows, else in place.
            for (v, cell) in cells {
                let x = self.value(&v)?;
                let x = self.float(x, Prec::Lowest, false);
                cx.rows.push((v, quote!(if PR { #cell } else { #x })));
            }
            copy
        };
        Ok(TilePanels {
            columns: packed.len(),
            rows: rows_packed.len(),
            copy,
            row_copy,
            cx,
        })
    }

    /// The loops over the tiles of rows `rs..re` and columns `cs..ce`, each tile
    /// running `body`: without panels, the column tiles outside the row tiles;
    /// with them, the panels filled first, then the rows in blocks of `MC`, the
    /// column tiles outside the row tiles of a block.
    fn tile_loops(
        &self,
        n: &TileNames,
        (rs, re): (&TokenStream, &TokenStream),
        (cs, ce): (&TokenStream, &TokenStream),
        panels: &TilePanels,
        body: &TileBody<'_>,
    ) -> TokenStream {
        let (r_start, c_start, r_tile, c_tile) = (&n.r_start, &n.c_start, &n.r_tile, &n.c_tile);
        let (setup, reduction, finish) = (body.setup, &body.reduction, &body.finish);
        let column_tile = quote! {
            // The last tile moves back to fit and writes only the cells it adds.
            let #c_tile = #c_start.min(#ce - NR as i64);
        };
        let row_tile = quote!(let #r_tile = #r_start.min(#re - MR as i64););
        if panels.columns == 0 {
            // Columns outside rows: the column's loads stay in the cache while
            // every row tile passes over them.
            return quote! {
                for #c_start in (#cs..#ce).step_by(NR) {
                    #column_tile
                    for #r_start in (#rs..#re).step_by(MR) {
                        #row_tile
                        #(#setup)*
                        #reduction
                        #finish
                    }
                }
            };
        }
        let (at, row_at) = (&n.c_at, &n.r_at);
        let (copy, row_copy) = (&panels.copy, &panels.row_copy);
        let (panel, view) = (&n.c_panel, &n.c_packed);
        let (r_block, r_block_end) = (&n.r_block, &n.r_block_end);
        let (c_first, c_next) = (&n.c_first, &n.c_next);
        let t = &self.float;
        let (row_pack, row_start) = if panels.rows == 0 {
            (TokenStream::new(), TokenStream::new())
        } else {
            let (row_panel, row_view) = (&n.r_panel, &n.r_packed);
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

/// The names a tile's code gives the row loop `r`, the column loop `c` and the
/// first reduction loop `k`: their indices, tile starts, panels and counters.
struct TileNames {
    ri: Ident,
    ci: Ident,
    r_start: Ident,
    c_start: Ident,
    r_tile: Ident,
    c_tile: Ident,
    k_block: Ident,
    k_end: Ident,
    c_at: Ident,
    r_at: Ident,
    c_panel: Ident,
    c_packed: Ident,
    r_panel: Ident,
    r_packed: Ident,
    r_block: Ident,
    r_block_end: Ident,
    c_first: Ident,
    c_next: Ident,
}

impl TileNames {
    fn new(r: usize, c: usize, k: usize) -> Self {
        let local = |n: usize, what: &str| ident(&format!("i{n}_{what}"));
        TileNames {
            ri: ident(&format!("i{r}")),
            ci: ident(&format!("i{c}")),
            r_start: local(r, "start"),
            c_start: local(c, "start"),
            r_tile: local(r, "tile"),
            c_tile: local(c, "tile"),
            k_block: local(k, "block"),
            k_end: local(k, "end"),
            c_at: local(c, "at"),
            r_at: local(r, "at"),
            c_panel: local(c, "panel"),
            c_packed: local(c, "packed"),
            r_panel: local(r, "row_panel"),
            r_packed: local(r, "row_packed"),
            r_block: local(r, "block"),
            r_block_end: local(r, "block_end"),
            c_first: local(c, "first"),
            c_next: local(c, "next"),
        }
    }
}

/// A tile's carried variables as arrays of partial results (see
/// [`Gen::tile_carried`]).
#[derive(Default)]
struct TileCarried {
    setup: Vec<TokenStream>,
    load: Vec<TokenStream>,
    save: Vec<TokenStream>,
    result: Vec<TokenStream>,
}

/// A tile's panels (see [`Gen::tile_panels`]): how many loads each packs, the
/// copies filling them, and the reads of their cells.
struct TilePanels {
    columns: usize,
    rows: usize,
    copy: TokenStream,
    row_copy: TokenStream,
    cx: Cx,
}

/// What every tile runs: the carried arrays declared, the reduction, the results
/// written.
struct TileBody<'a> {
    setup: &'a [TokenStream],
    reduction: TokenStream,
    finish: TokenStream,
}
