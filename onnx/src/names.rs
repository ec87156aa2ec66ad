//! ONNX names to names uop's text can spell.
//!
//! ONNX allows any string as a value or dimension name (`input.1`, `onnx::MatMul_12`,
//! `batch size`); uop's text takes identifiers that are not keywords, ops, loop
//! indices (`i0`) or source dims (`dA0`). [`NameMap`] turns each ONNX name into a
//! legal, unique one — the name itself when it is already legal, else every other
//! character replaced by `_`, a leading digit prefixed with `v_`, a taken or reserved
//! result suffixed `_2`, `_3`, ... — and remembers both directions, so users keep
//! speaking ONNX names.

use std::collections::{HashMap, HashSet};

use uop_codegen::index::is_plain_name;
use uop_codegen::text::{KEYWORDS, Registry, micro_ops};
use uop_graph::text::GRAPH_KEYWORDS;

/// The names of one model's inputs, outputs and dimensions: ONNX's and uop's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameMap {
    to_uop: HashMap<String, String>,
    to_onnx: HashMap<String, String>,
    reserved: HashSet<String>,
}

impl NameMap {
    /// A map that never hands out a keyword, micro op or op of `registry`.
    pub fn new(registry: &Registry) -> Self {
        let mut reserved: HashSet<String> = KEYWORDS
            .iter()
            .chain(GRAPH_KEYWORDS)
            .map(|s| s.to_string())
            .collect();
        reserved.extend(micro_ops().into_iter().map(|m| m.name.to_string()));
        reserved.extend(registry.iter().map(|m| m.name.to_string()));
        NameMap {
            reserved,
            ..NameMap::default()
        }
    }

    /// The uop name of ONNX name `onnx`, chosen on first use.
    pub fn map(&mut self, onnx: &str) -> String {
        if let Some(n) = self.to_uop.get(onnx) {
            return n.clone();
        }
        let base = legal_base(onnx);
        let mut name = base.clone();
        let mut k = 2;
        while !self.free(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.to_uop.insert(onnx.to_string(), name.clone());
        self.to_onnx.insert(name.clone(), onnx.to_string());
        name
    }

    /// The uop name given to ONNX name `onnx`, if any.
    pub fn uop(&self, onnx: &str) -> Option<&str> {
        self.to_uop.get(onnx).map(String::as_str)
    }

    /// The ONNX name behind uop name `uop`, if any.
    pub fn onnx(&self, uop: &str) -> Option<&str> {
        self.to_onnx.get(uop).map(String::as_str)
    }

    /// The pairs (ONNX name, uop name) that differ, sorted by ONNX name.
    pub fn renamed(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<(&str, &str)> = self
            .to_uop
            .iter()
            .filter(|(a, b)| a != b)
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        v.sort();
        v
    }

    fn free(&self, name: &str) -> bool {
        is_plain_name(name) && !self.reserved.contains(name) && !self.to_onnx.contains_key(name)
    }
}

/// `onnx` with every character outside `[A-Za-z0-9_]` replaced by `_` and a leading
/// digit (or an empty name) prefixed with `v_`.
pub(crate) fn legal_base(onnx: &str) -> String {
    let s: String = onnx
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.chars().next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => s,
        _ => format!("v_{s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> NameMap {
        NameMap::new(&uop_ops::registry())
    }

    #[test]
    fn legal_names_are_kept() {
        let mut m = map();
        assert_eq!(m.map("x"), "x");
        assert_eq!(m.map("batch_size"), "batch_size");
    }

    #[test]
    fn exporter_names_become_identifiers_and_map_back() {
        let mut m = map();
        assert_eq!(m.map("input.1"), "input_1");
        assert_eq!(m.map("onnx::MatMul_12"), "onnx__MatMul_12");
        assert_eq!(m.map("0"), "v_0");
        assert_eq!(m.onnx("input_1"), Some("input.1"));
        assert_eq!(m.uop("onnx::MatMul_12"), Some("onnx__MatMul_12"));
    }

    #[test]
    fn keywords_ops_indices_and_collisions_get_suffixes() {
        let mut m = map();
        assert_eq!(m.map("input"), "input_2");
        assert_eq!(m.map("relu"), "relu_2");
        assert_eq!(m.map("i0"), "i0_2");
        assert_eq!(m.map("a.b"), "a_b");
        assert_eq!(m.map("a-b"), "a_b_2");
        assert_eq!(
            m.map("a.b"),
            "a_b",
            "the same ONNX name maps to the same name"
        );
    }
}
