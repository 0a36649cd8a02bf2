//! Data movement: permutation (general transpose) and strided copies.

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
    let in_strides = contiguous_strides(shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let src_strides: Vec<usize> = perm.iter().map(|&p| in_strides[p]).collect();
    let mut idx = vec![0usize; rank];
    for o in out.iter_mut() {
        let mut off = 0;
        for d in 0..rank {
            off += idx[d] * src_strides[d];
        }
        *o = x[off];
        let mut d = rank;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}
