//! The text the graph emitter writes: indented lines, Rust identifiers made from
//! the graph's names (the codegen's shared [`Idents`]), element types and literals.

use uop_codegen::uop::DType;

pub(super) use uop_codegen::backend::names::{Idents, camel, snake};

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

    /// An empty block one level deeper, to be written and then [`Code::append`]ed.
    pub(super) fn nested(&self) -> Code {
        Code {
            text: String::new(),
            depth: self.depth + 1,
        }
    }

    /// The lines of a [`Code::nested`] block, as they are.
    pub(super) fn append(&mut self, block: &str) {
        self.text.push_str(block);
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
    fn literals_are_exact() {
        assert_eq!(literal(DType::F32, 0.1), "0.1_f32");
        assert_eq!(literal(DType::F64, -2.0), "-2.0_f64");
        assert_eq!(literal(DType::F32, f64::NEG_INFINITY), "f32::NEG_INFINITY");
        assert_eq!(literal(DType::I32, 3.0), "3_i32");
    }
}
