//! `ca-nn-surface` — [CAML] §4.5.1, Fig. 16: fitting `z = x·exp(−x² − y²)` on an 81 × 81 grid
//! over `[−2, 2]²` from 1 % of the grid points (66, drawn at random per run), testing on the
//! other 99 %. CA-NN with `dim(w0) = 5` in one layer and in two stacked layers, 1000 steps at
//! learning rate 0.1 (the paper's settings); the paper reports an "average prediction error" of
//! 0.0063 (single layer) and 0.0029 (stacked). We compare with plain tanh networks of (nearly)
//! the same parameter count.
//!
//! Choices where the paper is silent: Adagrad (the paper's optimiser elsewhere), full-batch
//! steps; a CA-NN layer `2 → 5` (stacked: `2 → 5 → 5`) followed by a linear readout `5 → 1`;
//! the paper's "average prediction error" is not defined — we report the test MSE against its
//! numbers and the test mean absolute error beside it.

use super::nn_xor::Mlp;
use super::units::UnitData;
use super::util::{mean_curve, metric, write_curves};
use super::{judge, Ctx, Report, Row};
use chi_ca::ca_nn::{CaNn, CaNnConfig};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::ParamStore;
use chi_nn::trainer::Trainer;
use crate::train::plot::surface;
use chi_autodiff::{no_grad, Rng, Tensor};

const N: usize = 81;
const STEPS: usize = 1000;
const LR: f64 = 0.1;

fn z(x: f64, y: f64) -> f64 {
    x * (-x * x - y * y).exp()
}

fn coord(i: usize) -> f64 {
    -2.0 + 4.0 * i as f64 / (N - 1) as f64
}

/// Parameters of a tanh MLP `2 → h → 1`.
fn mlp_params(h: usize) -> usize {
    3 * h + h + 1
}

/// The hidden width whose `2 → h → 1` MLP has the parameter count closest to `target`.
pub fn matching_width(target: usize) -> usize {
    (1..200).min_by_key(|h| mlp_params(*h).abs_diff(target)).unwrap_or(1)
}

/// Model variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// One CA-NN layer (dim w0 = 5) + readout.
    CaSingle,
    /// Two stacked CA-NN layers + readout.
    CaStacked,
    /// Tanh MLP with one hidden layer of the given width.
    Nn(usize),
}

/// A variant's short name (file stems and unit keys).
fn stem_of(v: Variant) -> String {
    match v {
        Variant::CaSingle => "ca-nn-single".to_string(),
        Variant::CaStacked => "ca-nn-stacked".to_string(),
        Variant::Nn(h) => format!("nn-h{h}"),
    }
}

/// One fit: `(test MSE, test MAE, parameter count, test-MSE curve, fitted grid)`.
pub fn fit(v: Variant, steps: usize, seed: u64) -> Result<(f64, f64, usize, Vec<(f64, f64)>, Vec<f64>), String> {
    let mut rng = Rng::new(seed);
    // 1 % of the grid for training, chosen per run.
    let mut idx: Vec<usize> = (0..N * N).collect();
    rng.shuffle(&mut idx);
    let n_train = (N * N).div_ceil(100);
    let (train, test) = idx.split_at(n_train);
    let pts = |ids: &[usize]| {
        let x: Vec<f64> = ids.iter().flat_map(|&i| [coord(i % N), coord(i / N)]).collect();
        let y: Vec<f64> = ids.iter().map(|&i| z(coord(i % N), coord(i / N))).collect();
        (Tensor::from_vec(x, &[ids.len(), 2]), Tensor::from_vec(y, &[ids.len(), 1]))
    };
    let (xtr, ytr) = pts(train);
    let (xte, yte) = pts(test);
    let mut store = ParamStore::new();
    let forward: Box<dyn Fn(&Tensor<f64>) -> Tensor<f64>> = match v {
        Variant::CaSingle | Variant::CaStacked => {
            let dims: &[usize] = if v == Variant::CaSingle { &[2, 5] } else { &[2, 5, 5] };
            let ca = CaNn::new(&mut store, "cann", dims, Some(1), CaNnConfig::default(), &mut rng);
            Box::new(move |x| ca.forward(x))
        }
        Variant::Nn(h) => {
            let nn = Mlp::new(&mut store, "nn", &[2, h, 1], &mut rng);
            Box::new(move |x| nn.forward(x))
        }
    };
    let mut opt = Optimizer::new(OptimConfig::adagrad(LR));
    // Full batch: every step sees the whole training grid.
    let curve = Trainer::new(&store, &mut opt)
        .steps(steps as u64)
        .eval_every(20)
        .evaluate(|_| metric("mse", no_grad(|| forward(&xte).mse_loss(&yte).item())))
        .fit(std::iter::repeat(()), |()| forward(&xtr).mse_loss(&ytr))?
        .eval_curve("mse");
    Ok(no_grad(|| {
        let pred = forward(&xte);
        let mse = pred.mse_loss(&yte).item();
        let mae = pred.sub(&yte).abs().mean().item();
        let all: Vec<f64> = (0..N * N).flat_map(|i| [coord(i % N), coord(i / N)]).collect();
        let grid = forward(&Tensor::from_vec(all, &[N * N, 2])).to_vec();
        (mse, mae, store.num_scalars(), curve, grid)
    }))
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let steps = if ctx.quick { 300 } else { STEPS };
    // Parameter counts decide the matching plain networks.
    let p1 = fit(Variant::CaSingle, 0, 0)?.2;
    let p2 = fit(Variant::CaStacked, 0, 0)?.2;
    let variants = [
        ("CA-NN single layer", Variant::CaSingle, Some(0.0063)),
        ("CA-NN stacked (2 layers)", Variant::CaStacked, Some(0.0029)),
        ("NN (params ≈ single)", Variant::Nn(matching_width(p1)), None),
        ("NN (params ≈ stacked)", Variant::Nn(matching_width(p2)), None),
    ];
    let mut rep = Report::default();
    let mut curves = Vec::new();
    let truth: Vec<Vec<f64>> = (0..N).map(|r| (0..N).map(|c| z(coord(c), coord(r))).collect()).collect();
    for ext in ["svg", "png"] {
        let f = format!("surface_truth.{ext}");
        surface(&ctx.path(&f), "z = x·exp(−x²−y²)", (-2.0, 2.0), (-2.0, 2.0), &truth)?;
        rep.files.push(f);
    }
    ctx.plan_units(variants.len() * ctx.runs);
    for (name, v, paper) in variants {
        let mut fits = Vec::with_capacity(ctx.runs);
        for r in 0..ctx.runs {
            let seed = ctx.run_seed(r);
            let key = format!("{}-run{r}", stem_of(v));
            // The fitted grid is plotted for run 0 only, so only run 0's record keeps it.
            let unit = ctx.unit(
                &key,
                &format!("variant={v:?} steps={steps} adagrad lr={LR} grid={N} seed={seed}"),
                || {
                    let (mse, mae, params, curve, grid) = fit(v, steps, seed)?;
                    let d = UnitData::new().with_scalar("mse", mse).with_scalar("mae", mae).with_scalar("params", params as f64).with_curve("test_mse", &curve);
                    Ok(if r == 0 { d.with_vector("grid", grid) } else { d })
                },
                |d| {
                    let grid = if r == 0 { d.vector("grid")? } else { Vec::new() };
                    if r == 0 && grid.len() != N * N {
                        return Err(format!("grid has {} values, expected {}", grid.len(), N * N));
                    }
                    Ok((d.scalar("mse")?, d.scalar("mae")?, d.scalar("params")? as usize, d.curve("test_mse")?, grid))
                },
            )?;
            fits.push(unit);
        }
        ctx.log(&format!("{name}: mean test MSE {:.5}", fits.iter().map(|f| f.0).sum::<f64>() / fits.len() as f64));
        rep.rows.push(Row::new("test MSE", name, paper, fits.iter().map(|f| f.0).collect()));
        rep.rows.push(Row::new("test MAE", name, None, fits.iter().map(|f| f.1).collect()));
        rep.rows.push(Row::new("parameters", name, None, vec![fits[0].2 as f64]));
        curves.push((name.to_string(), mean_curve(&fits.iter().map(|f| f.3.clone()).collect::<Vec<_>>())));
        let stem = format!("surface_{}", stem_of(v));
        let grid: Vec<Vec<f64>> = fits[0].4.chunks(N).map(|r| r.to_vec()).collect();
        for ext in ["svg", "png"] {
            let f = format!("{stem}.{ext}");
            surface(&ctx.path(&f), &format!("{name} (run 0)"), (-2.0, 2.0), (-2.0, 2.0), &grid)?;
            rep.files.push(f);
        }
    }
    rep.files.extend(write_curves(ctx, "test_mse", "ca-nn-surface: test MSE over training (mean over runs)", "step", "MSE", true, &curves)?);
    judge::interval_notes(&mut rep, &["test MSE"]);
    let mse = |name: &str| judge::values(&rep, "test MSE", name).map(<[f64]>::to_vec);
    let (single, stacked) = (mse("CA-NN single layer")?, mse("CA-NN stacked (2 layers)")?);
    let (nn1, nn2) = (mse("NN (params ≈ single)")?, mse("NN (params ≈ stacked)")?);
    rep.notes.push(format!("{}; the paper: 0.0063 → 0.0029 (its error measure is undefined; MSE assumed)", judge::judge("test MSE", "CA-NN stacked", &stacked, "CA-NN single", &single, true)));
    rep.notes.push(judge::judge("test MSE", "CA-NN single", &single, "NN (params ≈ single)", &nn1, true));
    rep.notes.push(judge::judge("test MSE", "CA-NN stacked", &stacked, "NN (params ≈ stacked)", &nn2, true));
    rep.config = vec![
        ("grid".into(), format!("{N}x{N} over [-2,2]^2, {} training points", (N * N).div_ceil(100))),
        ("steps".into(), steps.to_string()),
        ("optimizer".into(), format!("adagrad lr {LR}, full batch")),
    ];
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_width_matches_parameter_count() {
        assert_eq!(mlp_params(7), 29);
        assert_eq!(matching_width(29), 7);
    }

    #[test]
    fn ca_nn_fit_beats_predicting_zero() {
        let (mse, mae, params, curve, grid) = fit(Variant::CaSingle, 300, 5).unwrap();
        // Predicting 0 everywhere has MSE = mean z² ≈ 0.013 on this grid.
        let zero: f64 = (0..N * N).map(|i| z(coord(i % N), coord(i / N)).powi(2)).sum::<f64>() / (N * N) as f64;
        assert!(mse.is_finite() && mae.is_finite() && grid.len() == N * N && !curve.is_empty());
        assert!(mse < zero, "test MSE {mse} not below the zero predictor's {zero}");
        assert_eq!(params, 29, "2→5 CA-NN layer (W 10 + b 5 + θ 2 + b_χ 1 + w0 5) + readout 5→1 (6)");
    }
}
