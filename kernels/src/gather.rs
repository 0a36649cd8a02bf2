//! Row gather and scatter-add: an embedding lookup and its gradient.

use crate::Real;

/// `out[r, :] = table[ids[r], :]` for a row-major `table` with rows of length `dim`.
pub fn gather_rows<T: Real>(table: &[T], dim: usize, ids: &[usize], out: &mut [T]) {
    assert!(dim == 0 || table.len() % dim == 0, "gather_rows: table of {} elements is not a whole number of rows of {dim}", table.len());
    let rows = if dim == 0 { 0 } else { table.len() / dim };
    assert!(out.len() == ids.len() * dim, "gather_rows: output has {} elements, need {} ids × {dim}", out.len(), ids.len());
    for (r, &id) in ids.iter().enumerate() {
        assert!(id < rows || dim == 0, "gather_rows: index {id} out of range for a table of {rows} rows");
        out[r * dim..(r + 1) * dim].copy_from_slice(&table[id * dim..(id + 1) * dim]);
    }
}

/// `grad[ids[r], :] += g[r, :]`; repeated ids accumulate.
pub fn scatter_add_rows<T: Real>(g: &[T], dim: usize, ids: &[usize], grad: &mut [T]) {
    assert!(g.len() == ids.len() * dim, "scatter_add_rows: gradient has {} elements, need {} ids × {dim}", g.len(), ids.len());
    assert!(dim == 0 || grad.len() % dim == 0, "scatter_add_rows: grad of {} elements is not a whole number of rows of {dim}", grad.len());
    let rows = if dim == 0 { 0 } else { grad.len() / dim };
    for (r, &id) in ids.iter().enumerate() {
        assert!(id < rows || dim == 0, "scatter_add_rows: index {id} out of range for a table of {rows} rows");
        crate::elementwise::axpy(T::ONE, &g[r * dim..(r + 1) * dim], &mut grad[id * dim..(id + 1) * dim]);
    }
}
