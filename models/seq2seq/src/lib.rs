//! Sequence to sequence with attention on chi's engine: the encoder–decoder of neural machine
//! translation and grapheme-to-phoneme conversion, with the attentions compared in
//! [CAML](crate#references) §4.3 (Bahdanau, Luong and the context-aware CA-ATT) plus Luong's
//! dot / concat and local-p forms ([Tixier](crate#references) §7.1), LSTM / GRU / CA-RNN cells
//! (§4.4), teacher-forced training with masks, greedy and beam decoding, and the metrics BLEU,
//! top-k token accuracy, perplexity and error rates.
//!
//! * [`model`]: [`Seq2Seq`], its [`Seq2SeqConfig`], one decoder [`model::Step`] at a time, and
//!   the teacher-forced loss;
//! * [`decode`]: greedy and beam search;
//! * [`metrics`]: corpus BLEU, edit-distance error rates, top-k hits, perplexity;
//! * [`data`]: SWORD zText Bible modules (aligned verses), CMUdict, parallel text files;
//! * [`experiment`]: training through chi's `Trainer` and the full evaluation;
//! * [`translator`]: a trained model saved with its vocabularies, translating lines, attention
//!   heat maps;
//! * [`vocab`]: vocabularies with `<pad>`, `<s>`, `</s>`, `<unk>` and padded batches.
//!
//! # References
//! * **CAML**: "Context Aware Machine Learning" (the context-aware family; CA-ATT §3.3,
//!   CA-RNN §3.4, NMT experiments §4.3–4.4).
//! * **Tixier**: "Notes on Deep Learning for NLP" (attention §7.1, local attention eqs. 20–22).
//! * Bahdanau, Cho, Bengio: "Neural Machine Translation by Jointly Learning to Align and
//!   Translate".
//! * Luong, Pham, Manning: "Effective Approaches to Attention-based Neural Machine Translation".
//! * **BLEU**: Papineni, Roukos, Ward, Zhu: "BLEU: a Method for Automatic Evaluation of Machine
//!   Translation"; Post: "A Call for Clarity in Reporting BLEU Scores" (sacreBLEU's smoothing).

pub mod data;
pub mod decode;
pub mod error;
pub mod experiment;
pub mod metrics;
pub mod model;
pub mod translator;
pub mod vocab;

pub use decode::{beam_search, greedy, Hypothesis};
pub use error::Seq2SeqError;
pub use model::{AttentionKind, CellKind, Seq2Seq, Seq2SeqConfig};
pub use translator::{attention_svg, Tokenizer, Translation, Translator};
pub use vocab::{Padded, Vocab};
