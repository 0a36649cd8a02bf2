//! word2vec: tree, noise table, fused updates against the tape, gradcheck, determinism, quality.

use chi_autodiff::{gradcheck, gradgradcheck, GradcheckOptions, Rng, Tensor};
use chi_words::eval;
use chi_words::huffman::Huffman;
#[cfg(target_arch = "x86_64")]
use chi_words::kernels::Avx2;
use chi_words::kernels::{Kernel, KernelChoice, Portable, Scalar};
use chi_words::noise::NoiseTable;
use chi_words::tape;
use chi_words::vocab::{Corpus, Text, Vocab};
use chi_words::word2vec::{self, cbow_step, skipgram_step, Architecture, CbowInputUpdate, Objective, Targets, Word2VecConfig};

fn corpus_text() -> Text {
    Text::from_str(include_str!("../../data/small_corpus.txt"), true)
}

fn vocab() -> Vocab {
    Vocab::build(&corpus_text(), 1).unwrap()
}

#[test]
fn vocab_is_sorted_and_cut() {
    let t = corpus_text();
    let v1 = Vocab::build(&t, 1).unwrap();
    assert!(v1.counts.windows(2).all(|w| w[0] >= w[1]));
    assert_eq!(v1.words[0], "the");
    assert_eq!(v1.total() as usize, t.tokens.len());
    let v3 = Vocab::build(&t, 3).unwrap();
    assert!(v3.counts.iter().all(|&c| c >= 3) && v3.len() < v1.len());
    let c = Corpus::encode(&t, &v3);
    assert_eq!(c.ids.len() as u64, v3.total());
    assert!(Vocab::build(&t, 1_000_000).is_err());
}

#[test]
fn subsampling_formula() {
    let v = vocab();
    let p = v.keep_probabilities(1e-3);
    let total = v.total() as f64;
    for (k, &c) in v.counts.iter().enumerate() {
        let t = 1e-3 * total;
        let expect = (((c as f64 / t).sqrt() + 1.0) * t / c as f64).min(1.0);
        assert_eq!(p[k], expect);
    }
    // "the" is frequent enough here to be subsampled; rare words are always kept.
    assert!(p[0] < 0.5 && *p.last().unwrap() == 1.0);
    assert!(v.keep_probabilities(0.0).iter().all(|&x| x == 1.0));
}

/// Cost of an optimal prefix code, computed independently by repeatedly merging the two
/// lightest weights (the sum of all merged weights).
fn optimal_cost(counts: &[u64]) -> u64 {
    let mut h: std::collections::BinaryHeap<std::cmp::Reverse<u64>> = counts.iter().map(|&c| std::cmp::Reverse(c)).collect();
    let mut cost = 0;
    while h.len() > 1 {
        let a = h.pop().unwrap().0;
        let b = h.pop().unwrap().0;
        cost += a + b;
        h.push(std::cmp::Reverse(a + b));
    }
    cost
}

#[test]
fn huffman_codes_are_prefix_free_complete_and_optimal() {
    let mut rng = Rng::new(7);
    let random: Vec<u64> = (0..300).map(|_| 1 + rng.below(1000) as u64).collect();
    for counts in [vocab().counts, vec![5], vec![3, 3], vec![10, 1, 1, 1], random, vec![1; 17]] {
        let h = Huffman::build(&counts);
        let v = counts.len();
        assert_eq!(h.codes.len(), v);
        if v == 1 {
            assert!(h.codes[0].is_empty());
            continue;
        }
        // Prefix-free.
        for a in 0..v {
            for b in 0..v {
                if a != b {
                    let (ca, cb) = (&h.codes[a], &h.codes[b]);
                    assert!(!(ca.len() <= cb.len() && cb[..ca.len()] == ca[..]), "code {a} is a prefix of code {b}");
                }
            }
        }
        // Complete (a full binary tree): Kraft sum exactly 1.
        let kraft: f64 = h.codes.iter().map(|c| 0.5f64.powi(c.len() as i32)).sum();
        assert!((kraft - 1.0).abs() < 1e-12, "Kraft sum {kraft}");
        // Paths: root first, inner nodes in range, lengths equal to code lengths.
        for w in 0..v {
            assert_eq!(h.points[w].len(), h.codes[w].len());
            assert_eq!(h.points[w][0] as usize, v - 2, "every path starts at the root");
            assert!(h.points[w].iter().all(|&p| (p as usize) < v - 1));
        }
        // Optimal: Σ count·length equals the merge cost, and the entropy bound holds.
        let cost: u64 = counts.iter().zip(&h.codes).map(|(&c, code)| c * code.len() as u64).sum();
        assert_eq!(cost, optimal_cost(&counts));
        let n: f64 = counts.iter().sum::<u64>() as f64;
        let entropy: f64 = counts.iter().map(|&c| -(c as f64 / n) * (c as f64 / n).log2()).sum();
        let mean_len = cost as f64 / n;
        assert!(mean_len >= entropy - 1e-12 && mean_len < entropy + 1.0, "mean length {mean_len}, entropy {entropy}");
    }
}

#[test]
fn hierarchical_softmax_probabilities_sum_to_one() {
    let v = vocab();
    let h = Huffman::build(&v.counts);
    let d = 6;
    let mut rng = Rng::new(3);
    let inner: Vec<f64> = (0..h.inner_nodes() * d).map(|_| rng.normal()).collect();
    for _ in 0..5 {
        let x: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
        let total: f64 = (0..v.len())
            .map(|w| {
                h.points[w]
                    .iter()
                    .zip(&h.codes[w])
                    .map(|(&p, &c)| {
                        let f: f64 = (0..d).map(|k| inner[p as usize * d + k] * x[k]).sum();
                        let s = if c == 0 { f } else { -f };
                        1.0 / (1.0 + (-s).exp())
                    })
                    .product::<f64>()
            })
            .sum();
        assert!((total - 1.0).abs() < 1e-12, "Σ P(w) = {total}");
    }
}

#[test]
fn noise_table_matches_unigram_power() {
    let v = vocab();
    for power in [0.75, 2.0 / 3.0, 1.0, 0.0] {
        let t = NoiseTable::new(&v.counts, power);
        let z: f64 = v.counts.iter().map(|&c| (c as f64).powf(power)).sum();
        for (p, &c) in t.probabilities().iter().zip(&v.counts) {
            assert!((p - (c as f64).powf(power) / z).abs() < 1e-15);
        }
        // Empirical frequencies: every word within 5 standard errors, and Pearson's χ² within
        // 5 standard deviations of its mean (V − 1 degrees of freedom).
        let n = 2_000_000usize;
        let mut hits = vec![0u64; v.len()];
        let mut rng = Rng::new(11);
        for _ in 0..n {
            hits[t.sample(&mut rng) as usize] += 1;
        }
        let mut chi2 = 0.0;
        for (k, &p) in t.probabilities().iter().enumerate() {
            let expect = p * n as f64;
            let se = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((hits[k] as f64 - expect).abs() <= 5.0 * se + 1e-9, "power {power}, word {k}: {} vs {expect:.1}", hits[k]);
            chi2 += (hits[k] as f64 - expect).powi(2) / expect;
        }
        let dof = (v.len() - 1) as f64;
        assert!((chi2 - dof).abs() < 5.0 * (2.0 * dof).sqrt(), "χ² = {chi2}, dof {dof}");
    }
}

/// Random f64 tables for a frozen example.
fn tables(rows_in: usize, rows_out: usize, d: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = Rng::new(seed);
    let a = (0..rows_in * d).map(|_| rng.uniform(-0.5, 0.5)).collect();
    let b = (0..rows_out * d).map(|_| rng.uniform(-0.5, 0.5)).collect();
    (a, b)
}

/// Tape gradients of `loss` w.r.t. the two tables.
fn tape_grads(input: &[f64], output: &[f64], d: usize, loss: impl Fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>) -> (f64, Vec<f64>, Vec<f64>) {
    let i = Tensor::from_vec(input.to_vec(), &[input.len() / d, d]).requires_grad();
    let o = Tensor::from_vec(output.to_vec(), &[output.len() / d, d]).requires_grad();
    let l = loss(&i, &o);
    l.backward();
    (l.item(), i.grad().unwrap().to_vec(), o.grad().unwrap().to_vec())
}

fn assert_close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol, "{what}[{k}]: fused {x} vs tape {y}");
    }
}

const KERNELS: [KernelChoice; 2] = [KernelChoice::Auto, KernelChoice::Portable];

#[test]
fn skipgram_fused_step_equals_tape_gradient() {
    let h = Huffman::build(&vocab().counts);
    let (v, d) = (h.codes.len(), 13); // an odd d exercises the kernels' tails
    let word = 17usize;
    let ns: Vec<u32> = vec![4, 9, 30, 2, 55, 41];
    let cases = [Targets::Negative(&ns), Targets::Path { points: &h.points[word], codes: &h.codes[word] }];
    for k in KERNELS {
        for t in cases {
            let (input, output) = tables(v, v, d, 5);
            let (loss, gi, go) = tape_grads(&input, &output, d, |i, o| tape::skipgram_loss(i, o, 21, t));
            let (mut i2, mut o2) = (input.clone(), output.clone());
            // α = 1: the step is exactly minus the gradient.
            let l = skipgram_step(&mut i2, &mut o2, d, 21, t, 1.0, k).unwrap();
            assert!((l - loss).abs() < 1e-12, "loss {l} vs {loss}");
            let di: Vec<f64> = input.iter().zip(&i2).map(|(a, b)| a - b).collect();
            let dout: Vec<f64> = output.iter().zip(&o2).map(|(a, b)| a - b).collect();
            assert_close("input", &di, &gi, 1e-12);
            assert_close("output", &dout, &go, 1e-12);
            assert!(gi.iter().any(|&g| g != 0.0) && go.iter().any(|&g| g != 0.0));
        }
    }
}

/// word2vec's row-after-row step, written out: the reference for the trainer's order of
/// evaluation (all dot products first when the rows are distinct).
fn sequential_skipgram_step<T: Scalar, K: Kernel>(input: &mut [T], output: &mut [T], d: usize, context: usize, rows: &[u32], labels: &[bool], alpha: T) {
    let mut e = vec![T::ZERO; d];
    let h = input[context * d..(context + 1) * d].to_vec();
    for (&r, &y) in rows.iter().zip(labels) {
        let u = &mut output[r as usize * d..(r as usize + 1) * d];
        let g = (if y { T::ONE } else { T::ZERO } - K::dot(&h, u).sigmoid()) * alpha;
        K::update(g, &h, u, &mut e);
    }
    K::axpy(T::ONE, &e, &mut input[context * d..(context + 1) * d]);
}

fn step_order_case<T: Scalar, K: Kernel>(choice: KernelChoice) {
    let h = Huffman::build(&vocab().counts);
    let (v, d) = (h.codes.len(), 13);
    let word = 17usize;
    let distinct: Vec<u32> = vec![4, 9, 30, 2, 55, 41];
    let repeated: Vec<u32> = vec![4, 9, 30, 9, 55, 4]; // the same noise word drawn twice
    let path_labels: Vec<bool> = h.codes[word].iter().map(|&c| c == 0).collect();
    let cases: [(Targets, Vec<bool>); 3] = [
        (Targets::Negative(&distinct), (0..6).map(|k| k == 0).collect()),
        (Targets::Negative(&repeated), (0..6).map(|k| k == 0).collect()),
        (Targets::Path { points: &h.points[word], codes: &h.codes[word] }, path_labels),
    ];
    for (t, labels) in cases {
        let (input, output) = tables(v, v, d, 5);
        let input: Vec<T> = input.iter().map(|&x| T::from_f64(x)).collect();
        let output: Vec<T> = output.iter().map(|&x| T::from_f64(x)).collect();
        let (mut i1, mut o1) = (input.clone(), output.clone());
        let (mut i2, mut o2) = (input.clone(), output.clone());
        skipgram_step(&mut i1, &mut o1, d, 21, t, T::from_f64(0.7), choice).unwrap();
        sequential_skipgram_step::<T, K>(&mut i2, &mut o2, d, 21, t.output_rows(), &labels, T::from_f64(0.7));
        assert!(i1 == i2 && o1 == o2, "{t:?}: the step differs from the row-after-row reference");
        assert!(o1 != output);
    }
}

#[test]
fn skipgram_step_equals_word2vec_row_after_row_order_bit_for_bit() {
    step_order_case::<f32, Portable>(KernelChoice::Portable);
    step_order_case::<f64, Portable>(KernelChoice::Portable);
    #[cfg(target_arch = "x86_64")]
    if Avx2::detect().is_some() {
        step_order_case::<f32, Avx2>(KernelChoice::Auto);
        step_order_case::<f64, Avx2>(KernelChoice::Auto);
    }
}

#[test]
fn cbow_fused_step_equals_tape_gradient() {
    let h = Huffman::build(&vocab().counts);
    let (v, d) = (h.codes.len(), 10);
    let word = 3usize;
    let ns: Vec<u32> = vec![3, 8, 12, 60];
    let ctx: Vec<u32> = vec![1, 7, 7, 40]; // a repeated context word accumulates twice
    for k in KERNELS {
        for t in [Targets::Negative(&ns), Targets::Path { points: &h.points[word], codes: &h.codes[word] }] {
            for update in [CbowInputUpdate::Gradient, CbowInputUpdate::Word2vec] {
                let (input, output) = tables(v, v, d, 8);
                let (loss, gi, go) = tape_grads(&input, &output, d, |i, o| tape::cbow_loss(i, o, &ctx, t));
                let (mut i2, mut o2) = (input.clone(), output.clone());
                let l = cbow_step(&mut i2, &mut o2, d, &ctx, t, 1.0, update, k).unwrap();
                assert!((l - loss).abs() < 1e-12);
                // word2vec's rule adds |ctx| times the gradient share to each context row.
                let scale = if update == CbowInputUpdate::Word2vec { ctx.len() as f64 } else { 1.0 };
                let di: Vec<f64> = input.iter().zip(&i2).map(|(a, b)| (a - b) / scale).collect();
                let dout: Vec<f64> = output.iter().zip(&o2).map(|(a, b)| a - b).collect();
                assert_close("input", &di, &gi, 1e-12);
                assert_close("output", &dout, &go, 1e-12);
            }
        }
    }
}

#[test]
fn step_rejects_bad_ids() {
    let (mut i, mut o) = tables(5, 5, 3, 1);
    assert!(skipgram_step(&mut i, &mut o, 3, 9, Targets::Negative(&[1]), 0.1, KernelChoice::Auto).is_err());
    assert!(skipgram_step(&mut i, &mut o, 3, 1, Targets::Negative(&[5]), 0.1, KernelChoice::Auto).is_err());
    assert!(cbow_step(&mut i, &mut o, 3, &[], Targets::Negative(&[1]), 0.1, CbowInputUpdate::Gradient, KernelChoice::Auto).is_err());
    assert!(skipgram_step(&mut i, &mut o, 4, 1, Targets::Negative(&[1]), 0.1, KernelChoice::Auto).is_err());
}

#[test]
fn tape_losses_pass_gradcheck_first_and_second_order() {
    let codes = [0u8, 1, 1, 0];
    let points = [5u32, 2, 0, 6];
    let ns = [1u32, 3, 6];
    let ctx = [0u32, 4, 4];
    let (input, output) = tables(7, 7, 4, 9);
    let xs = [Tensor::from_vec(input, &[7, 4]), Tensor::from_vec(output, &[7, 4])];
    let opts = GradcheckOptions::default();
    for t in [Targets::Negative(&ns), Targets::Path { points: &points, codes: &codes }] {
        let sg = |x: &[Tensor<f64>]| tape::skipgram_loss(&x[0], &x[1], 2, t);
        let cb = |x: &[Tensor<f64>]| tape::cbow_loss(&x[0], &x[1], &ctx, t);
        assert!(gradcheck(sg, &xs, &opts).unwrap().passed);
        assert!(gradcheck(cb, &xs, &opts).unwrap().passed);
        assert!(gradgradcheck(sg, &xs, &opts).unwrap().passed);
        assert!(gradgradcheck(cb, &xs, &opts).unwrap().passed);
    }
}

fn small_cfg(arch: Architecture, objective: Objective) -> Word2VecConfig {
    Word2VecConfig { arch, objective, dim: 16, window: 3, min_count: 2, epochs: 3, seed: 42, compute_loss: true, ..Default::default() }
}

#[test]
fn one_thread_training_is_bit_reproducible() {
    let text = corpus_text();
    for arch in [Architecture::SkipGram, Architecture::Cbow] {
        for obj in [Objective::NegativeSampling { negative: 5, power: 0.75 }, Objective::HierarchicalSoftmax] {
            let cfg = small_cfg(arch, obj);
            let (a, sa) = word2vec::train(&text, &cfg).unwrap();
            let (b, sb) = word2vec::train(&text, &cfg).unwrap();
            assert!(a.input.iter().zip(&b.input).all(|(x, y)| x.to_bits() == y.to_bits()));
            assert!(a.output.iter().zip(&b.output).all(|(x, y)| x.to_bits() == y.to_bits()));
            assert_eq!(sa.effective_words, sb.effective_words);
            assert_eq!(sa.mean_loss.to_bits(), sb.mean_loss.to_bits());
            assert!(sa.mean_loss.is_finite() && sa.updates > 0);
            let (c, _) = word2vec::train(&text, &Word2VecConfig { seed: 43, ..cfg.clone() }).unwrap();
            assert!(a.input != c.input, "another seed gives other vectors");
            // The portable kernels train the same model up to float rounding.
            let (p, _) = word2vec::train(&text, &Word2VecConfig { kernel: KernelChoice::Portable, ..cfg.clone() }).unwrap();
            let worst = a.input.iter().zip(&p.input).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
            assert!(worst < 1e-3, "AVX2 vs portable differ by {worst}");
        }
    }
}

#[test]
fn training_lowers_the_loss_and_threads_work() {
    let text = corpus_text();
    for arch in [Architecture::SkipGram, Architecture::Cbow] {
        let cfg = Word2VecConfig { epochs: 1, alpha: Some(1e-9), min_alpha: 1e-9, sample: 0.0, ..small_cfg(arch, Objective::NegativeSampling { negative: 5, power: 0.75 }) };
        let (_, untrained) = word2vec::train(&text, &cfg).unwrap();
        let (_, trained) = word2vec::train(&text, &Word2VecConfig { epochs: 20, alpha: None, min_alpha: 1e-4, ..cfg.clone() }).unwrap();
        assert!(trained.mean_loss < untrained.mean_loss, "{arch:?}: {} !< {}", trained.mean_loss, untrained.mean_loss);
        let (m, s) = word2vec::train(&text, &Word2VecConfig { threads: 3, ..cfg.clone() }).unwrap();
        assert!(m.input.iter().all(|x| x.is_finite()));
        assert_eq!(s.effective_words, s.words, "no subsampling: every word kept");
    }
}

#[test]
fn rejects_bad_config() {
    let text = corpus_text();
    for cfg in [
        Word2VecConfig { dim: 0, ..Default::default() },
        Word2VecConfig { window: 0, ..Default::default() },
        Word2VecConfig { threads: 0, ..Default::default() },
        Word2VecConfig { sample: -1.0, ..Default::default() },
        Word2VecConfig { alpha: Some(0.01), min_alpha: 0.1, ..Default::default() },
        Word2VecConfig { objective: Objective::NegativeSampling { negative: 0, power: 0.75 }, ..Default::default() },
    ] {
        assert!(matches!(word2vec::train(&text, &cfg), Err(chi_words::WordsError::Config { .. })));
    }
}

/// The planted corpus of [`eval::planted_corpus`] as a [`Text`].
pub fn planted_text(seed: u64) -> (Text, Vec<Vec<String>>) {
    let (s, groups) = eval::planted_corpus(seed, 1500);
    (Text::from_str(&s, false), groups)
}

#[test]
fn planted_groups_are_recovered() {
    let (text, groups) = planted_text(5);
    // Two threads: every worker keeps private copies of the most contended rows (here every
    // row) and merges them. Merged too rarely, the two workers trained separate models whose
    // summed changes separated the groups clearly worse than one thread (CBOW within-group
    // similarity 0.78–0.92 against 0.97); merged often enough, the two agree within 0.03.
    for arch in [Architecture::SkipGram, Architecture::Cbow] {
        for obj in [Objective::NegativeSampling { negative: 5, power: 0.75 }, Objective::HierarchicalSoftmax] {
            let mut one_thread = 0.0;
            for threads in [1, 2] {
                let cfg = Word2VecConfig { arch, objective: obj, dim: 20, window: 3, min_count: 1, epochs: 5, sample: 0.0, threads, ..Default::default() };
                let (m, _) = word2vec::train(&text, &cfg).unwrap();
                let v = m.vectors();
                let (same, diff) = eval::group_separation(&groups, |a, b| v.similarity(a, b).unwrap());
                assert!(same > diff + 0.3, "{arch:?} {obj:?} {threads} threads: same-group {same:.3}, cross-group {diff:.3}");
                if threads == 1 {
                    one_thread = same;
                } else {
                    assert!(same > one_thread - 0.06, "{arch:?} {obj:?}: same-group {same:.3} on 2 threads, {one_thread:.3} on 1");
                }
                // Every word's nearest neighbour is in its own group.
                for g in &groups {
                    let nn = v.nearest(&g[0], 1).unwrap();
                    assert!(g.contains(&nn[0].0), "{arch:?} {obj:?} {threads} threads: {} nearest {}", g[0], nn[0].0);
                }
            }
        }
    }
}
