//! Whole graphs ahead of time (DESIGN.md §21): a graph file as one Rust module —
//! its kernels through the Rust backend (`uop_codegen::backend::rust`) and one public
//! function per graph whose body is the definition hierarchy of the prepared graph
//! printed as Rust (`docs/graph-aot.md`).
//!
//! For a graph `NAME` the module has:
//!
//! - `pub fn NAME(ws: &mut NameWorkspace, x: &[f32], x_shape: [usize; R], ...,
//!   param_p: i64, ..., y_out: &mut [f32], ...) -> Result<(), KernelError>`: the
//!   inputs (each a slice and its shape), the `$params`, then one buffer per graph
//!   output. Every shape is checked at entry with the runtime's errors
//!   (`rt::KernelError`), never a panic;
//! - `pub fn NAME_sizes(x_shape, ..., param_p, ...) -> Result<NameSizes, KernelError>`
//!   and `pub struct NameSizes` with `y_out_shape` per output, so a caller can allocate
//!   the outputs;
//! - `pub struct NameWorkspace`: the arena of every intermediate, laid out as the
//!   memory plan says (`memory::plan_memory_apart`, placed at run time for the
//!   call's sizes; `arena_len(&sizes)`), and a buffer per graph output computed
//!   outside it. Keep one between calls and a call with the shapes of an earlier one
//!   allocates nothing (but the temporaries a kernel allocates itself; a graph output
//!   a kernel computes is written straight into the caller's buffer);
//! - for a graph with `chunk` loops, `pub fn NAME_with_loop_ends(..., ends: &mut dyn
//!   rt::graph::LoopEnds)`: the caller's loop ends (DESIGN.md §20);
//! - the kernels (`NAME_k0`, ...; identical programs of several graphs share one), a
//!   private function per `call`, a `static` per constant.
//!
//! ```
//! use uop_graph::emit::{GraphModule, GraphEmitOptions};
//! use uop_graph::{default_registry, text::parse_graph};
//!
//! let src = "input x: f32[N]\nfn more(v) { return lt(reduce_sum(v, [0]), 100) }\n\
//!            fn twice(v) { return mul(v, 2) }\ny = while(more, twice, x)\noutput y\n";
//! let graph = parse_graph(src, default_registry())?;
//! let mut module = GraphModule::new(GraphEmitOptions::default());
//! module.add("doubling", &graph, Some(src))?;
//! let rust = module.source()?;
//! assert!(rust.contains("pub fn doubling(\n    ws: &mut DoublingWorkspace,"));
//! assert!(rust.contains("loop {"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arena;
mod body;
mod call;
mod chunks;
mod code;
mod control;
mod graph_fn;
mod kernel_call;
mod one_op;
mod sizes;

use std::collections::{HashMap, HashSet};

use thiserror::Error;
use uop_codegen::backend::names::{Language, check_kernel_name};
use uop_codegen::backend::rust::{EmitError, RustModule, RustOptions, kernel_items};
use uop_codegen::signature::Signature;
use uop_codegen::text::print_program;
use uop_codegen::uop::Program;

use crate::hierarchy::{hierarchy, print_hierarchy};
use crate::ir::{Graph, Op, Ref, Source, ValueType};
use crate::pass::{PrepareOptions, prepare};
use crate::text::print_graph;

use arena::Arena;
use body::{Emitter, Item};
use code::{Idents, camel, snake};
use sizes::Sizes;

/// Options of graph emission: how the kernels are generated (checks, schedule,
/// standalone mode), as for single kernels.
pub type GraphEmitOptions = RustOptions;

/// Why a graph could not be emitted as Rust.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GraphEmitError {
    /// The graph cannot be emitted: a construct the emitter does not support, a
    /// graph that does not prepare, a name that clashes.
    #[error("graph `{graph}`: {message}")]
    Graph {
        /// The graph function's name.
        graph: String,
        /// What is wrong (naming the node when one is at fault).
        message: String,
    },
    /// The Rust backend refused a kernel or a name.
    #[error(transparent)]
    Emit(#[from] EmitError),
}

/// The kernels of every graph of a module, each distinct program once.
#[derive(Debug)]
pub(crate) struct KernelTable {
    module: RustModule,
    /// Per program text, its kernel: name, signature and whether it takes a scratch
    /// (both found once, when the kernel is added).
    by_text: HashMap<String, (String, Signature, bool)>,
}

impl KernelTable {
    /// The kernel computing `program` (added under a name made from `hint` unless an
    /// identical program is already there), its signature, and whether it has a
    /// `{name}_with_scratch` (its loops take memory of their own, which a graph
    /// lends from its workspace).
    ///
    /// The kernel's items (`NAME`, `NAME_shapes`, ...) are distinct from every item
    /// of the module in `items` (the graphs' functions, workspaces, `call`
    /// functions), and taken there.
    fn add(
        &mut self,
        hint: &str,
        program: &Program,
        items: &mut Idents,
    ) -> Result<(String, Signature, bool), GraphEmitError> {
        let text = print_program(program);
        if let Some(kernel) = self.by_text.get(&text) {
            return Ok(kernel.clone());
        }
        let base = snake(hint);
        let mut name = base.clone();
        let mut n = 2;
        loop {
            if kernel_items(&name).iter().any(|i| items.is_taken(i)) {
                name = format!("{base}_{n}");
                n += 1;
                continue;
            }
            match self.module.add(&name, program) {
                Ok(_) => break,
                Err(EmitError::NameClash { .. }) => {
                    name = format!("{base}_{n}");
                    n += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
        for item in kernel_items(&name) {
            items.take(&item);
        }
        let missing = || GraphEmitError::Graph {
            graph: hint.into(),
            message: format!("internal error: kernel `{name}` was not added"),
        };
        let signature = self
            .module
            .loops(&name)
            .map(|l| l.signature())
            .ok_or_else(missing)?;
        let scratch = self.module.takes_scratch(&name)?.ok_or_else(missing)?;
        let kernel = (name, signature, scratch);
        self.by_text.insert(text, kernel.clone());
        Ok(kernel)
    }
}

/// Graphs that become one Rust source file: their kernels, then per graph its
/// function, sizes and workspace.
#[derive(Debug)]
pub struct GraphModule {
    kernels: KernelTable,
    items: Vec<String>,
    names: Idents,
    graphs: Vec<String>,
    /// The kernels added on their own ([`GraphModule::add_kernel`]).
    kernel_names: Vec<String>,
    /// Every kernel called through `rt::graph::clocked` (benchmarks).
    clocked: bool,
}

impl GraphModule {
    /// An empty module whose kernels are generated with `options`.
    pub fn new(options: GraphEmitOptions) -> Self {
        GraphModule {
            kernels: KernelTable {
                module: RustModule::new(options),
                by_text: HashMap::new(),
            },
            items: Vec::new(),
            names: Idents::with_reserved(&["rt", "KernelError"]),
            graphs: Vec::new(),
            kernel_names: Vec::new(),
            clocked: false,
        }
    }

    /// Graphs added from now on call every kernel through `rt::graph::clocked`,
    /// which adds its time to the runtime's kernel clock (`rt::graph::kernel_clock`):
    /// for benchmarks that compare a graph's time with the sum of its kernels'.
    pub fn clock_kernels(&mut self, on: bool) {
        self.clocked = on;
    }

    /// The graph functions added so far, in order.
    pub fn names(&self) -> &[String] {
        &self.graphs
    }

    /// Sets how the kernels added from now on check their accesses
    /// (`uop_codegen::compile::Checks`; `Full` needs no schedule).
    pub fn set_checks(&mut self, checks: uop_codegen::compile::Checks) {
        self.kernels.module.set_checks(checks);
    }

    /// Runs the schedule passes on the kernels added from now on, or not.
    pub fn set_schedule(&mut self, schedule: bool) {
        self.kernels.module.set_schedule(schedule);
    }

    /// Standalone mode: the file holds a copy of the runtime (`mod rt`) instead of
    /// importing the crate `uop-runtime`.
    pub fn set_standalone(&mut self, standalone: bool) {
        self.kernels.module.set_standalone(standalone);
    }

    /// Also emits, for each kernel added with [`GraphModule::add_kernel`], the
    /// oracle's entries to it (`NAME_program`, `NAME_dyn`; see `RustOptions::oracle`).
    pub fn set_oracle(&mut self, oracle: bool) {
        self.kernels.module.set_oracle(oracle);
    }

    /// Adds `program` as a kernel of its own named `name` (not part of a graph),
    /// with `note` (a paragraph of its doc comment, as for a gradient kernel).
    ///
    /// # Errors
    ///
    /// [`GraphEmitError::Emit`] when the Rust backend refuses the program or the
    /// name; [`GraphEmitError::Graph`] when one of the kernel's items
    /// (`NAME`, `NAME_shapes`, ...) is already an item of the module.
    pub fn add_kernel(
        &mut self,
        name: &str,
        program: &Program,
        note: Option<&str>,
    ) -> Result<(), GraphEmitError> {
        if let Some(item) = kernel_items(name)
            .into_iter()
            .find(|i| self.names.is_taken(i))
        {
            return Err(GraphEmitError::Graph {
                graph: name.into(),
                message: format!("`{item}` is already an item of the module"),
            });
        }
        match note {
            Some(note) => self.kernels.module.add_with_note(name, program, note)?,
            None => self.kernels.module.add(name, program)?,
        };
        for item in kernel_items(name) {
            self.names.take(&item);
        }
        self.kernel_names.push(name.into());
        Ok(())
    }

    /// The kernels added with [`GraphModule::add_kernel`] so far, in order.
    pub fn kernel_names(&self) -> &[String] {
        &self.kernel_names
    }

    /// Adds `graph` as the function `name`: prepares it (every pass), derives its
    /// hierarchy and writes its function; `source` (the graph file's text) goes into
    /// the function's doc comment (the graph printed back when `None`).
    ///
    /// # Errors
    ///
    /// [`GraphEmitError`] for an invalid or clashing name, a graph that does not
    /// prepare, or a size the function cannot compute at entry. (`chunk` passes its
    /// input through, as the interpreter does today.)
    pub fn add(
        &mut self,
        name: &str,
        graph: &Graph,
        source: Option<&str>,
    ) -> Result<(), GraphEmitError> {
        let fail = |message: String| GraphEmitError::Graph {
            graph: name.into(),
            message,
        };
        check_kernel_name(name, Language::Rust).map_err(|e| fail(e.to_string()))?;
        let camel_name = camel(name);
        for item in [
            name.to_string(),
            format!("{name}_sizes"),
            format!("{name}_with_loop_ends"),
            format!("{name}_arena"),
            format!("{camel_name}Sizes"),
            format!("{camel_name}Workspace"),
        ] {
            if !self.names.take(&item) {
                return Err(fail(format!("`{item}` is already an item of the module")));
            }
        }
        let (prepared, _) = prepare(graph.clone(), &PrepareOptions::default())
            .map_err(|e| fail(format!("does not prepare: {e}")))?;
        let h = hierarchy(&prepared).map_err(|e| fail(e.to_string()))?;
        let mut args = Idents::with_reserved(body::RESERVED);
        let input = prepared
            .node(h.input)
            .ok_or_else(|| fail("the graph has no Input node".into()))?;
        let input_names = match &input.op {
            Op::Input { names } => names.clone(),
            _ => Vec::new(),
        };
        let inputs: Vec<(String, ValueType)> = input
            .outputs
            .iter()
            .enumerate()
            .map(|(k, ty)| {
                let raw = input_names.get(k).cloned().unwrap_or(format!("in{k}"));
                let arg = args.fresh(&raw);
                args.take(&format!("{arg}_shape"));
                (arg, ty.clone())
            })
            .collect();
        let mut outputs: Vec<(String, ValueType, Source)> = Vec::new();
        let mut out_names = Idents::default();
        for (k, s) in prepared.interface.outputs.iter().enumerate() {
            let ty = prepared
                .source_type(s)
                .ok_or_else(|| fail(format!("output {k} has no type")))?;
            let raw = prepared.output_name(k);
            outputs.push((out_names.fresh(&raw), ty, s.clone()));
        }
        let sizes = Sizes::new(name, &prepared, inputs, args).map_err(fail)?;
        // What a Sink keeps alive is not read by the code (a Sink does nothing).
        let mut reads: HashMap<Ref, usize> = HashMap::new();
        let all_uses = prepared
            .nodes()
            .iter()
            .filter(|n| !matches!(n.op, Op::Sink))
            .flat_map(|n| n.uses())
            .chain(prepared.interface.outputs.iter().filter_map(Source::as_ref));
        for r in all_uses {
            *reads.entry(r).or_default() += 1;
        }
        let used: HashSet<Ref> = reads
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(r, _)| r)
            .collect();
        let rowless = crate::looping::partitions(&prepared)
            .map_err(|e| fail(e.to_string()))?
            .rowless;
        let shown = source.map_or_else(|| print_graph(graph), str::to_string);
        let doc = format!(
            "Graph `{name}`, ahead of time:\n\n```text\n{}\n```\n\n\
             Arguments: the workspace, each input and its shape, the `$params`, then a\n\
             buffer per output (shapes from [`{name}_sizes`]). Runs the definition\n\
             hierarchy of the prepared graph:\n\n```text\n{}\n```\n\n\
             # Errors\n\n\
             The runtime's [`KernelError`] for a shape, size or selector it refuses.",
            shown.trim_end(),
            print_hierarchy(&prepared, &h).trim_end()
        );
        let mut emitter = Emitter {
            graph: &prepared,
            h: &h,
            name: name.into(),
            sizes,
            kernels: &mut self.kernels,
            items_taken: &mut self.names,
            items: Vec::new(),
            used,
            arena: Arena::new(&prepared).map_err(fail)?,
            consts: HashMap::new(),
            clocked: self.clocked,
            direct: HashMap::new(),
            written: HashSet::new(),
            rowless,
        };
        let function = emitter.graph_function(&doc, &outputs)?;
        let sizes_items = emitter.sizes.items(&camel_name);
        let mut items = std::mem::take(&mut emitter.items);
        items.push(Item::Text(sizes_items));
        items.push(Item::Code(function));
        self.items.extend(print_items(items));
        self.graphs.push(name.into());
        Ok(())
    }

    /// The whole file: the kernels (with the runtime's import, or the runtime itself
    /// in standalone mode), then the graphs' items.
    ///
    /// # Errors
    ///
    /// As [`RustModule::source`].
    pub fn source(&self) -> Result<String, GraphEmitError> {
        let mut out = self.kernels.module.source()?;
        if self.items.is_empty() {
            return Ok(out);
        }
        out.push_str("\n// ---- graphs ----\n");
        for item in &self.items {
            out.push('\n');
            out.push_str(item.trim_end());
            out.push('\n');
        }
        Ok(out)
    }
}

/// A graph's planned items printed, in order; a constant no function reads (one
/// only an unread value returns, a branch result copied nowhere) is left out.
fn print_items(items: Vec<Item>) -> Vec<String> {
    let mut read = HashSet::new();
    let mut printed: Vec<Result<String, (String, String)>> = Vec::new();
    for item in items {
        printed.push(match item {
            Item::Static { name, text } => Err((name, text)),
            Item::Code(code) => {
                read.extend(code.reads().statics);
                Ok(code.print())
            }
            Item::Text(text) => Ok(text),
        });
    }
    printed
        .into_iter()
        .filter_map(|p| match p {
            Ok(text) => Some(text),
            Err((name, text)) => read.contains(&name).then_some(text),
        })
        .collect()
}

/// The source of a file with the one graph `name` (see [`GraphModule`]).
///
/// # Errors
///
/// As [`GraphModule::add`].
pub fn emit_graph(
    name: &str,
    graph: &Graph,
    source: Option<&str>,
    options: &GraphEmitOptions,
) -> Result<String, GraphEmitError> {
    let mut module = GraphModule::new(options.clone());
    module.add(name, graph, source)?;
    module.source()
}
