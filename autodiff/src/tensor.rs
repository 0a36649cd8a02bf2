//! [`Tensor`]: an immutable n-dimensional array of `f32` or `f64`, optionally tracked by the tape.
//!
//! Values are never mutated in place once shared: an op always produces a new tensor. That is
//! what makes saved values safe (PyTorch needs version counters to catch in-place writes to
//! tensors saved for backward; chi cannot have that bug). Parameter updates replace a tensor's
//! storage copy-on-write ([`Tensor::update`]), keeping its identity (its `Var`).

use crate::tape::{Float, Hook, SparseRows, Var};
use crate::Shape;
use std::fmt;
use std::mem::ManuallyDrop;
use std::rc::Rc;
use std::rc::Weak;

/// An n-dimensional row-major array of `T` (`f32` or `f64`).
///
/// Cloning is cheap (reference counted) and clones share identity: a gradient computed for one
/// clone is the gradient of all of them.
///
/// ```
/// use chi_autodiff::Tensor;
/// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0], &[3]).requires_grad();
/// let y = x.mul(&x).sum(); // Σ x²
/// y.backward();
/// assert_eq!(x.grad().unwrap().to_vec(), vec![2.0, 4.0, 6.0]);
/// ```
pub struct Tensor<T: Float> {
    /// The values. `ManuallyDrop` only so that `drop` can move the buffer into the pool
    /// ([`crate::pool`]); it is dropped or recycled exactly once, in `Drop`.
    pub(crate) data: ManuallyDrop<Rc<Vec<T>>>,
    pub(crate) shape: Shape,
    pub(crate) var: Option<Rc<Var<T>>>,
}

impl<T: Float> Clone for Tensor<T> {
    #[inline]
    fn clone(&self) -> Self {
        Tensor { data: self.data.clone(), shape: self.shape, var: self.var.clone() }
    }
}

impl<T: Float> Drop for Tensor<T> {
    #[inline]
    fn drop(&mut self) {
        if let Some(v) = self.var.take() {
            crate::tape::drop_var(v);
        }
        // SAFETY: this is the tensor's destructor; `self.data` is not used after this line and
        // is not dropped again (it is `ManuallyDrop`).
        let data = unsafe { ManuallyDrop::take(&mut self.data) };
        crate::pool::recycle_buf(data);
    }
}

impl<T: Float> Tensor<T> {
    /// The values, writable, when this untracked tensor holds the only reference to them (so
    /// no one else can observe the write); `None` otherwise.
    #[inline]
    pub(crate) fn values_mut_if_unique(&mut self) -> Option<&mut [T]> {
        if self.var.is_some() {
            return None;
        }
        Rc::get_mut(&mut self.data).map(|v| v.as_mut_slice())
    }
    pub(crate) fn from_parts(data: Rc<Vec<T>>, shape: Shape, var: Option<Rc<Var<T>>>) -> Self {
        Tensor { data: ManuallyDrop::new(data), shape, var }
    }
    /// A constant from a buffer made by [`crate::pool`] (the shape must match its length).
    #[inline]
    pub(crate) fn from_buf(data: crate::pool::Buf<T>, shape: Shape) -> Self {
        debug_assert_eq!(data.len(), shape.numel());
        Tensor { data: ManuallyDrop::new(data.into()), shape, var: None }
    }

    // ---------------------------------------------------------------- construction

    /// A constant tensor from row-major data. Panics if `data.len()` does not match the shape.
    #[track_caller]
    pub fn from_vec(data: Vec<T>, shape: &[usize]) -> Self {
        let shape = Shape::new(shape);
        assert!(
            data.len() == shape.numel(),
            "Tensor::from_vec: {} values cannot have shape {shape:?} ({} elements)",
            data.len(),
            shape.numel()
        );
        Tensor { data: ManuallyDrop::new(Rc::new(data)), shape, var: None }
    }
    /// A constant tensor with the given shape (a [`Shape`], an array or a slice).
    #[track_caller]
    pub fn new(data: Vec<T>, shape: impl Into<Shape>) -> Self {
        let s: Shape = shape.into();
        Self::from_vec(data, s.dims())
    }
    /// A rank-0 constant.
    pub fn scalar(v: T) -> Self {
        Self::from_buf(crate::pool::filled(1, v), Shape::scalar())
    }
    /// A constant filled with `v`.
    pub fn full(shape: &[usize], v: T) -> Self {
        let s = Shape::new(shape);
        Self::from_buf(crate::pool::filled(s.numel(), v), s)
    }
    /// Zeros.
    pub fn zeros(shape: &[usize]) -> Self {
        Self::full(shape, T::ZERO)
    }
    /// Ones.
    pub fn ones(shape: &[usize]) -> Self {
        Self::full(shape, T::ONE)
    }
    /// Zeros with the shape of `self`.
    pub fn zeros_like(&self) -> Self {
        Self::zeros(self.shape())
    }
    /// `0, 1, …, n−1` as a rank-1 tensor.
    pub fn arange(n: usize) -> Self {
        Self::from_vec((0..n).map(T::from_usize).collect(), &[n])
    }
    /// Standard normal samples from a seeded generator.
    pub fn randn(shape: &[usize], rng: &mut crate::Rng) -> Self {
        let s = Shape::new(shape);
        Self::from_vec((0..s.numel()).map(|_| T::from_f64(rng.normal())).collect(), shape)
    }
    /// Uniform samples in `[lo, hi)` from a seeded generator.
    #[track_caller]
    pub fn rand_uniform(shape: &[usize], lo: f64, hi: f64, rng: &mut crate::Rng) -> Self {
        assert!(lo.is_finite() && hi.is_finite() && lo <= hi, "rand_uniform: the range [{lo}, {hi}) is not a finite interval");
        let s = Shape::new(shape);
        Self::from_vec((0..s.numel()).map(|_| T::from_f64(rng.uniform(lo, hi))).collect(), shape)
    }

    // ---------------------------------------------------------------- inspection

    /// Dimensions.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        self.shape.dims()
    }
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.numel()
    }
    /// Size of an axis (negative counts from the end).
    pub fn dim(&self, axis: isize) -> usize {
        self.shape.dim(self.shape.axis("dim", axis))
    }
    /// The values, row-major.
    #[inline]
    pub fn data(&self) -> &[T] {
        &self.data
    }
    /// A copy of the values.
    pub fn to_vec(&self) -> Vec<T> {
        self.data.to_vec()
    }
    /// The single value of a one-element tensor.
    #[track_caller]
    pub fn item(&self) -> T {
        assert!(self.numel() == 1, "item: tensor of shape {:?} has {} elements, not 1", self.shape, self.numel());
        self.data[0]
    }
    /// Whether every value is finite.
    pub fn all_finite(&self) -> bool {
        self.data.iter().all(|v| v.is_finite())
    }
    /// Converts to `f64` (a new constant).
    pub fn to_f64(&self) -> Tensor<f64> {
        Tensor::from_vec(self.data.iter().map(|v| v.to_f64()).collect(), self.shape())
    }
    /// Converts to `f32` (a new constant).
    pub fn to_f32(&self) -> Tensor<f32> {
        Tensor::from_vec(self.data.iter().map(|v| v.to_f64() as f32).collect(), self.shape())
    }
    /// Converts from another element type (a new constant).
    pub fn cast_from<U: Float>(src: &Tensor<U>) -> Tensor<T> {
        Tensor::from_vec(src.data.iter().map(|v| T::from_f64(v.to_f64())).collect(), src.shape())
    }

    // ---------------------------------------------------------------- autodiff identity

    /// Marks this tensor as a leaf that requires grad (a parameter or an input to differentiate
    /// with respect to). Returns a new identity; clones of the result share it.
    pub fn requires_grad(self) -> Self {
        Tensor { data: self.data.clone(), shape: self.shape, var: Some(Var::new_leaf_rc()) }
    }
    /// Whether ops on this tensor are recorded (it has an identity that requires grad).
    pub fn is_tracked(&self) -> bool {
        self.requires_grad_flag()
    }
    pub(crate) fn requires_grad_flag(&self) -> bool {
        self.var.as_ref().is_some_and(|v| v.requires_grad.get())
    }
    /// Freezes (`false`) or unfreezes (`true`) a leaf: a frozen leaf is treated as a constant by
    /// every op until unfrozen. Applies to all clones. Panics on a non-leaf.
    #[track_caller]
    pub fn set_requires_grad(&self, on: bool) {
        match &self.var {
            Some(v) if v.is_leaf() => v.requires_grad.set(on),
            Some(_) => panic!("set_requires_grad: only leaves can be frozen; use detach() on an intermediate"),
            None => panic!("set_requires_grad: tensor has no autodiff identity; call requires_grad() first"),
        }
    }
    /// Whether this tensor is a leaf (no recorded op produced it).
    pub fn is_leaf(&self) -> bool {
        self.var.as_ref().is_none_or(|v| v.is_leaf())
    }
    /// The same values with no autodiff identity (stop-gradient).
    pub fn detach(&self) -> Self {
        Tensor { data: self.data.clone(), shape: self.shape, var: None }
    }
    /// A unique id for a tracked tensor (shared by its clones); `None` for constants.
    pub fn id(&self) -> Option<u64> {
        self.var.as_ref().map(|v| v.id)
    }
    /// Whether two tensors share an autodiff identity.
    pub fn same_var(&self, other: &Tensor<T>) -> bool {
        match (&self.var, &other.var) {
            (Some(a), Some(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }
    /// Names the tensor (shown in graph exports and anomaly reports).
    pub fn named(self, name: &str) -> Self {
        if let Some(v) = &self.var {
            *v.extra_or_init().name.borrow_mut() = Some(Rc::from(name));
        }
        self
    }
    /// The name given by [`Tensor::named`].
    pub fn name(&self) -> Option<String> {
        self.var.as_ref()?.extra().and_then(|e| e.name.borrow().as_ref().map(|s| s.to_string()))
    }
    /// The accumulated gradient (leaves, or intermediates after [`Tensor::retain_grad`]).
    /// A row-sparse gradient is returned densified; for a table marked [`Tensor::sparse_grad`]
    /// that other ops used too, it is the sum of their dense gradient and the rows.
    pub fn grad(&self) -> Option<Tensor<T>> {
        let v = self.var.as_ref()?;
        let dense = v.grad.borrow().clone();
        let rows = v.extra().and_then(|e| e.sparse_grad.borrow().as_ref().map(|s| s.to_dense()));
        match (dense, rows) {
            (Some(d), Some(r)) => {
                let sum = d.data().iter().zip(r.data()).map(|(a, b)| *a + *b).collect();
                Some(Tensor::from_vec(sum, d.shape()))
            }
            (d, None) => d,
            (None, r) => r,
        }
    }
    /// The dense part alone of a [`Tensor::sparse_grad`] table's gradient: what ops other than
    /// gathers delivered ([`Tensor::grad`] adds the rows of [`Tensor::sparse_grad_rows`]).
    /// For other tensors, the same as [`Tensor::grad`].
    pub fn dense_grad_part(&self) -> Option<Tensor<T>> {
        self.var.as_ref()?.grad.borrow().clone()
    }
    /// Whether this leaf was marked with [`Tensor::sparse_grad`] (gather ops deliver its
    /// gradient as rows).
    pub fn is_sparse_grad(&self) -> bool {
        self.var.as_ref().is_some_and(|v| v.is_sparse())
    }
    /// The row-sparse gradient of an embedding table marked with [`Tensor::sparse_grad`].
    pub fn sparse_grad_rows(&self) -> Option<SparseRows<T>> {
        self.var.as_ref()?.extra()?.sparse_grad.borrow().clone()
    }
    /// Replaces the accumulated gradient. Panics if `g`'s shape is not the tensor's (a later
    /// backward would add to it by broadcasting, giving a gradient of another shape).
    #[track_caller]
    pub fn set_grad(&self, g: Option<Tensor<T>>) {
        if let Some(g) = &g {
            assert!(g.shape() == self.shape(), "set_grad: a gradient of shape {:?} for a tensor of shape {:?}", g.shape(), self.shape());
        }
        if let Some(v) = &self.var {
            *v.grad.borrow_mut() = g;
        }
    }
    /// Clears the accumulated gradient (dense and sparse).
    pub fn zero_grad(&self) {
        if let Some(v) = &self.var {
            *v.grad.borrow_mut() = None;
            if let Some(e) = v.extra() {
                *e.sparse_grad.borrow_mut() = None;
            }
        }
    }
    /// Asks backward to keep this intermediate's gradient, readable with [`Tensor::grad`].
    #[track_caller]
    pub fn retain_grad(&self) -> &Self {
        let v = self.var.as_ref().expect("retain_grad: tensor does not require grad");
        v.retain.set(true);
        self
    }
    /// Makes gather ops (embedding lookups) deliver this leaf's gradient as rows
    /// ([`Tensor::sparse_grad_rows`]) instead of a dense tensor, so large vocabularies do not
    /// cost a dense gradient per step. Other ops still deliver dense gradients into `grad()`.
    #[track_caller]
    pub fn sparse_grad(self) -> Self {
        let v = self.var.as_ref().expect("sparse_grad: call requires_grad() first");
        assert!(v.is_leaf(), "sparse_grad: only leaves can have sparse gradients");
        v.extra_or_init().sparse.set(true);
        self
    }
    /// Registers a hook on this tensor's gradient and returns a handle that removes it.
    ///
    /// A hook sees the gradient of this tensor once per backward pass, when it is complete (the
    /// sum over every use of the tensor in the graph), and may replace it by returning
    /// `Some(g)` of the same shape. **Order:** hooks of one tensor run in registration order,
    /// each seeing the previous one's replacement. On an intermediate the (possibly replaced)
    /// gradient is what flows on to its inputs and what [`Tensor::retain_grad`] keeps; the hooks
    /// of a tensor run before those of the tensors it was computed from (decreasing creation
    /// order). On a leaf, hooks run after every intermediate's, before the gradient is added
    /// to `.grad()` (or returned by [`crate::grad`]). Hooks run only in passes that reach the
    /// tensor; they are not called for gradients of other graphs.
    ///
    /// **Lifetime:** a hook lives as long as its tensor. A hook that captures a clone of the
    /// tensor it is registered on (or of a tensor computed from it) makes a reference cycle
    /// that is never freed: the tensor, its graph and the hook leak. Capture `t.detach()` for
    /// the values (as they are when the hook is registered), or work from the gradient alone.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]).requires_grad();
    /// let y = x.mul_scalar(3.0);
    /// let h = y.register_hook(|g| Some(g.mul_scalar(2.0))); // double the gradient flowing through y
    /// y.sum().backward();
    /// assert_eq!(x.grad().unwrap().to_vec(), vec![6.0, 6.0]);
    /// h.remove();
    /// x.zero_grad();
    /// x.mul_scalar(3.0).sum().backward();
    /// assert_eq!(x.grad().unwrap().to_vec(), vec![3.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn register_hook(&self, hook: impl Fn(&Tensor<T>) -> Option<Tensor<T>> + 'static) -> HookHandle<T> {
        let v = self.var.as_ref().expect("register_hook: tensor does not require grad");
        let h: Hook<T> = Rc::new(hook);
        let id = crate::tape::next_id();
        v.extra_or_init().hooks.borrow_mut().push((id, h));
        HookHandle { var: Rc::downgrade(v), id }
    }

    /// Registers `hook` on a leaf, called with the leaf at the moment its gradient for a
    /// `backward` pass is complete and stored in [`Tensor::grad`] — as PyTorch's
    /// `register_post_accumulate_grad_hook`. Data-parallel training uses it to start the exchange
    /// of a parameter's gradient while the rest of the backward pass still runs.
    ///
    /// When it runs: as soon as the pass has run the backward rule of the last node that consumes
    /// the leaf (its gradient can receive nothing more), rather than at the end of the pass; the
    /// leaf's gradient hooks ([`Tensor::register_hook`]) run just before. Only passes that
    /// accumulate into `.grad()` call it (`backward`, not [`crate::grad`]), and only when a
    /// gradient reached the leaf; a row-sparse table's rows are delivered at the end of the pass.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    /// let w = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]).requires_grad();
    /// let seen = Rc::new(RefCell::new(Vec::new()));
    /// let s = seen.clone();
    /// let h = w.register_post_accumulate_grad_hook(move |t| s.borrow_mut().push(t.grad().unwrap().to_vec()));
    /// w.mul_scalar(3.0).sum().backward();
    /// assert_eq!(*seen.borrow(), vec![vec![3.0, 3.0]]);
    /// assert!(h.remove());
    /// ```
    #[track_caller]
    pub fn register_post_accumulate_grad_hook(&self, hook: impl Fn(&Tensor<T>) + 'static) -> HookHandle<T> {
        let v = self.var.as_ref().expect("register_post_accumulate_grad_hook: tensor does not require grad");
        assert!(v.is_leaf(), "register_post_accumulate_grad_hook: only leaves accumulate gradients (use register_hook on intermediates)");
        let id = crate::tape::next_id();
        v.extra_or_init().post_hooks.borrow_mut().push((id, Rc::new(hook)));
        crate::tape::POST_HOOKS.with(|c| c.set(c.get() + 1));
        HookHandle { var: Rc::downgrade(v), id }
    }

    /// Replaces the values, keeping identity and shape (for optimisers). Copy-on-write: a copy
    /// saved on a tape keeps the old values. Panics if `f` changes the length.
    pub fn update(&mut self, f: impl FnOnce(&mut [T])) {
        let v = Rc::make_mut(&mut self.data);
        f(v);
    }
    /// Replaces the values with `values` (same shape), keeping identity.
    #[track_caller]
    pub fn set_values(&mut self, values: Vec<T>) {
        assert!(values.len() == self.numel(), "set_values: {} values for shape {:?}", values.len(), self.shape);
        *self.data = Rc::new(values);
    }

    /// L2 norm of the values.
    pub fn norm(&self) -> f64 {
        self.data.iter().map(|v| v.to_f64() * v.to_f64()).sum::<f64>().sqrt()
    }
}

/// Removes a gradient hook registered with [`Tensor::register_hook`]. Dropping the handle keeps
/// the hook; the handle does not keep the tensor alive.
pub struct HookHandle<T: Float> {
    var: Weak<Var<T>>,
    id: u64,
}

impl<T: Float> HookHandle<T> {
    /// Takes the hook off its tensor. Returns `false` if the tensor no longer exists or the
    /// hook was already removed.
    pub fn remove(&self) -> bool {
        let Some(v) = self.var.upgrade() else { return false };
        let Some(e) = v.extra() else { return false };
        let mut hooks = e.hooks.borrow_mut();
        let before = hooks.len();
        hooks.retain(|(id, _)| *id != self.id);
        if hooks.len() != before {
            return true;
        }
        let mut post = e.post_hooks.borrow_mut();
        let before = post.len();
        post.retain(|(id, _)| *id != self.id);
        let removed = post.len() != before;
        if removed {
            crate::tape::POST_HOOKS.with(|c| c.set(c.get().saturating_sub(1)));
        }
        removed
    }
}

impl<T: Float> fmt::Debug for HookHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HookHandle({})", self.id)
    }
}

impl<T: Float> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.numel();
        write!(f, "Tensor<{}>{:?}", T::NAME, self.shape)?;
        if self.requires_grad_flag() {
            write!(f, " (requires grad)")?;
        }
        if n <= 16 {
            write!(f, " {:?}", &self.data[..])
        } else {
            write!(f, " [{:?}, {:?}, … {:?}]", self.data[0], self.data[1], self.data[n - 1])
        }
    }
}
