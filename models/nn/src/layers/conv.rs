//! Convolution layers: the Kim (2014) text CNN ([`Conv1dText`]), [`Conv2d`], and max pooling
//! ([`MaxPool2d`], [`MaxPool1d`]), wrapping the autodiff crate's `conv1d`/`conv2d`/`max_pool*`
//! (im2col + one GEMM).

use super::param_name;
use crate::module::{Layout, Module, Parameterized};
use crate::params::{init, next_init_seed, Param, ParamStore};
use crate::Activation;
use chi_autodiff::{Float, Rng, Tensor};
use std::rc::Rc;

/// Text CNN (Kim 2014; [Tixier](crate#references) §5.2): several filter widths `h` over a sentence matrix,
/// 1-max pooling over time, concatenation.
///
/// `x [batch, len, emb]` → `[batch, n_filters · widths.len()]`. For each width `h` with filters
/// `W_h [n_f, emb, h]`, `b_h [n_f]`:
///
/// ```text
/// o_i = Σ_{r<h} W_h[:, :, r] · x[i + r, :] + b_h        i = 0 … len − h   (len − h + 1 regions)
/// c   = max_i act(o_i)                                   (1-max pooling, per filter)
/// out = [c_{h₁}; c_{h₂}; …]
/// ```
///
/// (Seed 004 eq. 3 prints the bias after the nonlinearity; we add it before, as Kim and every
/// framework do.) Requires `len ≥ max(widths)`. Weights He-uniform (fan-in `emb·h`), biases
/// zero. Parameters: `{prefix}.w{h}`, `{prefix}.b{h}` per width in a store; in the
/// [state dict](crate::state_dict) `convs.{i}.weight [n_f, emb, h]` and `convs.{i}.bias`
/// for the `i`-th width: the names and layouts of a `torch.nn.ModuleList` `convs` of
/// `torch.nn.Conv1d(emb, n_f, h)`.
pub struct Conv1dText<T: Float> {
    /// `(width, weight [n_f, emb, width], bias [n_f])` per filter width.
    pub filters: Vec<(usize, Param<T>, Param<T>)>,
    n_filters: usize,
    emb: usize,
    act: Activation,
}

impl<T: Float> Conv1dText<T> {
    /// A free-standing layer: `n_filters` filters for each width in `widths` over `emb`-dim
    /// embeddings, ReLU ([`Conv1dText::activation`] changes it), weights drawn from a seed of
    /// the thread's initialisation stream ([`crate::manual_seed`]). Panics if `widths` is
    /// empty or holds 0.
    #[track_caller]
    pub fn new(emb: usize, widths: &[usize], n_filters: usize) -> Self {
        assert!(!widths.is_empty(), "Conv1dText: no filter widths given");
        assert!(!widths.contains(&0), "Conv1dText: filter widths {widths:?} hold 0 (a filter reads at least one word)");
        let mut rng = Rng::new(next_init_seed());
        let filters = widths
            .iter()
            .enumerate()
            .map(|(i, &h)| {
                let w = Param::new(&format!("convs.{i}.weight"), init::he_uniform(&[n_filters, emb, h], emb * h, &mut rng));
                let b = Param::new(&format!("convs.{i}.bias"), init::zeros(&[n_filters]));
                (h, w, b)
            })
            .collect();
        Conv1dText { filters, n_filters, emb, act: Activation::Relu }
    }
    /// Another activation of the feature maps.
    pub fn activation(mut self, act: Activation) -> Self {
        self.act = act;
        self
    }
    /// `n_filters` filters for each width in `widths` over `emb`-dim embeddings, registered
    /// in `store` (group `group`) and drawn from `rng`.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub fn in_store(store: &mut ParamStore<T>, prefix: &str, group: &str, emb: usize, widths: &[usize], n_filters: usize, act: Activation, rng: &mut Rng) -> Self {
        assert!(!widths.is_empty(), "Conv1dText: no filter widths given");
        assert!(!widths.contains(&0), "Conv1dText: filter widths {widths:?} hold 0 (a filter reads at least one word)");
        let filters = widths
            .iter()
            .map(|&h| {
                let w = store.add(&param_name(prefix, &format!("w{h}")), group, init::he_uniform(&[n_filters, emb, h], emb * h, rng));
                let b = store.add(&param_name(prefix, &format!("b{h}")), group, init::zeros(&[n_filters]));
                (h, w, b)
            })
            .collect();
        Conv1dText { filters, n_filters, emb, act }
    }
    /// Output size `n_filters · widths.len()`.
    pub fn out_features(&self) -> usize {
        self.n_filters * self.filters.len()
    }
    /// The pre-pooling feature maps, one `[batch, n_f, len − h + 1]` per width (after the
    /// activation): the "predictive regions" of [Tixier](crate#references) §5.4.2.
    #[track_caller]
    pub fn feature_maps(&self, x: &Tensor<T>) -> Vec<Tensor<T>> {
        assert!(x.rank() == 3 && x.dim(2) == self.emb, "Conv1dText: input must be [batch, len, {}], got {:?}", self.emb, x.shape());
        let xt = x.permute(&[0, 2, 1]); // [B, emb, len]: channels = embedding dims
        self.filters.iter().map(|(_, w, b)| self.act.apply(&xt.conv1d(&w.get(), Some(&b.get()), 1, 0))).collect()
    }
    /// `x [batch, len, emb]` → `[batch, n_filters · widths.len()]`.
    ///
    /// Computed in the input's own layout, without the transposes of the generic
    /// [`Tensor::conv1d`] path ([`Conv1dText::feature_maps`]): in `[batch, len, emb]` a window of
    /// `h` consecutive words is `h·emb` contiguous numbers, so the windows of every width are one
    /// row gather (`gather_rows`, whose backward is a scatter-add) into `[batch·regions, h·emb]`,
    /// then one GEMM with the weight reordered to `[h·emb, n_f]` (tap-major, matching the
    /// windows), then the max over regions. Profiled on the PyTorch side-by-side text-CNN
    /// workload, the generic path spent a third of its time in `permute`/`transpose`.
    #[track_caller]
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        self.forward_lengths(x, None)
    }

    /// [`Conv1dText::forward`] of a right-padded batch whose row `n` is a text of `lengths[n]`
    /// words: each filter's max runs over the windows inside the text only (the first window
    /// when the text is shorter than the filter), so a text's features do not depend on how
    /// far its batch is padded. The other windows get −10³⁰ added before the max: a constant,
    /// so gradients are unchanged, and whatever the activation they never win.
    #[track_caller]
    pub fn forward_lengths(&self, x: &Tensor<T>, lengths: Option<&[usize]>) -> Tensor<T> {
        assert!(x.rank() == 3 && x.dim(2) == self.emb, "Conv1dText: input must be [batch, len, {}], got {:?}", self.emb, x.shape());
        let (b, len, e) = (x.dim(0), x.dim(1), self.emb);
        if let Some(l) = lengths {
            assert!(l.len() == b && l.iter().all(|&n| n <= len), "Conv1dText: lengths {l:?} do not fit a batch of {b} texts padded to {len}");
        }
        let rows = x.reshape(&[b * len, e]);
        let pooled: Vec<Tensor<T>> = self
            .filters
            .iter()
            .map(|(h, w, bias)| {
                let h = *h;
                assert!(len >= h, "Conv1dText: sequence length {len} is shorter than filter width {h}");
                let p = len - h + 1;
                // Row ids of every window: window (n, i) is rows n·len + i … n·len + i + h − 1.
                let ids: Vec<usize> = (0..b).flat_map(|n| (0..p).flat_map(move |i| (0..h).map(move |r| n * len + i + r))).collect();
                let windows = rows.gather_rows(Rc::new(ids), &[b * p * h, e]).reshape(&[b * p, h * e]);
                // W [n_f, emb, h] → [h, emb, n_f] → [h·emb, n_f]: row r·emb + c holds W[:, c, r].
                let wt = w.get().permute(&[2, 1, 0]).reshape(&[h * e, self.n_filters]);
                let o = self.act.apply(&windows.matmul(&wt).add(&bias.get()).reshape(&[b, p, self.n_filters]));
                match lengths {
                    None => o.max_axis(1, false),
                    Some(l) => {
                        let outside: Vec<T> = l
                            .iter()
                            .flat_map(|&n| (0..p).map(move |i| if i < (n + 1).saturating_sub(h).max(1) { T::ZERO } else { T::from_f64(-1e30) }))
                            .collect();
                        o.add(&Tensor::from_vec(outside, &[b, p, 1])).max_axis(1, false)
                    }
                }
            })
            .collect();
        Tensor::concat(&pooled, 1)
    }
}

/// 2-D convolution: `x [N, C, H, W]` → `[N, C_out, OH, OW]`,
/// `y[n, o] = b[o] + Σ_c W[o, c] ⋆ x[n, c]` (cross-correlation), `OH = ⌊(H + 2p − k)/s⌋ + 1`.
///
/// Weight `[C_out, C, k, k]` He-uniform (fan-in `C·k²`), bias `[C_out]` zero.
/// Parameters: `weight`, `bias` (`{prefix}.weight`, `{prefix}.bias` in a store), laid out as
/// `torch.nn.Conv2d`'s.
pub struct Conv2d<T: Float> {
    /// `[C_out, C_in, k, k]`.
    pub weight: Param<T>,
    /// `[C_out]`, if any.
    pub bias: Option<Param<T>>,
    stride: usize,
    padding: usize,
}

impl<T: Float> Conv2d<T> {
    /// A free-standing `k×k` convolution from `c_in` to `c_out` channels (stride 1, no
    /// padding, with a bias), drawn from a seed of the thread's initialisation stream
    /// ([`crate::manual_seed`]).
    pub fn new(c_in: usize, c_out: usize, k: usize) -> Self {
        let mut rng = Rng::new(next_init_seed());
        let weight = Param::new("weight", init::he_uniform(&[c_out, c_in, k, k], c_in * k * k, &mut rng));
        let bias = Some(Param::new("bias", init::zeros(&[c_out])));
        Conv2d { weight, bias, stride: 1, padding: 0 }
    }
    /// Another stride.
    pub fn stride(mut self, stride: usize) -> Self {
        self.stride = stride;
        self
    }
    /// Zero padding on each side.
    pub fn padding(mut self, padding: usize) -> Self {
        self.padding = padding;
        self
    }
    /// Without a bias.
    pub fn no_bias(mut self) -> Self {
        self.bias = None;
        self
    }
    /// Redraws the weight from `Rng::new(seed)`.
    pub fn seed(self, seed: u64) -> Self {
        let s = self.weight.shape();
        let t: Tensor<T> = init::he_uniform(&s, s[1] * s[2] * s[3], &mut Rng::new(seed));
        self.weight.set_values(t.to_vec());
        self
    }
    /// A `k×k` convolution from `c_in` to `c_out` channels with parameters registered in
    /// `store` (group `group`), drawn from `rng`.
    #[allow(clippy::too_many_arguments)]
    pub fn in_store(
        store: &mut ParamStore<T>,
        prefix: &str,
        group: &str,
        c_in: usize,
        c_out: usize,
        k: usize,
        stride: usize,
        padding: usize,
        bias: bool,
        rng: &mut Rng,
    ) -> Self {
        let weight = store.add(&param_name(prefix, "weight"), group, init::he_uniform(&[c_out, c_in, k, k], c_in * k * k, rng));
        let bias = bias.then(|| store.add(&param_name(prefix, "bias"), group, init::zeros(&[c_out])));
        Conv2d { weight, bias, stride, padding }
    }
    /// `[N, C, H, W]` → `[N, C_out, OH, OW]`.
    #[track_caller]
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        let b = self.bias.as_ref().map(|b| b.get());
        x.conv2d(&self.weight.get(), b.as_ref(), self.stride, self.padding)
    }
}

/// 2-D max pooling with a `k×k` window: `[N, C, H, W]` → `[N, C, ⌊(H−k)/s⌋+1, ⌊(W−k)/s⌋+1]`.
/// The gradient goes to the (first) arg-max of each window. No parameters.
#[derive(Clone, Copy, Debug)]
pub struct MaxPool2d {
    /// Window size.
    pub k: usize,
    /// Stride.
    pub stride: usize,
}

impl MaxPool2d {
    /// A `k×k` window moved by `stride`.
    pub fn new(k: usize, stride: usize) -> Self {
        MaxPool2d { k, stride }
    }
    /// Pools `[N, C, H, W]`.
    #[track_caller]
    pub fn forward<T: Float>(&self, x: &Tensor<T>) -> Tensor<T> {
        x.max_pool2d(self.k, self.stride)
    }
}

/// 1-D max pooling with a window of `k`: `[N, C, L]` → `[N, C, ⌊(L−k)/s⌋+1]`. No parameters.
#[derive(Clone, Copy, Debug)]
pub struct MaxPool1d {
    /// Window size.
    pub k: usize,
    /// Stride.
    pub stride: usize,
}

impl MaxPool1d {
    /// A window of `k` moved by `stride`.
    pub fn new(k: usize, stride: usize) -> Self {
        MaxPool1d { k, stride }
    }
    /// Pools `[N, C, L]`.
    #[track_caller]
    pub fn forward<T: Float>(&self, x: &Tensor<T>) -> Tensor<T> {
        x.max_pool1d(self.k, self.stride)
    }
}

impl<T: Float> Parameterized<T> for Conv1dText<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        for (i, (_, w, b)) in self.filters.iter().enumerate() {
            f(&format!("convs.{i}.weight"), w, Layout::Native);
            f(&format!("convs.{i}.bias"), b, Layout::Native);
        }
    }
}

impl<T: Float> Module<T> for Conv1dText<T> {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        Conv1dText::forward(self, x)
    }
}

impl<T: Float> Parameterized<T> for Conv2d<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("weight", &self.weight, Layout::Native);
        if let Some(b) = &self.bias {
            f("bias", b, Layout::Native);
        }
    }
}

impl<T: Float> Module<T> for Conv2d<T> {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        Conv2d::forward(self, x)
    }
}

impl<T: Float> Parameterized<T> for MaxPool2d {
    fn visit_parameters(&self, _f: &mut dyn FnMut(&str, &Param<T>, Layout)) {}
}

impl<T: Float> Module<T> for MaxPool2d {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        MaxPool2d::forward(self, x)
    }
}

impl<T: Float> Parameterized<T> for MaxPool1d {
    fn visit_parameters(&self, _f: &mut dyn FnMut(&str, &Param<T>, Layout)) {}
}

impl<T: Float> Module<T> for MaxPool1d {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        MaxPool1d::forward(self, x)
    }
}
