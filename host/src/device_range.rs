//! Ranges of memory this PE's kernels read and write locally, symmetric or not
//! ([`DeviceRange`], shared; [`DeviceRangeMut`], exclusive): what ops that never reach a peer
//! (rshmem's GEMM) take, so that they run on memory the program allocated elsewhere — a torch
//! tensor from torch's allocator, a `cudaMalloc` of a library — as well as on symmetric buffers.
//!
//! Every symmetric buffer and range converts into one (`(&buf).into()`, `range.into()`);
//! other memory comes in through [`DeviceRange::from_raw_parts`], which checks what can be
//! checked before anything uses it: the alignment of the element type, that the byte count
//! does not overflow, and, on GPUs, that the first and the last byte are device memory of this
//! PE's GPU (`cuPointerGetAttribute`: a host array or a tensor on another GPU is refused,
//! naming where it is). Its lifetime is the caller's promise, as with any raw pointer.
//!
//! ```no_run
//! # use rshmem_host::{DeviceRange, Shmem};
//! # fn f(shmem: &Shmem, ptr: u64, len: usize) -> rshmem_host::Result<()> {
//! // `len` f32s at `ptr`, allocated by another library on this PE's GPU.
//! // SAFETY: the memory stays allocated, and nothing else writes it, while work queued on it runs.
//! let x = unsafe { DeviceRange::<f32>::from_raw_parts(shmem, ptr as *const f32, len)? };
//! let sym = shmem.alloc_zeroed::<f32>(len)?;
//! let y: DeviceRange<'_, f32> = (&sym).into(); // symmetric memory is device memory too
//! assert_eq!((x.len(), y.len()), (len, len));
//! # Ok(()) }
//! ```

use crate::contract::{Error, Result};
use crate::shmem::Shmem;
use crate::sym_buffer::SymBuffer;
use crate::sym_matrix::Dims;
use crate::sym_range::{SymRange, SymRangeMut};
use bytemuck::Pod;
use rshmem_device::matrix::{Matrix, MatrixMut};
use std::marker::PhantomData;

/// `len` elements of this PE's memory (device memory on GPUs, host memory on the simulator),
/// read by local ops: a symmetric buffer or range (`From`), or memory allocated elsewhere
/// ([`DeviceRange::from_raw_parts`]). Unlike a [`SymRange`], its address means nothing on the
/// other PEs: ops that reach peers do not take it.
#[derive(Clone, Copy)]
pub struct DeviceRange<'a, T: Pod> {
    addr: u64,
    len: usize,
    _mem: PhantomData<&'a T>,
}

/// [`DeviceRange`], borrowed exclusively: what local ops write.
pub struct DeviceRangeMut<'a, T: Pod> {
    addr: u64,
    len: usize,
    _mem: PhantomData<&'a mut T>,
}

/// Checks `len` `T`s at `addr` as [`DeviceRange::from_raw_parts`] says.
fn check_raw<T: Pod>(shmem: &Shmem, call: &'static str, addr: u64, len: usize) -> Result<()> {
    let bad = |message: String| Err(Error::InvalidArgument { call, message });
    let ty = std::any::type_name::<T>();
    let Some(bytes) = len.checked_mul(size_of::<T>()) else {
        return bad(format!("{len} elements of {ty} overflow the address space"));
    };
    if bytes == 0 {
        return Ok(());
    }
    if addr == 0 || addr.checked_add(bytes as u64).is_none() {
        return bad(format!(
            "{bytes} bytes at {addr:#x}: not an address range ({})",
            if addr == 0 { "null" } else { "it wraps" }
        ));
    }
    let align = align_of::<T>() as u64;
    if addr % align != 0 {
        return bad(format!(
            "{addr:#x} is not aligned for {ty} ({align}-byte elements start at multiples of \
             {align})"
        ));
    }
    shmem
        .inner
        .check_device_memory(addr, bytes)
        .map_err(|message| Error::InvalidArgument { call, message })
}

impl<'a, T: Pod> DeviceRange<'a, T> {
    /// The `len` elements at `ptr`, checked: aligned for `T`, not overflowing, and on GPUs
    /// device memory of this PE's GPU at the first and the last byte (an
    /// [`Error::InvalidArgument`] otherwise, saying where the memory is). An empty range is
    /// taken as it is.
    ///
    /// # Safety
    ///
    /// The `len` elements are one allocation of this PE's device (on the simulator: host
    /// memory) that stays allocated for `'a` and until the work queued on them is done, and
    /// nothing writes them while an op reads them (the exclusive form: nothing else reads or
    /// writes them while an op writes them).
    pub unsafe fn from_raw_parts(shmem: &Shmem, ptr: *const T, len: usize) -> Result<Self> {
        check_raw::<T>(shmem, "DeviceRange::from_raw_parts", ptr as u64, len)?;
        Ok(Self::raw(ptr as u64, len))
    }

    fn raw(addr: u64, len: usize) -> Self {
        Self {
            addr,
            len,
            _mem: PhantomData,
        }
    }

    /// The range as a dense `rows x cols` matrix, the kernel argument; an
    /// [`Error::InvalidArgument`] if it is shorter than `rows * cols`.
    pub fn matrix(self, rows: u32, cols: u32) -> Result<Matrix<T>> {
        Dims::check("DeviceRange::matrix", self.len, rows, cols, cols)?;
        // SAFETY: every element is inside the range (checked), whose memory outlives the use
        // of the view: the launch's contract.
        Ok(unsafe { Matrix::from_raw_parts(self.as_ptr(), rows, cols, cols) })
    }
}

impl<'a, T: Pod> DeviceRangeMut<'a, T> {
    /// [`DeviceRange::from_raw_parts`], exclusively.
    ///
    /// # Safety
    ///
    /// As [`DeviceRange::from_raw_parts`], and nothing else reads or writes the elements
    /// while an op writes them.
    pub unsafe fn from_raw_parts(shmem: &Shmem, ptr: *mut T, len: usize) -> Result<Self> {
        check_raw::<T>(shmem, "DeviceRangeMut::from_raw_parts", ptr as u64, len)?;
        Ok(Self::raw(ptr as u64, len))
    }

    fn raw(addr: u64, len: usize) -> Self {
        Self {
            addr,
            len,
            _mem: PhantomData,
        }
    }

    /// Its first element's address, as a mutable kernel argument.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.addr as *mut T
    }

    /// The same elements, shared (for the time of the borrow).
    pub fn as_range(&self) -> DeviceRange<'_, T> {
        DeviceRange::raw(self.addr, self.len)
    }

    /// The range as a dense `rows x cols` matrix, written (the kernel argument); errors as
    /// [`DeviceRange::matrix`].
    pub fn matrix_mut(mut self, rows: u32, cols: u32) -> Result<MatrixMut<T>> {
        Dims::check("DeviceRangeMut::matrix_mut", self.len, rows, cols, cols)?;
        // SAFETY: as in `DeviceRange::matrix`; the exclusive borrow made the address mutable.
        Ok(unsafe { MatrixMut::from_raw_parts(self.as_mut_ptr(), rows, cols, cols) })
    }
}

/// What both range types answer alike.
macro_rules! accessors {
    ($($ty:ident),*) => {$(
        impl<T: Pod> $ty<'_, T> {
            /// Number of elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether the range has no elements.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// Its first element's address (a device address on GPUs).
            pub fn as_ptr(&self) -> *const T {
                self.addr as *const T
            }
        }

        impl<T: Pod> $ty<'_, T> {
            /// Elements `..mid` and `mid..`, as two ranges that do not overlap (as
            /// `slice::split_at`).
            ///
            /// # Panics
            ///
            /// If `mid > len`.
            pub fn split_at(self, mid: usize) -> (Self, Self) {
                assert!(mid <= self.len, "split_at({mid}) of a range of {} elements", self.len);
                let second = self.addr + (mid * size_of::<T>()) as u64;
                (Self::raw(self.addr, mid), Self::raw(second, self.len - mid))
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
    )*};
}
accessors!(DeviceRange, DeviceRangeMut);

/// `From` each of `$src` (bound as `$s`) into `$dst`, made of `$made` (a `SymRange` or a
/// `SymRangeMut`, whose address and length it takes).
macro_rules! from_sym {
    ($($dst:ident <- $($src:ty),* => |$s:ident| $made:expr;)*) => {$($(
        impl<'a, T: Pod> From<$src> for $dst<'a, T> {
            // `$made` is the identity where `$src` is the range type itself.
            #[allow(clippy::useless_conversion)]
            fn from($s: $src) -> Self {
                let made = $made;
                $dst::raw(made.as_ptr() as u64, made.len())
            }
        }
    )*)*};
}

// Every symmetric buffer or range that converts into a `SymRange` converts into a
// `DeviceRange` (and likewise for the exclusive forms), so an op taking `impl
// Into<DeviceRange>` takes whatever one taking `impl Into<SymRange>` took.
from_sym! {
    DeviceRange <- &'a SymBuffer<'_, T>, &'a mut SymBuffer<'_, T>, SymRange<'a, T>,
        &'a SymRange<'_, T>, SymRangeMut<'a, T>, &'a SymRangeMut<'_, T>,
        &'a mut SymRangeMut<'_, T> => |s| SymRange::from(s);
    DeviceRangeMut <- &'a mut SymBuffer<'_, T>, SymRangeMut<'a, T>,
        &'a mut SymRangeMut<'_, T> => |s| SymRangeMut::from(s);
}

impl<'a, T: Pod> From<&'a DeviceRange<'_, T>> for DeviceRange<'a, T> {
    fn from(r: &'a DeviceRange<'_, T>) -> Self {
        DeviceRange::raw(r.addr, r.len)
    }
}

impl<'a, T: Pod> From<DeviceRangeMut<'a, T>> for DeviceRange<'a, T> {
    fn from(r: DeviceRangeMut<'a, T>) -> Self {
        DeviceRange::raw(r.addr, r.len)
    }
}

impl<'a, T: Pod> From<&'a DeviceRangeMut<'_, T>> for DeviceRange<'a, T> {
    fn from(r: &'a DeviceRangeMut<'_, T>) -> Self {
        r.as_range()
    }
}

impl<'a, T: Pod> From<&'a mut DeviceRangeMut<'_, T>> for DeviceRangeMut<'a, T> {
    fn from(r: &'a mut DeviceRangeMut<'_, T>) -> Self {
        DeviceRangeMut::raw(r.addr, r.len)
    }
}
