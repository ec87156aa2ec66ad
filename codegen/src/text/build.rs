//! From statements to a [`Program`]: names are resolved, calls go to the
//! [`Builder`] (micro ops) or the [`Registry`] (macro ops), and every error gets the
//! position of the token or call it is about. All shape, axis and dtype checks are
//! the builder's; this layer only decides where to point.

use std::collections::{HashMap, HashSet};

use crate::index::Expr;
use crate::uop::{Builder, DType, NodeId, Program, UopError};

use super::args::{Args, Attrs, ListItem, MacroError, Slot, Value};
use super::error::{ErrorKind, TextError};
use super::micro::Micro;
use super::registry::{KEYWORDS, MacroOp, Registry};
use super::syntax::{self, Call, Item, Name, Stmt, ValueSyntax};

/// Parses `.uop` text into a program; macro-op calls are looked up in `registry`.
///
/// ```
/// use uop_codegen::text::{Registry, parse_program};
/// let src = "
/// input a: f32[M, K]
/// input b: f32[K, N]
/// aa = reindex(a, [M, K, N], [i0, i1])
/// bb = reindex(b, [M, K, N], [i1, i2])
/// c = reduce_sum(mul(aa, bb), [1])
/// output c
/// ";
/// let program = parse_program(src, &Registry::new())?;
/// assert_eq!(program.node(program.outputs[0]).name, "c");
///
/// let err = parse_program("input a: f32[N]\nb = exp(q)\noutput b", &Registry::new()).unwrap_err();
/// assert_eq!(err.message(), "unknown name `q`");
/// assert_eq!(err.line_col(), (2, 9));
/// # Ok::<(), uop_codegen::text::TextError>(())
/// ```
pub fn parse_program(src: &str, registry: &Registry) -> Result<Program, TextError> {
    let stmts = syntax::parse(src).map_err(|e| TextError::syntax(src, e))?;
    let dtype = float_type(src, &stmts)?;
    let mut build = Build {
        src,
        registry,
        builder: Builder::new(dtype),
        scope: HashMap::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        first_output_at: None,
    };
    for stmt in &stmts {
        build.statement(stmt)?;
    }
    build.finish()
}

/// The float type: that of the float inputs (which must agree) or of a `dtype` line; f32 if none.
pub fn float_type(src: &str, stmts: &[Stmt]) -> Result<DType, TextError> {
    let mut chosen: Option<(DType, String)> = None;
    for stmt in stmts {
        let (dtype, at, what) = match stmt {
            Stmt::Dtype { dtype, at } => {
                if !dtype.is_float() {
                    return Err(TextError::new(
                        ErrorKind::DType,
                        src,
                        *at,
                        format!("the program's float type must be f32 or f64, not {dtype}"),
                    ));
                }
                (*dtype, *at, "the `dtype` line".to_string())
            }
            Stmt::Input {
                name,
                dtype,
                dtype_at,
                ..
            } if dtype.is_float() => (*dtype, *dtype_at, format!("input `{}`", name.text)),
            _ => continue,
        };
        match &chosen {
            None => chosen = Some((dtype, what)),
            Some((first, first_what)) if *first != dtype => {
                return Err(TextError::new(
                    ErrorKind::DType,
                    src,
                    at,
                    format!(
                        "{what} is {dtype}, but {first_what} is {first}: a program has one float type"
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(chosen.map_or(DType::F32, |(d, _)| d))
}

/// The op a call names.
#[derive(Clone, Copy)]
enum Op<'r> {
    Micro(Micro),
    Macro(&'r MacroOp),
}

impl Op<'_> {
    fn signature(&self) -> String {
        match self {
            Op::Micro(m) => m.signature(),
            Op::Macro(m) => m.signature.clone(),
        }
    }
}

struct Build<'a> {
    src: &'a str,
    registry: &'a Registry,
    builder: Builder,
    /// Tensors by name, with the offset of the definition.
    scope: HashMap<String, (NodeId, usize)>,
    inputs: Vec<NodeId>,
    outputs: Vec<NodeId>,
    first_output_at: Option<usize>,
}

impl<'a> Build<'a> {
    fn error(&self, kind: ErrorKind, at: usize, message: impl Into<String>) -> TextError {
        TextError::new(kind, self.src, at, message)
    }

    fn line_of(&self, at: usize) -> usize {
        self.src[..at].matches('\n').count() + 1
    }

    fn statement(&mut self, stmt: &Stmt) -> Result<(), TextError> {
        match stmt {
            // Already applied by `float_type`.
            Stmt::Dtype { .. } => Ok(()),
            Stmt::Param(names) => names.iter().try_for_each(|n| self.param(n)),
            Stmt::Input {
                name,
                dtype,
                dtype_at,
                dims,
            } => self.input(name, *dtype, *dtype_at, dims),
            Stmt::Let { name, call } => self.define(name, call),
            Stmt::Output(names) => names.iter().try_for_each(|n| self.output(n)),
            Stmt::Assert { at, left, right } => self.assert(*at, left, right),
        }
    }

    fn param(&mut self, name: &Name) -> Result<(), TextError> {
        match self.builder.param(&name.text) {
            Ok(_) => Ok(()),
            Err(UopError::Duplicate(_)) => Err(self.error(
                ErrorKind::BadName,
                name.at,
                format!("parameter `${}` is declared twice", name.text),
            )),
            Err(e) => Err(self.error(ErrorKind::BadName, name.at, e.to_string())),
        }
    }

    /// Checks that `name` may name a new tensor.
    fn check_new_name(&self, name: &Name) -> Result<(), TextError> {
        let text = &name.text;
        let problem = if Micro::from_name(text).is_some() {
            format!("`{text}` is a micro op and cannot name a tensor")
        } else if KEYWORDS.contains(&text.as_str()) {
            format!("`{text}` is a reserved word and cannot name a tensor")
        } else if let Some((_, at)) = self.scope.get(text) {
            format!("`{text}` is already defined on line {}", self.line_of(*at))
        } else if self.builder.has_dim(text) {
            format!("`{text}` is a dimension of an input and cannot also name a tensor")
        } else {
            return Ok(());
        };
        Err(self.error(ErrorKind::BadName, name.at, problem))
    }

    fn input(
        &mut self,
        name: &Name,
        dtype: DType,
        dtype_at: usize,
        dims: &[(Expr, usize)],
    ) -> Result<(), TextError> {
        self.check_new_name(name)?;
        for (dim, at) in dims {
            if let Expr::Name(d) = dim
                && (self.scope.contains_key(d) || *d == name.text)
            {
                return Err(self.error(
                    ErrorKind::BadName,
                    *at,
                    format!("`{d}` is a tensor and cannot also be a dimension name"),
                ));
            }
        }
        let exprs = dims.iter().map(|(d, _)| d.clone()).collect();
        let id = self
            .builder
            .input_exprs(&name.text, dtype, exprs)
            .map_err(|e| {
                let at = if matches!(e, UopError::DType { .. }) {
                    dtype_at
                } else {
                    name.at
                };
                self.error(kind_of(&e), at, e.to_string())
            })?;
        self.scope.insert(name.text.clone(), (id, name.at));
        self.inputs.push(id);
        Ok(())
    }

    fn define(&mut self, name: &Name, call: &Call) -> Result<(), TextError> {
        self.check_new_name(name)?;
        let id = self.call(call)?;
        let node_name = &self.builder.node(id).name;
        let already_named = self.builder.find(node_name) == Some(id);
        // A macro op may return an existing tensor (say, its input unchanged): then the
        // new name is an alias, and the tensor keeps the name it has.
        if !already_named {
            self.builder
                .set_name(id, &name.text)
                .map_err(|e| self.error(ErrorKind::BadName, name.at, e.to_string()))?;
        }
        self.scope.insert(name.text.clone(), (id, name.at));
        Ok(())
    }

    fn output(&mut self, name: &Name) -> Result<(), TextError> {
        let id = self.tensor(&name.text, name.at)?;
        if self.outputs.contains(&id) {
            return Err(self.error(
                ErrorKind::Program,
                name.at,
                format!("`{}` is already an output", name.text),
            ));
        }
        self.first_output_at.get_or_insert(name.at);
        self.outputs.push(id);
        Ok(())
    }

    fn assert(&mut self, at: usize, left: &Item, right: &Item) -> Result<(), TextError> {
        for item in [left, right] {
            self.check_names(item, true)?;
        }
        self.builder
            .assert_equal(left.expr.clone(), right.expr.clone())
            .map_err(|e| {
                let spans = [(left.at, left.end), (right.at, right.end)];
                let at = self.locate(&e, &spans).unwrap_or(at);
                self.error(kind_of(&e), at, e.to_string())
            })
    }

    fn finish(self) -> Result<Program, TextError> {
        let Some(at) = self.first_output_at else {
            return Err(self.error(
                ErrorKind::Program,
                // The end of the last line with text, rather than an empty line after it.
                self.src.trim_end().len(),
                "the program has no outputs (add a line `output name`)",
            ));
        };
        let mut program = self
            .builder
            .combine(&self.inputs, &self.outputs)
            .map_err(|e| self.error(ErrorKind::Program, at, e.to_string()))?;
        rename_clashes_with_dims(&mut program);
        Ok(program)
    }

    /// The tensor named `name`, written at `at`.
    fn tensor(&self, name: &str, at: usize) -> Result<NodeId, TextError> {
        if let Some((id, _)) = self.scope.get(name) {
            return Ok(*id);
        }
        let message = if self.builder.has_dim(name) {
            format!("`{name}` is a dimension, not a tensor")
        } else if Micro::from_name(name).is_some() || self.registry.contains(name) {
            format!("`{name}` is an op: call it as `{name}(...)`")
        } else {
            match suggest(name, self.scope.keys().map(String::as_str)) {
                Some(s) => format!("unknown name `{name}` (did you mean `{s}`?)"),
                None => format!("unknown name `{name}`"),
            }
        };
        Err(self.error(ErrorKind::UnknownName, at, message))
    }

    /// Checks the `$params` (and, if `names_are_dims`, the names) an expression mentions.
    fn check_names(&self, item: &Item, names_are_dims: bool) -> Result<(), TextError> {
        let mut problem = None;
        item.expr.visit(&mut |e| {
            if problem.is_some() {
                return;
            }
            match e {
                Expr::Param(p) if !self.builder.params().contains(p) => {
                    problem = Some((
                        format!("${p}"),
                        format!("parameter `${p}` is not declared (add a line `param {p}`)"),
                    ));
                }
                Expr::Name(n) if names_are_dims && !self.builder.has_dim(n) => {
                    problem = Some((n.clone(), format!("`{n}` is not a dimension of any input")));
                }
                _ => {}
            }
        });
        match problem {
            None => Ok(()),
            Some((token, message)) => {
                let at = self.locate_token(&token, &[(item.at, item.end)]);
                Err(self.error(ErrorKind::UnknownName, at.unwrap_or(item.at), message))
            }
        }
    }

    fn lookup_op(&self, name: &Name) -> Result<Op<'a>, TextError> {
        let registry: &'a Registry = self.registry;
        // A registered op may extend a micro op of the same name (numpy broadcasting
        // for `add`, `where`, ...): the registry is consulted first.
        if let Some(m) = registry.get(&name.text) {
            return Ok(Op::Macro(m));
        }
        if let Some(m) = Micro::from_name(&name.text) {
            return Ok(Op::Micro(m));
        }
        let text = &name.text;
        let message = if self.scope.contains_key(text) {
            format!("`{text}` is a tensor, not an op")
        } else {
            let micro = Micro::all()
                .into_iter()
                .map(Micro::name)
                .collect::<Vec<_>>();
            let candidates = micro
                .iter()
                .map(String::as_str)
                .chain(self.registry.iter().map(|op| op.name.as_str()));
            match suggest(text, candidates) {
                Some(s) => format!("unknown op `{text}` (did you mean `{s}`?)"),
                None => format!("unknown op `{text}`"),
            }
        };
        Err(self.error(ErrorKind::UnknownOp, name.at, message))
    }

    /// Builds a call (its nested calls first) and returns its node.
    fn call(&mut self, call: &Call) -> Result<NodeId, TextError> {
        let op = self.lookup_op(&call.op)?;
        let (args, attrs) = self.arguments(call)?;
        let result = match op {
            Op::Micro(m) => m.build(&mut self.builder, &args, &attrs),
            Op::Macro(m) => (m.f)(&mut self.builder, &args, &attrs),
        };
        match result {
            Ok(id) => {
                self.check_args_read(call, op, &args)?;
                self.check_attrs_read(call, op, &attrs)?;
                Ok(id)
            }
            // A required attribute is missing and an unknown one is given: likely a typo,
            // which is the better message.
            Err(e) if e.missing => {
                self.check_attrs_read(call, op, &attrs)?;
                Err(self.op_error(call, op, &args, &attrs, e))
            }
            Err(e) => Err(self.op_error(call, op, &args, &attrs, e)),
        }
    }

    /// Evaluates the arguments of a call into positional values and attributes.
    fn arguments(&mut self, call: &Call) -> Result<(Args, Attrs), TextError> {
        let mut positional = Vec::new();
        let mut attrs: Vec<(String, Slot)> = Vec::new();
        for arg in &call.args {
            match &arg.attr {
                None if !attrs.is_empty() => {
                    return Err(self.error(
                        ErrorKind::Arguments,
                        arg.at,
                        format!(
                            "{}: positional arguments come before attributes",
                            call.op.text
                        ),
                    ));
                }
                Some(n) if attrs.iter().any(|(m, _)| *m == n.text) => {
                    return Err(self.error(
                        ErrorKind::Arguments,
                        n.at,
                        format!("{}: attribute `{}` is given twice", call.op.text, n.text),
                    ));
                }
                _ => {}
            }
            let slot = self.value(&arg.value, arg.at)?;
            match &arg.attr {
                None => positional.push(slot),
                Some(n) => attrs.push((n.text.clone(), slot)),
            }
        }
        Ok((Args::new(positional), Attrs::new(attrs)))
    }

    fn value(&mut self, v: &ValueSyntax, at: usize) -> Result<Slot, TextError> {
        let value = match v {
            ValueSyntax::Call(c) => Value::Node(self.call(c)?),
            ValueSyntax::Name(n) => Value::Node(self.tensor(n, at)?),
            ValueSyntax::Int(i) => Value::Int(*i),
            ValueSyntax::Float(f) => Value::Float(*f),
            ValueSyntax::Bool(b) => Value::Bool(*b),
            ValueSyntax::Str(s) => Value::Str(s.clone()),
            ValueSyntax::Param(p) => {
                if !self.builder.params().contains(p) {
                    return Err(self.error(
                        ErrorKind::UnknownName,
                        at,
                        format!("parameter `${p}` is not declared (add a line `param {p}`)"),
                    ));
                }
                Value::Param(p.clone())
            }
            ValueSyntax::List(items) => {
                let mut list_items = Vec::with_capacity(items.len());
                for item in items {
                    // Names in a list may be dims or tensors (`sources=[a, b]`): only the
                    // op knows which, so only `$params` are checked here.
                    self.check_names(item, false)?;
                    let node = match &item.expr {
                        Expr::Name(n) => self.scope.get(n).map(|(id, _)| *id),
                        _ => None,
                    };
                    list_items.push(ListItem {
                        at: item.at,
                        end: item.end,
                        node,
                    });
                }
                let exprs = items.iter().map(|i| i.expr.clone()).collect();
                return Ok(Slot::new(Value::List(exprs), at, list_items));
            }
        };
        Ok(Slot::new(value, at, Vec::new()))
    }

    /// Reports the first positional argument the op did not read.
    fn check_args_read(&self, call: &Call, op: Op<'_>, args: &Args) -> Result<(), TextError> {
        check_args_read(self.src, &call.op.text, &op.signature(), args)
    }

    /// Reports the first attribute the op did not read, at the attribute's name.
    fn check_attrs_read(&self, call: &Call, op: Op<'_>, attrs: &Attrs) -> Result<(), TextError> {
        let name_at = |attr: &str| {
            call.args
                .iter()
                .find_map(|a| a.attr.as_ref().filter(|n| n.text == attr).map(|n| n.at))
        };
        check_attrs_read(self.src, &call.op.text, &op.signature(), attrs, &name_at)
    }

    /// Positions and words an error from an op call.
    fn op_error(
        &self,
        call: &Call,
        op: Op<'_>,
        args: &Args,
        attrs: &Attrs,
        e: MacroError,
    ) -> TextError {
        let spans: Vec<(usize, usize)> = args
            .slots()
            .iter()
            .chain(attrs.slots())
            .flat_map(|s| s.items.iter().map(|i| (i.at, i.end)))
            .collect();
        op_error(
            self.src,
            &call.op.text,
            call.op.at,
            &op.signature(),
            matches!(op, Op::Macro(_)),
            &spans,
            e,
        )
    }

    /// Where in the given list items an expression error is.
    fn locate(&self, e: &UopError, spans: &[(usize, usize)]) -> Option<usize> {
        locate(self.src, e, spans)
    }

    /// The first whole-token occurrence of `token` within the spans.
    fn locate_token(&self, token: &str, spans: &[(usize, usize)]) -> Option<usize> {
        locate_token(self.src, token, spans)
    }
}

/// Reports the first positional argument op `name` did not read.
pub(crate) fn check_args_read(
    src: &str,
    name: &str,
    signature: &str,
    args: &Args,
) -> Result<(), TextError> {
    let Some((i, slot)) = args.first_unused() else {
        return Ok(());
    };
    let n = args.used_count();
    let plural = if n == 1 { "" } else { "s" };
    Err(TextError::new(
        ErrorKind::Arguments,
        src,
        slot.at,
        format!(
            "{name}: unexpected argument {}: `{name}` takes {n} positional argument{plural} (usage: {signature})",
            i + 1,
        ),
    ))
}

/// Reports the first attribute op `name` did not read, at the attribute's name
/// (`name_at` gives it) or its value.
pub(crate) fn check_attrs_read(
    src: &str,
    name: &str,
    signature: &str,
    attrs: &Attrs,
    name_at: &dyn Fn(&str) -> Option<usize>,
) -> Result<(), TextError> {
    let Some((attr, slot)) = attrs.first_unused() else {
        return Ok(());
    };
    let at = name_at(attr).unwrap_or(slot.at);
    Err(TextError::new(
        ErrorKind::Arguments,
        src,
        at,
        format!("{name}: unknown attribute `{attr}` (usage: {signature})"),
    ))
}

/// Positions and words an error from a call of op `name` written at `op_at`;
/// `spans` are the list items of its arguments.
pub(crate) fn op_error(
    src: &str,
    name: &str,
    op_at: usize,
    signature: &str,
    is_macro: bool,
    spans: &[(usize, usize)],
    e: MacroError,
) -> TextError {
    let at =
        e.at.or_else(|| e.uop.as_ref().and_then(|u| locate(src, u, spans)))
            .unwrap_or(op_at);
    let (kind, message) = if e.about_arguments {
        (
            ErrorKind::Arguments,
            format!("{name}: {} (usage: {signature})", e.message()),
        )
    } else {
        let kind = match (&e.uop, is_macro) {
            (Some(u), _) => kind_of(u),
            (None, true) => ErrorKind::Macro,
            (None, false) => ErrorKind::Arguments,
        };
        let message = if is_macro {
            format!("{name}: {}", e.message())
        } else {
            // Builder messages already start with the micro op's name.
            e.message().to_string()
        };
        (kind, message)
    };
    TextError::new(kind, src, at, message)
}

/// Where in the given list items an expression error is: builder messages quote
/// the offending expression in backticks (`i5`, `$kh`, `dA3`).
fn locate(src: &str, e: &UopError, spans: &[(usize, usize)]) -> Option<usize> {
    let UopError::BadExpr { message, .. } = e else {
        return None;
    };
    let token = message.split('`').nth(1)?;
    locate_token(src, token, spans)
}

/// The first whole-token occurrence of `token` within the spans.
fn locate_token(src: &str, token: &str, spans: &[(usize, usize)]) -> Option<usize> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    spans.iter().find_map(|&(start, end)| {
        let text = &src[start..end];
        text.match_indices(token).find_map(|(p, _)| {
            let before = text[..p].chars().next_back();
            let after = text[p + token.len()..].chars().next();
            let whole = !before.is_some_and(is_word) && !after.is_some_and(is_word);
            whole.then_some(start + p)
        })
    })
}

/// Gives a new name to generated node names (`t3`) that happen to equal a dimension
/// name, which the text format forbids: the printed program must parse again. Names a
/// user wrote never clash (they are checked against the dims).
fn rename_clashes_with_dims(program: &mut Program) {
    let mut dims = HashSet::new();
    for id in &program.inputs {
        for d in &program.node(*id).shape {
            if let Expr::Name(n) = d {
                dims.insert(n.clone());
            }
        }
    }
    let mut taken: HashSet<String> = program.nodes.iter().map(|n| n.name.clone()).collect();
    taken.extend(dims.iter().cloned());
    for node in &mut program.nodes {
        if dims.contains(&node.name) {
            let fresh = (1..)
                .map(|k| format!("{}_{k}", node.name))
                .find(|candidate| !taken.contains(candidate))
                .unwrap_or_default();
            taken.insert(fresh.clone());
            node.name = fresh;
        }
    }
}

/// The kind of a builder error.
fn kind_of(e: &UopError) -> ErrorKind {
    match e {
        UopError::Syntax { .. } => ErrorKind::Syntax,
        UopError::DType { .. } => ErrorKind::DType,
        UopError::Duplicate(_) => ErrorKind::BadName,
        UopError::Combine(_) => ErrorKind::Program,
        UopError::ShapeMismatch { .. }
        | UopError::Broadcast { .. }
        | UopError::RankMismatch { .. }
        | UopError::BadAxis { .. }
        | UopError::RepeatedAxis { .. }
        | UopError::BadExpr { .. } => ErrorKind::Build,
    }
}

/// The candidate closest to `name` within two edits, for "did you mean" hints.
///
/// ```
/// use uop_codegen::text::suggest;
/// assert_eq!(suggest("expp", ["exp", "log"].into_iter()), Some("exp"));
/// ```
pub fn suggest<'c>(name: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    candidates
        .map(|c| (edit_distance(name, c), c))
        .filter(|&(d, c)| d <= 2 && d < name.len().max(c.len()) / 2 + 1)
        .min()
        .map(|(_, c)| c)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != *cb);
            row[j + 1] = substitute.min(prev[j + 1] + 1).min(row[j] + 1);
        }
        prev = row;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_close_names_only() {
        assert_eq!(edit_distance("expp", "exp"), 1);
        assert_eq!(edit_distance("", "ab"), 2);
        let ops = ["exp", "reduce_sum", "select"];
        assert_eq!(suggest("expp", ops.into_iter()), Some("exp"));
        assert_eq!(suggest("reduce_sun", ops.into_iter()), Some("reduce_sum"));
        assert_eq!(suggest("softmax", ops.into_iter()), None);
        assert_eq!(suggest("ab", ["xy"].into_iter()), None);
    }

    #[test]
    fn the_float_type_comes_from_the_inputs() {
        let dtype = |src: &str| {
            let stmts = syntax::parse(src).expect("valid syntax");
            float_type(src, &stmts)
        };
        assert_eq!(dtype("input i: i32[N]"), Ok(DType::F32));
        assert_eq!(dtype("input i: i32[N]\ninput x: f64[N]"), Ok(DType::F64));
        assert_eq!(dtype("dtype f64"), Ok(DType::F64));
        let e = dtype("input x: f64[N]\ninput y: f32[N]").unwrap_err();
        assert_eq!(e.kind, ErrorKind::DType);
        assert_eq!(e.offset(), 25);
        assert_eq!(
            e.message(),
            "input `y` is f32, but input `x` is f64: a program has one float type"
        );
        assert_eq!(dtype("dtype i32").unwrap_err().offset(), 6);
    }
}
