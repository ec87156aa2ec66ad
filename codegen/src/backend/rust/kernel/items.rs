//! Items: the shapes struct, the sizes function, the kernel function and its doc comment.

use super::*;

impl Gen<'_> {
    /// Every expression the kernel evaluates before its loops that could overflow:
    /// output and temporary shapes, assertion sides and loop bounds without loop
    /// indices. Literals, dims and params are left out (they cannot).
    pub(super) fn entry_sizes(&self) -> Vec<Expr> {
        let mut out: Vec<Expr> = Vec::new();
        let mut add = |e: &Expr| {
            let trivial = matches!(e, Expr::Int(_) | Expr::Name(_) | Expr::Param(_));
            if !trivial && e.indices().is_empty() && !out.contains(e) {
                out.push(e.clone());
            }
        };
        for spec in &self.sig.outputs {
            spec.shape.iter().for_each(&mut add);
        }
        for t in &self.p.tensors {
            if t.kind == TensorKind::Temp {
                t.shape.iter().for_each(&mut add);
            }
        }
        for (l, r) in &self.sig.assertions {
            add(l);
            add(r);
        }
        for b in &self.p.blocks {
            for l in &b.loops {
                add(&l.start);
                add(&l.end);
            }
        }
        out
    }

    pub(super) fn take_used(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.used.borrow_mut())
    }

    /// `let [n, k] = dims("kernel", "x", x_shape)?;` for every input, with `_` for
    /// dims `wanted` does not contain, plus the conflict and fixed-size checks when
    /// `checks` is set.
    pub(super) fn bind_dims(
        &self,
        scope: &mut Scope,
        wanted: &BTreeSet<String>,
        checks: bool,
    ) -> Result<TokenStream, EmitError> {
        let kernel = self.kernel_lit();
        let mut out = TokenStream::new();
        let mut bound: HashMap<&str, &str> = HashMap::new();
        let mut wanted = wanted.clone();
        if checks {
            // A dim another input also names is compared, so it is always bound.
            let mut seen = BTreeSet::new();
            for spec in &self.sig.inputs {
                for d in &spec.shape {
                    if let Expr::Name(n) = d
                        && !seen.insert(n.clone())
                    {
                        wanted.insert(n.clone());
                    }
                }
            }
        }
        for (spec, t) in self.sig.inputs.iter().zip(&self.p.inputs) {
            let input_name = spec.name.as_str();
            let mut pats = Vec::new();
            let mut tests = Vec::new();
            for (axis, d) in spec.shape.iter().enumerate() {
                match d {
                    Expr::Name(n) if !bound.contains_key(n.as_str()) => {
                        bound.insert(n, input_name);
                        if wanted.contains(n) {
                            let id = &self.dims[n];
                            pats.push(quote!(#id));
                        } else {
                            pats.push(quote!(_));
                        }
                    }
                    Expr::Name(n) if checks => {
                        let id = &self.dims[n];
                        let other = ident(&scope.fresh(&format!("{n}_{input_name}")));
                        let first_input = bound[n.as_str()];
                        let n = n.as_str();
                        tests.push(quote! {
                            if #other != #id {
                                return Err(KernelError::DimConflict {
                                    kernel: #kernel,
                                    dim: #n,
                                    first_input: #first_input,
                                    first: #id as usize,
                                    second_input: #input_name,
                                    second: #other as usize,
                                });
                            }
                        });
                        pats.push(quote!(#other));
                    }
                    Expr::Int(v) if checks => {
                        let got = ident(&scope.fresh(&format!("{input_name}_{axis}")));
                        let expected = lit(&v.to_string());
                        let axis = lit(&axis.to_string());
                        tests.push(quote! {
                            if #got != #expected {
                                return Err(KernelError::FixedSize {
                                    kernel: #kernel,
                                    input: #input_name,
                                    axis: #axis,
                                    expected: #expected,
                                    found: #got as usize,
                                });
                            }
                        });
                        pats.push(quote!(#got));
                    }
                    _ => pats.push(quote!(_)),
                }
            }
            // Checking that every size fits in i64 is worth a line even when no dim is used.
            let named = pats.iter().any(|p| p.to_string() != "_");
            if named || (checks && !spec.shape.is_empty()) {
                let shape_arg = self.shape_arg(*t);
                let f = self.need(Helper::Dims);
                let pat = if named {
                    quote!(let [#(#pats),*] =)
                } else {
                    quote!()
                };
                out.extend(quote! {
                    #pat #f(#kernel, #input_name, #shape_arg)?;
                });
            }
            out.extend(tests);
        }
        Ok(out)
    }

    pub(super) fn shape_arg(&self, t: TensorId) -> Ident {
        // Names come from the scope: `{tensor ident}_shape`, which `items` reserved.
        ident(&format!("{}_shape", self.tensors[t.0]))
    }

    /// The kernel's items: its shapes struct and function, its sizes function, the
    /// kernel function and its per-CPU loops. The body is generated first: what it
    /// uses decides which dims the kernel binds; the shapes function binds what the
    /// shapes, the sizes and the assertions use.
    pub(super) fn items(
        &self,
        k: &KernelSource,
        scope: &mut Scope,
    ) -> Result<TokenStream, EmitError> {
        self.reserve_shape_names(scope)?;
        let names = ItemNames::new(k);
        let body = self.kernel_body(k, scope)?;
        let sizes = self.sizes_fn(k, &names.sizes_fn)?;
        let shapes = self.shapes_parts()?;
        let asserts = self.assertions()?;
        let sizes_call = self.sizes_call(&names.sizes_fn, &sizes.args);
        let shapes_used = {
            let mut u = self.take_used();
            u.extend(sizes.args.iter().filter_map(|a| self.name_of(a)));
            u
        };
        let mut shapes_scope = scope.clone();
        let shapes_binds = self.bind_dims(&mut shapes_scope, &shapes_used, true)?;
        let _ = self.take_used();
        let sig = self.signature_parts(&shapes_used);
        let mut kernel_scope = scope.clone();
        let kernel_binds = self.bind_dims(&mut kernel_scope, &body.used, false)?;
        let docs = self.item_docs(k, body.unchecked || body.dispatched);

        let ItemNames {
            shapes_fn,
            kernel_fn,
            shapes_ty,
            ..
        } = names;
        let ShapesParts {
            fields: shape_fields,
            values: shape_values,
            len_methods,
            element_checks,
        } = shapes;
        let SignatureParts {
            shape_params,
            buffer_params,
            shape_args,
            len_checks,
            param_params,
            shapes_param_params,
            out_params,
            zero_fills,
            call_args,
        } = sig;
        let ItemDocs {
            shapes: shapes_doc,
            shapes_fn: shapes_fn_doc,
            shapes_allow,
            ..
        } = &docs;
        let KernelBody {
            per_cpu,
            body,
            temps,
            ..
        } = body;
        let sizes_item = sizes.item;
        // A crate may call only some of a file's kernels: an unused one is not worth
        // a warning there (and what the kernel calls is then not reported either).
        let unused_ok = quote!(#[allow(dead_code)]);
        let params = quote!(#(#buffer_params,)* #(#param_params,)* #(#out_params),*);
        let run = quote! {
            let shapes = #shapes_fn(#(#shape_args),*)?;
            #(#len_checks)*
            #kernel_binds
            #(#zero_fills)*
            #temps
            #body
            Ok(())
        };
        let kernel_items = self.kernel_fns(k, &kernel_fn, &params, &call_args, &run, &docs);
        Ok(quote! {
            #[doc = #shapes_doc]
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            #unused_ok
            pub struct #shapes_ty {
                #(#shape_fields,)*
            }

            #unused_ok
            impl #shapes_ty {
                #(#len_methods)*
            }

            #(#[doc = #shapes_fn_doc])*
            #shapes_allow
            #unused_ok
            pub fn #shapes_fn(#(#shape_params,)* #(#shapes_param_params),*) -> Result<#shapes_ty, KernelError> {
                #shapes_binds
                #sizes_call
                #(#asserts)*
                let shapes = #shapes_ty { #(#shape_values),* };
                #(#element_checks)*
                Ok(shapes)
            }

            #sizes_item

            #kernel_items

            #per_cpu
        })
    }

    /// The kernel's entry: `NAME` running `run`; when the loops take memory from a
    /// scratch, `NAME_with_scratch` runs it and `NAME` calls that with a fresh one.
    fn kernel_fns(
        &self,
        k: &KernelSource,
        kernel_fn: &Ident,
        params: &TokenStream,
        call_args: &[TokenStream],
        run: &TokenStream,
        docs: &ItemDocs,
    ) -> TokenStream {
        let (kernel_doc, fast_doc) = (&docs.kernel, &docs.fast);
        let (allow, with_allow) = (&docs.allow, &docs.with_allow);
        // Unused kernels are not worth a warning, as in `items`.
        let unused_ok = quote!(#[allow(dead_code)]);
        if self.takes_scratch() {
            // The loops' own memory comes from a scratch: a fresh one per call of
            // the kernel, or one the caller keeps between calls.
            let with_fn = ident(&format!("{}_with_scratch", k.name));
            let scratch = self.need(Helper::Scratch);
            let mut with_doc = vec![format!(
                " [`{}`], taking the memory its loops use (temporaries, rows, panels) \
                 from `scratch`, which keeps it for the next call: a call with the \
                 shapes of an earlier one on the same scratch allocates nothing.",
                k.name
            )];
            with_doc.extend(fast_doc.iter().cloned());
            with_doc.extend([
                String::new(),
                " # Errors".into(),
                String::new(),
                format!(" As [`{}`].", k.name),
            ]);
            quote! {
                #(#[doc = #kernel_doc])*
                #allow
                #unused_ok
                pub fn #kernel_fn(#params) -> Result<(), KernelError> {
                    #with_fn(&#scratch::new(), #(#call_args),*)
                }

                #(#[doc = #with_doc])*
                #with_allow
                #unused_ok
                pub fn #with_fn(scratch: &#scratch, #params) -> Result<(), KernelError> {
                    #run
                }
            }
        } else {
            quote! {
                #(#[doc = #kernel_doc])*
                #(#[doc = #fast_doc])*
                #allow
                #unused_ok
                pub fn #kernel_fn(#params) -> Result<(), KernelError> {
                    #run
                }
            }
        }
    }

    /// Reserves `{tensor}_shape` for every input's shape argument; an error when a
    /// tensor already has that name.
    fn reserve_shape_names(&self, scope: &mut Scope) -> Result<(), EmitError> {
        for (spec, input) in self.sig.inputs.iter().zip(&self.p.inputs) {
            let name = format!("{}_shape", self.tensors[input.0]);
            if scope.fresh(&name) != name {
                return Err(self.unsupported(format!(
                    "`{name}` names both a tensor and the shape of `{}`",
                    spec.name
                )));
            }
        }
        Ok(())
    }

    /// The Rust type of an element of `dtype`.
    fn elem(&self, dtype: DType) -> TokenStream {
        let t = &self.float;
        match dtype {
            DType::I32 => quote!(i32),
            _ => quote!(#t),
        }
    }

    /// The kernel function's body: the groups' loops (through the per-CPU copies in
    /// a scheduled kernel), and the temporaries they use, allocated before them.
    fn kernel_body(&self, k: &KernelSource, scope: &mut Scope) -> Result<KernelBody, EmitError> {
        let _ = self.take_used();
        let mut body = TokenStream::new();
        // Whether some group holds unchecked accesses (in an `unsafe` block).
        let mut unchecked = false;
        for group in self.groups() {
            body.extend(self.group(group)?);
            unchecked |= *self.unsafe_used.borrow();
        }
        // The per-CPU dispatch calls the loops' copies in `unsafe` blocks.
        let dispatched = self.scheduled && !body.is_empty();
        let (mut temps, row_lens) = self.temporaries(scope)?;
        temps.extend(self.piece_buffers()?);
        let used = self.take_used();
        let (per_cpu, body) = if self.scheduled && !body.is_empty() {
            self.per_cpu(k, body, &used, &row_lens)?
        } else {
            (TokenStream::new(), body)
        };
        Ok(KernelBody {
            per_cpu,
            body,
            temps,
            unchecked,
            dispatched,
            used,
        })
    }

    /// The temporaries' allocations, and the row buffers the kernel allocates (per
    /// thread) with the variable holding each one's length.
    fn temporaries(
        &self,
        scope: &mut Scope,
    ) -> Result<(TokenStream, Vec<(TensorId, Ident)>), EmitError> {
        let kernel = self.kernel_lit();
        let mut temps = TokenStream::new();
        let mut row_lens = Vec::new();
        for (i, decl) in self.p.tensors.iter().enumerate() {
            if decl.kind != TensorKind::Temp {
                continue;
            }
            let id = &self.tensors[i];
            let dims = decl
                .shape
                .iter()
                .map(|e| self.idx(e).map(|x| x.0))
                .collect::<Result<Vec<_>, _>>()?;
            let name = decl.name.as_str();
            if let Some(axis) = self.row_local(TensorId(i)) {
                // The loops keep one row; its shape and the whole one must be valid.
                let f = self.need(Helper::BufferLen);
                temps.extend(quote!(#f(#kernel, #name, &[#(#dims),*])?;));
                if row_literal_len(decl).is_none() {
                    let mut row = dims.clone();
                    row[axis] = quote!(1);
                    let len = ident(&scope.fresh(&format!("{id}_row")));
                    temps.extend(quote!(let #len = #f(#kernel, #name, &[#(#row),*])?;));
                    row_lens.push((TensorId(i), len));
                }
                continue;
            }
            let e = self.elem(decl.dtype);
            // Lent by the scratch (kept between calls), starting a cache line.
            let key = lit(&i.to_string());
            temps.extend(quote! {
                let mut #id = scratch.zeroed::<#e>(#key, #kernel, #name, &[#(#dims),*])?;
            });
        }
        Ok((temps, row_lens))
    }

    /// The sizes function `{kernel}_sizes` (none when the kernel evaluates no size
    /// before its loops) and the dims and parameters it takes.
    fn sizes_fn(&self, k: &KernelSource, sizes_fn: &Ident) -> Result<SizesFn, EmitError> {
        let mut out = SizesFn {
            item: TokenStream::new(),
            args: Vec::new(),
        };
        if self.sizes.is_empty() {
            return Ok(out);
        }
        let exprs = self
            .sizes
            .iter()
            .map(|e| self.checked_idx(e))
            .collect::<Result<Vec<_>, _>>()?;
        let used = self.take_used();
        let docs: Vec<String> = self.sizes.iter().map(|e| format!(" - `{e}`")).collect();
        for name in self.dim_order() {
            if used.contains(&name) {
                out.args.push(self.dims[&name].clone());
            }
        }
        for pn in &self.sig.params {
            if used.contains(&format!("${pn}")) {
                out.args.push(self.params[pn].clone());
            }
        }
        let params = out.args.iter().map(|a| quote!(#a: i64));
        let n = lit(&self.sizes.len().to_string());
        let doc = format!(
            " The sizes `{}` evaluates from its dims and parameters before it runs, \
             or `None` when one overflows or divides by zero:",
            k.name
        );
        out.item = quote! {
            #[doc = #doc]
            #(#[doc = #docs])*
            fn #sizes_fn(#(#params),*) -> Option<[i64; #n]> {
                Some([#(#exprs),*])
            }
        };
        Ok(out)
    }

    /// The shapes struct's fields and `_len` methods, and the shapes function's
    /// values and element-count checks, one per output.
    fn shapes_parts(&self) -> Result<ShapesParts, EmitError> {
        let kernel = self.kernel_lit();
        let mut parts = ShapesParts::default();
        for (spec, o) in self.sig.outputs.iter().zip(&self.p.outputs) {
            let f = &self.tensors[o.0];
            let rank = lit(&spec.rank().to_string());
            let doc = format!(
                " Shape of the output `{}`: `{}`.",
                spec.name,
                list(&spec.shape)
            );
            parts
                .fields
                .push(quote!(#[doc = #doc] pub #f: [usize; #rank]));
            let vals = spec
                .shape
                .iter()
                .map(|e| self.entry_usize(e))
                .collect::<Result<Vec<_>, _>>()?;
            parts.values.push(quote!(#f: [#(#vals),*]));
            let check = self.need(Helper::CheckElements);
            let name = spec.name.as_str();
            parts
                .element_checks
                .push(quote!(#check(#kernel, #name, &shapes.#f)?;));
            let m = ident(&format!("{f}_len"));
            let doc = format!(
                " Elements of `{}`: the length `{}` requires of that buffer.",
                spec.name, self.name
            );
            parts.len_methods.push(quote! {
                #[doc = #doc]
                pub fn #m(&self) -> usize {
                    self.#f.iter().product()
                }
            });
        }
        Ok(parts)
    }

    /// The shapes function's check of each `assert`.
    fn assertions(&self) -> Result<Vec<TokenStream>, EmitError> {
        let kernel = self.kernel_lit();
        let mut asserts = Vec::new();
        for (l, r) in &self.sig.assertions {
            let (lv, rv) = (self.entry_value(l)?, self.entry_value(r)?);
            let (ls, rs) = (l.to_string(), r.to_string());
            asserts.push(quote! {
                if #lv != #rv {
                    return Err(KernelError::Assertion {
                        kernel: #kernel,
                        left: #ls,
                        right: #rs,
                        left_value: #lv,
                        right_value: #rv,
                    });
                }
            });
        }
        Ok(asserts)
    }

    /// The shapes function's call of the sizes function: `let sizes = …;` when an
    /// output size or an assertion side reads `sizes[k]` (see `entry_value`), the
    /// bare call (its overflow check) otherwise, nothing without sizes.
    fn sizes_call(&self, sizes_fn: &Ident, args: &[Ident]) -> TokenStream {
        if self.sizes.is_empty() {
            return quote!();
        }
        let kernel = self.kernel_lit();
        let uses = self
            .sig
            .outputs
            .iter()
            .flat_map(|spec| &spec.shape)
            .chain(self.sig.assertions.iter().flat_map(|(l, r)| [l, r]))
            .any(|e| self.sizes.contains(e));
        let call = quote!(#sizes_fn(#(#args),*).ok_or(KernelError::Overflow { kernel: #kernel })?);
        if uses {
            quote!(let sizes = #call;)
        } else {
            quote!(#call;)
        }
    }

    /// The parameters and argument checks of the shapes and kernel functions: a
    /// buffer and a shape per input, one argument per parameter (`_`-prefixed in the
    /// shapes function when `shapes_used` lacks it), a buffer per output (zeroed
    /// first unless the loops write it whole first).
    fn signature_parts(&self, shapes_used: &BTreeSet<String>) -> SignatureParts {
        let kernel = self.kernel_lit();
        let mut s = SignatureParts::default();
        for (spec, i) in self.sig.inputs.iter().zip(&self.p.inputs) {
            let (x, xs) = (&self.tensors[i.0], self.shape_arg(*i));
            let rank = lit(&spec.rank().to_string());
            let e = self.elem(spec.dtype);
            // A rank-0 input has nothing for its shapes function to check.
            let unused = ident(&format!("_{xs}"));
            let shape_param = if spec.shape.is_empty() { &unused } else { &xs };
            s.shape_params.push(quote!(#shape_param: [usize; #rank]));
            s.buffer_params.push(quote!(#x: &[#e], #xs: [usize; #rank]));
            s.call_args.extend([quote!(#x), quote!(#xs)]);
            s.shape_args.push(quote!(#xs));
            let f = self.need(Helper::CheckLen);
            let name = spec.name.as_str();
            s.len_checks
                .push(quote!(#f(#kernel, #name, #x.len(), &#xs)?;));
        }
        for pn in &self.sig.params {
            let id = &self.params[pn];
            s.param_params.push(quote!(#id: i64));
            s.call_args.push(quote!(#id));
            let sid = if shapes_used.contains(&format!("${pn}")) {
                id.clone()
            } else {
                ident(&format!("_{id}"))
            };
            s.shapes_param_params.push(quote!(#sid: i64));
            s.shape_args.push(quote!(#id));
        }
        for (spec, o) in self.sig.outputs.iter().zip(&self.p.outputs) {
            let y = &self.tensors[o.0];
            let e = self.elem(spec.dtype);
            s.out_params.push(quote!(#y: &mut [#e]));
            s.call_args.push(quote!(#y));
            let f = self.need(Helper::CheckLen);
            let name = spec.name.as_str();
            s.len_checks
                .push(quote!(#f(#kernel, #name, #y.len(), &shapes.#y)?;));
            if !crate::loops::analysis::fully_written_first(self.p, *o) {
                let zero = if spec.dtype == DType::I32 {
                    quote!(0)
                } else {
                    quote!(0.0)
                };
                s.zero_fills.push(quote!(#y.fill(#zero);));
            }
        }
        s
    }

    /// The items' doc comments and `allow` attributes; `unsafe_doc` adds the
    /// paragraph on the kernel's `unsafe` blocks.
    fn item_docs(&self, k: &KernelSource, unsafe_doc: bool) -> ItemDocs {
        let sig = &self.sig;
        let shapes = format!(
            " Output shapes of [`{}`], computed by [`{}_shapes`] from the input shapes{}.",
            k.name,
            k.name,
            if sig.params.is_empty() {
                ""
            } else {
                " and parameters"
            }
        );
        let shapes_fn = vec![
            format!(
                " The output shapes of [`{}`] for inputs of the given shapes{}: what to \
                 allocate before calling it.",
                k.name,
                if sig.params.is_empty() {
                    ""
                } else {
                    " and these parameters"
                }
            ),
            String::new(),
            " # Errors".into(),
            String::new(),
            format!(
                " [`KernelError`] when the shapes do not fit the contract documented on [`{}`].",
                k.name
            ),
        ];
        let args = sig.inputs.len() * 2 + sig.params.len() + sig.outputs.len();
        // The signature mirrors the program: a buffer and a shape per input, one
        // argument per parameter and output (and the scratch).
        let allow_over = |limit: usize| {
            if args > limit {
                quote!(#[allow(clippy::too_many_arguments)])
            } else {
                quote!()
            }
        };
        let (allow, with_allow) = (allow_over(7), allow_over(6));
        let shapes_allow = if sig.inputs.len() + sig.params.len() > 7 {
            quote!(#[allow(clippy::too_many_arguments)])
        } else {
            quote!()
        };
        let mut fast = Vec::new();
        if self.checks == Checks::Proven && unsafe_doc {
            fast.push(String::new());
            fast.push(
                " `unsafe` blocks hold the loops whose accesses skip bounds checks: those \
                 the bounds pass proved in range for every size this function accepts, \
                 and those just checked by `offset`. Both rely on the buffer lengths \
                 checked above them."
                    .to_string(),
            );
        }
        ItemDocs {
            shapes,
            shapes_fn,
            kernel: self.kernel_doc(k),
            fast,
            allow,
            with_allow,
            shapes_allow,
        }
    }

    /// Dims in binding order (first input first).
    pub(super) fn dim_order(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for spec in &self.sig.inputs {
            for d in &spec.shape {
                if let Expr::Name(n) = d
                    && !out.contains(n)
                {
                    out.push(n.clone());
                }
            }
        }
        out
    }

    /// The program name (`N` or `$kh`) behind a generated dim or param identifier.
    pub(super) fn name_of(&self, id: &Ident) -> Option<String> {
        self.dims
            .iter()
            .find(|(_, v)| *v == id)
            .map(|(k, _)| k.clone())
            .or_else(|| {
                self.params
                    .iter()
                    .find(|(_, v)| *v == id)
                    .map(|(k, _)| format!("${k}"))
            })
    }

    pub(super) fn kernel_doc(&self, k: &KernelSource) -> Vec<String> {
        let mut d = vec![
            format!(" `{}`, generated by uop from this program:", k.name),
            String::new(),
            " ```text".into(),
        ];
        d.extend(k.text.lines().map(|l| format!(" {l}")));
        d.push(" ```".into());
        if !k.note.is_empty() {
            d.push(String::new());
            d.extend(k.note.lines().map(|l| format!(" {l}")));
        }
        d.push(String::new());
        d.push(" # Shapes".into());
        d.push(String::new());
        let sig = &k.signature;
        for t in &sig.inputs {
            d.push(format!(
                " - input `{}`: `{}{}`",
                t.name,
                t.dtype,
                list(&t.shape)
            ));
        }
        for pn in &sig.params {
            d.push(format!(" - parameter `${pn}`"));
        }
        for t in &sig.outputs {
            d.push(format!(
                " - output `{}`: `{}{}`",
                t.name,
                t.dtype,
                list(&t.shape)
            ));
        }
        for (l, r) in &sig.assertions {
            d.push(format!(" - assertion `{l} == {r}`"));
        }
        d.push(String::new());
        d.push(
            " Each buffer is dense and row-major, its length the product of its shape. \
             Dims with the same name must be equal; outputs are fully overwritten."
                .into(),
        );
        d.push(String::new());
        d.push(" # Errors".into());
        d.push(String::new());
        d.push(format!(
            " [`KernelError`] when a buffer length, a dimension or an assertion does not \
             hold; nothing is written then. [`{}_shapes`] gives the output shapes.",
            k.name
        ));
        d
    }
}

/// The names of a kernel's items.
struct ItemNames {
    /// `{kernel}_shapes`
    shapes_fn: Ident,
    /// `{kernel}_sizes`
    sizes_fn: Ident,
    /// `{kernel}`
    kernel_fn: Ident,
    /// `{Kernel}Shapes`
    shapes_ty: Ident,
}

impl ItemNames {
    fn new(k: &KernelSource) -> ItemNames {
        ItemNames {
            shapes_fn: ident(&format!("{}_shapes", k.name)),
            sizes_fn: ident(&format!("{}_sizes", k.name)),
            kernel_fn: ident(&k.name),
            shapes_ty: ident(&format!("{}Shapes", camel(&k.name))),
        }
    }
}

/// The kernel function's body ([`Gen::kernel_body`]).
struct KernelBody {
    /// The per-CPU copies of the loops and their dispatch (empty when unscheduled).
    per_cpu: TokenStream,
    /// The loops, or the call of their per-CPU copy.
    body: TokenStream,
    /// The temporaries' allocations.
    temps: TokenStream,
    /// Some group holds unchecked accesses.
    unchecked: bool,
    /// The loops run through the per-CPU dispatch (in `unsafe` blocks).
    dispatched: bool,
    /// The dims and parameters the body uses.
    used: BTreeSet<String>,
}

/// The sizes function ([`Gen::sizes_fn`]).
struct SizesFn {
    item: TokenStream,
    /// The dims and parameters it takes, in order.
    args: Vec<Ident>,
}

/// The per-output parts of the shapes struct and function ([`Gen::shapes_parts`]).
#[derive(Default)]
struct ShapesParts {
    fields: Vec<TokenStream>,
    values: Vec<TokenStream>,
    len_methods: Vec<TokenStream>,
    element_checks: Vec<TokenStream>,
}

/// The parameters, arguments and checks of the shapes and kernel functions
/// ([`Gen::signature_parts`]).
#[derive(Default)]
struct SignatureParts {
    shape_params: Vec<TokenStream>,
    buffer_params: Vec<TokenStream>,
    shape_args: Vec<TokenStream>,
    len_checks: Vec<TokenStream>,
    param_params: Vec<TokenStream>,
    shapes_param_params: Vec<TokenStream>,
    out_params: Vec<TokenStream>,
    zero_fills: Vec<TokenStream>,
    /// The kernel's arguments, in order, as the kernel passes them on.
    call_args: Vec<TokenStream>,
}

/// The items' doc comments and attributes ([`Gen::item_docs`]).
struct ItemDocs {
    shapes: String,
    shapes_fn: Vec<String>,
    kernel: Vec<String>,
    /// The paragraph on `unsafe` blocks, when the kernel has some.
    fast: Vec<String>,
    allow: TokenStream,
    /// `allow` for the kernel with a scratch, one argument more.
    with_allow: TokenStream,
    shapes_allow: TokenStream,
}

/// The tensors some statement of `p` reads or writes.
pub(super) fn touched_tensors(p: &LoopProgram) -> BTreeSet<TensorId> {
    let mut out = BTreeSet::new();
    for b in &p.blocks {
        for a in crate::loops::analysis::block_accesses(b) {
            out.insert(a.access.tensor);
        }
    }
    out
}
