//! Forward values of the context-aware models ([CAML]) against plain scalar arithmetic written
//! here from the paper's equations — never from chi's tensor ops or the models' own helpers.
//!
//! * CA-RNN cell state (Eq. 34) and output (Eq. 36), two time steps from a non-zero state.
//! * CA-EM / CA-BSFE (Eq. 19–20, OOV by Eq. 21–22) and the dictionary-free [`Vocab`].
//! * CA-NN (Eq. 38–39), one layer and a stack of two.
//! * CA-SEM: sentence embedding (Eq. 18), the energy (Eq. 17) and its gradient in `v0` and χ̃ at an
//!   arbitrary state against the hand-derived gradient, the closed-form v0 step as a minimiser,
//!   and each block step applied alone from a random state.
//!
//! Weight layouts used below are the ones documented in each module (`[in, out]` matrices acting
//! on row vectors, stacked blocks in the documented order).

use chi_autodiff::{Rng, Tensor};
use chi_ca::{BagAverage, CaBsfe, CaNn, CaNnConfig, CaNnLayer, CaRnnCell, CaRnnConfig, CaSem, Vocab, OOV};
use chi_nn::layers::RecurrentCell;
use chi_nn::params::ParamStore;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn close(got: f64, want: f64, tol: f64, what: &str) {
    assert!((got - want).abs() <= tol * want.abs().max(1.0), "{what}: got {got}, want {want} (diff {:e})", (got - want).abs());
}

/// Adds `N(0, 0.3²)` noise to every parameter, so zero-initialised biases / default vectors and
/// the constant peephole are generic.
fn jitter(store: &ParamStore<f64>, rng: &mut Rng) {
    for p in store.params() {
        let noise: Vec<f64> = (0..p.numel()).map(|_| 0.3 * rng.normal()).collect();
        p.update(|v| v.iter_mut().zip(&noise).for_each(|(a, b)| *a += b));
    }
}

fn randv(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.normal()).collect()
}

fn dotp(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// `M·x` for the block of rows `row0..row0 + x.len()` of a row-major `[rows, n_out]` matrix
/// stored `[in, out]` (so the paper's `M ∈ R^{out×in}` is its transpose): `Σ_i x_i m[row0+i][j]`.
fn block_mv(m: &[f64], n_out: usize, row0: usize, x: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; n_out];
    for (i, xi) in x.iter().enumerate() {
        for (j, o) in out.iter_mut().enumerate() {
            *o += xi * m[(row0 + i) * n_out + j];
        }
    }
    out
}

fn add_all(vs: &[&[f64]]) -> Vec<f64> {
    let mut out = vec![0.0; vs[0].len()];
    for v in vs {
        for (o, x) in out.iter_mut().zip(v.iter()) {
            *o += x;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// CA-RNN (§3.4, Eq. 34 and 36)
// ---------------------------------------------------------------------------------------------

/// One CA-RNN step written term by term from Eq. 34 and Eq. 36 (all h = tanh), for one example.
/// Returns `(y_t, c_t, f_t, o_t)`.
fn ca_rnn_step_by_hand(cell: &CaRnnCell<f64>, n: usize, dx: usize, x: &[f64], y_prev: &[f64], c_prev: &[f64]) -> (Vec<f64>, Vec<f64>, f64, f64) {
    let w_f = cell.w_f.to_vec();
    let b_f = cell.b_f.to_vec()[0];
    let w_v = cell.w_v.to_vec();
    let p_v = cell.p_v.to_vec();
    let b_v = cell.b_v.to_vec();
    let w_c = cell.w_c.to_vec();
    let b_c = cell.b_c.to_vec();
    let w_o = cell.w_o.to_vec();
    let b_o = cell.b_o.to_vec()[0];
    let w_ov = cell.w_ov.to_vec();
    let b_ov = cell.b_ov.to_vec();
    let w_oc = cell.w_oc.to_vec();
    let b_oc = cell.b_oc.to_vec();
    assert_eq!(p_v.len(), n, "default config must use the paper's vector peephole");

    // Eq. 34. w_f = [v_f; w_f; u_f] over [c_{t−1}, x_t, y_{t−1}].
    let (v_f, wf_x, u_f) = (&w_f[..n], &w_f[n..n + dx], &w_f[n + dx..]);
    let f = sigmoid(dotp(v_f, c_prev) + dotp(wf_x, x) + dotp(u_f, y_prev) + b_f);
    // v_t = tanh(W_v x + U_v y + p_v ⊙ c + b_v); w_v = [W_v; U_v].
    let wv_x = block_mv(&w_v, n, 0, x);
    let uv_y = block_mv(&w_v, n, dx, y_prev);
    let peep: Vec<f64> = (0..n).map(|j| p_v[j] * c_prev[j]).collect();
    let v: Vec<f64> = add_all(&[&wv_x, &uv_y, &peep, &b_v]).iter().map(|a| a.tanh()).collect();
    // c'_t = tanh(W_c x + U_c y + b_c) — no c_{t−1}.
    let wc_x = block_mv(&w_c, n, 0, x);
    let uc_y = block_mv(&w_c, n, dx, y_prev);
    let cp: Vec<f64> = add_all(&[&wc_x, &uc_y, &b_c]).iter().map(|a| a.tanh()).collect();
    let c: Vec<f64> = (0..n).map(|j| f * v[j] + (1.0 - f) * cp[j]).collect();

    // Eq. 36. w_o = [z_o; v_o; w_o; u_o] over [c_t, c_{t−1}, x_t, y_{t−1}].
    let (z_o, v_o, wo_x, u_o) = (&w_o[..n], &w_o[n..2 * n], &w_o[2 * n..2 * n + dx], &w_o[2 * n + dx..]);
    let o = sigmoid(dotp(z_o, &c) + dotp(v_o, c_prev) + dotp(wo_x, x) + dotp(u_o, y_prev) + b_o);
    // vᵒ_t = tanh(Z_v c_t + V_v c_{t−1} + Wᵒ_v x + Uᵒ_v y + bᵒ_v); w_ov = [Z_v; V_v; Wᵒ_v; Uᵒ_v].
    let zv_c = block_mv(&w_ov, n, 0, &c);
    let vv_cp = block_mv(&w_ov, n, n, c_prev);
    let wov_x = block_mv(&w_ov, n, 2 * n, x);
    let uov_y = block_mv(&w_ov, n, 2 * n + dx, y_prev);
    let vo: Vec<f64> = add_all(&[&zv_c, &vv_cp, &wov_x, &uov_y, &b_ov]).iter().map(|a| a.tanh()).collect();
    // cᵒ_t = tanh(Vᵒ_c c_{t−1} + Wᵒ_c x + Uᵒ_c y + bᵒ_c); w_oc = [Vᵒ_c; Wᵒ_c; Uᵒ_c] — no c_t.
    let voc_cp = block_mv(&w_oc, n, 0, c_prev);
    let woc_x = block_mv(&w_oc, n, n, x);
    let uoc_y = block_mv(&w_oc, n, n + dx, y_prev);
    let co: Vec<f64> = add_all(&[&voc_cp, &woc_x, &uoc_y, &b_oc]).iter().map(|a| a.tanh()).collect();
    let y: Vec<f64> = (0..n).map(|j| o * vo[j] + (1.0 - o) * co[j]).collect();
    (y, c, f, o)
}

#[test]
fn ca_rnn_two_steps_match_eq_34_and_36_by_hand() {
    let (dx, n, batch) = (2, 3, 2);
    let mut rng = Rng::new(340);
    let mut store = ParamStore::<f64>::new();
    let cell = CaRnnCell::new(&mut store, "carnn", dx, n, CaRnnConfig::default(), &mut rng);
    jitter(&store, &mut rng);
    // A non-zero starting state so every c_{t−1} / y_{t−1} term contributes from step 1.
    let y0 = randv(&mut rng, batch * n);
    let c0 = randv(&mut rng, batch * n);
    let xs: Vec<Vec<f64>> = (0..2).map(|_| randv(&mut rng, batch * dx)).collect();

    let mut state = vec![Tensor::from_vec(y0.clone(), &[batch, n]), Tensor::from_vec(c0.clone(), &[batch, n])];
    let mut hand: Vec<(Vec<f64>, Vec<f64>)> = (0..batch).map(|b| (y0[b * n..(b + 1) * n].to_vec(), c0[b * n..(b + 1) * n].to_vec())).collect();
    for (t, x) in xs.iter().enumerate() {
        let (next, f, o) = cell.step_with_gates(&Tensor::from_vec(x.clone(), &[batch, dx]), &state);
        assert_eq!(f.shape(), &[batch, 1], "f_t is a scalar per example");
        assert_eq!(o.shape(), &[batch, 1], "o_t is a scalar per example");
        let (y, c) = (next[0].to_vec(), CaRnnCell::cell_state(&next).to_vec());
        assert_eq!(cell.output(&next).to_vec(), y, "state is [y_t, c_t]");
        for b in 0..batch {
            let (yp, cp) = &hand[b];
            let (hy, hc, hf, ho) = ca_rnn_step_by_hand(&cell, n, dx, &x[b * dx..(b + 1) * dx], yp, cp);
            close(f.to_vec()[b], hf, 1e-12, &format!("t{t} b{b} f_t"));
            close(o.to_vec()[b], ho, 1e-12, &format!("t{t} b{b} o_t"));
            for j in 0..n {
                close(c[b * n + j], hc[j], 1e-12, &format!("t{t} b{b} c_t[{j}]"));
                close(y[b * n + j], hy[j], 1e-12, &format!("t{t} b{b} y_t[{j}]"));
            }
            hand[b] = (hy, hc);
        }
        // The gates are genuinely mixing (not saturated), so both EDF branches are tested.
        assert!(f.to_vec().iter().chain(o.to_vec().iter()).all(|g| *g > 0.02 && *g < 0.98), "gates {:?} {:?}", f.to_vec(), o.to_vec());
        state = next;
    }
}

// ---------------------------------------------------------------------------------------------
// CA-EM / CA-BSFE (§3.2, Eq. 19–22) and the dictionary-free vocabulary
// ---------------------------------------------------------------------------------------------

/// χ̃(w; θ) = 1 / (1 + exp(−θᵀ w_σ)) (Eq. 19) for row `id`.
fn chi_tilde(ws: &[f64], theta: &[f64], id: usize) -> f64 {
    let m = theta.len();
    1.0 / (1.0 + (-dotp(theta, &ws[id * m..(id + 1) * m])).exp())
}

/// Eq. 20 with OOV tokens as v0, χ̃ = 1 (Eq. 21–22): `s = v0 Σχ̃ + Σ (1 − χ̃) w'`.
fn bag_by_hand(m: &CaBsfe<f64>, bag: &[usize]) -> Vec<f64> {
    let (wp, ws, theta, v0) = (m.w_prime.to_vec(), m.w_sigma.to_vec(), m.theta.to_vec(), m.v0.to_vec());
    let (vocab, n) = (m.vocab(), v0.len());
    let mut sum_chi = 0.0;
    let mut s = vec![0.0; n];
    for &t in bag {
        if t == OOV || t >= vocab {
            sum_chi += 1.0;
            continue;
        }
        let c = chi_tilde(&ws, &theta, t);
        sum_chi += c;
        for k in 0..n {
            s[k] += (1.0 - c) * wp[t * n + k];
        }
    }
    for k in 0..n {
        s[k] += sum_chi * v0[k];
    }
    s
}

fn bsfe_model(seed: u64, vocab: usize, n: usize, m: usize) -> CaBsfe<f64> {
    let mut rng = Rng::new(seed);
    let mut store = ParamStore::<f64>::new();
    let model = CaBsfe::new(&mut store, "bsfe", vocab, n, m, &mut rng);
    jitter(&store, &mut rng);
    // The store is dropped; the model keeps its parameter handles.
    model
}

#[test]
fn ca_bsfe_bag_embedding_matches_eq_19_20_by_hand() {
    let (vocab, n, m) = (5, 3, 2);
    let model = bsfe_model(19, vocab, n, m);
    let (wp, ws, theta, v0) = (model.w_prime.to_vec(), model.w_sigma.to_vec(), model.theta.to_vec(), model.v0.to_vec());

    // χ̃ of every row (Eq. 19).
    let table = model.chi_table();
    for id in 0..vocab {
        close(table[id], chi_tilde(&ws, &theta, id), 1e-12, &format!("χ̃({id})"));
    }
    // CA-EM (one feature): χ̃ v0 + (1 − χ̃) w'.
    let ids = [4usize, 0, 2, 2];
    let em = model.embed(&ids).to_vec();
    for (r, &id) in ids.iter().enumerate() {
        let c = chi_tilde(&ws, &theta, id);
        for k in 0..n {
            close(em[r * n + k], c * v0[k] + (1.0 - c) * wp[id * n + k], 1e-12, &format!("CA-EM row {r} [{k}]"));
        }
    }
    // CA-BSFE bags: repeats, OOV, ids ≥ vocab, all-OOV, single, and empty bags.
    let bags = vec![vec![0, 1, 1, 4], vec![2, OOV], vec![3], vec![OOV, OOV, 7], vec![], vec![1, 3, 0, 2, 4]];
    let s = model.forward(&bags).to_vec();
    assert_eq!(s.len(), bags.len() * n);
    for (b, bag) in bags.iter().enumerate() {
        let want = bag_by_hand(&model, bag);
        for k in 0..n {
            close(s[b * n + k], want[k], 1e-12, &format!("bag {b} [{k}]"));
        }
    }
    // Spot values that follow from Eq. 20 directly: an all-OOV bag of 3 is 3·v0 (Eq. 22 with
    // σ = 1) and the empty bag is 0.
    for k in 0..n {
        close(s[3 * n + k], 3.0 * v0[k], 1e-12, "all-OOV bag");
        assert_eq!(s[4 * n + k], 0.0, "empty bag");
    }
    // A sum, not an average: the bag [1, 1] is twice the single-feature embedding of 1.
    let twice = model.forward(&[vec![1, 1]]).to_vec();
    let one = model.embed(&[1]).to_vec();
    for k in 0..n {
        close(twice[k], 2.0 * one[k], 1e-12, "bag [1,1] = 2·CA-EM(1)");
    }
}

#[test]
fn bag_average_baseline_skips_oov_by_hand() {
    let mut rng = Rng::new(23);
    let mut store = ParamStore::<f64>::new();
    let avg = BagAverage::new(&mut store, "avg", 4, 3, &mut rng);
    let t = avg.table.to_vec();
    let s = avg.forward(&[vec![0, 2, OOV, 2], vec![OOV], vec![3]]).to_vec();
    for k in 0..3 {
        close(s[k], (t[k] + 2.0 * t[2 * 3 + k]) / 3.0, 1e-12, "mean over the 3 in-vocabulary tokens");
        assert_eq!(s[3 + k], 0.0, "all-OOV bag averages to 0");
        close(s[6 + k], t[3 * 3 + k], 1e-12, "single token");
    }
}

#[test]
fn dictionary_free_vocab_gives_every_distinct_token_a_row_and_unseen_tokens_oov() {
    let train = "the movie was great the acting was GREAT and the plot , the plot !".split(' ').collect::<Vec<_>>();
    let mut distinct: Vec<&str> = Vec::new();
    for w in &train {
        if !distinct.contains(w) {
            distinct.push(w);
        }
    }
    let mut vocab = Vocab::new(distinct.len());
    let ids: Vec<usize> = train.iter().map(|w| vocab.id(w)).collect();
    // Rows are handed out in order of first appearance, one per distinct token (no dictionary,
    // no normalisation: "great" and "GREAT", "," and "!" are separate features).
    for (i, w) in train.iter().enumerate() {
        let first = distinct.iter().position(|d| d == w).unwrap();
        assert_eq!(ids[i], first, "token {w:?}");
    }
    assert_eq!(vocab.len(), distinct.len());
    assert_ne!(vocab.lookup("great"), vocab.lookup("GREAT"));
    // Capacity reached: a new token is OOV even before freezing, and is not added.
    assert_eq!(vocab.id("boring"), OOV);
    assert_eq!(vocab.len(), distinct.len());

    // With room to spare, freezing stops growth: unseen tokens map to OOV, seen ones keep rows.
    let mut vocab = Vocab::new(100);
    for w in &train {
        vocab.id(w);
    }
    assert_eq!(vocab.lookup("boring"), OOV, "lookup never adds");
    assert_eq!(vocab.len(), distinct.len());
    vocab.freeze();
    assert_eq!(vocab.id("boring"), OOV);
    assert_eq!(vocab.len(), distinct.len());
    assert_eq!(vocab.id("plot"), distinct.iter().position(|d| *d == "plot").unwrap());

    // An unseen test token embeds as v0 with χ̃ = 1 (Eq. 21–22): the bag with it is the bag
    // without it plus v0.
    let model = bsfe_model(29, vocab.len(), 4, 2);
    let test = ["the", "plot", "boring", "was"];
    let with: Vec<usize> = test.iter().map(|w| vocab.id(w)).collect();
    assert_eq!(with[2], OOV);
    let without: Vec<usize> = with.iter().copied().filter(|&i| i != OOV).collect();
    let s = model.forward(&[with.clone(), without]).to_vec();
    let v0 = model.v0.to_vec();
    for k in 0..4 {
        close(s[k], s[4 + k] + v0[k], 1e-12, "unseen token adds v0");
    }
    let want = bag_by_hand(&model, &with);
    for k in 0..4 {
        close(s[k], want[k], 1e-12, "bag with unseen token");
    }
}

// ---------------------------------------------------------------------------------------------
// CA-NN (§3.5, Eq. 38–39)
// ---------------------------------------------------------------------------------------------

/// `w = χ(c) v(c) + (1 − χ(c)) w0`, `χ(c) = σ(vᵀc + b)`, `v(c) = tanh(W c + b_v)`.
fn ca_nn_by_hand(l: &CaNnLayer<f64>, c: &[f64]) -> (Vec<f64>, f64) {
    let (w, bv) = (l.v.linear.weight.to_vec(), l.v.linear.bias.as_ref().unwrap().to_vec());
    let (cw, cb, w0) = (l.chi_w.to_vec(), l.chi_b.to_vec()[0], l.w0.to_vec());
    let dout = w0.len();
    let chi = sigmoid(dotp(&cw, c) + cb);
    let v: Vec<f64> = add_all(&[&block_mv(&w, dout, 0, c), &bv]).iter().map(|a| a.tanh()).collect();
    ((0..dout).map(|j| chi * v[j] + (1.0 - chi) * w0[j]).collect(), chi)
}

#[test]
fn ca_nn_layer_and_stack_match_eq_38_39_by_hand() {
    let mut rng = Rng::new(38);
    let mut store = ParamStore::<f64>::new();
    let layer = CaNnLayer::new(&mut store, "l", 3, 4, CaNnConfig::default(), &mut rng);
    jitter(&store, &mut rng);
    let c = vec![0.7, -1.2, 0.4];
    let got = layer.forward(&Tensor::from_vec(c.clone(), &[1, 3])).to_vec();
    let chi = layer.chi(&Tensor::from_vec(c.clone(), &[1, 3])).to_vec();
    let (want, want_chi) = ca_nn_by_hand(&layer, &c);
    assert_eq!(chi.len(), 1, "χ(c) is one scalar per input (Eq. 39)");
    close(chi[0], want_chi, 1e-12, "χ(c)");
    assert!(want_chi > 0.02 && want_chi < 0.98, "χ = {want_chi} should mix both branches");
    for j in 0..4 {
        close(got[j], want[j], 1e-12, &format!("w[{j}]"));
    }

    // Two stacked layers (w of layer 1 is c of layer 2) and a linear readout.
    let mut store = ParamStore::<f64>::new();
    let net = CaNn::new(&mut store, "net", &[3, 4, 2], Some(1), CaNnConfig::default(), &mut rng);
    jitter(&store, &mut rng);
    let xs = [vec![0.7, -1.2, 0.4], vec![-0.3, 0.9, 1.5]];
    let out = net.forward(&Tensor::from_vec(xs.concat(), &[2, 3])).to_vec();
    let r = net.readout.as_ref().unwrap();
    let (rw, rb) = (r.linear.weight.to_vec(), r.linear.bias.as_ref().unwrap().to_vec()[0]);
    for (b, x) in xs.iter().enumerate() {
        let (h1, _) = ca_nn_by_hand(&net.layers[0], x);
        let (h2, _) = ca_nn_by_hand(&net.layers[1], &h1);
        close(out[b], dotp(&rw, &h2) + rb, 1e-12, &format!("stack row {b}"));
    }
}

// ---------------------------------------------------------------------------------------------
// CA-SEM (§3.1, Eq. 17–18, Alg. 1)
// ---------------------------------------------------------------------------------------------

/// A random CA-SEM state: words, counts, χ̃ ∈ [0, 1], arbitrary w' and v0 (not from Alg. 1).
struct SemState {
    words: Vec<Vec<f64>>,
    counts: Vec<f64>,
    chi: Vec<f64>,
    wp: Vec<Vec<f64>>,
    v0: Vec<f64>,
}

fn random_sem_state(rng: &mut Rng, nw: usize, d: usize) -> SemState {
    let words = (0..nw).map(|_| randv(rng, d)).collect();
    let counts = (0..nw).map(|_| 1.0 + rng.below(6) as f64).collect();
    let chi = (0..nw).map(|_| rng.uniform(0.0, 1.0)).collect();
    let wp = (0..nw).map(|_| randv(rng, d)).collect();
    let v0 = randv(rng, d);
    SemState { words, counts, chi, wp, v0 }
}

/// Eq. 17 by hand: `Σ_w n_w ‖w − χ̃ v0 − (1 − χ̃) w'‖²`.
fn sem_energy(words: &[Vec<f64>], counts: &[f64], chi: &[f64], wp: &[Vec<f64>], v0: &[f64]) -> f64 {
    let mut e = 0.0;
    for i in 0..words.len() {
        for k in 0..v0.len() {
            let r = words[i][k] - chi[i] * v0[k] - (1.0 - chi[i]) * wp[i][k];
            e += counts[i] * r * r;
        }
    }
    e
}

fn mat(rows: &[Vec<f64>]) -> Tensor<f64> {
    Tensor::from_vec(rows.concat(), &[rows.len(), rows[0].len()])
}

#[test]
fn ca_sem_energy_gradient_at_a_random_state_matches_the_hand_derivation() {
    let mut rng = Rng::new(170);
    for trial in 0..5 {
        let (nw, d) = (7, 4);
        let s = random_sem_state(&mut rng, nw, d);
        let v0 = Tensor::from_vec(s.v0.clone(), &[d]).requires_grad();
        let chi = Tensor::from_vec(s.chi.clone(), &[nw]).requires_grad();
        let e = CaSem::energy_tensor(&mat(&s.words), &Tensor::from_vec(s.counts.clone(), &[nw]), &chi, &mat(&s.wp), &v0);
        let e_hand = sem_energy(&s.words, &s.counts, &s.chi, &s.wp, &s.v0);
        close(e.item(), e_hand, 1e-12, "energy");
        close(CaSem::energy_of(&s.words, &s.counts, &s.chi, &s.wp, &s.v0), e_hand, 1e-12, "energy_of");
        e.backward();
        // r_w = w − χ̃ v0 − (1 − χ̃) w'.  ∂E/∂v0 = −2 Σ_w n_w χ̃_w r_w;
        // ∂E/∂χ̃_w = −2 n_w ⟨r_w, v0 − w'⟩.
        let mut g_v0 = vec![0.0; d];
        let mut g_chi = vec![0.0; nw];
        for i in 0..nw {
            let r: Vec<f64> = (0..d).map(|k| s.words[i][k] - s.chi[i] * s.v0[k] - (1.0 - s.chi[i]) * s.wp[i][k]).collect();
            for k in 0..d {
                g_v0[k] += -2.0 * s.counts[i] * s.chi[i] * r[k];
                g_chi[i] += -2.0 * s.counts[i] * r[k] * (s.v0[k] - s.wp[i][k]);
            }
        }
        let got = v0.grad().unwrap().to_vec();
        assert!(got.iter().map(|x| x.abs()).fold(0.0, f64::max) > 1e-3, "trial {trial}: gradient should not vanish at a random v0");
        for k in 0..d {
            close(got[k], g_v0[k], 1e-11, &format!("trial {trial} ∂E/∂v0[{k}]"));
        }
        let got = chi.grad().unwrap().to_vec();
        for i in 0..nw {
            close(got[i], g_chi[i], 1e-11, &format!("trial {trial} ∂E/∂χ̃[{i}]"));
        }
    }
}

#[test]
fn ca_sem_closed_form_v0_is_the_least_squares_minimiser() {
    let mut rng = Rng::new(171);
    for trial in 0..5 {
        let (nw, d) = (9, 5);
        let s = random_sem_state(&mut rng, nw, d);
        let v_star = CaSem::solve_v0(&s.words, &s.counts, &s.chi, &s.wp, &s.v0);
        let e_star = sem_energy(&s.words, &s.counts, &s.chi, &s.wp, &v_star);
        // E is quadratic in v0 with Hessian 2·(Σ n χ̃²)·I, so at the minimiser
        // E(v* + δ) − E(v*) = (Σ n χ̃²)‖δ‖² exactly, for every δ.
        let a: f64 = (0..nw).map(|i| s.counts[i] * s.chi[i] * s.chi[i]).sum();
        for scale in [1e-3, 1e-2, 0.1, 1.0] {
            for _ in 0..50 {
                let delta: Vec<f64> = randv(&mut rng, d).iter().map(|x| scale * x).collect();
                let p: Vec<f64> = v_star.iter().zip(&delta).map(|(v, e)| v + e).collect();
                let e_p = sem_energy(&s.words, &s.counts, &s.chi, &s.wp, &p);
                assert!(e_p >= e_star, "trial {trial}: E(v*+δ) = {e_p} < E(v*) = {e_star}");
                close(e_p - e_star, a * dotp(&delta, &delta), 1e-7, &format!("trial {trial} quadratic growth"));
            }
        }
        // And it beats the (random) starting v0.
        assert!(e_star <= sem_energy(&s.words, &s.counts, &s.chi, &s.wp, &s.v0));
    }
}

#[test]
fn ca_sem_chi_and_v0_steps_alone_never_raise_the_energy() {
    let mut rng = Rng::new(172);
    let mut strict = (0, 0);
    for _ in 0..200 {
        let (nw, d) = (6, 3);
        let mut s = random_sem_state(&mut rng, nw, d);
        // Start from a feasible state (w' ⟂ v0, as Alg. 1's iterates are) half of the time.
        if rng.below(2) == 0 {
            s.wp = s.wp.iter().map(|w| CaSem::solve_w_prime(&s.v0, w)).collect();
        }
        let e0 = sem_energy(&s.words, &s.counts, &s.chi, &s.wp, &s.v0);
        // χ̃ step alone (Step 1b), every word: each χ̃ stays in [0, 1] and E does not rise.
        let chi: Vec<f64> = (0..nw).map(|i| CaSem::solve_chi(&s.words[i], &s.wp[i], &s.v0)).collect();
        assert!(chi.iter().all(|c| (0.0..=1.0).contains(c)));
        let e1 = sem_energy(&s.words, &s.counts, &chi, &s.wp, &s.v0);
        assert!(e1 <= e0 + 1e-12 * e0, "χ̃ step raised E: {e0} → {e1}");
        strict.0 += (e1 < e0 - 1e-9) as usize;
        // v0 step alone (Step 2) from the original state.
        let v = CaSem::solve_v0(&s.words, &s.counts, &s.chi, &s.wp, &s.v0);
        let e2 = sem_energy(&s.words, &s.counts, &s.chi, &s.wp, &v);
        assert!(e2 <= e0 + 1e-12 * e0, "v0 step raised E: {e0} → {e2}");
        strict.1 += (e2 < e0 - 1e-9) as usize;
    }
    // From random states both steps should usually make real progress (not just tie).
    assert!(strict.0 > 150 && strict.1 > 150, "strict decreases: {strict:?}");
}

/// The paper's w' step (Step 1a, `w' = (I − v0v0ᵀ/‖v0‖²) w`) is a projection, not the minimiser
/// of Eq. 17 over `w' ⟂ v0` with χ̃ fixed: that minimiser is `Pw / (1 − χ̃)`. Applied alone it can
/// therefore raise the energy, by exactly `n_w χ̃² ‖Pw‖²` from that minimiser (as `sem.rs`
/// documents; it is why Alg. 1 needs its stopping rule). It is a minimiser only when χ̃ = 0.
#[test]
fn ca_sem_w_prime_step_alone_can_raise_the_energy_by_the_predicted_amount() {
    let mut rng = Rng::new(173);
    let mut raised = 0;
    for _ in 0..100 {
        let d = 4;
        let w = randv(&mut rng, d);
        let v0 = randv(&mut rng, d);
        let n = 1.0 + rng.below(4) as f64;
        let chi = rng.uniform(0.05, 0.95);
        // Hand projection: Pw = w − (⟨w, v0⟩/‖v0‖²) v0.
        let k = dotp(&w, &v0) / dotp(&v0, &v0);
        let pw: Vec<f64> = (0..d).map(|i| w[i] - k * v0[i]).collect();
        let step = CaSem::solve_w_prime(&v0, &w);
        for i in 0..d {
            close(step[i], pw[i], 1e-12, "w' step is the projection");
        }
        assert!(dotp(&step, &v0).abs() < 1e-12 * dotp(&w, &w).max(1.0), "w' ⟂ v0");
        // A feasible state (w' ⟂ v0) that is the exact w'-block minimiser for this χ̃.
        let best: Vec<f64> = pw.iter().map(|x| x / (1.0 - chi)).collect();
        let e_best = sem_energy(&[w.clone()], &[n], &[chi], &[best], &v0);
        let e_step = sem_energy(&[w.clone()], &[n], &[chi], &[step], &v0);
        close(e_step - e_best, n * chi * chi * dotp(&pw, &pw), 1e-9, "energy increase of the w' step");
        raised += (e_step > e_best) as usize;
        // With χ̃ = 0 the projection is the block minimiser: no feasible w' does better.
        let e0_step = sem_energy(&[w.clone()], &[n], &[0.0], &[pw.clone()], &v0);
        for _ in 0..20 {
            let r = randv(&mut rng, d);
            let cand = CaSem::solve_w_prime(&v0, &r);
            assert!(sem_energy(&[w.clone()], &[n], &[0.0], &[cand], &v0) >= e0_step - 1e-12);
        }
    }
    assert_eq!(raised, 100, "every case with χ̃ ∈ (0, 1) and Pw ≠ 0 rises");
}

/// Fig. 1: χ̃ comes from the projection `o` of `w` onto the segment `[w', v0]`. With Eq. 17's
/// parametrisation `o = χ̃ v0 + (1 − χ̃) w'`, so χ̃ = |o − w'| / |v0 − w'| (measured from `w'`).
/// The Fig. 1 caption writes `|v0 − o| / |w' − v0|`, which is `1 − χ̃`; chi follows the energy.
#[test]
fn ca_sem_chi_step_is_the_segment_projection_ratio() {
    let mut rng = Rng::new(174);
    let (mut inside, mut clamped) = (0, 0);
    for _ in 0..200 {
        let d = 3;
        let (w, wp, v0) = (randv(&mut rng, d), randv(&mut rng, d), randv(&mut rng, d));
        // Projection of w onto the line through w' and v0, by hand.
        let dir: Vec<f64> = (0..d).map(|k| v0[k] - wp[k]).collect();
        let t = (0..d).map(|k| (w[k] - wp[k]) * dir[k]).sum::<f64>() / dotp(&dir, &dir);
        let c = CaSem::solve_chi(&w, &wp, &v0);
        if (0.0..=1.0).contains(&t) {
            inside += 1;
            let o: Vec<f64> = (0..d).map(|k| wp[k] + t * dir[k]).collect();
            let dist = |a: &[f64], b: &[f64]| (0..d).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>().sqrt();
            close(c, dist(&o, &wp) / dist(&v0, &wp), 1e-12, "χ̃ = |o − w'| / |v0 − w'|");
            close(1.0 - c, dist(&v0, &o) / dist(&wp, &v0), 1e-12, "caption ratio = 1 − χ̃");
        } else {
            clamped += 1;
            assert_eq!(c, if t < 0.0 { 0.0 } else { 1.0 }, "projection outside the segment clamps to its nearer end");
        }
    }
    assert!(inside > 20 && clamped > 20, "both regimes exercised: {inside} inside, {clamped} clamped");
}

#[test]
fn ca_sem_sentence_embedding_matches_eq_18_by_hand() {
    let mut rng = Rng::new(18);
    let (nw, d) = (6, 3);
    let words: Vec<Vec<f64>> = (0..nw).map(|_| randv(&mut rng, d)).collect();
    let counts: Vec<f64> = (0..nw).map(|_| 1.0 + rng.below(4) as f64).collect();
    let fit = CaSem::fit(&words, &counts, &Default::default());
    let sent = [Some(0), Some(3), None, Some(3), Some(5), None];
    let got = fit.sentence(&sent);
    // s = v0 Σ χ̃ + Σ (1 − χ̃) w', OOV → v0 with χ̃ = 1.
    let mut want = vec![0.0; d];
    for id in &sent {
        for k in 0..d {
            want[k] += match id {
                Some(i) => fit.chi[*i] * fit.v0[k] + (1.0 - fit.chi[*i]) * fit.w_prime[*i][k],
                None => fit.v0[k],
            };
        }
    }
    for k in 0..d {
        close(got[k], want[k], 1e-12, &format!("s[{k}]"));
    }
    // The fitted state satisfies the constraints of Eq. 17: w' ⟂ v0 and χ̃ ∈ [0, 1].
    for i in 0..nw {
        assert!(dotp(&fit.w_prime[i], &fit.v0).abs() < 1e-10, "w'_{i} · v0");
        assert!((0.0..=1.0).contains(&fit.chi[i]));
    }
    // An all-OOV sentence is |s|·v0.
    let oov = fit.sentence(&[None, None, None]);
    for k in 0..d {
        close(oov[k], 3.0 * fit.v0[k], 1e-12, "all-OOV sentence");
    }
}
