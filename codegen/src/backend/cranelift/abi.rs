//! The one C ABI every compiled kernel has, JIT or object file, and the C header
//! and Rust `extern "C"` block that describe it.
//!
//! ```c
//! int32_t NAME(const void *const *inputs, const int64_t *input_dims,
//!              const int64_t *params, void *const *outputs, const int64_t *output_dims);
//! int32_t NAME_shapes(const int64_t *input_dims, const int64_t *params, int64_t *output_dims);
//! ```
//!
//! - `inputs[k]` points at input `k`'s elements (row-major; `float`, `double` or
//!   `int32_t` as declared); `input_dims` holds every input's sizes one after the
//!   other (input 0's axes, then input 1's, ...).
//! - `params` holds the `$params` in declaration order.
//! - `outputs[k]` points at room for output `k`, whose sizes the caller passes in
//!   `output_dims` the same way; `NAME_shapes` computes them (object files only).
//! - Buffers must not overlap. Outputs need not be initialized.
//! - The kernel checks everything about the sizes before touching memory and returns
//!   one of the [`Status`] codes; on an error nothing has been written.
//!
//! Temporaries are allocated and freed by the kernel (`calloc`/`free`).

use std::fmt::Write as _;

use crate::index::list;
use crate::loops::LoopProgram;
use crate::uop::DType;

/// What a kernel returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// An input size is negative, differs from a fixed size, or differs from the size
    /// another input gives the same named dimension.
    InputShape = 1,
    /// A `[=]` size assertion does not hold.
    Assertion = 2,
    /// A size computed from the inputs and params is negative.
    NegativeSize = 3,
    /// `output_dims` differ from the program's output shapes.
    OutputShape = 4,
    /// Index arithmetic overflowed 64 bits or divided by zero.
    IndexArithmetic = 5,
    /// A temporary could not be allocated, or its size overflows.
    Memory = 6,
}

impl Status {
    /// Every status, by code.
    pub const ALL: [Status; 7] = [
        Status::Ok,
        Status::InputShape,
        Status::Assertion,
        Status::NegativeSize,
        Status::OutputShape,
        Status::IndexArithmetic,
        Status::Memory,
    ];

    /// The status of a returned code, `None` for an unknown code.
    pub fn from_code(code: i32) -> Option<Status> {
        Status::ALL.into_iter().find(|s| *s as i32 == code)
    }

    /// The `#define` name in the C header.
    pub fn c_name(self) -> &'static str {
        match self {
            Status::Ok => "UOP_OK",
            Status::InputShape => "UOP_ERR_INPUT_SHAPE",
            Status::Assertion => "UOP_ERR_ASSERTION",
            Status::NegativeSize => "UOP_ERR_NEGATIVE_SIZE",
            Status::OutputShape => "UOP_ERR_OUTPUT_SHAPE",
            Status::IndexArithmetic => "UOP_ERR_INDEX_ARITHMETIC",
            Status::Memory => "UOP_ERR_MEMORY",
        }
    }

    /// One line saying what went wrong.
    pub fn message(self) -> &'static str {
        match self {
            Status::Ok => "success",
            Status::InputShape => {
                "an input size is negative, differs from a fixed size, or disagrees with \
                 another input on a named dimension"
            }
            Status::Assertion => "a size assertion ([=]) does not hold",
            Status::NegativeSize => "a size computed from the inputs and params is negative",
            Status::OutputShape => "output_dims differ from the program's output shapes",
            Status::IndexArithmetic => "index arithmetic overflowed 64 bits or divided by zero",
            Status::Memory => "a temporary could not be allocated",
        }
    }
}

fn c_type(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I32 => "int32_t",
    }
}

/// Lines describing inputs, params and outputs, with their positions in the arrays.
fn layout_comment(p: &LoopProgram, prefix: &str) -> String {
    let mut out = String::new();
    let mut at = 0;
    for (k, t) in p.inputs.iter().enumerate() {
        let d = &p.tensors[t.0];
        let rank = d.shape.len();
        let _ = writeln!(
            out,
            "{prefix}  inputs[{k}]  {}: {}{}  sizes input_dims[{at}..{}]",
            d.name,
            c_type(d.dtype),
            list(&d.shape),
            at + rank
        );
        at += rank;
    }
    for (k, name) in p.params.iter().enumerate() {
        let _ = writeln!(out, "{prefix}  params[{k}]  ${name}");
    }
    at = 0;
    for (k, t) in p.outputs.iter().enumerate() {
        let d = &p.tensors[t.0];
        let rank = d.shape.len();
        let _ = writeln!(
            out,
            "{prefix}  outputs[{k}] {}: {}{}  sizes output_dims[{at}..{}]",
            d.name,
            c_type(d.dtype),
            list(&d.shape),
            at + rank
        );
        at += rank;
    }
    out
}

fn total_rank(p: &LoopProgram, ts: &[crate::loops::TensorId]) -> usize {
    ts.iter().map(|t| p.tensors[t.0].shape.len()).sum()
}

/// The C header of the kernel `name` compiled from `p`.
pub fn c_header(p: &LoopProgram, name: &str) -> String {
    let guard = format!("UOP_KERNEL_{}_H", name.to_ascii_uppercase());
    let upper = name.to_ascii_uppercase();
    let mut h = String::new();
    let _ = writeln!(
        h,
        "/* Generated by uop: the kernel `{name}` ({}). */",
        p.dtype
    );
    let _ = writeln!(h, "#ifndef {guard}\n#define {guard}\n");
    h.push_str("#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    h.push_str("/* Return codes, shared by every uop kernel. */\n#ifndef UOP_OK\n");
    for s in Status::ALL {
        let _ = writeln!(
            h,
            "#define {} {} /* {} */",
            s.c_name(),
            s as i32,
            s.message()
        );
    }
    h.push_str("#endif\n\n");
    let _ = writeln!(
        h,
        "#define {upper}_NUM_INPUTS {}\n#define {upper}_NUM_INPUT_DIMS {}\n\
         #define {upper}_NUM_PARAMS {}\n#define {upper}_NUM_OUTPUTS {}\n\
         #define {upper}_NUM_OUTPUT_DIMS {}\n",
        p.inputs.len(),
        total_rank(p, &p.inputs),
        p.params.len(),
        p.outputs.len(),
        total_rank(p, &p.outputs)
    );
    h.push_str("/*\n * Arguments (row-major buffers that must not overlap):\n");
    h.push_str(&layout_comment(p, " *"));
    h.push_str(
        " *\n * NAME_shapes writes the output sizes for the given input sizes and params.\n\
         \x20* NAME computes the outputs (which need no initialization). Both check every\n\
         \x20* size first and return UOP_OK or an error code, having written nothing.\n\
         \x20* Link with -lm (the kernel calls exp, log, ... and calloc/free).\n */\n",
    );
    let _ = writeln!(
        h,
        "int32_t {name}_shapes(const int64_t *input_dims, const int64_t *params, \
         int64_t *output_dims);"
    );
    let _ = writeln!(
        h,
        "int32_t {name}(const void *const *inputs, const int64_t *input_dims, \
         const int64_t *params,\n    void *const *outputs, const int64_t *output_dims);"
    );
    let _ = writeln!(
        h,
        "\n#ifdef __cplusplus\n}}\n#endif\n\n#endif /* {guard} */"
    );
    h
}

/// A Rust `extern "C"` block declaring the kernel `name` compiled from `p`, after
/// the constants `NAME_INPUT_RANKS`, `NAME_NUM_PARAMS` and `NAME_OUTPUT_RANKS` (the
/// rank of every input and output, in order) a safe wrapper needs: the kernel reads
/// exactly that many sizes, so the caller must check each tensor's rank first.
pub fn rust_extern_block(p: &LoopProgram, name: &str) -> String {
    let mut r = String::new();
    let _ = writeln!(
        r,
        "// Generated by uop: the kernel `{name}` ({}); link the object file.",
        p.dtype
    );
    r.push_str("// Arguments (row-major buffers that must not overlap):\n");
    r.push_str(&layout_comment(p, "//"));
    r.push_str("// Returns 0, or an error code (see the C header) having written nothing.\n");
    let upper = name.to_ascii_uppercase();
    let ranks = |ts: &[crate::loops::TensorId]| -> Vec<String> {
        ts.iter()
            .map(|t| p.tensors[t.0].shape.len().to_string())
            .collect()
    };
    let (ins, outs) = (ranks(&p.inputs), ranks(&p.outputs));
    let _ = writeln!(
        r,
        "pub const {upper}_INPUT_RANKS: [usize; {}] = [{}];\n\
         pub const {upper}_NUM_PARAMS: usize = {};\n\
         pub const {upper}_OUTPUT_RANKS: [usize; {}] = [{}];",
        ins.len(),
        ins.join(", "),
        p.params.len(),
        outs.len(),
        outs.join(", ")
    );
    let _ = writeln!(
        r,
        "unsafe extern \"C\" {{\n    pub fn {name}_shapes(input_dims: *const i64, params: *const i64, \
         output_dims: *mut i64) -> i32;\n    pub fn {name}(\n        inputs: *const *const core::ffi::c_void,\n        \
         input_dims: *const i64,\n        params: *const i64,\n        \
         outputs: *const *mut core::ffi::c_void,\n        output_dims: *const i64,\n    ) -> i32;\n}}"
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::from_code(s as i32), Some(s));
        }
        assert_eq!(Status::from_code(99), None);
    }
}
