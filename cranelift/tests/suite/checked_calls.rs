//! A kernel bound once (`Kernel::check`) runs any number of times on buffers of the
//! bound shapes (`Checked::run_ptrs`), each buffer still checked; what does not fit
//! the signature is refused when binding, as every entry refuses it.

use std::collections::HashMap;

use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::DType;
use uop_cranelift::{Kernel, Options, RawBuffer, RunError, compile_program};

fn kernel(src: &str) -> Kernel {
    let p = parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    compile_program(&p, &Options::default()).expect("compiles")
}

fn raw(v: &mut [f32]) -> RawBuffer {
    RawBuffer {
        dtype: DType::F32,
        ptr: v.as_mut_ptr().cast(),
        len: v.len(),
    }
}

#[test]
fn one_binding_serves_every_call_on_its_shapes() {
    let k = kernel("input x: f32[N]\ny = mul(x, x)\noutput y\n");
    let checked = k.check(&[&[3]], &HashMap::new()).expect("binds");
    assert_eq!(checked.output_shapes(), vec![vec![3]]);
    let mut y = vec![0.0f32; 3];
    for round in 1..=3 {
        let mut x: Vec<f32> = (1..=3).map(|v| (v * round) as f32).collect();
        // SAFETY: distinct buffers of the bound lengths, alive for the call.
        unsafe { checked.run_ptrs(&[raw(&mut x)], &[raw(&mut y)]) }.expect("runs");
        let expected: Vec<f32> = x.iter().map(|v| v * v).collect();
        assert_eq!(y, expected, "round {round}");
    }
    // In place: the output is the input's own buffer (an element-wise kernel).
    let mut x = vec![2.0f32, 3.0, 4.0];
    let buffer = raw(&mut x);
    // SAFETY: the same buffer in and out, as `run_ptrs` allows for element-wise kernels.
    unsafe { checked.run_ptrs(&[buffer], &[buffer]) }.expect("runs in place");
    assert_eq!(x, [4.0, 9.0, 16.0]);
}

#[test]
fn buffers_that_do_not_fit_the_binding_are_refused_before_running() {
    let k = kernel("input x: f32[N]\ny = mul(x, x)\noutput y\n");
    let checked = k.check(&[&[3]], &HashMap::new()).expect("binds");
    let (mut x, mut y, mut short) = (vec![1.0f32; 3], vec![7.0f32; 3], vec![7.0f32; 2]);
    // SAFETY (all calls): live buffers of their stated lengths.
    let err = unsafe { checked.run_ptrs(&[raw(&mut x)], &[raw(&mut short)]) }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "output `y` has shape [3] (3 elements) but its slice has 2"
    );
    let err = unsafe { checked.run_ptrs(&[], &[raw(&mut y)]) }.unwrap_err();
    assert!(matches!(err, RunError::Bind(_)), "{err}");
    let err = unsafe { checked.run_ptrs(&[raw(&mut x)], &[]) }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the program has 1 outputs, got 0 output slices"
    );
    let mut ints = vec![0i32; 3];
    let int_buffer = RawBuffer {
        dtype: DType::I32,
        ptr: ints.as_mut_ptr().cast(),
        len: 3,
    };
    let err = unsafe { checked.run_ptrs(&[int_buffer], &[raw(&mut y)]) }.unwrap_err();
    assert_eq!(err.to_string(), "input `x` must be f32, got i32");
    assert_eq!(y, [7.0; 3], "nothing ran");
}

#[test]
fn binding_refuses_what_every_entry_refuses() {
    let k = kernel("input a: f32[N]\ninput b: f32[N]\ny = add(a, b)\noutput y\n");
    let err = k.check(&[&[3], &[4]], &HashMap::new()).unwrap_err();
    let slices_err = k
        .run_slices(
            &[
                (uop_cranelift::Input::F32(&[0.0; 3]), &[3][..]),
                (uop_cranelift::Input::F32(&[0.0; 4]), &[4][..]),
            ],
            &HashMap::new(),
            &mut [uop_cranelift::Output::F32(&mut [0.0; 3])],
        )
        .unwrap_err();
    assert_eq!(err.to_string(), slices_err.to_string());
    assert!(err.to_string().contains("`N`"), "{err}");
}
