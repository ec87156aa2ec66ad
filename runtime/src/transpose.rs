//! Blocks copied across (transposes) in square tiles transposed in registers.
//!
//! The tiles read 128-bit pieces of the source lines, placed so that the same
//! 4 × 4 (f32) or 2 × 2 (f64) transpose inside every 128-bit lane (`unpcklps`,
//! `shufps`; `unpcklpd`) leaves whole rows of the destination in the vectors: the
//! pieces come in as loads, and each element takes two shuffles whatever the
//! vector width (a full-width transpose takes three for 256 bits, four for 512).

/// `transpose_block_f32` and `transpose_block_f64`: the same code for elements
/// of `$size` bytes and their tiles.
macro_rules! transpose_block {
    ($name:ident, $t:ty, $size:expr, $narrow:ident, $wide:ident) => {
        /// Copies a block across, `dst[i * dst_stride + j] = src[j * src_stride + i]`
        /// for `i < rows`, `j < cols` (a transpose): in square tiles of as many
        /// elements as one `vec`-byte vector holds (the loops' `VEC`: AVX2 and
        /// AVX-512 copies), transposed in registers. The tiles start where the
        /// source's pieces (along `i`) and the destination's rows (along `j`) start
        /// a `vec`-byte boundary, so that no vector straddles two cache lines
        /// (1.5–2× on a 1024² transpose whose buffers start 16 bytes past a line,
        /// as large `Vec`s do); the first and last tile of a range overlap their
        /// neighbours instead of leaving ragged edges (they copy some elements
        /// twice, the same values). Blocks narrower than a tile, and the baseline
        /// copy, go element by element. Inlined, so that `vec` is a constant and
        /// only one path is compiled.
        ///
        /// # Safety
        ///
        /// Every element named is inside its buffer, the blocks do not overlap,
        /// and the CPU has `vec`-byte vectors.
        #[inline(always)]
        pub unsafe fn $name(
            src: *const $t,
            src_stride: usize,
            dst: *mut $t,
            dst_stride: usize,
            rows: usize,
            cols: usize,
            vec: usize,
        ) {
            let lanes = if cfg!(target_arch = "x86_64") && vec >= 32 {
                vec / $size
            } else {
                1
            };
            #[cfg(target_arch = "x86_64")]
            if lanes > 1 && rows >= lanes && cols >= lanes {
                // Elements from an address to the next vector boundary.
                let phase = |at: usize| (vec - at % vec) % vec / $size;
                // Tile starts covering 0..n: the aligned ones, plus 0 and
                // n - lanes where they leave an edge.
                let starts = |n: usize, first: usize| {
                    let full = (n - first) / lanes;
                    let end = first + full * lanes;
                    (first > 0)
                        .then_some(0)
                        .into_iter()
                        .chain((0..full).map(move |k| first + k * lanes))
                        .chain((end < n).then_some(n - lanes))
                };
                for i in starts(rows, phase(src as usize)) {
                    for j in starts(cols, phase(dst as usize)) {
                        // SAFETY: the tile is inside the block, and this copy of
                        // the loops was compiled for (and runs on) `vec`-byte
                        // vectors.
                        unsafe {
                            let (s, d) = (src.add(j * src_stride + i), dst.add(i * dst_stride + j));
                            if vec >= 64 {
                                $wide(s, src_stride, d, dst_stride)
                            } else {
                                $narrow(s, src_stride, d, dst_stride)
                            }
                        }
                    }
                }
                return;
            }
            for i in 0..rows {
                for j in 0..cols {
                    // SAFETY: inside both blocks, as the caller promises.
                    unsafe { *dst.add(i * dst_stride + j) = *src.add(j * src_stride + i) };
                }
            }
        }
    };
}

transpose_block!(
    transpose_block_f32,
    f32,
    4,
    transpose_tile_f32_x8,
    transpose_tile_f32_x16
);
transpose_block!(
    transpose_block_f64,
    f64,
    8,
    transpose_tile_f64_x4,
    transpose_tile_f64_x8
);

/// An 8 × 8 tile of [`transpose_block_f32`] (AVX): lines `k` and `k + 4` of the
/// source side by side, a 4 × 4 transpose in each half.
///
/// # Safety
///
/// As [`transpose_block_f32`], for 8 rows and columns; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn transpose_tile_f32_x8(
    src: *const f32,
    src_stride: usize,
    dst: *mut f32,
    dst_stride: usize,
) {
    use core::arch::x86_64::*;
    for h in 0..2 {
        let mut v = [_mm256_setzero_ps(); 4];
        for (k, v) in v.iter_mut().enumerate() {
            // SAFETY: inside the tile.
            let (low, high) = unsafe {
                (
                    _mm_loadu_ps(src.add(k * src_stride + 4 * h)),
                    _mm_loadu_ps(src.add((k + 4) * src_stride + 4 * h)),
                )
            };
            *v = _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(low), high);
        }
        let t0 = _mm256_unpacklo_ps(v[0], v[1]);
        let t1 = _mm256_unpackhi_ps(v[0], v[1]);
        let t2 = _mm256_unpacklo_ps(v[2], v[3]);
        let t3 = _mm256_unpackhi_ps(v[2], v[3]);
        let rows = [
            _mm256_shuffle_ps::<0x44>(t0, t2),
            _mm256_shuffle_ps::<0xEE>(t0, t2),
            _mm256_shuffle_ps::<0x44>(t1, t3),
            _mm256_shuffle_ps::<0xEE>(t1, t3),
        ];
        for (m, row) in rows.into_iter().enumerate() {
            // SAFETY: inside the tile.
            unsafe { _mm256_storeu_ps(dst.add((4 * h + m) * dst_stride), row) };
        }
    }
}

/// A 16 × 16 tile of [`transpose_block_f32`] (AVX-512): lines `k`, `k + 4`,
/// `k + 8` and `k + 12` of the source side by side, a 4 × 4 transpose in each
/// quarter.
///
/// # Safety
///
/// As [`transpose_block_f32`], for 16 rows and columns; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn transpose_tile_f32_x16(
    src: *const f32,
    src_stride: usize,
    dst: *mut f32,
    dst_stride: usize,
) {
    use core::arch::x86_64::*;
    for q in 0..4 {
        let mut v = [_mm512_setzero_ps(); 4];
        for (k, v) in v.iter_mut().enumerate() {
            let [p0, p1, p2, p3] = [0, 4, 8, 12]
                // SAFETY: inside the tile.
                .map(|p| unsafe { _mm_loadu_ps(src.add((k + p) * src_stride + 4 * q)) });
            let x = _mm512_castps128_ps512(p0);
            let x = _mm512_insertf32x4::<1>(x, p1);
            let x = _mm512_insertf32x4::<2>(x, p2);
            *v = _mm512_insertf32x4::<3>(x, p3);
        }
        let t0 = _mm512_unpacklo_ps(v[0], v[1]);
        let t1 = _mm512_unpackhi_ps(v[0], v[1]);
        let t2 = _mm512_unpacklo_ps(v[2], v[3]);
        let t3 = _mm512_unpackhi_ps(v[2], v[3]);
        let rows = [
            _mm512_shuffle_ps::<0x44>(t0, t2),
            _mm512_shuffle_ps::<0xEE>(t0, t2),
            _mm512_shuffle_ps::<0x44>(t1, t3),
            _mm512_shuffle_ps::<0xEE>(t1, t3),
        ];
        for (m, row) in rows.into_iter().enumerate() {
            // SAFETY: inside the tile.
            unsafe { _mm512_storeu_ps(dst.add((4 * q + m) * dst_stride), row) };
        }
    }
}

/// A 4 × 4 tile of [`transpose_block_f64`] (AVX): lines `k` and `k + 2` of the
/// source side by side, a 2 × 2 transpose in each half.
///
/// # Safety
///
/// As [`transpose_block_f64`], for 4 rows and columns; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn transpose_tile_f64_x4(
    src: *const f64,
    src_stride: usize,
    dst: *mut f64,
    dst_stride: usize,
) {
    use core::arch::x86_64::*;
    for h in 0..2 {
        let mut v = [_mm256_setzero_pd(); 2];
        for (k, v) in v.iter_mut().enumerate() {
            // SAFETY: inside the tile.
            let (low, high) = unsafe {
                (
                    _mm_loadu_pd(src.add(k * src_stride + 2 * h)),
                    _mm_loadu_pd(src.add((k + 2) * src_stride + 2 * h)),
                )
            };
            *v = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(low), high);
        }
        let rows = [
            _mm256_unpacklo_pd(v[0], v[1]),
            _mm256_unpackhi_pd(v[0], v[1]),
        ];
        for (m, row) in rows.into_iter().enumerate() {
            // SAFETY: inside the tile.
            unsafe { _mm256_storeu_pd(dst.add((2 * h + m) * dst_stride), row) };
        }
    }
}

/// An 8 × 8 tile of [`transpose_block_f64`] (AVX-512): lines `k`, `k + 2`, `k + 4`
/// and `k + 6` of the source side by side, a 2 × 2 transpose in each quarter (the
/// pieces are moved as f32 bits: AVX-512F inserts 128-bit pieces of f32 only).
///
/// # Safety
///
/// As [`transpose_block_f64`], for 8 rows and columns; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn transpose_tile_f64_x8(
    src: *const f64,
    src_stride: usize,
    dst: *mut f64,
    dst_stride: usize,
) {
    use core::arch::x86_64::*;
    for q in 0..4 {
        let mut v = [_mm512_setzero_pd(); 2];
        for (k, v) in v.iter_mut().enumerate() {
            let [p0, p1, p2, p3] = [0, 2, 4, 6].map(|p| {
                // SAFETY: inside the tile.
                unsafe { _mm_loadu_ps(src.add((k + p) * src_stride + 2 * q).cast()) }
            });
            let x = _mm512_castps128_ps512(p0);
            let x = _mm512_insertf32x4::<1>(x, p1);
            let x = _mm512_insertf32x4::<2>(x, p2);
            *v = _mm512_castps_pd(_mm512_insertf32x4::<3>(x, p3));
        }
        let rows = [
            _mm512_unpacklo_pd(v[0], v[1]),
            _mm512_unpackhi_pd(v[0], v[1]),
        ];
        for (m, row) in rows.into_iter().enumerate() {
            // SAFETY: inside the tile.
            unsafe { _mm512_storeu_pd(dst.add((2 * q + m) * dst_stride), row) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every vector width on every block shape and misalignment the CPU allows.
    fn check<T: Copy + PartialEq + core::fmt::Debug + From<u16>>(
        block: unsafe fn(*const T, usize, *mut T, usize, usize, usize, usize),
    ) {
        #[cfg(target_arch = "x86_64")]
        let widths: Vec<usize> = [16, 32, 64]
            .into_iter()
            .filter(|&w| match w {
                32 => std::arch::is_x86_feature_detected!("avx2"),
                64 => std::arch::is_x86_feature_detected!("avx512f"),
                _ => true,
            })
            .collect();
        #[cfg(not(target_arch = "x86_64"))]
        let widths = vec![16];
        for vec in widths {
            for (rows, cols) in [(1, 1), (3, 5), (8, 8), (16, 16), (17, 33), (40, 23)] {
                for skew in [0, 1, 3] {
                    let (src_stride, dst_stride) = (rows + 2, cols + 1);
                    let src: Vec<T> = (0..cols * src_stride + skew)
                        .map(|i| T::from(i as u16))
                        .collect();
                    let mut dst = vec![T::from(0); rows * dst_stride + skew];
                    // SAFETY: the blocks are inside the buffers; `vec` is what the CPU has.
                    unsafe {
                        block(
                            src.as_ptr().add(skew),
                            src_stride,
                            dst.as_mut_ptr().add(skew),
                            dst_stride,
                            rows,
                            cols,
                            vec,
                        )
                    };
                    for i in 0..rows {
                        for j in 0..cols {
                            assert_eq!(
                                dst[skew + i * dst_stride + j],
                                src[skew + j * src_stride + i],
                                "{vec} {rows}x{cols} skew {skew} at {i},{j}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn blocks_are_transposed_at_every_width_and_alignment() {
        check::<f32>(transpose_block_f32);
        check::<f64>(transpose_block_f64);
    }
}
