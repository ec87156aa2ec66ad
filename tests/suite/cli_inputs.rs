//! Inputs a user can check elsewhere: `--save-inputs DIR` writes the random inputs of
//! `uop run` and `uop grad` as .npy files (with the outputs, all or nothing), and
//! numpy's default integer files (int64) are read for i32 inputs when every value fits.

use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop::npy::read_npy;

use crate::common;
use common::{scratch, stderr, stdout, uop, uop_in, write};

/// A version 1.0 `.npy` file of little-endian int64 values, as `np.save` writes
/// `np.array([...])` of Python ints.
fn int64_npy(rows: usize, values: &[i64]) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '<i8', 'fortran_order': False, 'shape': ({rows}, {}), }}",
        values.len() / rows
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    bytes
}

#[test]
fn save_inputs_writes_the_random_inputs_that_reproduce_the_output() {
    let dir = scratch("save-inputs");
    let saved = dir.join("inputs");
    let c = dir.join("c.npy");
    let o = uop(&[
        "run",
        "examples/programs/matmul.uop",
        "--random",
        "5",
        "--dim",
        "M=2",
        "--dim",
        "K=3",
        "--dim",
        "N=2",
        "--save-inputs",
        saved.to_str().unwrap(),
        "--output",
        &format!("c={}", c.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = read_npy(&saved.join("a.npy")).expect("a saved");
    let b = read_npy(&saved.join("b.npy")).expect("b saved");
    let c = read_npy(&c).expect("c written");
    assert_eq!((a.dtype, a.shape.clone()), (DType::F32, vec![2, 3]));
    assert_eq!((b.dtype, b.shape.clone()), (DType::F32, vec![3, 2]));
    // c = a · b, computed here from the saved files.
    for i in 0..2 {
        for j in 0..2 {
            let want: f64 = (0..3).map(|k| a.data[i * 3 + k] * b.data[k * 2 + j]).sum();
            assert!((c.data[i * 2 + j] - want).abs() < 1e-5, "c[{i}, {j}]");
        }
    }
    // The saved files give the same output bit for bit.
    let again = uop(&[
        "run",
        "examples/programs/matmul.uop",
        "--input",
        &format!("a={}", saved.join("a.npy").display()),
        "--input",
        &format!("b={}", saved.join("b.npy").display()),
    ]);
    let first = uop(&[
        "run",
        "examples/programs/matmul.uop",
        "--random",
        "5",
        "--dim",
        "M=2",
        "--dim",
        "K=3",
        "--dim",
        "N=2",
    ]);
    assert_eq!(stdout(&again), stdout(&first));
}

#[test]
fn save_inputs_skips_inputs_read_from_files() {
    let dir = scratch("save-inputs-given");
    let a = Tensor::new(DType::F32, vec![1, 2], vec![1.0, 2.0]).unwrap();
    let a_file = write(&dir, "a.npy", &a);
    let o = uop_in(
        &dir,
        &[
            "run",
            &format!(
                "{}/examples/programs/matmul.uop",
                env!("CARGO_MANIFEST_DIR")
            ),
            "--input",
            &format!("a={a_file}"),
            "--random",
            "1",
            "--dim",
            "N=3",
            "--save-inputs",
            "saved",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(dir.join("saved"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["b.npy"]);
    let b = read_npy(&dir.join("saved/b.npy")).unwrap();
    assert_eq!(b.shape, vec![2, 3]);
}

#[test]
fn save_inputs_writes_nothing_when_an_output_cannot_be_written() {
    let dir = scratch("save-inputs-none");
    let o = uop_in(
        &dir,
        &[
            "run",
            &format!(
                "{}/examples/programs/matmul.uop",
                env!("CARGO_MANIFEST_DIR")
            ),
            "--random",
            "1",
            "--dim",
            "M=2",
            "--dim",
            "K=2",
            "--dim",
            "N=2",
            "--save-inputs",
            "saved",
            "--output",
            "c=missing/c.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: --output c: cannot write missing/c.npy: the directory missing does not exist\n"
    );
    assert_eq!(std::fs::read_dir(dir.join("saved")).unwrap().count(), 0);
}

#[test]
fn grad_saves_its_random_inputs_too() {
    let dir = scratch("save-inputs-grad");
    let o = uop_in(
        &dir,
        &[
            "grad",
            &format!(
                "{}/examples/programs/softmax.uop",
                env!("CARGO_MANIFEST_DIR")
            ),
            "--random",
            "2",
            "--dim",
            "B=1",
            "--dim",
            "N=4",
            "--save-inputs",
            "saved",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let x = read_npy(&dir.join("saved/x.npy")).expect("x saved");
    assert_eq!((x.dtype, x.shape), (DType::F32, vec![1, 4]));
}

/// `y[r, m] = x[r, i[r, m]]`: an i32 input of indices.
const SELECT: &str = "input x: f32[R, N]\ninput i: i32[R, M]\ny = select(x, i, axis=1)\noutput y\n";

/// Writes the program and `x = [[10, 20, 30]]` into `dir`.
fn select_setup(dir: &std::path::Path) {
    std::fs::write(dir.join("select.uop"), SELECT).unwrap();
    let x = Tensor::new(DType::F32, vec![1, 3], vec![10.0, 20.0, 30.0]).unwrap();
    write(dir, "x.npy", &x);
}

#[test]
fn int64_files_are_read_for_i32_inputs_when_the_values_fit() {
    let dir = scratch("int64");
    select_setup(&dir);
    std::fs::write(dir.join("i.npy"), int64_npy(1, &[2, 0, 1, 2])).unwrap();
    let args = [
        "run",
        "select.uop",
        "--input",
        "x=x.npy",
        "--input",
        "i=i.npy",
    ];
    let o = uop_in(&dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "y: f32[1, 4]\n[[30, 10, 20, 30]]\n");
}

#[test]
fn an_int64_value_that_does_not_fit_i32_is_named() {
    let dir = scratch("int64-big");
    select_setup(&dir);
    std::fs::write(dir.join("i.npy"), int64_npy(1, &[1, 3000000000])).unwrap();
    let args = [
        "run",
        "select.uop",
        "--input",
        "x=x.npy",
        "--input",
        "i=i.npy",
    ];
    let o = uop_in(&dir, &args);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: i.npy: value 3000000000 (element 1) of this int64 array does not fit int32, \
         the input's type (int32 holds -2147483648 to 2147483647)\n"
    );
}

#[test]
fn an_int64_file_for_a_float_input_is_refused() {
    let dir = scratch("int64-float");
    std::fs::write(dir.join("x.npy"), int64_npy(1, &[1, 2])).unwrap();
    let o = uop_in(
        &dir,
        &[
            "run",
            &format!(
                "{}/examples/programs/softmax.uop",
                env!("CARGO_MANIFEST_DIR")
            ),
            "--input",
            "x=x.npy",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: x.npy: dtype int64 is not supported (use float32, float64 or int32)\n"
    );
}
