//! Reading and writing tensors as NumPy `.npy` files, the exchange format of the `uop`
//! command-line tool (inputs of `uop run`, its outputs, golden data).
//!
//! Only what the compiler's tensors can hold is accepted: little-endian `float32`,
//! `float64` and `int32`, in C (row-major) order, of any rank including 0-d arrays.
//! One conversion is made, and only on request ([`read_npy_as`] with [`DType::I32`]):
//! `int64`, numpy's default integer type, is read as `int32` when every value fits,
//! and refused with an error naming the first value that does not otherwise.
//! Anything else is refused with an error that names the file and says what to change,
//! rather than being converted silently.
//!
//! ```
//! use uop::npy::{read_npy_bytes, write_npy_bytes};
//! use uop::codegen::{tensor::Tensor, uop::DType};
//!
//! let t = Tensor::new(DType::F32, vec![2, 2], vec![1.0, 2.0, 3.0, 4.0])?;
//! let bytes = write_npy_bytes("t.npy", &t)?;
//! assert_eq!(read_npy_bytes("t.npy", &bytes)?, t);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use npyz::{Endianness, NpyFile, NpyHeader, Order, TypeChar, TypeStr, WriteOptions, WriterBuilder};
use thiserror::Error;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;

/// A `.npy` file could not be read or written. The message starts with the file name.
#[derive(Debug, Error)]
#[error("{file}: {kind}")]
pub struct NpyError {
    /// The file (or, for in-memory data, the name given by the caller).
    pub file: String,
    /// What went wrong.
    pub kind: NpyErrorKind,
}

/// What went wrong with a `.npy` file.
#[derive(Debug, Error)]
pub enum NpyErrorKind {
    /// The file could not be opened or read.
    #[error("cannot read the file: {0}")]
    Read(io::Error),
    /// The file (or its temporary sibling) could not be created, written or renamed.
    #[error("cannot write the file: {0}")]
    Write(io::Error),
    /// The path names a directory or nothing at all, so there is no file to write.
    #[error("not a file path")]
    NotAFilePath,
    /// The file does not start with the `.npy` magic string.
    #[error("not a .npy file (it does not start with \"\\x93NUMPY\")")]
    BadMagic,
    /// A format version this reader does not know.
    #[error("unsupported .npy format version {major}.{minor} (known: 1.0, 2.0, 3.0)")]
    UnsupportedVersion {
        /// Major version byte.
        major: u8,
        /// Minor version byte.
        minor: u8,
    },
    /// The header is longer than any `.npy` writer makes one.
    #[error("the .npy header claims {0} bytes, more than the {MAX_HEADER} a header may have")]
    HeaderTooLong(usize),
    /// The tensor the file holds needs more memory than may be had.
    #[error("{0}")]
    Memory(uop_runtime::MemoryError),
    /// The file ends inside the header.
    #[error(
        "the .npy header is truncated (the file has {found} bytes, the header needs {expected})"
    )]
    TruncatedHeader {
        /// Bytes needed up to the end of the header.
        expected: usize,
        /// Bytes in the file.
        found: usize,
    },
    /// The header dictionary is not what the format prescribes.
    #[error("malformed .npy header: {0}")]
    BadHeader(String),
    /// An element type other than float32, float64 or int32.
    #[error("dtype {0} is not supported (use float32, float64 or int32)")]
    UnsupportedDType(String),
    /// An int64 file read as int32 holds a value outside the int32 range.
    #[error(
        "value {value} (element {index}) of this int64 array does not fit int32, the \
         input's type (int32 holds -2147483648 to 2147483647)"
    )]
    IntOutOfRange {
        /// The value that does not fit.
        value: i64,
        /// Its position in C order.
        index: usize,
    },
    /// A supported element type stored big-endian.
    #[error(
        "dtype '{descr}' is big-endian; only little-endian data is supported \
         (convert with a.astype('{little}'))"
    )]
    BigEndian {
        /// The type string in the file, e.g. `>f4`.
        descr: String,
        /// Its little-endian equivalent, e.g. `<f4`.
        little: String,
    },
    /// The array is stored column-major.
    #[error(
        "the array is stored in Fortran order; only C order is supported \
         (save np.ascontiguousarray(a) instead)"
    )]
    FortranOrder,
    /// The shape has more elements than can be addressed.
    #[error("shape {0:?} is too large")]
    TooLarge(Vec<u64>),
    /// Fewer data bytes than the shape needs.
    #[error(
        "the data is truncated: shape {shape:?} of {dtype} needs {expected} bytes after the \
         header, the file has {found}"
    )]
    Truncated {
        /// Shape from the header.
        shape: Vec<usize>,
        /// Element type (numpy spelling).
        dtype: &'static str,
        /// Bytes the shape needs.
        expected: usize,
        /// Bytes present.
        found: usize,
    },
    /// More data bytes than the shape needs.
    #[error(
        "shape {shape:?} of {dtype} needs {expected} bytes of data but the file has {found}: \
         the shape and the data length disagree"
    )]
    ExtraData {
        /// Shape from the header.
        shape: Vec<usize>,
        /// Element type (numpy spelling).
        dtype: &'static str,
        /// Bytes the shape needs.
        expected: usize,
        /// Bytes present.
        found: usize,
    },
    /// A tensor to be written whose data length does not match its shape.
    #[error("tensor of shape {shape:?} holds {found} values instead of {expected}")]
    InconsistentTensor {
        /// The tensor's shape.
        shape: Vec<usize>,
        /// Product of the shape.
        expected: usize,
        /// Length of the data.
        found: usize,
    },
}

impl NpyError {
    fn new(file: &str, kind: NpyErrorKind) -> Self {
        NpyError {
            file: file.to_string(),
            kind,
        }
    }
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// The longest header read: numpy writes headers of a few hundred bytes (and
/// refuses to read ones over 10,000 by default), so this is generous, and it bounds
/// what is read before the header says how much data there is.
pub const MAX_HEADER: usize = 1 << 20;

/// Reads a `.npy` file holding little-endian float32, float64 or int32 data in C order.
///
/// The read is bounded by the format: at most [`MAX_HEADER`] bytes of header, then
/// at most one byte more than the data the header describes (so `/dev/zero` or a
/// FIFO that never ends are refused rather than read forever). The tensor's memory
/// is accounted against the memory limit ([`uop_runtime::memory_limit`]) before it
/// is allocated, and a header claiming more data than a regular file holds is
/// refused before anything of that size is allocated.
pub fn read_npy(path: &Path) -> Result<Tensor, NpyError> {
    read_bounded(path, Want::Any)
}

/// The bounded read of [`read_npy`], for a tensor of type `want` when given.
fn read_bounded(path: &Path, want: Want) -> Result<Tensor, NpyError> {
    let name = path.display().to_string();
    let fail = |kind| NpyError::new(&name, kind);
    let mut file = fs::File::open(path).map_err(|e| fail(NpyErrorKind::Read(e)))?;
    let file_len = file
        .metadata()
        .ok()
        .filter(fs::Metadata::is_file)
        .map(|m| m.len());
    let mut bytes = Vec::new();
    (&mut file)
        .take((MAX_HEADER + 12) as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(NpyErrorKind::Read(e)))?;
    let header_end = header_end(&bytes).map_err(fail)?;
    let (stored, shape, expected) = parse_header(&bytes[..header_end], want).map_err(fail)?;
    if let Some(len) = file_len {
        let found = usize::try_from(len)
            .unwrap_or(usize::MAX)
            .saturating_sub(header_end);
        if found < expected {
            return Err(fail(NpyErrorKind::Truncated {
                shape,
                dtype: stored.numpy_name(),
                expected,
                found,
            }));
        }
    }
    // The raw bytes, the decoded values and the tensor's f64 values.
    let elements = (expected / stored.size()) as u64;
    let mut ledger = uop_runtime::Ledger::new();
    let accounted = ledger
        .add(&name, expected as u64, 1)
        .and_then(|()| ledger.add(&name, elements, stored.size() as u64))
        .and_then(|()| ledger.add(&name, elements, 8))
        .and_then(|()| ledger.check());
    accounted.map_err(|e| fail(NpyErrorKind::Memory(e)))?;
    let wanted = header_end.saturating_add(expected).saturating_add(1);
    if file_len.is_some() {
        // The file holds at least this much, so the whole buffer is taken at once.
        bytes
            .try_reserve_exact(wanted.saturating_sub(bytes.len()))
            .map_err(|_| {
                fail(NpyErrorKind::Memory(
                    uop_runtime::MemoryError::AllocationFailed {
                        what: name.clone(),
                        bytes: wanted as u64,
                    },
                ))
            })?;
    }
    // One byte more than the data, to tell a file with extra data from an exact one.
    (&mut file)
        .take(wanted.saturating_sub(bytes.len()) as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(NpyErrorKind::Read(e)))?;
    decode(&name, &bytes, want).map_err(|mut e| {
        if let (NpyErrorKind::ExtraData { found, .. }, Some(len)) = (&mut e.kind, file_len) {
            *found = usize::try_from(len).unwrap_or(usize::MAX) - header_end;
        }
        e
    })
}

/// The stored element type, shape and data bytes the header text describes; an
/// int64 file is accepted when `want` is i32 (see [`read_npy_as`]).
fn parse_header(
    header_text: &[u8],
    want: Want,
) -> Result<(Stored, Vec<usize>, usize), NpyErrorKind> {
    check_shape_fits(header_text)?;
    check_not_object(header_text)?;
    let header =
        NpyHeader::from_reader(header_text).map_err(|e| NpyErrorKind::BadHeader(e.to_string()))?;
    let stored = match supported_dtype(&header.dtype()) {
        Ok(d) => Stored::Uop(d),
        Err(NpyErrorKind::UnsupportedDType(_))
            if matches!(want, Want::As(DType::I32)) && is_little_int64(&header.dtype()) =>
        {
            Stored::I64
        }
        Err(NpyErrorKind::UnsupportedDType(_))
            if want == Want::Bool && is_bool(&header.dtype()) =>
        {
            Stored::Bool
        }
        Err(kind) => return Err(kind),
    };
    if header.order() == Order::Fortran && header.shape().len() > 1 {
        return Err(NpyErrorKind::FortranOrder);
    }
    let too_large = || NpyErrorKind::TooLarge(header.shape().to_vec());
    let shape = header
        .shape()
        .iter()
        .map(|&n| usize::try_from(n).ok())
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(too_large)?;
    let elements = uop_codegen::sizes::element_count(&shape).ok_or_else(too_large)?;
    let expected = elements.checked_mul(stored.size()).ok_or_else(too_large)?;
    Ok((stored, shape, expected))
}

/// Reads a `.npy` file for a tensor of type `want`: as [`read_npy`], except that an
/// int64 file is accepted for `want` = [`DType::I32`] when every value fits in int32
/// (numpy saves integers as int64 by default). The dtype of the result is the file's
/// otherwise; comparing it with `want` is the caller's business.
pub fn read_npy_as(path: &Path, want: DType) -> Result<Tensor, NpyError> {
    read_bounded(path, Want::As(want))
}

/// Reads a `.npy` file of numpy `bool` (`|b1`) as an i32 tensor of 0 and 1 (what ONNX
/// models take as `bool`); any other dtype is read as by [`read_npy`], and comparing
/// the result's dtype is the caller's business.
pub fn read_npy_bool(path: &Path) -> Result<Tensor, NpyError> {
    read_bounded(path, Want::Bool)
}

/// What a reader asks for beyond uop's own types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    /// The file's own type.
    Any,
    /// A tensor of this type (int64 files accepted for i32).
    As(DType),
    /// numpy bool, read as i32 0 / 1.
    Bool,
}

/// Parses the contents of a `.npy` file; `name` is used in error messages only.
pub fn read_npy_bytes(name: &str, bytes: &[u8]) -> Result<Tensor, NpyError> {
    decode(name, bytes, Want::Any)
}

/// Parses the contents of a `.npy` file for a tensor of type `want` (see
/// [`read_npy_as`]); `name` is used in error messages only.
pub fn read_npy_bytes_as(name: &str, bytes: &[u8], want: DType) -> Result<Tensor, NpyError> {
    decode(name, bytes, Want::As(want))
}

/// How the elements of a file are stored: one of uop's types, or int64 (read as int32
/// on request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    Uop(DType),
    I64,
    Bool,
}

impl Stored {
    fn size(self) -> usize {
        match self {
            Stored::Uop(d) => d.size(),
            Stored::I64 => 8,
            Stored::Bool => 1,
        }
    }

    fn numpy_name(self) -> &'static str {
        match self {
            Stored::Uop(d) => numpy_name(d),
            Stored::I64 => "int64",
            Stored::Bool => "bool",
        }
    }
}

fn decode(name: &str, bytes: &[u8], want: Want) -> Result<Tensor, NpyError> {
    let fail = |kind| NpyError::new(name, kind);
    let header_end = header_end(bytes).map_err(fail)?;
    let header_text = &bytes[..header_end];
    let (stored, shape, expected) = parse_header(header_text, want).map_err(fail)?;
    let data = &bytes[header_end..];
    let dtype_name = stored.numpy_name();
    if data.len() < expected {
        return Err(fail(NpyErrorKind::Truncated {
            shape,
            dtype: dtype_name,
            expected,
            found: data.len(),
        }));
    }
    if data.len() > expected {
        return Err(fail(NpyErrorKind::ExtraData {
            shape,
            dtype: dtype_name,
            expected,
            found: data.len(),
        }));
    }

    let header = NpyHeader::from_reader(header_text)
        .map_err(|e| fail(NpyErrorKind::BadHeader(e.to_string())))?;
    let npy = NpyFile::with_header(header, data);
    // The dtype and the data length were checked above, so decoding cannot fail; the
    // error is still mapped rather than unwrapped in case npyz disagrees.
    let bad = |e: io::Error| fail(NpyErrorKind::BadHeader(e.to_string()));
    let (dtype, values): (DType, Vec<f64>) = match stored {
        Stored::Uop(DType::F32) => (
            DType::F32,
            npy.into_vec::<f32>()
                .map_err(bad)?
                .into_iter()
                .map(f64::from)
                .collect(),
        ),
        Stored::Uop(DType::F64) => (DType::F64, npy.into_vec::<f64>().map_err(bad)?),
        Stored::Uop(DType::I32) => (
            DType::I32,
            npy.into_vec::<i32>()
                .map_err(bad)?
                .into_iter()
                .map(f64::from)
                .collect(),
        ),
        Stored::I64 => {
            let wide = npy.into_vec::<i64>().map_err(bad)?;
            let mut values = Vec::with_capacity(wide.len());
            for (index, &value) in wide.iter().enumerate() {
                let narrow = i32::try_from(value)
                    .map_err(|_| fail(NpyErrorKind::IntOutOfRange { value, index }))?;
                values.push(f64::from(narrow));
            }
            (DType::I32, values)
        }
        Stored::Bool => (
            DType::I32,
            npy.into_vec::<bool>()
                .map_err(bad)?
                .into_iter()
                .map(|b| f64::from(u8::from(b)))
                .collect(),
        ),
    };
    Tensor::new(dtype, shape, values).map_err(|e| {
        fail(NpyErrorKind::InconsistentTensor {
            shape: e.shape,
            expected: e.expected,
            found: e.found,
        })
    })
}

/// Whether a header dtype is numpy bool (`|b1`).
fn is_bool(dtype: &npyz::DType) -> bool {
    matches!(dtype, npyz::DType::Plain(ty) if ty.type_char() == TypeChar::Bool && ty.size_field() == 1)
}

/// Whether a header dtype is little-endian int64 (`<i8`).
fn is_little_int64(dtype: &npyz::DType) -> bool {
    matches!(dtype, npyz::DType::Plain(ty)
        if ty.type_char() == TypeChar::Int
            && ty.size_field() == 8
            && ty.endianness() == Endianness::Little)
}

/// Writes `t` as a `.npy` file in its own dtype (`<f4`, `<f8` or `<i4`), C order; a rank-0
/// tensor becomes a 0-d array.
///
/// The data goes to a temporary file in the same directory that is then renamed over
/// `path`, so a reader never sees a half-written file and a failed write leaves any
/// previous file untouched.
pub fn write_npy(path: &Path, t: &Tensor) -> Result<(), NpyError> {
    let name = path.display().to_string();
    let fail = |kind| NpyError::new(&name, kind);
    let bytes = write_npy_bytes(&name, t)?;
    let temp = temporary_sibling(path).ok_or_else(|| fail(NpyErrorKind::NotAFilePath))?;
    let written = write_and_sync(&temp, &bytes).and_then(|()| fs::rename(&temp, path));
    if let Err(e) = written {
        // Best effort: the temporary file is ours and useless now; the error that matters
        // to the user is the write failure itself.
        let _ = fs::remove_file(&temp);
        return Err(fail(NpyErrorKind::Write(e)));
    }
    Ok(())
}

/// `t`'s shape as a `.npy` header gives it, once its data is checked to fill it.
fn npy_shape(name: &str, t: &Tensor) -> Result<Vec<u64>, NpyError> {
    let expected = uop_codegen::sizes::element_count(&t.shape).unwrap_or(usize::MAX);
    if t.data.len() != expected {
        return Err(NpyError::new(
            name,
            NpyErrorKind::InconsistentTensor {
                shape: t.shape.clone(),
                expected,
                found: t.data.len(),
            },
        ));
    }
    Ok(t.shape.iter().map(|&n| n as u64).collect())
}

/// The bytes of a `.npy` file holding `t` (see [`write_npy`]); `name` is used in error
/// messages only. Values of an i32 tensor are converted with `as i32` (they are integral
/// by construction).
pub fn write_npy_bytes(name: &str, t: &Tensor) -> Result<Vec<u8>, NpyError> {
    let fail = |kind| NpyError::new(name, kind);
    let shape = npy_shape(name, t)?;
    let bytes = t
        .data
        .len()
        .saturating_mul(t.dtype.size())
        .saturating_add(128);
    let mut out = Vec::new();
    out.try_reserve_exact(bytes).map_err(|_| {
        fail(NpyErrorKind::Memory(
            uop_runtime::MemoryError::AllocationFailed {
                what: name.to_string(),
                bytes: bytes as u64,
            },
        ))
    })?;
    let written = match t.dtype {
        DType::F32 => encode(&mut out, "<f4", &shape, t.data.iter().map(|&v| v as f32)),
        DType::F64 => encode(&mut out, "<f8", &shape, t.data.iter().copied()),
        DType::I32 => encode(&mut out, "<i4", &shape, t.data.iter().map(|&v| v as i32)),
    };
    written.map_err(|e| fail(NpyErrorKind::Write(e)))?;
    Ok(out)
}

/// The bytes of a `.npy` file holding the integer tensor `t` as numpy `int64`
/// (`<i8`), or as numpy `bool` (`|b1`, non-zero is true) when `bool` is set: what an
/// ONNX model's `int64` and `bool` outputs are written as. `name` is used in error
/// messages only.
pub fn write_npy_bytes_wide(name: &str, t: &Tensor, bool: bool) -> Result<Vec<u8>, NpyError> {
    let fail = |kind| NpyError::new(name, kind);
    let shape = npy_shape(name, t)?;
    let mut out = Vec::new();
    let written = if bool {
        encode(&mut out, "|b1", &shape, t.data.iter().map(|&v| v != 0.0))
    } else {
        encode(&mut out, "<i8", &shape, t.data.iter().map(|&v| v as i64))
    };
    written.map_err(|e| fail(NpyErrorKind::Write(e)))?;
    Ok(out)
}

fn encode<T: npyz::Serialize>(
    out: &mut Vec<u8>,
    descr: &str,
    shape: &[u64],
    values: impl Iterator<Item = T>,
) -> io::Result<()> {
    let type_str: TypeStr = descr
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{descr}: {e}")))?;
    let mut writer = WriteOptions::<T>::new()
        .dtype(npyz::DType::Plain(type_str))
        .shape(shape)
        .writer(out)
        .begin_nd()?;
    writer.extend(values)?;
    writer.finish()
}

/// `.name.<pid>.<n>.tmp` next to `path`: same directory so the rename is atomic, unique
/// per process and call so concurrent writers never share one.
fn temporary_sibling(path: &Path) -> Option<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let file_name = path.file_name()?.to_string_lossy();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = format!(".{file_name}.{}.{n}.tmp", std::process::id());
    Some(path.with_file_name(temp))
}

fn write_and_sync(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    // Without the sync a crash after the rename could leave an empty file under the
    // final name on some file systems.
    file.sync_all()
}

/// Checks the fixed preamble (magic, version, header length) and returns where the data
/// starts. Done here rather than left to npyz so that a wrong or short file gets a
/// precise message, and so that a corrupt header length is never used to allocate.
fn header_end(bytes: &[u8]) -> Result<usize, NpyErrorKind> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(NpyErrorKind::BadMagic);
    }
    let truncated = |expected| NpyErrorKind::TruncatedHeader {
        expected,
        found: bytes.len(),
    };
    let (major, minor) = match bytes.get(6..8) {
        Some(v) => (v[0], v[1]),
        None => return Err(truncated(8)),
    };
    let (len_start, len_size) = match (major, minor) {
        (1, 0) => (8, 2),
        (2, 0) | (3, 0) => (8, 4),
        _ => return Err(NpyErrorKind::UnsupportedVersion { major, minor }),
    };
    let text_start = len_start + len_size;
    let len_bytes = bytes
        .get(len_start..text_start)
        .ok_or_else(|| truncated(text_start))?;
    let text_len = len_bytes
        .iter()
        .rev()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    if text_len > MAX_HEADER {
        return Err(NpyErrorKind::HeaderTooLong(text_len));
    }
    let end = text_start + text_len;
    if bytes.len() < end {
        return Err(truncated(end));
    }
    Ok(end)
}

/// Refuses shapes whose element count overflows `u64` before npyz sees them: npyz
/// multiplies the dimensions without checking, which panics in debug builds and wraps
/// silently in release builds. Shapes it cannot find or parse are left to npyz to report.
fn check_shape_fits(header: &[u8]) -> Result<(), NpyErrorKind> {
    let text = String::from_utf8_lossy(header);
    let Some(key) = text.find("'shape'").or_else(|| text.find("\"shape\"")) else {
        return Ok(());
    };
    let rest = &text[key + "'shape'".len()..];
    let (Some(open), Some(close)) = (rest.find(['(', '[']), rest.find([')', ']'])) else {
        return Ok(());
    };
    if close < open {
        return Ok(());
    }
    let dims: Option<Vec<u64>> = rest[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse().ok())
        .collect();
    let Some(dims) = dims else { return Ok(()) };
    // Products of any prefix or suffix must fit too (npyz also computes strides); with a
    // zero dimension those products stop growing, so the nonzero dimensions decide.
    let fits = dims
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .is_some();
    if fits {
        Ok(())
    } else {
        Err(NpyErrorKind::TooLarge(dims))
    }
}

/// Refuses an object array (`'descr': '|O'`, pickled Python objects) by name: npyz
/// only says "invalid type string".
fn check_not_object(header: &[u8]) -> Result<(), NpyErrorKind> {
    let text = String::from_utf8_lossy(header);
    let Some(key) = text.find("'descr'").or_else(|| text.find("\"descr\"")) else {
        return Ok(());
    };
    let rest = text[key + "'descr'".len()..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return Ok(());
    };
    let value = rest.trim_start().trim_start_matches(['\'', '"']);
    let descr: String = value
        .chars()
        .take_while(|c| !matches!(c, '\'' | '"'))
        .collect();
    if matches!(descr.as_str(), "|O" | "O" | "<O" | ">O" | "=O") {
        return Err(NpyErrorKind::UnsupportedDType(format!(
            "object ('{descr}': Python objects, saved with pickling)"
        )));
    }
    Ok(())
}

/// The uop element type of a header dtype, or the error saying why it is not one.
fn supported_dtype(dtype: &npyz::DType) -> Result<DType, NpyErrorKind> {
    let ty = match dtype {
        npyz::DType::Plain(ty) => ty,
        other => {
            return Err(NpyErrorKind::UnsupportedDType(format!(
                "structured ({})",
                other.descr()
            )));
        }
    };
    let ours = match (ty.type_char(), ty.size_field()) {
        (TypeChar::Float, 4) => Some(DType::F32),
        (TypeChar::Float, 8) => Some(DType::F64),
        (TypeChar::Int, 4) => Some(DType::I32),
        _ => None,
    };
    match (ours, ty.endianness()) {
        (Some(d), Endianness::Little) => Ok(d),
        (Some(_), Endianness::Big) => Err(NpyErrorKind::BigEndian {
            descr: ty.to_string(),
            little: format!("<{}{}", ty.type_char().to_str(), ty.size_field()),
        }),
        _ => Err(NpyErrorKind::UnsupportedDType(describe(ty))),
    }
}

fn numpy_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::I32 => "int32",
    }
}

/// numpy's name of a type string, e.g. `int64` for `<i8`; the raw type string is added
/// where the name alone does not identify the type.
fn describe(ty: &TypeStr) -> String {
    let bits = ty.size_field() * 8;
    match ty.type_char() {
        TypeChar::Float => format!("float{bits}"),
        TypeChar::Int => format!("int{bits}"),
        TypeChar::Uint => format!("uint{bits}"),
        TypeChar::Complex => format!("complex{bits}"),
        TypeChar::Bool => "bool".to_string(),
        TypeChar::DateTime => format!("datetime64 ('{ty}')"),
        TypeChar::TimeDelta => format!("timedelta64 ('{ty}')"),
        TypeChar::ByteStr => format!("bytes ('{ty}')"),
        TypeChar::UnicodeStr => format!("str ('{ty}')"),
        _ => format!("'{ty}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_names_of_rejected_types() {
        let name = |s: &str| describe(&s.parse().expect("valid type string"));
        assert_eq!(name("<i8"), "int64");
        assert_eq!(name("<f2"), "float16");
        assert_eq!(name("|u1"), "uint8");
        assert_eq!(name("|b1"), "bool");
        assert_eq!(name("<c16"), "complex128");
        assert_eq!(name("<U3"), "str ('<U3')");
    }

    #[test]
    fn overflowing_shapes_are_caught_before_npyz() {
        let header =
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 0, 4294967296), }";
        assert!(matches!(
            check_shape_fits(header),
            Err(NpyErrorKind::TooLarge(dims)) if dims == vec![1 << 32, 0, 1 << 32]
        ));
        let fine = b"{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
        assert!(check_shape_fits(fine).is_ok());
    }

    #[test]
    fn object_arrays_are_named() {
        let header = b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }";
        assert_eq!(
            check_not_object(header).unwrap_err().to_string(),
            "dtype object ('|O': Python objects, saved with pickling) is not supported (use \
             float32, float64 or int32)"
        );
        let fine = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        assert!(check_not_object(fine).is_ok());
    }

    #[test]
    fn temporary_files_are_hidden_siblings() {
        let temp = temporary_sibling(Path::new("out/y.npy")).expect("has a file name");
        assert_eq!(temp.parent(), Some(Path::new("out")));
        let name = temp.file_name().map(|n| n.to_string_lossy().into_owned());
        assert!(name.is_some_and(|n| n.starts_with(".y.npy.") && n.ends_with(".tmp")));
        assert!(temporary_sibling(Path::new("/")).is_none());
    }
}
