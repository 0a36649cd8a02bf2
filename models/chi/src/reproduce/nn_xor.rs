//! `ca-nn-xor` — [CAML] §4.5.1, Fig. 15: fitting the four XOR points
//! `(1,0)↦1, (0,1)↦1, (0,0)↦0, (1,1)↦0` with L2 loss, CA-NN against one- and two-hidden-layer
//! networks, and the fitted surfaces over the extended domain `[−0.5, 1.5]²`.
//!
//! The paper's claims are qualitative: CA-NN fits the points with fewer parameters, its surface
//! is less symmetric than the NN's, and χ splits the domain into two modes. We measure them:
//! * parameters of each model, and the training MSE each reaches (and how often it is < 0.01);
//! * surface asymmetry under each of the data's three symmetries — the point reflection
//!   `(x, y) ↦ (1 − x, 1 − y)`, the diagonal swap `(x, y) ↦ (y, x)` and the anti-diagonal
//!   reflection `(x, y) ↦ (1 − y, 1 − x)` (the non-identity maps of the square that keep every
//!   label): `mean |f(p) − f(sym(p))|` over a 41 × 41 grid of the extended domain, 0 for a
//!   surface with that symmetry; "less symmetric" is a larger value, judged by a paired t-test
//!   over seeds against each NN;
//! * χ's range over the domain (two modes ⇒ it spans most of (0, 1)).
//!
//! Models: CA-NN is one layer `2 → 1` with `v(c) = tanh(Wc + b)` (the paper's "simple linear
//! mapping with tanh activation"), scalar `w0` and `χ(c) = σ(θᵀc + b)` — 7 parameters. NN-1 is
//! `2 → h → 1` with `h` = 2, 4, 8, 16 (tanh hidden, linear output, 9, 17, 33, 65 parameters);
//! NN-2 is `2 → 2 → 2 → 1` (15). All
//! trained full-batch with Adam (lr 0.05, 2000 steps; the paper gives no optimiser here).

use super::units::UnitData;
use super::util::write_curves;
use super::{judge, Ctx, Report, Row};
use chi_ca::ca_nn::{CaNn, CaNnConfig};
use chi_ca::Activation;
use chi_nn::{Linear, Module, Sequential};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::ParamStore;
use chi_nn::trainer::Trainer;
use crate::train::plot::surface;
use chi_autodiff::{no_grad, Rng, Tensor};

const POINTS: [([f64; 2], f64); 4] = [([1.0, 0.0], 1.0), ([0.0, 1.0], 1.0), ([0.0, 0.0], 0.0), ([1.0, 1.0], 0.0)];
const GRID: usize = 41;
const LO: f64 = -0.5;
const HI: f64 = 1.5;

/// A plain tanh MLP `2 → hidden… → 1`: chi-nn [`Linear`] layers with tanh between them, in a
/// [`Sequential`].
pub struct Mlp {
    net: Sequential<f64>,
}

impl Mlp {
    /// `dims = [in, h1, …, out]`; tanh on hidden layers, identity on the output. Parameters
    /// `{name}.l{i}.weight`, `{name}.l{i}.bias` in group `nn`.
    pub fn new(store: &mut ParamStore<f64>, name: &str, dims: &[usize], rng: &mut Rng) -> Mlp {
        let last = dims.len() - 2;
        let mut net = Sequential::new();
        for (i, d) in dims.windows(2).enumerate() {
            net.push(Linear::in_store(store, &format!("{name}.l{i}"), "nn", d[0], d[1], true, rng));
            if i != last {
                net.push(Activation::Tanh);
            }
        }
        Mlp { net }
    }
    /// Forward pass.
    pub fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        self.net.forward(x)
    }
}

enum Net {
    Ca(CaNn<f64>),
    Nn(Mlp),
}

impl Net {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        match self {
            Net::Ca(m) => m.forward(x),
            Net::Nn(m) => m.forward(x),
        }
    }
}

/// The models compared: CA-NN, one-hidden-layer NNs of widths 2, 4, 8 and 16, and the paper's
/// two-hidden-layer NN.
const MODELS: [&str; 6] = ["CA-NN", "NN-1 (2-2-1)", "NN-1 (2-4-1)", "NN-1 (2-8-1)", "NN-1 (2-16-1)", "NN-2 (2-2-2-1)"];

/// Unit-record key of model `which` (unique per model).
fn model_key(which: usize) -> String {
    MODELS[which].replace(['(', ')'], "").replace(' ', "-").to_lowercase()
}

fn build(which: usize, rng: &mut Rng) -> (ParamStore<f64>, Net) {
    let mut store = ParamStore::new();
    let net = match which {
        0 => Net::Ca(CaNn::new(&mut store, "cann", &[2, 1], None, CaNnConfig::default(), rng)),
        1 => Net::Nn(Mlp::new(&mut store, "nn1", &[2, 2, 1], rng)),
        2 => Net::Nn(Mlp::new(&mut store, "nn1", &[2, 4, 1], rng)),
        3 => Net::Nn(Mlp::new(&mut store, "nn1", &[2, 8, 1], rng)),
        4 => Net::Nn(Mlp::new(&mut store, "nn1", &[2, 16, 1], rng)),
        _ => Net::Nn(Mlp::new(&mut store, "nn2", &[2, 2, 2, 1], rng)),
    };
    (store, net)
}

fn grid_points() -> Tensor<f64> {
    let h = (HI - LO) / (GRID - 1) as f64;
    let mut v = Vec::with_capacity(GRID * GRID * 2);
    for r in 0..GRID {
        for c in 0..GRID {
            v.push(LO + c as f64 * h);
            v.push(LO + r as f64 * h);
        }
    }
    Tensor::from_vec(v, &[GRID * GRID, 2])
}

fn to_grid(v: &[f64]) -> Vec<Vec<f64>> {
    v.chunks(GRID).map(|r| r.to_vec()).collect()
}

/// Result of fitting one model once.
pub struct Fit {
    /// Final training MSE.
    pub mse: f64,
    /// Values on the 41 × 41 grid (row-major, y outer).
    pub surface: Vec<f64>,
    /// χ on the grid (CA-NN only).
    pub chi: Option<Vec<f64>>,
    /// Trainable parameters.
    pub params: usize,
    /// Loss per step.
    pub curve: Vec<(f64, f64)>,
}

/// Fits model `which` (index into the model list) with the given seed and step count.
pub fn fit(which: usize, steps: usize, seed: u64) -> Result<Fit, String> {
    let mut rng = Rng::new(seed);
    let (store, net) = build(which, &mut rng);
    let x = Tensor::from_vec(POINTS.iter().flat_map(|p| p.0).collect(), &[4, 2]);
    let y = Tensor::from_vec(POINTS.iter().map(|p| p.1).collect(), &[4, 1]);
    let mut opt = Optimizer::new(OptimConfig::adam(0.05));
    // Full batch: every step sees the four points. The loss curve keeps every tenth step.
    let mut curve = Vec::new();
    Trainer::new(&store, &mut opt)
        .steps(steps as u64)
        .on_step_end(|info| {
            if (info.step - 1) % 10 == 0 || info.step == steps as u64 {
                curve.push((info.step as f64, info.loss));
            }
        })
        .fit(std::iter::repeat(()), |()| net.forward(&x).mse_loss(&y))?;
    Ok(no_grad(|| {
        let mse = net.forward(&x).mse_loss(&y).item();
        let g = grid_points();
        let surface = net.forward(&g).to_vec();
        let chi = match &net {
            Net::Ca(m) => Some(m.chis(&g)[0].to_vec()),
            Net::Nn(_) => None,
        };
        Fit { mse, surface, chi, params: store.num_scalars(), curve }
    }))
}

impl Fit {
    /// As a unit record.
    fn to_unit(&self) -> UnitData {
        let d = UnitData::new().with_scalar("mse", self.mse).with_vector("surface", self.surface.clone()).with_scalar("params", self.params as f64).with_curve("loss", &self.curve);
        match &self.chi {
            Some(c) => d.with_vector("chi", c.clone()),
            None => d,
        }
    }
    /// From a unit record.
    fn from_unit(d: &UnitData) -> Result<Fit, String> {
        let surface = d.vector("surface")?;
        if surface.len() != GRID * GRID {
            return Err(format!("surface has {} values, expected {}", surface.len(), GRID * GRID));
        }
        Ok(Fit { mse: d.scalar("mse")?, surface, chi: d.opt_vector("chi"), params: d.scalar("params")? as usize, curve: d.curve("loss")? })
    }
}

/// The three symmetries of the XOR data: the non-identity maps of the unit square that send
/// every one of the four points to a point with the same label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symmetry {
    /// Point reflection through (½, ½): `(x, y) ↦ (1 − x, 1 − y)`.
    Point,
    /// Reflection in the diagonal: `(x, y) ↦ (y, x)`.
    Diagonal,
    /// Reflection in the anti-diagonal: `(x, y) ↦ (1 − y, 1 − x)`.
    AntiDiagonal,
}

impl Symmetry {
    /// All three.
    pub const ALL: [Symmetry; 3] = [Symmetry::Point, Symmetry::Diagonal, Symmetry::AntiDiagonal];
    /// The map, for tables.
    pub fn formula(self) -> &'static str {
        match self {
            Symmetry::Point => "(x, y) ↦ (1−x, 1−y)",
            Symmetry::Diagonal => "(x, y) ↦ (y, x)",
            Symmetry::AntiDiagonal => "(x, y) ↦ (1−y, 1−x)",
        }
    }
    /// The grid cell `(row, col)` that `(row, col)` maps to. Row `r` is `y = LO + r·h`, column
    /// `c` is `x = LO + c·h`; `t ↦ 1 − t` is index `i ↦ GRID − 1 − i` because `LO + HI = 1`.
    fn image(self, r: usize, c: usize) -> (usize, usize) {
        match self {
            Symmetry::Point => (GRID - 1 - r, GRID - 1 - c),
            Symmetry::Diagonal => (c, r),
            Symmetry::AntiDiagonal => (GRID - 1 - c, GRID - 1 - r),
        }
    }
}

/// Asymmetry of a surface under `sym`: `mean |f(p) − f(sym(p))|` over the 41 × 41 grid of the
/// extended domain (the map sends grid points to grid points). 0 for a surface with that
/// symmetry.
pub fn asymmetry_under(sym: Symmetry, surface: &[f64]) -> f64 {
    let mut s = 0.0;
    for r in 0..GRID {
        for c in 0..GRID {
            let (r2, c2) = sym.image(r, c);
            s += (surface[r * GRID + c] - surface[r2 * GRID + c2]).abs();
        }
    }
    s / (GRID * GRID) as f64
}


/// The row name of the asymmetry under `sym`.
fn asym_metric(sym: Symmetry) -> String {
    format!("surface asymmetry, {}", sym.formula())
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let steps = if ctx.quick { 600 } else { 2000 };
    let mut rep = Report::default();
    let mut curves = Vec::new();
    ctx.plan_units(MODELS.len() * ctx.runs);
    for (which, name) in MODELS.iter().enumerate() {
        let mut fits: Vec<Fit> = Vec::with_capacity(ctx.runs);
        for r in 0..ctx.runs {
            let seed = ctx.run_seed(r);
            let key = format!("{}-run{r}", model_key(which));
            fits.push(ctx.unit(&key, &format!("model={name} steps={steps} adam lr=0.05 grid={GRID} seed={seed}"), || Ok(fit(which, steps, seed)?.to_unit()), Fit::from_unit)?);
        }
        let mses: Vec<f64> = fits.iter().map(|f| f.mse).collect();
        ctx.log(&format!("{name}: mean training MSE {:.4}", mses.iter().sum::<f64>() / mses.len() as f64));
        rep.rows.push(Row::new("parameters", name, None, vec![fits[0].params as f64]));
        rep.rows.push(Row::new("training MSE", name, None, mses.clone()));
        rep.rows.push(Row::new("fit rate (MSE < 0.01)", name, None, mses.iter().map(|m| f64::from(u8::from(*m < 0.01))).collect()));
        for sym in Symmetry::ALL {
            rep.rows.push(Row::new(&asym_metric(sym), name, None, fits.iter().map(|f| asymmetry_under(sym, &f.surface)).collect()));
        }
        let stem = format!("surface_{}", model_key(which));
        for ext in ["svg", "png"] {
            let f = format!("{stem}.{ext}");
            surface(&ctx.path(&f), &format!("{name} fit of the 4 XOR points (run 0)"), (LO, HI), (LO, HI), &to_grid(&fits[0].surface))?;
            rep.files.push(f);
        }
        if let Some(chi) = &fits[0].chi {
            for ext in ["svg", "png"] {
                let f = format!("chi_ca-nn.{ext}");
                surface(&ctx.path(&f), "CA-NN χ(c) over the domain (run 0)", (LO, HI), (LO, HI), &to_grid(chi))?;
                rep.files.push(f);
            }
            let spans: Vec<f64> = fits
                .iter()
                .filter_map(|f| f.chi.as_ref())
                .map(|c| c.iter().copied().fold(f64::NEG_INFINITY, f64::max) - c.iter().copied().fold(f64::INFINITY, f64::min))
                .collect();
            rep.rows.push(Row::new("χ range over the domain", name, None, spans));
        }
        curves.push((name.to_string(), fits[0].curve.clone()));
    }
    rep.files.extend(write_curves(ctx, "train_loss", "ca-nn-xor: training MSE (run 0)", "step", "MSE", true, &curves)?);
    let mut metrics: Vec<String> = vec!["training MSE".into()];
    metrics.extend(Symmetry::ALL.iter().map(|s| asym_metric(*s)));
    let metric_refs: Vec<&str> = metrics.iter().map(String::as_str).collect();
    judge::interval_notes(&mut rep, &metric_refs);
    // The paper: CA-NN's surface is less symmetric than the NN's — a larger asymmetry.
    for sym in Symmetry::ALL {
        let m = asym_metric(sym);
        let ca = judge::values(&rep, &m, MODELS[0])?.to_vec();
        for nn in &MODELS[1..] {
            let v = judge::values(&rep, &m, nn)?.to_vec();
            rep.notes.push(judge::judge(&m, "CA-NN", &ca, nn, &v, false));
        }
    }
    rep.notes.push(
        "the paper's Fig. 15 claims are qualitative (fewer parameters, less symmetric surface, χ with two modes); 'less symmetric' is judged as a larger asymmetry under each of the data's three symmetries, paired over seeds; see the surface_*.svg plots".into(),
    );
    rep.config = vec![("steps".into(), steps.to_string()), ("optimizer".into(), "adam lr 0.05 (full batch)".into())];
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asymmetry_of_a_reflection_symmetric_function_is_zero() {
        let h = (HI - LO) / (GRID - 1) as f64;
        let f: Vec<f64> = (0..GRID * GRID)
            .map(|i| {
                let (x, y) = (LO + (i % GRID) as f64 * h, LO + (i / GRID) as f64 * h);
                (x - 0.5).powi(2) + (y - 0.5).powi(2)
            })
            .collect();
        assert!(asymmetry_under(Symmetry::Point, &f) < 1e-12);
        let g: Vec<f64> = (0..GRID * GRID).map(|i| (i % GRID) as f64).collect();
        assert!(asymmetry_under(Symmetry::Point, &g) > 1.0);
    }

    #[test]
    fn each_symmetry_measure_vanishes_exactly_for_its_own_symmetry() {
        let h = (HI - LO) / (GRID - 1) as f64;
        let surf = |f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> { (0..GRID * GRID).map(|i| f(LO + (i % GRID) as f64 * h, LO + (i / GRID) as f64 * h)).collect() };
        // x·y is symmetric under the diagonal swap only; (x − y)² under all three;
        // x + 2y − 1.5 changes under each.
        let xy = surf(&|x, y| x * y);
        assert!(asymmetry_under(Symmetry::Diagonal, &xy) < 1e-12);
        assert!(asymmetry_under(Symmetry::Point, &xy) > 0.1 && asymmetry_under(Symmetry::AntiDiagonal, &xy) > 0.1);
        // (1 − x)·y is symmetric under the anti-diagonal map only.
        let anti = surf(&|x, y| (1.0 - x) * y);
        assert!(asymmetry_under(Symmetry::AntiDiagonal, &anti) < 1e-12);
        assert!(asymmetry_under(Symmetry::Diagonal, &anti) > 0.1 && asymmetry_under(Symmetry::Point, &anti) > 0.1);
        let sq = surf(&|x, y| (x - y).powi(2));
        for s in Symmetry::ALL {
            assert!(asymmetry_under(s, &sq) < 1e-12, "{s:?}");
        }
        let lin = surf(&|x, y| x + 2.0 * y - 1.5);
        for s in Symmetry::ALL {
            assert!(asymmetry_under(s, &lin) > 0.1, "{s:?}");
        }
    }

    #[test]
    fn every_model_reduces_its_loss() {
        for which in 0..MODELS.len() {
            let f = fit(which, 300, 3).unwrap();
            assert!(f.mse.is_finite() && f.mse < f.curve[0].1, "{}: {} → {}", MODELS[which], f.curve[0].1, f.mse);
            assert_eq!(f.surface.len(), GRID * GRID);
        }
        assert_eq!(fit(0, 1, 1).unwrap().params, 7, "CA-NN 2 → 1 has W (2) + b (1) + θ (2) + b_χ (1) + w0 (1)");
    }
}
