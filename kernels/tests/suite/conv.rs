//! im2col vs direct convolution, col2im as the adjoint of im2col, max-pooling vs a reference
//! (ties, padding), bad geometry.

use chi_kernels::conv::*;
use proptest::prelude::*;

fn lcg(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Direct convolution of one image with `cout` filters `[cout, c, kh, kw]`.
fn direct_conv(x: &[f64], w: &[f64], cout: usize, g: Conv2dGeom) -> Vec<f64> {
    let (oh, ow) = (g.out_h().unwrap(), g.out_w().unwrap());
    let mut out = vec![0.0; cout * oh * ow];
    for co in 0..cout {
        for oy in 0..oh {
            for ox in 0..ow {
                let mut s = 0.0;
                for c in 0..g.c {
                    for ki in 0..g.kh {
                        for kj in 0..g.kw {
                            let iy = (oy * g.stride + ki) as isize - g.pad as isize;
                            let ix = (ox * g.stride + kj) as isize - g.pad as isize;
                            if iy >= 0 && ix >= 0 && (iy as usize) < g.h && (ix as usize) < g.w {
                                s += w[((co * g.c + c) * g.kh + ki) * g.kw + kj] * x[(c * g.h + iy as usize) * g.w + ix as usize];
                            }
                        }
                    }
                }
                out[(co * oh + oy) * ow + ox] = s;
            }
        }
    }
    out
}

fn geom() -> impl Strategy<Value = Conv2dGeom> {
    (1usize..4, 1usize..9, 1usize..9, 1usize..4, 1usize..4, 1usize..4, 0usize..3)
        .prop_filter_map("window fits", |(c, h, w, kh, kw, stride, pad)| {
            let g = Conv2dGeom { c, h, w, kh, kw, stride, pad };
            (g.out_h().is_some() && g.out_w().is_some()).then_some(g)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn im2col_gemm_equals_direct_conv(g in geom(), seed in any::<u64>()) {
        let (oh, ow) = (g.out_h().unwrap(), g.out_w().unwrap());
        let x = lcg(seed, g.c * g.h * g.w);
        let cout = 2;
        let k = g.c * g.kh * g.kw;
        let w = lcg(seed ^ 7, cout * k);
        let mut cols = vec![f64::NAN; k * oh * ow];
        im2col_2d(&x, g, &mut cols);
        let want = direct_conv(&x, &w, cout, g);
        for co in 0..cout {
            for p in 0..oh * ow {
                let s: f64 = (0..k).map(|r| w[co * k + r] * cols[r * oh * ow + p]).sum();
                prop_assert!((s - want[co * oh * ow + p]).abs() < 1e-12);
            }
        }
        // f32 path gives the same gather
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let mut c32 = vec![0f32; cols.len()];
        im2col_2d(&x32, g, &mut c32);
        prop_assert!(c32.iter().zip(&cols).all(|(a, b)| *a == *b as f32));
    }

    #[test]
    fn col2im_is_adjoint_of_im2col(g in geom(), seed in any::<u64>()) {
        let (oh, ow) = (g.out_h().unwrap(), g.out_w().unwrap());
        let x = lcg(seed, g.c * g.h * g.w);
        let y = lcg(seed ^ 99, g.c * g.kh * g.kw * oh * ow);
        let mut cols = vec![0.0; y.len()];
        im2col_2d(&x, g, &mut cols);
        let mut dx = vec![0.0; x.len()];
        col2im_2d(&y, g, &mut dx);
        let lhs: f64 = cols.iter().zip(&y).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.iter().zip(&dx).map(|(a, b)| a * b).sum();
        prop_assert!((lhs - rhs).abs() < 1e-10 * (1.0 + lhs.abs()));
    }

    #[test]
    fn conv1d_matches_2d_reference_and_adjoint(c in 1usize..4, l in 1usize..20, k in 1usize..5, stride in 1usize..4, pad in 0usize..3, seed in any::<u64>()) {
        prop_assume!(l + 2 * pad >= k);
        let ol = out_len(l, k, stride, pad).unwrap();
        let x = lcg(seed, c * l);
        let mut cols = vec![f64::NAN; c * k * ol];
        im2col_1d(&x, c, l, k, stride, pad, &mut cols);
        for ci in 0..c { for kk in 0..k { for o in 0..ol {
            let i = (o * stride + kk) as isize - pad as isize;
            let want = if i >= 0 && (i as usize) < l { x[ci * l + i as usize] } else { 0.0 };
            prop_assert_eq!(cols[(ci * k + kk) * ol + o], want);
        }}}
        let y = lcg(seed ^ 5, cols.len());
        let mut dx = vec![0.0; x.len()];
        col2im_1d(&y, c, l, k, stride, pad, &mut dx);
        let lhs: f64 = cols.iter().zip(&y).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.iter().zip(&dx).map(|(a, b)| a * b).sum();
        prop_assert!((lhs - rhs).abs() < 1e-10 * (1.0 + lhs.abs()));
    }

    #[test]
    fn maxpool_matches_reference(g in geom(), seed in any::<u64>(), ties in any::<bool>()) {
        let (oh, ow) = (g.out_h().unwrap(), g.out_w().unwrap());
        let mut x = lcg(seed, g.c * g.h * g.w);
        if ties { for v in x.iter_mut() { *v = (*v * 2.0).round(); } } // many equal values
        let mut out = vec![0.0; g.c * oh * ow];
        let mut arg = vec![0usize; out.len()];
        maxpool_2d(&x, g, &mut out, &mut arg);
        for c in 0..g.c { for oy in 0..oh { for ox in 0..ow {
            let (mut best, mut at) = (f64::NEG_INFINITY, usize::MAX);
            for ki in 0..g.kh { for kj in 0..g.kw {
                let iy = (oy * g.stride + ki) as isize - g.pad as isize;
                let ix = (ox * g.stride + kj) as isize - g.pad as isize;
                if iy >= 0 && ix >= 0 && (iy as usize) < g.h && (ix as usize) < g.w {
                    let k = (c * g.h + iy as usize) * g.w + ix as usize;
                    if at == usize::MAX || x[k] > best { best = x[k]; at = k; }
                }
            }}
            let o = (c * oh + oy) * ow + ox;
            prop_assert_eq!(out[o], best);
            prop_assert_eq!(arg[o], at);
        }}}
        // backward routes each gradient to its argmax
        let gr = lcg(seed ^ 3, out.len());
        let mut dx = vec![0.0; x.len()];
        maxpool_backward(&gr, &arg, &mut dx);
        let mut want = vec![0.0; x.len()];
        for (o, &a) in arg.iter().enumerate() { if a != usize::MAX { want[a] += gr[o]; } }
        prop_assert_eq!(dx, want);
    }
}

#[test]
fn maxpool_1d_and_ties() {
    let x = [1.0f32, 3.0, 3.0, 2.0, 2.0, 0.0];
    let mut out = [0f32; 3];
    let mut arg = [0usize; 3];
    maxpool_1d(&x, 1, 6, 2, 2, &mut out, &mut arg);
    assert_eq!(out, [3.0, 3.0, 2.0]);
    assert_eq!(arg, [1, 2, 4]); // first of equal values in each window
    let x = [f32::NEG_INFINITY; 4];
    let mut out = [0f32; 2];
    maxpool_1d(&x, 1, 4, 2, 2, &mut out, &mut arg[..2]);
    assert_eq!(arg[..2], [0, 2]);
}

#[test]
fn im2col_large_parallel_matches_serial_geometry() {
    let g = Conv2dGeom { c: 16, h: 32, w: 32, kh: 3, kw: 3, stride: 1, pad: 1 };
    let x: Vec<f32> = (0..g.c * g.h * g.w).map(|i| i as f32).collect();
    let mut cols = vec![0f32; g.c * 9 * 32 * 32];
    im2col_2d(&x, g, &mut cols);
    // spot-check against the definition
    for &(c, ki, kj, oy, ox) in &[(0, 0, 0, 0, 0), (15, 2, 2, 31, 31), (7, 1, 0, 10, 0), (3, 2, 1, 31, 5)] {
        let iy = (oy + ki) as isize - 1;
        let ix = (ox + kj) as isize - 1;
        let want = if iy >= 0 && ix >= 0 && iy < 32 && ix < 32 { x[(c * 32 + iy as usize) * 32 + ix as usize] } else { 0.0 };
        assert_eq!(cols[((c * 3 + ki) * 3 + kj) * 1024 + oy * 32 + ox], want);
    }
    let mut dx = vec![0f32; x.len()];
    col2im_2d(&vec![1f32; cols.len()], g, &mut dx);
    assert_eq!(dx[0], 4.0); // corner pixel is read by 4 window positions
    assert_eq!(dx[33], 9.0); // interior pixel by 9
}

#[test]
#[should_panic(expected = "im2col_2d: kernel 5x5 with padding 0 does not fit input 3x3")]
fn im2col_kernel_too_big() {
    let g = Conv2dGeom { c: 1, h: 3, w: 3, kh: 5, kw: 5, stride: 1, pad: 0 };
    im2col_2d(&[0f32; 9], g, &mut []);
}

#[test]
#[should_panic(expected = "col2im_2d: cols has 3 elements, need 4")]
fn col2im_bad_cols() {
    let g = Conv2dGeom { c: 1, h: 2, w: 2, kh: 1, kw: 1, stride: 1, pad: 0 };
    col2im_2d(&[0f32; 3], g, &mut [0f32; 4]);
}

#[test]
#[should_panic(expected = "maxpool_2d: stride must be positive")]
fn maxpool_zero_stride() {
    let g = Conv2dGeom { c: 1, h: 2, w: 2, kh: 1, kw: 1, stride: 0, pad: 0 };
    maxpool_2d(&[0f32; 4], g, &mut [0f32; 4], &mut [0; 4]);
}

#[test]
#[should_panic(expected = "maxpool_backward: index 9 out of range for dx of 4 elements")]
fn maxpool_backward_bad_index() {
    maxpool_backward(&[1f32], &[9], &mut [0f32; 4]);
}

#[test]
#[should_panic(expected = "im2col_1d: cols has 2 elements, need 3")]
fn im2col_1d_bad_cols() {
    im2col_1d(&[0f32; 3], 1, 3, 1, 1, 0, &mut [0f32; 2]);
}
