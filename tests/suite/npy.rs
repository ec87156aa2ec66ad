//! `.npy` reading and writing: round trips, files written by numpy
//! (tests/data/npy/, made by make_fixtures.py there), and every refusal with its message.

use std::fs;
use std::path::{Path, PathBuf};

use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop::npy::{NpyErrorKind, read_npy, read_npy_bytes, write_npy, write_npy_bytes};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/npy")
        .join(name)
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    fs::read(fixture(name)).expect("fixture is committed")
}

/// A fresh directory under the target dir, so tests never write into the source tree.
fn scratch_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("npy-{test}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("target dir is writable");
    dir
}

/// The error message for bytes that must be refused.
fn refusal(name: &str, bytes: &[u8]) -> String {
    match read_npy_bytes(name, bytes) {
        Ok(t) => panic!("{name} was accepted as {t:?}"),
        Err(e) => e.to_string(),
    }
}

/// Distinct, non-integral values for floats, signed integers for i32.
fn sample(dtype: DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|k| match dtype {
            DType::I32 => k as f64 * 7.0 - 40.0,
            _ => (k as f64 - 3.3) / 7.0,
        })
        .collect();
    Tensor::new(dtype, shape.to_vec(), data).expect("data matches shape")
}

#[test]
fn every_dtype_and_rank_up_to_4_round_trips_through_a_file() {
    let dir = scratch_dir("round-trip");
    let shapes: [&[usize]; 6] = [&[], &[5], &[2, 3], &[2, 1, 3], &[2, 3, 1, 2], &[3, 0]];
    for dtype in [DType::F32, DType::F64, DType::I32] {
        for shape in shapes {
            let t = sample(dtype, shape);
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            let path = dir.join(format!("{dtype}-[{}].npy", dims.join("x")));
            write_npy(&path, &t).expect("writable");
            let back = read_npy(&path).expect("readable");
            assert_eq!(back, t, "{dtype} {shape:?}");
        }
    }
}

#[test]
fn written_files_declare_numpy_dtype_c_order_and_shape() {
    let header = |t: &Tensor| {
        let bytes = write_npy_bytes("t.npy", t).expect("encodable");
        assert_eq!(&bytes[..6], b"\x93NUMPY");
        String::from_utf8_lossy(&bytes[10..bytes.len() - t.len() * t.dtype.size()]).into_owned()
    };
    let f32_header = header(&sample(DType::F32, &[2, 3]));
    assert!(f32_header.contains("'descr': '<f4'"), "{f32_header}");
    assert!(
        f32_header.contains("'fortran_order': False"),
        "{f32_header}"
    );
    assert!(header(&sample(DType::F64, &[1])).contains("'<f8'"));
    assert!(header(&sample(DType::I32, &[1])).contains("'<i4'"));
    let scalar_header = header(&sample(DType::F64, &[]));
    assert!(scalar_header.contains("'shape': ()"), "{scalar_header}");
}

#[test]
fn writing_replaces_a_file_and_leaves_no_temporary_behind() {
    let dir = scratch_dir("replace");
    let path = dir.join("out.npy");
    write_npy(&path, &sample(DType::F64, &[4])).expect("first write");
    let second = sample(DType::I32, &[2, 2]);
    write_npy(&path, &second).expect("second write");
    assert_eq!(read_npy(&path).expect("readable"), second);
    let names: Vec<_> = fs::read_dir(&dir)
        .expect("listable")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, vec!["out.npy"]);
}

#[test]
fn a_failed_write_names_the_file_and_creates_nothing() {
    let dir = scratch_dir("failed-write");
    let path = dir.join("missing-dir").join("out.npy");
    let err = write_npy(&path, &sample(DType::F32, &[2])).expect_err("no such directory");
    assert!(matches!(err.kind, NpyErrorKind::Write(_)));
    assert!(
        err.to_string()
            .starts_with(&format!("{}: cannot write the file: ", path.display())),
        "{err}"
    );
    assert!(!dir.join("missing-dir").exists());
}

#[test]
fn a_tensor_whose_data_does_not_fit_its_shape_is_not_written() {
    let broken = Tensor {
        dtype: DType::F32,
        shape: vec![2, 2],
        data: vec![1.0; 3],
    };
    let err = write_npy_bytes("bad.npy", &broken).expect_err("inconsistent");
    assert_eq!(
        err.to_string(),
        "bad.npy: tensor of shape [2, 2] holds 3 values instead of 4"
    );
}

#[test]
fn numpy_float32_matrix_is_read_exactly() {
    let t = read_npy(&fixture("f32_2x3.npy")).expect("numpy file");
    let expected: Vec<f64> = (0..6)
        .map(|k| f64::from(k as f32 * 0.1f32 - 0.25f32))
        .collect();
    assert_eq!(t.dtype, DType::F32);
    assert_eq!(t.shape, vec![2, 3]);
    assert_eq!(t.data, expected);
}

#[test]
fn numpy_0d_float64_is_a_rank_0_tensor() {
    let t = read_npy(&fixture("f64_scalar.npy")).expect("numpy file");
    assert_eq!(t.dtype, DType::F64);
    assert!(t.shape.is_empty());
    assert_eq!(t.data, vec![std::f64::consts::PI]);
}

#[test]
fn numpy_int32_rank_3_is_read_in_c_order() {
    let t = read_npy(&fixture("i32_2x3x4.npy")).expect("numpy file");
    assert_eq!(t.dtype, DType::I32);
    assert_eq!(t.shape, vec![2, 3, 4]);
    assert_eq!(
        t.data,
        (0..24).map(|k| f64::from(k - 5)).collect::<Vec<_>>()
    );
    assert_eq!(t.get(&[1, 2, 3]), Some(18.0));
}

#[test]
fn numpy_special_float_values_survive() {
    let t = read_npy(&fixture("f64_1d.npy")).expect("numpy file");
    assert_eq!(t.shape, vec![5]);
    assert_eq!(t.data[..4], [1.5, -0.0, f64::INFINITY, f64::NEG_INFINITY]);
    assert!(t.data[1].is_sign_negative());
    assert_eq!(t.data[4], 1e-300);
}

#[test]
fn numpy_empty_array_keeps_its_shape() {
    let t = read_npy(&fixture("f32_0x3.npy")).expect("numpy file");
    assert_eq!(t.shape, vec![0, 3]);
    assert!(t.is_empty());
}

#[test]
fn files_read_from_numpy_are_written_back_identically_in_value() {
    for name in [
        "f32_2x3.npy",
        "f64_scalar.npy",
        "i32_2x3x4.npy",
        "f64_1d.npy",
    ] {
        let t = read_npy(&fixture(name)).expect("numpy file");
        let again = read_npy_bytes(name, &write_npy_bytes(name, &t).expect("encodable"));
        assert_eq!(again.expect("readable"), t, "{name}");
    }
}

#[test]
fn unsupported_dtypes_are_named_in_numpy_terms() {
    let cases = [
        ("i64.npy", "dtype int64 is not supported"),
        ("f16.npy", "dtype float16 is not supported"),
        ("bool.npy", "dtype bool is not supported"),
    ];
    for (name, problem) in cases {
        let path = fixture(name);
        let err = read_npy(&path).expect_err("refused");
        assert!(matches!(err.kind, NpyErrorKind::UnsupportedDType(_)));
        assert_eq!(
            err.to_string(),
            format!(
                "{}: {problem} (use float32, float64 or int32)",
                path.display()
            )
        );
    }
}

#[test]
fn structured_arrays_are_refused() {
    let message = refusal("s.npy", &fixture_bytes("structured.npy"));
    assert!(
        message.starts_with(
            "s.npy: dtype structured ([('a', '<f4'), ('b', '<i4'), ]) is not supported"
        ),
        "{message}"
    );
}

#[test]
fn big_endian_data_is_refused_with_the_conversion_to_make() {
    assert_eq!(
        refusal("be.npy", &fixture_bytes("big_endian_f4.npy")),
        "be.npy: dtype '>f4' is big-endian; only little-endian data is supported \
         (convert with a.astype('<f4'))"
    );
}

#[test]
fn fortran_order_is_refused() {
    assert_eq!(
        refusal("f.npy", &fixture_bytes("fortran_2x3.npy")),
        "f.npy: the array is stored in Fortran order; only C order is supported \
         (save np.ascontiguousarray(a) instead)"
    );
}

#[test]
fn truncated_data_is_refused() {
    let bytes = fixture_bytes("f32_2x3.npy");
    assert_eq!(
        refusal("x.npy", &bytes[..bytes.len() - 3]),
        "x.npy: the data is truncated: shape [2, 3] of float32 needs 24 bytes after the \
         header, the file has 21"
    );
}

#[test]
fn data_longer_than_the_shape_is_refused() {
    let mut bytes = fixture_bytes("f32_2x3.npy");
    bytes.extend([0; 4]);
    assert_eq!(
        refusal("x.npy", &bytes),
        "x.npy: shape [2, 3] of float32 needs 24 bytes of data but the file has 28: \
         the shape and the data length disagree"
    );
}

#[test]
fn a_file_that_is_not_npy_is_refused() {
    assert_eq!(
        refusal("notes.txt", b"hello, world"),
        "notes.txt: not a .npy file (it does not start with \"\\x93NUMPY\")"
    );
    assert_eq!(
        refusal("empty.npy", b""),
        "empty.npy: not a .npy file (it does not start with \"\\x93NUMPY\")"
    );
}

#[test]
fn unknown_versions_and_cut_headers_are_refused() {
    let bytes = fixture_bytes("f32_2x3.npy");
    let mut v9 = bytes.clone();
    v9[6] = 9;
    assert_eq!(
        refusal("v.npy", &v9),
        "v.npy: unsupported .npy format version 9.0 (known: 1.0, 2.0, 3.0)"
    );
    assert_eq!(
        refusal("h.npy", &bytes[..40]),
        "h.npy: the .npy header is truncated (the file has 40 bytes, the header needs 128)"
    );
    assert_eq!(
        refusal("h.npy", &bytes[..9]),
        "h.npy: the .npy header is truncated (the file has 9 bytes, the header needs 10)"
    );
}

/// A version 1.0 file around a hand-written header dictionary.
fn with_header(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut text = dict.to_string();
    while !(10 + text.len() + 1).is_multiple_of(64) {
        text.push(' ');
    }
    text.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((text.len() as u16).to_le_bytes());
    bytes.extend(text.as_bytes());
    bytes.extend(data);
    bytes
}

#[test]
fn malformed_header_dictionaries_are_refused() {
    let message = refusal(
        "m.npy",
        &with_header("{'descr': '<f4', 'shape': (1,), }", &[0; 4]),
    );
    assert!(
        message.starts_with("m.npy: malformed .npy header: ") && message.contains("fortran_order"),
        "{message}"
    );
    let message = refusal("m.npy", &with_header("not a dict", &[]));
    assert!(
        message.starts_with("m.npy: malformed .npy header: "),
        "{message}"
    );
}

#[test]
fn shapes_too_large_to_address_are_refused() {
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }";
    assert_eq!(
        refusal("big.npy", &with_header(dict, &[])),
        "big.npy: shape [4294967296, 4294967296, 2] is too large"
    );
}

#[test]
fn a_missing_file_is_reported_with_its_path() {
    let path = Path::new("/nonexistent/dir/in.npy");
    let err = read_npy(path).expect_err("missing");
    assert!(matches!(err.kind, NpyErrorKind::Read(_)));
    assert!(
        err.to_string()
            .starts_with("/nonexistent/dir/in.npy: cannot read the file: "),
        "{err}"
    );
}
