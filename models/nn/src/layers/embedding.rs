//! Embedding tables: lookup ([`Embedding`]) and pooled bags ([`EmbeddingBag`]).
//!
//! Both can deliver their table gradient row-sparse ([`chi_autodiff::Tensor::sparse_grad`]):
//! the gather's backward then records only the looked-up rows
//! (`param.get().sparse_grad_rows()`), while `param.grad()` still returns the densified
//! gradient, identical to the dense one.

use super::param_name;
use crate::module::{Layout, Module, Parameterized};
use crate::params::{init, next_init_seed, Init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};
use std::rc::Rc;

/// Creates a `[vocab, dim]` `N(0, 1)` table parameter, marking it sparse if asked.
fn table<T: Float>(store: &mut ParamStore<T>, prefix: &str, group: &str, vocab: usize, dim: usize, sparse: bool, rng: &mut Rng) -> Param<T> {
    let p = store.add(&param_name(prefix, "weight"), group, init::normal(&[vocab, dim], 1.0, rng));
    if sparse {
        // `sparse_grad` flags the shared autodiff identity, so every clone (the stored value
        // included) is sparse.
        let _ = p.get().sparse_grad();
    }
    p
}

#[track_caller]
fn check_ids(what: &str, ids: &[usize], vocab: usize) {
    if let Some(&bad) = ids.iter().find(|&&i| i >= vocab) {
        panic!("{what}: id {bad} is out of range for a vocabulary of {vocab}");
    }
}

/// Lookup table: ids → rows of `E [vocab, dim]`. `ids` of shape `S` → `[S.., dim]`.
///
/// `out[.., :] = E[id, :]`; backward scatter-adds the incoming rows into `E` (repeated ids
/// accumulate). With `sparse = true` the gradient is kept as rows (see the module docs).
/// Init `N(0, 1)` (as PyTorch). Parameter: `weight` ([`Embedding::new`]) or
/// `{prefix}.weight` ([`Embedding::in_store`]), `[vocab, dim]` as `torch.nn.Embedding`.
///
/// As a [`Module`], its input is a tensor of ids stored as whole numbers (PyTorch's
/// `LongTensor`); its output has the ids' shape with `dim` appended.
pub struct Embedding<T: Float> {
    /// `[vocab, dim]` table.
    pub weight: Param<T>,
    vocab: usize,
    dim: usize,
}

impl<T: Float> Embedding<T> {
    /// A free-standing `N(0, 1)` table (dense gradients) drawn from a seed of the thread's
    /// initialisation stream ([`crate::manual_seed`]).
    pub fn new(vocab: usize, dim: usize) -> Self {
        let weight = Param::new("weight", init::zeros(&[vocab, dim]));
        Embedding { weight, vocab, dim }.seed(next_init_seed())
    }
    /// Redraws the table from `Rng::new(seed)` (`N(0, 1)`).
    pub fn seed(self, seed: u64) -> Self {
        self.init_with(Init::Normal(1.0), seed)
    }
    /// Redraws the table with `init` from `Rng::new(seed)`.
    pub fn init_with(self, init: Init, seed: u64) -> Self {
        let t: Tensor<T> = init.tensor(&[self.vocab, self.dim], self.vocab, self.dim, &mut Rng::new(seed));
        self.weight.set_values(t.to_vec());
        self
    }
    /// Row-sparse gradients (see the module docs).
    pub fn sparse(self) -> Self {
        let _ = self.weight.get().sparse_grad();
        self
    }
    /// A `N(0, 1)` table registered in `store` as `{prefix}.weight` (group `group`), drawn
    /// from `rng`; `sparse` selects row-sparse gradients.
    pub fn in_store(store: &mut ParamStore<T>, prefix: &str, group: &str, vocab: usize, dim: usize, sparse: bool, rng: &mut Rng) -> Self {
        Embedding { weight: table(store, prefix, group, vocab, dim, sparse, rng), vocab, dim }
    }
    /// Vocabulary size.
    pub fn vocab(&self) -> usize {
        self.vocab
    }
    /// Embedding size.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// `ids` (flat) → `[ids.len(), dim]`.
    #[track_caller]
    pub fn forward(&self, ids: &[usize]) -> Tensor<T> {
        self.forward_shaped(ids, &[ids.len()])
    }
    /// `ids` laid out with shape `shape` (e.g. `[batch, time]`, row-major) → `[shape.., dim]`.
    #[track_caller]
    pub fn forward_shaped(&self, ids: &[usize], shape: &[usize]) -> Tensor<T> {
        assert!(shape.iter().product::<usize>() == ids.len(), "Embedding: {} ids do not fill shape {shape:?}", ids.len());
        check_ids("Embedding", ids, self.vocab);
        let mut s = shape.to_vec();
        s.push(self.dim);
        self.weight.get().gather_rows(Rc::new(ids.to_vec()), &s)
    }
}

impl<T: Float> Parameterized<T> for Embedding<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("weight", &self.weight, Layout::Native);
    }
}

impl<T: Float> Module<T> for Embedding<T> {
    /// `ids` (whole numbers in `[0, vocab)`, any shape `S`) → `[S.., dim]`. Panics on an id
    /// that is not a whole number in range.
    fn forward(&self, ids: &Tensor<T>) -> Tensor<T> {
        let v: Vec<usize> = ids
            .to_vec()
            .iter()
            .map(|x| {
                let f = x.to_f64();
                assert!(f >= 0.0 && f.fract() == 0.0, "Embedding: id {f} is not a non-negative whole number (input {:?})", ids.shape());
                f as usize
            })
            .collect();
        self.forward_shaped(&v, ids.shape())
    }
}

/// How an [`EmbeddingBag`] pools the rows of a bag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BagMode {
    /// `Σ_{i ∈ bag} E[i]`.
    Sum,
    /// `(1/|bag|) Σ_{i ∈ bag} E[i]` (an empty bag gives zeros).
    Mean,
}

/// Pooled lookups: each bag (a list of ids) → one row `pool_{i ∈ bag} E[i]`, `[n_bags, dim]`.
///
/// Computed as one `gather_rows` of all ids followed by one `scatter_rows` into the bags (and
/// a constant `1/|bag|` scale for [`BagMode::Mean`]), so backward is two row ops regardless of
/// the number of bags. Bags come as PyTorch-style `offsets` into a flat id list
/// ([`EmbeddingBag::forward_offsets`]) or as `&[Vec<usize>]` ([`EmbeddingBag::forward_bags`]).
/// Parameter: `{prefix}.weight` (`weight` in its [state dict](crate::state_dict)).
pub struct EmbeddingBag<T: Float> {
    /// `[vocab, dim]` table.
    pub weight: Param<T>,
    mode: BagMode,
    vocab: usize,
    dim: usize,
}

impl<T: Float> EmbeddingBag<T> {
    /// A new `N(0, 1)` table pooled with `mode`; `sparse` selects row-sparse gradients.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, vocab: usize, dim: usize, mode: BagMode, sparse: bool, rng: &mut Rng) -> Self {
        EmbeddingBag { weight: table(store, prefix, group, vocab, dim, sparse, rng), mode, vocab, dim }
    }
    /// Embedding size.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// The pooling mode.
    pub fn mode(&self) -> BagMode {
        self.mode
    }
    /// Bags as offsets (PyTorch's convention): bag `b` is `ids[offsets[b]..offsets[b+1]]`, the
    /// last bag running to the end. `offsets` must start at 0 and be non-decreasing.
    /// Returns `[offsets.len(), dim]`.
    #[track_caller]
    pub fn forward_offsets(&self, ids: &[usize], offsets: &[usize]) -> Tensor<T> {
        assert!(offsets.first().is_none_or(|&o| o == 0), "EmbeddingBag: offsets must start at 0, got {offsets:?}");
        // Without offsets there is no bag to put the ids in (PyTorch's offsets start each bag).
        assert!(!offsets.is_empty() || ids.is_empty(), "EmbeddingBag: {} ids but no offsets (each bag starts at an offset; [0] for one bag)", ids.len());
        let n = offsets.len();
        let mut bag_of = Vec::with_capacity(ids.len());
        let mut sizes = Vec::with_capacity(n);
        for b in 0..n {
            let end = if b + 1 < n { offsets[b + 1] } else { ids.len() };
            assert!(end <= ids.len(), "EmbeddingBag: offset {end} in {offsets:?} is past the end of the {} ids", ids.len());
            assert!(offsets[b] <= end, "EmbeddingBag: offsets {offsets:?} decrease");
            sizes.push(end - offsets[b]);
            bag_of.extend(std::iter::repeat(b).take(end - offsets[b]));
        }
        self.pool(ids, bag_of, &sizes)
    }
    /// Bags as lists of ids → `[bags.len(), dim]`.
    #[track_caller]
    pub fn forward_bags(&self, bags: &[Vec<usize>]) -> Tensor<T> {
        let ids: Vec<usize> = bags.iter().flatten().copied().collect();
        let bag_of: Vec<usize> = bags.iter().enumerate().flat_map(|(b, v)| std::iter::repeat(b).take(v.len())).collect();
        let sizes: Vec<usize> = bags.iter().map(|v| v.len()).collect();
        self.pool(ids.as_slice(), bag_of, &sizes)
    }
    #[track_caller]
    fn pool(&self, ids: &[usize], bag_of: Vec<usize>, sizes: &[usize]) -> Tensor<T> {
        check_ids("EmbeddingBag", ids, self.vocab);
        let n = sizes.len();
        let rows = self.weight.get().gather_rows(Rc::new(ids.to_vec()), &[ids.len(), self.dim]);
        let sums = rows.scatter_rows(Rc::new(bag_of), n);
        let sums = if sums.shape() == [n, self.dim] { sums } else { sums.reshape(&[n, self.dim]) };
        match self.mode {
            BagMode::Sum => sums,
            BagMode::Mean => {
                let inv: Vec<T> = sizes.iter().map(|&s| if s == 0 { T::ZERO } else { T::from_f64(1.0 / s as f64) }).collect();
                sums.mul(&Tensor::from_vec(inv, &[n, 1]))
            }
        }
    }
}

impl<T: Float> Parameterized<T> for EmbeddingBag<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("weight", &self.weight, Layout::Native);
    }
}
