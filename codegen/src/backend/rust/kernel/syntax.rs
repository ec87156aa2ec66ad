//! Token-level syntax: identifiers, literals, precedence and parentheses.

use super::*;

pub(super) fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

pub(super) fn lit(text: &str) -> TokenStream {
    // Only called with literal text this module formats itself.
    match Literal::from_str(text) {
        Ok(l) => quote!(#l),
        Err(_) => unreachable!("`{text}` is a valid Rust literal"),
    }
}

pub(super) fn int_lit(v: i64) -> (TokenStream, Prec) {
    if v < 0 {
        let abs = lit(&v.unsigned_abs().to_string());
        (quote!(-#abs), Prec::Prefix)
    } else {
        (lit(&v.to_string()), Prec::Postfix)
    }
}

pub(super) fn paren(ts: TokenStream, prec: Prec, min: Prec) -> TokenStream {
    if prec < min { quote!((#ts)) } else { ts }
}

/// The next-tighter precedence, for right operands of left-associative operators.
pub(super) fn next(p: Prec) -> Prec {
    match p {
        Prec::Lowest => Prec::Compare,
        Prec::Compare => Prec::Sum,
        Prec::Sum => Prec::Product,
        Prec::Product => Prec::Cast,
        Prec::Cast => Prec::Prefix,
        Prec::Prefix | Prec::Postfix => Prec::Postfix,
    }
}

/// Whether `tokens` (nested groups included) mention `name`.
pub(super) fn mentions(tokens: &TokenStream, name: &Ident) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == *name,
        proc_macro2::TokenTree::Group(g) => mentions(&g.stream(), name),
        _ => false,
    })
}
