//! Data movement: 2-D transpose (tiled) and permutation (general transpose).

/// Row-major strides of a shape.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// `out = x.permute(perm)`: output axis `d` is input axis `perm[d]`; `out` is contiguous.
pub fn permute<T: Copy>(x: &[T], shape: &[usize], perm: &[usize], out: &mut [T]) {
    let rank = shape.len();
    assert!(perm.len() == rank, "permute: permutation {perm:?} does not match rank of shape {shape:?}");
    let mut seen = vec![false; rank];
    for &p in perm {
        assert!(p < rank && !seen[p], "permute: {perm:?} is not a permutation of 0..{rank}");
        seen[p] = true;
    }
    let n: usize = shape.iter().product();
    assert!(x.len() == n && out.len() == n, "permute: shape {shape:?} needs {n} elements, input has {}, output {}", x.len(), out.len());
    if n == 0 {
        return;
    }
    // Output axes whose source is contiguous across them are merged (`coalesce`), so that input
    // axes staying at the end become one run copied at a time (a batch-major ↔ time-major
    // reorder of `[T, B, H]` copies rows of `H`).
    let in_strides = contiguous_strides(shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let src_strides: Vec<usize> = perm.iter().map(|&p| in_strides[p]).collect();
    let (sh, [st]) = crate::elementwise::coalesce(&out_shape, [&src_strides]);
    let r = sh.len();
    let (inner, s_in) = (sh[r - 1], st[r - 1]);
    let mut idx = vec![0usize; r - 1];
    if s_in == 1 {
        for o in out.chunks_exact_mut(inner) {
            let off: usize = idx.iter().zip(&st).map(|(i, s)| i * s).sum();
            o.copy_from_slice(&x[off..off + inner]);
            crate::elementwise::next_index(&mut idx, &sh[..r - 1]);
        }
        return;
    }
    // The last axis moves: per block of the leading output axes, the last two form a 2-D
    // transpose of a strided source, done in tiles (as [`transpose`]) so that neither side is
    // streamed with a stride of a whole row.
    let (rows, rs) = if r >= 2 { (sh[r - 2], st[r - 2]) } else { (1, 0) };
    let lead = r.saturating_sub(2);
    idx.truncate(lead);
    for block in out.chunks_exact_mut(rows * inner) {
        let base: usize = idx.iter().zip(&st).map(|(i, s)| i * s).sum();
        for r0 in (0..rows).step_by(TILE) {
            for c0 in (0..inner).step_by(TILE) {
                for i in r0..(r0 + TILE).min(rows) {
                    for j in c0..(c0 + TILE).min(inner) {
                        block[i * inner + j] = x[base + i * rs + j * s_in];
                    }
                }
            }
        }
        crate::elementwise::next_index(&mut idx, &sh[..lead]);
    }
}

/// Side of the square tiles of [`transpose`]: a 32 × 32 tile of f64 is 8 KiB read plus 8 KiB
/// written, well inside a 32 KiB L1, and each of its 32 destination rows is 4 cache lines long.
const TILE: usize = 32;

/// `dst = srcᵀ` for a row-major `rows × cols` matrix `src`; `dst` is row-major `cols × rows`.
///
/// Works on `TILE × TILE` blocks so that both the reads of `src` and the writes of `dst` touch a
/// small set of cache lines at a time (a naive loop streams one of the two with a stride of a whole
/// row, one cache line per element, once rows exceed the cache).
///
/// ```
/// use chi_kernels::layout::transpose;
/// let src = [1, 2, 3, 4, 5, 6]; // 2 × 3
/// let mut dst = [0; 6];
/// transpose(&src, 2, 3, &mut dst);
/// assert_eq!(dst, [1, 4, 2, 5, 3, 6]); // 3 × 2
/// ```
///
/// # Panics
/// If `src` or `dst` does not have exactly `rows · cols` elements (the message names the kernel
/// and the sizes).
pub fn transpose<T: Copy>(src: &[T], rows: usize, cols: usize, dst: &mut [T]) {
    let n = rows.checked_mul(cols).unwrap_or_else(|| panic!("transpose: {rows} x {cols} overflows usize"));
    assert!(
        src.len() == n && dst.len() == n,
        "transpose: a {rows} x {cols} matrix needs {n} elements, source has {}, destination {}",
        src.len(),
        dst.len()
    );
    for i0 in (0..rows).step_by(TILE) {
        let i1 = (i0 + TILE).min(rows);
        for j0 in (0..cols).step_by(TILE) {
            let j1 = (j0 + TILE).min(cols);
            for i in i0..i1 {
                let row = &src[i * cols + j0..i * cols + j1];
                for (j, &v) in (j0..j1).zip(row) {
                    dst[j * rows + i] = v;
                }
            }
        }
    }
}
