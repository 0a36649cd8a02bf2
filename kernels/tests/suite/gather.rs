//! Embedding gather / scatter-add vs references; repeated ids accumulate; bad ids panic.

use chi_kernels::gather::*;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn gather_and_scatter_match_reference(rows in 1usize..20, dim in 0usize..19, ids in prop::collection::vec(0usize..1000, 0..40)) {
        let ids: Vec<usize> = ids.into_iter().map(|i| i % rows).collect();
        let table: Vec<f32> = (0..rows * dim).map(|i| i as f32 * 0.5).collect();
        let mut out = vec![0f32; ids.len() * dim];
        gather_rows(&table, dim, &ids, &mut out);
        for (r, &id) in ids.iter().enumerate() {
            prop_assert_eq!(&out[r * dim..(r + 1) * dim], &table[id * dim..(id + 1) * dim]);
        }
        let g: Vec<f64> = (0..ids.len() * dim).map(|i| (i % 13) as f64 - 6.0).collect();
        let mut grad = vec![1.0f64; rows * dim];
        scatter_add_rows(&g, dim, &ids, &mut grad);
        let mut want = vec![1.0f64; rows * dim];
        for (r, &id) in ids.iter().enumerate() {
            for d in 0..dim { want[id * dim + d] += g[r * dim + d]; }
        }
        prop_assert_eq!(grad, want);
    }
}

#[test]
fn repeated_ids_accumulate() {
    let mut grad = vec![0f32; 3 * 4];
    let g = vec![1f32; 5 * 4];
    scatter_add_rows(&g, 4, &[2, 0, 2, 2, 1], &mut grad);
    assert_eq!(&grad[8..12], &[3.0; 4]);
    assert_eq!(&grad[0..4], &[1.0; 4]);
}

#[test]
#[should_panic(expected = "gather_rows: index 3 out of range for a table of 3 rows")]
fn gather_bad_id() {
    gather_rows(&[0f32; 6], 2, &[0, 3], &mut [0f32; 4]);
}

#[test]
#[should_panic(expected = "scatter_add_rows: index 5 out of range for a table of 3 rows")]
fn scatter_bad_id() {
    scatter_add_rows(&[0f32; 2], 2, &[5], &mut [0f32; 6]);
}

#[test]
#[should_panic(expected = "gather_rows: output has 3 elements, need 2 ids × 2")]
fn gather_bad_out() {
    gather_rows(&[0f32; 6], 2, &[0, 1], &mut [0f32; 3]);
}
