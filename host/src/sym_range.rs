//! Element ranges of symmetric buffers ([`SymRange`], shared; [`SymRangeMut`], exclusive),
//! what on-stream operations and rshmem's ops read and write, and symmetric buffers as kernel
//! arguments: a launch takes `&buf`, `&mut buf` or a range where the kernel's parameter is a
//! pointer or a `SymSlice` of the same element type ([`IntoKernelArg`]).
//!
//! ```no_run
//! # use rshmem_host::{LaunchConfig, Shmem};
//! # mod kernels { pub struct scale; impl rshmem_device::Kernel for scale {
//! #     const NAME: &'static str = "scale"; type Args = (*mut f32, u32, f32);
//! #     unsafe fn run_sim(_: Self::Args) {} } }
//! # fn f(shmem: &Shmem, module: &rshmem_host::Module<'_>) -> rshmem_host::Result<()> {
//! let mut x = shmem.alloc_from(&[1.0f32; 1000])?;
//! let cfg = LaunchConfig::for_num_elems(1000, 256);
//! // SAFETY: `scale` touches its first n elements.
//! unsafe { module.launch::<kernels::scale>(cfg, (&mut x, 1000, 2.0))? };
//! // Elements 500..1000 only: the range is checked against the buffer when made.
//! unsafe { module.launch::<kernels::scale>(cfg, (x.range_mut(500..)?, 500, 2.0))? };
//! # Ok(()) }
//! ```
//!
//! A shared borrow does not make a mutable pointer, nor a buffer of another element type a
//! pointer to it (compile errors):
//!
//! ```compile_fail,E0277
//! # use rshmem_host::{LaunchConfig, Shmem};
//! # mod kernels { pub struct scale; impl rshmem_device::Kernel for scale {
//! #     const NAME: &'static str = "scale"; type Args = (*mut f32, u32, f32);
//! #     unsafe fn run_sim(_: Self::Args) {} } }
//! # fn f(shmem: &Shmem, module: &rshmem_host::Module<'_>) -> rshmem_host::Result<()> {
//! let x = shmem.alloc_from(&[1.0f32; 1000])?;
//! let cfg = LaunchConfig::for_num_elems(1000, 256);
//! unsafe { module.launch::<kernels::scale>(cfg, (&x, 1000, 2.0))? };
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0277
//! # use rshmem_host::{LaunchConfig, Shmem};
//! # mod kernels { pub struct scale; impl rshmem_device::Kernel for scale {
//! #     const NAME: &'static str = "scale"; type Args = (*mut f32, u32, f32);
//! #     unsafe fn run_sim(_: Self::Args) {} } }
//! # fn f(shmem: &Shmem, module: &rshmem_host::Module<'_>) -> rshmem_host::Result<()> {
//! let mut x = shmem.alloc_from(&[1i32; 1000])?;
//! let cfg = LaunchConfig::for_num_elems(1000, 256);
//! unsafe { module.launch::<kernels::scale>(cfg, (&mut x, 1000, 2.0))? };
//! # Ok(()) }
//! ```

use crate::contract::{Error, Result};
use crate::sym_buffer::SymBuffer;
use bytemuck::Pod;
use rshmem_device::view::SymSlice;
use rshmem_device::IntoKernelArg;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

/// A range of elements of a [`SymBuffer`], checked to lie inside it: what on-stream
/// operations and rshmem's ops read. Made by [`SymBuffer::range`] (or [`SymRange::range`] of
/// a range), or from `&buf` for the whole buffer.
///
/// A shared view: symmetric memory is written by peers, kernels and on-stream operations
/// whatever the host holds (no Rust reference to it ever exists), as on a GPU; completion is
/// what [`Shmem::synchronize`](crate::Shmem::synchronize) and barriers order.
///
/// Its address is symmetric: the same range of every PE's copy of the buffer. Operations that
/// reach peers' copies (collectives, puts to the same range) need every PE to pass the same
/// range.
#[derive(Clone, Copy)]
pub struct SymRange<'a, T: Pod> {
    pub(crate) addr: u64,
    len: usize,
    _buf: PhantomData<&'a T>,
}

/// A range of elements of a [`SymBuffer`], borrowed exclusively: what rshmem's ops write.
/// Made by [`SymBuffer::range_mut`] (or [`SymRangeMut::range_mut`] of a range), or from
/// `&mut buf` for the whole buffer; `&mut range` reborrows it, and it converts into a
/// [`SymRange`] (`&range` or `range.as_range()`).
///
/// The exclusive borrow keeps this program from passing the same elements as another
/// argument of the same call; peers, kernels and on-stream operations may still write the
/// memory, as for [`SymRange`].
pub struct SymRangeMut<'a, T: Pod> {
    addr: u64,
    len: usize,
    _buf: PhantomData<&'a mut T>,
}

/// The address and length of the elements `range` of `len` elements at `addr` (a buffer or a
/// range: `what`), or an [`Error::InvalidArgument`] naming `call` if they are not all inside.
fn sub_range<T>(
    (call, what): (&'static str, &str),
    addr: u64,
    len: usize,
    range: impl RangeBounds<usize>,
) -> Result<(u64, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(start), Some(end)) if start <= end && end <= len => Ok((
            addr + (start * std::mem::size_of::<T>()) as u64,
            end - start,
        )),
        _ => Err(Error::InvalidArgument {
            call,
            message: format!(
                "range ({:?}, {:?}) is not inside the {what}'s {len} elements",
                range.start_bound(),
                range.end_bound()
            ),
        }),
    }
}

/// The unchecked constructors: `len` elements at `addr`, which the caller found inside a
/// buffer the lifetime borrows.
macro_rules! raw_constructors {
    ($($ty:ident),*) => {$(
        impl<T: Pod> $ty<'_, T> {
            fn raw(addr: u64, len: usize) -> Self {
                Self {
                    addr,
                    len,
                    _buf: PhantomData,
                }
            }
        }
    )*};
}
raw_constructors!(SymRange, SymRangeMut);

/// What both range types answer alike.
macro_rules! range_accessors {
    ($ty:ident) => {
        impl<T: Pod> $ty<'_, T> {
            /// Number of elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether the range has no elements.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// Its first element's local symmetric address (a device address on GPUs; not
            /// dereferenceable on the host).
            pub fn as_ptr(&self) -> *const T {
                self.addr as *const T
            }

            /// The elements `range` of this range (indices relative to its start), shared; an
            /// [`Error::InvalidArgument`] if they are not inside it.
            pub fn range(&self, range: impl RangeBounds<usize>) -> Result<SymRange<'_, T>> {
                let call = concat!(stringify!($ty), "::range");
                let (addr, len) = sub_range::<T>((call, "range"), self.addr, self.len, range)?;
                Ok(SymRange::raw(addr, len))
            }
        }

        impl<T: Pod> std::fmt::Debug for $ty<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("addr", &format_args!("{:#x}", self.addr))
                    .field("len", &self.len)
                    .field("type", &std::any::type_name::<T>())
                    .finish()
            }
        }
    };
}
range_accessors!(SymRange);
range_accessors!(SymRangeMut);

impl<T: Pod> SymRange<'_, T> {
    /// Size in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// Whether the two ranges share a byte.
    pub(crate) fn overlaps(&self, other: &Self) -> bool {
        let (a, b) = (self.addr, other.addr);
        !self.is_empty()
            && !other.is_empty()
            && a < b + other.bytes() as u64
            && b < a + self.bytes() as u64
    }
}

impl<'a, T: Pod> SymRangeMut<'a, T> {
    /// Its first element's local symmetric address, as a mutable kernel argument.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.addr as *mut T
    }

    /// The same elements, shared (for the time of the borrow).
    pub fn as_range(&self) -> SymRange<'_, T> {
        SymRange::raw(self.addr, self.len)
    }

    /// The elements `range` of this range (indices relative to its start), exclusively; an
    /// [`Error::InvalidArgument`] if they are not inside it.
    pub fn range_mut(&mut self, range: impl RangeBounds<usize>) -> Result<SymRangeMut<'_, T>> {
        let (addr, len) = sub_range::<T>(
            ("SymRangeMut::range_mut", "range"),
            self.addr,
            self.len,
            range,
        )?;
        Ok(SymRangeMut::raw(addr, len))
    }

    /// Splits the range in two at element `mid` (`0..mid` and `mid..`), both exclusive; an
    /// [`Error::InvalidArgument`] if `mid` is past its end.
    pub fn split_at_mut(self, mid: usize) -> Result<(SymRangeMut<'a, T>, SymRangeMut<'a, T>)> {
        if mid > self.len {
            return Err(Error::InvalidArgument {
                call: "SymRangeMut::split_at_mut",
                message: format!("{mid} is past the range's {} elements", self.len),
            });
        }
        let at = self.addr + (mid * std::mem::size_of::<T>()) as u64;
        let part = |addr, len| SymRangeMut::raw(addr, len);
        Ok((part(self.addr, mid), part(at, self.len - mid)))
    }
}

/// The address and length in `U`s of `len` `T`s at `addr`, or an
/// [`Error::InvalidArgument`] naming `call` when they are not whole, aligned `U`s.
fn recast<T, U>(call: &'static str, addr: u64, len: usize) -> Result<(u64, usize)> {
    let (t, u) = (std::mem::size_of::<T>(), std::mem::size_of::<U>());
    let bytes = len * t;
    let align = std::mem::align_of::<U>() as u64;
    if u == 0 || bytes % u != 0 || addr % align != 0 {
        return Err(Error::InvalidArgument {
            call,
            message: format!(
                "{len} elements of {} ({bytes} bytes at {addr:#x}) are not whole {u}-byte \
                 elements of {} aligned to {align} bytes",
                std::any::type_name::<T>(),
                std::any::type_name::<U>()
            ),
        });
    }
    Ok((addr, bytes / u))
}

impl<'a, T: Pod> SymRange<'a, T> {
    /// The same bytes as elements of `U` (a bf16 tensor's bits as `u16`s, FP8 bytes as
    /// `u8`s): for callers that hold untyped symmetric memory (the Python bindings); an
    /// [`Error::InvalidArgument`] if the bytes are not whole `U`s at an address aligned for `U`.
    pub fn cast<U: Pod>(self) -> Result<SymRange<'a, U>> {
        let (addr, len) = recast::<T, U>("SymRange::cast", self.addr, self.len)?;
        Ok(SymRange::raw(addr, len))
    }
}

impl<'a, T: Pod> SymRangeMut<'a, T> {
    /// [`SymRange::cast`], exclusively.
    pub fn cast<U: Pod>(self) -> Result<SymRangeMut<'a, U>> {
        let (addr, len) = recast::<T, U>("SymRangeMut::cast", self.addr, self.len)?;
        Ok(SymRangeMut::raw(addr, len))
    }
}

impl<T: Pod> SymBuffer<'_, T> {
    /// The elements `range` of this buffer, shared: for on-stream operations, rshmem's ops'
    /// inputs and kernel arguments; an [`Error::InvalidArgument`] if the range does not lie
    /// inside the buffer.
    pub fn range(&self, range: impl RangeBounds<usize>) -> Result<SymRange<'_, T>> {
        let (addr, len) = sub_range::<T>(
            ("SymBuffer::range", "buffer"),
            self.as_ptr() as u64,
            self.len(),
            range,
        )?;
        Ok(SymRange::raw(addr, len))
    }

    /// The elements `range` of this buffer, borrowed exclusively: for rshmem's ops' outputs
    /// and kernel arguments that are written; an [`Error::InvalidArgument`] if the range does
    /// not lie inside the buffer.
    pub fn range_mut(&mut self, range: impl RangeBounds<usize>) -> Result<SymRangeMut<'_, T>> {
        let (addr, len) = sub_range::<T>(
            ("SymBuffer::range_mut", "buffer"),
            self.as_mut_ptr() as u64,
            self.len(),
            range,
        )?;
        Ok(SymRangeMut::raw(addr, len))
    }
}

impl<'a, T: Pod> From<&'a SymBuffer<'_, T>> for SymRange<'a, T> {
    fn from(buf: &'a SymBuffer<'_, T>) -> Self {
        SymRange::raw(buf.as_ptr() as u64, buf.len())
    }
}

impl<'a, T: Pod> From<&'a mut SymBuffer<'_, T>> for SymRangeMut<'a, T> {
    fn from(buf: &'a mut SymBuffer<'_, T>) -> Self {
        SymRangeMut::raw(buf.as_mut_ptr() as u64, buf.len())
    }
}

impl<'a, T: Pod> From<&'a mut SymRangeMut<'_, T>> for SymRangeMut<'a, T> {
    fn from(r: &'a mut SymRangeMut<'_, T>) -> Self {
        SymRangeMut::raw(r.addr, r.len)
    }
}

// Exclusive borrows read too: where a `&SymBuffer` parameter took `&mut buf` (a coercion),
// an `impl Into<SymRange>` one still does.
impl<'a, T: Pod> From<&'a mut SymBuffer<'_, T>> for SymRange<'a, T> {
    fn from(buf: &'a mut SymBuffer<'_, T>) -> Self {
        SymRange::from(&*buf)
    }
}

impl<'a, T: Pod> From<&'a mut SymRangeMut<'_, T>> for SymRange<'a, T> {
    fn from(r: &'a mut SymRangeMut<'_, T>) -> Self {
        r.as_range()
    }
}

impl<'a, T: Pod> From<&'a SymRangeMut<'_, T>> for SymRange<'a, T> {
    fn from(r: &'a SymRangeMut<'_, T>) -> Self {
        r.as_range()
    }
}

impl<'a, T: Pod> From<SymRangeMut<'a, T>> for SymRange<'a, T> {
    fn from(r: SymRangeMut<'a, T>) -> Self {
        SymRange::raw(r.addr, r.len)
    }
}

impl<'a, T: Pod> From<&'a SymRange<'_, T>> for SymRange<'a, T> {
    fn from(r: &'a SymRange<'_, T>) -> Self {
        *r
    }
}

/// A kernel parameter type a buffer or range stands for, made of its address and length.
trait FromSym<T>: Sized {
    fn from_sym(addr: u64, len: usize) -> Self;
}

impl<T> FromSym<T> for *const T {
    fn from_sym(addr: u64, _: usize) -> Self {
        addr as *const T
    }
}

impl<T> FromSym<T> for *mut T {
    fn from_sym(addr: u64, _: usize) -> Self {
        addr as *mut T
    }
}

impl<T: Pod> FromSym<T> for SymSlice<T> {
    fn from_sym(addr: u64, len: usize) -> Self {
        // SAFETY: `addr` starts `len` elements of a symmetric allocation (a buffer, or a
        // checked range of one: the same place on every PE); using the view only while the
        // buffer lives is the launch's contract.
        unsafe { SymSlice::from_raw(addr as *mut T, len) }
    }
}

/// `$ty` as kernel arguments of the types `$param` (`$s`: the value, whose address and length
/// are `$addr`, `$len`): a mutable address only from an exclusive borrow.
macro_rules! kernel_args {
    ($($ty:ty, $s:ident => ($addr:expr, $len:expr): $($param:ty),*;)*) => {$($(
        impl<T: Pod> IntoKernelArg<$param> for $ty {
            #[inline]
            fn into_kernel_arg(self) -> $param {
                let $s = self;
                <$param as FromSym<T>>::from_sym($addr, $len)
            }
        }
    )*)*};
}

kernel_args! {
    &SymBuffer<'_, T>, b => (b.as_ptr() as u64, b.len()): *const T, SymSlice<T>;
    &mut SymBuffer<'_, T>, b => (b.as_ptr() as u64, b.len()): *const T, *mut T, SymSlice<T>;
    SymRange<'_, T>, r => (r.addr, r.len): *const T, SymSlice<T>;
    SymRangeMut<'_, T>, r => (r.addr, r.len): *const T, *mut T, SymSlice<T>;
    &mut SymRangeMut<'_, T>, r => (r.addr, r.len): *const T, *mut T, SymSlice<T>;
    &SymRangeMut<'_, T>, r => (r.addr, r.len): *const T, SymSlice<T>;
}
