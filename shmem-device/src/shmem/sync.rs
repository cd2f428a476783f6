//! Ordering (`fence`, `quiet`) and barriers across PEs.

use super::Scope;
use crate::backend;

/// Orders this thread's puts, atomics and stores to each PE: those issued before the fence
/// are delivered to a given PE before those issued after it. Completion is not implied.
#[inline(always)]
pub fn fence() {
    backend::fence()
}

/// Waits until every put, atomic and store this thread issued, to any PE, has completed.
#[inline(always)]
pub fn quiet() {
    backend::quiet()
}

/// Barrier over all PEs, which also completes every outstanding operation (`quiet`) first.
///
/// `S` says who calls: one thread per PE ([`super::Thread`]), a whole warp or a whole block.
/// A kernel that calls it from several blocks must be launched cooperatively.
#[inline(always)]
pub fn barrier_all<S: Scope>() {
    backend::barrier_all(S::KIND)
}

/// Synchronises all PEs without completing outstanding operations (`nvshmem_sync_all`).
#[inline(always)]
pub fn sync_all<S: Scope>() {
    backend::sync_all(S::KIND)
}
