//! The file datasets of `chi train`: `--data PATH` (any file or folder [`chi_nn::userdata`]
//! reads) and the fetched image sets by name (`fashion-mnist`, `mnist`).

use chi_autodiff::Rng;
use chi_nn::data;
use chi_nn::dataset::{DataConfig, Dataset};
use chi_nn::userdata;

/// Fashion-MNIST's ten classes, in label order.
pub const FASHION_CLASSES: [&str; 10] = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"];

/// The dataset name of files given with `--data PATH`.
pub const FILE_DATASET: &str = "file";

/// Prints a loader's warnings (lossy text, imputed values) on stderr.
fn warn(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

/// `--data PATH`: reads the user's file or folder.
pub fn build_file_dataset(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, String> {
    let l = userdata::load(FILE_DATASET, cfg, rng)?;
    warn(&l.warnings);
    Ok(l.dataset)
}

/// A named image set takes only `split` (its validation share) among the file options.
fn only_split(cfg: &DataConfig, name: &str) -> Result<(), String> {
    match cfg.file_options_set().into_iter().find(|k| *k != "split") {
        Some(k) => Err(format!("dataset {name}: option {k} does not apply (its files are fixed; only `split` sets the validation share)")),
        None => Ok(()),
    }
}

/// `fashion-mnist`: its 60,000 training images (of which `split`'s validation share, default
/// 10%, is held out) and its 10,000 test images, standardised with the training statistics.
pub fn build_fashion_mnist(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, String> {
    only_split(cfg, "fashion-mnist")?;
    let dir = data::require(data::Dataset::FashionMnist)?;
    let (train, test) = data::load_mnist_idx_dir(&dir).map_err(|e| e.to_string())?;
    let c = DataConfig { split: Some(cfg.split.clone().unwrap_or_else(|| vec![0.9, 0.1, 0.0])), ..DataConfig::default() };
    let l = userdata::from_image_sets("fashion-mnist", &train, Some(&test), Some(&FASHION_CLASSES), &c, rng)?;
    warn(&l.warnings);
    Ok(l.dataset)
}

/// `mnist`: the 10,000 fetched MNIST digits, split 80/10/10 (or by `split`), stratified.
pub fn build_mnist(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, String> {
    only_split(cfg, "mnist")?;
    let dir = data::require(data::Dataset::Mnist)?;
    let all = data::load_mnist_json_dir(&dir).map_err(|e| e.to_string())?;
    let c = DataConfig { split: cfg.split.clone(), ..DataConfig::default() };
    let l = userdata::from_image_sets("mnist", &all, None, None, &c, rng)?;
    warn(&l.warnings);
    Ok(l.dataset)
}
