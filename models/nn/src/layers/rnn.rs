//! Recurrent cells ([`RnnCell`], [`LstmCell`], [`GruCell`]), sequence runners with masking for
//! variable-length batches ([`run_sequence`], [`run_sequence_batch`],
//! [`run_sequence_batch_stacked`]) and a
//! [`Bidirectional`] wrapper.
//!
//! All cells implement [`RecurrentCell`]. Each keeps the input weights of all its gates fused in
//! one `W_ih [in, G·H]` (and the recurrent ones in one `W_hh [H, G·H]`), so a step is one
//! matmul for the input side and one for the hidden side, then `narrow`s per gate. The input
//! side does not depend on the state: [`RecurrentCell::project_inputs`] computes it for a
//! whole `[batch, time, in]` sequence in one matmul, which [`run_sequence_batch`] uses.
//!
//! Gate order inside the fused weights is PyTorch's: LSTM `i, f, g, o`; GRU `r, z, n`.

use super::{param_name, RecurrentCell};
use crate::module::{visit_child, Layout, Parameterized};
use crate::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};
use std::cell::Cell;
use std::rc::Rc;

thread_local! {
    static STEPWISE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every sequence runner of this thread stepping through time with one node per
/// step, instead of a cell's whole-sequence op ([`Tensor::lstm_sequence`], [`Tensor::gru_sequence`]).
///
/// Why it exists: a whole-sequence op is one node, so the per-step states it hands back are
/// *outputs* of that node, and the gradient retained on such an `h_t` holds only what flows
/// into it from downstream of the sequence — not the part that flows back through the later
/// steps, which stays inside the op. Code that reads the total ∂L/∂h_t of every step (gradient
/// flow over time, saliency over time) must build the graph step by step; this is how. The
/// values and parameter gradients are the same either way (tested to 1e-12 in f64).
pub fn with_stepwise_recurrence<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            STEPWISE.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(STEPWISE.with(|s| s.replace(true)));
    f()
}

/// Whether [`with_stepwise_recurrence`] is active on this thread.
pub fn stepwise_recurrence() -> bool {
    STEPWISE.with(|s| s.get())
}

/// Xavier-uniform `[rows, cols]` weight for one gate block of width `cols / gates`.
fn gate_weight<T: Float>(rows: usize, hidden: usize, gates: usize, rng: &mut Rng) -> Tensor<T> {
    init::xavier_uniform(&[rows, gates * hidden], rows, hidden, 1.0, rng)
}

// ------------------------------------------------------------------------------------ Elman

/// Elman RNN cell ([White](crate#references) eq. 2.1):
///
/// ```text
/// h_t = tanh(x_t·W_ih + h_{t−1}·W_hh + b)
/// ```
///
/// `x [B, in]`, state `[h [B, H]]`. Weights Xavier-uniform, bias zero.
/// Parameters: `{prefix}.w_ih [in, H]`, `{prefix}.w_hh [H, H]`, `{prefix}.bias [H]`.
pub struct RnnCell<T: Float> {
    /// `[in, H]`.
    pub w_ih: Param<T>,
    /// `[H, H]`.
    pub w_hh: Param<T>,
    /// `[H]`.
    pub bias: Param<T>,
    input: usize,
    hidden: usize,
}

impl<T: Float> RnnCell<T> {
    /// A new cell.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, input: usize, hidden: usize, rng: &mut Rng) -> Self {
        let w_ih = store.add(&param_name(prefix, "w_ih"), group, gate_weight(input, hidden, 1, rng));
        let w_hh = store.add(&param_name(prefix, "w_hh"), group, gate_weight(hidden, hidden, 1, rng));
        let bias = store.add(&param_name(prefix, "bias"), group, init::zeros(&[hidden]));
        RnnCell { w_ih, w_hh, bias, input, hidden }
    }
}

impl<T: Float> RecurrentCell<T> for RnnCell<T> {
    fn input_size(&self) -> usize {
        self.input
    }
    fn hidden_size(&self) -> usize {
        self.hidden
    }
    fn init_state(&self, batch: usize) -> Vec<Tensor<T>> {
        vec![Tensor::zeros(&[batch, self.hidden])]
    }
    fn step(&self, x: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        let xp = self.project_inputs(x).unwrap();
        self.step_projected(&xp, state)
    }
    fn name(&self) -> &'static str {
        "rnn"
    }
    fn project_inputs(&self, xs: &Tensor<T>) -> Option<Tensor<T>> {
        Some(xs.affine(&self.w_ih.get(), &self.bias.get()))
    }
    fn step_projected(&self, xp: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        vec![xp.add(&state[0].matmul(&self.w_hh.get())).tanh()]
    }
}

// ------------------------------------------------------------------------------------- LSTM

/// LSTM cell, optionally with peepholes exactly as in [CAML](crate#references) Table 1 (Gers et al.):
///
/// ```text
/// a_t = x_t·W_ih + h_{t−1}·W_hh + b                    (all four gates, fused; order i, f, g, o)
/// i_t = σ(a_i + p_i ⊙ c_{t−1})                          input gate   (peephole from c_{t−1})
/// f_t = σ(a_f + p_f ⊙ c_{t−1})                          forget gate  (peephole from c_{t−1})
/// g_t = tanh(a_g)                                        block input  (no peephole)
/// c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t
/// o_t = σ(a_o + p_o ⊙ c_t)                              output gate  (peephole from the NEW c_t)
/// h_t = o_t ⊙ tanh(c_t)
/// ```
///
/// The peephole weights `p_i, p_f, p_o ∈ ℝᴴ` are diagonal (elementwise), as in the seed; with
/// `peephole = false` the `p ⊙ c` terms are absent and this is the standard (PyTorch) LSTM.
/// State `[h, c]`, both `[B, H]`; output `h`.
///
/// Init: `W_ih`, `W_hh` Xavier-uniform per gate block; `b` zero except the forget-gate block,
/// which is 1.0 ([White](crate#references) §2.3.3 "Biasing the forget gate"); peepholes `U(−1/√H, 1/√H)`.
/// Parameters: `{prefix}.w_ih [in, 4H]`, `{prefix}.w_hh [H, 4H]`, `{prefix}.bias [4H]`, and
/// with peepholes `{prefix}.p_i`, `{prefix}.p_f`, `{prefix}.p_o` `[H]`.
pub struct LstmCell<T: Float> {
    /// `[in, 4H]`, gate blocks `i, f, g, o`.
    pub w_ih: Param<T>,
    /// `[H, 4H]`.
    pub w_hh: Param<T>,
    /// `[4H]`.
    pub bias: Param<T>,
    /// `[p_i, p_f, p_o]`, each `[H]`, if the cell has peepholes.
    pub peephole: Option<[Param<T>; 3]>,
    input: usize,
    hidden: usize,
}

impl<T: Float> LstmCell<T> {
    /// A new cell; `peephole` adds the diagonal peephole connections.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, input: usize, hidden: usize, peephole: bool, rng: &mut Rng) -> Self {
        let h = hidden;
        let w_ih = store.add(&param_name(prefix, "w_ih"), group, gate_weight(input, h, 4, rng));
        let w_hh = store.add(&param_name(prefix, "w_hh"), group, gate_weight(h, h, 4, rng));
        let b: Vec<T> = (0..4 * h).map(|k| if (h..2 * h).contains(&k) { T::ONE } else { T::ZERO }).collect();
        let bias = store.add(&param_name(prefix, "bias"), group, Tensor::from_vec(b, &[4 * h]));
        let a = 1.0 / (h.max(1) as f64).sqrt();
        let peephole = peephole.then(|| {
            ["p_i", "p_f", "p_o"].map(|n| store.add(&param_name(prefix, n), group, init::uniform(&[h], -a, a, rng)))
        });
        LstmCell { w_ih, w_hh, bias, peephole, input, hidden }
    }
    /// Whether the cell has peepholes.
    pub fn has_peephole(&self) -> bool {
        self.peephole.is_some()
    }
}

impl<T: Float> RecurrentCell<T> for LstmCell<T> {
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
        let xp = self.project_inputs(x).unwrap();
        self.step_projected(&xp, state)
    }
    fn name(&self) -> &'static str {
        "lstm"
    }
    fn project_inputs(&self, xs: &Tensor<T>) -> Option<Tensor<T>> {
        Some(xs.affine(&self.w_ih.get(), &self.bias.get()))
    }
    /// One fused op per step ([`Tensor::lstm_cell`]); [`LstmCell::step_projected_composed`]
    /// is the same step composed of single ops.
    fn step_projected(&self, xp: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        let hs = self.hidden;
        let peep = self.peephole.as_ref().map(|p| p.each_ref().map(|q| q.get()));
        let hc = Tensor::lstm_cell(xp, &state[0], &state[1], &self.w_hh.get(), peep.as_ref().map(|p| p.each_ref()));
        vec![hc.narrow(1, 0, hs), hc.narrow(1, hs, hs)]
    }
    /// The whole sequence as one fused op ([`Tensor::lstm_sequence`]: the recurrent weight is
    /// packed once for all steps, and backward is one node). The per-step states are outputs
    /// of that node: a gradient retained on one of them is only its downstream part; see
    /// [`with_stepwise_recurrence`] for the total ∂L/∂h_t.
    fn run_projected_stacked(&self, xp: &Tensor<T>, state: &[Tensor<T>], keep: Option<Rc<Vec<bool>>>) -> Option<Tensor<T>> {
        let peep = self.peephole.as_ref().map(|p| p.each_ref().map(|q| q.get()));
        Some(Tensor::lstm_sequence(xp, &state[0], &state[1], &self.w_hh.get(), peep.as_ref().map(|p| p.each_ref()), keep))
    }
}

impl<T: Float> LstmCell<T> {
    /// [`RecurrentCell::step_projected`] composed of single ops (matmul, narrows, sigmoids, …):
    /// the reference the fused step is tested against.
    pub fn step_projected_composed(&self, xp: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        let hs = self.hidden;
        let (h, c) = (&state[0], &state[1]);
        let a = xp.add(&h.matmul(&self.w_hh.get()));
        let mut ai = a.narrow(1, 0, hs);
        let mut af = a.narrow(1, hs, hs);
        let ag = a.narrow(1, 2 * hs, hs);
        let mut ao = a.narrow(1, 3 * hs, hs);
        if let Some([pi, pf, _]) = &self.peephole {
            ai = ai.add(&c.mul(&pi.get()));
            af = af.add(&c.mul(&pf.get()));
        }
        let (i, f, g) = (ai.sigmoid(), af.sigmoid(), ag.tanh());
        let c_new = f.mul(c).add(&i.mul(&g));
        if let Some([_, _, po]) = &self.peephole {
            ao = ao.add(&c_new.mul(&po.get()));
        }
        let h_new = ao.sigmoid().mul(&c_new.tanh());
        vec![h_new, c_new]
    }
}

// -------------------------------------------------------------------------------------- GRU

/// Where a [`GruCell`] applies its reset gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GruVariant {
    /// `n_t = tanh(x_t·W_in + b_n + (r_t ⊙ h_{t−1})·W_hn)`: the reset gate multiplies the state
    /// **before** the recurrent matmul. This is the form of both seeds — [CAML](crate#references) Table 1
    /// (`c̄_t = tanh(W x_t + U(r ⊙ c_{t−1}))`) and [Tixier](crate#references) eq. 12 — and of Cho et al. 2014 as
    /// restated by Chung et al. The default.
    ResetBeforeMatmul,
    /// `n_t = tanh(x_t·W_in + b_n + r_t ⊙ (h_{t−1}·W_hn + b_hn))`: the reset gate multiplies
    /// **after** the matmul (cuDNN / PyTorch; [Tixier](crate#references) fn. 13 attributes it to the original
    /// paper). Adds a bias `b_hn [H]` inside the reset.
    ResetAfterMatmul,
}

/// GRU cell ([CAML](crate#references) Table 1, [Tixier](crate#references) §6.3):
///
/// ```text
/// r_t = σ(x_t·W_ir + h_{t−1}·W_hr + b_r)                    reset gate
/// z_t = σ(x_t·W_iz + h_{t−1}·W_hz + b_z)                    update gate
/// n_t = tanh(x_t·W_in + (r_t ⊙ h_{t−1})·W_hn + b_n)         candidate ([`GruVariant::ResetBeforeMatmul`])
/// h_t = z_t ⊙ h_{t−1} + (1 − z_t) ⊙ n_t
/// ```
///
/// (`z_t` keeps the old state, as in both seeds and PyTorch.) The seeds' GRU has no biases
/// and [CAML](crate#references) adds an output map `y_t = h(W_y c_t + b_y)`; we keep the biases (they can be
/// frozen at zero) and leave any output map to a following [`super::Linear`]. State `[h]`.
///
/// Parameters: `{prefix}.w_ih [in, 3H]` (blocks `r, z, n`), `{prefix}.w_hh [H, 2H]`
/// (blocks `r, z`), `{prefix}.w_hn [H, H]`, `{prefix}.bias [3H]`, and for
/// [`GruVariant::ResetAfterMatmul`] `{prefix}.b_hn [H]`. Weights Xavier-uniform, biases zero.
pub struct GruCell<T: Float> {
    /// `[in, 3H]`, blocks `r, z, n`.
    pub w_ih: Param<T>,
    /// `[H, 2H]`, blocks `r, z`.
    pub w_hh: Param<T>,
    /// `[H, H]`: the recurrent weight of the candidate.
    pub w_hn: Param<T>,
    /// `[3H]`.
    pub bias: Param<T>,
    /// `[H]`, only for [`GruVariant::ResetAfterMatmul`].
    pub b_hn: Option<Param<T>>,
    variant: GruVariant,
    input: usize,
    hidden: usize,
}

impl<T: Float> GruCell<T> {
    /// A new cell of the given variant.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, input: usize, hidden: usize, variant: GruVariant, rng: &mut Rng) -> Self {
        let h = hidden;
        let w_ih = store.add(&param_name(prefix, "w_ih"), group, gate_weight(input, h, 3, rng));
        let w_hh = store.add(&param_name(prefix, "w_hh"), group, gate_weight(h, h, 2, rng));
        let w_hn = store.add(&param_name(prefix, "w_hn"), group, gate_weight(h, h, 1, rng));
        let bias = store.add(&param_name(prefix, "bias"), group, init::zeros(&[3 * h]));
        let b_hn = (variant == GruVariant::ResetAfterMatmul).then(|| store.add(&param_name(prefix, "b_hn"), group, init::zeros(&[h])));
        GruCell { w_ih, w_hh, w_hn, bias, b_hn, variant, input, hidden }
    }
    /// The reset-gate placement.
    pub fn variant(&self) -> GruVariant {
        self.variant
    }
}

impl<T: Float> RecurrentCell<T> for GruCell<T> {
    fn input_size(&self) -> usize {
        self.input
    }
    fn hidden_size(&self) -> usize {
        self.hidden
    }
    fn init_state(&self, batch: usize) -> Vec<Tensor<T>> {
        vec![Tensor::zeros(&[batch, self.hidden])]
    }
    fn step(&self, x: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        let xp = self.project_inputs(x).unwrap();
        self.step_projected(&xp, state)
    }
    fn name(&self) -> &'static str {
        "gru"
    }
    fn project_inputs(&self, xs: &Tensor<T>) -> Option<Tensor<T>> {
        Some(xs.affine(&self.w_ih.get(), &self.bias.get()))
    }
    /// One fused op per step ([`Tensor::gru_cell`]); [`GruCell::step_projected_composed`] is
    /// the same step composed of single ops.
    fn step_projected(&self, xp: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        let b_hn = match self.variant {
            GruVariant::ResetBeforeMatmul => None,
            GruVariant::ResetAfterMatmul => Some(self.b_hn.as_ref().expect("GRU reset-after needs b_hn").get()),
        };
        vec![Tensor::gru_cell(xp, &state[0], &self.w_hh.get(), &self.w_hn.get(), b_hn.as_ref())]
    }
    /// The whole sequence as one fused op ([`Tensor::gru_sequence`]: both recurrent weights
    /// packed once for all steps, backward one node). As for the LSTM, the per-step states are
    /// outputs of that node; see [`with_stepwise_recurrence`] for the total ∂L/∂h_t.
    fn run_projected_stacked(&self, xp: &Tensor<T>, state: &[Tensor<T>], keep: Option<Rc<Vec<bool>>>) -> Option<Tensor<T>> {
        let b_hn = self.b_hn.as_ref().map(|p| p.get());
        Some(Tensor::gru_sequence(xp, &state[0], &self.w_hh.get(), &self.w_hn.get(), b_hn.as_ref(), keep))
    }
}

impl<T: Float> GruCell<T> {
    /// [`RecurrentCell::step_projected`] composed of single ops: the reference the fused step is
    /// tested against.
    pub fn step_projected_composed(&self, xp: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        let hs = self.hidden;
        let h = &state[0];
        let rz = xp.narrow(1, 0, 2 * hs).add(&h.matmul(&self.w_hh.get())).sigmoid();
        let (r, z) = (rz.narrow(1, 0, hs), rz.narrow(1, hs, hs));
        let xn = xp.narrow(1, 2 * hs, hs);
        let n = match self.variant {
            GruVariant::ResetBeforeMatmul => xn.add(&r.mul(h).matmul(&self.w_hn.get())),
            GruVariant::ResetAfterMatmul => {
                let hn = h.matmul(&self.w_hn.get()).add(&self.b_hn.as_ref().expect("GRU reset-after needs b_hn").get());
                xn.add(&r.mul(&hn))
            }
        }
        .tanh();
        // z ⊙ h + (1 − z) ⊙ n = n + z ⊙ (h − n)
        vec![n.add(&z.mul(&h.sub(&n)))]
    }
}

// ----------------------------------------------------------------------------------- runners

/// Per-row keep mask `[B, width]` (row `b` true iff `keep[b]`) for a `[B, ..]` tensor.
fn row_mask(keep: &[bool], shape: &[usize]) -> Vec<bool> {
    let per = shape.iter().skip(1).product::<usize>();
    keep.iter().flat_map(|&k| std::iter::repeat(k).take(per)).collect()
}

/// State after a step with masking: rows whose sequence has ended keep `old`.
fn masked_state<T: Float>(new: Vec<Tensor<T>>, old: &[Tensor<T>], keep: Option<&[bool]>) -> Vec<Tensor<T>> {
    match keep {
        Some(k) if !k.iter().all(|&v| v) => new
            .iter()
            .zip(old)
            .map(|(n, o)| {
                let m = row_mask(k, n.shape());
                Tensor::where_(&m, n.shape(), n, o)
            })
            .collect(),
        _ => new,
    }
}

/// Output with masking: rows whose sequence has ended are zero.
fn masked_output<T: Float>(out: Tensor<T>, keep: Option<&[bool]>) -> Tensor<T> {
    match keep {
        Some(k) if !k.iter().all(|&v| v) => {
            let m = row_mask(k, out.shape());
            Tensor::where_(&m, out.shape(), &out, &Tensor::zeros(out.shape()))
        }
        _ => out,
    }
}

#[track_caller]
fn check_lengths(lengths: Option<&[usize]>, batch: usize, time: usize) {
    if let Some(l) = lengths {
        assert!(l.len() == batch, "run_sequence: {} lengths for a batch of {batch}", l.len());
        assert!(l.iter().all(|&n| n <= time), "run_sequence: lengths {l:?} exceed the {time} time steps");
    }
}

fn keep_at(lengths: Option<&[usize]>, t: usize) -> Option<Vec<bool>> {
    lengths.map(|l| l.iter().map(|&n| t < n).collect())
}

/// Runs `cell` over per-step inputs `xs[t] : [B, in]` from `init` (the zero state if `None`).
///
/// Returns the output at every step (`[B, H]` each) and the final state. With `lengths`
/// (one per batch row, each `≤ xs.len()`), sequence `b` only runs its first `lengths[b]` steps:
/// past its end its state is carried unchanged (via `where_`, so no gradient flows through
/// the padding) and its outputs are zero. The final state is then each sequence's state at
/// its own last step.
#[track_caller]
pub fn run_sequence<T: Float, C: RecurrentCell<T> + ?Sized>(
    cell: &C,
    xs: &[Tensor<T>],
    init: Option<&[Tensor<T>]>,
    lengths: Option<&[usize]>,
) -> (Vec<Tensor<T>>, Vec<Tensor<T>>) {
    assert!(!xs.is_empty(), "run_sequence: empty sequence");
    let batch = xs[0].dim(0);
    check_lengths(lengths, batch, xs.len());
    let mut state = init.map(|s| s.to_vec()).unwrap_or_else(|| cell.init_state(batch));
    let mut outs = Vec::with_capacity(xs.len());
    for (t, x) in xs.iter().enumerate() {
        let keep = keep_at(lengths, t);
        let new = cell.step(x, &state);
        state = masked_state(new, &state, keep.as_deref());
        outs.push(masked_output(cell.output(&state), keep.as_deref()));
    }
    (outs, state)
}

/// Runs `cell` over a batch-major sequence `xs [B, T, in]`; otherwise as [`run_sequence`].
///
/// If the cell implements [`RecurrentCell::project_inputs`], the input projections of all
/// steps and gates are computed first with a single `[B·T, in] × [in, G]` matmul.
#[track_caller]
pub fn run_sequence_batch<T: Float, C: RecurrentCell<T> + ?Sized>(
    cell: &C,
    xs: &Tensor<T>,
    init: Option<&[Tensor<T>]>,
    lengths: Option<&[usize]>,
) -> (Vec<Tensor<T>>, Vec<Tensor<T>>) {
    run_batch(cell, xs, init, lengths, true)
}

/// As [`run_sequence_batch`], except that past a sequence's end its outputs are not zeroed:
/// each step's output is `cell.output` of the (carried) state, so a finished row repeats its
/// last output. For LSTM and GRU that output *is* the state the loss depends on, so its
/// gradient is the true ‖∂L/∂h_t‖ (the per-time-step gradient flow `chi train` records),
/// while zeroed copies would sit off the path to the loss.
#[track_caller]
pub fn run_sequence_batch_held<T: Float, C: RecurrentCell<T> + ?Sized>(
    cell: &C,
    xs: &Tensor<T>,
    init: Option<&[Tensor<T>]>,
    lengths: Option<&[usize]>,
) -> (Vec<Tensor<T>>, Vec<Tensor<T>>) {
    run_batch(cell, xs, init, lengths, false)
}

/// The loop behind [`run_sequence_batch`] (`zero_finished = true`) and
/// [`run_sequence_batch_held`].
#[track_caller]
fn run_batch<T: Float, C: RecurrentCell<T> + ?Sized>(
    cell: &C,
    xs: &Tensor<T>,
    init: Option<&[Tensor<T>]>,
    lengths: Option<&[usize]>,
    zero_finished: bool,
) -> (Vec<Tensor<T>>, Vec<Tensor<T>>) {
    let (batch, time) = check_batch_input(cell, xs, init, lengths);
    let projected = cell.project_inputs(xs);
    if let Some(xp) = &projected {
        // Cells with a whole-sequence op (LSTM) run it: one node, weights packed once.
        let init_state = init.map(|s| s.to_vec()).unwrap_or_else(|| cell.init_state(batch));
        let whole = if stepwise_recurrence() { None } else { cell.run_projected(xp, &init_state, keep_all(lengths, time)) };
        if let Some(states) = whole {
            let outs = states
                .iter()
                .enumerate()
                .map(|(t, st)| {
                    let out = cell.output(st);
                    if zero_finished { masked_output(out, keep_at(lengths, t).as_deref()) } else { out }
                })
                .collect();
            return (outs, states.into_iter().last().expect("time > 0"));
        }
    }
    step_batch(cell, xs, projected.as_ref(), init, lengths, zero_finished)
}

/// The shape checks of the batch-major runners, naming the cell: the input's features, the
/// initial state's tensors and their shapes, the lengths; returns `(batch, time)`.
#[track_caller]
fn check_batch_input<T: Float, C: RecurrentCell<T> + ?Sized>(cell: &C, xs: &Tensor<T>, init: Option<&[Tensor<T>]>, lengths: Option<&[usize]>) -> (usize, usize) {
    assert!(xs.rank() == 3, "run_sequence_batch: input must be [batch, time, in], got {:?}", xs.shape());
    let (batch, time) = (xs.dim(0), xs.dim(1));
    assert!(time > 0, "run_sequence_batch: empty sequence");
    let name = cell.name();
    assert!(xs.dim(2) == cell.input_size(), "run_sequence_batch: input {:?} has {} features per step, the {name} cell reads {}", xs.shape(), xs.dim(2), cell.input_size());
    if let Some(init) = init {
        let want = cell.init_state(batch);
        let shapes = |v: &[Tensor<T>]| v.iter().map(|t| t.shape().to_vec()).collect::<Vec<_>>();
        assert!(
            init.len() == want.len() && init.iter().zip(&want).all(|(a, b)| a.shape() == b.shape()),
            "run_sequence_batch: the initial state of the {name} cell must be {:?} (batch {batch}, hidden {}), got {:?}",
            shapes(&want),
            cell.hidden_size(),
            shapes(init)
        );
    }
    check_lengths(lengths, batch, time);
    (batch, time)
}

/// The step flags of a whole-sequence op, `keep[t·B + b] = t < lengths[b]` (`None` without
/// lengths).
fn keep_all(lengths: Option<&[usize]>, time: usize) -> Option<Rc<Vec<bool>>> {
    lengths.map(|l| Rc::new((0..time).flat_map(|t| l.iter().map(move |&n| t < n)).collect::<Vec<bool>>()))
}

/// The runners' loop over time, one step (one node or more) at a time, from the projected
/// inputs when the cell has them.
#[track_caller]
fn step_batch<T: Float, C: RecurrentCell<T> + ?Sized>(
    cell: &C,
    xs: &Tensor<T>,
    projected: Option<&Tensor<T>>,
    init: Option<&[Tensor<T>]>,
    lengths: Option<&[usize]>,
    zero_finished: bool,
) -> (Vec<Tensor<T>>, Vec<Tensor<T>>) {
    let (batch, time) = (xs.dim(0), xs.dim(1));
    let src = projected.unwrap_or(xs).permute(&[1, 0, 2]); // [T, B, G]
    let g = src.dim(2);
    let mut state = init.map(|s| s.to_vec()).unwrap_or_else(|| cell.init_state(batch));
    let mut outs = Vec::with_capacity(time);
    for t in 0..time {
        let keep = keep_at(lengths, t);
        let x = src.narrow(0, t, 1).reshape(&[batch, g]);
        let new = if projected.is_some() { cell.step_projected(&x, &state) } else { cell.step(&x, &state) };
        state = masked_state(new, &state, keep.as_deref());
        let out = cell.output(&state);
        outs.push(if zero_finished { masked_output(out, keep.as_deref()) } else { out });
    }
    (outs, state)
}

/// The per-step states of a whole-sequence op's time-major `[T, B, W]` result, each split into
/// the parts of `state` (by their widths).
pub(crate) fn unstack_states<T: Float>(y: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Vec<Tensor<T>>> {
    let (t, b, w) = (y.dim(0), y.dim(1), y.dim(2));
    (0..t).map(|i| split_state(&y.narrow(0, i, 1).reshape(&[b, w]), state)).collect()
}

/// A `[B, W]` row of states split into the parts of `state` (by their widths).
fn split_state<T: Float>(s: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>> {
    if state.len() == 1 {
        return vec![s.clone()];
    }
    let mut start = 0;
    state
        .iter()
        .map(|p| {
            let part = s.narrow(1, start, p.dim(1));
            start += p.dim(1);
            part
        })
        .collect()
}

/// [`run_sequence_batch`] with its outputs stacked as [`stack_outputs`] stacks them: the output
/// of every step in one `[B, T, H]` tensor (zero past each sequence's length), and the final
/// state. The same values and gradients; for a cell with a whole-sequence op
/// ([`RecurrentCell::run_projected_stacked`]) the outputs are read out of that op's time-major
/// states with two copies (the output columns, then batch-major order) instead of a narrow per
/// step and state part and a stack.
#[track_caller]
pub fn run_sequence_batch_stacked<T: Float, C: RecurrentCell<T> + ?Sized>(
    cell: &C,
    xs: &Tensor<T>,
    init: Option<&[Tensor<T>]>,
    lengths: Option<&[usize]>,
) -> (Tensor<T>, Vec<Tensor<T>>) {
    let (batch, time) = check_batch_input(cell, xs, init, lengths);
    let projected = cell.project_inputs(xs);
    if let Some(xp) = &projected {
        let init_state = init.map(|s| s.to_vec()).unwrap_or_else(|| cell.init_state(batch));
        let whole = if stepwise_recurrence() { None } else { cell.run_projected_stacked(xp, &init_state, keep_all(lengths, time)) };
        if let Some(y) = whole {
            let h = init_state[0].dim(1);
            let out = if init_state.len() == 1 { y.clone() } else { y.narrow(2, 0, h) }.permute(&[1, 0, 2]);
            let out = match lengths {
                Some(l) if l.iter().any(|&n| n < time) => {
                    let m: Vec<bool> = l.iter().flat_map(|&n| (0..time).flat_map(move |t| std::iter::repeat_n(t < n, h))).collect();
                    Tensor::where_(&m, out.shape(), &out, &Tensor::zeros(out.shape()))
                }
                _ => out,
            };
            let last = y.narrow(0, time - 1, 1).reshape(&[batch, y.dim(2)]);
            return (out, split_state(&last, &init_state));
        }
    }
    let (outs, state) = step_batch(cell, xs, projected.as_ref(), init, lengths, true);
    (stack_outputs(&outs), state)
}

/// Stacks per-step outputs `[B, H]` into `[B, T, H]`.
pub fn stack_outputs<T: Float>(outs: &[Tensor<T>]) -> Tensor<T> {
    Tensor::stack(outs, 1)
}

/// Reverses each sequence of `x [B, T, D]` within its own length (padding stays in place):
/// `out[b, t] = x[b, len_b − 1 − t]` for `t < len_b`, else `x[b, t]`. An involution.
pub fn reverse_padded<T: Float>(x: &Tensor<T>, lengths: Option<&[usize]>) -> Tensor<T> {
    let Some(lengths) = lengths else { return x.flip(1) };
    let (b, t, d) = (x.dim(0), x.dim(1), x.dim(2));
    let mut idx = Vec::with_capacity(b * t * d);
    for (bi, &len) in lengths.iter().enumerate() {
        for ti in 0..t {
            let src = if ti < len { len - 1 - ti } else { ti };
            idx.extend((0..d).map(|k| (bi * t + src) * d + k));
        }
    }
    x.take(Rc::new(idx), &[b, t, d])
}

/// Outputs of a [`Bidirectional`] run.
pub struct BiOutput<T: Float> {
    /// `[B, T, 2H]`: `[h→_t ; h←_t]` per step (zero past each sequence's length).
    pub outputs: Tensor<T>,
    /// Final state of the forward cell (at each sequence's last step).
    pub fwd_state: Vec<Tensor<T>>,
    /// Final state of the backward cell (after reading each sequence back to its first step).
    pub bwd_state: Vec<Tensor<T>>,
}

/// Bidirectional RNN ([White](crate#references) §2.4.2, [Tixier](crate#references) eq. 15): two distinct cells, one reading each
/// sequence left to right, one right to left (within each sequence's own length), outputs
/// concatenated per step: `h_t = [h→_t ; h←_t]`. `xs [B, T, in]` → `[B, T, 2H]`.
pub struct Bidirectional<C> {
    /// The left-to-right cell.
    pub fwd: C,
    /// The right-to-left cell.
    pub bwd: C,
}

impl<C> Bidirectional<C> {
    /// Wraps two cells (build them with different parameter prefixes, e.g. `"enc.fwd"`, `"enc.bwd"`).
    pub fn new(fwd: C, bwd: C) -> Self {
        Bidirectional { fwd, bwd }
    }
    /// Runs both directions over `xs [B, T, in]` with optional per-sequence `lengths`.
    #[track_caller]
    pub fn forward<T: Float>(&self, xs: &Tensor<T>, lengths: Option<&[usize]>) -> BiOutput<T>
    where
        C: RecurrentCell<T>,
    {
        let (of, fwd_state) = run_sequence_batch_stacked(&self.fwd, xs, None, lengths);
        let xr = reverse_padded(xs, lengths);
        let (ob, bwd_state) = run_sequence_batch_stacked(&self.bwd, &xr, None, lengths);
        BiOutput { outputs: Tensor::concat(&[of, reverse_padded(&ob, lengths)], 2), fwd_state, bwd_state }
    }
}

// ------------------------------------------------------------------------ parameter access

// Recurrent cells are [`Parameterized`] but not `Module`s: a step takes and returns a state.
// Their state-dict names (`w_ih`, `w_hh`, `bias`, …) are chi's, not PyTorch's `weight_ih_l0`,
// and so is their layout (`[in, G·H]`).

impl<T: Float> Parameterized<T> for RnnCell<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("w_ih", &self.w_ih, Layout::Native);
        f("w_hh", &self.w_hh, Layout::Native);
        f("bias", &self.bias, Layout::Native);
    }
}

impl<T: Float> Parameterized<T> for LstmCell<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("w_ih", &self.w_ih, Layout::Native);
        f("w_hh", &self.w_hh, Layout::Native);
        f("bias", &self.bias, Layout::Native);
        if let Some([pi, pf, po]) = &self.peephole {
            f("p_i", pi, Layout::Native);
            f("p_f", pf, Layout::Native);
            f("p_o", po, Layout::Native);
        }
    }
}

impl<T: Float> Parameterized<T> for GruCell<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("w_ih", &self.w_ih, Layout::Native);
        f("w_hh", &self.w_hh, Layout::Native);
        f("w_hn", &self.w_hn, Layout::Native);
        f("bias", &self.bias, Layout::Native);
        if let Some(b) = &self.b_hn {
            f("b_hn", b, Layout::Native);
        }
    }
}

/// The two cells' parameters as `fwd.*` and `bwd.*`.
impl<T: Float, C: Parameterized<T>> Parameterized<T> for Bidirectional<C> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        visit_child("fwd", &self.fwd, f);
        visit_child("bwd", &self.bwd, f);
    }
}
