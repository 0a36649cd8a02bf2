//! A user's crate: trains a 2-layer MLP on a CSV file (feature columns, then a class id), or
//! with `--elementwise` times chi's shared elementwise workload from outside the workspace.
use chi_autodiff::no_grad;
use chi_nn::data::{load_csv_xy, CsvXyOptions, DataLoader, IndexedDataset};
use chi_nn::{metrics::accuracy, Activation, Linear, Module, OptimConfig, Optimizer, Parameterized, Sequential};
include!("../../../../../autodiff/examples/shared/elementwise_workload.rs");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = std::env::args().nth(1).unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../data/moons.csv").into());
    if arg == "--elementwise" {
        println!("{{\"seconds\": {:.6}, \"simd\": \"{:?}\"}}", elementwise_seconds(30), chi_kernels::simd::simd_level());
        return Ok(());
    }
    let table = load_csv_xy(&arg, &CsvXyOptions::default())?;
    let classes = table.class_labels()?.into_iter().max().unwrap_or(0) + 1;
    let loader = DataLoader::new(table.classification()?, 32).shuffle(0);
    let model = Sequential::new().add(Linear::new(table.n_features, 32)).add(Activation::Relu).add(Linear::new(32, classes));
    let mut opt = Optimizer::new(OptimConfig::adam(0.01));
    for _ in 0..100 {
        for (x, y) in &loader {
            model.zero_grad();
            let loss = model.forward(&x).cross_entropy(&y);
            loss.backward();
            opt.step_params(&model.parameters());
        }
    }
    let (x, y) = loader.dataset().batch(&(0..table.len()).collect::<Vec<_>>());
    let pred = no_grad(|| model.forward(&x)).argmax_axis(-1);
    println!("training accuracy {:.3}", accuracy(&pred, &y));
    Ok(())
}
