//! The oracle's entry to a kernel (with `RustOptions::oracle`): `NAME_program`, the
//! program the kernel computes as `.uop` text, and `NAME_dyn`, which runs the kernel
//! on row-major f64 data of any shape. `uop::testing::check_kernel` takes the two and
//! compares the kernel with the reference interpreter on random cases, from the
//! test of the crate whose `build.rs` generated it.
//!
//! `NAME_dyn` converts each input to the kernel's element type (`as`), checks the
//! input count, ranks and the `$param` count (an error, never a panic), allocates
//! the outputs with `NAME_shapes`, calls `NAME` and converts the outputs back. It
//! calls the kernel's items through `self::` so that no local shadows them.

use super::*;

impl Gen<'_> {
    /// `NAME_program` and `NAME_dyn` for the kernel `k`.
    pub(super) fn oracle_items(&self, k: &KernelSource) -> TokenStream {
        let name = k.name.as_str();
        let program_fn = ident(&format!("{name}_program"));
        let dyn_fn = ident(&format!("{name}_dyn"));
        let kernel_fn = ident(name);
        let shapes_fn = ident(&format!("{name}_shapes"));
        let text = k.text.as_str();
        let (n_inputs, n_params) = (self.sig.inputs.len(), self.sig.params.len());
        let (n_in_lit, n_par_lit) = (lit(&n_inputs.to_string()), lit(&n_params.to_string()));
        // `len() != 0` and casts of f64 to f64 would be clippy lints in the user's crate.
        let wrong_count = |list: TokenStream, n: usize| {
            if n == 0 {
                quote!(!#list.is_empty())
            } else {
                let n = lit(&n.to_string());
                quote!(#list.len() != #n)
            }
        };
        let counts_wrong = {
            let (i, p) = (
                wrong_count(quote!(inputs), n_inputs),
                wrong_count(quote!(params), n_params),
            );
            quote!(#i || #p)
        };
        let is_f64 = |dtype: DType| dtype.is_float() && self.sig.dtype == DType::F64;
        let mut converts = Vec::new();
        let (mut shape_args, mut call_args) = (Vec::new(), Vec::new());
        for (k_in, spec) in self.sig.inputs.iter().enumerate() {
            let (data, shape) = (
                ident(&format!("in{k_in}")),
                ident(&format!("in{k_in}_shape")),
            );
            let pos = lit(&k_in.to_string());
            let rank = lit(&spec.rank().to_string());
            let e = self.elem(spec.dtype);
            let input = spec.name.as_str();
            converts.push(quote! {
                let #shape: [usize; #rank] = inputs[#pos].1.try_into().map_err(|_| {
                    format!(
                        "{}: input `{}` has rank {}, not {}",
                        #name, #input, #rank, inputs[#pos].1.len()
                    )
                })?;
            });
            converts.push(if is_f64(spec.dtype) {
                quote!(let #data: Vec<f64> = inputs[#pos].0.to_vec();)
            } else {
                quote!(let #data: Vec<#e> = inputs[#pos].0.iter().map(|&v| v as #e).collect();)
            });
            shape_args.push(quote!(#shape));
            call_args.extend([quote!(&#data), quote!(#shape)]);
        }
        for k_par in 0..n_params {
            let pos = lit(&k_par.to_string());
            shape_args.push(quote!(params[#pos]));
            call_args.push(quote!(params[#pos]));
        }
        let (mut allocs, mut results) = (Vec::new(), Vec::new());
        for (k_out, (spec, o)) in self.sig.outputs.iter().zip(&self.p.outputs).enumerate() {
            let out = ident(&format!("out{k_out}"));
            let field = &self.tensors[o.0];
            let len = ident(&format!("{field}_len"));
            let e = self.elem(spec.dtype);
            let zero = if spec.dtype == DType::I32 {
                quote!(0)
            } else {
                quote!(0.0)
            };
            allocs.push(quote!(let mut #out: Vec<#e> = vec![#zero; shapes.#len()];));
            call_args.push(quote!(&mut #out));
            results.push(if is_f64(spec.dtype) {
                quote!((shapes.#field.to_vec(), #out))
            } else {
                quote!((shapes.#field.to_vec(), #out.iter().map(|&v| f64::from(v)).collect()))
            });
        }
        let program_doc = format!(
            " The program [`{name}`] computes, as `.uop` text: what `uop::testing::check_kernel` \
             runs the reference interpreter on."
        );
        let dyn_doc = format!(
            " Runs [`{name}`] on row-major f64 data with shapes given at run time (inputs in \
             order, then the `$params`), giving each output's shape and data: what \
             `uop::testing::check_kernel` compares with the reference interpreter."
        );
        quote! {
            #[doc = #program_doc]
            #[allow(dead_code)]
            pub fn #program_fn() -> &'static str {
                #text
            }

            #[doc = #dyn_doc]
            ///
            /// # Errors
            ///
            /// A message when the input count, a rank or the `$param` count is wrong, or the kernel refuses the shapes.
            #[allow(dead_code, clippy::type_complexity)]
            pub fn #dyn_fn(
                inputs: &[(&[f64], &[usize])],
                params: &[i64],
            ) -> Result<Vec<(Vec<usize>, Vec<f64>)>, String> {
                if #counts_wrong {
                    return Err(format!(
                        "{} takes {} inputs and {} params, not {} and {}",
                        #name, #n_in_lit, #n_par_lit, inputs.len(), params.len()
                    ));
                }
                #(#converts)*
                let shapes = self::#shapes_fn(#(#shape_args),*).map_err(|e| e.to_string())?;
                #(#allocs)*
                self::#kernel_fn(#(#call_args),*).map_err(|e| e.to_string())?;
                Ok(vec![#(#results),*])
            }
        }
    }
}
