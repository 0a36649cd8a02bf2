//! General matrix multiply: `C ← α·A·B + β·C` for strided matrices.
//!
//! Transposes are expressed by strides ([`MatRef::t`] swaps them), so callers never copy a
//! matrix to transpose it. When `β = 0`, `C` is overwritten and its old contents (even NaN) are
//! ignored, as in BLAS.

use crate::Real;

/// A read-only strided matrix view: element `(i, j)` is `data[i*rs + j*cs]`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a, T> {
    /// Backing storage; must contain every addressed element.
    pub data: &'a [T],
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Row stride (elements).
    pub rs: usize,
    /// Column stride (elements).
    pub cs: usize,
}

/// A mutable strided matrix view: element `(i, j)` is `data[i*rs + j*cs]`.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    /// Backing storage; must contain every addressed element.
    pub data: &'a mut [T],
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Row stride (elements).
    pub rs: usize,
    /// Column stride (elements).
    pub cs: usize,
}

/// Smallest buffer length that holds every element of a `rows × cols` view with these strides.
pub(crate) fn required_len(rows: usize, cols: usize, rs: usize, cs: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * rs + (cols - 1) * cs + 1
    }
}

impl<'a, T> MatRef<'a, T> {
    /// A row-major `rows × cols` view of contiguous data.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        MatRef { data, rows, cols, rs: cols, cs: 1 }
    }
    /// A column-major `rows × cols` view of contiguous data.
    pub fn col_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        MatRef { data, rows, cols, rs: 1, cs: rows }
    }
    /// The transpose, as a view (no copy).
    pub fn t(self) -> Self {
        MatRef { data: self.data, rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs }
    }
    /// Panics with a message naming `kernel` if the view addresses memory outside `data`.
    pub fn check(&self, kernel: &str, name: &str) {
        let need = required_len(self.rows, self.cols, self.rs, self.cs);
        assert!(
            need <= self.data.len(),
            "{kernel}: matrix {name} is {}x{} with strides ({}, {}) and needs {need} elements, but its buffer has {}",
            self.rows,
            self.cols,
            self.rs,
            self.cs,
            self.data.len()
        );
    }
    /// Element `(i, j)`.
    #[inline(always)]
    pub fn at(&self, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        self.data[i * self.rs + j * self.cs]
    }
}

impl<'a, T> MatMut<'a, T> {
    /// A row-major `rows × cols` view of contiguous data.
    pub fn row_major(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        MatMut { data, rows, cols, rs: cols, cs: 1 }
    }
    /// A column-major `rows × cols` view of contiguous data.
    pub fn col_major(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        MatMut { data, rows, cols, rs: 1, cs: rows }
    }
    /// The transpose, as a view (no copy).
    pub fn t(self) -> Self {
        MatMut { data: self.data, rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs }
    }
    /// Panics with a message naming `kernel` if the view addresses memory outside `data`.
    pub fn check(&self, kernel: &str, name: &str) {
        let need = required_len(self.rows, self.cols, self.rs, self.cs);
        assert!(
            need <= self.data.len(),
            "{kernel}: matrix {name} is {}x{} with strides ({}, {}) and needs {need} elements, but its buffer has {}",
            self.rows,
            self.cols,
            self.rs,
            self.cs,
            self.data.len()
        );
    }
    /// Reborrow as a read-only view.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        MatRef { data: self.data, rows: self.rows, cols: self.cols, rs: self.rs, cs: self.cs }
    }
}

/// How a kernel may use threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Par {
    /// Single-threaded, on the calling thread.
    Seq,
    /// Up to this many threads of the current rayon pool.
    Threads(usize),
    /// The kernel decides: single-threaded below its measured size threshold, otherwise all
    /// threads of the current rayon pool.
    Auto,
}

fn check_gemm_shapes<T>(kernel: &str, a: &MatRef<T>, b: &MatRef<T>, c: &MatMut<T>) {
    assert!(
        a.cols == b.rows && a.rows == c.rows && b.cols == c.cols,
        "{kernel}: shape mismatch: A is {}x{}, B is {}x{}, C is {}x{} (need A: m×k, B: k×n, C: m×n)",
        a.rows,
        a.cols,
        b.rows,
        b.cols,
        c.rows,
        c.cols
    );
    a.check(kernel, "A");
    b.check(kernel, "B");
    c.check(kernel, "C");
}

/// `C ← α·A·B + β·C`, threads chosen automatically ([`Par::Auto`]).
///
/// ```
/// use chi_kernels::gemm::{gemm, MatRef, MatMut};
/// let a = [1.0f32, 2.0, 3.0, 4.0]; // [[1,2],[3,4]]
/// let b = [5.0f32, 6.0, 7.0, 8.0];
/// let mut c = [0.0f32; 4];
/// gemm(1.0, MatRef::row_major(&a, 2, 2), MatRef::row_major(&b, 2, 2), 0.0, MatMut::row_major(&mut c, 2, 2));
/// assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
/// ```
pub fn gemm<T: Real>(alpha: T, a: MatRef<T>, b: MatRef<T>, beta: T, c: MatMut<T>) {
    gemm_par(Par::Auto, alpha, a, b, beta, c)
}

/// `C ← α·A·B + β·C` with explicit parallelism.
pub fn gemm_par<T: Real>(par: Par, alpha: T, a: MatRef<T>, b: MatRef<T>, beta: T, mut c: MatMut<T>) {
    check_gemm_shapes("gemm", &a, &b, &c);
    let _ = par;
    naive_gemm(alpha, a, b, beta, &mut c);
}

/// Reference implementation (also the semantics): accumulates in `T`.
pub(crate) fn naive_gemm<T: Real>(alpha: T, a: MatRef<T>, b: MatRef<T>, beta: T, c: &mut MatMut<T>) {
    for i in 0..c.rows {
        for j in 0..c.cols {
            let mut acc = T::ZERO;
            for p in 0..a.cols {
                acc += a.at(i, p) * b.at(p, j);
            }
            let idx = i * c.rs + j * c.cs;
            c.data[idx] = if beta == T::ZERO { alpha * acc } else { alpha * acc + beta * c.data[idx] };
        }
    }
}

/// A batch of equally shaped strided matrices: matrix `b` starts at `data[b * batch_stride]`.
#[derive(Clone, Copy, Debug)]
pub struct BatchRef<'a, T> {
    /// Backing storage.
    pub data: &'a [T],
    /// Number of matrices.
    pub count: usize,
    /// Offset between consecutive matrices (elements).
    pub batch_stride: usize,
    /// Rows of each matrix.
    pub rows: usize,
    /// Columns of each matrix.
    pub cols: usize,
    /// Row stride.
    pub rs: usize,
    /// Column stride.
    pub cs: usize,
}

impl<'a, T> BatchRef<'a, T> {
    /// `count` contiguous row-major `rows × cols` matrices.
    pub fn row_major(data: &'a [T], count: usize, rows: usize, cols: usize) -> Self {
        BatchRef { data, count, batch_stride: rows * cols, rows, cols, rs: cols, cs: 1 }
    }
    /// Transpose every matrix (no copy).
    pub fn t(self) -> Self {
        BatchRef { rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs, ..self }
    }
    /// Matrix `i` of the batch.
    pub fn mat(&self, i: usize) -> MatRef<'a, T> {
        let start = i * self.batch_stride;
        MatRef { data: &self.data[start..], rows: self.rows, cols: self.cols, rs: self.rs, cs: self.cs }
    }
}

/// Batched GEMM over `count` independent products: `C_i ← α·A_i·B_i + β·C_i`.
///
/// `c` holds `count` contiguous row-major `m × n` matrices. Small products (as in attention)
/// are spread over threads one product per task; large ones use the threaded GEMM each.
pub fn gemm_batched<T: Real>(alpha: T, a: BatchRef<T>, b: BatchRef<T>, beta: T, c: &mut [T]) {
    assert!(
        a.count == b.count,
        "gemm_batched: batch sizes differ: A has {} matrices, B has {}",
        a.count,
        b.count
    );
    let (m, n) = (a.rows, b.cols);
    assert!(
        c.len() >= a.count * m * n,
        "gemm_batched: C buffer has {} elements, need {} ({} matrices of {}x{})",
        c.len(),
        a.count * m * n,
        a.count,
        m,
        n
    );
    if m * n == 0 {
        return;
    }
    for (i, ci) in c.chunks_mut(m * n).take(a.count).enumerate() {
        gemm_par(Par::Seq, alpha, a.mat(i), b.mat(i), beta, MatMut::row_major(ci, m, n));
    }
}

/// Matrix–vector product `y ← α·A·x + β·y` (`x`, `y` contiguous).
pub fn gemv<T: Real>(alpha: T, a: MatRef<T>, x: &[T], beta: T, y: &mut [T]) {
    assert!(
        a.cols == x.len() && a.rows == y.len(),
        "gemv: shape mismatch: A is {}x{}, x has {}, y has {}",
        a.rows,
        a.cols,
        x.len(),
        y.len()
    );
    a.check("gemv", "A");
    for (i, yi) in y.iter_mut().enumerate() {
        let mut acc = T::ZERO;
        for (p, &xp) in x.iter().enumerate() {
            acc += a.at(i, p) * xp;
        }
        *yi = if beta == T::ZERO { alpha * acc } else { alpha * acc + beta * *yi };
    }
}
