//! Configurations and model files whose sizes come from outside: every tensor is bounded
//! before anything is allocated, and a file cannot describe a model larger than itself.

use chi_seq2seq::model::MAX_LAYERS;
use chi_seq2seq::{AttentionKind, CellKind, Seq2Seq, Seq2SeqConfig, Tokenizer, Translator, Vocab};
use std::path::{Path, PathBuf};

fn config(hidden: usize, emb: usize, layers: usize) -> Seq2SeqConfig {
    Seq2SeqConfig { src_vocab: 8, tgt_vocab: 7, emb, hidden, layers, attn_dim: 4, ..Seq2SeqConfig::default() }
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-s2s-robust-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Saves a tiny translator, then rewrites the metadata entries `edits` (weights unchanged).
fn forged(path: &Path, edits: &[(&str, &str)]) {
    let words = |w: &str| w.split(' ').map(String::from).collect::<Vec<_>>();
    let src_vocab = Vocab::build([words("the cat sat on").as_slice()], None);
    let tgt_vocab = Vocab::build([words("el gato").as_slice()], None);
    let cfg = Seq2SeqConfig { src_vocab: src_vocab.len(), tgt_vocab: tgt_vocab.len(), ..config(6, 4, 1) };
    let t = Translator { model: Seq2Seq::new(&cfg, 1).unwrap(), src_vocab, tgt_vocab, tokenizer: Tokenizer::Words };
    t.save(path).unwrap();
    let (mut meta, _) = chi_nn::checkpoint::unpack::<f32>(path, &std::fs::read(path).unwrap()).unwrap();
    for (k, v) in edits {
        meta.insert(k.to_string(), v.to_string());
    }
    chi_nn::checkpoint::save_params(path, t.model.store.params(), &meta).unwrap();
}

#[test]
fn validate_bounds_every_tensor_not_only_the_total() {
    // 11000 × 4·11000 recurrent weights exceed the per-tensor limit although the total is
    // within four times it.
    let e = config(11_000, 1, 1).validate().unwrap_err().to_string();
    assert!(e.contains("recurrent cell weight") && e.contains("limit"), "{e}");
    let e = Seq2SeqConfig { src_vocab: 1 << 25, ..config(4, 16, 1) }.validate().unwrap_err().to_string();
    assert!(e.contains("source embedding"), "{e}");
    assert!(config(64, 32, 2).validate().is_ok());
}

#[test]
fn layers_are_bounded() {
    let e = config(1, 1, 1 << 20).validate().unwrap_err().to_string();
    assert!(e.contains("layers") && e.contains(&MAX_LAYERS.to_string()), "{e}");
    assert!(config(2, 2, MAX_LAYERS).validate().is_ok());
    assert!(config(2, 2, MAX_LAYERS + 1).validate().is_err());
    // Zero layers names the same range as too many.
    let e = config(2, 2, 0).validate().unwrap_err().to_string();
    assert!(e.contains(&format!("layers = 0 is out of range 1..={MAX_LAYERS}")), "{e}");
}

#[test]
fn min_parameter_count_never_exceeds_the_built_model() {
    for cell in [CellKind::Lstm, CellKind::Gru, CellKind::CaRnn] {
        for attention in AttentionKind::ALL {
            for (bidirectional, input_feeding, layers) in [(false, false, 1), (true, true, 2), (true, false, 3), (false, true, 2)] {
                if attention == AttentionKind::LuongDot && bidirectional {
                    continue;
                }
                let cfg = Seq2SeqConfig { cell, attention, bidirectional, input_feeding, ..config(5, 3, layers) };
                let model = Seq2Seq::<f32>::new(&cfg, 0).unwrap();
                let actual: u128 = model.store.params().iter().map(|p| p.shape().iter().product::<usize>() as u128).sum();
                let bound = cfg.min_parameter_count();
                assert!(bound <= actual, "{cell:?} {} bi {bidirectional} feed {input_feeding} layers {layers}: {bound} > {actual}", attention.name());
                assert!(bound * 2 > actual, "the bound is too loose to be useful: {bound} vs {actual}");
            }
        }
    }
}

#[test]
fn a_model_file_cannot_describe_a_larger_model() {
    let d = dir("forged");
    let path = d.join("m.safetensors");
    forged(&path, &[]);
    assert!(Translator::load(&path).is_ok());
    // Sizes the configuration accepts, but far more parameters than the file holds: refused
    // before the model is built, naming the file.
    for edits in [&[("hidden", "2000")][..], &[("layers", "40")], &[("emb", "1"), ("hidden", "1"), ("layers", "64")]] {
        forged(&path, edits);
        let e = Translator::load(&path).err().unwrap().to_string();
        assert!(e.contains("m.safetensors") && e.contains("the file holds"), "{edits:?}: {e}");
    }
    // Beyond the per-tensor limit or the layer bound: a configuration error naming the file.
    for (edits, says) in [(&[("hidden", "11000")][..], "limit"), (&[("layers", "1048576"), ("hidden", "1"), ("emb", "1")], "layers")] {
        forged(&path, edits);
        let e = Translator::load(&path).err().unwrap().to_string();
        assert!(e.contains("m.safetensors") && e.contains(says), "{edits:?}: {e}");
    }
    std::fs::remove_dir_all(&d).ok();
}
