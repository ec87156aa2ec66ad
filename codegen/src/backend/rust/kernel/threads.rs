//! Thread realization: blocks folded in pieces, the parallel work of a kernel, and the groups each thread runs.

use super::*;

impl Gen<'_> {
    /// A block folded in pieces: each thread folds its share of the pieces into
    /// fresh variables and keeps each piece's results in `v{var}_pieces`; after a
    /// barrier the first thread combines them in piece order and runs the block's
    /// statements. The pieces do not depend on the thread count, so neither does
    /// the result.
    pub(super) fn in_pieces(&self, b: &Block) -> Result<TokenStream, EmitError> {
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

    /// For each block folded in pieces: the piece length and count, and a buffer
    /// per carried variable for the pieces' results (lent by the scratch as a
    /// temporary of `pieces` values, before the threads start), all fixed by the
    /// sizes alone.
    pub(super) fn piece_buffers(&self) -> Result<TokenStream, EmitError> {
        let mut out = TokenStream::new();
        let t = &self.float;
        // The scratch's keys after the temporaries' and the panels'.
        let mut keys = self.p.tensors.len() + self.plan.panels.len()..;
        for pc in &self.pieces {
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
            // Taken before the threads start, checked: a count past memory is an
            // error naming the buffer.
            let kernel = self.kernel_lit();
            let buffers = pc.vars.iter().map(|c| {
                let name = format!("v{}_pieces", c.var.0);
                let b = ident(&name);
                let key = lit(&keys.next().unwrap_or_default().to_string());
                quote!(let mut #b = scratch.zeroed::<#t>(#key, #kernel, #name, &[#count])?;)
            });
            out.extend(quote! {
                let #len = #len_value;
                let #count = (#span + #len - 1) / #len;
                #(#buffers)*
            });
        }
        Ok(out)
    }

    /// The iterations of the blocks that run on several threads, as a saturating
    /// sum of products of the loop ranges that do not depend on other loops.
    pub(super) fn parallel_work(&self) -> Result<TokenStream, EmitError> {
        let mut blocks = Vec::new();
        for b in &self.p.blocks {
            if !threads_work(b) {
                continue;
            }
            let mut spans = Vec::new();
            for m in &b.loops {
                let free = |e: &Expr| b.loops.iter().all(|o| !e.indices().contains(&o.id.0));
                if free(&m.start) && free(&m.end) {
                    let (s, e) = self.own_range(m)?;
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
    /// The blocks folded in pieces ([`Gen::in_pieces`]), in the order the kernel
    /// runs them: planned before anything is emitted, since the kernel allocates
    /// their buffers and the per-CPU loops take them as arguments.
    pub(super) fn pieces_plan(&self) -> Vec<Pieces> {
        self.groups()
            .into_iter()
            .filter_map(|group| match group {
                [b] if self.folds_in_pieces(b) => Some(Pieces {
                    outer: b.loops[0].clone(),
                    inner: b.loops[1..].to_vec(),
                    vars: b.carried.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// Whether block `b`, alone in its group, runs [`Gen::in_pieces`].
    pub(super) fn folds_in_pieces(&self, b: &Block) -> bool {
        self.threaded && b.loops.first().is_some_and(|l| l.schedule.pieces)
    }

    pub(super) fn groups(&self) -> Vec<&[Block]> {
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
}

/// Iterations of a block folded in pieces that one piece holds (the outer loop's
/// iterations times the inner loops'): as many as a thread must get before a team
/// starts, so two pieces are enough for two threads. A fixed number, so the result
/// does not depend on the thread count.
pub(super) const PIECE: i64 = 1 << 15;

/// Whether some loop of `b` may run on several threads.
pub(super) fn threads_work(b: &Block) -> bool {
    b.loops.iter().any(|l| l.schedule.parallel)
        || b.loops.first().is_some_and(|l| l.schedule.pieces)
}
