//! The run's memory: one arena laid out by the memory plan
//! ([`uop_graph::memory::plan_memory`]) for the run's dims, and the one function that
//! gives a written value its elements ([`Memory::place`]).
//!
//! Every value the plan places gets a view into the arena at the plan's offset; any
//! other value the executor writes (a graph output: the caller owns it) gets an owned
//! buffer, the slot's buffer of an earlier run when nothing else holds it. Inside a
//! `while` whose state alternates between two slots, odd iterations swap the two
//! ([`Memory::swap`]): what the plan places in one is written to the other.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_cranelift::RawBuffer;
use uop_graph::memory::{Carried, MemoryPlan, Slot};
use uop_graph::{NodeId, Ref};

use crate::value::{Buf, Data, Shape, Value};

/// A memory plan as the executor uses it: the slot of every value by its dense slot
/// number.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The plan.
    pub plan: Arc<MemoryPlan>,
    /// Per slot number: where the plan places the value, if it does.
    pub slots: Vec<Option<Slot>>,
    /// Per `while`: how each state value is carried.
    pub carried: BTreeMap<NodeId, Vec<Carried>>,
    /// Per stream plan (by number): its body runs in order for these sizes (it is
    /// small for them, [`crate::streams::bodies_in_order`]).
    pub in_order: Vec<bool>,
}

impl Layout {
    /// The layout of `plan` for values numbered as `refs` lists them, with the
    /// bodies marked `in_order` run in order.
    pub(crate) fn new(plan: MemoryPlan, refs: &[Ref], in_order: Vec<bool>) -> Layout {
        Layout {
            slots: refs.iter().map(|r| plan.slots.get(r).copied()).collect(),
            carried: plan.carried.clone(),
            plan: Arc::new(plan),
            in_order,
        }
    }
}

/// Bytes for one run's arena: 8-byte words, so every 64-byte-aligned offset of the
/// plan is aligned for every element type.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    words: Vec<u64>,
}

impl Arena {
    /// An arena of at least `bytes` bytes.
    pub(crate) fn new(bytes: usize) -> Arena {
        Arena {
            words: vec![0; bytes.div_ceil(8)],
        }
    }

    /// Its size in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// One run's view of its arena and layout. Each stream of a run has a clone (with
/// its own swaps); they all write the one arena.
#[derive(Clone)]
pub(crate) struct Memory<'a> {
    base: *mut u8,
    bytes: usize,
    layout: &'a Layout,
    swaps: Vec<(usize, usize)>,
    allocations: &'a AtomicU64,
}

// SAFETY: the arena is written through `base` by the streams of one run at once.
// Every write goes to a value's planned bytes, and a multi-stream run's plan is made
// for its schedule (`uop_graph::memory::plan_memory_scheduled`): two nodes that may
// run at the same time never touch overlapping bytes where one writes, and a node
// reading a value runs after the event its writer's stream set (release / acquire).
unsafe impl Send for Memory<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for Memory<'_> {}

impl<'a> Memory<'a> {
    /// The memory of a run on `arena` (at least the layout's arena bytes), counting
    /// every owned buffer it allocates in `allocations`; `swaps` is an empty list
    /// to keep the swaps in (an earlier run's, [`Memory::into_swaps`]).
    pub(crate) fn new(
        arena: &'a mut Arena,
        layout: &'a Layout,
        allocations: &'a AtomicU64,
        mut swaps: Vec<(usize, usize)>,
    ) -> Memory<'a> {
        swaps.clear();
        Memory {
            base: arena.words.as_mut_ptr().cast(),
            bytes: arena.bytes(),
            layout,
            swaps,
            allocations,
        }
    }

    /// The list of swaps, for the next run.
    pub(crate) fn into_swaps(self) -> Vec<(usize, usize)> {
        self.swaps
    }

    /// Where the plan places the value of slot number `slot`, if it does.
    pub(crate) fn planned(&self, slot: usize) -> Option<Slot> {
        self.layout.slots.get(slot).copied().flatten()
    }

    /// Whether the body of stream plan `id` runs in order in this run.
    pub(crate) fn in_order(&self, id: usize) -> bool {
        self.layout.in_order.get(id).copied().unwrap_or(false)
    }

    /// How `node` (a `while`) carries its state, if the plan says.
    pub(crate) fn carried(&self, node: NodeId) -> Option<&'a [Carried]> {
        self.layout.carried.get(&node).map(Vec::as_slice)
    }

    /// From now on what the plan places at `a` is written at `b` and the other way
    /// round (an odd iteration of an alternating `while`), until [`Memory::unswap`].
    pub(crate) fn swap(&mut self, a: usize, b: usize) {
        self.swaps.push((a, b));
    }

    /// Ends the last `n` swaps.
    pub(crate) fn unswap(&mut self, n: usize) {
        let keep = self.swaps.len().saturating_sub(n);
        self.swaps.truncate(keep);
    }

    /// A planned offset as the current iteration writes it.
    pub(crate) fn map(&self, offset: usize) -> usize {
        self.swaps.iter().fold(offset, |o, &(a, b)| {
            if o == a {
                b
            } else if o == b {
                a
            } else {
                o
            }
        })
    }

    /// A view of `shape` elements of `dtype` at arena byte `offset` (mapped by the
    /// current swaps); an error when it does not fit in `room` bytes or the arena.
    pub(crate) fn at(
        &self,
        offset: usize,
        room: usize,
        dtype: DType,
        shape: &[usize],
    ) -> Result<Value, String> {
        let need = shape
            .iter()
            .try_fold(1_usize, |n, &d| n.checked_mul(d))
            .and_then(|len| len.checked_mul(dtype.size()))
            .ok_or_else(|| format!("a value of shape {shape:?} does not fit in memory"))?;
        let len = need / dtype.size();
        let offset = self.map(offset);
        if need > room || offset.checked_add(need).is_none_or(|end| end > self.bytes) {
            return Err(format!(
                "a {}{shape:?} value ({need} bytes) does not fit its planned slot ({room} bytes at {offset} of a {}-byte arena)",
                dtype.name(),
                self.bytes
            ));
        }
        Ok(Value {
            shape: Shape::new(shape),
            data: Data::Arena { dtype, offset, len },
        })
    }

    /// Storage for the value of slot number `slot`, of `dtype` and `shape`, ready to be
    /// written: its view in the arena when the plan places it, else an owned buffer —
    /// `previous` (what the slot held) when nothing else shares it and it has the type
    /// and length, a new one otherwise. Every value the executor writes comes from here.
    pub(crate) fn place(
        &self,
        slot: usize,
        previous: Option<Value>,
        dtype: DType,
        shape: &[usize],
    ) -> Result<Value, String> {
        if let Some(s) = self.planned(slot) {
            return self.at(s.offset, s.bytes, dtype, shape);
        }
        Ok(self.owned(previous, dtype, shape))
    }

    /// An owned buffer of `dtype` and `shape`: `previous` when it is one that nothing
    /// else shares, of the type and length; a new one otherwise.
    pub(crate) fn owned(&self, previous: Option<Value>, dtype: DType, shape: &[usize]) -> Value {
        let n: usize = shape.iter().product();
        if let Some(Value {
            data: Data::Owned(mut b),
            ..
        }) = previous
            && b.dtype() == dtype
            && b.len() == n
            && Arc::get_mut(&mut b).is_some()
        {
            return Value {
                shape: Shape::new(shape),
                data: Data::Owned(b),
            };
        }
        self.allocations.fetch_add(1, Ordering::Relaxed);
        Value {
            shape: Shape::new(shape),
            data: Data::Owned(Arc::new(Buf::zeros(dtype, n))),
        }
    }

    /// `v`'s elements for reading.
    pub(crate) fn read(&self, v: &Value) -> RawBuffer {
        match &v.data {
            Data::Owned(b) => RawBuffer {
                dtype: b.dtype(),
                ptr: b.ptr().cast_mut(),
                len: b.len(),
            },
            Data::Arena { dtype, offset, len } => RawBuffer {
                dtype: *dtype,
                // In bounds: `at` checked the view against the arena.
                ptr: self.base.wrapping_add(*offset),
                len: *len,
            },
        }
    }

    /// `v`'s elements for writing: an arena view, or an owned buffer nothing else
    /// holds.
    pub(crate) fn write(&self, v: &mut Value) -> Result<RawBuffer, String> {
        match &mut v.data {
            Data::Owned(b) => {
                let b = Arc::get_mut(b).ok_or("a shared buffer cannot be written")?;
                Ok(RawBuffer {
                    dtype: b.dtype(),
                    ptr: b.ptr_mut(),
                    len: b.len(),
                })
            }
            Data::Arena { .. } => Ok(self.read(v)),
        }
    }

    /// Element `i` of `v` as f64 (conditions, selectors, indexes).
    pub(crate) fn get(&self, v: &Value, i: usize) -> Option<f64> {
        let r = self.read(v);
        if i >= r.len {
            return None;
        }
        // SAFETY: `r` is valid for `r.len` elements of its type (an owned buffer, or an
        // arena view checked against the arena) and nothing writes it now.
        unsafe {
            Some(match r.dtype {
                DType::F32 => f64::from(*r.ptr.cast::<f32>().add(i)),
                DType::F64 => *r.ptr.cast::<f64>().add(i),
                DType::I32 => f64::from(*r.ptr.cast::<i32>().add(i)),
            })
        }
    }

    /// Overwrites `t` with `v`'s type, shape and elements, in the buffers it has when
    /// they are big enough (a later run's output allocates nothing).
    pub(crate) fn tensor_into(&self, v: &Value, t: &mut Tensor) {
        let r = self.read(v);
        let n = r.len.min(v.len());
        t.dtype = v.dtype();
        t.shape.clear();
        t.shape.extend_from_slice(&v.shape);
        t.data.clear();
        // SAFETY: `r` is valid for `r.len` elements of its type (an owned buffer, or an
        // arena view checked against the arena) and nothing writes it now.
        unsafe {
            match r.dtype {
                DType::F32 => t.data.extend(
                    std::slice::from_raw_parts(r.ptr.cast::<f32>(), n)
                        .iter()
                        .map(|&x| f64::from(x)),
                ),
                DType::F64 => t
                    .data
                    .extend_from_slice(std::slice::from_raw_parts(r.ptr.cast::<f64>(), n)),
                DType::I32 => t.data.extend(
                    std::slice::from_raw_parts(r.ptr.cast::<i32>(), n)
                        .iter()
                        .map(|&x| f64::from(x)),
                ),
            }
        }
    }

    /// `v` as an owned tensor.
    pub(crate) fn tensor(&self, v: &Value) -> Tensor {
        // One checked view, then one conversion loop (not a checked read per element).
        let r = self.read(v);
        let n = r.len.min(v.len());
        // SAFETY: `r` is valid for `r.len` elements of its type (an owned buffer, or an
        // arena view checked against the arena) and nothing writes it now.
        let data: Vec<f64> = unsafe {
            match r.dtype {
                DType::F32 => std::slice::from_raw_parts(r.ptr.cast::<f32>(), n)
                    .iter()
                    .map(|&x| f64::from(x))
                    .collect(),
                DType::F64 => std::slice::from_raw_parts(r.ptr.cast::<f64>(), n).to_vec(),
                DType::I32 => std::slice::from_raw_parts(r.ptr.cast::<i32>(), n)
                    .iter()
                    .map(|&x| f64::from(x))
                    .collect(),
            }
        };
        Tensor {
            dtype: v.dtype(),
            shape: v.shape.to_vec(),
            data,
        }
    }

    /// Writes `data` (rounded to `v`'s type) into `v`.
    pub(crate) fn fill(&self, v: &mut Value, data: &[f64]) -> Result<(), String> {
        if let Data::Owned(b) = &mut v.data {
            let b = Arc::get_mut(b).ok_or("a shared buffer cannot be written")?;
            b.fill_from(data);
            return Ok(());
        }
        let w = self.write(v)?;
        let n = w.len.min(data.len());
        // SAFETY: an arena view valid for `w.len` elements; nothing else reads it now.
        unsafe {
            match w.dtype {
                DType::F32 => {
                    let d = std::slice::from_raw_parts_mut(w.ptr.cast::<f32>(), n);
                    d.iter_mut().zip(data).for_each(|(d, &s)| *d = s as f32);
                }
                DType::F64 => std::slice::from_raw_parts_mut(w.ptr.cast::<f64>(), n)
                    .copy_from_slice(&data[..n]),
                DType::I32 => {
                    let d = std::slice::from_raw_parts_mut(w.ptr.cast::<i32>(), n);
                    d.iter_mut().zip(data).for_each(|(d, &s)| *d = s as i32);
                }
            }
        }
        Ok(())
    }

    /// Copies `src`'s elements into `dst` from element `at`. Same type, in bounds, and
    /// the two must not overlap (a copy onto itself does nothing).
    pub(crate) fn copy(&self, dst: &mut Value, at: usize, src: &Value) -> Result<(), String> {
        let s = self.read(src);
        let d = self.write(dst)?;
        if s.dtype != d.dtype {
            return Err(format!(
                "a {} value cannot be copied into a {} one",
                s.dtype.name(),
                d.dtype.name()
            ));
        }
        if at.checked_add(s.len).is_none_or(|end| end > d.len) {
            return Err(format!(
                "{} elements do not fit at element {at} of {}",
                s.len, d.len
            ));
        }
        let size = s.dtype.size();
        let to = d.ptr.wrapping_add(at * size);
        let bytes = s.len * size;
        if std::ptr::eq(to, s.ptr) {
            return Ok(());
        }
        let (a, b) = (s.ptr as usize, to as usize);
        if a < b + bytes && b < a + bytes {
            return Err("the memory plan overlaps a value with its copy".into());
        }
        // SAFETY: both ranges are valid for `bytes` bytes (checked views) and do not
        // overlap.
        unsafe { std::ptr::copy_nonoverlapping(s.ptr.cast_const(), to, bytes) };
        Ok(())
    }
}
