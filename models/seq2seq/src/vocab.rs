//! Token vocabularies with the four special symbols of sequence-to-sequence models, and the
//! padding of a batch of sentence pairs into id matrices with lengths.

use std::collections::HashMap;

/// Padding (id 0): never predicted, never attended to.
pub const PAD: usize = 0;
/// Start of sentence (id 1): the decoder's first input.
pub const BOS: usize = 1;
/// End of sentence (id 2): the decoder's last target; decoding stops on it.
pub const EOS: usize = 2;
/// Unknown token (id 3).
pub const UNK: usize = 3;

/// A token ↔ id map whose ids 0–3 are `<pad>`, `<s>`, `</s>`, `<unk>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Vocab {
    tokens: Vec<String>,
    index: HashMap<String, usize>,
}

impl Vocab {
    /// A vocabulary of the tokens of `sentences`, most frequent first (ties by first
    /// appearance), keeping at most `max_size` tokens besides the specials (`None`: all, the
    /// "dictionary-free" setting: every training token has an id).
    pub fn build<'a>(sentences: impl IntoIterator<Item = &'a [String]>, max_size: Option<usize>) -> Vocab {
        let mut counts: HashMap<&str, (usize, usize)> = HashMap::new();
        let mut order = 0;
        for s in sentences {
            for t in s {
                let e = counts.entry(t.as_str()).or_insert_with(|| {
                    order += 1;
                    (0, order)
                });
                e.0 += 1;
            }
        }
        let mut by_freq: Vec<(&str, usize, usize)> = counts.into_iter().map(|(t, (c, o))| (t, c, o)).collect();
        by_freq.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        let mut v = Vocab::specials();
        for (t, _, _) in by_freq.into_iter().take(max_size.unwrap_or(usize::MAX)) {
            v.push(t);
        }
        v
    }

    /// Only the four specials.
    pub fn specials() -> Vocab {
        let mut v = Vocab { tokens: Vec::new(), index: HashMap::new() };
        for s in ["<pad>", "<s>", "</s>", "<unk>"] {
            v.push(s);
        }
        v
    }

    fn push(&mut self, t: &str) {
        if !self.index.contains_key(t) {
            self.index.insert(t.to_string(), self.tokens.len());
            self.tokens.push(t.to_string());
        }
    }

    /// Number of ids (specials included).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True if only the specials are present.
    pub fn is_empty(&self) -> bool {
        self.tokens.len() <= 4
    }

    /// The id of `t` (`UNK` if absent).
    pub fn id(&self, t: &str) -> usize {
        self.index.get(t).copied().unwrap_or(UNK)
    }

    /// The token of `id` (`<unk>` if out of range).
    pub fn token(&self, id: usize) -> &str {
        self.tokens.get(id).map_or("<unk>", String::as_str)
    }

    /// Ids of `sentence` followed by `EOS`.
    pub fn encode(&self, sentence: &[String]) -> Vec<usize> {
        sentence.iter().map(|t| self.id(t)).chain(std::iter::once(EOS)).collect()
    }

    /// Tokens of `ids` up to (excluding) the first `EOS`, skipping `PAD` and `BOS`.
    pub fn decode(&self, ids: &[usize]) -> Vec<String> {
        ids.iter().take_while(|&&i| i != EOS).filter(|&&i| i != PAD && i != BOS).map(|&i| self.token(i).to_string()).collect()
    }
}

/// A padded batch of id sequences: `ids [batch, max_len]` row-major, padded with `PAD`.
#[derive(Clone, Debug, PartialEq)]
pub struct Padded {
    /// Row-major ids.
    pub ids: Vec<usize>,
    /// Real length of each row.
    pub lengths: Vec<usize>,
    /// Number of columns (the longest row).
    pub max_len: usize,
}

impl Padded {
    /// Pads `seqs` (each non-empty) to the longest.
    pub fn new(seqs: &[Vec<usize>]) -> Padded {
        let max_len = seqs.iter().map(Vec::len).max().unwrap_or(0);
        let mut ids = vec![PAD; seqs.len() * max_len];
        for (r, s) in seqs.iter().enumerate() {
            ids[r * max_len..r * max_len + s.len()].copy_from_slice(s);
        }
        Padded { ids, lengths: seqs.iter().map(Vec::len).collect(), max_len }
    }

    /// Rows.
    pub fn batch(&self) -> usize {
        self.lengths.len()
    }

    /// `mask[b·max_len + t] = t < lengths[b]`.
    pub fn mask(&self) -> Vec<bool> {
        self.lengths.iter().flat_map(|&l| (0..self.max_len).map(move |t| t < l)).collect()
    }

    /// Column `t` of the ids (`[batch]`).
    pub fn column(&self, t: usize) -> Vec<usize> {
        (0..self.batch()).map(|b| self.ids[b * self.max_len + t]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Vec<String> {
        x.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn build_orders_by_frequency_and_caps() {
        let data = [s("b a a c"), s("a b d")];
        let v = Vocab::build(data.iter().map(|x| x.as_slice()), Some(2));
        assert_eq!(v.len(), 6);
        assert_eq!((v.id("a"), v.id("b"), v.id("c"), v.id("d")), (4, 5, UNK, UNK));
        assert_eq!(v.encode(&s("a zzz b")), vec![4, UNK, 5, EOS]);
        assert_eq!(v.decode(&[BOS, 4, 5, EOS, 4]), s("a b"));
        let all = Vocab::build(data.iter().map(|x| x.as_slice()), None);
        assert_eq!(all.len(), 8);
    }

    #[test]
    fn padding_and_masks() {
        let p = Padded::new(&[vec![5, 6, 7], vec![8]]);
        assert_eq!(p.ids, vec![5, 6, 7, 8, PAD, PAD]);
        assert_eq!(p.mask(), vec![true, true, true, true, false, false]);
        assert_eq!(p.column(1), vec![6, PAD]);
    }
}
