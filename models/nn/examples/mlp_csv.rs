//! A 2-layer MLP trained on a CSV file (feature columns, then a class-id column) with chi-nn's
//! public API. `cargo run --release -p chi-nn --example mlp_csv [-- FILE.csv]`
use chi_autodiff::no_grad;
use chi_nn::data::{load_csv_xy, CsvXyOptions, DataLoader, IndexedDataset};
use chi_nn::{metrics::accuracy, Activation, Linear, Module, OptimConfig, Optimizer, Parameterized, Sequential};
use std::error::Error;

/// Trains for `epochs` epochs; returns each epoch's mean loss and the final training accuracy.
pub fn train(path: &str, epochs: usize) -> Result<(Vec<f32>, f64), Box<dyn Error>> {
    let table = load_csv_xy(path, &CsvXyOptions::default())?;
    let classes = table.class_labels()?.into_iter().max().unwrap_or(0) + 1;
    let loader = DataLoader::new(table.classification()?, 32).shuffle(0);
    let model = Sequential::new().add(Linear::new(table.n_features, 32)).add(Activation::Relu).add(Linear::new(32, classes));
    let mut opt = Optimizer::new(OptimConfig::adam(0.01));
    let mut losses = Vec::new();
    for _ in 0..epochs {
        let mut total = 0.0;
        for (x, y) in &loader {
            model.zero_grad();
            let loss = model.forward(&x).cross_entropy(&y);
            loss.backward();
            opt.step_params(&model.parameters());
            total += loss.item() * y.len() as f32;
        }
        losses.push(total / table.len() as f32);
    }
    let (x, y) = loader.dataset().batch(&(0..table.len()).collect::<Vec<_>>());
    let pred = no_grad(|| model.forward(&x)).argmax_axis(-1);
    Ok((losses, accuracy(&pred, &y)))
}

#[allow(dead_code)] // the test includes this file and calls `train` only
fn main() -> Result<(), Box<dyn Error>> {
    let default = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/moons.csv").to_string();
    let (losses, acc) = train(&std::env::args().nth(1).unwrap_or(default), 100)?;
    println!("loss {:.4} → {:.4}, training accuracy {acc:.3}", losses[0], losses[losses.len() - 1]);
    Ok(())
}
