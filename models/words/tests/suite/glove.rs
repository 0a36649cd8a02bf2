//! GloVe: co-occurrence counting (in memory and spilled), fused AdaGrad step against the tape,
//! gradcheck, determinism, quality.

use chi_autodiff::{gradcheck, gradgradcheck, GradcheckOptions, Rng, Tensor};
use chi_nn::dist::{Solo, ThreadGroup};
use chi_words::glove::{count_cooccurrences, glove_step, train_glove, train_glove_on, weight, CoocConfig, GloveConfig, GloveParams};
use chi_words::kernels::KernelChoice;
use chi_words::tape;
use chi_words::vocab::{Corpus, Text, Vocab};
use std::collections::HashMap;

fn corpus() -> Corpus {
    let t = Text::from_str(include_str!("../../data/small_corpus.txt"), true);
    let v = Vocab::build(&t, 1).unwrap();
    Corpus::encode(&t, &v)
}

/// Dense brute-force counting: every ordered pair within the window of each sentence.
fn brute(c: &Corpus, window: usize) -> HashMap<(u32, u32), f64> {
    let mut m = HashMap::new();
    for s in 0..c.sentences() {
        let sent = c.sentence(s);
        for a in 0..sent.len() {
            for b in 0..sent.len() {
                let d = a.abs_diff(b);
                if d >= 1 && d <= window {
                    *m.entry((sent[a], sent[b])).or_insert(0.0) += 1.0 / d as f64;
                }
            }
        }
    }
    m
}

#[test]
fn cooccurrence_counts_match_brute_force_in_memory_and_spilled() {
    let c = corpus();
    let dir = std::env::temp_dir().join(format!("chi-words-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for window in [1, 4] {
        let expect = brute(&c, window);
        let mem = count_cooccurrences(&c, &CoocConfig { window, ..Default::default() }).unwrap();
        assert_eq!(mem.spilled_runs, 0);
        let spilled = count_cooccurrences(&c, &CoocConfig { window, max_in_memory: 300, temp_dir: Some(dir.clone()) }).unwrap();
        assert!(spilled.spilled_runs > 3, "only {} runs", spilled.spilled_runs);
        for got in [&mem, &spilled] {
            assert_eq!(got.entries.len(), expect.len());
            assert!(got.entries.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)), "sorted, no duplicates");
            for &(i, j, x) in &got.entries {
                assert!((x - expect[&(i, j)]).abs() < 1e-9, "({i},{j}): {x} vs {}", expect[&(i, j)]);
            }
        }
        // Symmetric.
        for &(i, j, x) in &mem.entries {
            assert!((x - expect[&(j, i)]).abs() < 1e-9);
        }
    }
    // Spilled runs are removed.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn weighting_function() {
    assert_eq!(weight(100.0, 100.0, 0.75), 1.0);
    assert_eq!(weight(250.0, 100.0, 0.75), 1.0);
    assert!((weight(10.0, 100.0, 0.75) - 0.1f64.powf(0.75)).abs() < 1e-15);
}

fn params(v: usize, d: usize, seed: u64) -> GloveParams<f64> {
    let mut rng = Rng::new(seed);
    let mut p = GloveParams::<f64>::init(v, d, &mut rng);
    // Larger values than the initialisation so every term matters.
    for x in p.w.iter_mut().chain(p.wc.iter_mut()).chain(p.b.iter_mut()).chain(p.bc.iter_mut()) {
        *x = rng.uniform(-1.0, 1.0);
    }
    p
}

#[test]
fn glove_fused_step_equals_tape_gradient() {
    let (v, d) = (9, 11);
    for k in [KernelChoice::Auto, KernelChoice::Portable] {
        // x below and above x_max; i == j (a word with itself) too.
        for (i, j, x) in [(2u32, 5u32, 3.5f64), (4, 4, 180.0), (0, 8, 0.25)] {
            let p0 = params(v, d, 17);
            let t = |a: &[f64], r: usize| Tensor::from_vec(a.to_vec(), &[a.len() / r, r]).requires_grad();
            let (w, wc, b, bc) = (t(&p0.w, d), t(&p0.wc, d), t(&p0.b, 1), t(&p0.bc, 1));
            let loss = tape::glove_loss(&w, &wc, &b, &bc, &[(i, j, x)], 100.0, 0.75);
            loss.backward();
            let mut p = p0.clone();
            // Accumulators start at 1 and η = 1: the step is exactly minus the gradient.
            let l = glove_step(&mut p, i, j, x, 100.0, 0.75, 1.0, k).unwrap();
            assert!((l - loss.item()).abs() < 1e-12);
            for (name, before, after, g) in [
                ("w", &p0.w, &p.w, w.grad().unwrap().to_vec()),
                ("wc", &p0.wc, &p.wc, wc.grad().unwrap().to_vec()),
                ("b", &p0.b, &p.b, b.grad().unwrap().to_vec()),
                ("bc", &p0.bc, &p.bc, bc.grad().unwrap().to_vec()),
            ] {
                assert!(g.iter().any(|&x| x != 0.0), "{name}: zero gradient");
                for k in 0..g.len() {
                    assert!((before[k] - after[k] - g[k]).abs() < 1e-12, "{name}[{k}]: {} vs {}", before[k] - after[k], g[k]);
                }
            }
            // AdaGrad accumulators gained the squared gradient.
            let gw = w.grad().unwrap().to_vec();
            for k in 0..gw.len() {
                assert!((p.gw[k] - 1.0 - gw[k] * gw[k]).abs() < 1e-12);
            }
        }
    }
}

/// The accumulator sums squares of the η-scaled gradient, as glove.c does: after one step at
/// η = 0.5 from accumulators of 1, the step is 0.5·g and the accumulator 1 + (0.5·g)²; a second
/// step divides by its square root.
#[test]
fn glove_adagrad_accumulates_the_scaled_gradient_as_glove_c() {
    let (v, d) = (9, 11);
    let (i, j, x, eta) = (2u32, 5u32, 3.5f64, 0.5f64);
    for k in [KernelChoice::Auto, KernelChoice::Portable] {
        let p0 = params(v, d, 23);
        let t = |a: &[f64], r: usize| Tensor::from_vec(a.to_vec(), &[a.len() / r, r]).requires_grad();
        let (w, wc, b, bc) = (t(&p0.w, d), t(&p0.wc, d), t(&p0.b, 1), t(&p0.bc, 1));
        tape::glove_loss(&w, &wc, &b, &bc, &[(i, j, x)], 100.0, 0.75).backward();
        let (gw, gb) = (w.grad().unwrap().to_vec(), b.grad().unwrap().to_vec());
        let mut p = p0.clone();
        glove_step(&mut p, i, j, x, 100.0, 0.75, eta, k).unwrap();
        let row = i as usize * d..(i as usize + 1) * d;
        for q in row.clone() {
            assert!((p0.w[q] - p.w[q] - eta * gw[q]).abs() < 1e-12);
            assert!((p.gw[q] - (1.0 + (eta * gw[q]).powi(2))).abs() < 1e-12, "accumulator {}", p.gw[q]);
        }
        let bi = i as usize;
        assert!((p.gb[bi] - (1.0 + (eta * gb[bi]).powi(2))).abs() < 1e-12);
        assert!(gw[row.clone()].iter().any(|&g| g != 0.0));
        // The second step on the same entry: its gradient at the new point, over √G.
        let (w2, wc2, b2, bc2) = (t(&p.w, d), t(&p.wc, d), t(&p.b, 1), t(&p.bc, 1));
        tape::glove_loss(&w2, &wc2, &b2, &bc2, &[(i, j, x)], 100.0, 0.75).backward();
        let g2 = w2.grad().unwrap().to_vec();
        let p1 = p.clone();
        glove_step(&mut p, i, j, x, 100.0, 0.75, eta, k).unwrap();
        for q in row {
            assert!((p1.w[q] - p.w[q] - eta * g2[q] / p1.gw[q].sqrt()).abs() < 1e-12);
        }
    }
}

#[test]
fn glove_tape_loss_passes_gradcheck() {
    let p = params(5, 3, 4);
    let entries = [(0u32, 1u32, 2.0), (1, 0, 2.0), (3, 3, 150.0), (4, 2, 0.5)];
    let xs = [
        Tensor::from_vec(p.w.clone(), &[5, 3]),
        Tensor::from_vec(p.wc.clone(), &[5, 3]),
        Tensor::from_vec(p.b.clone(), &[5, 1]),
        Tensor::from_vec(p.bc.clone(), &[5, 1]),
    ];
    let f = |x: &[Tensor<f64>]| tape::glove_loss(&x[0], &x[1], &x[2], &x[3], &entries, 100.0, 0.75);
    assert!(gradcheck(f, &xs, &GradcheckOptions::default()).unwrap().passed);
    assert!(gradgradcheck(f, &xs, &GradcheckOptions::default()).unwrap().passed);
}

#[test]
fn glove_trains_deterministically_and_recovers_planted_groups() {
    let (text, groups) = planted();
    let cfg = GloveConfig { dim: 16, min_count: 1, epochs: 25, cooc: CoocConfig { window: 4, ..Default::default() }, ..Default::default() };
    let (a, sa) = train_glove(&text, &cfg).unwrap();
    let (b, _) = train_glove(&text, &cfg).unwrap();
    assert!(a.params.w.iter().zip(&b.params.w).all(|(x, y)| x.to_bits() == y.to_bits()));
    assert!(sa.epoch_loss.last().unwrap() < &(sa.epoch_loss[0] * 0.5), "loss {:?}", sa.epoch_loss);
    assert!(sa.entries_per_sec > 0.0 && sa.entries > 0);
    let v = a.vectors();
    for g in &groups {
        let nn = v.nearest(&g[0], 1).unwrap();
        assert!(g.contains(&nn[0].0), "{} nearest {}", g[0], nn[0].0);
    }
    let (m, _) = train_glove(&text, &GloveConfig { threads: 2, ..cfg }).unwrap();
    assert!(m.params.w.iter().all(|x| x.is_finite()));
}

fn planted() -> (Text, Vec<Vec<String>>) {
    let (s, groups) = chi_words::eval::planted_corpus(9, 800);
    (Text::from_str(&s, false), groups)
}

/// GloVe on 2 and 3 thread ranks (the protocol `mpirun` runs), exchanging every 500 entries and
/// once per epoch: every rank ends with the same model bit for bit, the global loss falls, the
/// planted groups are recovered as in one process, and one rank of a group of one is
/// `train_glove` exactly.
#[test]
fn glove_on_ranks_adds_up_the_changes_and_recovers_planted_groups() {
    let cfg = GloveConfig { dim: 16, min_count: 1, epochs: 25, cooc: CoocConfig { window: 4, ..Default::default() }, ..Default::default() };
    let (text, groups) = planted();
    let (single, _) = train_glove(&text, &cfg).unwrap();
    let (solo, _, comm) = train_glove_on(&Solo, &text, &cfg, 500).unwrap();
    assert_eq!(solo.params, single.params, "one rank is one process");
    assert_eq!(comm.exchanges, 0);
    let (_, one_sep) = {
        let v = single.vectors();
        let (same, diff) = chi_words::eval::group_separation(&groups, |a, b| v.similarity(a, b).unwrap());
        (same, same - diff)
    };
    for (k, sync) in [(2, 500u64), (3, u64::MAX)] {
        let rank_cfg = cfg.clone();
        let out = ThreadGroup::run_each(k, move |c| {
            let (text, _) = planted();
            train_glove_on(&c, &text, &rank_cfg, sync).unwrap()
        });
        for (m, _, _) in &out[1..] {
            assert_eq!(m.params, out[0].0.params, "ranks hold the same model after the last exchange");
        }
        let (m, stats, comm) = &out[0];
        assert!(comm.exchanges >= cfg.epochs as u64 && comm.bytes_sent > 0, "{comm:?}");
        assert!(stats.epoch_loss.last().unwrap() < &(stats.epoch_loss[0] * 0.5), "loss {:?}", stats.epoch_loss);
        let v = m.vectors();
        let (same, diff) = chi_words::eval::group_separation(&groups, |a, b| v.similarity(a, b).unwrap());
        assert!(same - diff > 0.5 * one_sep, "{k} ranks: separation {} against one process's {one_sep}", same - diff);
        for g in &groups {
            let nn = v.nearest(&g[0], 1).unwrap();
            assert!(g.contains(&nn[0].0), "{k} ranks: {} nearest {}", g[0], nn[0].0);
        }
    }
    assert!(train_glove_on(&Solo, &text, &cfg, 0).is_err());
}

#[test]
fn a_corpus_without_cooccurrences_is_refused_not_trained() {
    // One word per sentence: no pair shares a window, so there is nothing to fit.
    let text = Text::from_str("alpha\nbeta\ngamma\nalpha\n", false);
    let cfg = GloveConfig { dim: 4, min_count: 1, epochs: 2, ..Default::default() };
    let e = train_glove(&text, &cfg).unwrap_err().to_string();
    assert!(e.contains("no co-occurrences") && e.contains("4 words"), "{e}");
    // One shared sentence is enough.
    assert!(train_glove(&Text::from_str("alpha beta\ngamma\n", false), &cfg).is_ok());
}
