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
use super::options::{num, parsed, positive_rate, OptionSpec};
use super::{judge, Ctx, Report, Row};
use chi_ca::rnn::{CaRnnCell, CaRnnConfig, Peephole};
use chi_nn::layers::{GruCell, GruVariant, LstmCell, RecurrentCell};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::trainer::Trainer;
use chi_nn::params::{init, Param, ParamStore};
use chi_autodiff::{no_grad, Rng, Tensor};

const TRAIN: [(&[&str], f64); 2] = [(&["I", "am", "happy"], 1.0), (&["You", "are", "very", "angry"], 0.0)];
const TEST: [(&[&str], f64); 2] = [(&["I", "am", "very", "happy"], 1.0), (&["You", "look", "angry"], 0.0)];
const VOCAB: [&str; 7] = ["I", "am", "happy", "You", "are", "very", "angry"];

/// The optimiser of one configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Opt {
    /// Adagrad (the paper's optimiser in its other experiments).
    Adagrad,
    /// Adam (β 0.9 / 0.999).
    Adam,
    /// Plain gradient descent.
    Sgd,
}

impl Opt {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Opt::Adagrad => "adagrad",
            Opt::Adam => "adam",
            Opt::Sgd => "sgd",
        }
    }
    fn config(self, lr: f64) -> OptimConfig {
        match self {
            Opt::Adagrad => OptimConfig::adagrad(lr),
            Opt::Adam => OptimConfig::adam(lr),
            Opt::Sgd => OptimConfig::sgd(lr),
        }
    }
}

/// Every choice the paper leaves open for §4.4.1; [`Setup::default`] is the one
/// `ca-rnn-synthetic` uses, `ca-rnn-sweep` varies them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    /// Embedding size.
    pub embed: usize,
    /// Hidden (and cell-state) size.
    pub hidden: usize,
    /// Optimiser.
    pub opt: Opt,
    /// Learning rate.
    pub lr: f64,
    /// Initialisation scale `s`: embeddings are `N(0, s²)` and every randomly initialised weight
    /// of the cell is multiplied by `s` (constants — biases, the LSTM forget bias, the vector
    /// peephole's initial 1 — keep their values).
    pub init_scale: f64,
    /// CA-RNN peephole form (ignored by LSTM and GRU).
    pub peephole: Peephole,
}

impl Default for Setup {
    fn default() -> Self {
        Setup { embed: 8, hidden: 8, opt: Opt::Adagrad, lr: 0.1, init_scale: 1.0, peephole: Peephole::Vector }
    }
}

impl Setup {
    /// A short label, e.g. `d8 h8 adagrad lr0.1 s1 peephole vector`.
    pub fn label(&self) -> String {
        let p = match self.peephole {
            Peephole::Vector => "vector",
            Peephole::Matrix => "matrix",
        };
        format!("{} peephole {p}", self.base_label())
    }
    /// The label without the peephole (what LSTM and GRU depend on), e.g. `d8 h8 adagrad lr0.1 s1`.
    pub fn base_label(&self) -> String {
        format!("d{} h{} {} lr{} s{}", self.embed, self.hidden, self.opt.name(), num(self.lr), num(self.init_scale))
    }
}

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
    fn new(kind: CellKind, setup: &Setup, rng: &mut Rng) -> Model {
        let (dim, hidden) = (setup.embed, setup.hidden);
        let mut store = ParamStore::new();
        // Row VOCAB.len() is <unk>.
        let emb = store.add("emb", "emb", init::normal(&[VOCAB.len() + 1, dim], setup.init_scale, rng));
        let cell: Box<dyn RecurrentCell<f64>> = match kind {
            CellKind::Lstm => Box::new(LstmCell::new(&mut store, "cell", "cell", dim, hidden, false, rng)),
            CellKind::Gru => Box::new(GruCell::new(&mut store, "cell", "cell", dim, hidden, GruVariant::ResetBeforeMatmul, rng)),
            CellKind::CaRnn => Box::new(CaRnnCell::new(&mut store, "cell", dim, hidden, CaRnnConfig { peephole: setup.peephole, ..CaRnnConfig::default() }, rng)),
        };
        if setup.init_scale != 1.0 {
            // Weights drawn at random are scaled; biases (LSTM and GRU `bias`, CA-RNN `b_*`,
            // including the LSTM forget bias 1) and constant-initialised tensors (the vector
            // peephole's 1) are structural and kept.
            for p in store.params().iter().filter(|p| p.name().starts_with("cell.")) {
                let name = p.name();
                let leaf = name.rsplit('.').next().unwrap_or("");
                let v = p.to_vec();
                if !leaf.starts_with('b') && v.iter().any(|x| *x != v[0]) {
                    p.set_values(v.iter().map(|x| x * setup.init_scale).collect());
                }
            }
        }
        let head_w = store.add("head.w", "head", init::xavier_uniform(&[hidden, 1], hidden, 1, 1.0, rng));
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
pub fn run_once(kind: CellKind, setup: &Setup, iters: usize, seed: u64) -> Result<(f64, f64, f64, Vec<(f64, f64)>, Vec<(f64, f64)>), String> {
    if setup.embed == 0 || setup.hidden == 0 || !(setup.lr > 0.0) || !(setup.init_scale > 0.0) {
        return Err(format!("ca-rnn setup {}: sizes, learning rate and initialisation scale must be positive", setup.label()));
    }
    let mut rng = Rng::new(seed);
    let m = Model::new(kind, setup, &mut rng);
    let mut opt = Optimizer::new(setup.opt.config(setup.lr));
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
    let iters = ctx.option("iters", 100usize, "a number of iterations from 1 to 100000", |n| (1..=100_000).contains(&n))?;
    let setup = setup_options(ctx)?;
    let mut rep = Report::default();
    let mut loss_series = Vec::new();
    let mut err_series = Vec::new();
    let kinds = [CellKind::Lstm, CellKind::Gru, CellKind::CaRnn];
    ctx.plan_units(kinds.len() * ctx.runs);
    for kind in kinds {
        let (mut errs, mut accs, mut finals, mut lc, mut ec) = (vec![], vec![], vec![], vec![], vec![]);
        for r in 0..ctx.runs {
            let seed = ctx.run_seed(r);
            let config = format!("cell={} iters={iters} {} seed={seed}", kind.label(), setup.label());
            let (e, a, f, l, c) = ctx.unit(
                &format!("{}-run{r}", kind.label().to_lowercase()),
                &config,
                || {
                    let (e, a, f, l, c) = run_once(kind, &setup, iters, seed)?;
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
        rep.rows.push(Row::new(ERROR_METRIC, kind.label(), Some(paper_error(kind)), errs));
        rep.rows.push(Row::new("test accuracy (p > 0.5)", kind.label(), None, accs));
        rep.rows.push(Row::new("final training loss", kind.label(), None, finals));
        loss_series.push((kind.label().to_string(), mean_curve(&lc)));
        err_series.push((kind.label().to_string(), mean_curve(&ec)));
    }
    rep.files.extend(write_curves(ctx, "train_loss", "ca-rnn-synthetic: training loss (mean over runs)", "iteration", "BCE", true, &loss_series)?);
    rep.files.extend(write_curves(ctx, "test_error", "ca-rnn-synthetic: test prediction error (mean over runs)", "iteration", "|y - p|", false, &err_series)?);
    judge::interval_notes(&mut rep, &[ERROR_METRIC]);
    let err = |k: CellKind| judge::values(&rep, ERROR_METRIC, k.label()).map(<[f64]>::to_vec);
    let (lstm, gru, ca) = (err(CellKind::Lstm)?, err(CellKind::Gru)?, err(CellKind::CaRnn)?);
    rep.notes.push(judge::judge(ERROR_METRIC, "CA-RNN", &ca, "GRU", &gru, true));
    rep.notes.push(judge::judge(ERROR_METRIC, "GRU", &gru, "LSTM", &lstm, true));
    rep.notes.push(judge::judge(ERROR_METRIC, "CA-RNN", &ca, "LSTM", &lstm, true));
    rep.notes.push(format!(
        "the paper's ranking CA-RNN < GRU < LSTM as a whole: {} (both adjacent claims must hold); the paper's own gaps are 0.046 (CA-RNN vs GRU) and 0.146 (GRU vs LSTM)",
        ranking(&ca, &gru, &lstm).words(ctx.runs)
    ));
    let peephole = match setup.peephole {
        Peephole::Vector => "vector",
        Peephole::Matrix => "matrix",
    };
    rep.notes.push(format!(
        "the paper leaves sizes, initialisation and optimiser open; this run: dim {}, hidden {}, {} lr {}, embeddings N(0, {}²), {peephole} peephole, {iters} iterations, 'look' → untrained <unk> row (defaults dim 8, hidden 8, adagrad lr 0.1, scale 1, vector; `--set` changes them, ca-rnn-sweep varies them)",
        setup.embed,
        setup.hidden,
        setup.opt.name(),
        num(setup.lr),
        num(setup.init_scale)
    ));
    rep.config = vec![
        ("iterations".into(), iters.to_string()),
        ("embedding_dim".into(), setup.embed.to_string()),
        ("hidden".into(), setup.hidden.to_string()),
        ("optimizer".into(), format!("{} lr {}", setup.opt.name(), num(setup.lr))),
        ("init_scale".into(), num(setup.init_scale)),
        ("peephole".into(), peephole.into()),
    ];
    Ok(rep)
}

/// The metric the paper reports.
pub const ERROR_METRIC: &str = "test prediction error";

/// The paper's ranking CA-RNN < GRU < LSTM judged over paired runs: it holds when both adjacent
/// claims hold, does not hold when either is significantly reversed, and is not
/// distinguishable otherwise.
pub fn ranking(ca: &[f64], gru: &[f64], lstm: &[f64]) -> judge::Outcome {
    use judge::Outcome::*;
    match (judge::outcome(ca, gru, true), judge::outcome(gru, lstm, true)) {
        (Holds, Holds) => Holds,
        (DoesNotHold, _) | (_, DoesNotHold) => DoesNotHold,
        _ => NotDistinguishable,
    }
}

/// `ca-rnn-sweep`: the §4.4.1 task over a grid of the choices the paper leaves open — sizes,
/// optimiser and learning rate, initialisation scale, and the CA-RNN peephole form (the matrix
/// variant the paper says fails this test). Every configuration runs all cells on the same
/// seeds, so each judgement of the ranking is a paired one.
pub fn run_sweep(ctx: &Ctx) -> Result<Report, String> {
    let iters = 100;
    let grid = sweep_grid_options(ctx)?;
    let mut rep = Report::default();
    // LSTM and GRU do not depend on the peephole: they run once per base configuration.
    let mut bases: Vec<Setup> = Vec::new();
    for s in &grid {
        let b = Setup { peephole: Peephole::Vector, ..*s };
        if !bases.contains(&b) {
            bases.push(b);
        }
    }
    ctx.plan_units(bases.len() * 2 + grid.len());
    let errors = |kind: CellKind, s: &Setup| -> Result<Vec<f64>, String> {
        let key = format!("{}-{}", kind.name(), s.label().replace([' ', '.'], "_"));
        let config = format!("cell={} iters={iters} {} runs={} seed={}", kind.label(), s.label(), ctx.runs, ctx.seed);
        ctx.unit(
            &key,
            &config,
            || {
                let v = (0..ctx.runs).map(|r| run_once(kind, s, iters, ctx.run_seed(r)).map(|o| o.0)).collect::<Result<Vec<f64>, String>>()?;
                Ok(UnitData::new().with_vector("test_error", v))
            },
            |d| d.vector("test_error"),
        )
    };
    let mut counts = [[0usize; 3]; 2];
    // Per peephole form: outcomes of CA-RNN < GRU and of GRU < LSTM, each [holds, reversed, n.d.].
    let mut claim_counts = [[[0usize; 3]; 2]; 2];
    let idx = |o: judge::Outcome| match o {
        judge::Outcome::Holds => 0,
        judge::Outcome::DoesNotHold => 1,
        judge::Outcome::NotDistinguishable => 2,
    };
    let mut ca_by_setup: Vec<(Setup, Vec<f64>)> = Vec::new();
    let mut mdds = Vec::new();
    let mut lines = Vec::new();
    let mut base_errs: Vec<(Setup, Vec<f64>, Vec<f64>)> = Vec::new();
    for b in &bases {
        base_errs.push((*b, errors(CellKind::Lstm, b)?, errors(CellKind::Gru, b)?));
    }
    for s in &grid {
        let (_, lstm, gru) = base_errs.iter().find(|(b, _, _)| *b == Setup { peephole: Peephole::Vector, ..*s }).ok_or("sweep: missing base configuration")?;
        let ca = errors(CellKind::CaRnn, s)?;
        let o = ranking(&ca, gru, lstm);
        let pi = usize::from(s.peephole == Peephole::Matrix);
        counts[pi][idx(o)] += 1;
        claim_counts[pi][0][idx(judge::outcome(&ca, gru, true))] += 1;
        claim_counts[pi][1][idx(judge::outcome(gru, lstm, true))] += 1;
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let p_ca_gru = chi_nn::stats::PairedTest::new(&ca, gru).p;
        let p_gru_lstm = chi_nn::stats::PairedTest::new(gru, lstm).p;
        let d: Vec<f64> = ca.iter().zip(gru.iter()).map(|(a, b)| a - b).collect();
        let mdd = if d.len() >= 2 { judge::detectable_difference(chi_nn::stats::Summary::of(&d).sd, d.len()) } else { f64::NAN };
        mdds.push(mdd);
        lines.push(format!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {} |",
            s.label(),
            mean(lstm),
            mean(gru),
            mean(&ca),
            p_ca_gru,
            mdd,
            p_gru_lstm,
            o.words(ctx.runs)
        ));
        ca_by_setup.push((*s, ca.clone()));
        rep.rows.push(Row::new(ERROR_METRIC, &format!("CA-RNN {}", s.label()), None, ca));
    }
    for (b, lstm, gru) in base_errs {
        rep.rows.push(Row::new(ERROR_METRIC, &format!("LSTM {}", b.base_label()), Some(paper_error(CellKind::Lstm)), lstm));
        rep.rows.push(Row::new(ERROR_METRIC, &format!("GRU {}", b.base_label()), Some(paper_error(CellKind::Gru)), gru));
    }
    for (pi, name) in ["vector p_v ⊙ c", "matrix P_v c"].iter().enumerate() {
        let total: usize = counts[pi].iter().sum();
        if total == 0 {
            continue;
        }
        let frac = |k: usize| counts[pi][k] as f64 / total as f64;
        rep.rows.push(Row::new("fraction of configurations: ranking holds", &format!("CA-RNN, peephole {name}"), None, vec![frac(0)]));
        rep.rows.push(Row::new("fraction of configurations: ranking does not hold", &format!("CA-RNN, peephole {name}"), None, vec![frac(1)]));
        rep.rows.push(Row::new("fraction of configurations: not distinguishable", &format!("CA-RNN, peephole {name}"), None, vec![frac(2)]));
        rep.notes.push(format!(
            "peephole {name}: the paper's ranking CA-RNN < GRU < LSTM (each adjacent claim by a two-sided paired t-test over {} seeds, α = 0.05) holds in {} of {total} configurations, does not hold in {}, not distinguishable in {}",
            ctx.runs, counts[pi][0], counts[pi][1], counts[pi][2]
        ));
        for (ci, claim) in ["CA-RNN < GRU", "GRU < LSTM"].iter().enumerate() {
            let c = claim_counts[pi][ci];
            rep.notes.push(format!("peephole {name}: claim {claim} holds in {} of {total} configurations, is reversed (significantly) in {}, not distinguishable in {}", c[0], c[1], c[2]));
        }
    }
    // §4.4.1: the matrix peephole "fails the test" — judged per configuration against the
    // vector peephole on the same seeds.
    let mut mv = [0usize; 3];
    for (s, m) in ca_by_setup.iter().filter(|(s, _)| s.peephole == Peephole::Matrix) {
        if let Some((_, v)) = ca_by_setup.iter().find(|(t, _)| *t == Setup { peephole: Peephole::Vector, ..*s }) {
            mv[idx(judge::outcome(v, m, true))] += 1;
        }
    }
    rep.notes.push(format!(
        "claim vector peephole < matrix peephole (CA-RNN test error, paired per configuration): holds in {} of {} configurations, reversed in {}, not distinguishable in {}",
        mv[0],
        mv.iter().sum::<usize>(),
        mv[1],
        mv[2]
    ));
    let mut sorted: Vec<f64> = mdds.iter().copied().filter(|x| x.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    if !sorted.is_empty() {
        rep.notes.push(format!(
            "power: the smallest CA-RNN − GRU difference detectable at 80 % power (paired, {} seeds) has median {:.3} over configurations (range {:.3}–{:.3}); the paper's gap is 0.046",
            ctx.runs,
            sorted[sorted.len() / 2],
            sorted[0],
            sorted[sorted.len() - 1]
        ));
    }
    let table = format!("| configuration | LSTM | GRU | CA-RNN | p (CA-RNN vs GRU) | detectable CA-RNN − GRU at 80 % power | p (GRU vs LSTM) | ranking |\n|---|---|---|---|---|---|---|---|\n{}\n", lines.join("\n"));
    chi_nn::checkpoint::atomic_write(&ctx.path("sweep.md"), table.as_bytes()).map_err(String::from)?;
    rep.files.push("sweep.md".into());
    rep.notes.push(format!("per-configuration mean test errors, p-values and judgements: {}", ctx.path("sweep.md").display()));
    rep.config = vec![
        ("iterations".into(), iters.to_string()),
        ("configurations".into(), grid.len().to_string()),
        ("grid".into(), "embed×hidden {4×4, 8×8, 16×16, 4×16, 16×4} × {adagrad 0.1, adagrad 0.5, adam 0.01, adam 0.05, sgd 0.5, sgd 2} × init scale {0.3, 1} × peephole {vector, matrix}".into()),
    ];
    Ok(rep)
}

/// The options of `ca-rnn-synthetic`: one value of each choice the paper leaves open.
pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec { key: "embed", help: "embedding size, 1 to 512 (default 8)" },
    OptionSpec { key: "hidden", help: "hidden size, 1 to 512 (default 8)" },
    OptionSpec { key: "optimizer", help: "adagrad, adam or sgd (default adagrad)" },
    OptionSpec { key: "lr", help: "learning rate, > 0 and ≤ 100 (default 0.1)" },
    OptionSpec { key: "init-scale", help: "scale of the random initial weights, > 0 and ≤ 100 (default 1)" },
    OptionSpec { key: "peephole", help: "CA-RNN peephole form: vector or matrix (default vector)" },
    OptionSpec { key: "iters", help: "training iterations, 1 to 100000 (default 100)" },
];

/// The options of `ca-rnn-sweep`: the values of each axis of its grid.
pub const SWEEP_OPTIONS: &[OptionSpec] = &[
    OptionSpec { key: "sizes", help: "embedding×hidden sizes, e.g. 4x4,8x8,16x4 (each 1 to 512; default 4x4,8x8,16x16,4x16,16x4)" },
    OptionSpec { key: "optimizers", help: "optimizer:learning-rate pairs, e.g. adagrad:0.1,adam:0.05 (default adagrad:0.1,adagrad:0.5,adam:0.01,adam:0.05,sgd:0.5,sgd:2)" },
    OptionSpec { key: "init-scales", help: "initial-weight scales, e.g. 0.3,1 (default 0.3,1)" },
    OptionSpec { key: "peepholes", help: "CA-RNN peephole forms: vector, matrix or both (default vector,matrix)" },
];

fn parse_opt(s: &str) -> Option<Opt> {
    match s {
        "adagrad" => Some(Opt::Adagrad),
        "adam" => Some(Opt::Adam),
        "sgd" => Some(Opt::Sgd),
        _ => None,
    }
}

fn parse_peephole(s: &str) -> Option<Peephole> {
    match s {
        "vector" => Some(Peephole::Vector),
        "matrix" => Some(Peephole::Matrix),
        _ => None,
    }
}

fn size_ok(n: usize) -> bool {
    (1..=512).contains(&n)
}

/// The [`Setup`] of `ca-rnn-synthetic`: the defaults, with the options given.
fn setup_options(ctx: &Ctx) -> Result<Setup, String> {
    let d = Setup::default();
    Ok(Setup {
        embed: ctx.option("embed", d.embed, "a size from 1 to 512", size_ok)?,
        hidden: ctx.option("hidden", d.hidden, "a size from 1 to 512", size_ok)?,
        opt: ctx.word_option("optimizer", d.opt, "adagrad, adam or sgd", parse_opt)?,
        lr: ctx.option("lr", d.lr, "a learning rate > 0 and ≤ 100", positive_rate)?,
        init_scale: ctx.option("init-scale", d.init_scale, "a scale > 0 and ≤ 100", positive_rate)?,
        peephole: ctx.word_option("peephole", d.peephole, "vector or matrix", parse_peephole)?,
    })
}

/// The grid of `ca-rnn-sweep`: [`sweep_grid`], with each axis replaced by its option if given.
fn sweep_grid_options(ctx: &Ctx) -> Result<Vec<Setup>, String> {
    let default = sweep_grid(ctx.quick);
    let axis = |f: &dyn Fn(&Setup) -> String| {
        let mut v: Vec<String> = Vec::new();
        for s in &default {
            if !v.contains(&f(s)) {
                v.push(f(s));
            }
        }
        v
    };
    let sizes = ctx.list_option("sizes", axis(&|s| format!("{}x{}", s.embed, s.hidden)), "EMBEDxHIDDEN sizes (1 to 512)", |x| {
        let (e, h) = x.split_once('x')?;
        let (e, h) = (parsed(e, |&n: &usize| size_ok(n))?, parsed(h, |&n: &usize| size_ok(n))?);
        Some(format!("{e}x{h}"))
    })?;
    let opts = ctx.list_option("optimizers", axis(&|s| format!("{}:{}", s.opt.name(), num(s.lr))), "OPTIMIZER:RATE pairs (adagrad, adam or sgd; rate > 0 and ≤ 100)", |x| {
        let (o, r) = x.split_once(':')?;
        Some(format!("{}:{}", parse_opt(o)?.name(), parsed(r, |&r: &f64| positive_rate(r))?))
    })?;
    let scales = ctx.list_option("init-scales", axis(&|s| s.init_scale.to_string()), "scales (> 0 and ≤ 100)", |x| parsed(x, |&r: &f64| positive_rate(r)).map(|r| r.to_string()))?;
    let peepholes = ctx.list_option("peepholes", vec![Peephole::Vector, Peephole::Matrix], "vector or matrix", parse_peephole)?;
    let mut grid = Vec::new();
    for size in &sizes {
        let (e, h) = size.split_once('x').expect("checked");
        for o in &opts {
            let (opt, lr) = o.split_once(':').expect("checked");
            for sc in &scales {
                for &peephole in &peepholes {
                    let s = Setup {
                        embed: e.parse().expect("checked"),
                        hidden: h.parse().expect("checked"),
                        opt: parse_opt(opt).expect("checked"),
                        lr: lr.parse().expect("checked"),
                        init_scale: sc.parse().expect("checked"),
                        peephole,
                    };
                    if !grid.contains(&s) {
                        grid.push(s);
                    }
                }
            }
        }
    }
    Ok(grid)
}

/// The sweep's configurations: the full grid, or a 4-configuration corner of it for `--quick`.
pub fn sweep_grid(quick: bool) -> Vec<Setup> {
    let sizes: &[(usize, usize)] = if quick { &[(8, 8)] } else { &[(4, 4), (8, 8), (16, 16), (4, 16), (16, 4)] };
    let opts: &[(Opt, f64)] = if quick { &[(Opt::Adagrad, 0.1), (Opt::Adam, 0.05)] } else { &[(Opt::Adagrad, 0.1), (Opt::Adagrad, 0.5), (Opt::Adam, 0.01), (Opt::Adam, 0.05), (Opt::Sgd, 0.5), (Opt::Sgd, 2.0)] };
    let scales: &[f64] = if quick { &[1.0] } else { &[0.3, 1.0] };
    let mut v = Vec::new();
    for &(embed, hidden) in sizes {
        for &(opt, lr) in opts {
            for &init_scale in scales {
                for peephole in [Peephole::Vector, Peephole::Matrix] {
                    v.push(Setup { embed, hidden, opt, lr, init_scale, peephole });
                }
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_fits_the_training_pair_and_is_deterministic() {
        for kind in [CellKind::Lstm, CellKind::Gru, CellKind::CaRnn] {
            let (e1, _, f1, l, _) = run_once(kind, &Setup::default(), 100, 7).unwrap();
            let (e2, _, f2, _, _) = run_once(kind, &Setup::default(), 100, 7).unwrap();
            assert_eq!((e1, f1), (e2, f2), "{kind:?}: same seed, same result");
            assert!(e1.is_finite() && (0.0..=1.0).contains(&e1));
            assert!(f1 < l[0].1, "{kind:?}: training loss did not fall ({} → {f1})", l[0].1);
        }
    }

    #[test]
    fn every_choice_of_the_sweep_trains_and_bad_setups_are_errors() {
        // The matrix peephole, another optimiser, unequal sizes and a small initialisation.
        let s = Setup { embed: 4, hidden: 6, opt: Opt::Adam, lr: 0.05, init_scale: 0.3, peephole: Peephole::Matrix };
        let (e, _, f, l, _) = run_once(CellKind::CaRnn, &s, 50, 3).unwrap();
        assert!((0.0..=1.0).contains(&e) && f < l[0].1, "{e} {f}");
        let s = Setup { opt: Opt::Sgd, lr: 0.5, ..Setup::default() };
        let (_, _, f, l, _) = run_once(CellKind::Lstm, &s, 50, 3).unwrap();
        assert!(f < l[0].1);
        assert!(run_once(CellKind::Gru, &Setup { hidden: 0, ..Setup::default() }, 5, 1).unwrap_err().contains("must be positive"));
        assert!(run_once(CellKind::Gru, &Setup { lr: f64::NAN, ..Setup::default() }, 5, 1).is_err());
        assert_eq!(sweep_grid(false).len(), 120);
        assert_eq!(sweep_grid(true).len(), 4);
    }

    #[test]
    fn init_scale_scales_random_weights_but_keeps_biases() {
        let build = |scale: f64| {
            let mut rng = Rng::new(5);
            Model::new(CellKind::Lstm, &Setup { init_scale: scale, ..Setup::default() }, &mut rng)
        };
        let (a, b) = (build(1.0), build(0.5));
        let get = |m: &Model, n: &str| m.store.get(n).unwrap().to_vec();
        assert_eq!(get(&a, "cell.bias"), get(&b, "cell.bias"), "the forget bias 1 is kept");
        assert!(get(&a, "cell.bias").iter().any(|x| *x == 1.0));
        for (x, y) in get(&a, "cell.w_ih").iter().zip(get(&b, "cell.w_ih")) {
            assert!((x * 0.5 - y).abs() < 1e-15);
        }
        let ca = |scale: f64| {
            let mut rng = Rng::new(5);
            Model::new(CellKind::CaRnn, &Setup { init_scale: scale, ..Setup::default() }, &mut rng)
        };
        assert_eq!(get(&ca(0.5), "cell.p_v"), vec![1.0; 8], "the vector peephole starts at 1 whatever the scale");
    }

    #[test]
    fn ranking_needs_both_adjacent_claims() {
        use judge::Outcome::*;
        let lstm = [0.5, 0.6, 0.55, 0.52, 0.58];
        let gru = [0.3, 0.42, 0.33, 0.31, 0.4];
        let ca = [0.1, 0.2, 0.15, 0.12, 0.19];
        assert_eq!(ranking(&ca, &gru, &lstm), Holds);
        assert_eq!(ranking(&gru, &ca, &lstm), DoesNotHold);
        assert_eq!(ranking(&[0.31, 0.4, 0.34, 0.3, 0.41], &gru, &lstm), NotDistinguishable);
    }

    #[test]
    fn unseen_word_maps_to_unk() {
        assert_eq!(token_id("look"), VOCAB.len());
        assert_eq!(token_id("happy"), 2);
    }
}
