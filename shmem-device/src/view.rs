//! Typed views of symmetric buffers, so kernels need no raw pointers: a [`SymSlice<T>`] is
//! what the host's `SymBuffer<T>::slice()` passes to a kernel — the local address and length
//! of an allocation that exists, with the same length, on every PE.
//!
//! ```ignore
//! #[kernel]
//! pub unsafe fn count_to_right(data: SymSlice<u64>, hits: SymSlice<u64>) {
//!     let right = (shmem::my_pe() + 1) % shmem::n_pes();
//!     let i = thread::index_1d() as usize;
//!     if i < data.len() {
//!         data.put_one(right, i, data.read(i));      // remote store of one element
//!         hits.atomic(right, 0).fetch_add(1);        // remote atomic
//!     }
//! }
//! ```
//!
//! Every method checks its index range and PE number and panics when they are wrong (a trap
//! on GPUs, a failure naming kernel, PE, block and thread on the simulator).

use crate::kernel::KernelArg;
use crate::shmem::{self, AmoBitwise, AmoInt, AmoScalar, RmaScalar, Scope};
use core::ops::Range;

/// `len` elements of `T` at the same place on every PE. Copy it freely; it borrows nothing.
#[repr(C)]
#[derive(Debug)]
pub struct SymSlice<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Clone for SymSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SymSlice<T> {}

// SAFETY: a pointer and a length, the same bytes on host and device.
unsafe impl<T: 'static> KernelArg for SymSlice<T> {}

#[inline(always)]
fn check_pe(pe: i32) {
    let n = shmem::n_pes();
    assert!(pe >= 0 && pe < n, "PE out of range");
}

impl<T: Copy> SymSlice<T> {
    /// A view of `len` elements at the symmetric address `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must start a symmetric allocation of at least `len` elements on every PE, alive
    /// for as long as the view is used.
    #[inline(always)]
    pub const unsafe fn from_raw(ptr: *mut T, len: usize) -> Self {
        Self { ptr, len }
    }

    /// Number of elements.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The local address (for the raw-pointer API).
    #[inline(always)]
    pub const fn as_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The sub-view `range`.
    #[inline(always)]
    pub fn slice(&self, range: Range<usize>) -> Self {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "SymSlice range out of bounds"
        );
        Self {
            // SAFETY: inside this view's allocation (`range.start <= self.len`, checked above).
            ptr: unsafe { self.ptr.add(range.start) },
            len: range.end - range.start,
        }
    }

    #[inline(always)]
    fn at(&self, i: usize) -> *mut T {
        assert!(i < self.len, "SymSlice index out of bounds");
        // SAFETY: checked in bounds.
        unsafe { self.ptr.add(i) }
    }

    /// Reads local element `i`.
    #[inline(always)]
    pub fn read(&self, i: usize) -> T {
        // SAFETY: in bounds; volatile because peers may write it remotely.
        unsafe { core::ptr::read_volatile(self.at(i)) }
    }

    /// Writes local element `i`.
    #[inline(always)]
    pub fn write(&self, i: usize, value: T) {
        // SAFETY: in bounds; volatile because peers may read it remotely.
        unsafe { core::ptr::write_volatile(self.at(i), value) }
    }

    /// Copies `src` into elements `offset..offset + src.len` on PE `pe` (blocking put; all
    /// threads of scope `S` call it together).
    #[inline(always)]
    pub fn put<S: Scope>(&self, pe: i32, offset: usize, src: &[T]) {
        assert!(
            offset <= self.len && src.len() <= self.len - offset,
            "SymSlice put out of bounds"
        );
        check_pe(pe);
        // SAFETY: the destination range is inside the symmetric allocation on every PE, the
        // PE is in range, and `src` is a valid local slice.
        unsafe { shmem::put::<S, T>(self.ptr.add(offset), src.as_ptr(), src.len(), pe) }
    }

    /// Copies elements `offset..offset + dst.len` of PE `pe` into `dst` (blocking get).
    #[inline(always)]
    pub fn get<S: Scope>(&self, pe: i32, offset: usize, dst: &mut [T]) {
        assert!(
            offset <= self.len && dst.len() <= self.len - offset,
            "SymSlice get out of bounds"
        );
        check_pe(pe);
        // SAFETY: as `put`, the other way.
        unsafe { shmem::get::<S, T>(dst.as_mut_ptr(), self.ptr.add(offset), dst.len(), pe) }
    }

    /// Copies this PE's elements `range` into the same elements on PE `pe` (blocking put).
    #[inline(always)]
    pub fn push_to<S: Scope>(&self, pe: i32, range: Range<usize>) {
        let part = self.slice(range);
        check_pe(pe);
        // SAFETY: `part` is inside the allocation on every PE; a PE's own copy is distinct
        // from the remote one.
        unsafe { shmem::put::<S, T>(part.ptr, part.ptr, part.len, pe) }
    }
}

impl<T: RmaScalar> SymSlice<T> {
    /// Element `i` of PE `pe` (`g`).
    #[inline(always)]
    pub fn get_one(&self, pe: i32, i: usize) -> T {
        let at = self.at(i);
        check_pe(pe);
        // SAFETY: in bounds of the symmetric allocation; PE checked.
        unsafe { shmem::g(at, pe) }
    }

    /// Writes element `i` of PE `pe` (`p`).
    #[inline(always)]
    pub fn put_one(&self, pe: i32, i: usize, value: T) {
        let at = self.at(i);
        check_pe(pe);
        // SAFETY: as `get_one`.
        unsafe { shmem::p(at, value, pe) }
    }
}

impl<T: AmoScalar> SymSlice<T> {
    /// Atomic operations on element `i` of PE `pe`.
    #[inline(always)]
    pub fn atomic(&self, pe: i32, i: usize) -> RemoteAtomic<T> {
        let ptr = self.at(i);
        check_pe(pe);
        RemoteAtomic { ptr, pe }
    }
}

/// One element of a [`SymSlice`] on one PE, for remote atomics. Made by [`SymSlice::atomic`],
/// which checked the index and PE.
#[derive(Clone, Copy, Debug)]
pub struct RemoteAtomic<T> {
    ptr: *mut T,
    pe: i32,
}

impl<T: AmoScalar> RemoteAtomic<T> {
    /// Atomic read.
    #[inline(always)]
    pub fn load(self) -> T {
        // SAFETY: checked by `SymSlice::atomic`.
        unsafe { shmem::atomic_fetch(self.ptr, self.pe) }
    }
    /// Atomic write.
    #[inline(always)]
    pub fn store(self, value: T) {
        // SAFETY: as `load`.
        unsafe { shmem::atomic_set(self.ptr, value, self.pe) }
    }
    /// Atomic exchange; returns the old value.
    #[inline(always)]
    pub fn swap(self, value: T) -> T {
        // SAFETY: as `load`.
        unsafe { shmem::atomic_swap(self.ptr, value, self.pe) }
    }
}

impl<T: AmoInt> RemoteAtomic<T> {
    /// Adds `value` (wrapping); returns the old value.
    #[inline(always)]
    pub fn fetch_add(self, value: T) -> T {
        // SAFETY: as `load`.
        unsafe { shmem::atomic_fetch_add(self.ptr, value, self.pe) }
    }
    /// Adds `value` without fetching (cheaper over the network).
    #[inline(always)]
    pub fn add(self, value: T) {
        // SAFETY: as `load`.
        unsafe { shmem::atomic_add(self.ptr, value, self.pe) }
    }
    /// Writes `new` if the value is `current`; returns the old value.
    #[inline(always)]
    pub fn compare_swap(self, current: T, new: T) -> T {
        // SAFETY: as `load`.
        unsafe { shmem::atomic_compare_swap(self.ptr, current, new, self.pe) }
    }
}

impl<T: AmoBitwise> RemoteAtomic<T> {
    /// `&= value`; returns the old value.
    #[inline(always)]
    pub fn fetch_and(self, value: T) -> T {
        // SAFETY: as `load`.
        unsafe { shmem::atomic_fetch_and(self.ptr, value, self.pe) }
    }
    /// `|= value`; returns the old value.
    #[inline(always)]
    pub fn fetch_or(self, value: T) -> T {
        // SAFETY: as `load`.
        unsafe { shmem::atomic_fetch_or(self.ptr, value, self.pe) }
    }
    /// `^= value`; returns the old value.
    #[inline(always)]
    pub fn fetch_xor(self, value: T) -> T {
        // SAFETY: as `load`.
        unsafe { shmem::atomic_fetch_xor(self.ptr, value, self.pe) }
    }
}
