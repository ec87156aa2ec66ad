//! What a [`crate::Build`] takes: a [`Source`] — a program (kernels), a graph (a
//! graph function) or an ONNX model (a graph function) — and its modifiers.

use std::path::{Path, PathBuf};

use uop_codegen::grad::GradSpec;
use uop_codegen::uop::{DType, Program};
use uop_graph::Graph;
use uop_graph::grad::TapeMode;

/// Where a source comes from, and which items to make of it.
#[derive(Clone, Debug)]
pub struct Source {
    pub(crate) origin: Origin,
    pub(crate) name: Option<String>,
    pub(crate) dtypes: Vec<DType>,
    pub(crate) gradient: Gradients,
}

/// The origins: programs become kernels, graphs and models graph functions.
#[derive(Clone, Debug)]
pub(crate) enum Origin {
    Program(Program),
    ProgramText(String),
    ProgramFile(PathBuf),
    ProgramDir(PathBuf),
    Graph(Box<Graph>),
    GraphText(String),
    GraphFile(PathBuf),
    Onnx(PathBuf),
}

impl Origin {
    /// True for the origins that become kernels.
    pub(crate) fn is_program(&self) -> bool {
        matches!(
            self,
            Origin::Program(_)
                | Origin::ProgramText(_)
                | Origin::ProgramFile(_)
                | Origin::ProgramDir(_)
        )
    }
}

/// Which gradients to add.
#[derive(Clone, Debug, Default)]
pub(crate) enum Gradients {
    /// The forward items only.
    #[default]
    None,
    /// Each forward item and its gradient, except for the listed names (stems);
    /// a graph's gradient keeps its `while` states on a tape of this mode.
    Full { except: Vec<String>, tape: TapeMode },
    /// Only the gradient kernel for this request (a program source).
    Only(GradSpec),
}

impl Source {
    /// A program built in Rust, as the kernel `name`.
    pub fn program(name: &str, program: &Program) -> Source {
        Source::new(Origin::Program(program.clone()), Some(name))
    }

    /// A program text (`.uop`, macro ops allowed), as the kernel `name`.
    pub fn text(name: &str, text: &str) -> Source {
        Source::new(Origin::ProgramText(text.into()), Some(name))
    }

    /// A `.uop` program file, as a kernel named after its stem (or
    /// [`Source::named`]); relative paths are relative to the crate's folder (where
    /// cargo runs build scripts).
    pub fn file(path: impl AsRef<Path>) -> Source {
        Source::new(Origin::ProgramFile(path.as_ref().to_path_buf()), None)
    }

    /// Every `*.uop` program file of a folder (sorted), each a kernel named after
    /// its stem.
    pub fn dir(path: impl AsRef<Path>) -> Source {
        Source::new(Origin::ProgramDir(path.as_ref().to_path_buf()), None)
    }

    /// A graph built in Rust (`GraphBuilder`, `parse_graph`), as the graph function
    /// `name`.
    pub fn graph(name: &str, graph: &Graph) -> Source {
        Source::new(Origin::Graph(Box::new(graph.clone())), Some(name))
    }

    /// A graph text, as the graph function `name`.
    pub fn graph_text(name: &str, text: &str) -> Source {
        Source::new(Origin::GraphText(text.into()), Some(name))
    }

    /// A `.uop` graph (or program) file, as a graph function named after its stem
    /// (or [`Source::named`]): its kernels and one function running the whole
    /// graph, control flow included.
    pub fn graph_file(path: impl AsRef<Path>) -> Source {
        Source::new(Origin::GraphFile(path.as_ref().to_path_buf()), None)
    }

    /// An ONNX model (`.onnx`), imported by `uop-onnx` and emitted as a graph
    /// function named after its stem (or [`Source::named`]).
    pub fn onnx(path: impl AsRef<Path>) -> Source {
        Source::new(Origin::Onnx(path.as_ref().to_path_buf()), None)
    }

    fn new(origin: Origin, name: Option<&str>) -> Source {
        Source {
            origin,
            name: name.map(str::to_string),
            dtypes: Vec::new(),
            gradient: Gradients::None,
        }
    }

    /// Names the item `name` instead of after its file (not for a folder).
    pub fn named(mut self, name: &str) -> Source {
        self.name = Some(name.into());
        self
    }

    /// For a program: one kernel per float type (f32, f64), each the program
    /// converted to it and named `{name}_{dtype}`; without this, one kernel in the
    /// program's own type.
    pub fn dtypes(mut self, dtypes: &[DType]) -> Source {
        self.dtypes = dtypes.to_vec();
        self
    }

    /// Adds after each item its gradient `{name}_grad`: for a program, a kernel
    /// with respect to every float input, every float output seeded, nothing
    /// supplied (`uop_codegen::build::full_gradient_spec`); for a graph or model,
    /// the gradient graph (every float output seeded, every float input wanted:
    /// `uop_graph::grad::GraphGradSpec::all`) with the stack tape
    /// ([`Source::with_gradient_tape`] to choose), which takes a `param_tape_N` per `while`: the
    /// tape's rows, at least the loop's trip count.
    pub fn with_gradient(mut self) -> Source {
        self.gradient = Gradients::Full {
            except: Vec::new(),
            tape: TapeMode::Stack,
        };
        self
    }

    /// Like [`Source::with_gradient`], leaving out the gradients of the programs
    /// named here (folder stems: programs whose gradient is zero or undefined,
    /// such as an argmax).
    pub fn with_gradient_except(mut self, names: &[&str]) -> Source {
        self.gradient = Gradients::Full {
            except: names.iter().map(|s| s.to_string()).collect(),
            tape: TapeMode::Stack,
        };
        self
    }

    /// For a graph or model: its gradient graph too (as [`Source::with_gradient`]),
    /// keeping the `while` states on a tape of mode `tape` (`Recompute`: no tape
    /// parameter, more work backward).
    pub fn with_gradient_tape(mut self, tape: TapeMode) -> Source {
        self.gradient = Gradients::Full {
            except: Vec::new(),
            tape,
        };
        self
    }

    /// Makes the kernel the gradient program for `spec` alone (see
    /// `uop_codegen::grad` for its arguments and their names), instead of the
    /// program. Only for [`Source::program`]: `spec` names the program's nodes.
    pub fn gradient_only(mut self, spec: GradSpec) -> Source {
        self.gradient = Gradients::Only(spec);
        self
    }
}
