//! 16-byte vector loads and stores (`ld.v4.b32` / `st.v4.b32`): how bulk data moves, one
//! instruction per 16 bytes per thread, to local memory or to a peer's through its mapping.
//!
//! [`load`] and [`store`] are plain (weak) accesses: order them with fences, signals or
//! barriers like any other data access. [`load_relaxed`] and [`store_relaxed`] (the same as
//! `atomic::load_relaxed_x4` and `atomic::store_relaxed_x4`) make each 32-bit word a relaxed
//! atomic access at a scope, for data that is polled while it is written.
//!
//! ```ignore
//! use rshmem_device::vector::{self, Words4};
//! let v = unsafe { vector::load(src.cast::<Words4>().add(i)) };
//! unsafe { vector::store(peer_dst.cast::<Words4>().add(i), v) };
//! ```
//!
//! A plain Rust copy of a 16-byte aligned value may become two 8-byte accesses; these are
//! always one vector instruction on the GPU. On the simulator they are ordinary host copies
//! (the relaxed forms: four atomic words).

use crate::atomic::MemScope;
pub use crate::atomic::Words4;
use crate::backend;

/// Loads 16 bytes with one `ld.v4.b32` (a plain, weak load).
///
/// # Safety
///
/// `ptr` valid for 16 bytes of reads and 16-byte aligned; no write races with the load.
#[inline(always)]
pub unsafe fn load(ptr: *const Words4) -> Words4 {
    // SAFETY: forwarded from this function's contract.
    Words4(unsafe { backend::load_x4(ptr.cast()) })
}

/// Stores 16 bytes with one `st.v4.b32` (a plain, weak store).
///
/// # Safety
///
/// `ptr` valid for 16 bytes of writes and 16-byte aligned; no access races with the store.
#[inline(always)]
pub unsafe fn store(ptr: *mut Words4, value: Words4) {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::store_x4(ptr.cast(), value.0) }
}

/// As [`store`], with `st.cs.v4.b32`: the line is cached evict-first (L1 and L2), for output
/// this GPU will not read again soon, so that it does not push inputs that are reused out of
/// L2.
///
/// # Safety
///
/// As [`store`].
#[inline(always)]
pub unsafe fn store_streaming(ptr: *mut Words4, value: Words4) {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::store_x4_streaming(ptr.cast(), value.0) }
}

/// [`crate::atomic::load_relaxed_x4`].
///
/// # Safety
///
/// As [`crate::atomic::load_relaxed_x4`].
#[inline(always)]
pub unsafe fn load_relaxed<S: MemScope>(ptr: *const Words4) -> Words4 {
    // SAFETY: forwarded.
    unsafe { crate::atomic::load_relaxed_x4::<S>(ptr) }
}

/// [`crate::atomic::store_relaxed_x4`].
///
/// # Safety
///
/// As [`crate::atomic::store_relaxed_x4`].
#[inline(always)]
pub unsafe fn store_relaxed<S: MemScope>(ptr: *mut Words4, value: Words4) {
    // SAFETY: forwarded.
    unsafe { crate::atomic::store_relaxed_x4::<S>(ptr, value) }
}
