//! Fully connected (affine) layer.

use super::param_name;
use crate::module::{Layout, Module, Parameterized};
use crate::params::{init, next_init_seed, Init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};

/// `y = x·W + b`: `x [.., in]` → `y [.., out]` (any number of leading axes).
///
/// `W` is stored `[in, out]` (Xavier/Glorot uniform, `a = √(6/(in+out))`); the optional bias
/// `b [out]` starts at zero. Its [state dict](crate::state_dict) holds `weight [out, in]`
/// and `bias [out]`, as `torch.nn.Linear`.
///
/// Two ways to build one:
/// * [`Linear::new`]`(in, out)` with builder options [`Linear::no_bias`], [`Linear::init`],
///   [`Linear::seed`]: free-standing parameters `weight` and `bias`;
/// * [`Linear::in_store`] registers `{prefix}.weight` / `{prefix}.bias` in a
///   [`ParamStore`] group (models that freeze groups, checkpoints keyed by store names).
///
/// ```
/// use chi_nn::{Init, Linear, Module};
/// let l = Linear::<f32>::new(4, 3).no_bias().init(Init::HeNormal).seed(7);
/// assert_eq!(l.forward(&chi_autodiff::Tensor::zeros(&[2, 4])).shape(), [2, 3]);
/// ```
pub struct Linear<T: Float> {
    /// `[in, out]` weight.
    pub weight: Param<T>,
    /// `[out]` bias, if any.
    pub bias: Option<Param<T>>,
    in_features: usize,
    out_features: usize,
    weight_init: Init,
    seed: u64,
}

impl<T: Float> Linear<T> {
    /// A free-standing `in_features → out_features` layer with a bias, Xavier-uniform weights
    /// drawn from a seed taken from the thread's initialisation stream
    /// ([`crate::manual_seed`]), and a zero bias.
    pub fn new(in_features: usize, out_features: usize) -> Self {
        let weight_init = Init::XavierUniform(1.0);
        let weight = Param::new("weight", init::zeros(&[in_features, out_features]));
        let bias = Some(Param::new("bias", init::zeros(&[out_features])));
        Linear { weight, bias, in_features, out_features, weight_init, seed: 0 }.seed(next_init_seed())
    }
    /// Without a bias (`y = x·W`).
    pub fn no_bias(mut self) -> Self {
        self.bias = None;
        self
    }
    /// Redraws the weight with another initialiser (same seed as before unless
    /// [`Linear::seed`] follows).
    pub fn init(mut self, init: Init) -> Self {
        self.weight_init = init;
        self.redraw(self.seed);
        self
    }
    /// Redraws the weight from `Rng::new(seed)` with the layer's initialiser.
    pub fn seed(mut self, seed: u64) -> Self {
        self.redraw(seed);
        self
    }
    fn redraw(&mut self, seed: u64) {
        self.seed = seed;
        let (i, o) = (self.in_features, self.out_features);
        let w: Tensor<T> = self.weight_init.tensor(&[i, o], i, o, &mut Rng::new(seed));
        self.weight.set_values(w.to_vec());
    }
    /// A layer whose parameters `{prefix}.weight` (`[in, out]`) and, if `bias`,
    /// `{prefix}.bias` are registered in `store` under `group`; weights Xavier-uniform from
    /// `rng`, bias zero.
    pub fn in_store(store: &mut ParamStore<T>, prefix: &str, group: &str, in_features: usize, out_features: usize, bias: bool, rng: &mut Rng) -> Self {
        let weight = store.add(
            &param_name(prefix, "weight"),
            group,
            init::xavier_uniform(&[in_features, out_features], in_features, out_features, 1.0, rng),
        );
        let bias = bias.then(|| store.add(&param_name(prefix, "bias"), group, init::zeros(&[out_features])));
        Linear { weight, bias, in_features, out_features, weight_init: Init::XavierUniform(1.0), seed: 0 }
    }
    /// Input size.
    pub fn in_features(&self) -> usize {
        self.in_features
    }
    /// Output size.
    pub fn out_features(&self) -> usize {
        self.out_features
    }
    /// `x [.., in]` → `x·W + b` `[.., out]`.
    #[track_caller]
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        assert!(
            x.rank() >= 1 && x.dim(-1) == self.in_features,
            "Linear({}): input {:?} does not end in {} features",
            self.weight.name(),
            x.shape(),
            self.in_features
        );
        match &self.bias {
            // One op: the bias is added in the product's own buffer (bit for bit matmul + add).
            Some(b) => x.affine(&self.weight.get(), &b.get()),
            None => x.matmul(&self.weight.get()),
        }
    }
}

impl<T: Float> Parameterized<T> for Linear<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("weight", &self.weight, Layout::Transposed);
        if let Some(b) = &self.bias {
            f("bias", b, Layout::Native);
        }
    }
}

impl<T: Float> Module<T> for Linear<T> {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        Linear::forward(self, x)
    }
}
