//! SHMEM operations on the symmetric heap, callable from kernels.
//!
//! A *symmetric* pointer is one into a buffer the host allocated on the symmetric heap
//! (`SymBuffer`): the same allocation exists on every PE, so a local pointer names the
//! peer's copy too, given the peer's PE number.
//!
//! Families, one module each: [`rma`] (put/get), [`sync`] (ordering and barriers). The
//! cooperative forms take a [`Scope`] type parameter: [`Thread`] (each thread on its own),
//! [`Warp`] (all 32 lanes call together, the work is shared) or [`Block`] (every thread of
//! the block calls together).

pub mod rma;
pub mod sync;

pub use rma::{
    g, get, get_nbi, getmem, getmem_nbi, p, put, put_nbi, putmem, putmem_nbi, RmaScalar,
};
pub use sync::{barrier_all, fence, quiet, sync_all};

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

/// Which threads cooperate in one call. Implemented by [`Thread`], [`Warp`] and [`Block`].
pub trait Scope: sealed::Sealed + Copy + 'static {
    /// The scope as a value, for backends that dispatch on it.
    const KIND: ScopeKind;
}

/// The runtime form of a [`Scope`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    /// One thread.
    Thread,
    /// The 32 lanes of a warp, all calling together.
    Warp,
    /// Every thread of the block, all calling together.
    Block,
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
