//! Neural-network ops and losses against naive oracles: convolution (1-D, 2-D, strides,
//! padding, bias), max pooling, dropout, and the stability of the losses for huge logits.
//! (Gradients of all of them, first and second order, are checked by the gradcheck cases.)

use chi_autodiff::{grad, Conv2dGeom, GradOptions, Reduction, Rng, Tensor, Window};

fn randn(shape: &[usize], rng: &mut Rng) -> Tensor<f64> {
    Tensor::randn(shape, rng)
}

fn assert_close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths differ");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{what}: element {i}: {x} vs {y}");
    }
}

/// Direct 2-D cross-correlation with zero padding.
fn naive_conv2d(x: &Tensor<f64>, w: &Tensor<f64>, b: Option<&Tensor<f64>>, s: usize, p: usize) -> (Vec<f64>, [usize; 4]) {
    let (xs, ws) = (x.shape(), w.shape());
    let (n, c, h, wd) = (xs[0], xs[1], xs[2], xs[3]);
    let (co, kh, kw) = (ws[0], ws[2], ws[3]);
    let oh = (h + 2 * p - kh) / s + 1;
    let ow = (wd + 2 * p - kw) / s + 1;
    let (xd, wdata) = (x.data(), w.data());
    let mut out = vec![0.0; n * co * oh * ow];
    for ni in 0..n {
        for o in 0..co {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = b.map_or(0.0, |b| b.data()[o]);
                    for ci in 0..c {
                        for ki in 0..kh {
                            for kj in 0..kw {
                                let iy = (oy * s + ki) as isize - p as isize;
                                let ix = (ox * s + kj) as isize - p as isize;
                                if iy < 0 || ix < 0 || iy as usize >= h || ix as usize >= wd {
                                    continue;
                                }
                                let xv = xd[((ni * c + ci) * h + iy as usize) * wd + ix as usize];
                                acc += xv * wdata[((o * c + ci) * kh + ki) * kw + kj];
                            }
                        }
                    }
                    out[((ni * co + o) * oh + oy) * ow + ox] = acc;
                }
            }
        }
    }
    (out, [n, co, oh, ow])
}

#[test]
fn conv2d_matches_direct_convolution() {
    let mut rng = Rng::new(7);
    for trial in 0..40 {
        let (n, c, co) = (1 + rng.below(3), 1 + rng.below(4), 1 + rng.below(4));
        let (kh, kw) = (1 + rng.below(4), 1 + rng.below(4));
        let stride = 1 + rng.below(3);
        let pad = rng.below(3);
        let h = kh + rng.below(6);
        let w = kw + rng.below(6);
        let x = randn(&[n, c, h, w], &mut rng);
        let wt = randn(&[co, c, kh, kw], &mut rng);
        let b = (trial % 2 == 0).then(|| randn(&[co], &mut rng));
        let y = x.conv2d(&wt, b.as_ref(), stride, pad);
        let (expect, shape) = naive_conv2d(&x, &wt, b.as_ref(), stride, pad);
        assert_eq!(y.shape(), &shape, "trial {trial}");
        assert_close(y.data(), &expect, 1e-12, &format!("conv2d trial {trial} (stride {stride}, pad {pad})"));
    }
}

#[test]
fn conv2d_large_enough_for_parallel_im2col_matches_direct() {
    // cols per image = 8·3·3·46·46 > 2^17: exercises the kernels' multi-threaded path.
    let mut rng = Rng::new(11);
    let x = randn(&[2, 8, 48, 48], &mut rng);
    let w = randn(&[3, 8, 3, 3], &mut rng);
    let b = randn(&[3], &mut rng);
    for (stride, pad) in [(1, 0), (2, 1)] {
        let y = x.conv2d(&w, Some(&b), stride, pad);
        let (expect, shape) = naive_conv2d(&x, &w, Some(&b), stride, pad);
        assert_eq!(y.shape(), &shape);
        assert_close(y.data(), &expect, 1e-11, "large conv2d");
    }
    // And the input gradient (col2im) against the adjoint identity ⟨conv(x), g⟩ = ⟨x, ∂⟩ for a
    // linear map: the gradient of Σ g ⊙ conv(x) w.r.t. x, checked by a directional derivative.
    let xl = x.detach().requires_grad();
    let g = randn(&[2, 3, 46, 46], &mut rng);
    let loss = xl.conv2d(&w, None, 1, 0).mul(&g).sum();
    let dx = grad(&[&loss], &[&xl], None, GradOptions::default()).unwrap().remove(0);
    let v = randn(x.shape(), &mut rng);
    let (cv, _) = naive_conv2d(&v, &w, None, 1, 0);
    let lhs: f64 = cv.iter().zip(g.data()).map(|(a, b)| a * b).sum();
    let rhs: f64 = dx.data().iter().zip(v.data()).map(|(a, b)| a * b).sum();
    assert!((lhs - rhs).abs() < 1e-9 * lhs.abs().max(1.0), "{lhs} vs {rhs}");
}

#[test]
fn conv1d_matches_direct_convolution() {
    let mut rng = Rng::new(8);
    for trial in 0..40 {
        let (n, c, co, k) = (1 + rng.below(3), 1 + rng.below(4), 1 + rng.below(4), 1 + rng.below(5));
        let stride = 1 + rng.below(3);
        let pad = rng.below(3);
        let l = k + rng.below(8);
        let x = randn(&[n, c, l], &mut rng);
        let w = randn(&[co, c, k], &mut rng);
        let b = (trial % 2 == 1).then(|| randn(&[co], &mut rng));
        let y = x.conv1d(&w, b.as_ref(), stride, pad);
        // A 1-D conv is a 2-D conv of height 1 with no vertical padding: pad the signal by hand.
        let xp = x.pad_axis(2, pad, pad).reshape(&[n, c, 1, l + 2 * pad]);
        let (expect, shape) = naive_conv2d(&xp, &w.reshape(&[co, c, 1, k]), b.as_ref(), stride, 0);
        assert_eq!(y.shape(), &[n, co, shape[3]], "trial {trial}");
        assert_close(y.data(), &expect, 1e-12, &format!("conv1d trial {trial}"));
    }
}

#[test]
fn f32_conv2d_agrees_with_f64() {
    let mut rng = Rng::new(9);
    for (stride, pad) in [(1, 0), (2, 1), (1, 2)] {
        let x = randn(&[2, 3, 9, 8], &mut rng);
        let w = randn(&[4, 3, 3, 3], &mut rng);
        let b = randn(&[4], &mut rng);
        let y64 = x.conv2d(&w, Some(&b), stride, pad);
        let (x32, w32, b32) = (x.to_f32().requires_grad(), w.to_f32().requires_grad(), b.to_f32());
        let y32 = x32.conv2d(&w32, Some(&b32), stride, pad);
        let scale = y64.data().iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, e) in y32.data().iter().zip(y64.data()) {
            assert!((*a as f64 - e).abs() <= 1e-4 * scale.max(1.0), "f32 {a} vs f64 {e}");
        }
        // Gradients too.
        y32.square().sum().backward();
        let (xl, wl) = (x.requires_grad(), w.requires_grad());
        xl.conv2d(&wl, Some(&b), stride, pad).square().sum().backward();
        for (g32, g64) in [(x32.grad().unwrap(), xl.grad().unwrap()), (w32.grad().unwrap(), wl.grad().unwrap())] {
            let s = g64.data().iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (a, e) in g32.data().iter().zip(g64.data()) {
                assert!((*a as f64 - e).abs() <= 1e-4 * s.max(1.0), "grad f32 {a} vs f64 {e}");
            }
        }
    }
}

#[test]
fn im2col_and_col2im_are_adjoint() {
    let mut rng = Rng::new(10);
    for win in [
        Window::D2(Conv2dGeom { c: 2, h: 5, w: 6, kh: 3, kw: 2, stride: 2, pad: 1 }),
        Window::D1 { c: 3, l: 7, k: 3, stride: 2, pad: 2 },
    ] {
        let mut xs = vec![2];
        xs.extend(win.image_dims());
        let x = randn(&xs, &mut rng);
        let y = randn(&[2, win.positions(), win.patch_len()], &mut rng);
        let lhs: f64 = x.im2col(win).data().iter().zip(y.data()).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.data().iter().zip(y.col2im(win).data()).map(|(a, b)| a * b).sum();
        assert!((lhs - rhs).abs() < 1e-12 * lhs.abs().max(1.0), "{win:?}: {lhs} vs {rhs}");
    }
}

#[test]
fn max_pool_matches_naive() {
    let mut rng = Rng::new(12);
    for _ in 0..30 {
        let (n, c) = (1 + rng.below(3), 1 + rng.below(3));
        let (k, s) = (1 + rng.below(3), 1 + rng.below(3));
        let (h, w) = (k + rng.below(5), k + rng.below(5));
        let x = randn(&[n, c, h, w], &mut rng);
        let y = x.max_pool2d(k, s);
        let (oh, ow) = ((h - k) / s + 1, (w - k) / s + 1);
        assert_eq!(y.shape(), &[n, c, oh, ow]);
        let xd = x.data();
        for p in 0..n * c {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut m = f64::NEG_INFINITY;
                    for i in 0..k {
                        for j in 0..k {
                            m = m.max(xd[(p * h + oy * s + i) * w + ox * s + j]);
                        }
                    }
                    assert_eq!(y.data()[(p * oh + oy) * ow + ox], m);
                }
            }
        }
        // 1-D: each row of width w, the naive max over each window.
        let x1 = x.reshape(&[n, c * h, w]);
        let y1 = x1.max_pool1d(k, s);
        assert_eq!(y1.shape(), &[n, c * h, ow]);
        for r in 0..n * c * h {
            for o in 0..ow {
                let m = (0..k).map(|j| xd[r * w + o * s + j]).fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(y1.data()[r * ow + o], m);
            }
        }
    }
}

#[test]
fn max_pool_gradient_goes_to_the_arg_max() {
    let x = Tensor::<f64>::from_vec(vec![1., 5., 2., 0., 3., 4., 9., 8., 7., 6., -1., 10., 0., 0., 0., 0.], &[1, 1, 4, 4]).requires_grad();
    let y = x.max_pool2d(2, 2);
    assert_eq!(y.to_vec(), vec![5., 9., 7., 10.]);
    y.sum().backward();
    let mut expect = vec![0.0; 16];
    for i in [1, 6, 8, 11] {
        expect[i] = 1.0;
    }
    assert_eq!(x.grad().unwrap().to_vec(), expect);
}

/// Stable reference in f64: `logsumexp(x) − x[t]` with the max shifted out.
fn naive_ce(logits: &[f64], c: usize, targets: &[usize]) -> f64 {
    let n = targets.len();
    let mut total = 0.0;
    for (i, &t) in targets.iter().enumerate() {
        let row = &logits[i * c..(i + 1) * c];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        total += lse - row[t];
    }
    total / n as f64
}

#[test]
fn cross_entropy_is_stable_for_huge_logits() {
    let mut rng = Rng::new(13);
    let (n, c) = (6, 5);
    let raw: Vec<f64> = (0..n * c).map(|_| if rng.below(2) == 0 { 1e4 } else { -1e4 } * rng.uniform(0.5, 1.0)).collect();
    let targets: Vec<usize> = (0..n).map(|_| rng.below(c)).collect();
    let expect = naive_ce(&raw, c, &targets);
    assert!(expect.is_finite() && expect > 1.0);
    let x = Tensor::from_vec(raw.clone(), &[n, c]).requires_grad();
    let l = x.cross_entropy(&targets);
    assert!((l.item() - expect).abs() <= 1e-12 * expect, "{} vs {expect}", l.item());
    l.backward();
    assert!(x.grad().unwrap().all_finite());
    // f32 too: finite, and agrees with the f64 reference to f32 precision.
    let x32 = Tensor::<f32>::from_vec(raw.iter().map(|&v| v as f32).collect(), &[n, c]).requires_grad();
    let l32 = x32.cross_entropy(&targets);
    assert!(l32.item().is_finite());
    assert!(((l32.item() as f64) - expect).abs() <= 1e-5 * expect);
    l32.backward();
    assert!(x32.grad().unwrap().all_finite());
    // Reductions agree with each other.
    let per = x.detach().cross_entropy_with(&targets, Reduction::None);
    assert_eq!(per.shape(), &[n]);
    let sum = x.detach().cross_entropy_with(&targets, Reduction::Sum).item();
    assert!((sum - per.data().iter().sum::<f64>()).abs() < 1e-9 * sum);
    assert!((sum / n as f64 - expect).abs() < 1e-12 * expect);
}

#[test]
fn cross_entropy_on_moderate_logits_matches_naive_and_its_gradient_is_softmax_minus_onehot() {
    let mut rng = Rng::new(14);
    let (n, c) = (4, 3);
    let x = randn(&[n, c], &mut rng).requires_grad();
    let targets = [2usize, 0, 1, 1];
    let l = x.cross_entropy(&targets);
    assert!((l.item() - naive_ce(x.data(), c, &targets)).abs() < 1e-12);
    l.backward();
    let mut expect = x.detach().softmax(1).to_vec();
    for (i, &t) in targets.iter().enumerate() {
        expect[i * c + t] -= 1.0;
    }
    let expect: Vec<f64> = expect.iter().map(|v| v / n as f64).collect();
    assert_close(x.grad().unwrap().data(), &expect, 1e-12, "CE gradient");
}

#[test]
fn soft_cross_entropy_with_one_hot_targets_equals_hard() {
    let mut rng = Rng::new(15);
    let x = randn(&[3, 4], &mut rng).mul_scalar(50.0);
    let targets = [3usize, 0, 2];
    let mut p = vec![0.0; 12];
    for (i, &t) in targets.iter().enumerate() {
        p[i * 4 + t] = 1.0;
    }
    let soft = x.cross_entropy_soft(&Tensor::from_vec(p, &[3, 4])).item();
    let hard = x.cross_entropy(&targets).item();
    assert!((soft - hard).abs() < 1e-9 * hard.abs().max(1.0), "{soft} vs {hard}");
}

#[test]
fn bce_with_logits_is_stable_for_huge_logits() {
    let x = Tensor::<f64>::from_vec(vec![100.0, -100.0, 100.0, -100.0, 0.0], &[5]).requires_grad();
    let t = Tensor::from_vec(vec![0.0, 1.0, 1.0, 0.0, 0.5], &[5]);
    let per = x.binary_cross_entropy_with_logits_with(&t, Reduction::None);
    let expect = [100.0, 100.0, 0.0, 0.0, 2f64.ln()];
    for (a, e) in per.data().iter().zip(expect) {
        assert!(a.is_finite() && (a - e).abs() < 1e-12, "{a} vs {e}");
    }
    let l = x.binary_cross_entropy_with_logits(&t);
    assert!(l.item().is_finite());
    l.backward();
    let g = x.grad().unwrap();
    assert!(g.all_finite());
    // ∂/∂x = (σ(x) − t)/N
    let expect_g = [1.0, -1.0, 0.0, 0.0, 0.0].map(|v: f64| v / 5.0);
    assert_close(g.data(), &expect_g, 1e-12, "BCE gradient");
    // f32 as well.
    let x32 = Tensor::<f32>::from_vec(vec![100.0, -100.0, 1e4, -1e4], &[4]).requires_grad();
    let t32 = Tensor::from_vec(vec![0.0, 1.0, 0.0, 1.0], &[4]);
    let l32 = x32.binary_cross_entropy_with_logits(&t32);
    assert!(l32.item().is_finite() && (l32.item() - (200.0 + 2e4) / 4.0).abs() < 1e-2);
    l32.backward();
    assert!(x32.grad().unwrap().all_finite());
}

#[test]
fn mse_and_l1_match_formulas() {
    let a = Tensor::<f64>::from_vec(vec![1.0, -2.0, 3.0, 0.5], &[2, 2]);
    let b = Tensor::from_vec(vec![0.0, 1.0, 3.5, 0.5], &[2, 2]);
    assert!((a.mse_loss(&b).item() - (1.0 + 9.0 + 0.25) / 4.0).abs() < 1e-15);
    assert!((a.l1_loss(&b).item() - (1.0 + 3.0 + 0.5) / 4.0).abs() < 1e-15);
    assert!((a.mse_loss_with(&b, Reduction::Sum).item() - 10.25).abs() < 1e-15);
    assert_eq!(a.l1_loss_with(&b, Reduction::None).to_vec(), vec![1.0, 3.0, 0.5, 0.0]);
}

#[test]
fn dropout_same_seed_same_mask_and_mean_preserved() {
    let x = Tensor::<f64>::ones(&[200, 500]);
    let p = 0.3;
    let a = x.dropout(p, true, &mut Rng::new(42));
    let b = x.dropout(p, true, &mut Rng::new(42));
    let c = x.dropout(p, true, &mut Rng::new(43));
    assert_eq!(a.to_vec(), b.to_vec());
    assert_ne!(a.to_vec(), c.to_vec());
    let keep = 1.0 / (1.0 - p);
    assert!(a.data().iter().all(|&v| v == 0.0 || (v - keep).abs() < 1e-12));
    let zeros = a.data().iter().filter(|&&v| v == 0.0).count() as f64 / a.numel() as f64;
    assert!((zeros - p).abs() < 0.01, "dropped fraction {zeros}");
    let mean = a.mean().item();
    assert!((mean - 1.0).abs() < 0.02, "mean {mean}");
    // The gradient is the mask.
    let xl = Tensor::<f64>::ones(&[50]).requires_grad();
    let y = xl.dropout(0.5, true, &mut Rng::new(1));
    y.sum().backward();
    assert_eq!(xl.grad().unwrap().to_vec(), y.to_vec());
}

#[test]
fn dropout_is_identity_in_eval_mode_or_with_p_zero() {
    let mut rng = Rng::new(3);
    let x = randn(&[4, 5], &mut rng).requires_grad();
    let state = rng.state();
    let y = x.dropout(0.9, false, &mut rng);
    assert!(y.same_var(&x) && y.to_vec() == x.to_vec());
    let y = x.dropout(0.0, true, &mut rng);
    assert!(y.same_var(&x));
    assert_eq!(rng.state(), state, "no randomness consumed when dropout is off");
    assert!(x.dropout(1.0, true, &mut rng).data().iter().all(|&v| v == 0.0));
}

#[test]
fn text_cnn_with_several_widths_and_max_over_time() {
    // [N, E, T] embeddings, filter widths 2, 3, 4, max over time, concat: [N, 3·F].
    let mut rng = Rng::new(16);
    let x = randn(&[2, 6, 10], &mut rng);
    let ws: Vec<Tensor<f64>> = [2, 3, 4].iter().map(|&k| randn(&[5, 6, k], &mut rng).requires_grad()).collect();
    let feats: Vec<Tensor<f64>> = ws.iter().map(|w| x.conv1d(w, None, 1, 0).relu().max_axis(-1, false)).collect();
    let f = Tensor::concat(&feats, 1);
    assert_eq!(f.shape(), &[2, 15]);
    f.cross_entropy(&[3, 7]).backward();
    for w in &ws {
        assert!(w.grad().unwrap().all_finite());
    }
}

#[test]
#[should_panic(expected = "conv2d: input [1, 3, 5, 5] has 3 channels but weight [2, 4, 3, 3] expects 4")]
fn conv2d_channel_mismatch_panics() {
    let x = Tensor::<f64>::zeros(&[1, 3, 5, 5]);
    let w = Tensor::<f64>::zeros(&[2, 4, 3, 3]);
    let _ = x.conv2d(&w, None, 1, 0);
}

#[test]
#[should_panic(expected = "conv1d: input [2, 3, 7] has 3 channels but weight [4, 2, 3] expects 2")]
fn conv1d_channel_mismatch_panics() {
    let _ = Tensor::<f32>::zeros(&[2, 3, 7]).conv1d(&Tensor::zeros(&[4, 2, 3]), None, 1, 0);
}

#[test]
#[should_panic(expected = "does not fit input 2x2")]
fn conv2d_kernel_too_large_panics() {
    let _ = Tensor::<f64>::zeros(&[1, 1, 2, 2]).conv2d(&Tensor::zeros(&[1, 1, 3, 3]), None, 1, 0);
}

#[test]
#[should_panic(expected = "conv2d: bias must be [Cout] = [2]")]
fn conv2d_bias_shape_panics() {
    let _ = Tensor::<f64>::zeros(&[1, 1, 4, 4]).conv2d(&Tensor::zeros(&[2, 1, 3, 3]), Some(&Tensor::zeros(&[3])), 1, 0);
}

#[test]
#[should_panic(expected = "cross_entropy: target 5 of sample 1 is out of range for 3 classes")]
fn cross_entropy_target_out_of_range_panics() {
    let _ = Tensor::<f64>::zeros(&[2, 3]).cross_entropy(&[0, 5]);
}

#[test]
fn nn_ops_and_losses_are_registered_and_pass_first_and_second_order() {
    use chi_autodiff::gradcheck_cases::{self, check_case};
    let names = [
        "im2col",
        "col2im",
        "conv2d",
        "conv1d",
        "text_cnn_max_over_time",
        "max_pool2d",
        "max_pool1d",
        "dropout",
        "cross_entropy",
        "cross_entropy_soft",
        "bce_with_logits",
        "mse_loss",
        "l1_loss",
    ];
    let reg = gradcheck_cases::all();
    let opts = chi_autodiff::GradcheckOptions::default();
    let mut failures = Vec::new();
    for name in names {
        let op = reg.iter().find(|o| o.name == name).unwrap_or_else(|| panic!("{name} is not registered"));
        assert!(op.order2, "{name} must be checked at order 2");
        // More seeds than the all-ops test, so more geometries are drawn.
        for seed in 100..130 {
            for order in [1, 2] {
                let (case, res) = check_case(op, order, seed, &opts);
                match res {
                    Ok(r) => assert!(r.checked > 0, "{name}: nothing compared"),
                    Err(r) => failures.push(format!("{name} order {order} seed {seed} shapes {}: {r}", case.shapes())),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
