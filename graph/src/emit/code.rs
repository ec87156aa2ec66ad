//! The text the graph emitter plans and then prints: expressions whose locals are
//! marked ([`Ex`]: text, a local read, a local bound, a constant, the sizes), lines
//! of them with an indentation level ([`Code`]), Rust identifiers made from the
//! graph's names (the codegen's shared [`Idents`]), element types and literals.
//!
//! A generated function is planned as [`Code`] first; what it reads is known from
//! the plan ([`Code::reads`]), so a local or parameter nothing reads is bound as
//! `_name` when the plan is printed ([`Code::print`]), and a constant no function
//! reads is not written, without looking at printed text.

use std::collections::HashSet;

use uop_codegen::uop::DType;

pub(super) use uop_codegen::backend::names::{Idents, camel, snake};

/// An [`Ex`] of its pieces in order: `ex!["let ", Ex::bind(&n), " = ", value, ";"]`.
macro_rules! ex {
    ($($piece:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut e = $crate::emit::code::Ex::default();
        $( e.push($piece); )*
        e
    }};
}
pub(super) use ex;

/// One piece of an expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Part {
    /// Rust text with no local in it.
    Text(String),
    /// A read of the local (or parameter) of this name.
    Read(String),
    /// The binding of a local or parameter: printed `_name` when nothing reads it.
    Bind(String),
    /// A read of the module's `static` of this name (a constant).
    Static(String),
    /// A read of the sizes, `sz`.
    Sz,
}

/// An expression, statement or line of generated Rust, with its locals marked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Ex(Vec<Part>);

impl Ex {
    /// A read of local `name`.
    pub(super) fn read(name: &str) -> Ex {
        Ex(vec![Part::Read(name.into())])
    }

    /// The binding of local `name`.
    pub(super) fn bind(name: &str) -> Ex {
        Ex(vec![Part::Bind(name.into())])
    }

    /// A read of the `static` `name` (a constant), as a slice: `&NAME[..]`.
    pub(super) fn static_slice(name: &str) -> Ex {
        ex!["&", Part::Static(name.into()), "[..]"]
    }

    /// `sz.{field}`.
    pub(super) fn sz_field(field: &str) -> Ex {
        ex![Part::Sz, ".", field]
    }

    /// Appends `piece`.
    pub(super) fn push(&mut self, piece: impl Piece) {
        piece.push_to(self);
    }

    /// `items` joined with `sep`.
    pub(super) fn join<I: IntoIterator<Item = T>, T: Piece>(items: I, sep: &str) -> Ex {
        let mut e = Ex::default();
        for (k, item) in items.into_iter().enumerate() {
            if k > 0 {
                e.push(sep);
            }
            e.push(item);
        }
        e
    }

    /// Every local, constant and size read, into `reads`.
    fn reads_into(&self, reads: &mut Reads) {
        for p in &self.0 {
            match p {
                Part::Read(n) => {
                    reads.locals.insert(n.clone());
                }
                Part::Static(n) => {
                    reads.statics.insert(n.clone());
                }
                Part::Sz => {
                    reads.sz = true;
                    reads.locals.insert("sz".into());
                }
                Part::Text(_) | Part::Bind(_) => {}
            }
        }
    }

    /// The Rust text: each binding of a local `reads` lacks as `_name`.
    pub(super) fn print(&self, reads: &Reads) -> String {
        let mut s = String::new();
        for p in &self.0 {
            match p {
                Part::Text(t) => s.push_str(t),
                Part::Read(n) | Part::Static(n) => s.push_str(n),
                Part::Bind(n) if n.starts_with('_') || reads.all || reads.locals.contains(n) => {
                    s.push_str(n)
                }
                Part::Bind(n) => {
                    s.push('_');
                    s.push_str(n);
                }
                Part::Sz => s.push_str("sz"),
            }
        }
        s
    }

    /// The text of an expression whose locals are all read (sizes, arguments).
    pub(super) fn text(&self) -> String {
        self.print(&Reads::all())
    }
}

/// What can be a piece of an [`Ex`].
pub(super) trait Piece {
    /// Appends itself to `e`.
    fn push_to(self, e: &mut Ex);
}

impl Piece for &str {
    fn push_to(self, e: &mut Ex) {
        if self.is_empty() {
            return;
        }
        if let Some(Part::Text(t)) = e.0.last_mut() {
            t.push_str(self);
        } else {
            e.0.push(Part::Text(self.to_string()));
        }
    }
}

impl Piece for String {
    fn push_to(self, e: &mut Ex) {
        self.as_str().push_to(e);
    }
}

impl Piece for &String {
    fn push_to(self, e: &mut Ex) {
        self.as_str().push_to(e);
    }
}

impl Piece for Part {
    fn push_to(self, e: &mut Ex) {
        match self {
            Part::Text(t) => t.push_to(e),
            p => e.0.push(p),
        }
    }
}

impl Piece for Ex {
    fn push_to(self, e: &mut Ex) {
        for p in self.0 {
            p.push_to(e);
        }
    }
}

impl Piece for &Ex {
    fn push_to(self, e: &mut Ex) {
        self.clone().push_to(e);
    }
}

impl From<&str> for Ex {
    fn from(s: &str) -> Ex {
        ex![s]
    }
}

impl From<String> for Ex {
    fn from(s: String) -> Ex {
        ex![s]
    }
}

impl From<&String> for Ex {
    fn from(s: &String) -> Ex {
        ex![s]
    }
}

impl From<&Ex> for Ex {
    fn from(e: &Ex) -> Ex {
        e.clone()
    }
}

/// What a planned function reads: its locals and parameters, the module's
/// constants, the sizes.
#[derive(Clone, Debug, Default)]
pub(super) struct Reads {
    locals: HashSet<String>,
    /// The constants read.
    pub(super) statics: HashSet<String>,
    /// The sizes are read (`sz`).
    pub(super) sz: bool,
    /// Every local counts as read (text whose bindings are all kept).
    all: bool,
}

impl Reads {
    fn all() -> Reads {
        Reads {
            all: true,
            ..Reads::default()
        }
    }
}

/// Lines of planned Rust with an indentation level (four spaces a level).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Code {
    lines: Vec<(usize, Ex)>,
    depth: usize,
}

impl Code {
    /// One line at the current depth.
    pub(super) fn line(&mut self, line: impl Into<Ex>) {
        self.lines.push((self.depth, line.into()));
    }

    /// `let NAME = value;`
    pub(super) fn bind(&mut self, name: &str, value: impl Piece) {
        self.line(ex!["let ", Ex::bind(name), " = ", value, ";"]);
    }

    /// A line ending in `{`, and one level deeper after it.
    pub(super) fn open(&mut self, line: impl Into<Ex>) {
        self.line(line);
        self.depth += 1;
    }

    /// One level out, and the line closing it (`}`, `};`, `} else {`, ...).
    pub(super) fn close(&mut self, line: impl Into<Ex>) {
        self.depth = self.depth.saturating_sub(1);
        self.line(line);
    }

    /// An empty block one level deeper, to be planned and then [`Code::append`]ed.
    pub(super) fn nested(&self) -> Code {
        Code {
            lines: Vec::new(),
            depth: self.depth + 1,
        }
    }

    /// The lines of a [`Code::nested`] block, as they are.
    pub(super) fn append(&mut self, block: Code) {
        self.lines.extend(block.lines);
    }

    /// The lines of `block` one level deeper than it was planned at for each
    /// level of this code's current depth (a function's body inside its braces).
    pub(super) fn embed(&mut self, block: Code) {
        let d = self.depth;
        self.lines
            .extend(block.lines.into_iter().map(|(k, l)| (k + d, l)));
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

    /// Everything the lines read.
    pub(super) fn reads(&self) -> Reads {
        let mut reads = Reads::default();
        for (_, l) in &self.lines {
            l.reads_into(&mut reads);
        }
        reads
    }

    /// The planned lines as Rust, each binding of a local nothing reads as
    /// `_name`.
    pub(super) fn print(&self) -> String {
        let reads = self.reads();
        let mut text = String::new();
        for (depth, l) in &self.lines {
            for _ in 0..*depth {
                text.push_str("    ");
            }
            text.push_str(&l.print(&reads));
            text.push('\n');
        }
        text
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
    fn a_local_the_plan_never_reads_is_printed_with_an_underscore() {
        let mut c = Code::default();
        c.bind("a", "1");
        c.bind("b", "2");
        c.open(ex!["if ", Ex::read("b"), " > 0 {"]);
        c.line(ex![Part::Sz, ".n;"]);
        c.close("}");
        assert_eq!(
            c.print(),
            "let _a = 1;\nlet b = 2;\nif b > 0 {\n    sz.n;\n}\n"
        );
        let reads = c.reads();
        assert!(reads.sz);
        assert!(reads.statics.is_empty());
    }

    #[test]
    fn constants_read_are_known_from_the_plan_not_the_text() {
        let mut c = Code::default();
        // A comment naming the constant is no read of it.
        c.comment("C_UNUSED is named here");
        c.bind("x", Ex::static_slice("C_USED"));
        let reads = c.reads();
        assert!(reads.statics.contains("C_USED"));
        assert!(!reads.statics.contains("C_UNUSED"));
        assert_eq!(
            c.print(),
            "// C_UNUSED is named here\nlet _x = &C_USED[..];\n"
        );
    }

    #[test]
    fn literals_are_exact() {
        assert_eq!(literal(DType::F32, 0.1), "0.1_f32");
        assert_eq!(literal(DType::F64, -2.0), "-2.0_f64");
        assert_eq!(literal(DType::F32, f64::NEG_INFINITY), "f32::NEG_INFINITY");
        assert_eq!(literal(DType::I32, 3.0), "3_i32");
    }
}
