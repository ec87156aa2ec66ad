//! The text the graph emitter writes: indented lines, Rust identifiers made from
//! the graph's names, element types and literals.

use std::collections::HashSet;

use uop_codegen::backend::names::is_rust_keyword;
use uop_codegen::uop::DType;

/// Lines of Rust with an indentation level (four spaces a level).
#[derive(Clone, Debug, Default)]
pub(super) struct Code {
    text: String,
    depth: usize,
}

impl Code {
    /// One line at the current depth.
    pub(super) fn line(&mut self, line: impl AsRef<str>) {
        for _ in 0..self.depth {
            self.text.push_str("    ");
        }
        self.text.push_str(line.as_ref());
        self.text.push('\n');
    }

    /// A line ending in `{`, and one level deeper after it.
    pub(super) fn open(&mut self, line: impl AsRef<str>) {
        self.line(line);
        self.depth += 1;
    }

    /// One level out, and the line closing it (`}`, `};`, `} else {`, ...).
    pub(super) fn close(&mut self, line: impl AsRef<str>) {
        self.depth = self.depth.saturating_sub(1);
        self.line(line);
    }

    /// A line between two blocks (`} else {`): one level out for it, then back in.
    pub(super) fn middle(&mut self, line: impl AsRef<str>) {
        self.depth = self.depth.saturating_sub(1);
        self.line(line);
        self.depth += 1;
    }

    /// `// ...` lines, one per line of `text`.
    pub(super) fn comment(&mut self, text: &str) {
        for l in text.lines() {
            self.line(format!("// {l}").trim_end());
        }
    }

    /// `/// ...` lines, one per line of `text`.
    pub(super) fn doc(&mut self, text: &str) {
        for l in text.lines() {
            self.line(format!("/// {l}").trim_end());
        }
    }

    /// The text written.
    pub(super) fn finish(self) -> String {
        self.text
    }
}

/// Hands out distinct snake_case identifiers.
#[derive(Clone, Debug, Default)]
pub(super) struct Idents {
    used: HashSet<String>,
}

impl Idents {
    /// An identifier set in which `reserved` are taken.
    pub(super) fn with_reserved(reserved: &[&str]) -> Self {
        Idents {
            used: reserved.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Takes `name` as it is; false when it is already taken.
    pub(super) fn take(&mut self, name: &str) -> bool {
        self.used.insert(name.to_string())
    }

    /// A fresh identifier as close to `raw` as possible: lowercased, other
    /// characters replaced by `_`, a numeric suffix when taken.
    pub(super) fn fresh(&mut self, raw: &str) -> String {
        let mut base = snake(raw);
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert_str(0, "t_");
        }
        if is_rust_keyword(&base) || base == "_" {
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

/// `Layer-Norm` -> `layer_norm`.
pub(super) fn snake(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// `rnn_cell` -> `RnnCell`.
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

/// The Rust element type of `dtype`.
pub(super) fn elem(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I32 => "i32",
    }
}

/// `v` as a Rust literal of `dtype` that gives exactly the value a kernel or the
/// interpreter sees (`v` rounded to the type).
pub(super) fn literal(dtype: DType, v: f64) -> String {
    match dtype {
        DType::I32 => format!("{}_i32", v as i32),
        DType::F32 => float(v as f32 as f64, "f32", format!("{:?}", v as f32)),
        DType::F64 => float(v, "f64", format!("{v:?}")),
    }
}

fn float(v: f64, t: &str, shown: String) -> String {
    if v.is_nan() {
        format!("{t}::NAN")
    } else if v == f64::INFINITY {
        format!("{t}::INFINITY")
    } else if v == f64::NEG_INFINITY {
        format!("{t}::NEG_INFINITY")
    } else {
        format!("{shown}_{t}")
    }
}

/// `text` as a Rust string literal.
pub(super) fn string(text: &str) -> String {
    format!("{text:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_snake_case_distinct_and_no_keywords() {
        let mut ids = Idents::with_reserved(&["ws"]);
        assert_eq!(ids.fresh("H"), "h");
        assert_eq!(ids.fresh("h"), "h_2");
        assert_eq!(ids.fresh("type"), "type_");
        assert_eq!(ids.fresh("ws"), "ws_2");
        assert_eq!(ids.fresh("3d"), "t_3d");
        assert_eq!(camel("rnn_cell"), "RnnCell");
    }

    #[test]
    fn literals_are_exact() {
        assert_eq!(literal(DType::F32, 0.1), "0.1_f32");
        assert_eq!(literal(DType::F64, -2.0), "-2.0_f64");
        assert_eq!(literal(DType::F32, f64::NEG_INFINITY), "f32::NEG_INFINITY");
        assert_eq!(literal(DType::I32, 3.0), "3_i32");
    }
}
