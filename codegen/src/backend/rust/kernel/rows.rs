//! Row realization: groups of joined blocks, temporaries held one row at a time (on the stack or per thread), and line phases.

use super::*;

impl Gen<'_> {
    /// A group of blocks (one block, or a block and those [joined](crate::loops::Schedule::joined)
    /// to it); one `unsafe` block around it when it has unchecked accesses (so that
    /// each access reads plainly as `*x.get_unchecked(..)`).
    pub(super) fn group(&self, blocks: &[Block]) -> Result<TokenStream, EmitError> {
        *self.unsafe_used.borrow_mut() = false;
        let b = &blocks[0];
        // Joined blocks share their outermost loop only.
        let lone = blocks.len() == 1;
        if lone && self.folds_in_pieces(b) {
            return self.in_pieces(b);
        }
        let depth = self.parallel_depth(blocks);
        let parallel = depth.is_some();
        // This thread's part of an inner parallel loop, the same in every
        // iteration of the loops outside it.
        let mut take_inner = TokenStream::new();
        if let Some(d) = depth.filter(|&d| d > 0) {
            let l = &b.loops[d];
            let (start, end) = self.own_range(l)?;
            let n = l.id.0;
            let (lo, hi) = (ident(&format!("i{n}_lo")), ident(&format!("i{n}_hi")));
            take_inner = match self.line_phase(&b.loops[d..])? {
                Some(phase) => {
                    let step = lit(&format!("{}", Target::BASELINE.share_step));
                    quote!(let (#lo, #hi) = part.range_in_steps(#start, #end, #step, #phase);)
                }
                None => quote!(let (#lo, #hi) = part.range(#start, #end);),
            };
        }
        let code = self.group_code(blocks, depth == Some(0), take_inner)?;
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
    pub(super) fn group_code(
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

    /// For an inner loop `loops[0]` shared out among threads whose mark names a
    /// write its shares align to ([`Schedule::lines`](crate::loops::Schedule::lines),
    /// verified [`line_aligned`](crate::loops::analysis::line_aligned)): how many of
    /// its first iterations lie before a cache line boundary of that write. `None`
    /// without the argument (equal parts).
    pub(super) fn line_phase(&self, loops: &[Loop]) -> Result<Option<TokenStream>, EmitError> {
        let l = &loops[0];
        let n = l.id.0;
        let Some(k) = l.schedule.lines else {
            return Ok(None);
        };
        let writes = crate::loops::analysis::body_accesses(loops, true);
        let Some(w) = writes.get(usize::from(k)) else {
            return Err(self.unsupported("a line-aligned write that is not in the loop"));
        };
        // The element written in the loop's first iteration.
        let mut first = w.clone();
        for s in &mut first.index {
            if let Subscript::Expr(e) = s {
                *e = substitute(e, n, &l.start).simplify();
            }
        }
        let f = self.need(Helper::LinePhase);
        let t = &self.tensors[first.tensor.0];
        let at = self.offset_unchecked(&first)?;
        Ok(Some(quote!(#f(#t.as_ptr(), #at))))
    }

    /// Joined blocks as one loop over their rows: each block's row in turn, its
    /// outer loop's index bound to the shared one. The row-local temporaries they
    /// use get a buffer of one row here (on each thread).
    pub(super) fn joined(
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
    pub(super) fn stack_rows(&self, blocks: &[Block]) -> BTreeMap<TensorId, i64> {
        blocks
            .iter()
            .flat_map(crate::loops::analysis::block_accesses)
            .filter_map(|a| Some((a.access.tensor, self.row_on_stack(a.access.tensor)?)))
            .collect()
    }

    /// The length of a row-local temporary's row when the loops keep it on the
    /// stack (a small literal); other row buffers are allocated per thread by the
    /// kernel and passed in.
    pub(super) fn row_on_stack(&self, t: TensorId) -> Option<i64> {
        self.row_local(t)?;
        row_literal_len(&self.p.tensors[t.0])
    }

    /// The row axis of a temporary this kernel keeps one row of.
    pub(super) fn row_local(&self, t: TensorId) -> Option<usize> {
        let decl = &self.p.tensors[t.0];
        if self.scheduled && decl.kind == TensorKind::Temp {
            decl.row_local
        } else {
            None
        }
    }

    /// `let mut t = [0.0; len];`: one row of a row-local temporary, on the stack.
    pub(super) fn row_buffer(&self, t: TensorId, len: i64) -> TokenStream {
        let id = &self.tensors[t.0];
        let len = lit(&format!("{len}"));
        let (e, zero) = self.elem_zero(t);
        quote!(let mut #id: [#e; #len] = [#zero; #len];)
    }

    /// A tensor's element type and its zero.
    pub(super) fn elem_zero(&self, t: TensorId) -> (TokenStream, TokenStream) {
        match self.p.tensors[t.0].dtype {
            DType::I32 => (quote!(i32), quote!(0)),
            _ => {
                let f = &self.float;
                (quote!(#f), quote!(0.0))
            }
        }
    }
}
