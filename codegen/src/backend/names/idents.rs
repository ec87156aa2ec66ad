//! Fresh Rust identifiers made from a program's or a graph's names: the one scope
//! the Rust backend's locals and the graph emitter's locals and items come from.
//!
//! A fresh name is snake_case as rustc's `non_snake_case` lint wants it (no
//! uppercase, no `__`, no trailing `_`, so `{name}_len` stays snake_case too), is
//! not a keyword or one of the generated code's own locals (`i3`, `v0`), and is
//! distinct from every name taken before: `Layer-Norm` -> `layer_norm`, a second
//! `h` -> `h_2`, `type` -> `t_type`, `3d` -> `t_3d`, `v0` -> `t_v0`.

use std::collections::HashSet;

use super::is_rust_keyword;

/// Hands out distinct snake_case identifiers (see the [module docs](self)).
#[derive(Clone, Debug, Default)]
pub struct Idents {
    used: HashSet<String>,
}

impl Idents {
    /// A scope in which `reserved` are already taken.
    pub fn with_reserved(reserved: &[&str]) -> Self {
        Idents {
            used: reserved.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// True when `name` is taken.
    pub fn is_taken(&self, name: &str) -> bool {
        self.used.contains(name)
    }

    /// Takes `name` as it is; false when it is already taken.
    pub fn take(&mut self, name: &str) -> bool {
        self.used.insert(name.to_string())
    }

    /// A fresh identifier as close to `raw` as possible: [`snake`], prefixed `t_`
    /// when it is empty, starts with a digit, is a keyword or a generated local,
    /// and given a numeric suffix (`_2`, `_3`, ...) when taken.
    pub fn fresh(&mut self, raw: &str) -> String {
        let mut base = snake(raw);
        if base.is_empty() || base == "_" {
            base = "t".into();
        } else if base.starts_with(|c: char| c.is_ascii_digit())
            || is_rust_keyword(&base)
            || is_generated_local(&base)
        {
            base.insert_str(0, "t_");
        }
        let mut name = base.clone();
        let mut n = 2;
        while self.used.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.used.insert(name.clone());
        name
    }
}

/// `Layer-Norm` -> `layer_norm`: ASCII letters lowercased, digits kept, every run
/// of other characters one `_`, no `_` at the end (a leading one stays).
pub fn snake(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.len() > 1 && out.ends_with('_') {
        out.pop();
    }
    out
}

/// `softmax_f32` -> `SoftmaxF32`.
pub fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// True for the names generated bodies use for loop indices (`i3`) and carried
/// variables (`v0`), which program names must not shadow.
fn is_generated_local(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some('i' | 'v')) && word.len() > 1 && chars.all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_names_are_snake_case_distinct_and_no_keywords_or_generated_locals() {
        let mut s = Idents::with_reserved(&["shapes"]);
        assert_eq!(s.fresh("N"), "n");
        assert_eq!(s.fresh("n"), "n_2");
        assert_eq!(s.fresh("type"), "t_type");
        assert_eq!(s.fresh("i3"), "t_i3");
        assert_eq!(s.fresh("v2"), "t_v2");
        assert_eq!(s.fresh("shapes"), "shapes_2");
        assert_eq!(s.fresh("3d"), "t_3d");
        assert_eq!(s.fresh("x__y_"), "x_y");
        assert_eq!(s.fresh("_"), "t");
        assert_eq!(s.fresh(""), "t_2");
        assert!(!s.take("n"));
        assert!(s.take("m"));
    }

    #[test]
    fn camel_case_of_snake_case() {
        assert_eq!(camel("softmax_f32"), "SoftmaxF32");
        assert_eq!(camel("rnn_cell"), "RnnCell");
    }
}
