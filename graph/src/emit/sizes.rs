//! The sizes of a graph function: every dim bound from the inputs' shapes at entry
//! (a dim two inputs share, a fixed size and the graph's size assertions checked
//! there, with the runtime's errors), every `$param`, and every size expression and
//! element count the function's values need, computed once with checked
//! arithmetic. They become the public struct `{Graph}Sizes` and the function
//! `{graph}_sizes`, which the graph function calls first and a caller may call to
//! size the output buffers.

use std::collections::HashMap;

use uop_codegen::index::{Expr, IndexOp};

use super::code::{Code, Ex, Idents, Reads, elem, ex, snake, string};
use crate::ir::{Graph, ValueType};

/// Where the sizes of one graph come from and which ones its code reads.
#[derive(Debug)]
pub(super) struct Sizes {
    /// The graph function's name (the `kernel` of every error).
    graph: String,
    /// The graph's inputs: argument name, type.
    pub(super) inputs: Vec<(String, ValueType)>,
    /// Each dim: its field, and the input and axis that bind it.
    dims: HashMap<String, (String, usize, usize)>,
    /// Dims in the order they are bound.
    dim_order: Vec<String>,
    /// Each `$param`: its field (also the argument's name).
    pub(super) params: Vec<(String, String)>,
    /// Dims a kernel takes as a `$param` (`i64`): dim, field.
    dim_params: Vec<(String, String)>,
    /// Composite size expressions: expression, field.
    exprs: Vec<(Expr, String)>,
    /// Element counts: the shape's fields (or literals), the field, what it is of.
    lens: Vec<(Vec<String>, String, String)>,
    /// The graph outputs' shapes: name, fields.
    outputs: Vec<(String, Vec<String>)>,
    /// Checks of input axes that are neither a plain dim nor a literal.
    computed_axes: Vec<(usize, usize, Expr)>,
    assertions: Vec<(Expr, Expr)>,
    names: Idents,
}

impl Sizes {
    /// The sizes of `graph` (the prepared graph), whose inputs take the argument
    /// names `inputs`; `names` hands out the fields.
    pub(super) fn new(
        graph_fn: &str,
        graph: &Graph,
        inputs: Vec<(String, ValueType)>,
        mut names: Idents,
    ) -> Result<Sizes, String> {
        let mut dims = HashMap::new();
        let mut dim_order = Vec::new();
        let mut computed_axes = Vec::new();
        for (k, (_, ty)) in inputs.iter().enumerate() {
            for (axis, e) in ty.shape.iter().enumerate() {
                if let Expr::Name(n) = e
                    && !dims.contains_key(n)
                {
                    let field = names.fresh(&format!("dim_{}", snake(n)));
                    dims.insert(n.clone(), (field, k, axis));
                    dim_order.push(n.clone());
                }
            }
        }
        for (k, (_, ty)) in inputs.iter().enumerate() {
            for (axis, e) in ty.shape.iter().enumerate() {
                if !matches!(e, Expr::Name(_) | Expr::Int(_)) {
                    computed_axes.push((k, axis, e.clone()));
                }
            }
        }
        let params = graph
            .params
            .iter()
            .map(|p| (p.clone(), names.fresh(&format!("param_{}", snake(p)))))
            .collect();
        let sizes = Sizes {
            graph: graph_fn.into(),
            inputs,
            dims,
            dim_order,
            params,
            dim_params: Vec::new(),
            exprs: Vec::new(),
            lens: Vec::new(),
            outputs: Vec::new(),
            computed_axes,
            assertions: graph.assertions.clone(),
            names,
        };
        for (_, _, e) in sizes.computed_axes.clone() {
            sizes.check_leaves(&e)?;
        }
        for (a, b) in sizes.assertions.clone() {
            sizes.check_leaves(&a)?;
            sizes.check_leaves(&b)?;
        }
        Ok(sizes)
    }

    /// The field of `$name`.
    pub(super) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, f)| f.as_str())
    }

    /// Dim `name` as an `i64` for a kernel's `$param` (a dim no input of the kernel
    /// carries, `docs/graph-aot.md`): `sz.dim_n_param`.
    pub(super) fn dim_param(&mut self, name: &str) -> Result<Ex, String> {
        let Some((dim_field, _, _)) = self.dims.get(name) else {
            return Err(format!(
                "the size `{name}` is no dim of the graph's inputs, so it is not known at entry"
            ));
        };
        if let Some((_, f)) = self.dim_params.iter().find(|(d, _)| d == name) {
            return Ok(prefixed(f));
        }
        let field = self.names.fresh(&format!("{dim_field}_param"));
        self.dim_params.push((name.into(), field.clone()));
        Ok(prefixed(&field))
    }

    fn check_leaves(&self, e: &Expr) -> Result<(), String> {
        match e {
            Expr::Int(_) => Ok(()),
            Expr::Name(n) if self.dims.contains_key(n) => Ok(()),
            Expr::Name(n) => Err(format!(
                "the size `{n}` is no dim of the graph's inputs, so it is not known at entry"
            )),
            Expr::Param(p) if self.param(p).is_some() => Ok(()),
            Expr::Param(p) => Err(format!("the size `${p}` names an undeclared parameter")),
            Expr::Neg(a) => self.check_leaves(a),
            Expr::Bin(_, a, b) => {
                self.check_leaves(a)?;
                self.check_leaves(b)
            }
            Expr::Index(_) | Expr::Dim(..) => Err(format!(
                "the size `{e}` is not an expression over dims and parameters"
            )),
        }
    }

    /// One size as a field of the sizes (`dim_n`, `size3`) or a literal.
    fn size(&mut self, e: &Expr) -> Result<String, String> {
        self.check_leaves(e)?;
        match e {
            Expr::Int(v) if *v >= 0 => Ok(v.to_string()),
            Expr::Name(n) => Ok(self.dims[n].0.clone()),
            _ => {
                if let Some((_, f)) = self.exprs.iter().find(|(x, _)| x == e) {
                    return Ok(f.clone());
                }
                let field = self.names.fresh(&format!("size{}", self.exprs.len()));
                self.exprs.push((e.clone(), field.clone()));
                Ok(field)
            }
        }
    }

    /// The fields of a shape.
    fn fields(&mut self, shape: &[Expr]) -> Result<Vec<String>, String> {
        shape.iter().map(|e| self.size(e)).collect()
    }

    /// A size for code that has the sizes as `sz`: `sz.dim_n` or `4`.
    pub(super) fn at(&mut self, e: &Expr) -> Result<Ex, String> {
        Ok(prefixed(&self.size(e)?))
    }

    /// A shape for code that has the sizes as `sz`: `[sz.dim_b, 4]`.
    pub(super) fn shape(&mut self, shape: &[Expr]) -> Result<Ex, String> {
        let f = self.fields(shape)?;
        Ok(ex!["[", Ex::join(f.iter().map(|f| prefixed(f)), ", "), "]"])
    }

    /// A looped value's shape (DESIGN.md §20): `rows` (the code of its chunk's rows)
    /// as axis 0, then the rest of `shape` as [`Sizes::shape`] writes it.
    pub(super) fn looped_shape(&mut self, shape: &[Expr], rows: &Ex) -> Result<Ex, String> {
        let rest = shape
            .get(1..)
            .ok_or("a looped value needs an axis 0, got a rank-0 value")?;
        let fields = self.fields(rest)?;
        let all = std::iter::once(rows.clone()).chain(fields.iter().map(|f| prefixed(f)));
        Ok(ex!["[", Ex::join(all, ", "), "]"])
    }

    /// The element count of a shape for code that has the sizes as `sz`; `what`
    /// names the value in the overflow error.
    pub(super) fn len(&mut self, shape: &[Expr], what: &str) -> Result<Ex, String> {
        let f = self.fields(shape)?;
        if let Some((_, field, _)) = self.lens.iter().find(|(s, _, _)| *s == f) {
            return Ok(prefixed(field));
        }
        let field = self.names.fresh(&format!("len{}", self.lens.len()));
        self.lens.push((f, field.clone(), what.into()));
        Ok(prefixed(&field))
    }

    /// Records graph output `name`'s shape; the field `{name}_out_shape`.
    pub(super) fn output(&mut self, name: &str, shape: &[Expr]) -> Result<Ex, String> {
        let f = self.fields(shape)?;
        let field = self.names.fresh(&format!("{name}_out_shape"));
        self.outputs.push((field.clone(), f));
        Ok(prefixed(&field))
    }

    /// `Option<i64>` code of `e` over the locals of the sizes function.
    fn value(&self, e: &Expr) -> String {
        match e {
            Expr::Int(v) => format!("Some({v})"),
            Expr::Name(n) => {
                let (_, k, axis) = &self.dims[n];
                format!("Some({}_dims[{axis}])", self.inputs[*k].0)
            }
            Expr::Param(p) => format!("Some({})", self.param(p).unwrap_or("0")),
            Expr::Neg(a) => format!("rt::graph::neg({})", self.value(a)),
            Expr::Bin(op, a, b) => {
                let f = match op {
                    IndexOp::Add => "add",
                    IndexOp::Sub => "sub",
                    IndexOp::Mul => "mul",
                    IndexOp::Div => "div",
                    IndexOp::Mod => "rem",
                    IndexOp::Min => "min",
                    IndexOp::Max => "max",
                };
                format!("rt::graph::{f}({}, {})", self.value(a), self.value(b))
            }
            Expr::Index(_) | Expr::Dim(..) => "None".into(),
        }
    }

    /// True when `e` reads input `k`'s dims.
    fn reads_input(&self, e: &Expr, k: usize) -> bool {
        match e {
            Expr::Name(n) => self.dims.get(n).is_some_and(|d| d.1 == k),
            Expr::Neg(a) => self.reads_input(a, k),
            Expr::Bin(_, a, b) => self.reads_input(a, k) || self.reads_input(b, k),
            _ => false,
        }
    }

    /// The struct `{Camel}Sizes` and the function `{graph}_sizes`.
    pub(super) fn items(&self, camel: &str) -> String {
        let mut c = Code::default();
        self.sizes_struct(&mut c, camel);
        c.line("");
        self.sizes_function(&mut c, camel);
        c.print()
    }

    /// `pub struct {Camel}Sizes`: a field per dim, `$param`, size and output shape.
    fn sizes_struct(&self, c: &mut Code, camel: &str) {
        c.doc(&format!(
            "The sizes of graph `{}`, from its inputs' shapes and its parameters\n\
             ([`{}_sizes`]): the graph outputs' shapes, and every size its code reads.",
            self.graph, self.graph
        ));
        c.line("#[derive(Clone, Debug, PartialEq, Eq)]");
        c.open(format!("pub struct {camel}Sizes {{"));
        for n in &self.dim_order {
            c.doc(&format!("The dim `{n}`."));
            c.line(format!("pub {}: usize,", self.dims[n].0));
        }
        for (p, f) in &self.params {
            c.doc(&format!("The parameter `${p}`."));
            c.line(format!("pub {f}: i64,"));
        }
        for (n, f) in &self.dim_params {
            c.doc(&format!("The dim `{n}` as a kernel's `$param`."));
            c.line(format!("pub {f}: i64,"));
        }
        for (e, f) in &self.exprs {
            c.doc(&format!("`{e}`."));
            c.line(format!("pub {f}: usize,"));
        }
        for (_, f, what) in &self.lens {
            c.doc(&format!("The elements of {what}."));
            c.line(format!("pub {f}: usize,"));
        }
        for (f, shape) in &self.outputs {
            c.doc(&format!(
                "The shape of output `{}`.",
                f.strip_suffix("_out_shape").unwrap_or(f)
            ));
            c.line(format!("pub {f}: [usize; {}],", shape.len()));
        }
        c.close("}");
    }

    /// `pub fn {graph}_sizes(...)`: the dims bound and checked, then every size
    /// computed with checked arithmetic.
    fn sizes_function(&self, c: &mut Code, camel: &str) {
        c.doc(&format!(
            "The sizes of graph `{}` for these input shapes and parameters, every one\n\
             checked: a dim two inputs share, a fixed size, the graph's size assertions,\n\
             overflow.\n\n\
             # Errors\n\n\
             The runtime's [`KernelError`] naming the input or the size.",
            self.graph
        ));
        let mut args: Vec<String> = self
            .inputs
            .iter()
            .map(|(n, t)| {
                // A rank-0 input has no size to read.
                let unused = if t.shape.is_empty() { "_" } else { "" };
                format!("{unused}{n}_shape: [usize; {}]", t.shape.len())
            })
            .collect();
        args.extend(self.params.iter().map(|(_, f)| format!("{f}: i64")));
        if args.len() > 7 {
            c.line("#[allow(clippy::too_many_arguments)]");
        }
        c.open(signature(
            &format!("pub fn {}_sizes", self.graph),
            &texts(&args),
            &format!("Result<{camel}Sizes, KernelError>"),
            &Reads::default(),
        ));
        self.bind_dims(c);
        self.size_checks(c);
        self.size_fields(c, camel);
        c.close("}");
    }

    /// Each dim from the input that binds it first; the other axes checked against
    /// it or their fixed size.
    fn bind_dims(&self, c: &mut Code) {
        let g = string(&self.graph);
        for n in &self.dim_order {
            let (f, k, axis) = &self.dims[n];
            c.line(format!("let {f} = {}_shape[{axis}];", self.inputs[*k].0));
        }
        for (k, (input, ty)) in self.inputs.iter().enumerate() {
            for (axis, e) in ty.shape.iter().enumerate() {
                match e {
                    Expr::Name(n) => {
                        let (f, first_k, first_axis) = &self.dims[n];
                        if (*first_k, *first_axis) == (k, axis) {
                            continue;
                        }
                        c.open(format!("if {input}_shape[{axis}] != {f} {{"));
                        c.open("return Err(KernelError::DimConflict {");
                        c.line(format!("kernel: {g},"));
                        c.line(format!("dim: {},", string(n)));
                        c.line(format!(
                            "first_input: {},",
                            string(&self.inputs[*first_k].0)
                        ));
                        c.line(format!("first: {f},"));
                        c.line(format!("second_input: {},", string(input)));
                        c.line(format!("second: {input}_shape[{axis}],"));
                        c.close("});");
                        c.close("}");
                    }
                    Expr::Int(v) => {
                        c.open(format!("if {input}_shape[{axis}] != {v} {{"));
                        c.open("return Err(KernelError::FixedSize {");
                        c.line(format!("kernel: {g},"));
                        c.line(format!("input: {},", string(input)));
                        c.line(format!("axis: {axis},"));
                        c.line(format!("expected: {v},"));
                        c.line(format!("found: {input}_shape[{axis}],"));
                        c.close("});");
                        c.close("}");
                    }
                    _ => {}
                }
            }
        }
    }

    /// The inputs' dims as `i64` where a size reads them, the computed axes and the
    /// graph's size assertions checked.
    fn size_checks(&self, c: &mut Code) {
        let g = string(&self.graph);
        for (k, (input, _)) in self.inputs.iter().enumerate() {
            let needed = self
                .exprs
                .iter()
                .map(|(e, _)| e)
                .chain(self.computed_axes.iter().map(|(_, _, e)| e))
                .chain(self.assertions.iter().flat_map(|(a, b)| [a, b]))
                .any(|e| self.reads_input(e, k))
                || self.dim_params.iter().any(|(n, _)| self.dims[n].1 == k);
            if needed {
                c.line(format!(
                    "let {input}_dims = rt::dims({g}, {}, {input}_shape)?;",
                    string(input)
                ));
            }
        }
        for (k, axis, e) in &self.computed_axes {
            let input = &self.inputs[*k].0;
            self.assertion(
                c,
                &self.value(e),
                &format!("{input}_shape[{axis}] as i64"),
                &e.to_string(),
                &format!("axis {axis} of {input}"),
            );
        }
        for (a, b) in &self.assertions {
            self.assertion(
                c,
                &self.value(a),
                &self.value(b),
                &a.to_string(),
                &b.to_string(),
            );
        }
    }

    /// Every field computed (checked) and the struct returned.
    fn size_fields(&self, c: &mut Code, camel: &str) {
        let g = string(&self.graph);
        for (n, f) in &self.dim_params {
            let (_, k, axis) = &self.dims[n];
            c.line(format!("let {f} = {}_dims[{axis}];", self.inputs[*k].0));
        }
        for (e, f) in &self.exprs {
            c.line(format!(
                "let {f} = rt::graph::size({g}, {}, {})?;",
                string(&e.to_string()),
                self.value(e)
            ));
        }
        for (shape, f, what) in &self.lens {
            c.line(format!(
                "let {f} = rt::graph::elements({g}, {}, &[{}])?;",
                string(what),
                shape.join(", ")
            ));
        }
        for (f, shape) in &self.outputs {
            c.line(format!("let {f} = [{}];", shape.join(", ")));
        }
        let fields: Vec<&str> = self
            .dim_order
            .iter()
            .map(|n| self.dims[n].0.as_str())
            .chain(self.params.iter().map(|(_, f)| f.as_str()))
            .chain(self.dim_params.iter().map(|(_, f)| f.as_str()))
            .chain(self.exprs.iter().map(|(_, f)| f.as_str()))
            .chain(self.lens.iter().map(|(_, f, _)| f.as_str()))
            .chain(self.outputs.iter().map(|(f, _)| f.as_str()))
            .collect();
        c.line(format!("Ok({camel}Sizes {{ {} }})", fields.join(", ")));
    }

    /// Code returning an `Assertion` error unless `left == right` (`Option<i64>`
    /// code for the left side; the right side is `Option<i64>` code too, or an
    /// `i64` when `left_text` names an input's axis).
    fn assertion(&self, c: &mut Code, left: &str, right: &str, left_text: &str, right_text: &str) {
        let g = string(&self.graph);
        let right = if right.starts_with("Some(") || right.starts_with("rt::") {
            right.to_string()
        } else {
            format!("Some({right})")
        };
        c.open("{");
        c.line(format!(
            "let left = ({left}).ok_or(KernelError::Overflow {{ kernel: {g} }})?;"
        ));
        c.line(format!(
            "let right = ({right}).ok_or(KernelError::Overflow {{ kernel: {g} }})?;"
        ));
        c.open("if left != right {");
        c.open("return Err(KernelError::Assertion {");
        c.line(format!("kernel: {g},"));
        c.line(format!("left: {},", string(left_text)));
        c.line(format!("right: {},", string(right_text)));
        c.line("left_value: left,");
        c.line("right_value: right,");
        c.close("});");
        c.close("}");
        c.close("}");
    }
}

/// `HEAD(args) -> RESULT {`, one argument a line when it would be long (as
/// printed with `reads`: a parameter nothing reads is `_name`).
pub(super) fn signature(head: &str, args: &[Ex], result: &str, reads: &Reads) -> Ex {
    let one = ex![head, "(", Ex::join(args, ", "), ") -> ", result, " {"];
    if one.print(reads).len() <= 96 {
        return one;
    }
    let mut s = ex![head, "(\n"];
    for a in args {
        s.push(ex!["    ", a, ",\n"]);
    }
    s.push(format!(") -> {result} {{"));
    s
}

/// Arguments that are plain text, as expressions.
pub(super) fn texts(args: &[String]) -> Vec<Ex> {
    args.iter().map(Ex::from).collect()
}

/// `dim_n` -> `sz.dim_n`; a literal stays.
fn prefixed(field: &str) -> Ex {
    if field.starts_with(|c: char| c.is_ascii_digit()) {
        Ex::from(field)
    } else {
        Ex::sz_field(field)
    }
}

/// `Vec<f32>` and friends: a buffer of a value of type `ty`.
pub(super) fn buffer_type(ty: &ValueType) -> String {
    format!("Vec<{}>", elem(ty.dtype))
}
