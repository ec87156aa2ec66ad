//! Block realization: element-wise nests in `TB` × `TB` cache blocks, and transposed copies.

use super::*;

impl Gen<'_> {
    /// A nest `R C` run in `TB × TB` blocks, rows of blocks outermost.
    pub(super) fn blocked(
        &self,
        rl: &Loop,
        cl: &Loop,
        range: Option<(TokenStream, TokenStream)>,
    ) -> Result<TokenStream, EmitError> {
        let (rs, re) = match range {
            Some(r) => r,
            None => self.range(rl)?,
        };
        let (cs, ce) = self.range(cl)?;
        if let Some((dst, src)) = self.transpose_copy(rl, cl) {
            return self.blocked_transpose(rl, cl, dst, src, (rs, re), (cs, ce));
        }
        let (r, c) = (rl.id.0, cl.id.0);
        let local = |n: usize, what: &str| ident(&format!("i{n}_{what}"));
        let (r_block, r_end) = (local(r, "block"), local(r, "end"));
        let (c_block, c_end) = (local(c, "block"), local(c, "end"));
        let used = |n| uses_index(std::slice::from_ref(cl), n);
        let ri = ident(&format!("{}i{r}", if used(r) { "" } else { "_" }));
        let ci = ident(&format!("{}i{c}", if used(c) { "" } else { "_" }));
        let stmts = self.stmts(&cl.stmts)?;
        Ok(quote! {
            for #r_block in (#rs..#re).step_by(TB) {
                let #r_end = (#r_block + TB as i64).min(#re);
                for #c_block in (#cs..#ce).step_by(TB) {
                    let #c_end = (#c_block + TB as i64).min(#ce);
                    for #ri in #r_block..#r_end {
                        for #ci in #c_block..#c_end {
                            #stmts
                        }
                    }
                }
            }
        })
    }

    /// The accesses of a blocked nest the [`Helper::Transpose`] helper can copy: the
    /// [`transpose_plan`](crate::plan::transpose_plan) both backends follow, within
    /// the helper's limits (into a tensor this kernel writes, between buffers it
    /// holds whole).
    pub(super) fn transpose_copy<'l>(
        &self,
        rl: &Loop,
        cl: &'l Loop,
    ) -> Option<(&'l Access, &'l Access)> {
        let (dst, src) = crate::plan::transpose_plan(self.p, rl, cl)?;
        let whole = |a: &Access| self.row_local(a.tensor).is_none();
        (whole(dst) && whole(src) && self.tensor_kind(dst.tensor) != TensorKind::Input)
            .then_some((dst, src))
    }

    /// A [`Self::transpose_copy`] nest, copied by the [`Helper::Transpose`] helper
    /// (which tiles it) from its first element's place in either tensor and the
    /// strides of the other direction: one call for the rows this thread owns.
    pub(super) fn blocked_transpose(
        &self,
        rl: &Loop,
        cl: &Loop,
        dst: &Access,
        src: &Access,
        (rs, re): (TokenStream, TokenStream),
        (cs, ce): (TokenStream, TokenStream),
    ) -> Result<TokenStream, EmitError> {
        *self.unsafe_used.borrow_mut() = true;
        let (r, c) = (rl.id.0, cl.id.0);
        let (ri, ci) = (ident(&format!("i{r}")), ident(&format!("i{c}")));
        let (rows, cols) = (ident(&format!("i{r}_rows")), ident(&format!("i{c}_cols")));
        let pointer = |a: &Access, write: bool| {
            let x = &self.tensors[a.tensor.0];
            let base =
                if write || (self.threaded && self.tensor_kind(a.tensor) != TensorKind::Input) {
                    quote!(#x.as_mut_ptr())
                } else {
                    quote!(#x.as_ptr())
                };
            let at = self.offset_unchecked(a)?;
            Ok::<_, EmitError>(quote!(#base.add(#at)))
        };
        let (to, from) = (pointer(dst, true)?, pointer(src, false)?);
        let stride = |a: &Access, l: usize| match crate::loops::analysis::unit_axis(a, l) {
            Some(axis) => self.row_stride(a.tensor, axis),
            None => Err(self.unsupported("a transposed copy's stride")),
        };
        let (to_stride, from_stride) = (stride(dst, r)?, stride(src, c)?);
        let f = self.need(Helper::Transpose(self.is32));
        Ok(quote! {
            let (#ri, #ci) = (#rs, #cs);
            let (#rows, #cols) = ((#re - #ri) as usize, (#ce - #ci) as usize);
            #f(#from, #from_stride, #to, #to_stride, #rows, #cols, VEC);
        })
    }
}
