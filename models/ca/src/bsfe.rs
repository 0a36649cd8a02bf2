//! CA-EM / CA-BSFE ([CAML](crate#references) §3.2, Eq. 19–22): bag-of-sparse-features embedding.
//!
//! Every feature `w` has an embedding of size `n + m`, split into the context-sensitive part
//! `w' ∈ Rⁿ` and the χ-input `w_σ ∈ Rᵐ`; a global `v0 ∈ Rⁿ` and `θ ∈ Rᵐ` are shared:
//!
//! ```text
//! χ̃(w; θ) = σ(θᵀ w_σ)                                      (Eq. 19)
//! s = v0 · Σ_{w∈s} χ̃(w; θ) + Σ_{w∈s} (1 − χ̃(w; θ)) · w'     (Eq. 20, a SUM, not an average)
//! ```
//!
//! Out-of-vocabulary features follow Eq. 21–22: they are embedded as `v0` with χ̃ = 1 (they can
//! appear anywhere, so they are context-free). "Dictionary-free" training (§4.2.1: every token
//! gets its own embedding) is [`Vocab`]: it grows a row per new token during training (up to a
//! capacity) and maps unseen tokens to [`OOV`] afterwards.
//!
//! Storage: the `n + m` embedding is kept as two tables, `w'` (`[V, n]`, group `emb`) and `w_σ`
//! (`[V, m]`, group `chi`) — the same thing as one `[V, n+m]` table sliced, but split so that
//! `em_steps` (§4.2.1) can freeze the χ-parameters (`θ`, `w_σ`: group [`super::GROUP_CHI`])
//! and the embeddings (`w'`, `v0`: group [`super::GROUP_EMB`]) alternately.
//!
//! Init (the paper is silent): `w'`, `w_σ`, `v0` ~ `N(0, 0.1²)`, `θ ~ N(0, 1/m)`.
//!
//! Baseline: [`BagAverage`], the de-facto mean of embeddings `Σ w / |s|` (OOV tokens skipped;
//! an all-OOV bag embeds as 0). Head: [`LogisticHead`], `σ(uᵀs + b)` trained with sigmoid
//! cross-entropy (§4.2.1).

use super::{GROUP_CHI, GROUP_EMB, GROUP_HEAD};
use chi_nn::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};
use std::collections::HashMap;
use std::rc::Rc;

/// Id of an out-of-vocabulary token.
pub const OOV: usize = usize::MAX;

/// A dictionary-free vocabulary: each new token gets the next row while growing is allowed.
#[derive(Clone, Debug, Default)]
pub struct Vocab {
    map: HashMap<String, usize>,
    capacity: usize,
    frozen: bool,
}

impl Vocab {
    /// Room for `capacity` rows.
    pub fn new(capacity: usize) -> Self {
        Vocab { map: HashMap::new(), capacity, frozen: false }
    }
    /// The row of `tok`, adding it if growing is allowed and there is room; [`OOV`] otherwise.
    pub fn id(&mut self, tok: &str) -> usize {
        if let Some(&i) = self.map.get(tok) {
            return i;
        }
        if self.frozen || self.map.len() >= self.capacity {
            return OOV;
        }
        let i = self.map.len();
        self.map.insert(tok.to_string(), i);
        i
    }
    /// The row of `tok` without adding it.
    pub fn lookup(&self, tok: &str) -> usize {
        self.map.get(tok).copied().unwrap_or(OOV)
    }
    /// Stops growing (tokens first seen after this are OOV).
    pub fn freeze(&mut self) {
        self.frozen = true;
    }
    /// Rows in use.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// Whether no token has a row.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// Capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// Flattened bags: in-vocabulary ids, the bag of each, and OOV counts per bag.
struct Flat {
    ids: Vec<usize>,
    bag: Vec<usize>,
    oov: Vec<f64>,
}

fn flatten(bags: &[Vec<usize>], vocab: usize) -> Flat {
    let mut f = Flat { ids: Vec::new(), bag: Vec::new(), oov: vec![0.0; bags.len()] };
    for (b, bag) in bags.iter().enumerate() {
        for &t in bag {
            if t == OOV || t >= vocab {
                f.oov[b] += 1.0;
            } else {
                f.ids.push(t);
                f.bag.push(b);
            }
        }
    }
    f
}

/// The CA-BSFE layer (Eq. 20).
pub struct CaBsfe<T: Float> {
    /// `w'`: `[V, n]` (group `emb`).
    pub w_prime: Param<T>,
    /// `w_σ`: `[V, m]` (group `chi`).
    pub w_sigma: Param<T>,
    /// `θ`: `[m]` (group `chi`).
    pub theta: Param<T>,
    /// `v0`: `[n]` (group `emb`).
    pub v0: Param<T>,
}

impl<T: Float> CaBsfe<T> {
    /// `vocab` rows, `dim(w') = n`, `dim(w_σ) = m`.
    pub fn new(store: &mut ParamStore<T>, name: &str, vocab: usize, n: usize, m: usize, rng: &mut Rng) -> Self {
        let w_prime = store.add(&format!("{name}.w_prime"), GROUP_EMB, init::normal(&[vocab, n], 0.1, rng));
        let w_sigma = store.add(&format!("{name}.w_sigma"), GROUP_CHI, init::normal(&[vocab, m], 0.1, rng));
        let theta = store.add(&format!("{name}.theta"), GROUP_CHI, init::normal(&[m], (1.0 / m as f64).sqrt(), rng));
        let v0 = store.add(&format!("{name}.v0"), GROUP_EMB, init::normal(&[n], 0.1, rng));
        CaBsfe { w_prime, w_sigma, theta, v0 }
    }
    /// Vocabulary rows.
    pub fn vocab(&self) -> usize {
        self.w_prime.shape()[0]
    }
    /// `n = dim(w')`.
    pub fn dim(&self) -> usize {
        self.w_prime.shape()[1]
    }
    /// χ̃(w; θ) for the given ids: `[K, 1]`.
    pub fn chi(&self, ids: &[usize]) -> Tensor<T> {
        let m = self.theta.numel();
        self.w_sigma.get().embedding(ids).matmul(&self.theta.get().reshape(&[m, 1])).sigmoid()
    }
    /// χ̃ of every vocabulary row (no tape).
    pub fn chi_table(&self) -> Vec<f64> {
        chi_autodiff::no_grad(|| self.chi(&(0..self.vocab()).collect::<Vec<_>>()).data().iter().map(|v| v.to_f64()).collect())
    }
    /// Single-feature embedding (CA-EM, Fig. 2a): `χ̃ v0 + (1 − χ̃) w'` for each id, `[K, n]`.
    pub fn embed(&self, ids: &[usize]) -> Tensor<T> {
        super::edf(&self.chi(ids), &self.v0.get(), &self.w_prime.get().embedding(ids))
    }
    /// Bag embeddings (Eq. 20): one `[B, n]` row per bag; ids [`OOV`] (or ≥ vocab) embed as `v0`.
    pub fn forward(&self, bags: &[Vec<usize>]) -> Tensor<T> {
        let f = flatten(bags, self.vocab());
        let b = bags.len();
        let oov = Tensor::from_vec(f.oov.iter().map(|&v| T::from_f64(v)).collect(), &[b, 1]).mul(&self.v0.get());
        if f.ids.is_empty() {
            return oov;
        }
        self.embed(&f.ids).scatter_rows(Rc::new(f.bag), b).add(&oov)
    }
}

/// Averaging baseline: `s = Σ_{w∈s} w / |s|`.
pub struct BagAverage<T: Float> {
    /// `[V, n]` (group `emb`).
    pub table: Param<T>,
}

impl<T: Float> BagAverage<T> {
    /// `vocab × n` table, `N(0, 0.1²)`.
    pub fn new(store: &mut ParamStore<T>, name: &str, vocab: usize, n: usize, rng: &mut Rng) -> Self {
        BagAverage { table: store.add(&format!("{name}.table"), GROUP_EMB, init::normal(&[vocab, n], 0.1, rng)) }
    }
    /// Mean embeddings `[B, n]` (OOV skipped; an empty or all-OOV bag gives 0).
    pub fn forward(&self, bags: &[Vec<usize>]) -> Tensor<T> {
        let (vocab, n) = (self.table.shape()[0], self.table.shape()[1]);
        let f = flatten(bags, vocab);
        let b = bags.len();
        if f.ids.is_empty() {
            return Tensor::zeros(&[b, n]);
        }
        let mut counts = vec![0.0; b];
        f.bag.iter().for_each(|&i| counts[i] += 1.0);
        let inv = Tensor::from_vec(counts.iter().map(|&c| T::from_f64(if c > 0.0 { 1.0 / c } else { 0.0 })).collect(), &[b, 1]);
        self.table.get().embedding(&f.ids).scatter_rows(Rc::new(f.bag), b).mul(&inv)
    }
}

/// Logistic output `σ(uᵀs + b)`; [`LogisticHead::logits`] returns `uᵀs + b` (`[B]`) for
/// `binary_cross_entropy_with_logits`.
pub struct LogisticHead<T: Float> {
    /// `[n]`.
    pub u: Param<T>,
    /// `[1]`.
    pub b: Param<T>,
}

impl<T: Float> LogisticHead<T> {
    /// Head on `n` features (group `head`), Xavier-uniform weights.
    pub fn new(store: &mut ParamStore<T>, name: &str, n: usize, rng: &mut Rng) -> Self {
        let u = store.add(&format!("{name}.u"), GROUP_HEAD, init::xavier_uniform(&[n], n, 1, 1.0, rng));
        let b = store.add(&format!("{name}.b"), GROUP_HEAD, init::zeros(&[1]));
        LogisticHead { u, b }
    }
    /// Logits `[B]` of features `[B, n]`.
    pub fn logits(&self, s: &Tensor<T>) -> Tensor<T> {
        s.matmul(&self.u.get()).add(&self.b.get())
    }
}

/// Tiny instance: vocab 5, n = 3, m = 2, three bags (one with an OOV token), logistic head.
pub fn gradcheck_instance() -> chi_nn::gradcheck::ModelInstance {
    let mut rng = Rng::new(11);
    let mut store = ParamStore::new();
    let m = CaBsfe::new(&mut store, "bsfe", 5, 3, 2, &mut rng);
    let head = LogisticHead::new(&mut store, "head", 3, &mut rng);
    chi_nn::gradcheck::perturb(&store, &mut rng);
    let bags = vec![vec![0, 1, 1, 4], vec![2, OOV], vec![3]];
    super::instance(store, vec![], move |_| head.logits(&m.forward(&bags)))
}
