//! A trained model with its vocabularies and tokenizer, saved as one safetensors file (weights;
//! configuration and vocabularies in its metadata), loaded back, and used to translate lines —
//! with the attention weights of each output token, drawn as an SVG heat map.

use crate::data::tokenize;
use crate::decode::beam_search;
use crate::error::Seq2SeqError;
use crate::model::{AttentionKind, CellKind, Seq2Seq, Seq2SeqConfig};
use crate::vocab::Vocab;
use std::collections::BTreeMap;
use std::path::Path;

/// How input lines become source tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tokenizer {
    /// [`tokenize`]: lower-cased words and punctuation (translation).
    Words,
    /// One token per character of the lower-cased, trimmed line (grapheme-to-phoneme), with
    /// [`WORD_BOUNDARY`] for each run of whitespace between words.
    Chars,
}

impl Tokenizer {
    /// Source tokens of `line`.
    pub fn apply(&self, line: &str) -> Vec<String> {
        match self {
            Tokenizer::Words => tokenize(line),
            Tokenizer::Chars => {
                let lower = line.to_lowercase();
                let mut out = Vec::new();
                for (i, word) in lower.split_whitespace().enumerate() {
                    if i > 0 {
                        out.push(WORD_BOUNDARY.to_string());
                    }
                    out.extend(word.chars().map(|c| c.to_string()));
                }
                out
            }
        }
    }
    fn name(&self) -> &'static str {
        match self {
            Tokenizer::Words => "words",
            Tokenizer::Chars => "chars",
        }
    }
}

/// A model ready to translate.
pub struct Translator {
    /// The model.
    pub model: Seq2Seq<f32>,
    /// Source vocabulary.
    pub src_vocab: Vocab,
    /// Target vocabulary.
    pub tgt_vocab: Vocab,
    /// Source tokenizer.
    pub tokenizer: Tokenizer,
}

/// One translated line.
#[derive(Clone, Debug, PartialEq)]
pub struct Translation {
    /// Source tokens as the model saw them (`<unk>` for unknown ones), then `</s>`.
    pub source: Vec<String>,
    /// Output tokens.
    pub output: Vec<String>,
    /// Attention over the source for each output token (and the final `</s>` when produced).
    pub attention: Vec<Vec<f64>>,
    /// Summed log-probability of the output.
    pub log_prob: f64,
}

/// The token [`Tokenizer::Chars`] puts between words (U+2581, as SentencePiece marks them), so
/// that a character model can read and write spaces.
pub const WORD_BOUNDARY: &str = "\u{2581}";

/// Text of character tokens: concatenated, each [`WORD_BOUNDARY`] a space.
pub fn join_chars(tokens: &[String]) -> String {
    tokens.iter().map(|t| if t == WORD_BOUNDARY { " " } else { t.as_str() }).collect()
}

/// Prefix of the caller's own metadata entries in a saved model ([`Translator::save_with`]).
pub const EXTRA_PREFIX: &str = "extra.";

impl Translator {
    /// Saves weights, configuration, vocabularies and tokenizer to `path` (atomically).
    pub fn save(&self, path: &Path) -> Result<(), Seq2SeqError> {
        self.save_with(path, &BTreeMap::new())
    }

    /// [`Translator::save`] with the caller's own metadata entries (each key prefixed with
    /// [`EXTRA_PREFIX`]; [`Translator::load`] ignores them).
    pub fn save_with(&self, path: &Path, extra: &BTreeMap<String, String>) -> Result<(), Seq2SeqError> {
        let c = &self.model.config;
        let mut m: BTreeMap<String, String> = extra.iter().map(|(k, v)| (format!("{EXTRA_PREFIX}{k}"), v.clone())).collect();
        m.insert("format".to_string(), "chi-seq2seq-1".to_string());
        for (k, v) in [
            ("emb", c.emb.to_string()),
            ("hidden", c.hidden.to_string()),
            ("layers", c.layers.to_string()),
            ("bidirectional", c.bidirectional.to_string()),
            ("cell", c.cell.name().to_string()),
            ("attention", c.attention.spec()),
            ("input_feeding", c.input_feeding.to_string()),
            ("attn_dim", c.attn_dim.to_string()),
            ("tokenizer", self.tokenizer.name().to_string()),
        ] {
            m.insert(k.to_string(), v);
        }
        // Tokens never contain a newline (both tokenizers split on whitespace).
        let vocab = |v: &Vocab| (0..v.len()).map(|i| v.token(i)).collect::<Vec<_>>().join("\n");
        m.insert("src_vocab".into(), vocab(&self.src_vocab));
        m.insert("tgt_vocab".into(), vocab(&self.tgt_vocab));
        chi_nn::checkpoint::save_params(path, self.model.store.params(), &m).map_err(|e| Seq2SeqError::Data(e.to_string()))
    }

    /// Loads a file written by [`Translator::save`]: the configuration is checked (sizes
    /// bounded) before the model is built, and every tensor's shape before it is copied.
    pub fn load(path: &Path) -> Result<Translator, Seq2SeqError> {
        let shapes = chi_nn::checkpoint::read_tensor_shapes(path).map_err(|e| Seq2SeqError::Data(e.to_string()))?;
        let bytes = chi_nn::checkpoint::read_safetensors(path).map_err(|e| Seq2SeqError::Data(e.to_string()))?;
        let (meta, _) = chi_nn::checkpoint::unpack::<f32>(path, &bytes).map_err(|e| Seq2SeqError::Data(e.to_string()))?;
        let bad = |m: String| Seq2SeqError::Data(format!("{}: {m}", path.display()));
        let get = |k: &str| meta.get(k).ok_or_else(|| bad(format!("metadata lacks '{k}' (not a model saved by chi translate / chi reproduce nmt-*)")));
        if get("format")? != "chi-seq2seq-1" {
            return Err(bad(format!("unknown format {:?}", get("format")?)));
        }
        let num = |k: &str| -> Result<usize, Seq2SeqError> { get(k)?.parse().map_err(|_| bad(format!("'{k}' is not a number: {:?}", meta[k]))) };
        let flag = |k: &str| -> Result<bool, Seq2SeqError> { get(k)?.parse().map_err(|_| bad(format!("'{k}' is not true/false: {:?}", meta[k]))) };
        let vocab = |k: &str| -> Result<Vocab, Seq2SeqError> {
            let toks: Vec<String> = get(k)?.split('\n').map(String::from).collect();
            if toks.len() < 5 || toks[..4] != ["<pad>", "<s>", "</s>", "<unk>"] {
                return Err(bad(format!("'{k}' does not start with the four special tokens")));
            }
            Ok(Vocab::build(std::iter::once(&toks[4..]), None))
        };
        let (src_vocab, tgt_vocab) = (vocab("src_vocab")?, vocab("tgt_vocab")?);
        let cell = CellKind::from_name(get("cell")?).ok_or_else(|| bad(format!("unknown cell {:?}", meta["cell"])))?;
        let attention = AttentionKind::from_spec(get("attention")?).ok_or_else(|| bad(format!("unknown attention {:?}", meta["attention"])))?;
        let tokenizer = match get("tokenizer")?.as_str() {
            "words" => Tokenizer::Words,
            "chars" => Tokenizer::Chars,
            other => return Err(bad(format!("unknown tokenizer {other:?}"))),
        };
        let config = Seq2SeqConfig {
            src_vocab: src_vocab.len(),
            tgt_vocab: tgt_vocab.len(),
            emb: num("emb")?,
            hidden: num("hidden")?,
            layers: num("layers")?,
            bidirectional: flag("bidirectional")?,
            cell,
            attention,
            input_feeding: flag("input_feeding")?,
            attn_dim: num("attn_dim")?,
        };
        config.validate().map_err(|e| bad(e.to_string()))?;
        // The file's own size bounds the model it can describe: refuse before building a model
        // whose parameters alone would outgrow the file many times over.
        let held: u128 = shapes.values().map(|s| s.iter().map(|&d| d as u128).product::<u128>()).sum();
        let needed = config.min_parameter_count();
        if held < needed {
            return Err(bad(format!("the configuration needs at least {needed} parameter values, the file holds {held}")));
        }
        let model = Seq2Seq::<f32>::new(&config, 0)?;
        for p in model.store.params() {
            match shapes.get(&p.name()) {
                Some(s) if *s == p.shape() => {}
                Some(s) => return Err(bad(format!("tensor '{}' has shape {s:?}, the configuration needs {:?}", p.name(), p.shape()))),
                None => return Err(bad(format!("tensor '{}' is missing", p.name()))),
            }
        }
        chi_nn::checkpoint::load_params(path, model.store.params()).map_err(|e| Seq2SeqError::Data(e.to_string()))?;
        Ok(Translator { model, src_vocab, tgt_vocab, tokenizer })
    }

    /// Translates one line with beam search (`beam = 1`: greedy).
    pub fn translate(&self, line: &str, beam: usize, alpha: f64, max_len: usize) -> Result<Translation, Seq2SeqError> {
        let toks = self.tokenizer.apply(line);
        if toks.is_empty() {
            return Err(Seq2SeqError::Input("an empty line has nothing to translate".into()));
        }
        let ids = self.src_vocab.encode(&toks);
        let hyps = beam_search(&self.model, &ids, beam, max_len, alpha)?;
        let best = hyps.into_iter().next().ok_or_else(|| Seq2SeqError::Input("beam search returned nothing".into()))?;
        let source = ids.iter().map(|&i| self.src_vocab.token(i).to_string()).collect();
        let output = best.ids.iter().map(|&i| self.tgt_vocab.token(i).to_string()).collect();
        Ok(Translation { source, output, attention: best.attention, log_prob: best.log_prob })
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// An SVG heat map of `t`'s attention: one row per output token (plus `</s>` when produced),
/// one column per source token, darker = more weight (each cell also carries its value as a
/// tooltip); token labels on both axes.
pub fn attention_svg(t: &Translation, title: &str) -> String {
    let cell = 28.0;
    let rows: Vec<String> = t.output.iter().cloned().chain((t.attention.len() > t.output.len()).then(|| "</s>".to_string())).collect();
    let label_w = 8.0 * rows.iter().map(|r| r.chars().count()).max().unwrap_or(4).max(4) as f64 + 12.0;
    let label_h = 8.0 * t.source.iter().map(|r| r.chars().count()).max().unwrap_or(4).max(4) as f64 + 12.0;
    let (w, h) = (label_w + cell * t.source.len() as f64 + 20.0, 40.0 + label_h + cell * rows.len() as f64 + 20.0);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" font-family=\"sans-serif\" font-size=\"13\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" font-size=\"15\">{}</text>\n", xml_escape(title));
    let top = 40.0 + label_h;
    for (j, tok) in t.source.iter().enumerate() {
        let x = label_w + cell * (j as f64 + 0.5);
        s += &format!("<text transform=\"translate({x:.1},{:.1}) rotate(-60)\">{}</text>\n", top - 6.0, xml_escape(tok));
    }
    for (i, (tok, row)) in rows.iter().zip(&t.attention).enumerate() {
        let y = top + cell * i as f64;
        s += &format!("<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n", label_w - 6.0, y + cell * 0.65, xml_escape(tok));
        for (j, &a) in row.iter().enumerate().take(t.source.len()) {
            let v = (255.0 * (1.0 - a.clamp(0.0, 1.0))).round() as u8;
            s += &format!("<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{cell}\" height=\"{cell}\" fill=\"rgb({v},{v},255)\" stroke=\"#ddd\"><title>{} → {}: {a:.3}</title></rect>\n", label_w + cell * j as f64, xml_escape(tok), xml_escape(&t.source[j]));
        }
    }
    s + "</svg>\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Seq2SeqConfig;

    fn translator(attention: AttentionKind, tokenizer: Tokenizer) -> Translator {
        let words = |w: &str| w.split(' ').map(String::from).collect::<Vec<_>>();
        let src_vocab = Vocab::build([words("the cat sat").as_slice()], None);
        let tgt_vocab = Vocab::build([words("el gato").as_slice()], None);
        let cfg = Seq2SeqConfig { src_vocab: src_vocab.len(), tgt_vocab: tgt_vocab.len(), emb: 4, hidden: 6, attn_dim: 5, attention, bidirectional: true, ..Seq2SeqConfig::default() };
        Translator { model: Seq2Seq::new(&cfg, 3).unwrap(), src_vocab, tgt_vocab, tokenizer }
    }

    #[test]
    fn save_load_round_trip_translates_identically() {
        let dir = std::env::temp_dir().join(format!("chi-s2s-translator-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (k, attention) in [AttentionKind::LocalP { d: 3 }, AttentionKind::CaAttBahdanau].into_iter().enumerate() {
            let t = translator(attention, Tokenizer::Words);
            let path = dir.join(format!("m{k}.safetensors"));
            t.save(&path).unwrap();
            let u = Translator::load(&path).unwrap();
            assert_eq!(u.model.config, t.model.config);
            assert_eq!(u.src_vocab, t.src_vocab);
            let (a, b) = (t.translate("The cat, the dog", 3, 0.0, 6).unwrap(), u.translate("The cat, the dog", 3, 0.0, 6).unwrap());
            assert_eq!(a, b);
            assert_eq!(a.source, ["the", "cat", "<unk>", "the", "<unk>", "</s>"]);
            let svg = attention_svg(&a, "the cat");
            assert!(svg.contains(">cat</text>") && svg.contains("&lt;unk&gt;") && svg.matches("<rect x=").count() == a.attention.len() * a.source.len());
        }
        // Damaged metadata and shapes are errors naming the file.
        let t = translator(AttentionKind::Bahdanau, Tokenizer::Chars);
        let path = dir.join("m.safetensors");
        t.save(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes).replace("\"hidden\":\"6\"", "\"hidden\":\"7\"");
        if text.contains("\"hidden\":\"7\"") {
            std::fs::write(&path, text.as_bytes()).unwrap();
            let e = Translator::load(&path).err().unwrap().to_string();
            assert!(e.contains("m.safetensors"), "{e}");
        }
        std::fs::write(&path, b"not a model").unwrap();
        assert!(Translator::load(&path).err().unwrap().to_string().contains("m.safetensors"));
        assert_eq!(Tokenizer::Chars.apply(" Cat "), ["c", "a", "t"]);
        let two = Tokenizer::Chars.apply(" Le  chat ");
        assert_eq!(two, ["l", "e", WORD_BOUNDARY, "c", "h", "a", "t"]);
        assert_eq!(join_chars(&two), "le chat");
        assert!(t.translate("   ", 2, 0.0, 5).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
