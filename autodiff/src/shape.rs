//! [`Shape`]: the dimensions of a tensor, stored inline (no allocation), and NumPy broadcasting.

use std::fmt;

/// Largest rank a tensor may have. Eight covers batched 2-D convolution weights with room to spare.
pub const MAX_RANK: usize = 8;

/// Dimensions of a row-major tensor. `Copy`, so ops pass shapes around for free.
#[derive(Clone, Copy)]
pub struct Shape {
    dims: [usize; MAX_RANK],
    rank: u8,
}

impl Shape {
    /// A shape from its dimensions. Panics if the rank exceeds [`MAX_RANK`], or if the number
    /// of elements does not fit in a `usize` (a product that wrapped would describe another,
    /// smaller tensor).
    #[track_caller]
    pub fn new(dims: &[usize]) -> Shape {
        assert!(dims.len() <= MAX_RANK, "shape {dims:?} has rank {}, the maximum is {MAX_RANK}", dims.len());
        assert!(
            dims.contains(&0) || dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).is_some(),
            "shape {dims:?} has more elements than a usize can count (the product of its dimensions overflows)"
        );
        let mut d = [0; MAX_RANK];
        d[..dims.len()].copy_from_slice(dims);
        Shape { dims: d, rank: dims.len() as u8 }
    }
    /// The shape of a scalar (rank 0, one element).
    pub fn scalar() -> Shape {
        Shape { dims: [0; MAX_RANK], rank: 0 }
    }
    /// The dimensions.
    #[inline]
    pub fn dims(&self) -> &[usize] {
        &self.dims[..self.rank as usize]
    }
    /// Number of dimensions.
    #[inline]
    pub fn rank(&self) -> usize {
        self.rank as usize
    }
    /// Number of elements (1 for a scalar).
    #[inline]
    pub fn numel(&self) -> usize {
        self.dims().iter().product()
    }
    /// Size of axis `axis`.
    pub fn dim(&self, axis: usize) -> usize {
        self.dims()[axis]
    }
    /// Row-major strides.
    pub fn strides(&self) -> Vec<usize> {
        chi_kernels::layout::contiguous_strides(self.dims())
    }
    /// This shape with axis `axis` replaced by `size`.
    pub fn with_dim(&self, axis: usize, size: usize) -> Shape {
        let mut s = *self;
        s.dims[axis] = size;
        s
    }
    /// This shape with axis `axis` removed.
    pub fn without(&self, axis: usize) -> Shape {
        let mut v = self.dims().to_vec();
        v.remove(axis);
        Shape::new(&v)
    }
    /// Splits the shape around `axis` into `(outer, n, inner)`: the product of the dimensions
    /// before it, its size, and the product after it (the kernels' reduction layout).
    pub fn split_at_axis(&self, axis: usize) -> (usize, usize, usize) {
        let d = self.dims();
        (d[..axis].iter().product(), d[axis], d[axis + 1..].iter().product())
    }
    /// The NumPy broadcast of two shapes, or `None` if they are incompatible.
    pub fn broadcast(a: &Shape, b: &Shape) -> Option<Shape> {
        let r = a.rank().max(b.rank());
        let mut out = [0; MAX_RANK];
        for i in 0..r {
            let da = if i < a.rank() { a.dims()[a.rank() - 1 - i] } else { 1 };
            let db = if i < b.rank() { b.dims()[b.rank() - 1 - i] } else { 1 };
            out[r - 1 - i] = if da == db {
                da
            } else if da == 1 {
                db
            } else if db == 1 {
                da
            } else {
                return None;
            };
        }
        Some(Shape { dims: out, rank: r as u8 })
    }
    /// Strides that read this shape as if broadcast to `out` (0 on broadcast axes), or `None`
    /// if this shape does not broadcast to `out`.
    pub fn broadcast_strides(&self, out: &Shape) -> Option<Vec<usize>> {
        if self.rank() > out.rank() {
            return None;
        }
        let own = self.strides();
        let off = out.rank() - self.rank();
        let mut st = vec![0; out.rank()];
        for d in 0..self.rank() {
            let (s, o) = (self.dims()[d], out.dims()[off + d]);
            if s == o {
                st[off + d] = if s == 1 { 0 } else { own[d] };
            } else if s != 1 {
                return None;
            }
        }
        Some(st)
    }
    /// Resolves a possibly negative axis (`-1` = last) against this rank, panicking with the op name.
    pub fn axis(&self, op: &str, axis: isize) -> usize {
        let r = self.rank() as isize;
        let a = if axis < 0 { axis + r } else { axis };
        assert!(a >= 0 && a < r, "{op}: axis {axis} is out of range for shape {self:?}");
        a as usize
    }
}

// Equality and hashing look at the `rank` used dimensions only: comparing the whole inline
// array made every shape check (one per gradient in backward, one per binary op) a call to
// `memcmp` of 64 bytes; most shapes have rank 0 to 2. The element loop (rather than slice
// `==`, which also calls `memcmp`) compiles to a few inline compares.
impl PartialEq for Shape {
    #[inline]
    fn eq(&self, other: &Shape) -> bool {
        self.rank == other.rank && self.dims().iter().zip(other.dims()).all(|(a, b)| a == b)
    }
}
impl Eq for Shape {}
impl std::hash::Hash for Shape {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.dims().hash(h)
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.dims())
    }
}
impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.dims())
    }
}
impl From<&[usize]> for Shape {
    fn from(d: &[usize]) -> Shape {
        Shape::new(d)
    }
}
impl<const N: usize> From<[usize; N]> for Shape {
    fn from(d: [usize; N]) -> Shape {
        Shape::new(&d)
    }
}
impl<const N: usize> From<&[usize; N]> for Shape {
    fn from(d: &[usize; N]) -> Shape {
        Shape::new(d)
    }
}
impl From<Vec<usize>> for Shape {
    fn from(d: Vec<usize>) -> Shape {
        Shape::new(&d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn broadcast_rules() {
        let a = Shape::new(&[3, 1, 5]);
        let b = Shape::new(&[4, 5]);
        assert_eq!(Shape::broadcast(&a, &b).unwrap().dims(), &[3, 4, 5]);
        assert!(Shape::broadcast(&Shape::new(&[2, 3]), &Shape::new(&[3, 2])).is_none());
        assert_eq!(b.broadcast_strides(&Shape::new(&[3, 4, 5])).unwrap(), vec![0, 5, 1]);
        assert_eq!(Shape::new(&[1, 5]).broadcast_strides(&Shape::new(&[4, 5])).unwrap(), vec![0, 1]);
        assert_eq!(Shape::scalar().numel(), 1);
    }
}
