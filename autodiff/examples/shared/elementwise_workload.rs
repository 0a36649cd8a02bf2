// The elementwise workload timed both inside the workspace (`chi-autodiff`'s
// `elementwise_speed` example) and from a crate outside it (`models/nn/examples/outside-crate`),
// included by both so that the two measure the same code: forward and backward of
// `sum(tanh(a * b + exp(-a)) * sigmoid(b))` over 1,048,576 f32 elements.

/// Best-of-`reps` seconds per forward + backward pass.
pub fn elementwise_seconds(reps: usize) -> f64 {
    use chi_autodiff::{Rng, Tensor};
    let n = 1 << 20;
    let mut rng = Rng::new(3);
    let a = Tensor::<f32>::randn(&[n], &mut rng).requires_grad();
    let b = Tensor::<f32>::randn(&[n], &mut rng).requires_grad();
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = std::time::Instant::now();
        let y = a.mul(&b).add(&a.neg().exp()).tanh().mul(&b.sigmoid()).sum();
        y.backward();
        std::hint::black_box(a.grad());
        best = best.min(t.elapsed().as_secs_f64());
        a.zero_grad();
        b.zero_grad();
    }
    best
}
