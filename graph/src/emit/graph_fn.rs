//! The graph's own function, planned by phase: its arguments (the workspace, each
//! input and its shape, the `$params`, a buffer per output), the checks at entry,
//! which outputs a kernel writes straight into the caller's buffer, the body (the
//! top level of the hierarchy, `chunk` loops open to its end), the outputs
//! delivered, the workspace struct; then the function printed with its prologue
//! (sizes, workspace, arena) around the body.

use super::GraphEmitError;
use super::arena::Val;
use super::body::{Emitter, Frame, Item, destructure, sized};
use super::chunks::{COUNTS, ENDS};
use super::code::{Code, Ex, Reads, camel, elem, ex, string};
use super::sizes::{signature, texts};
use crate::ir::{Op, Ref, Source, ValueType};
use uop_codegen::uop::DType;

/// A graph output: its name, type and the value it returns.
pub(super) type Output = (String, ValueType, Source);

/// The graph function's arguments, as planned.
struct Args {
    /// Every argument: `name: type`.
    all: Vec<String>,
    /// Per output, its argument and the code of its shape.
    outs: Vec<(String, Ex)>,
    /// The arguments of `{graph}_sizes`: the inputs' shapes, the `$params`.
    shapes: Vec<String>,
}

impl Emitter<'_> {
    /// The graph's function (and its `_with_loop_ends` twin for a chunked graph):
    /// entry checks, body, results delivered into the caller's buffers. Adds the
    /// arena function and the workspace to the items.
    pub(super) fn graph_function(
        &mut self,
        doc: &str,
        outputs: &[Output],
    ) -> Result<Code, GraphEmitError> {
        let mut frame = Frame::new();
        let args = self.arguments(&mut frame, outputs)?;
        self.entry_checks(&mut frame, outputs, &args);
        self.choose_direct(outputs, &args)?;
        let mut body = Frame {
            names: frame.names.clone(),
            locals: frame.locals.clone(),
            ..Frame::new()
        };
        let loops = self.loop_counts(&mut body, outputs, &args);
        let top = self.h.top.clone();
        self.entries(&mut body, &top)?;
        let sizes_type = format!("{}Sizes", camel(&self.name));
        let arena_fn = self.arena_function(&sizes_type)?;
        self.items.push(Item::Code(arena_fn));
        self.deliver(&mut body, outputs, &args)?;
        body.code.line("Ok(())");
        if body.scratch_used {
            body.fields
                .push(("scratch".to_string(), "rt::Scratch".to_string()));
        }
        self.items.push(Item::Text(workspace(
            &format!("{}Workspace", camel(&self.name)),
            &body.fields,
            &self.name,
            self.graph.dtype,
        )));
        Ok(self.print_function(doc, args.all, loops, frame, body))
    }

    /// The arguments: the workspace, each input and its shape (values of the
    /// frame), the `$params`, a buffer per output.
    fn arguments(&mut self, frame: &mut Frame, outputs: &[Output]) -> Result<Args, GraphEmitError> {
        let mut all = vec![format!("ws: &mut {}Workspace", camel(&self.name))];
        let input_node = self.node(self.h.input)?.id;
        let mut shapes = Vec::new();
        for (k, (arg, ty)) in self.sizes.inputs.clone().iter().enumerate() {
            frame.names.fresh(arg);
            frame.names.fresh(&format!("{arg}_shape"));
            all.push(format!("{arg}: &[{}]", elem(ty.dtype)));
            all.push(format!("{arg}_shape: [usize; {}]", ty.shape.len()));
            shapes.push(format!("{arg}_shape"));
            frame
                .locals
                .insert(Ref::new(input_node, k), Val::Slice(Ex::read(arg)));
        }
        for (_, f) in self.sizes.params.clone() {
            frame.names.fresh(&f);
            all.push(format!("{f}: i64"));
            shapes.push(f);
        }
        let mut outs = Vec::new();
        for (name, ty, _) in outputs {
            let arg = frame.names.fresh(&format!("{name}_out"));
            all.push(format!("{arg}: &mut [{}]", elem(ty.dtype)));
            let shape = sized(&self.name, self.h.input, self.sizes.output(name, &ty.shape))?;
            outs.push((arg, shape));
        }
        Ok(Args { all, outs, shapes })
    }

    /// The sizes computed and every input's and output's length checked; outputs
    /// summed over chunks zeroed.
    fn entry_checks(&mut self, frame: &mut Frame, outputs: &[Output], args: &Args) {
        let g = string(&self.name);
        frame.code.line(format!(
            "let sz = &{}_sizes({})?;",
            self.name,
            args.shapes.join(", ")
        ));
        for (arg, _) in &self.sizes.inputs {
            frame.code.line(format!(
                "rt::check_len({g}, {}, {arg}.len(), &{arg}_shape)?;",
                string(arg)
            ));
        }
        for ((name, _, _), (arg, shape)) in outputs.iter().zip(&args.outs) {
            frame.code.line(ex![
                format!("rt::check_len({g}, {}, {arg}.len(), &", string(name)),
                shape,
                ")?;"
            ]);
        }
        for ((_, _, src), (arg, _)) in outputs.iter().zip(&args.outs) {
            if src.as_ref().and_then(|r| self.sum_kind(r)) == Some(true) {
                frame.code.line(format!("rt::graph::zero({arg});"));
            }
        }
    }

    /// The outputs a kernel (or call) at the top level writes straight into the
    /// caller's buffer: the first output returning each such value.
    fn choose_direct(&mut self, outputs: &[Output], args: &Args) -> Result<(), GraphEmitError> {
        for ((name, _, src), (arg, _)) in outputs.iter().zip(&args.outs) {
            if let Source::Ref(r) = src
                && self.h.scope_of(r.node) == Some(None)
                && matches!(self.node(r.node)?.op, Op::Kernel(_) | Op::Call(_))
                && !self.direct.contains_key(r)
            {
                self.direct.insert(*r, (arg.clone(), name.clone()));
            }
        }
        Ok(())
    }

    /// For a chunked graph, the loops' counts; a loop end that may leave rows
    /// unwritten gets the looped outputs zeroed first (the interpreter's rows no
    /// iteration wrote). The number of top-level chunk loops.
    fn loop_counts(&self, body: &mut Frame, outputs: &[Output], args: &Args) -> usize {
        let loops = self.h.top.iter().filter(|e| self.is_chunk(e.node)).count();
        if loops == 0 {
            return 0;
        }
        body.code.line(format!(
            "let mut {COUNTS} = [rt::graph::LoopCounts::default(); {loops}];"
        ));
        let rows: Vec<&String> = outputs
            .iter()
            .zip(&args.outs)
            .filter(|((_, _, src), _)| src.as_ref().and_then(|r| self.sum_kind(r)).is_none())
            .map(|(_, (arg, _))| arg)
            .collect();
        if !rows.is_empty() {
            body.code.open(format!("if !{ENDS}.covers_all_rows() {{"));
            for arg in rows {
                body.code.line(format!("rt::graph::zero({arg});"));
            }
            body.code.close("}");
        }
        loops
    }

    /// Each output not written straight into the caller's buffer copied there (at
    /// the end of the innermost chunk loop for a chunked graph).
    fn deliver(
        &mut self,
        body: &mut Frame,
        outputs: &[Output],
        args: &Args,
    ) -> Result<(), GraphEmitError> {
        if !body.levels.is_empty() {
            return self.deliver_chunks(body, outputs, &args.outs);
        }
        let g = string(&self.name);
        for ((name, _, src), (arg, _)) in outputs.iter().zip(&args.outs) {
            if self.written_to(src, arg) {
                continue;
            }
            let value = self.source(body, self.h.input, src)?;
            body.code.line(ex![
                format!("rt::graph::deliver({g}, {}, {arg}, ", string(name)),
                value,
                ")?;"
            ]);
        }
        Ok(())
    }

    /// The function printed from its plan: the doc, the signature (a chunked graph's
    /// `NAME` calls `NAME_with_loop_ends` with the default loop ends), the prologue
    /// (`frame`: sizes and checks), the workspace taken apart, the arena placed and
    /// grown, then the body.
    fn print_function(
        &self,
        doc: &str,
        mut args: Vec<String>,
        loops: usize,
        frame: Frame,
        body: Frame,
    ) -> Code {
        let ws = format!("{}Workspace", camel(&self.name));
        let g = string(&self.name);
        let mut c = Code::default();
        let mut fn_name = self.name.clone();
        c.doc(doc);
        if loops > 0 {
            // `NAME` runs the loops with the standard loop ends.
            fn_name = format!("{}_with_loop_ends", self.name);
            let names: Vec<&str> = args.iter().filter_map(|a| a.split(':').next()).collect();
            if args.len() > 7 {
                c.line("#[allow(clippy::too_many_arguments)]");
            }
            c.open(signature(
                &format!("pub fn {}", self.name),
                &texts(&args),
                "Result<(), KernelError>",
                &Reads::default(),
            ));
            c.line(format!(
                "{fn_name}({}, &mut rt::graph::DefaultLoopEnds)",
                names.join(", ")
            ));
            c.close("}");
            c.line("");
            c.doc(&format!(
                "[`{}`] with the caller's loop ends for its `chunk` loops (DESIGN.md §20):\n\
                 `ends` decides at the end of every iteration of every loop whether it runs\n\
                 again (`rt::graph::LoopEnds`, with state of its own). Rows of a looped\n\
                 output no iteration wrote are zero.\n\n\
                 # Errors\n\n\
                 As [`{}`], and the loop end's error naming its chunk node.",
                self.name, self.name
            ));
            args.push(format!("{ENDS}: &mut dyn rt::graph::LoopEnds"));
        }
        if args.len() > 7 {
            c.line("#[allow(clippy::too_many_arguments)]");
        }
        c.open(signature(
            &format!("pub fn {fn_name}"),
            &texts(&args),
            "Result<(), KernelError>",
            &Reads::default(),
        ));
        c.embed(frame.code);
        let mut fields = vec![("arena".to_string(), String::new())];
        fields.push(("placement".to_string(), String::new()));
        fields.extend(body.fields.iter().cloned());
        c.line(destructure(&ws, &fields));
        // The arena placed for these sizes (again only when they change) and grown
        // to its length, also when this call's code happens to touch no value in it.
        let off = match (body.off_used, body.off_mut) {
            (false, _) => "_",
            (true, false) => "off",
            (true, true) => "mut off",
        };
        c.line(format!(
            "let ({off}, arena_len) = {}_arena(placement, sz)?;",
            self.name
        ));
        let bind = if body.arena_used { "let arena = " } else { "" };
        c.line(format!("{bind}rt::graph::grow({g}, arena, arena_len)?;"));
        c.embed(body.code);
        c.close("}");
        c
    }
}

/// The workspace struct `name` of graph `graph`: its arena of `dtype` values, the
/// arena's placement, then `fields`.
fn workspace(name: &str, fields: &[(String, String)], graph: &str, dtype: DType) -> String {
    let mut c = Code::default();
    c.doc(&format!(
        "The memory of graph `{graph}` between calls: its arena (every intermediate, laid out\n\
         as the memory plan says), the buffers of graph outputs computed outside it and,\n\
         when its kernels need memory of their own, the scratch they take it from; keep\n\
         one and pass it to every call, and a call with the shapes of an earlier one\n\
         allocates nothing."
    ));
    c.line("#[derive(Debug, Default)]");
    c.open(format!("pub struct {name} {{"));
    c.line(format!("arena: Vec<{}>,", elem(dtype)));
    c.line("placement: rt::place::Kept,");
    for (f, t) in fields {
        c.line(format!("{f}: {t},"));
    }
    c.close("}");
    c.line("");
    c.open(format!("impl {name} {{"));
    c.doc("An empty workspace: its arena and buffers grow on the first call.");
    c.open("pub fn new() -> Self {");
    c.line("Self::default()");
    c.close("}");
    c.line("");
    c.doc(&format!(
        "The arena's length in elements for the sizes `sz` (from [`{graph}_sizes`]): what\n\
         a call with these sizes holds, as the memory plan (`plan_memory_apart`) lays\n\
         it out. Places the arena (kept for the next call).\n\n\
         # Errors\n\n\
         [`KernelError::TooLarge`] when the arena does not fit in memory."
    ));
    c.open(format!(
        "pub fn arena_len(&mut self, sz: &{}Sizes) -> Result<usize, KernelError> {{",
        camel(graph)
    ));
    c.line(format!("Ok({graph}_arena(&mut self.placement, sz)?.1)"));
    c.close("}");
    c.close("}");
    c.print()
}
