//! `layout::permute` (general transpose) against a naive index computation: random shapes of
//! rank 1 to 5 (including size-1 and size-0 axes), random permutations, both dtypes (and a
//! non-float `Copy` type), plus `contiguous_strides` and the argument checks.

use chi_kernels::layout::{contiguous_strides, permute};
use proptest::prelude::*;

/// Naive reference: for every output position, decompose its flat index into the output
/// multi-index (last axis fastest), map it to the input multi-index (`in[perm[d]] = out[d]`),
/// and flatten that with row-major input strides computed here (not by the crate).
fn permute_ref<T: Copy>(x: &[T], shape: &[usize], perm: &[usize]) -> Vec<T> {
    let rank = shape.len();
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    for flat in 0..n {
        let mut rem = flat;
        let mut out_idx = vec![0; rank];
        for d in (0..rank).rev() {
            out_idx[d] = rem % out_shape[d];
            rem /= out_shape[d];
        }
        let mut in_idx = vec![0; rank];
        for d in 0..rank {
            in_idx[perm[d]] = out_idx[d];
        }
        let mut off = 0;
        for d in 0..rank {
            off = off * shape[d] + in_idx[d];
        }
        out.push(x[off]);
    }
    out
}

/// A shape of rank 1..=5 and a random permutation of its axes.
fn shape_and_perm() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    prop::collection::vec(prop_oneof![8 => 1usize..6, 1 => Just(1usize), 1 => 6usize..12], 1..=5).prop_flat_map(|shape| {
        let rank = shape.len();
        (Just(shape), Just((0..rank).collect::<Vec<usize>>()).prop_shuffle())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn permute_matches_naive_index_computation((shape, perm) in shape_and_perm(), seed in any::<u64>()) {
        let n: usize = shape.iter().product();
        // Distinct values (the flat index plus a random offset), so any misplaced element shows.
        let x: Vec<f64> = (0..n).map(|i| i as f64 + (seed % 1000) as f64 * 0.5).collect();
        let want = permute_ref(&x, &shape, &perm);
        let mut out = vec![f64::NAN; n];
        permute(&x, &shape, &perm, &mut out);
        prop_assert_eq!(&out, &want, "shape {:?} perm {:?}", shape, perm);
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let mut out32 = vec![f32::NAN; n];
        permute(&x32, &shape, &perm, &mut out32);
        prop_assert!(out32.iter().zip(&want).all(|(&g, &w)| g == w as f32), "f32: shape {:?} perm {:?}", shape, perm);
        // Permuting back with the inverse permutation restores the input.
        let mut inv = vec![0; perm.len()];
        for (d, &p) in perm.iter().enumerate() {
            inv[p] = d;
        }
        let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let mut back = vec![f64::NAN; n];
        permute(&out, &out_shape, &inv, &mut back);
        prop_assert_eq!(&back, &x);
    }
}

/// Shapes larger than the random ones: several 32 × 32 tiles with partial edges where the last
/// axis moves, and long contiguous runs where trailing axes stay (a `[T, B, H]` ↔ `[B, T, H]`
/// reorder).
#[test]
fn permute_across_tiles_and_runs() {
    for (shape, perm) in [
        (vec![3usize, 70, 45], vec![0usize, 2, 1]),
        (vec![3, 70, 45], vec![2, 0, 1]),
        (vec![33, 65], vec![1, 0]),
        (vec![35, 64, 33], vec![1, 0, 2]),
        (vec![5, 7, 9, 11], vec![2, 0, 1, 3]),
        (vec![5, 7, 9, 11], vec![3, 1, 2, 0]),
        (vec![4, 40, 1], vec![1, 0, 2]),
    ] {
        let n: usize = shape.iter().product();
        let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let mut out = vec![f64::NAN; n];
        permute(&x, &shape, &perm, &mut out);
        assert_eq!(out, permute_ref(&x, &shape, &perm), "shape {shape:?} perm {perm:?}");
    }
}

#[test]
fn permute_small_cases_by_hand() {
    // 2×3 transpose: [[0,1,2],[3,4,5]] → [[0,3],[1,4],[2,5]].
    let x = [0u32, 1, 2, 3, 4, 5];
    let mut out = [9u32; 6];
    permute(&x, &[2, 3], &[1, 0], &mut out);
    assert_eq!(out, [0, 3, 1, 4, 2, 5]);
    // Identity permutation copies.
    permute(&x, &[2, 3], &[0, 1], &mut out);
    assert_eq!(out, x);
    // Rank 3, axes (2, 0, 1) of a 2×2×3 array: out[c][a][b] = x[a][b][c].
    let x: Vec<u32> = (0..12).collect();
    let mut out = vec![0u32; 12];
    permute(&x, &[2, 2, 3], &[2, 0, 1], &mut out);
    assert_eq!(out, permute_ref(&x, &[2, 2, 3], &[2, 0, 1]));
    assert_eq!(out, [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]);
    // An empty axis: nothing to move, no panic.
    let mut none: [f32; 0] = [];
    permute::<f32>(&[], &[3, 0, 2], &[2, 1, 0], &mut none);
    // Rank 0 (a scalar): one element, the empty permutation.
    let mut one = [0.0f64];
    permute(&[7.5f64], &[], &[], &mut one);
    assert_eq!(one, [7.5]);
}

#[test]
fn contiguous_strides_are_row_major() {
    assert_eq!(contiguous_strides(&[2, 3, 4]), [12, 4, 1]);
    assert_eq!(contiguous_strides(&[5]), [1]);
    assert_eq!(contiguous_strides(&[3, 0, 2]), [0, 2, 1]);
    assert!(contiguous_strides(&[]).is_empty());
}

#[test]
#[should_panic(expected = "permute: [0, 0] is not a permutation of 0..2")]
fn permute_rejects_repeated_axis() {
    permute(&[0f32; 6], &[2, 3], &[0, 0], &mut [0f32; 6]);
}

#[test]
#[should_panic(expected = "permute: permutation [1, 0] does not match rank of shape [2, 3, 1]")]
fn permute_rejects_wrong_rank() {
    permute(&[0f32; 6], &[2, 3, 1], &[1, 0], &mut [0f32; 6]);
}

#[test]
#[should_panic(expected = "permute: shape [2, 3] needs 6 elements, input has 6, output 5")]
fn permute_rejects_short_output() {
    permute(&[0f64; 6], &[2, 3], &[1, 0], &mut [0f64; 5]);
}

/// `transpose` over shapes with 0, 1, primes and non-multiples of its 32 × 32 tile on either side,
/// against the definition `dst[j][i] = src[i][j]`, for f32, f64 and a non-float type; transposing
/// twice gives the input back.
#[test]
fn transpose_shapes() {
    use chi_kernels::layout::transpose;
    let sizes = [0usize, 1, 2, 3, 7, 31, 32, 33, 37, 64, 65, 97, 131];
    for &r in &sizes {
        for &c in &sizes {
            let src: Vec<u64> = (0..(r * c) as u64).map(|v| v * 2654435761 % 1000003).collect();
            let mut dst = vec![u64::MAX; r * c];
            transpose(&src, r, c, &mut dst);
            for i in 0..r {
                for j in 0..c {
                    assert_eq!(dst[j * r + i], src[i * c + j], "{r}x{c} at ({i}, {j})");
                }
            }
            let mut back = vec![0u64; r * c];
            transpose(&dst, c, r, &mut back);
            assert_eq!(back, src, "{r}x{c}: transposing twice");
            let f: Vec<f32> = src.iter().map(|&v| v as f32).collect();
            let mut ft = vec![f32::NAN; r * c];
            transpose(&f, r, c, &mut ft);
            assert!(dst.iter().zip(&ft).all(|(&a, &b)| a as f32 == b), "{r}x{c} f32");
            let d: Vec<f64> = src.iter().map(|&v| v as f64 + 0.5).collect();
            let mut dt = vec![f64::NAN; r * c];
            transpose(&d, r, c, &mut dt);
            assert!(dst.iter().zip(&dt).all(|(&a, &b)| a as f64 + 0.5 == b), "{r}x{c} f64");
        }
    }
}

#[test]
#[should_panic(expected = "transpose: a 3 x 4 matrix needs 12 elements, source has 12, destination 11")]
fn transpose_short_destination() {
    let mut dst = [0f32; 11];
    chi_kernels::layout::transpose(&[0f32; 12], 3, 4, &mut dst);
}
