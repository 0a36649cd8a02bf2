//! CA-RNN ([CAML](crate#references) §3.4): the cell state (Eq. 34) and output (Eq. 36) are each one EDF with a
//! **scalar** gate.
//!
//! ```text
//! f_t  = σ(v_fᵀc_{t−1} + w_fᵀx_t + u_fᵀy_{t−1} + b_f)                      (scalar)
//! v_t  = h_v(W_v x_t + U_v y_{t−1} + p_v ⊙ c_{t−1} + b_v)                    (p_v a vector)
//! c'_t = h_c(W_c x_t + U_c y_{t−1} + b_c)
//! c_t  = f_t v_t + (1 − f_t) c'_t                                            (Eq. 34)
//! o_t  = σ(z_oᵀc_t + v_oᵀc_{t−1} + w_oᵀx_t + u_oᵀy_{t−1} + b_o)             (scalar)
//! vᵒ_t = hᵒ_v(Z_v c_t + V_v c_{t−1} + Wᵒ_v x_t + Uᵒ_v y_{t−1} + bᵒ_v)
//! cᵒ_t = hᵒ_c(Vᵒ_c c_{t−1} + Wᵒ_c x_t + Uᵒ_c y_{t−1} + bᵒ_c)
//! y_t  = o_t vᵒ_t + (1 − o_t) cᵒ_t                                           (Eq. 36)
//! ```
//!
//! Storage: matrices acting on the same concatenated input are stored stacked (one GEMM each):
//! `w_f = [v_f; w_f; u_f]` over `[c_{t−1}, x_t, y_{t−1}]`, `w_v = [W_v; U_v]` over `[x, y]`,
//! `w_c = [W_c; U_c]`, `w_o = [z_o; v_o; w_o; u_o]` over `[c_t, c_{t−1}, x, y]`,
//! `w_ov = [Z_v; V_v; Wᵒ_v; Uᵒ_v]`, `w_oc = [Vᵒ_c; Wᵒ_c; Uᵒ_c]` over `[c_{t−1}, x, y]`.
//!
//! State: `[y_t, c_t]` (so [`RecurrentCell::output`] is `y_t`, the chi convention); the cell
//! state `c_t` — which §4.4.1 feeds to its logistic output — is [`CaRnnCell::cell_state`].
//!
//! Choices where the paper is silent ([`CaRnnConfig`]): `h_v = h_c = hᵒ_v = hᵒ_c = tanh`;
//! matrices Xavier-uniform, biases 0, vector peephole `p_v` initialised to `peephole_init = 1`
//! (so `v_t` starts as a squashed copy of `c_{t−1}`, the role the paper gives it: "v ↔ c_{t−1}",
//! Eq. 32). [`Peephole::Matrix`] is the variant the paper reports as failing its §4.4.1 test
//! (a full Xavier-initialised matrix instead of `p_v ⊙`).

use super::{Activation, GROUP_CHI, GROUP_EMB};
use chi_nn::layers::RecurrentCell;
use chi_nn::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};

/// Form of the peephole term in `v_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peephole {
    /// `p_v ⊙ c_{t−1}` (the paper's choice).
    Vector,
    /// `P_v c_{t−1}` with a full matrix (reported by the paper to fail §4.4.1).
    Matrix,
}

/// Options of a CA-RNN cell.
#[derive(Clone, Copy, Debug)]
pub struct CaRnnConfig {
    /// `h_v` (default tanh).
    pub h_v: Activation,
    /// `h_c` (default tanh).
    pub h_c: Activation,
    /// `hᵒ_v` (default tanh).
    pub h_out_v: Activation,
    /// `hᵒ_c` (default tanh).
    pub h_out_c: Activation,
    /// Peephole form (default vector).
    pub peephole: Peephole,
    /// Initial value of every entry of the vector peephole (default 1).
    pub peephole_init: f64,
}

impl Default for CaRnnConfig {
    fn default() -> Self {
        CaRnnConfig { h_v: Activation::Tanh, h_c: Activation::Tanh, h_out_v: Activation::Tanh, h_out_c: Activation::Tanh, peephole: Peephole::Vector, peephole_init: 1.0 }
    }
}

/// The CA-RNN cell (Eq. 34 + Eq. 36).
pub struct CaRnnCell<T: Float> {
    input: usize,
    hidden: usize,
    cfg: CaRnnConfig,
    /// `[2n + dx]` cell gate over `[c_{t−1}, x, y_{t−1}]` (group `chi`).
    pub w_f: Param<T>,
    /// `[1]` (group `chi`).
    pub b_f: Param<T>,
    /// `[dx + n, n]` = `[W_v; U_v]`.
    pub w_v: Param<T>,
    /// `[n]` (vector) or `[n, n]` (matrix) peephole.
    pub p_v: Param<T>,
    /// `[n]`.
    pub b_v: Param<T>,
    /// `[dx + n, n]` = `[W_c; U_c]`.
    pub w_c: Param<T>,
    /// `[n]`.
    pub b_c: Param<T>,
    /// `[3n + dx]` output gate over `[c_t, c_{t−1}, x, y_{t−1}]` (group `chi`).
    pub w_o: Param<T>,
    /// `[1]` (group `chi`).
    pub b_o: Param<T>,
    /// `[3n + dx, n]` = `[Z_v; V_v; Wᵒ_v; Uᵒ_v]`.
    pub w_ov: Param<T>,
    /// `[n]`.
    pub b_ov: Param<T>,
    /// `[2n + dx, n]` = `[Vᵒ_c; Wᵒ_c; Uᵒ_c]` over `[c_{t−1}, x, y_{t−1}]`.
    pub w_oc: Param<T>,
    /// `[n]`.
    pub b_oc: Param<T>,
}

impl<T: Float> CaRnnCell<T> {
    /// A cell `input → hidden` with parameters `{name}.*`.
    pub fn new(store: &mut ParamStore<T>, name: &str, input: usize, hidden: usize, cfg: CaRnnConfig, rng: &mut Rng) -> Self {
        let (n, dx) = (hidden, input);
        let g = |s: &str| format!("{name}.{s}");
        let xav = |store: &mut ParamStore<T>, s: &str, group: &str, rows: usize, cols: usize, rng: &mut Rng| {
            store.add(&g(s), group, init::xavier_uniform(&[rows, cols], rows, cols, 1.0, rng))
        };
        let w_f = store.add(&g("w_f"), GROUP_CHI, init::xavier_uniform(&[2 * n + dx], 2 * n + dx, 1, 1.0, rng));
        let b_f = store.add(&g("b_f"), GROUP_CHI, init::zeros(&[1]));
        let w_v = xav(store, "w_v", GROUP_EMB, dx + n, n, rng);
        let p_v = match cfg.peephole {
            Peephole::Vector => store.add(&g("p_v"), GROUP_EMB, init::constant(&[n], cfg.peephole_init)),
            Peephole::Matrix => xav(store, "p_v", GROUP_EMB, n, n, rng),
        };
        let b_v = store.add(&g("b_v"), GROUP_EMB, init::zeros(&[n]));
        let w_c = xav(store, "w_c", GROUP_EMB, dx + n, n, rng);
        let b_c = store.add(&g("b_c"), GROUP_EMB, init::zeros(&[n]));
        let w_o = store.add(&g("w_o"), GROUP_CHI, init::xavier_uniform(&[3 * n + dx], 3 * n + dx, 1, 1.0, rng));
        let b_o = store.add(&g("b_o"), GROUP_CHI, init::zeros(&[1]));
        let w_ov = xav(store, "w_ov", GROUP_EMB, 3 * n + dx, n, rng);
        let b_ov = store.add(&g("b_ov"), GROUP_EMB, init::zeros(&[n]));
        let w_oc = xav(store, "w_oc", GROUP_EMB, 2 * n + dx, n, rng);
        let b_oc = store.add(&g("b_oc"), GROUP_EMB, init::zeros(&[n]));
        CaRnnCell { input, hidden, cfg, w_f, b_f, w_v, p_v, b_v, w_c, b_c, w_o, b_o, w_ov, b_ov, w_oc, b_oc }
    }

    /// The cell state `c_t` of a state `[y_t, c_t]`.
    pub fn cell_state(state: &[Tensor<T>]) -> Tensor<T> {
        state[1].clone()
    }

    /// One step, also returning the two scalar gates `(f_t, o_t)`, each `[B, 1]`.
    pub fn step_with_gates(&self, x: &Tensor<T>, state: &[Tensor<T>]) -> (Vec<Tensor<T>>, Tensor<T>, Tensor<T>) {
        let (y, c) = (&state[0], &state[1]);
        let xy = Tensor::concat(&[x.clone(), y.clone()], 1);
        let cxy = Tensor::concat(&[c.clone(), x.clone(), y.clone()], 1);
        // Cell state, Eq. 34.
        let f = cxy.matmul(&self.w_f.get().reshape(&[self.w_f.numel(), 1])).add(&self.b_f.get()).sigmoid();
        let peep = match self.cfg.peephole {
            Peephole::Vector => c.mul(&self.p_v.get()),
            Peephole::Matrix => c.matmul(&self.p_v.get()),
        };
        let v = self.cfg.h_v.apply(&xy.matmul(&self.w_v.get()).add(&peep).add(&self.b_v.get()));
        let cp = self.cfg.h_c.apply(&xy.matmul(&self.w_c.get()).add(&self.b_c.get()));
        let c_t = super::edf(&f, &v, &cp);
        // Output, Eq. 36.
        let ccxy = Tensor::concat(&[c_t.clone(), cxy.clone()], 1);
        let o = ccxy.matmul(&self.w_o.get().reshape(&[self.w_o.numel(), 1])).add(&self.b_o.get()).sigmoid();
        let vo = self.cfg.h_out_v.apply(&ccxy.matmul(&self.w_ov.get()).add(&self.b_ov.get()));
        let co = self.cfg.h_out_c.apply(&cxy.matmul(&self.w_oc.get()).add(&self.b_oc.get()));
        let y_t = super::edf(&o, &vo, &co);
        (vec![y_t, c_t], f, o)
    }
}

impl<T: Float> RecurrentCell<T> for CaRnnCell<T> {
    fn input_size(&self) -> usize {
        self.input
    }
    fn hidden_size(&self) -> usize {
        self.hidden
    }
    fn init_state(&self, batch: usize) -> Vec<Tensor<T>> {
        vec![Tensor::zeros(&[batch, self.hidden]), Tensor::zeros(&[batch, self.hidden])]
    }
    fn step(&self, x: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        self.step_with_gates(x, state).0
    }
    fn name(&self) -> &'static str {
        "ca-rnn"
    }
    /// With every activation `tanh` and the vector peephole (the defaults), the input terms of
    /// all six gate and candidate blocks for every step in one matmul: `xs·W_x + b`,
    /// `[.., 4n+2]` (blocks `f, v, c', o, vᵒ, cᵒ`). Other configurations step one at a time
    /// through [`RecurrentCell::step`].
    fn project_inputs(&self, xs: &Tensor<T>) -> Option<Tensor<T>> {
        self.fusable().then(|| {
            let (w_x, bias) = self.input_weights();
            xs.affine(&w_x, &bias)
        })
    }
    /// One step from projected inputs, composed of single ops
    /// ([`chi_autodiff::ops::fused_rnn::ca_rnn_sequence_composed`] over one step).
    fn step_projected(&self, xp: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        let (n, b) = (self.hidden, xp.dim(0));
        let (w_r, w_z) = self.recurrent_weights();
        let s = chi_autodiff::ops::fused_rnn::ca_rnn_sequence_composed(&xp.reshape(&[b, 1, xp.dim(1)]), &state[0], &state[1], &w_r, &w_z, &self.p_v.get(), None).reshape(&[b, 2 * n]);
        vec![s.narrow(1, 0, n), s.narrow(1, n, n)]
    }
    /// The whole sequence as one fused op ([`Tensor::ca_rnn_sequence`]: both recurrent weights
    /// packed once, backward one node). As for the LSTM, the per-step states are outputs of that
    /// node; see [`chi_nn::layers::with_stepwise_recurrence`] for the total ∂L/∂y_t.
    fn run_projected_stacked(&self, xp: &Tensor<T>, state: &[Tensor<T>], keep: Option<std::rc::Rc<Vec<bool>>>) -> Option<Tensor<T>> {
        let (w_r, w_z) = self.recurrent_weights();
        Some(Tensor::ca_rnn_sequence(xp, &state[0], &state[1], &w_r, &w_z, &self.p_v.get(), keep))
    }
}

impl<T: Float> CaRnnCell<T> {
    /// Whether the fused sequence op applies: every activation `tanh`, vector peephole.
    fn fusable(&self) -> bool {
        let c = &self.cfg;
        [c.h_v, c.h_c, c.h_out_v, c.h_out_c].iter().all(|&a| a == Activation::Tanh) && c.peephole == Peephole::Vector
    }

    /// Rows `from..from + len` of a stacked parameter.
    fn rows(p: &Param<T>, from: usize, len: usize) -> Tensor<T> {
        p.get().narrow(0, from, len)
    }
    /// Entries `from..from + len` of a stacked vector parameter, as a column `[len, 1]`.
    fn col(p: &Param<T>, from: usize, len: usize) -> Tensor<T> {
        Self::rows(p, from, len).reshape(&[len, 1])
    }

    /// The fused op's input terms, sliced from the stacked parameters (so gradients flow back to
    /// them): `W_x [dx, 4n+2]` and `b [4n+2]`, column blocks `f, v, c', o, vᵒ, cᵒ`. Row layouts:
    /// `w_f` over `[c_{t−1}, x, y]`; `w_v`, `w_c` over `[x, y]`; `w_o` and `w_ov` over
    /// `[c_t, c_{t−1}, x, y]`; `w_oc` over `[c_{t−1}, x, y]`.
    fn input_weights(&self) -> (Tensor<T>, Tensor<T>) {
        let (n, dx) = (self.hidden, self.input);
        let (rows, col) = (Self::rows, Self::col);
        let w_x = Tensor::concat(&[col(&self.w_f, n, dx), rows(&self.w_v, 0, dx), rows(&self.w_c, 0, dx), col(&self.w_o, 2 * n, dx), rows(&self.w_ov, 2 * n, dx), rows(&self.w_oc, n, dx)], 1);
        let bias = Tensor::concat(&[self.b_f.get(), self.b_v.get(), self.b_c.get(), self.b_o.get(), self.b_ov.get(), self.b_oc.get()], 0);
        (w_x, bias)
    }

    /// The fused op's recurrent weights, sliced as [`CaRnnCell::input_weights`]: `W_r [2n, 4n+2]`
    /// over `[y, c]` of the previous step and `W_z [n, n+1] = [z_o | Z_v]` over the new cell
    /// state. The peephole `p_v ⊙ c` is the op's own operand, so the `c` rows of `v` and `c'` in
    /// `W_r` are zero.
    fn recurrent_weights(&self) -> (Tensor<T>, Tensor<T>) {
        let (n, dx) = (self.hidden, self.input);
        let (rows, col) = (Self::rows, Self::col);
        let w_ry = Tensor::concat(&[col(&self.w_f, n + dx, n), rows(&self.w_v, dx, n), rows(&self.w_c, dx, n), col(&self.w_o, 2 * n + dx, n), rows(&self.w_ov, 2 * n + dx, n), rows(&self.w_oc, n + dx, n)], 1);
        let zero = Tensor::zeros(&[n, n]);
        let w_rc = Tensor::concat(&[col(&self.w_f, 0, n), zero.clone(), zero, col(&self.w_o, n, n), rows(&self.w_ov, n, n), rows(&self.w_oc, 0, n)], 1);
        let w_z = Tensor::concat(&[col(&self.w_o, 0, n), rows(&self.w_ov, 0, n)], 1);
        (Tensor::concat(&[w_ry, w_rc], 0), w_z)
    }
}

/// Tiny instance: 3 steps of a 2 → 3 cell on a batch of 2, output `[y_T, c_T]` concatenated.
pub fn gradcheck_instance() -> chi_nn::gradcheck::ModelInstance {
    let mut rng = Rng::new(31);
    let mut store = ParamStore::new();
    let cell = CaRnnCell::new(&mut store, "carnn", 2, 3, CaRnnConfig::default(), &mut rng);
    chi_nn::gradcheck::perturb(&store, &mut rng);
    let xs: Vec<Tensor<f64>> = (0..3).map(|_| Tensor::randn(&[2, 2], &mut rng)).collect();
    let seq = Tensor::stack(&xs, 0); // [T, B, dx]
    super::instance(store, vec![seq], move |xs| {
        let t = xs[0].shape()[0];
        let mut st = cell.init_state(2);
        for i in 0..t {
            st = cell.step(&xs[0].narrow(0, i, 1).squeeze(0), &st);
        }
        Tensor::concat(&st, 1)
    })
}
