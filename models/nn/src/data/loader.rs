//! A public data loader, as `torch.utils.data.DataLoader`: an indexed dataset
//! ([`IndexedDataset`], e.g. the in-memory [`TensorDataset`]) cut into mini-batches, with a
//! seeded shuffle and `drop_last`; and a CSV reader that returns numeric features and labels
//! ([`load_csv_xy`]).
//!
//! ```
//! use chi_nn::data::loader::{DataLoader, TensorDataset};
//! let ds = TensorDataset::new(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2], vec![0usize, 1, 0]).unwrap();
//! let loader = DataLoader::new(ds, 2).shuffle(7).drop_last(true);
//! for (x, y) in &loader {
//!     assert_eq!(x.shape(), [2, 2]);
//!     assert_eq!(y.len(), 2);
//! }
//! assert_eq!(loader.len(), 1);
//! ```

use super::csv::{csv_from_bytes, CsvRecord};
use super::error::{parse_file, DataError, Location};
use crate::error::NnError;
use chi_autodiff::{Float, Rng, Tensor};
use std::cell::RefCell;
use std::path::Path;

/// A dataset addressed by example index that can gather any set of examples into one batch
/// (PyTorch's map-style `Dataset` with its `collate_fn`).
pub trait IndexedDataset {
    /// What a batch is (for [`TensorDataset`]: the features tensor and the labels).
    type Batch;
    /// Number of examples.
    fn len(&self) -> usize;
    /// Whether there are no examples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The examples `indices` (each `< len()`), in that order, as one batch.
    fn batch(&self, indices: &[usize]) -> Self::Batch;
}

/// Examples held in memory: features of a fixed shape per example, and one label each.
///
/// A batch of examples `idx` is `(x, y)`: `x` a constant `[idx.len(), shape…]` tensor, `y` the
/// labels (`Vec<usize>` class ids for [`Tensor::cross_entropy`], or `Vec<f32>` targets).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDataset<T, L> {
    x: Vec<T>,
    shape: Vec<usize>,
    labels: Vec<L>,
}

impl<T: Float, L: Clone> TensorDataset<T, L> {
    /// `features` row-major, example `i` being `features[i·k..(i+1)·k]` with `k = Π shape`;
    /// one label per example. Errors if the lengths disagree.
    pub fn new(features: Vec<T>, example_shape: &[usize], labels: Vec<L>) -> Result<Self, NnError> {
        let k = example_shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if k.and_then(|k| k.checked_mul(labels.len())) != Some(features.len()) {
            let mut expected = vec![labels.len()];
            expected.extend_from_slice(example_shape);
            return Err(NnError::Shape { what: format!("TensorDataset features ({} values for {} labels)", features.len(), labels.len()), expected, found: vec![features.len()] });
        }
        Ok(TensorDataset { x: features, shape: example_shape.to_vec(), labels })
    }
    /// From a tensor whose first axis indexes the examples (its values are copied).
    pub fn from_tensor(features: &Tensor<T>, labels: Vec<L>) -> Result<Self, NnError> {
        if features.rank() == 0 {
            return Err(NnError::Shape { what: "TensorDataset features".into(), expected: vec![labels.len()], found: vec![] });
        }
        Self::new(features.to_vec(), &features.shape()[1..], labels)
    }
    /// The shape of one example.
    pub fn example_shape(&self) -> &[usize] {
        &self.shape
    }
    /// The features of example `i`.
    pub fn features(&self, i: usize) -> &[T] {
        let k: usize = self.shape.iter().product();
        &self.x[i * k..(i + 1) * k]
    }
    /// The labels, in example order.
    pub fn labels(&self) -> &[L] {
        &self.labels
    }
    /// Splits into the first `n` examples and the rest (`n` is clamped to the length).
    pub fn split_at(&self, n: usize) -> (Self, Self) {
        let n = n.min(self.labels.len());
        let k: usize = self.shape.iter().product();
        let a = TensorDataset { x: self.x[..n * k].to_vec(), shape: self.shape.clone(), labels: self.labels[..n].to_vec() };
        let b = TensorDataset { x: self.x[n * k..].to_vec(), shape: self.shape.clone(), labels: self.labels[n..].to_vec() };
        (a, b)
    }
}

impl<T: Float, L: Clone> IndexedDataset for TensorDataset<T, L> {
    type Batch = (Tensor<T>, Vec<L>);
    fn len(&self) -> usize {
        self.labels.len()
    }
    fn batch(&self, indices: &[usize]) -> Self::Batch {
        let k: usize = self.shape.iter().product();
        let mut x = Vec::with_capacity(indices.len() * k);
        for &i in indices {
            x.extend_from_slice(self.features(i));
        }
        let mut s = vec![indices.len()];
        s.extend_from_slice(&self.shape);
        (Tensor::from_vec(x, &s), indices.iter().map(|&i| self.labels[i].clone()).collect())
    }
}

/// Mini-batches of an [`IndexedDataset`]: `batch_size` examples at a time, in order or
/// shuffled by a seeded generator, the last short batch kept or dropped.
///
/// Each pass ([`DataLoader::iter`], or `for batch in &loader`) is one epoch. With
/// [`DataLoader::shuffle`] every epoch draws a new order from the loader's generator, so the
/// sequence of epochs is the same on every run with the same seed.
pub struct DataLoader<D> {
    dataset: D,
    batch_size: usize,
    shuffle: Option<RefCell<Rng>>,
    drop_last: bool,
}

impl<D: IndexedDataset> DataLoader<D> {
    /// Batches of `batch_size` in dataset order, the last one possibly shorter.
    ///
    /// # Panics
    /// If `batch_size` is 0.
    pub fn new(dataset: D, batch_size: usize) -> Self {
        assert!(batch_size > 0, "DataLoader: batch_size must be at least 1");
        DataLoader { dataset, batch_size, shuffle: None, drop_last: false }
    }
    /// Shuffles the examples every epoch with a generator seeded by `seed`.
    pub fn shuffle(mut self, seed: u64) -> Self {
        self.shuffle = Some(RefCell::new(Rng::new(seed)));
        self
    }
    /// Whether to drop the last batch when it has fewer than `batch_size` examples.
    pub fn drop_last(mut self, drop: bool) -> Self {
        self.drop_last = drop;
        self
    }
    /// The batch size.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }
    /// The dataset.
    pub fn dataset(&self) -> &D {
        &self.dataset
    }
    /// Number of batches per epoch.
    pub fn len(&self) -> usize {
        let n = self.dataset.len();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }
    /// Whether an epoch has no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The example order of the next epoch (advances the shuffle generator).
    fn epoch_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.dataset.len()).collect();
        if let Some(rng) = &self.shuffle {
            rng.borrow_mut().shuffle(&mut order);
        }
        order
    }
    /// One epoch of batches.
    pub fn iter(&self) -> Batches<'_, D> {
        Batches { loader: self, order: self.epoch_order(), pos: 0 }
    }
}

/// The batches of one epoch of a [`DataLoader`].
pub struct Batches<'a, D> {
    loader: &'a DataLoader<D>,
    order: Vec<usize>,
    pos: usize,
}

impl<D: IndexedDataset> Iterator for Batches<'_, D> {
    type Item = D::Batch;
    fn next(&mut self) -> Option<D::Batch> {
        let bs = self.loader.batch_size;
        let left = self.order.len().saturating_sub(self.pos);
        if left == 0 || (self.loader.drop_last && left < bs) {
            return None;
        }
        let end = (self.pos + bs).min(self.order.len());
        let b = self.loader.dataset.batch(&self.order[self.pos..end]);
        self.pos = end;
        Some(b)
    }
}

impl<'a, D: IndexedDataset> IntoIterator for &'a DataLoader<D> {
    type Item = D::Batch;
    type IntoIter = Batches<'a, D>;
    fn into_iter(self) -> Batches<'a, D> {
        self.iter()
    }
}

// ------------------------------------------------------------------------------- CSV

/// Which column of a CSV file holds the label.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum LabelColumn {
    /// The last column (the default).
    #[default]
    Last,
    /// The first column.
    First,
    /// A 0-based column index.
    Index(usize),
    /// The column with this header name (needs a header).
    Name(String),
}

/// Options of [`load_csv_xy`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CsvXyOptions {
    /// Whether the first record is a header: `Some(true)`, `Some(false)`, or `None` to decide
    /// from the file (a header when some field of the first record is not a number).
    pub header: Option<bool>,
    /// The label column.
    pub label: LabelColumn,
}

/// A numeric CSV table: features and labels as numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvXy {
    /// Row-major features, `n_features` per row.
    pub features: Vec<f32>,
    /// Number of feature columns.
    pub n_features: usize,
    /// One label per row.
    pub labels: Vec<f32>,
    /// Feature column names (from the header, else `x0`, `x1`, …).
    pub feature_names: Vec<String>,
    /// Label column name (from the header, else `y`).
    pub label_name: String,
    /// The 1-based line of each row (for error messages).
    pub lines: Vec<usize>,
    /// The file (`<bytes>` for in-memory input).
    pub path: std::path::PathBuf,
}

impl CsvXy {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.labels.len()
    }
    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
    /// The labels as class ids: each must be a non-negative whole number (the error names the
    /// line and the label column).
    pub fn class_labels(&self) -> Result<Vec<usize>, DataError> {
        self.labels
            .iter()
            .zip(&self.lines)
            .map(|(&y, &line)| {
                if y >= 0.0 && y.fract() == 0.0 {
                    Ok(y as usize)
                } else {
                    Err(DataError {
                        path: self.path.clone(),
                        location: Location::Line(line),
                        msg: format!("label column {:?}: {y} is not a class id (a non-negative whole number)", self.label_name),
                    })
                }
            })
            .collect()
    }
    /// A classification dataset: features `[n_features]` per example, class-id labels.
    pub fn classification(&self) -> Result<TensorDataset<f32, usize>, NnError> {
        Ok(TensorDataset::new(self.features.clone(), &[self.n_features], self.class_labels()?)?)
    }
    /// A regression dataset: features `[n_features]` per example, real targets.
    pub fn regression(&self) -> Result<TensorDataset<f32, f32>, NnError> {
        TensorDataset::new(self.features.clone(), &[self.n_features], self.labels.clone())
    }
}

fn parse_number(s: &str) -> Option<f32> {
    s.trim().parse::<f32>().ok().filter(|v| v.is_finite())
}

/// Parses numeric CSV text held in memory (see [`load_csv_xy`]).
pub fn csv_xy_from_bytes(bytes: &[u8], opts: &CsvXyOptions) -> Result<CsvXy, DataError> {
    let records: Vec<CsvRecord> = csv_from_bytes(bytes)?;
    let Some(first) = records.first() else {
        return Err(DataError::whole("no records (the file is empty)"));
    };
    let header = opts.header.unwrap_or_else(|| first.fields.iter().any(|f| parse_number(f).is_none()));
    let ncol = first.fields.len();
    if ncol < 2 {
        return Err(DataError::at_line(first.line, format!("{ncol} column; need at least one feature column and a label column")));
    }
    let names: Vec<String> = if header { first.fields.iter().map(|s| s.trim().to_string()).collect() } else { Vec::new() };
    let label = match &opts.label {
        LabelColumn::Last => ncol - 1,
        LabelColumn::First => 0,
        LabelColumn::Index(i) if *i < ncol => *i,
        LabelColumn::Index(i) => return Err(DataError::at_line(first.line, format!("label column {i} does not exist ({ncol} columns, numbered from 0)"))),
        LabelColumn::Name(n) => {
            if !header {
                return Err(DataError::whole(format!("label column {n:?} given by name, but the file has no header")));
            }
            names.iter().position(|c| c == n).ok_or_else(|| DataError::at_line(first.line, format!("no column named {n:?} (columns: {})", names.join(", "))))?
        }
    };
    let col_name = |c: usize| if header { names[c].clone() } else if c == label { "y".to_string() } else { format!("x{}", if c < label { c } else { c - 1 }) };
    let mut out = CsvXy {
        features: Vec::new(),
        n_features: ncol - 1,
        labels: Vec::new(),
        feature_names: (0..ncol).filter(|&c| c != label).map(col_name).collect(),
        label_name: col_name(label),
        lines: Vec::new(),
        path: super::error::MEMORY.into(),
    };
    for rec in records.iter().skip(header as usize) {
        if rec.fields.len() != ncol {
            return Err(DataError::at_line(rec.line, format!("{} fields, expected {ncol} (as on line {})", rec.fields.len(), first.line)));
        }
        for (c, f) in rec.fields.iter().enumerate() {
            let v = parse_number(f).ok_or_else(|| {
                let what = if f.trim().is_empty() { "empty field".to_string() } else { format!("{:?} is not a finite number", f) };
                DataError::at_line(rec.line, format!("column {} ({:?}): {what}", c + 1, col_name(c)))
            })?;
            if c == label {
                out.labels.push(v);
            } else {
                out.features.push(v);
            }
        }
        out.lines.push(rec.line);
    }
    if out.labels.is_empty() {
        return Err(DataError::whole("no data rows (only a header)"));
    }
    Ok(out)
}

/// Reads a CSV file of numbers: one label column (by default the last), every other column a
/// feature. Errors name the file, the line and the column (number and name) of a field that is
/// not a finite number, a row with the wrong number of fields, or a missing label column.
///
/// ```no_run
/// use chi_nn::data::loader::{load_csv_xy, CsvXyOptions, DataLoader};
/// let table = load_csv_xy("data.csv", &CsvXyOptions::default())?;
/// let loader = DataLoader::new(table.classification()?, 32).shuffle(0);
/// # Ok::<(), chi_nn::NnError>(())
/// ```
pub fn load_csv_xy(path: impl AsRef<Path>, opts: &CsvXyOptions) -> Result<CsvXy, DataError> {
    let path = path.as_ref();
    let mut t = parse_file(path, |b| csv_xy_from_bytes(b, opts))?;
    t.path = path.to_path_buf();
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(n: usize) -> TensorDataset<f32, usize> {
        TensorDataset::new((0..2 * n).map(|v| v as f32).collect(), &[2], (0..n).collect()).unwrap()
    }

    #[test]
    fn batches_cover_every_example_once_per_epoch() {
        let loader = DataLoader::new(ds(10), 3).shuffle(5);
        assert_eq!(loader.len(), 4);
        let mut orders = Vec::new();
        for _ in 0..2 {
            let mut seen: Vec<usize> = Vec::new();
            let mut sizes = Vec::new();
            for (x, y) in &loader {
                assert_eq!(x.shape(), [y.len(), 2]);
                for (r, &i) in y.iter().enumerate() {
                    assert_eq!(x.to_vec()[2 * r], 2.0 * i as f32, "features travel with their label");
                }
                sizes.push(y.len());
                seen.extend(y);
            }
            assert_eq!(sizes, [3, 3, 3, 1]);
            orders.push(seen.clone());
            seen.sort();
            assert_eq!(seen, (0..10).collect::<Vec<_>>());
        }
        assert_ne!(orders[0], orders[1], "a new order each epoch");
        assert_ne!(orders[0], (0..10).collect::<Vec<_>>(), "shuffled");
        // Same seed, same sequence of epochs.
        let again = DataLoader::new(ds(10), 3).shuffle(5);
        let first: Vec<usize> = again.iter().flat_map(|(_, y)| y).collect();
        assert_eq!(first, orders[0]);
    }

    #[test]
    fn drop_last_and_order_without_shuffle() {
        let loader = DataLoader::new(ds(7), 3).drop_last(true);
        let ys: Vec<Vec<usize>> = loader.iter().map(|(_, y)| y).collect();
        assert_eq!(ys, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        assert_eq!(loader.len(), 2);
        assert!(TensorDataset::new(vec![0.0f32; 5], &[2], vec![0usize, 1]).is_err());
    }

    #[test]
    fn csv_gives_numbers_and_clear_errors() {
        let t = csv_xy_from_bytes(b"a,b,label\n1,2.5,0\n-3,4e-1,1\n", &CsvXyOptions::default()).unwrap();
        assert_eq!(t.features, vec![1.0, 2.5, -3.0, 0.4]);
        assert_eq!(t.labels, vec![0.0, 1.0]);
        assert_eq!(t.feature_names, ["a", "b"]);
        assert_eq!(t.class_labels().unwrap(), vec![0, 1]);
        let t = csv_xy_from_bytes(b"0,1,2\n3,4,5\n", &CsvXyOptions { header: None, label: LabelColumn::First }).unwrap();
        assert_eq!((t.features, t.labels), (vec![1.0, 2.0, 4.0, 5.0], vec![0.0, 3.0]));

        let e = csv_xy_from_bytes(b"a,b,y\n1,2,0\n1,x,1\n", &CsvXyOptions::default()).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("column 2") && e.contains("\"b\"") && e.contains("\"x\""), "{e}");
        let e = csv_xy_from_bytes(b"a,b,y\n1,2,0\n1,2\n", &CsvXyOptions::default()).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("2 fields, expected 3"), "{e}");
        let e = csv_xy_from_bytes(b"a,b,y\n1,2,0.5\n", &CsvXyOptions::default()).unwrap().class_labels().unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("0.5"), "{e}");
        let e = csv_xy_from_bytes(b"a,b,y\n1,,0\n", &CsvXyOptions::default()).unwrap_err().to_string();
        assert!(e.contains("empty field"), "{e}");
        let e = csv_xy_from_bytes(b"a,b,y\n1,2,0\n", &CsvXyOptions { header: None, label: LabelColumn::Name("z".into()) }).unwrap_err().to_string();
        assert!(e.contains("no column named \"z\""), "{e}");
        assert!(csv_xy_from_bytes(b"", &CsvXyOptions::default()).is_err());
        let dir = std::env::temp_dir().join(format!("chi-csvxy-{}.csv", std::process::id()));
        std::fs::write(&dir, "x,y\n1,nan\n").unwrap();
        let e = load_csv_xy(&dir, &CsvXyOptions::default()).unwrap_err().to_string();
        assert!(e.starts_with(&dir.display().to_string()) && e.contains("line 2"), "{e}");
        std::fs::remove_file(&dir).ok();
    }
}
