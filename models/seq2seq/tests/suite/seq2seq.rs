//! The encoder–decoder's gradients, masks and decoders, proved on tiny models.

use chi_autodiff::{grad, no_grad, GradOptions, GradcheckOptions, Rng, Tensor};
use chi_nn::gradcheck::{check_model, perturb};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_seq2seq::vocab::{BOS, EOS, PAD};
use chi_seq2seq::{beam_search, greedy, AttentionKind, CellKind, Padded, Seq2Seq, Seq2SeqConfig};

fn tiny(cell: CellKind, attention: AttentionKind, bidirectional: bool, input_feeding: bool, layers: usize) -> Seq2SeqConfig {
    Seq2SeqConfig { src_vocab: 7, tgt_vocab: 6, emb: 3, hidden: 3, layers, bidirectional, cell, attention, input_feeding, attn_dim: 3 }
}

/// A source batch with padding (second row shorter) and targets of different lengths.
fn batch() -> (Padded, Padded) {
    (Padded::new(&[vec![4, 5, 6, EOS], vec![6, 4, EOS]]), Padded::new(&[vec![4, 5, EOS], vec![5, EOS]]))
}

const CELLS: [CellKind; 3] = [CellKind::Lstm, CellKind::Gru, CellKind::CaRnn];

#[test]
fn whole_model_gradcheck_for_every_attention_and_cell() {
    let (src, tgt) = batch();
    let opts = GradcheckOptions::default();
    let mut checked = 0;
    for (k, &attention) in AttentionKind::ALL.iter().enumerate() {
        for (c, &cell) in CELLS.iter().enumerate() {
            // Vary the wiring across the grid so every option is covered without a full product.
            let bidirectional = attention != AttentionKind::LuongDot && (k + c) % 2 == 0;
            let input_feeding = (k + c) % 3 == 1;
            let layers = 1 + (k + c) % 2;
            let cfg = tiny(cell, attention, bidirectional, input_feeding, layers);
            let model = Seq2Seq::<f64>::new(&cfg, 7 + k as u64).unwrap();
            perturb(&model.store, &mut Rng::new(100 + (k * 3 + c) as u64));
            let r = check_model(&model.store, &[], |_| model.teacher_forced(&src, &tgt).unwrap().loss, &opts);
            assert!(r.is_ok(), "{} / {cell:?} (bi {bidirectional}, feeding {input_feeding}, layers {layers}): {:?}", attention.name(), r.err());
            checked += 1;
        }
    }
    assert_eq!(checked, 21);
}

#[test]
fn padding_gets_exactly_zero_weight_and_gradient() {
    let (src, tgt) = batch();
    for &attention in &AttentionKind::ALL {
        for bidirectional in [false, true] {
            if bidirectional && attention == AttentionKind::LuongDot {
                continue;
            }
            let model = Seq2Seq::<f64>::new(&tiny(CellKind::Lstm, attention, bidirectional, false, 1), 3).unwrap();
            let tf = model.teacher_forced(&src, &tgt).unwrap();
            tf.loss.backward();
            // PAD (id 0) only appears as padding: its embedding row gets no gradient at all.
            let g = model.store.get("src_emb.weight").unwrap().grad().unwrap();
            assert!(g.data()[..3].iter().all(|&x| x == 0.0), "{}: {:?}", attention.name(), &g.data()[..3]);
            assert!(g.data()[3..].iter().any(|&x| x != 0.0));
            // Logits of padded target positions (row 1 after its EOS at t = 1) get exactly 0.
            let tf = model.teacher_forced(&src, &tgt).unwrap();
            let gl = grad(&[&tf.loss], &[&tf.logits], None, GradOptions::default()).unwrap();
            let (v, at2) = (6, 2 * 2 * 6); // step 2 of [T, B = 2, V = 6]
            assert!(gl[0].data()[at2 + v..at2 + 2 * v].iter().all(|&x| x == 0.0));
            assert!(gl[0].data()[at2..at2 + v].iter().any(|&x| x != 0.0));
            // Attention weights on the padded source position are exactly 0.
            let (mem, state) = model.encode(&src).unwrap();
            let st = model.step(&mem, &state, &[BOS, BOS]);
            assert_eq!(st.weights.data()[4 + 3], 0.0, "{}", attention.name());
        }
    }
}

#[test]
fn beam_of_width_one_is_greedy() {
    for (k, &attention) in AttentionKind::ALL.iter().enumerate() {
        for &cell in &CELLS {
            let cfg = tiny(cell, attention, false, k % 2 == 1, 1);
            let model = Seq2Seq::<f64>::new(&cfg, 40 + k as u64).unwrap();
            perturb(&model.store, &mut Rng::new(k as u64));
            for src in [vec![4, 5, 6, EOS], vec![6, EOS], vec![5, 5, 4, 6, 4, EOS]] {
                let g = greedy(&model, &Padded::new(std::slice::from_ref(&src)), 8).unwrap();
                let b = beam_search(&model, &src, 1, 8, 0.0).unwrap();
                assert_eq!(b.len(), 1);
                assert_eq!(b[0].ids, g[0].ids, "{} {cell:?}", attention.name());
                assert_eq!(b[0].finished, g[0].finished);
                assert!((b[0].log_prob - g[0].log_prob).abs() < 1e-12);
                assert_eq!(b[0].attention, g[0].attention, "{} {cell:?}", attention.name());
            }
        }
    }
}

/// Log-probability of producing `ids` (then `EOS` if `finish`) by stepping the decoder.
fn sequence_log_prob(model: &Seq2Seq<f64>, src: &[usize], ids: &[usize], finish: bool) -> f64 {
    no_grad(|| {
        let (mem, mut state) = model.encode(&Padded::new(&[src.to_vec()])).unwrap();
        let mut prev = BOS;
        let mut lp = 0.0;
        let targets: Vec<usize> = ids.iter().copied().chain(finish.then_some(EOS)).collect();
        for &y in &targets {
            let st = model.step(&mem, &state, &[prev]);
            lp += st.logits.log_softmax(1).data()[y];
            state = st.state;
            prev = y;
        }
        lp
    })
}

#[test]
fn wide_beam_finds_the_exact_best_output_by_enumeration() {
    // Target alphabet: the 6 ids minus PAD/BOS/EOS can be produced (UNK, 4, 5); every output
    // of at most 3 tokens, finished or cut at the limit, is enumerated.
    let model = Seq2Seq::<f64>::new(&tiny(CellKind::Gru, AttentionKind::Bahdanau, true, false, 1), 5).unwrap();
    perturb(&model.store, &mut Rng::new(9));
    let src = vec![4, 6, 5, EOS];
    let producible: Vec<usize> = (0..6).filter(|&t| t != EOS).collect();
    let mut best = f64::NEG_INFINITY;
    let mut seqs: Vec<Vec<usize>> = vec![vec![]];
    for len in 0..=3usize {
        for s in seqs.iter().filter(|s| s.len() == len) {
            best = best.max(sequence_log_prob(&model, &src, s, true));
            if len == 3 {
                best = best.max(sequence_log_prob(&model, &src, s, false));
            }
        }
        let next: Vec<Vec<usize>> = seqs.iter().filter(|s| s.len() == len).flat_map(|s| producible.iter().map(move |&t| [s.clone(), vec![t]].concat())).collect();
        seqs.extend(next);
    }
    // Width 5^3 + … keeps every partial output, so the search is exhaustive.
    let hyps = beam_search(&model, &src, 200, 3, 0.0).unwrap();
    assert!((hyps[0].log_prob - best).abs() < 1e-12, "beam {} vs enumeration {best}", hyps[0].log_prob);
    assert!((sequence_log_prob(&model, &src, &hyps[0].ids, hyps[0].finished) - hyps[0].log_prob).abs() < 1e-12);
    assert!(hyps.windows(2).all(|w| w[0].score >= w[1].score));
    let _ = PAD;
}

/// Every output of a wide beam carries its own history: its log-probability and its attention
/// rows are those of stepping the decoder along its tokens alone.
#[test]
fn beam_outputs_carry_the_log_probability_and_attention_of_their_own_tokens() {
    for (k, &attention) in AttentionKind::ALL.iter().enumerate() {
        let model = Seq2Seq::<f64>::new(&tiny(CellKind::Lstm, attention, false, k % 2 == 0, 1), 70 + k as u64).unwrap();
        perturb(&model.store, &mut Rng::new(k as u64 + 3));
        let src = vec![5, 4, 6, 4, EOS];
        let hyps = beam_search(&model, &src, 6, 5, 0.0).unwrap();
        assert!(hyps.len() > 1);
        for h in &hyps {
            let replay: Vec<usize> = h.ids.iter().copied().chain(h.finished.then_some(EOS)).collect();
            let rows = no_grad(|| {
                let (mem, mut state) = model.encode(&Padded::new(std::slice::from_ref(&src))).unwrap();
                let mut prev = BOS;
                let mut rows = Vec::new();
                for &y in &replay {
                    let st = model.step(&mem, &state, &[prev]);
                    rows.push(st.weights.data().to_vec());
                    state = st.state;
                    prev = y;
                }
                rows
            });
            assert_eq!(h.attention.len(), rows.len(), "{}", attention.name());
            for (a, b) in h.attention.iter().zip(&rows) {
                assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12), "{}: {a:?} vs {b:?}", attention.name());
            }
            assert!((sequence_log_prob(&model, &src, &h.ids, h.finished) - h.log_prob).abs() < 1e-10, "{}", attention.name());
        }
    }
}

#[test]
fn learns_to_reverse_short_sequences() {
    // Reverse 2–4 tokens from {4..9}: teacher-forced training with Adam, then greedy decoding.
    let mut rng = Rng::new(1);
    let cfg = Seq2SeqConfig { src_vocab: 10, tgt_vocab: 10, emb: 16, hidden: 32, attention: AttentionKind::LuongGeneral, input_feeding: true, attn_dim: 16, ..Seq2SeqConfig::default() };
    let model = Seq2Seq::<f32>::new(&cfg, 2).unwrap();
    let mut opt = Optimizer::new(OptimConfig::adam(0.01));
    let sample = |rng: &mut Rng| {
        let n = 2 + rng.below(3);
        let s: Vec<usize> = (0..n).map(|_| 4 + rng.below(6)).collect();
        let mut t: Vec<usize> = s.iter().rev().copied().collect();
        t.push(EOS);
        let mut s2 = s.clone();
        s2.push(EOS);
        (s2, t)
    };
    let params = model.store.params().to_vec();
    for _ in 0..400 {
        let (ss, ts): (Vec<_>, Vec<_>) = (0..16).map(|_| sample(&mut rng)).unzip();
        model.store.zero_grad();
        let tf = model.teacher_forced(&Padded::new(&ss), &Padded::new(&ts)).unwrap();
        tf.loss.backward();
        opt.step_params(&params);
    }
    let (ss, ts): (Vec<_>, Vec<_>) = (0..100).map(|_| sample(&mut rng)).unzip();
    let out = greedy(&model, &Padded::new(&ss), 8).unwrap();
    let exact = out.iter().zip(&ts).filter(|(h, t)| h.finished && h.ids[..] == t[..t.len() - 1]).count();
    // Chance is ≤ 1/36; a working attention model gets nearly all.
    assert!(exact >= 80, "exact reversals {exact}/100");
}

#[test]
fn bad_configs_and_inputs_are_errors() {
    // A hand-built Padded whose ids do not fill its rows, or whose length passes max_len: an
    // error from a function that returns one (the embedding panicked).
    let m = Seq2Seq::<f64>::new(&tiny(CellKind::Lstm, AttentionKind::Bahdanau, false, false, 1), 1).unwrap();
    let e = m.encode(&Padded { ids: vec![5, 6], lengths: vec![3], max_len: 3 }).err().unwrap().to_string();
    assert!(e.contains("source: 2 ids for 1 rows of max_len 3"), "{e}");
    let e = m.encode(&Padded { ids: vec![4, 5], lengths: vec![3], max_len: 2 }).err().unwrap().to_string();
    assert!(e.contains("a length 3 is past max_len 2"), "{e}");
    let e = Seq2Seq::<f32>::new(&tiny(CellKind::Lstm, AttentionKind::LuongDot, true, false, 1), 1).err().unwrap().to_string();
    assert!(e.contains("luong-dot") && e.contains("2·hidden"), "{e}");
    let e = Seq2Seq::<f32>::new(&Seq2SeqConfig { hidden: 0, ..tiny(CellKind::Lstm, AttentionKind::Bahdanau, false, false, 1) }, 1).err().unwrap().to_string();
    assert!(e.contains("hidden = 0"), "{e}");
    let e = Seq2Seq::<f32>::new(&Seq2SeqConfig { tgt_vocab: 1 << 40, ..tiny(CellKind::Lstm, AttentionKind::Bahdanau, false, false, 1) }, 1).err().unwrap().to_string();
    assert!(e.contains("target embedding") && e.contains("limit"), "{e}");
    let m = Seq2Seq::<f32>::new(&tiny(CellKind::Lstm, AttentionKind::Bahdanau, false, false, 1), 1).unwrap();
    let e = m.teacher_forced(&Padded::new(&[vec![4, 9]]), &Padded::new(&[vec![EOS]])).err().unwrap().to_string();
    assert!(e.contains("source id 9 at position 1") && e.contains("vocabulary of 7"), "{e}");
    let e = m.teacher_forced(&Padded::new(&[vec![4], vec![5]]), &Padded::new(&[vec![EOS]])).err().unwrap().to_string();
    assert!(e.contains("2 source rows for 1 target rows"), "{e}");
    assert!(beam_search(&m, &[4, EOS], 0, 5, 0.0).is_err());
    assert!(beam_search(&m, &[4, EOS], 2, 5, f64::NAN).is_err());
    assert!(greedy(&m, &Padded::new(&[vec![]]), 5).is_err());
    let _ = Tensor::<f32>::zeros(&[1]);
}
