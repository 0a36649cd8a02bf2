//! CA-RES ([CAML](crate#references) §3.5.2, §4.7.1): multi-layer CA-NN
//!
//! ```text
//! w_1 = χ_1(c) v_1(c) + (1 − χ_1(c)) w_10
//! w_l = χ_l(c, w_{l−1}, …, w_{l−n_σ}) v_l(c, w_{l−1}, …, w_{l−n_v}) + (1 − χ_l(·)) w_l0     (Eq. 42)
//! ```
//!
//! configured by the paper's tuple `(l, n_v, n_σ, b)`: `l` layers, `v_l` sees the input `c` and
//! the last `n_v` layer outputs, χ_l sees `c` and the last `n_σ`, and `b = 1` forces χ ≡ 1
//! (bypassing `w_l0`; `n_σ` is then ignored).
//!
//! `v_l` is either a small dense sub-network on the concatenated context ([`CaResConfig::v_net`],
//! e.g. `[(width, Relu), (width, Identity)]`), or — for the last layer, when
//! [`CaResConfig::last_sum`] is set — the parameter-free `act(c + w_{l−1} + … + w_{l−n_v})`.
//! With `(2, 1, −, 1)`, `v_1` = the two-layer sub-network and `v_2(c, w_1) = relu(c + w_1)`,
//! CA-RES *is* a ResNet basic block `relu(x + W₂relu(W₁x + b₁) + b₂)` (tested numerically).
//!
//! χ_l = σ(aᵀ[c, w_{l−1}, …] + β), a scalar per example as in Eq. 39. Init: sub-networks
//! Xavier-uniform, zero biases; χ weights `N(0, 1/dim)`; `w_l0 = 0`.

use super::{Activation, Dense, GROUP_CHI, GROUP_EMB};
use chi_nn::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};

/// The `(l, n_v, n_σ, b)` tuple and layer shapes.
#[derive(Clone, Debug)]
pub struct CaResConfig {
    /// Number of layers `l ≥ 1`.
    pub l: usize,
    /// How many previous outputs `v_l` sees (besides `c`).
    pub n_v: usize,
    /// How many previous outputs χ_l sees (besides `c`); ignored when `b`.
    pub n_sigma: usize,
    /// `b = 1`: χ ≡ 1.
    pub b: bool,
    /// Dense sub-network `v_l` (sizes and activations; the last size is the layer width).
    pub v_net: Vec<(usize, Activation)>,
    /// If set, the last layer's `v` is `act(c + Σ previous n_v outputs)` (needs width = dim c).
    pub last_sum: Option<Activation>,
}

enum VFn<T: Float> {
    Net(Vec<Dense<T>>),
    Sum(Activation),
}

/// One CA-RES layer.
pub struct CaResLayer<T: Float> {
    v: VFn<T>,
    /// χ weights `[ctx]` and bias `[1]` (absent when `b = 1`).
    pub chi: Option<(Param<T>, Param<T>)>,
    /// Default vector `w_l0` (absent when `b = 1`).
    pub w0: Option<Param<T>>,
}

/// A CA-RES block.
pub struct CaRes<T: Float> {
    /// The configuration.
    pub cfg: CaResConfig,
    /// Layers 1..=l.
    pub layers: Vec<CaResLayer<T>>,
    din: usize,
}

impl<T: Float> CaRes<T> {
    /// A block on inputs of size `din`.
    pub fn new(store: &mut ParamStore<T>, name: &str, din: usize, cfg: CaResConfig, rng: &mut Rng) -> Self {
        assert!(cfg.l >= 1 && !cfg.v_net.is_empty(), "CaRes: need l ≥ 1 and a non-empty v_net");
        let width = cfg.v_net.last().unwrap().0;
        let mut layers = Vec::new();
        for l in 1..=cfg.l {
            let prev = l - 1; // outputs available
            let ctx_v = din + width * cfg.n_v.min(prev);
            let v = if l == cfg.l && l > 1 && cfg.last_sum.is_some() {
                assert!(width == din, "CaRes: last_sum needs width {width} = input size {din}");
                VFn::Sum(cfg.last_sum.unwrap())
            } else {
                let mut net = Vec::new();
                let mut d = ctx_v;
                for (k, &(o, a)) in cfg.v_net.iter().enumerate() {
                    net.push(Dense::new(store, &format!("{name}.l{l}.v{k}"), GROUP_EMB, d, o, true, a, rng));
                    d = o;
                }
                VFn::Net(net)
            };
            let (chi, w0) = if cfg.b {
                (None, None)
            } else {
                let ctx_s = din + width * cfg.n_sigma.min(prev);
                let a = store.add(&format!("{name}.l{l}.chi_w"), GROUP_CHI, init::normal(&[ctx_s], (1.0 / ctx_s as f64).sqrt(), rng));
                let b = store.add(&format!("{name}.l{l}.chi_b"), GROUP_CHI, init::zeros(&[1]));
                let w0 = store.add(&format!("{name}.l{l}.w0"), GROUP_EMB, init::zeros(&[width]));
                (Some((a, b)), Some(w0))
            };
            layers.push(CaResLayer { v, chi, w0 });
        }
        CaRes { cfg, layers, din }
    }

    /// Input size.
    pub fn din(&self) -> usize {
        self.din
    }

    /// The dense sub-network of layer `l` (1-based), if it has one.
    pub fn v_net(&self, l: usize) -> Option<&[Dense<T>]> {
        match &self.layers[l - 1].v {
            VFn::Net(n) => Some(n),
            VFn::Sum(_) => None,
        }
    }

    /// Output of the last layer, `[B, width]`, and every layer's χ (`[B, 1]`, ones when `b`).
    pub fn forward_with_chi(&self, c: &Tensor<T>) -> (Tensor<T>, Vec<Tensor<T>>) {
        let mut outs: Vec<Tensor<T>> = Vec::new();
        let mut chis = Vec::new();
        for layer in &self.layers {
            let v = match &layer.v {
                VFn::Net(net) => {
                    let mut h = context(c, &outs, self.cfg.n_v);
                    for d in net {
                        h = d.forward(&h);
                    }
                    h
                }
                VFn::Sum(a) => {
                    let mut s = c.clone();
                    for w in outs.iter().rev().take(self.cfg.n_v) {
                        s = s.add(w);
                    }
                    a.apply(&s)
                }
            };
            let w = match (&layer.chi, &layer.w0) {
                (Some((a, b)), Some(w0)) => {
                    let x = context(c, &outs, self.cfg.n_sigma);
                    let chi = x.matmul(&a.get().reshape(&[a.numel(), 1])).add(&b.get()).sigmoid();
                    let w = super::edf(&chi, &v, &w0.get());
                    chis.push(chi);
                    w
                }
                _ => {
                    chis.push(Tensor::ones(&[c.shape()[0], 1]));
                    v
                }
            };
            outs.push(w);
        }
        (outs.pop().unwrap(), chis)
    }

    /// Output of the last layer.
    pub fn forward(&self, c: &Tensor<T>) -> Tensor<T> {
        self.forward_with_chi(c).0
    }
}

/// Tiny instance: (3, 2, 1, 0) on inputs of size 3, width 3, v_net = [(4, tanh), (3, identity)].
pub fn gradcheck_instance() -> chi_nn::gradcheck::ModelInstance {
    let mut rng = Rng::new(61);
    let mut store = ParamStore::new();
    let cfg = CaResConfig { l: 3, n_v: 2, n_sigma: 1, b: false, v_net: vec![(4, Activation::Tanh), (3, Activation::Identity)], last_sum: None };
    let m = CaRes::new(&mut store, "cares", 3, cfg, &mut rng);
    chi_nn::gradcheck::perturb(&store, &mut rng);
    let x = Tensor::randn(&[4, 3], &mut rng);
    super::instance(store, vec![x], move |xs| m.forward(&xs[0]))
}

/// Which earlier outputs the `v_i` convolutions of a [`CaResConv`] block read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvVInput {
    /// Eq. 42 as written: `v_i` reads the block input `c` and the last `n_v` sublayer outputs
    /// `w_{i−1}, …, w_{i−n_v}` (concatenated along channels).
    Eq42,
    /// A chain: `v_i` reads only `w_{i−1}` (`w_0 = c`), like the convolutions of a ResNet block;
    /// `n_v` then only sets how many outputs the final sum adds. This is *not* Eq. 42 for the
    /// middle sublayers (they never see `c`); its `b = 1` form is exactly a ResNet block.
    Chain,
}

/// The tuple `(l, n_v, n_σ, b)` of a convolutional CA-RES block, and its shapes.
#[derive(Clone, Debug)]
pub struct CaResConvConfig {
    /// Sublayers `l ≥ 2`: `l − 1` convolutions `v_1 … v_{l−1}` and the parameter-free sum `v_l`.
    pub l: usize,
    /// How many previous outputs `v_i` sees besides `c` (see [`ConvVInput`]), and how many the
    /// last sublayer's sum adds to `c`.
    pub n_v: usize,
    /// How many previous outputs χ_i sees besides `c`; ignored when `b`.
    pub n_sigma: usize,
    /// `b = 1`: χ ≡ 1 (no defaults `w_i0`).
    pub b: bool,
    /// Odd kernel size of every convolution (`v_i` and χ_i), with "same" padding `k / 2`.
    pub kernel: usize,
    /// Channels of the input and of every sublayer.
    pub channels: usize,
    /// What the `v_i` convolutions read.
    pub v_input: ConvVInput,
    /// Nonlinearity of `v_1 … v_{l−2}` and of the final sum (`v_{l−1}` is linear, as the second
    /// convolution of a ResNet block); `Relu` in the experiments, `Tanh` for second-order checks.
    pub act: Activation,
}

impl CaResConvConfig {
    /// Checks the tuple: `l ≥ 2`, an odd kernel, at least one channel, `n_v ≥ 1`.
    pub fn validate(&self) -> Result<(), String> {
        if self.l < 2 {
            return Err(format!("CA-RES conv block: l = {} sublayers; need l ≥ 2 (l − 1 convolutions and the final sum)", self.l));
        }
        if self.kernel == 0 || self.kernel % 2 == 0 {
            return Err(format!("CA-RES conv block: kernel {} must be odd (same padding k/2 keeps the spatial size)", self.kernel));
        }
        if self.channels == 0 {
            return Err("CA-RES conv block: channels must be at least 1".into());
        }
        if self.n_v == 0 {
            return Err("CA-RES conv block: n_v must be at least 1 (the final sum adds the last n_v outputs to c)".into());
        }
        Ok(())
    }
}

/// A convolutional CA-RES block (§3.5.2, §4.7.1): Eq. 42 per spatial position,
///
/// ```text
/// w_0 = c
/// v_i = act(conv_i(ctx_v(i)))   (i ≤ l − 2),   v_{l−1} = conv_{l−1}(ctx_v(l − 1)),
/// v_l = act(c + w_{l−1} + … + w_{l−n_v})
/// χ_i = σ(conv_χi([c, w_{i−1}, …, w_{i−n_σ}]))     (one channel: the σ-map)
/// w_i = χ_i ⊙ v_i + (1 − χ_i) ⊙ w_i0               (w_i0 ∈ R^channels)
/// ```
///
/// with `ctx_v(i) = [c, w_{i−1}, …, w_{i−n_v}]` ([`ConvVInput::Eq42`]) or `w_{i−1}`
/// ([`ConvVInput::Chain`]); only the outputs that exist are concatenated (`w_0` is `c` itself, so
/// the first sublayer reads `c` once). With `Chain` and `b = 1` the block is the ResNet basic block
/// generalised to `l − 1` convolutions. Init: He-uniform convolutions (chi-nn's [`Conv2d`]
/// default), `w_i0 = 0`.
///
/// [`Conv2d`]: chi_nn::layers::Conv2d
pub struct CaResConv<T: Float> {
    /// The configuration.
    pub cfg: CaResConvConfig,
    /// `conv_1 … conv_{l−1}` (group `emb`).
    pub convs: Vec<chi_nn::layers::Conv2d<T>>,
    /// `conv_χ1 … conv_χl` (group `chi`; empty when `b`).
    pub chis: Vec<chi_nn::layers::Conv2d<T>>,
    /// `w_10 … w_l0`, each `[1, channels, 1, 1]` (group `emb`; empty when `b`).
    pub w0: Vec<Param<T>>,
}

impl<T: Float> CaResConv<T> {
    /// A block with parameters `{name}.v{i}.*`, `{name}.chi{i}.*`, `{name}.w0_{i}`.
    pub fn new(store: &mut ParamStore<T>, name: &str, cfg: CaResConvConfig, rng: &mut Rng) -> Result<Self, String> {
        cfg.validate()?;
        let (c, k) = (cfg.channels, cfg.kernel);
        let pad = k / 2;
        let mut convs = Vec::new();
        for i in 1..cfg.l {
            let cin = match cfg.v_input {
                ConvVInput::Eq42 => c * (1 + cfg.n_v.min(i - 1)),
                ConvVInput::Chain => c,
            };
            convs.push(chi_nn::layers::Conv2d::in_store(store, &format!("{name}.v{i}"), GROUP_EMB, cin, c, k, 1, pad, true, rng));
        }
        let (mut chis, mut w0) = (Vec::new(), Vec::new());
        if !cfg.b {
            for i in 1..=cfg.l {
                let cin = c * (1 + cfg.n_sigma.min(i - 1));
                chis.push(chi_nn::layers::Conv2d::in_store(store, &format!("{name}.chi{i}"), GROUP_CHI, cin, 1, k, 1, pad, true, rng));
                w0.push(store.add(&format!("{name}.w0_{i}"), GROUP_EMB, init::zeros(&[1, c, 1, 1])));
            }
        }
        Ok(CaResConv { cfg, convs, chis, w0 })
    }

    /// The block's output `[N, channels, H, W]` for `c: [N, channels, H, W]`, and every
    /// sublayer's σ-map `[N, 1, H, W]` (empty when `b`).
    pub fn forward_with_chi(&self, c: &Tensor<T>) -> (Tensor<T>, Vec<Tensor<T>>) {
        let l = self.cfg.l;
        let mut outs: Vec<Tensor<T>> = Vec::with_capacity(l);
        let mut maps = Vec::new();
        for i in 1..=l {
            let v = if i == l {
                let mut s = c.clone();
                for w in outs.iter().rev().take(self.cfg.n_v) {
                    s = s.add(w);
                }
                self.cfg.act.apply(&s)
            } else {
                let input = match self.cfg.v_input {
                    ConvVInput::Eq42 => context(c, &outs, self.cfg.n_v),
                    ConvVInput::Chain => outs.last().unwrap_or(c).clone(),
                };
                let v = self.convs[i - 1].forward(&input);
                if i + 1 < l {
                    self.cfg.act.apply(&v)
                } else {
                    v
                }
            };
            let w = if self.cfg.b {
                v
            } else {
                let chi = self.chis[i - 1].forward(&context(c, &outs, self.cfg.n_sigma)).sigmoid();
                let w = super::edf(&chi, &v, &self.w0[i - 1].get());
                maps.push(chi);
                w
            };
            outs.push(w);
        }
        (outs.pop().expect("l ≥ 2 sublayers"), maps)
    }

    /// The block's output.
    pub fn forward(&self, c: &Tensor<T>) -> Tensor<T> {
        self.forward_with_chi(c).0
    }
}

/// Tiny conv instance: `(3, 2, 1, 0)`, Eq. 42 inputs, 2 channels, 3×3 kernel, tanh, on a
/// `[2, 2, 4, 4]` input, with perturbed (non-zero) defaults and biases.
pub fn conv_gradcheck_instance() -> chi_nn::gradcheck::ModelInstance {
    let mut rng = Rng::new(67);
    let mut store = ParamStore::new();
    let cfg = CaResConvConfig { l: 3, n_v: 2, n_sigma: 1, b: false, kernel: 3, channels: 2, v_input: ConvVInput::Eq42, act: Activation::Tanh };
    let m = CaResConv::new(&mut store, "caresconv", cfg, &mut rng).expect("a valid tuple");
    chi_nn::gradcheck::perturb(&store, &mut rng);
    let x = Tensor::randn(&[2, 2, 4, 4], &mut rng);
    super::instance(store, vec![x], move |xs| m.forward(&xs[0]))
}

/// `[c, w_{i−1}, …, w_{i−n}]` concatenated along axis 1, from the outputs so far (`outs[j]` =
/// `w_{j+1}`): what a sublayer of either CA-RES block reads.
fn context<T: Float>(c: &Tensor<T>, outs: &[Tensor<T>], n: usize) -> Tensor<T> {
    let mut parts = vec![c.clone()];
    parts.extend(outs.iter().rev().take(n).cloned());
    if parts.len() == 1 {
        c.clone()
    } else {
        Tensor::concat(&parts, 1)
    }
}
