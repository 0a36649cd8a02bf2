//! `ca-rnn-synthetic` — [CAML] §4.4.1, the paper's validation task for recurrent cells.
//!
//! The model: token embedding → recurrent cell (LSTM, GRU or CA-RNN) → logistic regression on
//! the **cell state** after the last token. Training data, exactly as in the paper:
//! `{I, am, happy} → 1`, `{You, are, very, angry} → 0`, 100 iterations. Test data:
//! `{I, am, very, happy} → 1`, `{You, look, angry} → 0`. The paper reports the average
//! prediction error over 10 runs: LSTM 0.318, GRU 0.172, CA-RNN 0.126 (Fig. 13).
//!
//! Choices where the paper is silent (recorded in `results.json`):
//! * embedding and hidden size 8; embeddings `N(0, 1)`; the cells' own initialisations
//!   (LSTM forget bias 1, no peepholes; GRU reset-before-matmul, as in [CAML] Table 1; CA-RNN
//!   with the vector peephole `p_v`, [`CaRnnConfig::default`]);
//! * "cell state": LSTM `c_t`, CA-RNN `c_t` (Eq. 34), GRU `h_t` (its only state);
//! * an iteration is one Adagrad step (lr 0.1, the paper's optimiser elsewhere) on the mean
//!   binary cross-entropy of the two training sequences;
//! * "look" never occurs in training: it maps to an `<unk>` row whose embedding keeps its random
//!   initial value (it never receives a gradient);
//! * prediction error = |label − p| averaged over the two test sequences (p the logistic output),
//!   then over runs; we also report accuracy with the paper's 0.5 threshold.

use super::units::UnitData;
use super::util::{mean_curve, metric, write_curves};
use super::{Ctx, Report, Row};
use chi_ca::rnn::{CaRnnCell, CaRnnConfig};
use chi_nn::layers::{GruCell, GruVariant, LstmCell, RecurrentCell};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::trainer::Trainer;
use chi_nn::params::{init, Param, ParamStore};
use chi_autodiff::{no_grad, Rng, Tensor};

const TRAIN: [(&[&str], f64); 2] = [(&["I", "am", "happy"], 1.0), (&["You", "are", "very", "angry"], 0.0)];
const TEST: [(&[&str], f64); 2] = [(&["I", "am", "very", "happy"], 1.0), (&["You", "look", "angry"], 0.0)];
const VOCAB: [&str; 7] = ["I", "am", "happy", "You", "are", "very", "angry"];
const DIM: usize = 8;
const HIDDEN: usize = 8;
const LR: f64 = 0.1;

/// The three cells compared (the same choice `chi train` offers for its sequence models).
pub use crate::train::recurrent::CellKind;

/// The paper's average test prediction error for each cell (§4.4.1).
fn paper_error(kind: CellKind) -> f64 {
    match kind {
        CellKind::Lstm => 0.318,
        CellKind::Gru => 0.172,
        CellKind::CaRnn => 0.126,
    }
}

fn token_id(w: &str) -> usize {
    VOCAB.iter().position(|v| *v == w).unwrap_or(VOCAB.len())
}

/// The sequence classifier: embedding → cell → logistic on the final cell state.
struct Model {
    store: ParamStore<f64>,
    emb: Param<f64>,
    cell: Box<dyn RecurrentCell<f64>>,
    head_w: Param<f64>,
    head_b: Param<f64>,
}

impl Model {
    fn new(kind: CellKind, rng: &mut Rng) -> Model {
        let mut store = ParamStore::new();
        // Row VOCAB.len() is <unk>.
        let emb = store.add("emb", "emb", init::normal(&[VOCAB.len() + 1, DIM], 1.0, rng));
        let cell: Box<dyn RecurrentCell<f64>> = match kind {
            CellKind::Lstm => Box::new(LstmCell::new(&mut store, "cell", "cell", DIM, HIDDEN, false, rng)),
            CellKind::Gru => Box::new(GruCell::new(&mut store, "cell", "cell", DIM, HIDDEN, GruVariant::ResetBeforeMatmul, rng)),
            CellKind::CaRnn => Box::new(CaRnnCell::new(&mut store, "cell", DIM, HIDDEN, CaRnnConfig::default(), rng)),
        };
        let head_w = store.add("head.w", "head", init::xavier_uniform(&[HIDDEN, 1], HIDDEN, 1, 1.0, rng));
        let head_b = store.add("head.b", "head", init::zeros(&[1]));
        Model { store, emb, cell, head_w, head_b }
    }

    /// The logit for one token sequence, `[1, 1]`.
    fn logit(&self, words: &[&str]) -> Tensor<f64> {
        let ids: Vec<usize> = words.iter().map(|w| token_id(w)).collect();
        let xs = self.emb.get().embedding(&ids); // [T, DIM]
        let mut state = self.cell.init_state(1);
        for t in 0..ids.len() {
            state = self.cell.step(&xs.narrow(0, t, 1), &state);
        }
        // The cell state is the last element of every cell's state list ([h, c], [h], [y, c]).
        let c = state.last().expect("a cell state").clone();
        c.matmul(&self.head_w.get()).add(&self.head_b.get())
    }

    fn loss(&self, data: &[(&[&str], f64)]) -> Tensor<f64> {
        let losses: Vec<Tensor<f64>> = data
            .iter()
            .map(|(w, y)| self.logit(w).binary_cross_entropy_with_logits(&Tensor::full(&[1, 1], *y)))
            .collect();
        Tensor::stack(&losses, 0).mean()
    }

    /// `(prediction error, accuracy)` on `data`.
    fn evaluate(&self, data: &[(&[&str], f64)]) -> (f64, f64) {
        no_grad(|| {
            let mut err = 0.0;
            let mut correct = 0.0;
            for (w, y) in data {
                let p = self.logit(w).sigmoid().item();
                err += (y - p).abs();
                if (p > 0.5) == (*y > 0.5) {
                    correct += 1.0;
                }
            }
            (err / data.len() as f64, correct / data.len() as f64)
        })
    }
}

/// One run: returns (final test error, test accuracy, final train loss, loss curve, test-error curve).
pub fn run_once(kind: CellKind, iters: usize, seed: u64) -> Result<(f64, f64, f64, Vec<(f64, f64)>, Vec<(f64, f64)>), String> {
    let mut rng = Rng::new(seed);
    let m = Model::new(kind, &mut rng);
    let mut opt = Optimizer::new(OptimConfig::adagrad(LR));
    // Full batch: every step sees the whole training set; the test error is measured after
    // every step.
    let fit = Trainer::new(&m.store, &mut opt)
        .steps(iters as u64)
        .eval_every(1)
        .evaluate(|_| metric("test_error", m.evaluate(&TEST).0))
        .fit(std::iter::repeat(()), |()| m.loss(&TRAIN))?;
    let losses = fit.losses.iter().map(|&(s, l)| (s as f64, l)).collect();
    let errs = fit.eval_curve("test_error");
    let (err, acc) = m.evaluate(&TEST);
    let final_loss = no_grad(|| m.loss(&TRAIN).item());
    Ok((err, acc, final_loss, losses, errs))
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    // The task is tiny: the quick variant differs only in the number of runs.
    let iters = 100;
    let mut rep = Report::default();
    let mut loss_series = Vec::new();
    let mut err_series = Vec::new();
    let mut summary = Vec::new();
    let kinds = [CellKind::Lstm, CellKind::Gru, CellKind::CaRnn];
    ctx.plan_units(kinds.len() * ctx.runs);
    for kind in kinds {
        let (mut errs, mut accs, mut finals, mut lc, mut ec) = (vec![], vec![], vec![], vec![], vec![]);
        for r in 0..ctx.runs {
            let seed = ctx.run_seed(r);
            let config = format!("cell={} iters={iters} dim={DIM} hidden={HIDDEN} adagrad lr={LR} seed={seed}", kind.label());
            let (e, a, f, l, c) = ctx.unit(
                &format!("{}-run{r}", kind.label().to_lowercase()),
                &config,
                || {
                    let (e, a, f, l, c) = run_once(kind, iters, seed)?;
                    Ok(UnitData::new().with_scalar("test_error", e).with_scalar("test_accuracy", a).with_scalar("final_loss", f).with_curve("loss", &l).with_curve("test_error_curve", &c))
                },
                |d| Ok((d.scalar("test_error")?, d.scalar("test_accuracy")?, d.scalar("final_loss")?, d.curve("loss")?, d.curve("test_error_curve")?)),
            )?;
            errs.push(e);
            accs.push(a);
            finals.push(f);
            lc.push(l);
            ec.push(c);
        }
        ctx.log(&format!("{}: mean test error {:.3}", kind.label(), errs.iter().sum::<f64>() / errs.len() as f64));
        let row = Row::new("test prediction error", kind.label(), Some(paper_error(kind)), errs);
        summary.push((kind, row.mean()));
        rep.rows.push(row);
        rep.rows.push(Row::new("test accuracy (p > 0.5)", kind.label(), None, accs));
        rep.rows.push(Row::new("final training loss", kind.label(), None, finals));
        loss_series.push((kind.label().to_string(), mean_curve(&lc)));
        err_series.push((kind.label().to_string(), mean_curve(&ec)));
    }
    rep.files.extend(write_curves(ctx, "train_loss", "ca-rnn-synthetic: training loss (mean over runs)", "iteration", "BCE", true, &loss_series)?);
    rep.files.extend(write_curves(ctx, "test_error", "ca-rnn-synthetic: test prediction error (mean over runs)", "iteration", "|y - p|", false, &err_series)?);
    let best = summary.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|s| s.0).unwrap_or(CellKind::CaRnn);
    let order_paper = "CA-RNN < GRU < LSTM";
    let mut sorted = summary.clone();
    sorted.sort_by(|a, b| a.1.total_cmp(&b.1));
    let order_chi: Vec<&str> = sorted.iter().map(|s| s.0.label()).collect();
    rep.notes.push(format!(
        "test-error order: paper {order_paper}; chi {} ({}).",
        order_chi.join(" < "),
        if best == CellKind::CaRnn { "CA-RNN lowest, as in the paper" } else { "CA-RNN is NOT the lowest here: the paper's ranking does not reproduce with these choices" }
    ));
    rep.notes.push("the paper leaves sizes, initialisation and optimiser open; ours: dim 8, hidden 8, Adagrad lr 0.1, 'look' → untrained <unk> row".into());
    rep.config = vec![
        ("iterations".into(), iters.to_string()),
        ("embedding_dim".into(), DIM.to_string()),
        ("hidden".into(), HIDDEN.to_string()),
        ("optimizer".into(), format!("adagrad lr {LR}")),
    ];
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_fits_the_training_pair_and_is_deterministic() {
        for kind in [CellKind::Lstm, CellKind::Gru, CellKind::CaRnn] {
            let (e1, _, f1, l, _) = run_once(kind, 100, 7).unwrap();
            let (e2, _, f2, _, _) = run_once(kind, 100, 7).unwrap();
            assert_eq!((e1, f1), (e2, f2), "{kind:?}: same seed, same result");
            assert!(e1.is_finite() && (0.0..=1.0).contains(&e1));
            assert!(f1 < l[0].1, "{kind:?}: training loss did not fall ({} → {f1})", l[0].1);
        }
    }

    #[test]
    fn unseen_word_maps_to_unk() {
        assert_eq!(token_id("look"), VOCAB.len());
        assert_eq!(token_id("happy"), 2);
    }
}
