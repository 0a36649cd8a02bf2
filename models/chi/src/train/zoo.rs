//! The models of `chi train` for images and text beyond the MLP and the recurrent classifiers:
//! a small convolutional network for images ([`ImageCnn`]), a bag-of-words classifier
//! ([`BagOfWords`]) and Kim's text CNN ([`TextCnn`]), plus pretrained word vectors for any
//! model with an embedding ([`pretrained_embedding`]).
//!
//! ```text
//! cnn        x [B, C, H, W] → (conv 3×3, pad 1 → ReLU → max-pool 2×2) per entry of `channels`
//!            → flatten → (linear → ReLU → dropout) per entry of `hidden` → linear
//! ca-cnn     as cnn, with context-aware convolutions (a per-position gate χ, [CAML] §3.5.1)
//! bow        tokens → embedding rows → mean per text → (linear → tanh → dropout) per `hidden` → linear
//! ca-bsfe    tokens → Σ_w χ̃(w)·v0 + (1 − χ̃(w))·w′ ([CAML] §3.2, Eq. 20) → linear
//! text-cnn   tokens → embedding [B, L, E] (zero past each text) → filters of widths 3, 4, 5
//!            → ReLU → max over the windows inside the text → concat → dropout → linear  (Kim 2014)
//! rcnn       tokens → embedding → stacked RCNN layers (Lei 2017: non-consecutive n-grams with
//!            decay λ) → each layer pooled over the words → concat → linear
//! han        tokens cut into sentences after `.`, `!`, `?` → word BiGRU + attention per
//!            sentence → sentence BiGRU + attention → linear  (Yang et al. 2016)
//! ```
//!
//! Every model returns its embedding lookups in [`ForwardOut::embedded`] so `chi predict` can
//! rank the words of a text by |∂score/∂embedding| (saliency).

use super::model::{EmbedLayout, Embedded, ForwardOut, Model, ModelConfig};
use chi_autodiff::{Rng, Tensor};
use chi_nn::dataset::{check_options, option_usize, Dataset, Inputs, Split, Task};
use chi_nn::layers::{Conv1dText, Conv2d, Dropout, Embedding, Linear, MaxPool2d};
use chi_nn::params::ParamStore;
use chi_nn::Activation;
use std::rc::Rc;

/// Outputs of the head for a task: classes, or one value.
pub fn outputs_for(task: Task) -> usize {
    match task {
        Task::Classification { classes } => classes,
        Task::Binary | Task::Regression => 1,
    }
}

/// A true/false option of `cfg` (false when absent), with the model's name in the error.
pub fn option_flag(cfg: &ModelConfig, key: &str, what: &str) -> Result<bool, String> {
    match cfg.options.get(key) {
        None => Ok(false),
        Some(v) => v.as_bool().ok_or_else(|| format!("{what}: option {key:?} must be true or false, got {v}")),
    }
}

fn usize_list(cfg: &ModelConfig, key: &str, default: &[usize], what: &str) -> Result<Vec<usize>, String> {
    match cfg.options.get(key) {
        None => Ok(default.to_vec()),
        Some(v) => {
            let list = v.as_array().ok_or_else(|| format!("{what}: option {key:?} must be a list of positive sizes, got {v}"))?;
            let out: Option<Vec<usize>> = list.iter().map(|x| x.as_u64().filter(|&n| n > 0).map(|n| n as usize)).collect();
            match out {
                Some(o) if !o.is_empty() => Ok(o),
                _ => Err(format!("{what}: option {key:?} must be a non-empty list of positive sizes, got {v}")),
            }
        }
    }
}

// ------------------------------------------------------------------------------- cnn, ca-cnn

/// One convolution of an [`ImageCnn`]: 3×3, padding 1.
enum ConvBlock {
    /// A plain convolution (`conv{i}.weight`, `conv{i}.bias`, group `conv`).
    Plain(Conv2d<f32>),
    /// A context-aware convolution (`chi_ca::cnn::CaConv2d`, \[CAML\] §3.5.1): `w = χ ⊙ (W ⋆ x
    /// + b) + (1 − χ) ⊙ w0` with a per-position gate `χ = σ(w_χ ⋆ x + b_χ)`; parameters
    /// `conv{i}.{w,b,w_chi,b_chi,w0}`.
    Context(chi_ca::cnn::CaConv2d<f32>),
}

impl ConvBlock {
    fn forward(&self, x: &Tensor<f32>) -> Tensor<f32> {
        match self {
            ConvBlock::Plain(c) => c.forward(x),
            ConvBlock::Context(c) => c.forward(x).0,
        }
    }
}

/// A small convolutional image classifier (see the module docs): `cnn`, or `ca-cnn` with
/// context-aware convolutions. Dense layers `fc{i}.*` (group `hidden`), `head.*` (group
/// `output`).
pub struct ImageCnn {
    store: ParamStore<f32>,
    convs: Vec<ConvBlock>,
    fcs: Vec<Linear<f32>>,
    head: Linear<f32>,
    pool: MaxPool2d,
    dropout: Dropout,
}

impl ImageCnn {
    /// For images `[c, h, w]`; `channels` per convolution block (context-aware ones when
    /// `context_aware`), `hidden` dense sizes.
    pub fn new(image: &[usize], channels: &[usize], hidden: &[usize], outputs: usize, dropout: f64, context_aware: bool, rng: &mut Rng) -> Result<ImageCnn, String> {
        let what = if context_aware { "ca-cnn" } else { "cnn" };
        let [c, mut h, mut w] = image[..] else {
            return Err(format!("{what} needs images [channels, height, width], got examples of shape {image:?}"));
        };
        let mut store = ParamStore::new();
        let mut convs = Vec::new();
        let mut cin = c;
        for (i, &co) in channels.iter().enumerate() {
            if h < 2 || w < 2 {
                return Err(format!("{what}: {} pooling blocks shrink {:?} below 2×2 at block {i}; use fewer channels entries", channels.len(), image));
            }
            chi_nn::limits::check_elements(&format!("{what} convolution {i} (channels out × in × 3 × 3)"), &[co, cin, 9]).map_err(|e| e.to_string())?;
            let name = format!("conv{i}");
            convs.push(if context_aware {
                ConvBlock::Context(chi_ca::cnn::CaConv2d::new(&mut store, &name, cin, co, 3, 1, 1, rng))
            } else {
                ConvBlock::Plain(Conv2d::in_store(&mut store, &name, "conv", cin, co, 3, 1, 1, true, rng))
            });
            cin = co;
            h /= 2;
            w /= 2;
        }
        chi_nn::limits::check_elements(&format!("{what} flattened features"), &[cin, h, w]).map_err(|e| e.to_string())?;
        let mut fcs = Vec::new();
        let mut input = cin * h * w;
        for (i, &n) in hidden.iter().enumerate() {
            chi_nn::limits::check_elements(&format!("{what} dense layer"), &[input, n]).map_err(|e| e.to_string())?;
            fcs.push(Linear::in_store(&mut store, &format!("fc{i}"), "hidden", input, n, true, rng));
            input = n;
        }
        chi_nn::limits::check_elements(&format!("{what} output layer"), &[input, outputs]).map_err(|e| e.to_string())?;
        let head = Linear::in_store(&mut store, "head", "output", input, outputs, true, rng);
        Ok(ImageCnn { store, convs, fcs, head, pool: MaxPool2d::new(2, 2), dropout: Dropout::with_seed(dropout, 0) })
    }
    /// Logits of a `[B, C, H, W]` batch.
    pub fn forward_x(&self, x: &Tensor<f32>, train: bool, rng: &mut Rng) -> Tensor<f32> {
        let mut h = x.clone();
        for c in &self.convs {
            h = self.pool.forward(&c.forward(&h).relu());
        }
        let b = h.dim(0);
        let mut h = h.reshape(&[b, h.numel() / b.max(1)]);
        for fc in &self.fcs {
            h = self.dropout.forward_rng(&fc.forward(&h).relu(), train, rng);
        }
        self.head.forward(&h)
    }
}

impl Model for ImageCnn {
    fn store(&self) -> &ParamStore<f32> {
        &self.store
    }
    fn forward(&self, split: &Split, idx: &[usize], train: bool, rng: &mut Rng) -> ForwardOut {
        ForwardOut::new(self.forward_x(&split.inputs.dense_batch(idx), train, rng))
    }
}

fn build_image_cnn(cfg: &ModelConfig, ds: &Dataset, context_aware: bool, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    let what = if context_aware { "ca-cnn" } else { "cnn" };
    check_options(&cfg.options, &["channels"], &format!("model {what}")).map_err(|e| e.to_string())?;
    cfg.check_unused(what, &["activation"], "; its layers are ReLU")?;
    let Inputs::Dense { shape, .. } = &ds.train.inputs else {
        return Err(format!("{what} needs image inputs; dataset {:?} has token sequences (use bow, text-cnn, lstm, gru or ca-rnn)", ds.name));
    };
    let image: Vec<usize> = if shape.len() == 2 { vec![1, shape[0], shape[1]] } else { shape.clone() };
    if image.len() != 3 {
        return Err(format!("{what} needs image inputs [channels, height, width]; dataset {:?} has feature vectors of shape {shape:?} (use mlp)", ds.name));
    }
    let channels = usize_list(cfg, "channels", &[32, 64], what)?;
    Ok(Box::new(ImageCnn::new(&image, &channels, &cfg.hidden, outputs_for(ds.task), cfg.dropout, context_aware, rng)?))
}

/// `chi train --model cnn`: options `channels` (default `[32, 64]`); `hidden` are the dense
/// layers after the convolutions.
pub fn build_cnn(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    build_image_cnn(cfg, ds, false, rng)
}

/// `chi train --model ca-cnn`: as `cnn`, with context-aware convolutions.
pub fn build_ca_cnn(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    build_image_cnn(cfg, ds, true, rng)
}

// ------------------------------------------------------------------------------- embeddings

/// Word vectors for the vocabulary of a text dataset from `path`: a GloVe text file
/// (`word v1 … vd` per line) or an `.npy` matrix with a `words.txt` beside it. Returns the
/// `[vocab, d]` table (rows of unknown words drawn from U(−0.25, 0.25), as Kim) and how many
/// words were found.
pub fn pretrained_table(path: &str, ds: &Dataset, rng: &mut Rng) -> Result<(Vec<f32>, usize, usize), String> {
    let schema = ds.schema.as_ref().and_then(|s| s.vocab().cloned()).ok_or_else(|| {
        format!("option pretrained: dataset {:?} has no vocabulary of words (pretrained vectors need a text dataset read from files)", ds.name)
    })?;
    let p = std::path::Path::new(path);
    let vectors = if p.extension().is_some_and(|e| e == "npy") {
        let words = p.with_file_name("words.txt");
        chi_nn::data::load_glove_npy(p, &words).map_err(|e| format!("option pretrained: {e}"))?
    } else {
        chi_nn::data::load_glove_txt(p).map_err(|e| format!("option pretrained: {e}"))?
    };
    let d = vectors.dim;
    chi_nn::limits::check_elements("pretrained embedding table (vocabulary × dim)", &[schema.len(), d]).map_err(|e| e.to_string())?;
    let mut table = Vec::with_capacity(schema.len() * d);
    let mut hits = 0;
    for w in schema.words() {
        match vectors.get(w) {
            Some(v) => {
                hits += 1;
                table.extend_from_slice(v);
            }
            None => table.extend((0..d).map(|_| rng.uniform(-0.25, 0.25) as f32)),
        }
    }
    Ok((table, d, hits))
}

/// The embedding of a text model: `embed` (default 64) wide, or as wide as the `pretrained`
/// vectors, which then initialise it. Prints how many words had a vector.
pub fn pretrained_embedding(store: &mut ParamStore<f32>, cfg: &ModelConfig, ds: &Dataset, vocab: usize, default_dim: usize, what: &str, rng: &mut Rng) -> Result<Embedding<f32>, String> {
    let embed_opt = cfg.options.get("embed").map(|_| option_usize(&cfg.options, "embed", default_dim, what)).transpose().map_err(|e| e.to_string())?;
    match cfg.options.get("pretrained") {
        None => {
            let dim = embed_opt.unwrap_or(default_dim);
            if dim == 0 {
                return Err(format!("{what}: option \"embed\" must be at least 1"));
            }
            chi_nn::limits::check_elements("embedding table (vocabulary × embed)", &[vocab, dim]).map_err(|e| e.to_string())?;
            Ok(Embedding::in_store(store, "embedding", "embedding", vocab, dim, false, rng))
        }
        Some(v) => {
            let path = v.as_str().ok_or_else(|| format!("{what}: option \"pretrained\" must be a file path, got {v}"))?;
            let (table, d, hits) = pretrained_table(path, ds, rng)?;
            if let Some(e) = embed_opt.filter(|&e| e != d) {
                return Err(format!("{what}: option embed = {e} differs from the {d}-dimensional vectors of {path}"));
            }
            eprintln!("{what}: {hits} of {vocab} vocabulary words have a pretrained vector in {path}");
            let emb = Embedding::in_store(store, "embedding", "embedding", vocab, d, false, rng);
            emb.weight.set_values(table);
            Ok(emb)
        }
    }
}

fn token_batch<'a>(split: &'a Split, idx: &[usize], what: &str) -> Vec<&'a [usize]> {
    let Inputs::Tokens { seqs, .. } = &split.inputs else { panic!("{what}: needs token-sequence inputs") };
    idx.iter().map(|&i| seqs[i].as_slice()).collect()
}

// ------------------------------------------------------------------------------------ bow

/// Bag of words: the mean of a text's word vectors, then dense layers (see the module docs).
pub struct BagOfWords {
    store: ParamStore<f32>,
    embedding: Embedding<f32>,
    fcs: Vec<Linear<f32>>,
    head: Linear<f32>,
    dropout: Dropout,
}

impl Model for BagOfWords {
    fn store(&self) -> &ParamStore<f32> {
        &self.store
    }
    fn forward(&self, split: &Split, idx: &[usize], train: bool, rng: &mut Rng) -> ForwardOut {
        let batch = token_batch(split, idx, "bow");
        let ids: Vec<usize> = batch.iter().flat_map(|s| s.iter().copied()).collect();
        let bag_of: Vec<usize> = batch.iter().enumerate().flat_map(|(b, s)| std::iter::repeat_n(b, s.len())).collect();
        let rows = self.embedding.forward(&ids); // [tokens, E]
        let n = batch.len();
        let inv: Vec<f32> = batch.iter().map(|s| 1.0 / s.len().max(1) as f32).collect();
        let sums = rows.scatter_rows(Rc::new(bag_of), n);
        let mut h = sums.reshape(&[n, self.embedding.dim()]).mul(&Tensor::from_vec(inv, &[n, 1]));
        for fc in &self.fcs {
            h = self.dropout.forward_rng(&fc.forward(&h).tanh(), train, rng);
        }
        let offsets = batch.iter().scan(0, |o, s| {
            let here = *o;
            *o += s.len();
            Some(here)
        });
        ForwardOut { embedded: vec![Embedded { tensor: rows, layout: EmbedLayout::Flat { offsets: offsets.collect() } }], ..ForwardOut::new(self.head.forward(&h)) }
    }
}

/// `chi train --model bow`: options `embed` (default 64), `pretrained` (vectors file);
/// `hidden` dense layers after the mean (`--hidden` with no layers: give `[]` in a config).
pub fn build_bow(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    check_options(&cfg.options, &["embed", "pretrained"], "model bow").map_err(|e| e.to_string())?;
    cfg.check_unused("bow", &["activation"], "; its hidden layers are tanh")?;
    let Inputs::Tokens { vocab, .. } = &ds.train.inputs else {
        return Err(format!("bow needs text (token sequences); dataset {:?} has dense inputs (use mlp or cnn)", ds.name));
    };
    let mut store = ParamStore::new();
    let embedding = pretrained_embedding(&mut store, cfg, ds, *vocab, 64, "bow", rng)?;
    let mut fcs = Vec::new();
    let mut input = embedding.dim();
    for (i, &n) in cfg.hidden.iter().enumerate() {
        fcs.push(Linear::in_store(&mut store, &format!("fc{i}"), "hidden", input, n, true, rng));
        input = n;
    }
    let head = Linear::in_store(&mut store, "head", "output", input, outputs_for(ds.task), true, rng);
    Ok(Box::new(BagOfWords { store, embedding, fcs, head, dropout: Dropout::with_seed(cfg.dropout, 0) }))
}

// ------------------------------------------------------------------------------- ca-bsfe

/// CA-BSFE (\[CAML\] §3.2, Eq. 19–22, `chi_ca::bsfe::CaBsfe`): each word's vector is blended
/// with a shared default by its own gate χ̃, summed over the text, then a linear head. The
/// unknown word `<unk>` embeds as the default (Eq. 21–22).
pub struct CaBsfeModel {
    store: ParamStore<f32>,
    bsfe: chi_ca::bsfe::CaBsfe<f32>,
    head: Linear<f32>,
}

impl Model for CaBsfeModel {
    fn store(&self) -> &ParamStore<f32> {
        &self.store
    }
    fn forward(&self, split: &Split, idx: &[usize], _train: bool, _rng: &mut Rng) -> ForwardOut {
        let bags: Vec<Vec<usize>> = token_batch(split, idx, "ca-bsfe")
            .iter()
            .map(|s| s.iter().map(|&t| if t == chi_nn::userdata::text::UNK_ID { chi_ca::bsfe::OOV } else { t }).collect())
            .collect();
        ForwardOut::new(self.head.forward(&self.bsfe.forward(&bags)))
    }
}

/// `chi train --model ca-bsfe`: options `embed` (n, default 64) and `chi_dim` (m, default 8).
pub fn build_ca_bsfe(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    let what = "ca-bsfe";
    check_options(&cfg.options, &["embed", "chi_dim"], "model ca-bsfe").map_err(|e| e.to_string())?;
    cfg.check_unused(what, &["hidden", "dropout", "activation"], "; its sizes are the options embed and chi_dim")?;
    let Inputs::Tokens { vocab, .. } = &ds.train.inputs else {
        return Err(format!("ca-bsfe needs text (token sequences); dataset {:?} has dense inputs (use mlp or cnn)", ds.name));
    };
    let n = option_usize(&cfg.options, "embed", 64, what).map_err(|e| e.to_string())?;
    let m = option_usize(&cfg.options, "chi_dim", 8, what).map_err(|e| e.to_string())?;
    if n == 0 || m == 0 {
        return Err("ca-bsfe: options embed and chi_dim must be at least 1".into());
    }
    chi_nn::limits::check_elements("ca-bsfe embedding table (vocabulary × (embed + chi_dim))", &[*vocab, n + m]).map_err(|e| e.to_string())?;
    let mut store = ParamStore::new();
    let bsfe = chi_ca::bsfe::CaBsfe::new(&mut store, "bsfe", *vocab, n, m, rng);
    let head = Linear::in_store(&mut store, "head", "output", n, outputs_for(ds.task), true, rng);
    Ok(Box::new(CaBsfeModel { store, bsfe, head }))
}

// ------------------------------------------------------------------------------- text-cnn

/// Kim's text CNN (see the module docs). Parameters `embedding.weight`, `conv.w{h}`,
/// `conv.b{h}`, `head.*`.
pub struct TextCnn {
    store: ParamStore<f32>,
    embedding: Embedding<f32>,
    conv: Conv1dText<f32>,
    head: Linear<f32>,
    dropout: Dropout,
    min_len: usize,
}

impl TextCnn {
    /// The embedded batch `[B, time, E]` (zero past each text) and the text lengths.
    fn embed(&self, split: &Split, idx: &[usize]) -> (Tensor<f32>, Tensor<f32>, Vec<usize>) {
        let batch = token_batch(split, idx, "text-cnn");
        let b = batch.len();
        let time = batch.iter().map(|s| s.len()).max().unwrap_or(0).max(self.min_len);
        let mut ids = vec![0usize; b * time];
        let mut mask = vec![0f32; b * time];
        for (r, s) in batch.iter().enumerate() {
            ids[r * time..r * time + s.len()].copy_from_slice(s);
            mask[r * time..r * time + s.len()].iter_mut().for_each(|m| *m = 1.0);
        }
        let e = self.embedding.forward_shaped(&ids, &[b, time]);
        let x = e.mul(&Tensor::from_vec(mask, &[b, time, 1]));
        (e, x, batch.iter().map(|s| s.len()).collect())
    }
}

impl Model for TextCnn {
    fn store(&self) -> &ParamStore<f32> {
        &self.store
    }
    fn forward(&self, split: &Split, idx: &[usize], train: bool, rng: &mut Rng) -> ForwardOut {
        let (e, x, lengths) = self.embed(split, idx);
        let time = x.dim(1);
        // Max over the windows inside each text, so its logits do not depend on the padding.
        let z = self.dropout.forward_rng(&self.conv.forward_lengths(&x, Some(&lengths)), train, rng);
        ForwardOut { embedded: vec![Embedded { tensor: e, layout: EmbedLayout::Padded { time } }], ..ForwardOut::new(self.head.forward(&z)) }
    }
    fn filter_maps(&self, split: &Split, idx: &[usize]) -> Option<(Vec<usize>, Vec<Tensor<f32>>)> {
        let maps = chi_autodiff::no_grad(|| {
            let (_, x, _) = self.embed(split, idx);
            self.conv.feature_maps(&x).iter().map(|m| m.permute(&[0, 2, 1])).collect()
        });
        Some((self.conv.filters.iter().map(|(h, _, _)| *h).collect(), maps))
    }
    fn features(&self, split: &Split, idx: &[usize]) -> Option<Tensor<f32>> {
        Some(chi_autodiff::no_grad(|| {
            let (_, x, lengths) = self.embed(split, idx);
            self.conv.forward_lengths(&x, Some(&lengths))
        }))
    }
}

/// `chi train --model text-cnn`: options `embed` (default 64), `pretrained`, `widths`
/// (default `[3, 4, 5]`), `filters` per width (default 100); `dropout` before the head (Kim: 0.5).
pub fn build_text_cnn(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    let what = "text-cnn";
    check_options(&cfg.options, &["embed", "pretrained", "widths", "filters"], "model text-cnn").map_err(|e| e.to_string())?;
    cfg.check_unused(what, &["hidden", "activation"], "; its sizes are the options widths and filters, its nonlinearity ReLU")?;
    let Inputs::Tokens { vocab, .. } = &ds.train.inputs else {
        return Err(format!("text-cnn needs text (token sequences); dataset {:?} has dense inputs (use mlp or cnn)", ds.name));
    };
    let mut store = ParamStore::new();
    let embedding = pretrained_embedding(&mut store, cfg, ds, *vocab, 64, what, rng)?;
    let widths = usize_list(cfg, "widths", &[3, 4, 5], what)?;
    let filters = option_usize(&cfg.options, "filters", 100, what).map_err(|e| e.to_string())?;
    if filters == 0 {
        return Err("text-cnn: option \"filters\" must be at least 1".into());
    }
    let check = |what: &str, dims: &[usize]| chi_nn::limits::check_elements(what, dims).map(|_| ()).map_err(|e| e.to_string());
    for &w in &widths {
        check("text-cnn: a convolution's weight (filters × width × embed)", &[filters, w, embedding.dim()])?;
    }
    check("text-cnn: the output layer (filters × widths × outputs)", &[filters, widths.len(), outputs_for(ds.task)])?;
    let conv = Conv1dText::in_store(&mut store, "conv", "conv", embedding.dim(), &widths, filters, Activation::Relu, rng);
    let head = Linear::in_store(&mut store, "head", "output", conv.out_features(), outputs_for(ds.task), true, rng);
    let min_len = *widths.iter().max().unwrap_or(&1);
    Ok(Box::new(TextCnn { store, embedding, conv, head, dropout: Dropout::with_seed(cfg.dropout, 0), min_len }))
}

// ----------------------------------------------------------------------------------- rcnn

/// Lei's recurrent-convolution text classifier ([`chi_rcnn::RcnnClassifier`]): stacked RCNN
/// layers, each pooled over the words, the pools concatenated into a linear head. Parameters
/// `embedding.weight`, `rcnn.l{i}.*` (and `rcnn.r{i}.*` read backwards), `head.*`.
pub struct RcnnModel {
    store: ParamStore<f32>,
    net: chi_rcnn::RcnnClassifier<f32>,
}

impl RcnnModel {
    fn run(&self, split: &Split, idx: &[usize], train: bool, rng: &mut Rng) -> (Tensor<f32>, Tensor<f32>, Tensor<f32>) {
        let batch = token_batch(split, idx, "rcnn");
        // Texts are never empty (an empty text is read as one unknown word).
        self.net.forward(&batch, train, rng).expect("rcnn: texts of at least one token")
    }
}

impl Model for RcnnModel {
    fn store(&self) -> &ParamStore<f32> {
        &self.store
    }
    fn forward(&self, split: &Split, idx: &[usize], train: bool, rng: &mut Rng) -> ForwardOut {
        let (logits, _, e) = self.run(split, idx, train, rng);
        let time = e.dim(1);
        ForwardOut { embedded: vec![Embedded { tensor: e, layout: EmbedLayout::Padded { time } }], ..ForwardOut::new(logits) }
    }
    fn features(&self, split: &Split, idx: &[usize]) -> Option<Tensor<f32>> {
        Some(chi_autodiff::no_grad(|| self.run(split, idx, false, &mut Rng::new(0)).1))
    }
}

/// The largest n-gram order `chi train --model rcnn` takes.
pub const RCNN_MAX_ORDER: usize = 8;

/// The options of `chi train --model rcnn` besides `embed` and `pretrained`.
pub const RCNN_OPTIONS: &[&str] = &["order", "decay", "pooling", "bidirectional", "map"];

/// `chi train --model rcnn`: `hidden` (one size per layer), `activation` (the layers' `g`,
/// default tanh; a config's `[model_options] activation`), `dropout` (on the embeddings and every layer's outputs), and the options
/// `embed` (default 64), `pretrained`, `order` (n-gram order, default 2), `decay` (a constant
/// λ in [0, 1), default 0.5; `"learned"` (a trained λ per unit), `"adaptive"` (λ_t = σ(W x_t + b))
/// or `"adaptive-h"` (also reading h_{t−1}, step by step, slower)), `map` (`"multiplicative"`,
/// the default, or `"additive"`), `pooling` (`"mean"`, the default, `"max"` or `"last"`) and
/// `bidirectional` (default false). A text shorter than `order` words holds no n-gram, so every
/// such text gets the same output (the layers' biases), as in the thesis; `order` 1 avoids it.
/// It trains with the general default optimiser (Adagrad,
/// 0.1): on 4,000 Pang & Lee sentences, 2000 steps, five seeds, its mean test accuracy was
/// 0.639 (0.671 with dropout 0.35) against 0.602 (0.631) with the thesis's Adam at 0.001
/// (README, "On your own texts", has the paired test).
pub fn build_rcnn(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    use chi_rcnn::{ClassifierConfig, Decay, FeatureMap, Pooling, RcnnConfig};
    let what = "rcnn";
    let known: Vec<&str> = ["embed", "pretrained"].iter().chain(RCNN_OPTIONS).copied().collect();
    check_options(&cfg.options, &known, "model rcnn").map_err(|e| e.to_string())?;
    let Inputs::Tokens { vocab, .. } = &ds.train.inputs else {
        return Err(format!("rcnn needs text (token sequences); dataset {:?} has dense inputs (use mlp or cnn)", ds.name));
    };
    let text = |key: &str, default: &str| -> Result<String, String> {
        match cfg.options.get(key) {
            None => Ok(default.to_string()),
            Some(v) => v.as_str().map(str::to_string).ok_or_else(|| format!("rcnn: option {key:?} must be a name, got {v}")),
        }
    };
    let order = option_usize(&cfg.options, "order", 2, what).map_err(|e| e.to_string())?;
    // The scan keeps `order` states of `hidden` values per word: a large order is memory, not
    // model (the thesis uses 1 to 3).
    if !(1..=RCNN_MAX_ORDER).contains(&order) {
        return Err(format!("rcnn: option \"order\" must be 1 to {RCNN_MAX_ORDER}, got {order}"));
    }
    let decay = match cfg.options.get("decay") {
        None => Decay::Constant(0.5),
        Some(v) => match (v.as_f64(), v.as_str()) {
            (Some(l), _) if (0.0..1.0).contains(&l) => Decay::Constant(l),
            (_, Some("learned")) => Decay::Learned(0.5),
            (_, Some("adaptive")) => Decay::AdaptiveX,
            (_, Some("adaptive-h")) => Decay::AdaptiveXH,
            _ => return Err(format!("rcnn: option \"decay\" must be a number in [0, 1), \"learned\", \"adaptive\" or \"adaptive-h\", got {v}")),
        },
    };
    let map = match text("map", "multiplicative")?.as_str() {
        "multiplicative" => FeatureMap::Multiplicative,
        "additive" => FeatureMap::Additive,
        other => return Err(format!("rcnn: option \"map\" must be \"multiplicative\" or \"additive\", got {other:?}")),
    };
    let pooling = match text("pooling", "mean")?.as_str() {
        "mean" => Pooling::Mean,
        "max" => Pooling::Max,
        "last" => Pooling::Last,
        other => return Err(format!("rcnn: option \"pooling\" must be \"mean\", \"max\" or \"last\", got {other:?}")),
    };
    let bidirectional = option_flag(cfg, "bidirectional", what)?;
    let mut store = ParamStore::new();
    let embedding = pretrained_embedding(&mut store, cfg, ds, *vocab, 64, what, rng)?;
    let layer = RcnnConfig { order, map, decay, activation: cfg.activation, ..RcnnConfig::new(1, 1) };
    let net_cfg = ClassifierConfig { layer, hidden: cfg.hidden.clone(), outputs: outputs_for(ds.task), pooling, bidirectional, dropout: cfg.dropout };
    let net = chi_rcnn::RcnnClassifier::new(&mut store, "rcnn", embedding, &net_cfg, rng).map_err(|e| format!("rcnn: {e}"))?;
    Ok(Box::new(RcnnModel { store, net }))
}

// ------------------------------------------------------------------------------------ han

/// Tokens that end a sentence for [`HanModel`].
const SENTENCE_ENDS: [&str; 3] = [".", "!", "?"];

/// The hierarchical attention network ([`chi_text::han::Han`]) on `chi train` text: each text
/// is cut into sentences after the tokens `.`, `!` and `?` (a text without them is one
/// sentence). Parameters `embedding.weight`, `word.*`, `word_att.*`, `sent.*`, `sent_att.*`,
/// `out.*`.
pub struct HanModel {
    han: chi_text::han::Han<f32>,
    /// Token ids that end a sentence.
    ends: Vec<usize>,
}

impl HanModel {
    /// A text cut into sentences after each sentence-final token (a text without one is one
    /// sentence; an empty text is one empty sentence).
    fn sentences(&self, seq: &[usize]) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new()];
        for &t in seq {
            out.last_mut().expect("never empty").push(t);
            if self.ends.contains(&t) {
                out.push(Vec::new());
            }
        }
        if out.len() > 1 && out.last().is_some_and(Vec::is_empty) {
            out.pop();
        }
        out
    }
    fn docs(&self, split: &Split, idx: &[usize]) -> Vec<Vec<Vec<usize>>> {
        token_batch(split, idx, "han").iter().map(|s| self.sentences(s)).collect()
    }
}

impl Model for HanModel {
    fn store(&self) -> &ParamStore<f32> {
        &self.han.store
    }
    fn forward(&self, split: &Split, idx: &[usize], _train: bool, _rng: &mut Rng) -> ForwardOut {
        let docs = self.docs(split, idx);
        let refs: Vec<&[Vec<usize>]> = docs.iter().map(Vec::as_slice).collect();
        let b = self.han.batch(&refs).expect("token ids come from the model's own vocabulary");
        let x = self.han.embed(&b);
        let out = self.han.forward_embedded(&x, &b).expect("the batch was laid out by the model");
        // Token t of text r sits at row (first sentence of r + its sentence) · W + position.
        let mut rows = Vec::with_capacity(docs.len());
        let mut first = 0;
        for d in &docs {
            let mut r = Vec::new();
            for (j, s) in d.iter().enumerate() {
                r.extend((0..s.len()).map(|p| (first + j) * b.max_words + p));
            }
            first += d.len();
            rows.push(r);
        }
        ForwardOut { embedded: vec![Embedded { tensor: x, layout: EmbedLayout::Indexed { rows } }], ..ForwardOut::new(out.logits) }
    }
    fn attention(&self, split: &Split, i: usize) -> Option<Vec<f64>> {
        let docs = self.docs(split, &[i]);
        let out = chi_autodiff::no_grad(|| self.han.forward(&[docs[0].as_slice()])).ok()?;
        let w = out.word_attention.shape()[1];
        let (wa, sa) = (out.word_attention.data(), out.sentence_attention.data());
        Some(docs[0].iter().enumerate().flat_map(|(j, s)| (0..s.len()).map(move |p| wa[j * w + p] as f64 * sa[j] as f64)).collect())
    }
}

/// `chi train --model han`: options `embed` (default 64), `pretrained`, `hidden` per GRU
/// direction (default 50) and `attention` size (default 100), Yang et al.'s sizes.
pub fn build_han(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    let what = "han";
    check_options(&cfg.options, &["embed", "pretrained", "hidden", "attention"], "model han").map_err(|e| e.to_string())?;
    cfg.check_unused(what, &["hidden", "dropout", "activation"], "; its sizes are the options hidden and attention (--model-option hidden=N)")?;
    let Inputs::Tokens { vocab, .. } = &ds.train.inputs else {
        return Err(format!("han needs text (token sequences); dataset {:?} has dense inputs (use mlp or cnn)", ds.name));
    };
    let hidden = option_usize(&cfg.options, "hidden", 50, what).map_err(|e| e.to_string())?;
    let attention = option_usize(&cfg.options, "attention", 100, what).map_err(|e| e.to_string())?;
    if hidden == 0 || attention == 0 {
        return Err("han: options \"hidden\" and \"attention\" must be at least 1".into());
    }
    // The largest tensors: the recurrent weights [hidden, 3·hidden] of each GRU direction, the
    // sentence GRU's input weight [2·hidden, 3·hidden], and the attention's [2·hidden, attention].
    for (what, dims) in [("han: a GRU weight (2·hidden × 3·hidden)", &[2, hidden, 3, hidden][..]), ("han: the attention weight (2·hidden × attention)", &[2, hidden, attention][..])] {
        chi_nn::limits::check_elements(what, dims).map_err(|e| e.to_string())?;
    }
    let mut store = ParamStore::new();
    let embedding = pretrained_embedding(&mut store, cfg, ds, *vocab, 64, what, rng)?;
    let ends = match ds.schema.as_deref().map(|s| &s.encoder) {
        Some(chi_nn::dataset::Encoder::Text { vocab, .. }) => vocab.words().iter().enumerate().filter(|(_, w)| SENTENCE_ENDS.contains(&w.as_str())).map(|(i, _)| i).collect(),
        _ => Vec::new(),
    };
    let hc = chi_text::han::HanConfig { vocab: *vocab, emb_dim: embedding.dim(), hidden, attention, classes: outputs_for(ds.task), seed: rng.next_u64() };
    let han = chi_text::han::Han::with_embedding(store, embedding, hc).map_err(|e| e.to_string())?;
    Ok(Box::new(HanModel { han, ends }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chi_nn::dataset::{Targets, Task};

    fn text_split() -> Split {
        Split { inputs: Inputs::Tokens { seqs: vec![vec![1, 2, 3], vec![4], vec![2, 2, 5, 1, 0, 3]], vocab: 6 }, targets: Targets::Classes(vec![0, 1, 0]) }
    }

    fn ds(split: Split, task: Task) -> Dataset {
        Dataset { name: "t".into(), task, train: split.clone(), valid: None, test: split, schema: None }
    }

    /// A text padded into a batch gives the logits it gives alone (no dropout).
    #[test]
    fn text_models_are_independent_of_batch_padding() {
        let d = ds(text_split(), Task::Classification { classes: 2 });
        type Builder = fn(&ModelConfig, &Dataset, &mut Rng) -> Result<Box<dyn Model>, String>;
        // Hidden sizes for bow, the default (which the others do not read) for the rest.
        let default = ModelConfig::default().hidden;
        for (build, hidden) in [(build_bow as Builder, vec![5]), (build_text_cnn, default.clone()), (build_ca_bsfe, default.clone()), (build_han, default.clone())] {
            let cfg = ModelConfig { hidden, ..Default::default() };
            let m = build(&cfg, &d, &mut Rng::new(1)).unwrap();
            let both = m.forward(&d.train, &[0, 1, 2], false, &mut Rng::new(0)).output.to_vec();
            for i in 0..3 {
                let alone = m.forward(&d.train, &[i], false, &mut Rng::new(0)).output.to_vec();
                for c in 0..2 {
                    assert!((both[2 * i + c] - alone[c]).abs() < 1e-5, "example {i}: {both:?} vs {alone:?}");
                }
            }
        }
    }

    /// The HAN cuts texts after sentence-final tokens; its attention per token is the word
    /// weight times the sentence weight, so it sums to 1 over the text; and with several
    /// sentences in a batch each text still gives the logits it gives alone.
    #[test]
    fn han_splits_sentences_and_its_attention_sums_to_one() {
        let d = ds(text_split(), Task::Classification { classes: 2 });
        let m = build_han(&ModelConfig::default(), &d, &mut Rng::new(3)).unwrap();
        let han = HanModel { han: chi_text::han::Han::with_embedding(ParamStore::new(), Embedding::new(6, 4), chi_text::han::HanConfig { vocab: 6, emb_dim: 4, hidden: 3, attention: 5, classes: 2, seed: 1 }).unwrap(), ends: vec![2] };
        assert_eq!(han.sentences(&[1, 2, 3]), vec![vec![1, 2], vec![3]]);
        assert_eq!(han.sentences(&[2, 2, 5, 1, 0, 3]), vec![vec![2], vec![2], vec![5, 1, 0, 3]]);
        assert_eq!(han.sentences(&[1, 2]), vec![vec![1, 2]]);
        assert_eq!(han.sentences(&[]), vec![Vec::<usize>::new()]);
        for model in [&han as &dyn Model, m.as_ref()] {
            for i in 0..3 {
                let a = model.attention(&d.train, i).unwrap();
                let Inputs::Tokens { seqs, .. } = &d.train.inputs else { unreachable!() };
                assert_eq!(a.len(), seqs[i].len());
                assert!((a.iter().sum::<f64>() - 1.0).abs() < 1e-5, "text {i}: {a:?}");
            }
            let both = model.forward(&d.train, &[0, 1, 2], false, &mut Rng::new(0)).output.to_vec();
            for i in 0..3 {
                let alone = model.forward(&d.train, &[i], false, &mut Rng::new(0)).output.to_vec();
                for c in 0..2 {
                    assert!((both[2 * i + c] - alone[c]).abs() < 1e-5, "example {i}: {both:?} vs {alone:?}");
                }
            }
        }
    }

    #[test]
    fn cnn_shapes_and_mismatched_data_are_errors() {
        let split = Split { inputs: Inputs::Dense { x: vec![0.5; 2 * 8 * 8], shape: vec![1, 8, 8] }, targets: Targets::Classes(vec![0, 1]) };
        let d = ds(split, Task::Classification { classes: 3 });
        for build in [build_cnn, build_ca_cnn] {
            let m = build(&ModelConfig { hidden: vec![7], ..Default::default() }, &d, &mut Rng::new(2)).unwrap();
            assert_eq!(m.forward(&d.train, &[0, 1], false, &mut Rng::new(0)).output.shape(), [2, 3]);
        }
        let e = build_cnn(&ModelConfig::default(), &ds(text_split(), Task::Binary), &mut Rng::new(2)).err().unwrap();
        assert!(e.contains("token sequences"), "{e}");
        let tab = Split { inputs: Inputs::Dense { x: vec![0.0; 6], shape: vec![3] }, targets: Targets::Classes(vec![0, 1]) };
        let e = build_cnn(&ModelConfig::default(), &ds(tab, Task::Binary), &mut Rng::new(2)).err().unwrap();
        assert!(e.contains("feature vectors"), "{e}");
        let e = build_bow(&ModelConfig::default(), &d, &mut Rng::new(2)).err().unwrap();
        assert!(e.contains("dense inputs"), "{e}");
    }
}
