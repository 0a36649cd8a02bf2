//! The Huffman tree of hierarchical softmax.
//!
//! Each word is a leaf; the `V − 1` inner nodes each own an output vector. A word's
//! probability is the product, along its root-to-leaf path, of `σ(s_i · u_{n_i}·h)` with
//! `s_i = +1` when the path turns to child 0 and `−1` for child 1 (the convention of word2vec's
//! C code: bit `code_i`, sign `1 − 2·code_i`). Because the two children of a node get
//! `σ(x)` and `σ(−x) = 1 − σ(x)`, the leaf probabilities sum to one. A Huffman tree makes
//! the expected path length (the cost per prediction) at most the unigram entropy plus one bit.

/// Codes and paths of every word.
#[derive(Clone, Debug, PartialEq)]
pub struct Huffman {
    /// `codes[w]`: the branch bits from the root to leaf `w`.
    pub codes: Vec<Vec<u8>>,
    /// `points[w][i]`: the inner node (0-based, `0..V−1`) at which bit `codes[w][i]` is taken.
    pub points: Vec<Vec<u32>>,
}

impl Huffman {
    /// Builds the tree from word counts (any order). With one word the code is empty.
    pub fn build(counts: &[u64]) -> Huffman {
        let v = counts.len();
        if v <= 1 {
            return Huffman { codes: vec![Vec::new(); v], points: vec![Vec::new(); v] };
        }
        // Leaves sorted by ascending count; inner nodes are created in ascending order of count,
        // so the two smallest are always at the heads of the two queues (the classic linear
        // two-queue construction).
        let mut leaves: Vec<usize> = (0..v).collect();
        leaves.sort_by(|&a, &b| counts[a].cmp(&counts[b]).then(b.cmp(&a)));
        let mut weight: Vec<u64> = counts.to_vec();
        weight.resize(2 * v - 1, 0);
        let mut parent = vec![0usize; 2 * v - 1];
        let mut bit = vec![0u8; 2 * v - 1];
        let (mut li, mut ni) = (0usize, v); // heads of the leaf queue and the inner-node queue
        for next in v..2 * v - 1 {
            let mut pick = || {
                let take_leaf = li < v && (ni >= next || weight[leaves[li]] <= weight[ni]);
                if take_leaf {
                    li += 1;
                    leaves[li - 1]
                } else {
                    ni += 1;
                    ni - 1
                }
            };
            let a = pick();
            let b = pick();
            weight[next] = weight[a] + weight[b];
            parent[a] = next;
            parent[b] = next;
            bit[b] = 1;
        }
        let root = 2 * v - 2;
        let mut codes = Vec::with_capacity(v);
        let mut points = Vec::with_capacity(v);
        for w in 0..v {
            let (mut c, mut p) = (Vec::new(), Vec::new());
            let mut node = w;
            while node != root {
                c.push(bit[node]);
                node = parent[node];
                p.push((node - v) as u32);
            }
            c.reverse();
            p.reverse();
            codes.push(c);
            points.push(p);
        }
        Huffman { codes, points }
    }

    /// Number of inner nodes (rows of the hierarchical-softmax output matrix).
    pub fn inner_nodes(&self) -> usize {
        self.codes.len().saturating_sub(1)
    }
}
