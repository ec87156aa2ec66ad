//! Tensors on the host as ONNX gives them: [`ElemType`] (the element types the
//! importer accepts) and [`HostTensor`] (a decoded `TensorProto`), with the
//! conversions to and from the graph layer's [`Tensor`] (int64 to i32 where every
//! value fits, bool to 0/1 of the float type).

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;

use crate::proto::TensorProto;
use crate::proto::tensor_proto::DataType;

/// An ONNX element type the importer represents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// `float`: f32.
    Float,
    /// `double`: f64.
    Double,
    /// `int32`: i32.
    Int32,
    /// `int64`: i32 in the graph, where every value fits.
    Int64,
    /// `bool`: 0 / 1 of the graph's float type.
    Bool,
    /// `int8`: i32 in the graph.
    Int8,
    /// `int16`: i32 in the graph.
    Int16,
    /// `uint8`: i32 in the graph.
    UInt8,
    /// `uint16`: i32 in the graph.
    UInt16,
    /// `uint32`: i32 in the graph, where every value fits.
    UInt32,
    /// `uint64`: i32 in the graph, where every value fits.
    UInt64,
}

impl ElemType {
    /// The element type of ONNX's `data_type` code, or the error naming the type.
    pub fn from_code(code: i32) -> Result<ElemType, String> {
        match DataType::try_from(code) {
            Ok(DataType::Float) => Ok(ElemType::Float),
            Ok(DataType::Double) => Ok(ElemType::Double),
            Ok(DataType::Int32) => Ok(ElemType::Int32),
            Ok(DataType::Int64) => Ok(ElemType::Int64),
            Ok(DataType::Bool) => Ok(ElemType::Bool),
            Ok(DataType::Int8) => Ok(ElemType::Int8),
            Ok(DataType::Int16) => Ok(ElemType::Int16),
            Ok(DataType::Uint8) => Ok(ElemType::UInt8),
            Ok(DataType::Uint16) => Ok(ElemType::UInt16),
            Ok(DataType::Uint32) => Ok(ElemType::UInt32),
            Ok(DataType::Uint64) => Ok(ElemType::UInt64),
            Ok(other) => Err(format!(
                "element type {} is not supported (uop has f32, f64, i32; other integers and bool are converted)",
                other.as_str_name()
            )),
            Err(_) => Err(format!("unknown element type code {code}")),
        }
    }

    /// ONNX's name of the type (`FLOAT`, `INT64`).
    pub fn name(self) -> &'static str {
        match self {
            ElemType::Float => "FLOAT",
            ElemType::Double => "DOUBLE",
            ElemType::Int32 => "INT32",
            ElemType::Int64 => "INT64",
            ElemType::Bool => "BOOL",
            ElemType::Int8 => "INT8",
            ElemType::Int16 => "INT16",
            ElemType::UInt8 => "UINT8",
            ElemType::UInt16 => "UINT16",
            ElemType::UInt32 => "UINT32",
            ElemType::UInt64 => "UINT64",
        }
    }

    /// True for `float` and `double`.
    pub fn is_float(self) -> bool {
        matches!(self, ElemType::Float | ElemType::Double)
    }

    /// True for the integer types.
    pub fn is_int(self) -> bool {
        self.bits().is_some()
    }

    /// An integer type's width and signedness.
    pub fn bits(self) -> Option<(u32, bool)> {
        match self {
            ElemType::Int8 => Some((8, true)),
            ElemType::Int16 => Some((16, true)),
            ElemType::Int32 => Some((32, true)),
            ElemType::Int64 => Some((64, true)),
            ElemType::UInt8 => Some((8, false)),
            ElemType::UInt16 => Some((16, false)),
            ElemType::UInt32 => Some((32, false)),
            ElemType::UInt64 => Some((64, false)),
            ElemType::Float | ElemType::Double | ElemType::Bool => None,
        }
    }

    /// `v` wrapped into this type's range as two's complement arithmetic wraps (the
    /// value itself for 64-bit types and non-integers).
    pub fn wrap(self, v: i64) -> i64 {
        match self {
            ElemType::Int8 => i64::from(v as i8),
            ElemType::Int16 => i64::from(v as i16),
            ElemType::Int32 => i64::from(v as i32),
            ElemType::UInt8 => i64::from(v as u8),
            ElemType::UInt16 => i64::from(v as u16),
            ElemType::UInt32 => i64::from(v as u32),
            _ => v,
        }
    }
}

/// A decoded ONNX tensor. Every element is held as `f64` (floats, and integers,
/// which the importer only accepts within i32 anyway) or as `i64` (integers as
/// written, so that an int64 value out of range is reported, not rounded).
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    /// The ONNX element type.
    pub elem: ElemType,
    /// The shape.
    pub shape: Vec<usize>,
    /// The elements, row-major.
    pub data: HostData,
}

/// The elements of a [`HostTensor`].
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    /// `float` / `double` elements.
    Float(Vec<f64>),
    /// `int32` / `int64` / `bool` (0 or 1) elements.
    Int(Vec<i64>),
}

impl HostTensor {
    /// The number of elements.
    pub fn len(&self) -> usize {
        match &self.data {
            HostData::Float(v) => v.len(),
            HostData::Int(v) => v.len(),
        }
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Decodes `t` (typed fields or little-endian `raw_data`); the error names the
    /// tensor and what is wrong.
    pub fn from_proto(t: &TensorProto) -> Result<HostTensor, String> {
        let name = t.name.as_deref().unwrap_or("");
        let what = |m: String| format!("tensor `{name}`: {m}");
        if !t.external_data.is_empty() || t.data_location == Some(1) {
            return Err(what("external data is not supported".into()));
        }
        let elem = ElemType::from_code(t.data_type.unwrap_or(0)).map_err(what)?;
        let shape = t
            .dims
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| what(format!("negative dimension {d}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let count = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| what("the element count overflows".into()))?;
        let data = match &t.raw_data {
            Some(raw) => from_raw(elem, raw, count).map_err(what)?,
            None => from_fields(elem, t),
        };
        let found = match &data {
            HostData::Float(v) => v.len(),
            HostData::Int(v) => v.len(),
        };
        if found != count {
            return Err(what(format!(
                "shape {shape:?} has {count} elements, the data {found}"
            )));
        }
        Ok(HostTensor { elem, shape, data })
    }

    /// This tensor as a graph tensor of type `dtype`: floats and bools in a float
    /// type; integers as i32 (each value must fit) or in a float type (each value
    /// must be exact there: |x| ≤ 2^24 in f32, 2^53 in f64), the error naming the
    /// first value that is not.
    pub fn to_graph_as(&self, dtype: DType) -> Result<Tensor, String> {
        let data = match (&self.data, self.elem, dtype) {
            (HostData::Int(v), e, DType::I32) if e.is_int() => ints_to_i32(v)?,
            (_, _, DType::I32) => {
                return Err(format!("{} data where i32 is expected", self.elem.name()));
            }
            (HostData::Float(v), _, _) => v.clone(),
            (HostData::Int(v), _, _) => {
                let exact: i64 = if dtype == DType::F32 {
                    1 << 24
                } else {
                    1 << 53
                };
                v.iter()
                    .map(|&x| {
                        if x.unsigned_abs() <= exact.unsigned_abs() {
                            Ok(x as f64)
                        } else {
                            Err(format!(
                                "{} value {x} is not exact in {dtype}, the type this model holds it in",
                                self.elem.name()
                            ))
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
        };
        Tensor::new(dtype, self.shape.clone(), data).map_err(|e| e.to_string())
    }

    /// A graph tensor read back as ONNX element type `elem` (integers and bools
    /// rounded from the float type's values, integers wrapped into their type's range).
    pub fn from_graph(t: &Tensor, elem: ElemType) -> HostTensor {
        let data = if elem.is_float() {
            HostData::Float(t.data.clone())
        } else {
            HostData::Int(
                t.data
                    .iter()
                    .map(|&x| elem.wrap(x.round() as i64))
                    .collect(),
            )
        };
        HostTensor {
            elem,
            shape: t.shape.clone(),
            data,
        }
    }
}

/// `v` as i32 values, or the error naming the first that does not fit.
pub fn ints_to_i32(v: &[i64]) -> Result<Vec<f64>, String> {
    v.iter()
        .map(|&x| {
            i32::try_from(x)
                .map(f64::from)
                .map_err(|_| format!("integer value {x} does not fit in i32"))
        })
        .collect()
}

fn from_raw(elem: ElemType, raw: &[u8], count: usize) -> Result<HostData, String> {
    let width = match elem {
        ElemType::Float | ElemType::Int32 | ElemType::UInt32 => 4,
        ElemType::Double | ElemType::Int64 | ElemType::UInt64 => 8,
        ElemType::Int16 | ElemType::UInt16 => 2,
        ElemType::Bool | ElemType::Int8 | ElemType::UInt8 => 1,
    };
    let expected = count
        .checked_mul(width)
        .ok_or_else(|| "the raw data size overflows".to_string())?;
    if raw.len() != expected {
        return Err(format!(
            "raw_data has {} bytes, {count} elements of {} need {expected}",
            raw.len(),
            elem.name()
        ));
    }
    let chunks = raw.chunks_exact(width);
    Ok(match elem {
        ElemType::Float => HostData::Float(
            chunks
                .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
        ),
        ElemType::Double => HostData::Float(
            chunks
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect(),
        ),
        ElemType::Int32 => HostData::Int(
            chunks
                .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
        ),
        ElemType::Int64 => HostData::Int(
            chunks
                .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect(),
        ),
        ElemType::Bool => HostData::Int(raw.iter().map(|&b| i64::from(b != 0)).collect()),
        ElemType::Int8 => HostData::Int(raw.iter().map(|&b| i64::from(b as i8)).collect()),
        ElemType::UInt8 => HostData::Int(raw.iter().map(|&b| i64::from(b)).collect()),
        ElemType::Int16 => HostData::Int(
            chunks
                .map(|c| i64::from(i16::from_le_bytes([c[0], c[1]])))
                .collect(),
        ),
        ElemType::UInt16 => HostData::Int(
            chunks
                .map(|c| i64::from(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
        ),
        ElemType::UInt32 => HostData::Int(
            chunks
                .map(|c| i64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
        ),
        // Beyond i64 saturates: such a value fits no i32 either, and is reported.
        ElemType::UInt64 => HostData::Int(
            chunks
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .map(|x| i64::try_from(x).unwrap_or(i64::MAX))
                .collect(),
        ),
    })
}

fn from_fields(elem: ElemType, t: &TensorProto) -> HostData {
    match elem {
        ElemType::Float => HostData::Float(t.float_data.iter().map(|&x| f64::from(x)).collect()),
        ElemType::Double => HostData::Float(t.double_data.clone()),
        // ONNX keeps every integer type of 32 bits or fewer in `int32_data`, except
        // uint32, which is in `uint64_data` with uint64.
        ElemType::Int32 | ElemType::Int8 | ElemType::Int16 | ElemType::UInt8 | ElemType::UInt16 => {
            HostData::Int(t.int32_data.iter().map(|&x| i64::from(x)).collect())
        }
        ElemType::UInt32 | ElemType::UInt64 => HostData::Int(
            t.uint64_data
                .iter()
                .map(|&x| i64::try_from(x).unwrap_or(i64::MAX))
                .collect(),
        ),
        ElemType::Bool => HostData::Int(t.int32_data.iter().map(|&x| i64::from(x != 0)).collect()),
        ElemType::Int64 => HostData::Int(t.int64_data.clone()),
    }
}
