//! Per-CPU dispatch: the loops as one function generic over the target constants, a copy per x86-64 level of [`Target::X86_64`], and the run-time choice.

use super::*;

impl Gen<'_> {
    /// The loops moved into `{name}_loops`, generic over the target constants, with
    /// one copy compiled for each x86-64 feature level: returns those items and the
    /// code that picks one at run time and calls it.
    pub(super) fn per_cpu(
        &self,
        k: &KernelSource,
        body: TokenStream,
        used: &BTreeSet<String>,
        row_lens: &[(TensorId, Ident)],
    ) -> Result<(TokenStream, TokenStream), EmitError> {
        let name = &k.name;
        let loops_fn = ident(&format!("{name}_loops"));
        let mut a = LoopsArgs::default();
        // Threaded: every thread runs the loops on its part; what they write is
        // shared as `Shared` buffers, made once before the threads start.
        let shared = if self.threaded {
            let shared = self.need(Helper::Shared);
            let part = self.need(Helper::Part);
            a.pass(quote!(part: #part<'_>), quote!(part), quote!(part));
            Some(shared)
        } else {
            None
        };
        self.tensor_args(&mut a, shared.as_ref(), row_lens);
        self.size_args(&mut a, used);
        self.piece_args(&mut a, shared.as_ref());
        self.panel_args(&mut a)?;
        let (generics, turbofish) = self.const_generics();
        let (copies, arms) = self.copies(name, &loops_fn, &a, &turbofish);
        let items = self.loops_fn(name, &loops_fn, &generics, &a.params, body);
        let generic = &turbofish[0];
        let run = self.dispatch(&loops_fn, generic, &a, &arms)?;
        Ok((quote!(#items #(#copies)*), run))
    }

    /// The buffers the loops take: the inputs, outputs and temporaries they touch
    /// (outputs and temporaries as `Shared` when threaded; a row a thread keeps for
    /// itself allocated per thread).
    fn tensor_args(
        &self,
        a: &mut LoopsArgs,
        shared: Option<&TokenStream>,
        row_lens: &[(TensorId, Ident)],
    ) {
        let p = self.p;
        let touched = touched_tensors(p);
        let tensors = p.inputs.iter().chain(&p.outputs).copied().chain(
            (0..p.tensors.len()).map(TensorId).filter(|&t| {
                self.tensor_kind(t) == TensorKind::Temp && self.row_on_stack(t).is_none()
            }),
        );
        for tid in tensors {
            if !touched.contains(&tid) {
                continue;
            }
            let id = &self.tensors[tid.0];
            let (e, _) = self.elem_zero(tid);
            let row_len = row_lens.iter().find(|(t, _)| *t == tid).map(|(_, len)| len);
            match self.tensor_kind(tid) {
                TensorKind::Input => {
                    a.params.push(quote!(#id: &[#e]));
                    a.args.push(quote!(#id));
                }
                _ if row_len.is_some() => {
                    // Each thread its own row, lent by the scratch, which holds
                    // every thread's before the threads start.
                    let key = lit(&tid.0.to_string());
                    let (part, parts) = (self.part_index(), self.parts_count());
                    let (kernel, buffer) = (self.kernel_lit(), &self.p.tensors[tid.0].name);
                    a.reserve.push(quote! {
                        scratch.reserve_parts::<#e>(#key, #parts, #row_len, #kernel, #buffer)?;
                    });
                    a.allocs
                        .push(quote!(let mut #id = scratch.part::<#e>(#key, #part, #row_len);));
                    a.params.push(quote!(#id: &mut [#e]));
                    a.args.push(quote!(&mut #id));
                }
                kind => {
                    let buffer = if kind == TensorKind::Temp {
                        quote!(&mut #id)
                    } else {
                        quote!(#id)
                    };
                    match shared {
                        Some(sh) => {
                            a.params.push(quote!(#id: #sh<'_, #e>));
                            a.share.push(quote!(let #id = #sh::new(#buffer);));
                            a.args.push(quote!(#id));
                        }
                        None => {
                            a.params.push(quote!(#id: &mut [#e]));
                            a.args.push(buffer);
                        }
                    }
                }
            }
            a.forward.push(quote!(#id));
        }
    }

    /// The dims and parameters the loops use, as `i64`s.
    fn size_args(&self, a: &mut LoopsArgs, used: &BTreeSet<String>) {
        for d in self.dim_order() {
            if used.contains(&d) {
                let id = &self.dims[&d];
                a.pass(quote!(#id: i64), quote!(#id), quote!(#id));
            }
        }
        for pn in &self.p.params {
            if used.contains(&format!("${pn}")) {
                let id = &self.params[pn];
                a.pass(quote!(#id: i64), quote!(#id), quote!(#id));
            }
        }
    }

    /// Per block folded in pieces: its partial results (`Shared` when threaded),
    /// its piece length and count.
    fn piece_args(&self, a: &mut LoopsArgs, shared: Option<&TokenStream>) {
        let t = &self.float;
        for pc in &self.pieces {
            let n = pc.outer.id.0;
            if let Some(sh) = shared {
                for c in &pc.vars {
                    let b = ident(&format!("v{}_pieces", c.var.0));
                    a.share.push(quote!(let #b = #sh::new(&mut #b);));
                    a.pass(quote!(#b: #sh<'_, #t>), quote!(#b), quote!(#b));
                }
            }
            for what in ["piece_len", "pieces"] {
                let id = ident(&format!("i{n}_{what}"));
                a.pass(quote!(#id: i64), quote!(#id), quote!(#id));
            }
        }
    }

    /// The tiles' packed panels ([`Plan::panels`]), sized before the threads start
    /// by the target of the copy of the loops this CPU runs ([`Gen::by_level`]):
    /// a column panel for every column tile, `KC` reduction iterations (or fewer)
    /// of `NR` cells per load; a row panel (where the target packs rows, else
    /// empty) for one block of rows, `KC` reduction iterations of `MC` cells per
    /// load. The scratch reserves every thread's before the threads start; each
    /// thread then borrows its own.
    fn panel_args(&self, a: &mut LoopsArgs) -> Result<(), EmitError> {
        let t = &self.float;
        let (kernel, part, parts) = (self.kernel_lit(), self.part_index(), self.parts_count());
        for (n, panel) in self.plan.panels.iter().enumerate() {
            let name = &panel.name;
            let buffer = name.to_string();
            let key = lit(&(self.p.tensors.len() + n).to_string());
            let panel_len = ident(&format!("{name}_len"));
            let lens = Target::X86_64
                .iter()
                .map(|target| {
                    let lens = panel
                        .uses
                        .iter()
                        .map(|u| self.panel_len(u, panel.rows, target))
                        .collect::<Result<Vec<_>, EmitError>>()?;
                    Ok(match lens.as_slice() {
                        [one] => one.clone(),
                        [first, rest @ ..] => quote!(#first #(.max(#rest))*),
                        [] => quote!(0_usize),
                    })
                })
                .collect::<Result<Vec<_>, EmitError>>()?;
            let len = self.by_level(&lens);
            a.reserve.push(quote! {
                let #panel_len = #len;
                scratch.reserve_parts::<#t>(#key, #parts, #panel_len, #kernel, #buffer)?;
            });
            // Lent unzeroed: each reduction block packs every column tile's (row
            // block's) cells before any tile reads one ([`Gen::tile`]).
            a.allocs.push(quote! {
                let mut #name = scratch.part_unzeroed::<#t>(#key, #part, #panel_len);
            });
            a.pass(quote!(#name: &mut [#t]), quote!(&mut #name), quote!(#name));
        }
        Ok(())
    }

    /// A value per copy of [`Target::X86_64`] (the baseline's first), as the one
    /// for the CPU's level: a `match` on it with an arm per level whose value is
    /// not the baseline's, or the value when all are alike.
    fn by_level(&self, values: &[TokenStream]) -> TokenStream {
        let baseline = &values[0];
        let own: Vec<_> = (values.iter().enumerate().skip(1).rev())
            .filter(|(_, v)| v.to_string() != baseline.to_string())
            .collect();
        if own.is_empty() {
            return baseline.clone();
        }
        let level = self.need(Helper::CpuLevel);
        let arms = own.into_iter().map(|(n, v)| {
            let n = Literal::usize_unsuffixed(n);
            quote!(#n => #v,)
        });
        quote! {
            match #level() {
                #(#arms)*
                _ => #baseline,
            }
        }
    }

    /// The cells a tile's use `u` of a panel (a row panel when `rows`) needs on
    /// `target`: per load and reduction iteration (at most `KC` of the outermost
    /// loop), every column tile's `NR` cells, `NR` × ⌈columns / `NR`⌉ < columns +
    /// `NR`; or a row block's tiles' `MR`, at most `MC` and fewer than rows + `MR`
    /// (none where the target reads rows in place). Saturating: a size past memory
    /// fails to allocate instead of wrapping to a panel too small.
    fn panel_len(
        &self,
        u: &PanelUse,
        rows: bool,
        target: &Target,
    ) -> Result<TokenStream, EmitError> {
        let span = |l: &Loop| -> Result<TokenStream, EmitError> {
            let (s, e) = self.own_range(l)?;
            Ok(if l.start == Expr::Int(0) {
                e
            } else {
                quote!((#e - #s))
            })
        };
        let along = span(&u.along)?;
        let trips = u.reduce.iter().map(span).collect::<Result<Vec<_>, _>>()?;
        let kc = lit(&target.tile_depth.to_string());
        let len = match trips.as_slice() {
            [first, inner @ ..] if !inner.is_empty() => {
                quote!((#first.min(#kc) #(* #inner)*).max(0))
            }
            trips => quote!(#(#trips)*.clamp(0, #kc)),
        };
        let cells = if !rows {
            let wide = lit(&format!("{}_i64", target.tile_cols - 1));
            quote!(#along.saturating_add(#wide).max(0) as usize)
        } else if target.pack_rows {
            let tall = lit(&format!("{}_i64", target.tile_rows - 1));
            let block = lit(&format!("{}_i64", target.tile_row_block));
            quote!(#along.saturating_add(#tall).clamp(0, #block) as usize)
        } else {
            return Ok(quote!(0_usize));
        };
        let loads = match u.loads {
            1 => TokenStream::new(),
            p => {
                let p = lit(&p.to_string());
                quote!(.saturating_mul(#p))
            }
        };
        Ok(quote!((#len as usize).saturating_mul(#cells) #loads))
    }

    /// The loops function's const generics (the [`Plan::facts`] it uses, in
    /// [`Fact::ALL`]'s order), and per copy of [`Target::X86_64`] the turbofish
    /// giving their values.
    fn const_generics(&self) -> (TokenStream, Vec<TokenStream>) {
        let copies = Target::X86_64;
        let mut generics = Vec::new();
        let mut values = vec![Vec::new(); copies.len()];
        for fact in Fact::ALL
            .into_iter()
            .filter(|f| self.plan.facts.contains(f))
        {
            generics.push(fact.generic());
            for (v, target) in values.iter_mut().zip(&copies) {
                v.push(fact.value(target));
            }
        }
        let turbofish = values
            .iter()
            .map(|v| {
                if v.is_empty() {
                    quote!()
                } else {
                    quote!(::<#(#v),*>)
                }
            })
            .collect();
        let generics = if generics.is_empty() {
            quote!()
        } else {
            quote!(<#(#generics),*>)
        };
        (generics, turbofish)
    }

    /// `#[allow(clippy::too_many_arguments)]` for a loops function or copy of more
    /// than seven parameters.
    fn allow_args(params: &[TokenStream]) -> TokenStream {
        if params.len() > 7 {
            quote!(#[allow(clippy::too_many_arguments)])
        } else {
            quote!()
        }
    }

    /// The loops function `{name}_loops`, generic over the target constants, with
    /// its doc and safety contract.
    fn loops_fn(
        &self,
        name: &str,
        loops_fn: &Ident,
        generics: &TokenStream,
        params: &[TokenStream],
        body: TokenStream,
    ) -> TokenStream {
        let consts = &self.plan.facts;
        let allow_ranges = if consts.iter().any(|c| matches!(c, Fact::Lanes | Fact::Mr)) {
            // Lanes and tile cells are indexed by their position on purpose.
            quote!(#[allow(clippy::needless_range_loop)])
        } else {
            quote!()
        };
        let allow_args = Self::allow_args(params);
        let loops_doc = format!(
            " The loops of [`{name}`], generic over the target: `FMA` (fused multiply-add \
             available), `LANES` (partial results of a split reduction, values per chunk of an element-wise math loop), `MR` × `NR` \
             (register tile), `KC` (reduction block of a tile), `MC` (row block of a tile), `PR` (rows packed per row block), `TB` (cache block of \
             an element-wise nest) and `VEC` (bytes of a vector register), as far as it \
             uses them."
        );
        let safety = if self.plan.panels.is_empty() {
            " Every buffer has the length its shape gives (checked by the kernel)."
        } else {
            " Every buffer has the length its shape gives (checked by the kernel), every \
             column panel room for `KC` × `NR` cells per packed load, inner reduction iteration \
             and column tile, every row panel (when `PR`) for `KC` × `MC` cells per packed load \
             and inner reduction iteration."
        };
        quote! {
            #[doc = #loops_doc]
            ///
            /// # Safety
            ///
            #[doc = #safety]
            #[inline(always)]
            #allow_ranges
            #allow_args
            unsafe fn #loops_fn #generics(#(#params),*) {
                #body
            }
        }
    }

    /// A copy of the loops per level above the baseline, compiled with the level's
    /// features, and the dispatch's arm calling each, widest first.
    fn copies(
        &self,
        name: &str,
        loops_fn: &Ident,
        a: &LoopsArgs,
        turbofish: &[TokenStream],
    ) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let LoopsArgs {
            params,
            args,
            forward,
            ..
        } = a;
        let allow_args = Self::allow_args(params);
        // Inside a thread team the copy returns from the team's closure.
        let done = if self.threaded {
            quote!(return;)
        } else {
            quote!(return Ok(());)
        };
        let mut copy_items = Vec::new();
        let mut arms = Vec::new();
        for (n, (target, fish)) in Target::X86_64.iter().zip(turbofish).enumerate().skip(1) {
            let copy_fn = ident(&format!("{name}_{}", target.name));
            let doc = format!(" [`{name}_loops`] compiled for {}.", target.description);
            let features = target.features;
            copy_items.push(quote! {
                #[doc = #doc]
                #[cfg(target_arch = "x86_64")]
                #[target_feature(enable = #features)]
                #allow_args
                unsafe fn #copy_fn(#(#params),*) {
                    unsafe { #loops_fn #fish(#(#forward),*) }
                }
            });
            let n = Literal::usize_unsuffixed(n);
            arms.push(quote! {
                #n => {
                    unsafe { #copy_fn(#(#args),*) };
                    #done
                }
            });
        }
        arms.reverse();
        (copy_items, arms)
    }

    /// The run-time choice of a copy by the CPU's level (the baseline's generic
    /// loops last), inside a thread team when the kernel is threaded.
    fn dispatch(
        &self,
        loops_fn: &Ident,
        generic: &TokenStream,
        a: &LoopsArgs,
        arms: &[TokenStream],
    ) -> Result<TokenStream, EmitError> {
        let LoopsArgs {
            args,
            share,
            reserve,
            allocs,
            ..
        } = a;
        let level = self.need(Helper::CpuLevel);
        let dispatch = quote! {
            // The widest vectors this CPU has; the lengths were checked above.
            #[cfg(target_arch = "x86_64")]
            match #level() {
                #(#arms)*
                _ => {}
            }
            unsafe { #loops_fn #generic(#(#args),*) };
        };
        Ok(if self.threaded {
            let work = self.parallel_work()?;
            // Its dims are the loops' own, already bound for the body; keep them
            // out of what the sizes function records next.
            let _ = self.take_used();
            // Threads for the parallel loops, as many as the work is worth; the
            // buffers each keeps are taken before they start (a failure is an
            // error returned, not a panic in a thread).
            let run = if reserve.is_empty() {
                let in_parts = self.need(Helper::Parts);
                quote!(#in_parts(#work, |part| { #(#allocs)* #dispatch });)
            } else {
                let (parts_for, run_parts) =
                    (self.need(Helper::PartsFor), self.need(Helper::RunParts));
                let parts = self.parts_count();
                quote! {
                    let #parts = #parts_for(#work);
                    #(#reserve)*
                    #run_parts(#parts, |part| { #(#allocs)* #dispatch });
                }
            };
            quote!(#(#share)* #run)
        } else {
            quote!(#(#reserve)* #(#allocs)* #dispatch)
        })
    }
}

/// What the loops function takes, and what is made before calling it.
#[derive(Default)]
struct LoopsArgs {
    /// The loops function's (and each copy's) parameters.
    params: Vec<TokenStream>,
    /// The kernel's arguments of a call of a copy.
    args: Vec<TokenStream>,
    /// A copy's arguments of its call of the loops function.
    forward: Vec<TokenStream>,
    /// `Shared` buffers, made once before the threads start.
    share: Vec<TokenStream>,
    /// The lengths of the buffers each thread keeps (rows, panels) and their
    /// reserve in the scratch for every thread, before the threads start.
    reserve: Vec<TokenStream>,
    /// Buffers each thread takes from the scratch (rows, panels), reserved.
    allocs: Vec<TokenStream>,
}

impl LoopsArgs {
    /// A parameter passed through unchanged: its declaration, the kernel's argument
    /// and the copy's.
    fn pass(&mut self, param: TokenStream, arg: TokenStream, forward: TokenStream) {
        self.params.push(param);
        self.args.push(arg);
        self.forward.push(forward);
    }
}

/// A fact of a [`Target`] that the loops function takes as a const generic, in
/// the order the generics are declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Fact {
    /// [`Target::fma`].
    Fma,
    /// [`Target::lanes`].
    Lanes,
    /// [`Target::tile_rows`].
    Mr,
    /// [`Target::tile_cols`].
    Nr,
    /// [`Target::tile_depth`].
    Kc,
    /// [`Target::tile_row_block`].
    Mc,
    /// [`Target::pack_rows`].
    Pr,
    /// [`Target::cache_block`].
    Tb,
    /// [`Target::vector_bytes`].
    Vec,
}

impl Fact {
    /// Every fact, in declaration order.
    pub(super) const ALL: [Fact; 9] = [
        Fact::Fma,
        Fact::Lanes,
        Fact::Mr,
        Fact::Nr,
        Fact::Kc,
        Fact::Mc,
        Fact::Pr,
        Fact::Tb,
        Fact::Vec,
    ];

    /// The const generic's name in the generated code.
    pub(super) fn name(self) -> &'static str {
        match self {
            Fact::Fma => "FMA",
            Fact::Lanes => "LANES",
            Fact::Mr => "MR",
            Fact::Nr => "NR",
            Fact::Kc => "KC",
            Fact::Mc => "MC",
            Fact::Pr => "PR",
            Fact::Tb => "TB",
            Fact::Vec => "VEC",
        }
    }

    /// Its declaration, `const FMA: bool` or `const LANES: usize`.
    fn generic(self) -> TokenStream {
        let id = ident(self.name());
        match self {
            Fact::Fma | Fact::Pr => quote!(const #id: bool),
            _ => quote!(const #id: usize),
        }
    }

    /// Its value on `target`.
    fn value(self, target: &Target) -> TokenStream {
        let flag = |on: bool| if on { quote!(true) } else { quote!(false) };
        let n = match self {
            Fact::Fma => return flag(target.fma),
            Fact::Pr => return flag(target.pack_rows),
            Fact::Lanes => target.lanes,
            Fact::Mr => target.tile_rows,
            Fact::Nr => target.tile_cols,
            Fact::Kc => target.tile_depth,
            Fact::Mc => target.tile_row_block,
            Fact::Tb => target.cache_block,
            Fact::Vec => target.vector_bytes,
        };
        Literal::u32_unsuffixed(n).into_token_stream()
    }
}
