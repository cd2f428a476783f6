//! The block's shared memory, as both roles see it.

use super::Sm90Config;
use core::marker::PhantomData;
use rshmem_device::hopper::{self, MBarrier};
use rshmem_device::thread;

/// Barriers `full[STAGES]`, `empty[STAGES]`, `stored`, `taken` and `ready` at the start of dynamic shared
/// memory, then the stages, 1024-aligned (the swizzle's), each A's box then B's; `C`'s sizes.
pub(super) struct Smem<C> {
    stages: *mut u8,
    /// `stages` as a shared-memory address, worked out once.
    address: u32,
    config: PhantomData<C>,
}

impl<C> Clone for Smem<C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for Smem<C> {}

impl<C: Sm90Config> Smem<C> {
    /// `full[STAGES]`, `empty[STAGES]`, `stored`, `taken`, `ready`.
    const BARRIERS: u32 = 2 * C::STAGES + 3;

    /// The layout, its barriers initialised by thread 0 and visible to the block. Called by
    /// every thread, once.
    ///
    /// # Safety
    ///
    /// The launch has `C::SHARED_BYTES` of dynamic shared memory.
    #[inline(always)]
    pub(super) unsafe fn init(consumers: u32) -> Self {
        // SAFETY: the stages after the barriers, inside SHARED_BYTES.
        let stages = unsafe { hopper::dynamic_shared_aligned(8 * Self::BARRIERS, 1024) };
        let smem = Self {
            stages,
            address: hopper::shared_address(stages),
            config: PhantomData,
        };
        if thread::thread_idx_x() == 0 {
            for s in 0..C::STAGES {
                // SAFETY: each barrier initialised once, before any use (the sync below).
                unsafe {
                    smem.full(s).init(1);
                    smem.empty(s).init(consumers);
                }
            }
            // SAFETY: as above.
            unsafe {
                smem.stored().init(consumers);
                smem.taken().init(1);
                smem.ready().init(1);
            }
            hopper::fence_barrier_init();
        }
        thread::sync_threads();
        smem
    }

    #[inline(always)]
    fn barrier(&self, i: u32) -> &'static MBarrier {
        // SAFETY: i < Self::BARRIERS, at the start of the launch's shared memory (`init`'s contract).
        unsafe { MBarrier::in_dynamic_shared(i) }
    }

    /// Completes when stage `s`'s copies have landed (the producer arms it).
    #[inline(always)]
    pub(super) fn full(&self, s: u32) -> &'static MBarrier {
        self.barrier(s)
    }

    /// Completes when every consumer has released stage `s`.
    #[inline(always)]
    pub(super) fn empty(&self, s: u32) -> &'static MBarrier {
        self.barrier(C::STAGES + s)
    }

    /// Completes when every consumer has stored a tile ([`crate::Epilogue::TILE_DONE`]).
    #[inline(always)]
    pub(super) fn stored(&self) -> &'static MBarrier {
        self.barrier(2 * C::STAGES)
    }

    /// Completes when the tile-sync thread has seen a tile stored.
    #[inline(always)]
    pub(super) fn taken(&self) -> &'static MBarrier {
        self.barrier(2 * C::STAGES + 1)
    }

    /// Completes when the tile-sync thread has returned from a tile's `before_epilogue`.
    #[inline(always)]
    pub(super) fn ready(&self) -> &'static MBarrier {
        self.barrier(2 * C::STAGES + 2)
    }

    /// Stage `s`'s first byte.
    #[inline(always)]
    pub(super) fn stage(&self, s: u32) -> *mut u8 {
        self.stages.wrapping_add((s * C::STAGE_BYTES) as usize)
    }

    /// Stage `s`'s shared-memory address (what descriptors hold).
    #[inline(always)]
    pub(super) fn stage_address(&self, s: u32) -> u32 {
        self.address + s * C::STAGE_BYTES
    }
}
