//! Indexing: flat take / scatter-add (adjoint pair), and row gather / scatter (the embedding
//! lookup and its gradient; repeated ids accumulate).

use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::{Float, Shape};
use std::panic::Location;
use std::rc::Rc;

impl<T: Float> Tensor<T> {
    /// Flat gather: `out[i] = self.flat[idx[i]]`, reshaped to `shape`.
    #[track_caller]
    pub fn take(&self, idx: Rc<Vec<usize>>, shape: &[usize]) -> Tensor<T> {
        self.take_named(idx, shape, "take")
    }
    /// [`Tensor::take`] recorded under the name of the method that gathers (`index_select`,
    /// `max_pool2d`, …).
    #[track_caller]
    pub(crate) fn take_named(&self, idx: Rc<Vec<usize>>, shape: &[usize], name: &'static str) -> Tensor<T> {
        let loc = Location::caller();
        let s = Shape::new(shape);
        assert!(s.numel() == idx.len(), "{name}: {} indices cannot fill shape {s:?}", idx.len());
        let n = self.numel();
        let out: Vec<T> = idx
            .iter()
            .map(|&i| {
                assert!(i < n, "{name}: index {i} out of range for a tensor of {n} elements (shape {:?})", self.shape);
                self.data[i]
            })
            .collect();
        record(out, s, &[self], loc, |_| Op::Take { x: self.clone(), idx, name })
    }
    /// Flat scatter-add into zeros of `shape`: `out.flat[idx[i]] += self.flat[i]`.
    #[track_caller]
    pub fn scatter_add(&self, idx: Rc<Vec<usize>>, shape: &[usize]) -> Tensor<T> {
        let loc = Location::caller();
        let s = Shape::new(shape);
        assert!(self.numel() == idx.len(), "scatter_add: {} values for {} indices", self.numel(), idx.len());
        let n = s.numel();
        let mut out = crate::pool::zeros(n);
        for (k, &i) in idx.iter().enumerate() {
            assert!(i < n, "scatter_add: index {i} out of range for shape {s:?}");
            out[i] += self.data[k];
        }
        record(out, s, &[self], loc, |_| Op::ScatterAdd { x: self.clone(), idx })
    }
    /// Row gather from a `[rows, dim]` table: output row `r` is `self[ids[r]]`; output shape
    /// `shape` must hold `ids.len() × dim` elements (usually `[…ids shape, dim]`).
    #[track_caller]
    pub fn gather_rows(&self, ids: Rc<Vec<usize>>, shape: &[usize]) -> Tensor<T> {
        let loc = Location::caller();
        assert!(self.rank() == 2, "gather_rows: table must be [rows, dim], got {:?}", self.shape);
        let dim = self.shape()[1];
        let s = Shape::new(shape);
        assert!(s.numel() == ids.len() * dim, "gather_rows: output shape {s:?} does not hold {} rows of {dim}", ids.len());
        let mut out = crate::pool::for_overwrite(ids.len() * dim);
        chi_kernels::gather::gather_rows(&self.data, dim, &ids, &mut out);
        record(out, s, &[self], loc, |_| Op::GatherRows { table: self.clone(), ids })
    }
    /// Embedding lookup: rows `ids` of this `[vocab, dim]` table, shaped `[ids.len(), dim]`.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let table = Tensor::<f64>::from_vec(vec![0., 0., 1., 1., 2., 2.], &[3, 2]).requires_grad();
    /// let e = table.embedding(&[2, 0, 2]);
    /// e.sum().backward();
    /// assert_eq!(table.grad().unwrap().to_vec(), vec![1., 1., 0., 0., 2., 2.]); // id 2 used twice
    /// ```
    #[track_caller]
    pub fn embedding(&self, ids: &[usize]) -> Tensor<T> {
        assert!(self.rank() == 2, "embedding: the table must be [rows, dim], got {:?}", self.shape);
        let rows = self.shape()[0];
        if let Some((i, id)) = ids.iter().enumerate().find(|&(_, &id)| id >= rows) {
            panic!("embedding: id {id} (position {i}) is out of range for a table of {rows} rows (shape {:?})", self.shape);
        }
        let dim = self.shape().get(1).copied().unwrap_or(0);
        self.gather_rows(Rc::new(ids.to_vec()), &[ids.len(), dim])
    }
    /// Row scatter-add into a `[rows, dim]` zero table: `out[ids[r]] += self[r]`.
    #[track_caller]
    pub fn scatter_rows(&self, ids: Rc<Vec<usize>>, rows: usize) -> Tensor<T> {
        let loc = Location::caller();
        let dim = if ids.is_empty() { self.shape().last().copied().unwrap_or(0) } else { self.numel() / ids.len() };
        assert!(dim * ids.len() == self.numel(), "scatter_rows: {} values are not {} rows", self.numel(), ids.len());
        if let Some((i, id)) = ids.iter().enumerate().find(|&(_, &id)| id >= rows) {
            panic!("scatter_rows: id {id} (position {i}) is out of range for {rows} rows");
        }
        let mut out = crate::pool::zeros(rows * dim);
        chi_kernels::gather::scatter_add_rows(&self.data, dim, &ids, &mut out);
        record(out, Shape::new(&[rows, dim]), &[self], loc, |_| Op::ScatterRows { x: self.clone(), ids })
    }
}
