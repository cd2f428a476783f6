//! Scoped atomics and fences on memory this GPU (or, at `Sys` scope, a peer over NVLink) can
//! address: global or shared memory, or a peer mapping from `shmem::ptr`. The scope says who
//! must observe the operation: the block ([`Cta`]), this GPU ([`Gpu`]) or every GPU and the
//! host ([`Sys`] — what peers over NVLink need). Orderings are C++'s.
//!
//! ```ignore
//! use rshmem_device::atomic::{self, Ordering, Sys};
//! let old = unsafe { atomic::fetch_add::<Sys, u32>(counter, 1, Ordering::AcqRel) };
//! ```

use crate::backend;

/// Who must observe an atomic or a fence.
pub trait MemScope: sealed::Sealed + Copy + 'static {
    /// The scope as a value.
    const KIND: ScopeKind;
}

pub use crate::contract::{MemScopeKind as ScopeKind, Ordering, RmwOp};

/// Block scope.
#[derive(Clone, Copy, Debug)]
pub struct Cta;
/// GPU scope.
#[derive(Clone, Copy, Debug)]
pub struct Gpu;
/// System scope (needed across GPUs).
#[derive(Clone, Copy, Debug)]
pub struct Sys;

impl MemScope for Cta {
    const KIND: ScopeKind = ScopeKind::Cta;
}
impl MemScope for Gpu {
    const KIND: ScopeKind = ScopeKind::Gpu;
}
impl MemScope for Sys {
    const KIND: ScopeKind = ScopeKind::Sys;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Cta {}
    impl Sealed for super::Gpu {}
    impl Sealed for super::Sys {}
}

/// 32- and 64-bit integers, the types with every scoped atomic.
pub trait AtomicInt: Copy + int_sealed::Sealed + backend::ScopedAtomic + 'static {}

mod int_sealed {
    pub trait Sealed {}
}

macro_rules! atomic_ints {
    ($($t:ty),* $(,)?) => {$(
        impl int_sealed::Sealed for $t {}
        impl AtomicInt for $t {}
    )*};
}

atomic_ints!(u32, i32, u64, i64);

/// Declares the public RMW functions.
macro_rules! rmw_fns {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// `ptr` must be valid, aligned and accessed concurrently only atomically.
        #[inline(always)]
        pub unsafe fn $name<S: MemScope, T: AtomicInt>(ptr: *mut T, value: T, order: Ordering) -> T {
            // SAFETY: forwarded from this function's contract.
            unsafe { <T as backend::ScopedAtomic>::rmw(RmwOp::$op, S::KIND, order, ptr, value) }
        }
    )*};
}

rmw_fns! {
    /// `*ptr += value` (wrapping); returns the old value.
    fetch_add => Add;
    /// `*ptr = value`; returns the old value.
    swap => Exch;
    /// `*ptr = min(*ptr, value)`; returns the old value.
    fetch_min => Min;
    /// `*ptr = max(*ptr, value)`; returns the old value.
    fetch_max => Max;
    /// `*ptr &= value`; returns the old value.
    fetch_and => And;
    /// `*ptr |= value`; returns the old value.
    fetch_or => Or;
    /// `*ptr ^= value`; returns the old value.
    fetch_xor => Xor;
}

/// Writes `new` if `*ptr == current`; returns the old value either way.
///
/// # Safety
///
/// As [`fetch_add`].
#[inline(always)]
pub unsafe fn compare_swap<S: MemScope, T: AtomicInt>(
    ptr: *mut T,
    current: T,
    new: T,
    order: Ordering,
) -> T {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::ScopedAtomic>::cas(S::KIND, order, ptr, current, new) }
}

/// Atomic load (`ld.relaxed`/`ld.acquire`, after a `fence.sc` for `SeqCst`).
///
/// # Safety
///
/// As [`fetch_add`].
#[inline(always)]
pub unsafe fn load<S: MemScope, T: AtomicInt>(ptr: *const T, order: Ordering) -> T {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::ScopedAtomic>::load(S::KIND, order, ptr) }
}

/// Atomic store (`st.relaxed`/`st.release`, after a `fence.sc` for `SeqCst`).
///
/// # Safety
///
/// As [`fetch_add`].
#[inline(always)]
pub unsafe fn store<S: MemScope, T: AtomicInt>(ptr: *mut T, value: T, order: Ordering) {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::ScopedAtomic>::store(S::KIND, order, ptr, value) }
}

/// A memory fence at scope `S`: `fence.acq_rel` (or `fence.sc` for `SeqCst`).
#[inline(always)]
pub fn fence<S: MemScope>(order: Ordering) {
    backend::atomic_fence(S::KIND, order)
}

/// Sixteen bytes as four 32-bit words, 16-byte aligned: what one vector access moves
/// ([`load_relaxed_x4`], [`store_relaxed_x4`]).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Words4(pub [u32; 4]);

/// Loads four 32-bit words with one vector access, each word a relaxed atomic load at scope
/// `S` (`ld.relaxed.<scope>.v4.b32`): every word is single-copy atomic, the 16 bytes as a
/// whole are not (a concurrent [`store_relaxed_x4`] may be seen in part). What a poll of
/// memory that peers write word by word needs (the flag-in-data protocols of `rshmem-coll`).
///
/// # Safety
///
/// `ptr` must be valid for reads of 16 bytes and 16-byte aligned; concurrent accesses to
/// those bytes must be atomic (these, or 32-bit atomics).
#[inline(always)]
pub unsafe fn load_relaxed_x4<S: MemScope>(ptr: *const Words4) -> Words4 {
    // SAFETY: forwarded from this function's contract.
    Words4(unsafe { backend::load_relaxed_x4(S::KIND, ptr.cast()) })
}

/// Stores four 32-bit words with one vector access, each word a relaxed atomic store at scope
/// `S` (`st.relaxed.<scope>.v4.b32`); see [`load_relaxed_x4`].
///
/// # Safety
///
/// `ptr` must be valid for writes of 16 bytes and 16-byte aligned; concurrent accesses to
/// those bytes must be atomic.
#[inline(always)]
pub unsafe fn store_relaxed_x4<S: MemScope>(ptr: *mut Words4, value: Words4) {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::store_relaxed_x4(S::KIND, ptr.cast(), value.0) }
}
