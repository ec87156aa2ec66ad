//! A whole model ahead of time: `build.rs` turns `model/rnn_head.uop` (an RNN over
//! a sequence — a `while` — and a head chosen by a `case`) and the ONNX model
//! `model/classifier.onnx` into Rust with `uop_build`; this crate calls the
//! generated functions. Nothing of the compiler runs or is linked at run time: the
//! generated code needs `uop-runtime`.

mod model {
    include!(concat!(env!("OUT_DIR"), "/model.rs"));
}

/// Graphs with `chunk` loops, which take custom loop ends (`*_with_loop_ends`).
pub use model::{
    AddOneWorkspace, NestedWorkspace, add_one, add_one_with_loop_ends, nested,
    nested_with_loop_ends,
};
/// The ONNX model `model/classifier.onnx` (imported by `uop-onnx` at build time):
/// `classifier(ws, x, x_shape, probs_out)` for a batch `x: [batch, 4]`.
pub use model::{ClassifierSizes, ClassifierWorkspace, classifier, classifier_sizes};
pub use model::{RnnHeadSizes, RnnHeadWorkspace, rnn_head, rnn_head_sizes};
pub use uop_runtime::KernelError;

/// The head [`Model::run`] applies to the last state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Head {
    /// The logits `h V`.
    Logits,
    /// Their softmax.
    Probabilities,
}

/// The RNN's weights and the workspace its calls share: after the first call of a
/// shape, a call allocates no buffer but its result (and its kernels' own
/// temporaries, if any).
#[derive(Debug)]
pub struct Model {
    /// The initial state, `[1, H]`.
    pub h0: Vec<f32>,
    /// The recurrent weights, `[H, H]`.
    pub w: Vec<f32>,
    /// The input weights, `[E, H]`.
    pub u: Vec<f32>,
    /// The head's weights, `[H, K]`.
    pub v: Vec<f32>,
    /// `E`, `H`, `K`.
    pub dims: [usize; 3],
    workspace: RnnHeadWorkspace,
}

impl Model {
    /// A model of these weights (checked when it runs).
    pub fn new(h0: Vec<f32>, w: Vec<f32>, u: Vec<f32>, v: Vec<f32>, dims: [usize; 3]) -> Self {
        Model {
            h0,
            w,
            u,
            v,
            dims,
            workspace: RnnHeadWorkspace::new(),
        }
    }

    /// The head's output `[1, K]` for the sequence `xs` (`steps` rows of `E`).
    ///
    /// # Errors
    ///
    /// The runtime's [`KernelError`] for weights or a sequence of the wrong shape.
    pub fn run(&mut self, xs: &[f32], steps: usize, head: Head) -> Result<Vec<f32>, KernelError> {
        let mut y = vec![0.0; self.dims[2]];
        self.run_into(xs, steps, head, &mut y)?;
        Ok(y)
    }

    /// [`Model::run`] into the caller's `y` (`K` values): a call with the sizes of
    /// an earlier one allocates nothing (the model keeps the graph's workspace).
    ///
    /// # Errors
    ///
    /// As [`Model::run`], and for a `y` that is not `K` long.
    pub fn run_into(
        &mut self,
        xs: &[f32],
        steps: usize,
        head: Head,
        y: &mut [f32],
    ) -> Result<(), KernelError> {
        let [e, h, k] = self.dims;
        let selector = [match head {
            Head::Logits => 0.0,
            Head::Probabilities => 1.0,
        }];
        let steps_param =
            i64::try_from(steps).map_err(|_| KernelError::Overflow { kernel: "rnn_head" })?;
        rnn_head(
            &mut self.workspace,
            xs,
            [steps, e],
            &self.h0,
            [1, h],
            &self.w,
            [h, h],
            &self.u,
            [e, h],
            &self.v,
            [h, k],
            &selector,
            [],
            steps_param,
            y,
        )
    }
}
