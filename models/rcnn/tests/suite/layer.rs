//! Whole-layer checks: every configuration gradchecks against finite differences (order 1 with
//! the fused scan, order 2 through the composed scan), fused = composed at layer level, stacks,
//! bidirectional runs, pooling and ragged lengths.

use crate::common;
use chi_autodiff::{Rng, Tensor};
use chi_rcnn::deps::ParamStore;
use chi_rcnn::{pool, Activation, Aggregation, BiRcnn, Decay, FeatureMap, OutputOf, Pooling, Rcnn, RcnnConfig, RcnnLayer, ScanImpl};
use common::{check_store, max_abs_diff};

fn variants() -> Vec<RcnnConfig> {
    let mut v = Vec::new();
    let decays = [Decay::Constant(0.5), Decay::Learned(0.4), Decay::AdaptiveX, Decay::AdaptiveXH];
    for (i, &decay) in decays.iter().enumerate() {
        for map in [FeatureMap::Additive, FeatureMap::Multiplicative] {
            for aggregation in [Aggregation::Unnormalized, Aggregation::Normalized] {
                let mut c = RcnnConfig::new(3, 3);
                c.order = 1 + (i + v.len()) % 3;
                c.map = map;
                c.aggregation = aggregation;
                c.decay = decay;
                c.output = if v.len() % 2 == 0 { OutputOf::State } else { OutputOf::ExactlyAt };
                c.output_matrix = map == FeatureMap::Multiplicative && v.len() % 3 != 0;
                c.activation = [Activation::Tanh, Activation::Identity][v.len() % 2];
                c.highway = v.len() % 4 == 1;
                v.push(c);
            }
        }
    }
    v
}

fn perturb_biases(store: &ParamStore<f64>, rng: &mut Rng) {
    // Zero biases would hide bias-gradient bugs.
    for p in store.params() {
        p.update(|v| v.iter_mut().for_each(|x| *x += 0.3 * rng.normal()));
    }
}

#[test]
fn every_layer_variant_gradchecks_order_one() {
    let mut rng = Rng::new(1);
    for cfg in variants() {
        let mut store = ParamStore::<f64>::new();
        let layer = RcnnLayer::new(&mut store, "r", "m", cfg.clone(), &mut rng).unwrap();
        perturb_biases(&store, &mut rng);
        let x = Tensor::<f64>::randn(&[2, 4, 3], &mut rng);
        let lens = [4, 3];
        check_store(&store, &[x], |xs| layer.forward(&xs[0], Some(&lens)).unwrap(), 1).unwrap_or_else(|r| panic!("{cfg:?}: {r}"));
    }
}

#[test]
fn layer_variants_gradcheck_order_two_through_composed() {
    let mut rng = Rng::new(2);
    for cfg in variants().into_iter().step_by(3) {
        let mut cfg = cfg;
        cfg.scan = ScanImpl::Composed;
        cfg.activation = Activation::Tanh;
        let mut store = ParamStore::<f64>::new();
        let layer = RcnnLayer::new(&mut store, "r", "m", cfg.clone(), &mut rng).unwrap();
        perturb_biases(&store, &mut rng);
        let x = Tensor::<f64>::randn(&[1, 3, 3], &mut rng);
        check_store(&store, &[x], |xs| layer.forward(&xs[0], None).unwrap(), 2).unwrap_or_else(|r| panic!("{cfg:?}: {r}"));
    }
}

#[test]
fn fused_and_composed_layers_agree() {
    let mut rng = Rng::new(3);
    for cfg in variants() {
        let mut store = ParamStore::<f64>::new();
        let mut layer = RcnnLayer::new(&mut store, "r", "m", cfg.clone(), &mut rng).unwrap();
        let x = Tensor::<f64>::randn(&[2, 5, 3], &mut rng);
        let run = |layer: &RcnnLayer<f64>| {
            store.zero_grad();
            let y = layer.forward(&x, Some(&[5, 2])).unwrap();
            y.mul(&y).sum().backward();
            let grads: Vec<f64> = store.params().iter().flat_map(|p| p.grad().map_or(vec![], |g| g.to_vec())).collect();
            (y.to_vec(), grads)
        };
        let a = run(&layer);
        layer.set_scan(ScanImpl::Composed);
        let b = run(&layer);
        assert!(max_abs_diff(&a.0, &b.0) < 1e-12 && max_abs_diff(&a.1, &b.1) < 1e-11, "{cfg:?}");
    }
}

#[test]
fn stacked_highway_and_bidirectional_gradcheck() {
    let mut rng = Rng::new(4);
    let mut cfg = RcnnConfig::new(3, 3);
    cfg.highway = true;
    cfg.decay = Decay::AdaptiveX;
    cfg.map = FeatureMap::Additive;
    let mut store = ParamStore::<f64>::new();
    let stack = Rcnn::new(&mut store, "s", "m", &cfg, 2, &mut rng).unwrap();
    perturb_biases(&store, &mut rng);
    let x = Tensor::<f64>::randn(&[2, 4, 3], &mut rng);
    check_store(&store, &[x.clone()], |xs| stack.forward(&xs[0], Some(&[4, 2])).unwrap(), 1).unwrap_or_else(|r| panic!("stack: {r}"));

    let mut store = ParamStore::<f64>::new();
    let bi = BiRcnn::new(&mut store, "b", "m", &RcnnConfig::new(3, 2), 1, &mut rng).unwrap();
    perturb_biases(&store, &mut rng);
    for mode in [Pooling::Max, Pooling::Mean, Pooling::Last] {
        check_store(&store, &[x.clone()], |xs| pool(&bi.forward(&xs[0], Some(&[4, 3])).unwrap(), Some(&[4, 3]), mode).unwrap(), 1)
            .unwrap_or_else(|r| panic!("bi {mode:?}: {r}"));
    }
}

/// The backward direction of a bidirectional layer at position t has read words t…len−1: on a
/// ragged row it equals the backward stack run on the reversed, unpadded sequence.
#[test]
fn bidirectional_ragged_rows_match_unpadded_runs() {
    let mut rng = Rng::new(5);
    let mut store = ParamStore::<f64>::new();
    let bi = BiRcnn::new(&mut store, "b", "m", &RcnnConfig::new(3, 2), 2, &mut rng).unwrap();
    let x = Tensor::<f64>::randn(&[2, 5, 3], &mut rng);
    let y = bi.forward(&x, Some(&[5, 3])).unwrap();
    let alone = bi.forward(&x.narrow(0, 1, 1).narrow(1, 0, 3), None).unwrap();
    assert!(max_abs_diff(y.narrow(0, 1, 1).narrow(1, 0, 3).data(), alone.data()) < 1e-14);
}

#[test]
fn pooling_respects_lengths() {
    let h = Tensor::<f64>::from_vec(vec![1.0, 5.0, 2.0, 9.0, 3.0, 0.5, -1.0, 7.0, 4.0, 8.0, 6.0, 2.0], &[2, 3, 2]);
    let lens = [2, 3];
    assert_eq!(pool(&h, Some(&lens), Pooling::Max).unwrap().to_vec(), vec![2.0, 9.0, 6.0, 8.0]);
    assert_eq!(pool(&h, Some(&lens), Pooling::Last).unwrap().to_vec(), vec![2.0, 9.0, 6.0, 2.0]);
    let m = pool(&h, Some(&lens), Pooling::Mean).unwrap().to_vec();
    assert!(max_abs_diff(&m, &[1.5, 7.0, 3.0, 17.0 / 3.0]) < 1e-15);
    assert!(pool(&h, Some(&[0, 3]), Pooling::Max).is_err());
    assert!(pool(&h, Some(&[4, 3]), Pooling::Max).is_err());
}

#[test]
fn configuration_errors_are_typed() {
    let mut rng = Rng::new(0);
    let mut store = ParamStore::<f32>::new();
    let mut c = RcnnConfig::new(3, 4);
    c.highway = true;
    assert!(RcnnLayer::new(&mut store, "a", "m", c, &mut rng).is_err());
    let mut c = RcnnConfig::new(3, 4);
    c.decay = Decay::Constant(1.0);
    assert!(RcnnLayer::new(&mut store, "b", "m", c, &mut rng).is_err());
    let layer = RcnnLayer::new(&mut store, "c", "m", RcnnConfig::new(3, 4), &mut rng).unwrap();
    let e = layer.forward(&Tensor::zeros(&[1, 2, 5]), None).unwrap_err();
    assert!(e.to_string().contains("RcnnLayer::forward") && e.to_string().contains("[1, 2, 5]"), "{e}");
}
