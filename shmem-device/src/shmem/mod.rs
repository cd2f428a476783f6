//! SHMEM operations on the symmetric heap, callable from kernels.
//!
//! A *symmetric* pointer is one into a buffer the host allocated on the symmetric heap
//! (`SymBuffer`): the same allocation exists on every PE, so a local pointer names the
//! peer's copy too, given the peer's PE number.
//!
//! Families, one module each: [`rma`] (put/get/p/g/iput/iget/ptr), [`amo`] (remote atomics),
//! [`signal`] (signal words and put-with-signal), [`wait`] (wait/test), [`sync`] (ordering and
//! barriers), [`team`] (teams), [`coll`] (collectives). The
//! cooperative forms take a [`Scope`] type parameter: [`Thread`] (each thread on its own),
//! [`Warp`] (all 32 lanes call together, the work is shared) or [`Block`] (every thread of
//! the block calls together).

pub mod amo;
pub mod coll;
pub mod rma;
pub mod signal;
pub mod sync;
pub mod team;
pub mod wait;

pub use amo::{
    atomic_add, atomic_and, atomic_compare_swap, atomic_fetch, atomic_fetch_add, atomic_fetch_and,
    atomic_fetch_inc, atomic_fetch_or, atomic_fetch_xor, atomic_inc, atomic_or, atomic_set,
    atomic_swap, atomic_xor, AmoBitwise, AmoInt, AmoScalar,
};
pub use coll::{alltoall, broadcast, fcollect, reduce, reducescatter, CollScalar, ReduceOp};
pub use rma::{
    g, get, get_nbi, getmem, getmem_nbi, iget, iput, p, ptr, put, put_nbi, putmem, putmem_nbi,
    RmaScalar,
};
pub use signal::{
    put_signal, put_signal_nbi, putmem_signal, putmem_signal_nbi, signal_fetch, signal_op,
    signal_wait_until, SignalOp,
};
pub use sync::{barrier_all, fence, quiet, sync_all};
pub use team::Team;
pub use wait::{
    test, test_all, test_any, test_some, wait_until, wait_until_all, wait_until_all_vector,
    wait_until_any, wait_until_any_vector, wait_until_some, wait_until_some_vector, WaitScalar,
};

use crate::backend;

/// This PE's number, `0..n_pes()`.
#[inline(always)]
pub fn my_pe() -> i32 {
    backend::my_pe()
}

/// The number of PEs in the job.
#[inline(always)]
pub fn n_pes() -> i32 {
    backend::n_pes()
}

pub use crate::contract::{Cmp, ScopeKind};

/// Which threads cooperate in one call. Implemented by [`Thread`], [`Warp`] and [`Block`].
pub trait Scope: sealed::Sealed + Copy + 'static {
    /// The scope as a value, for backends that dispatch on it.
    const KIND: ScopeKind;
}

/// Each calling thread performs its own operation.
#[derive(Clone, Copy, Debug)]
pub struct Thread;
/// All lanes of the warp call together with the same arguments and share the work.
#[derive(Clone, Copy, Debug)]
pub struct Warp;
/// All threads of the block call together with the same arguments and share the work.
#[derive(Clone, Copy, Debug)]
pub struct Block;

impl Scope for Thread {
    const KIND: ScopeKind = ScopeKind::Thread;
}
impl Scope for Warp {
    const KIND: ScopeKind = ScopeKind::Warp;
}
impl Scope for Block {
    const KIND: ScopeKind = ScopeKind::Block;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Thread {}
    impl Sealed for super::Warp {}
    impl Sealed for super::Block {}
}
