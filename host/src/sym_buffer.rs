//! [`SymBuffer`]: a typed allocation on the symmetric heap, made by [`Shmem::alloc_zeroed`]
//! and [`Shmem::alloc_from`].

use crate::contract::{Error, Result};
use crate::shmem::Shmem;
use bytemuck::Pod;
use std::marker::PhantomData;

impl Shmem {
    /// Allocates `len` elements on the symmetric heap, zero-filled. Collective: every PE must
    /// call it with the same `len`, in the same order.
    pub fn alloc_zeroed<T: Pod>(&self, len: usize) -> Result<SymBuffer<'_, T>> {
        SymBuffer::new_zeroed(self, len)
    }

    /// Allocates a symmetric buffer holding a copy of `data`. Collective, like
    /// [`Shmem::alloc_zeroed`]: every PE passes a slice of the same length (its own values).
    ///
    /// Every PE's data is in place before the allocation's closing barrier: when this returns
    /// on any PE, a kernel it launches may read any peer's copy without a further barrier.
    pub fn alloc_from<T: Pod>(&self, data: &[T]) -> Result<SymBuffer<'_, T>> {
        SymBuffer::new_from(self, data)
    }
}

/// `len` elements of `T` on the symmetric heap: the same allocation exists on every PE, so a
/// kernel reaches a peer's copy through the local pointer plus the peer's PE number.
///
/// Allocated collectively (same length on every PE, checked), zero-filled, freed on drop
/// (also collectively: drop buffers in the same order on every PE).
pub struct SymBuffer<'s, T: Pod> {
    shmem: &'s Shmem,
    addr: u64,
    len: usize,
    _t: PhantomData<T>,
}

impl<'s, T: Pod> SymBuffer<'s, T> {
    pub(crate) fn new_zeroed(shmem: &'s Shmem, len: usize) -> Result<Self> {
        Self::allocate(shmem, len, None)
    }

    /// A collective allocation holding `data` on this PE (each PE its own `data`, the same
    /// length): the contents are written before the allocation's closing barrier, so every
    /// peer's copy holds its data when this returns.
    pub(crate) fn new_from(shmem: &'s Shmem, data: &[T]) -> Result<Self> {
        Self::allocate(shmem, data.len(), Some(bytemuck::cast_slice(data)))
    }

    fn allocate(shmem: &'s Shmem, len: usize, init: Option<&[u8]>) -> Result<Self> {
        shmem.refuse_during_capture(
            "Shmem::alloc",
            "an allocation is a collective host call, which a graph does not record: allocate \
             the buffers before Stream::capture (a graph reuses the buffers it recorded)",
        )?;
        let bytes =
            len.checked_mul(std::mem::size_of::<T>())
                .ok_or_else(|| Error::InvalidArgument {
                    call: "Shmem::alloc",
                    message: format!(
                        "{len} elements of {} bytes do not fit in a usize",
                        std::mem::size_of::<T>()
                    ),
                })?;
        let addr = shmem.inner.alloc(bytes, init)?;
        Ok(Self {
            shmem,
            addr,
            len,
            _t: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The local address as a kernel argument (a device address on GPUs; not dereferenceable
    /// on the host).
    pub fn as_ptr(&self) -> *const T {
        self.addr as *const T
    }

    /// The local address as a mutable kernel argument.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.addr as *mut T
    }

    /// The buffer as a kernel argument: a typed view with its length, so kernels index it
    /// with bounds checks instead of raw pointers (see `rshmem_device::view`).
    pub fn slice(&self) -> rshmem_device::view::SymSlice<T> {
        // SAFETY: `addr` starts this symmetric allocation of `len` elements on every PE, alive
        // as long as `self`; the launch that passes the view promises to use it only then.
        unsafe { rshmem_device::view::SymSlice::from_raw(self.addr as *mut T, self.len) }
    }

    /// Copies this PE's copy of the buffer to the host. Waits for launched work first.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.shmem
            .refuse_during_capture("SymBuffer::to_vec", HOST_COPY)?;
        self.shmem.inner.synchronize()?;
        let mut out = vec![T::zeroed(); self.len];
        self.shmem
            .inner
            .copy_to_host(self.addr, bytemuck::cast_slice_mut(&mut out))?;
        Ok(out)
    }

    /// Overwrites this PE's copy with `data` (same length). Waits for launched work first.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::LengthMismatch {
                expected: self.len,
                found: data.len(),
            });
        }
        self.shmem
            .refuse_during_capture("SymBuffer::copy_from_host", HOST_COPY)?;
        self.shmem.inner.synchronize()?;
        self.shmem
            .inner
            .copy_from_host(self.addr, bytemuck::cast_slice(data))
    }
}

/// Why a host copy cannot run during a graph capture.
const HOST_COPY: &str = "it waits for the PE's streams and copies between the host and the \
    device, which a graph does not record: copy before Stream::capture, or after the graph's \
    launch (and a synchronize)";

impl<T: Pod> Drop for SymBuffer<'_, T> {
    fn drop(&mut self) {
        // Pending kernels may still use the buffer; a failure here was or will be reported by
        // the next synchronisation, and drop cannot return it.
        let _ = self.shmem.inner.synchronize();
        self.shmem.inner.free(self.addr);
    }
}

impl<T: Pod> std::fmt::Debug for SymBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymBuffer")
            .field("addr", &format_args!("{:#x}", self.addr))
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}
