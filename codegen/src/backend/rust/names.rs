//! Rust identifiers for the names of a program: tensors, dims and `$params` become
//! snake_case locals that clash with nothing the generated code also uses.

use std::collections::HashSet;

/// Words Rust reserves (strict and reserved keywords of edition 2024).
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "_",
];

/// True for a Rust keyword (which cannot name a local).
pub(super) fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word)
}

/// True for the names the generated bodies use for loop indices (`i3`) and carried
/// variables (`v0`), which program names must not shadow.
fn is_generated_local(word: &str) -> bool {
    // `i3`, `v0`, and the schedule's `i3_tile`, `v0_lanes`, ...
    let number = word.split('_').next().unwrap_or(word);
    let mut chars = number.chars();
    matches!(chars.next(), Some('i' | 'v')) && number.len() > 1 && chars.all(|c| c.is_ascii_digit())
}

/// A valid kernel name: lowercase snake_case and not a keyword, so that the kernel
/// function and its companions (`{name}_shapes`, `{Name}Shapes`) are warning-free.
pub(super) fn is_kernel_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name != "_"
        && !is_keyword(name)
}

/// `softmax_f32` -> `SoftmaxF32`.
pub(super) fn camel(name: &str) -> String {
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

/// Hands out distinct snake_case identifiers.
#[derive(Clone, Debug, Default)]
pub(super) struct Scope {
    used: HashSet<String>,
}

impl Scope {
    /// A scope in which `reserved` are already taken.
    pub(super) fn with_reserved(reserved: &[&str]) -> Self {
        Scope {
            used: reserved.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// A fresh identifier as close to `raw` as possible: lowercased, other
    /// characters replaced by `_`, and a numeric suffix when taken.
    pub(super) fn fresh(&mut self, raw: &str) -> String {
        let mut base: String = raw
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert_str(0, "t_");
        }
        if is_keyword(&base) || is_generated_local(&base) {
            base.push('_');
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_names_are_snake_case_and_distinct() {
        let mut s = Scope::with_reserved(&["shapes"]);
        assert_eq!(s.fresh("N"), "n");
        assert_eq!(s.fresh("n"), "n_2");
        assert_eq!(s.fresh("type"), "type_");
        assert_eq!(s.fresh("i3"), "i3_");
        assert_eq!(s.fresh("shapes"), "shapes_2");
        assert_eq!(s.fresh("3d"), "t_3d");
    }

    #[test]
    fn kernel_names() {
        assert!(is_kernel_name("softmax_f32"));
        assert!(!is_kernel_name("Softmax"));
        assert!(!is_kernel_name("fn"));
        assert!(!is_kernel_name("9x"));
        assert_eq!(camel("softmax_f32"), "SoftmaxF32");
    }
}
