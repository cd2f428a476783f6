//! `mbarrier`: a barrier object in shared memory that completes a *phase* when its pending
//! arrivals reach zero and its transaction count (bytes announced by `expect_tx`, retired by
//! TMA copies' `complete_tx`) is zero; it then re-arms with the count given at `init`. Waiters
//! name the phase by its parity (0 for the first phase, 1 for the second, 0 again, ...).
//!
//! A pipeline of S stages uses one "full" barrier per stage (the producer's `arrive_expect_tx`
//! plus the copies' bytes) and waits on parity `(round & 1)` where `round = k / S`.
//!
//! ```ignore
//! let bar: &MBarrier = ...; // in shared memory, initialised by one thread
//! if tid == 0 { unsafe { bar.arrive_expect_tx(bytes); tma::load_2d(map, dst, bar, x, y) } }
//! unsafe { bar.wait_parity(phase & 1) };
//! ```

use crate::backend::hopper as backend;

/// One `mbarrier` object: 8 bytes, 8-byte aligned, in shared memory. Place it in dynamic
/// shared memory (cast a pointer); it has no meaning elsewhere.
#[repr(C, align(8))]
pub struct MBarrier(u64);

impl MBarrier {
    /// The `i`-th mbarrier at the start of this block's dynamic shared memory, where kernels
    /// keep their barriers (the data after them: [`super::dynamic_shared_aligned`]).
    ///
    /// # Safety
    ///
    /// The launch gave at least `8 * (i + 1)` bytes of dynamic shared memory, and the kernel
    /// uses those bytes for barriers only.
    #[inline(always)]
    pub unsafe fn in_dynamic_shared(i: u32) -> &'static MBarrier {
        let (base, _) = crate::thread::dynamic_shared::<MBarrier>();
        // SAFETY: 8-aligned (dynamic shared memory is 16-aligned), in bounds (the caller's
        // contract).
        unsafe { &*base.add(i as usize) }
    }

    /// The raw pointer the backends take.
    #[inline(always)]
    fn raw(&self) -> *mut u64 {
        (self as *const MBarrier).cast_mut().cast()
    }

    /// `mbarrier.init.shared::cta.b64`: arms the barrier for `count` arrivals per phase
    /// (1..2^20), transaction count 0, phase 0.
    ///
    /// # Safety
    ///
    /// `self` is in this block's shared memory, 8-byte aligned, and no thread uses it until
    /// the init is published ([`super::fence_barrier_init`] then `sync_threads`); one thread
    /// initialises it; it is not a live barrier (first use, or after [`MBarrier::inval`]).
    #[inline(always)]
    pub unsafe fn init(&self, count: u32) {
        // SAFETY: forwarded contract.
        unsafe { backend::mbarrier_init(self.raw(), count) }
    }

    /// `mbarrier.arrive.shared::cta.b64`: one arrival on the current phase.
    ///
    /// # Safety
    ///
    /// `self` is an initialised barrier of this block; the phase must still expect an
    /// arrival (more arrivals than the count in one phase is undefined on the GPU and fails
    /// on the simulator).
    #[inline(always)]
    pub unsafe fn arrive(&self) {
        // SAFETY: forwarded contract.
        unsafe { backend::mbarrier_arrive(self.raw()) }
    }

    /// `mbarrier.arrive.expect_tx.shared::cta.b64`: announces `bytes` more transaction bytes
    /// for the current phase, then arrives. The producer of a TMA stage calls it with the
    /// bytes of every copy that completes on this barrier (whole boxes, out-of-bounds fill
    /// included).
    ///
    /// # Safety
    ///
    /// As [`MBarrier::arrive`].
    #[inline(always)]
    pub unsafe fn arrive_expect_tx(&self, bytes: u32) {
        // SAFETY: forwarded contract.
        unsafe { backend::mbarrier_arrive_expect_tx(self.raw(), bytes) }
    }

    /// `mbarrier.expect_tx.relaxed.cta.shared::cta.b64`: announces `bytes` more transaction
    /// bytes for the current phase, without arriving.
    ///
    /// # Safety
    ///
    /// `self` is an initialised barrier of this block.
    #[inline(always)]
    pub unsafe fn expect_tx(&self, bytes: u32) {
        // SAFETY: forwarded contract.
        unsafe { backend::mbarrier_expect_tx(self.raw(), bytes) }
    }

    /// `mbarrier.try_wait.parity.shared::cta.b64`: whether the phase of parity `parity & 1`
    /// has completed (the current phase's parity differs). May wait a little (the GPU's
    /// time-limited try); never forever.
    ///
    /// # Safety
    ///
    /// `self` is an initialised barrier of this block.
    #[inline(always)]
    pub unsafe fn try_wait_parity(&self, parity: u32) -> bool {
        // SAFETY: forwarded contract.
        unsafe { backend::mbarrier_try_wait_parity(self.raw(), parity & 1) }
    }

    /// Waits until the phase of parity `parity & 1` has completed. Memory written by the
    /// copies that completed on that phase (and by threads before their arrivals) is visible
    /// afterwards. On the simulator it fails after `RSHMEM_SIM_WAIT_TIMEOUT` seconds or when
    /// the launch fails, naming the barrier.
    ///
    /// # Safety
    ///
    /// `self` is an initialised barrier of this block, and the phase awaited is the current
    /// one or the one before (the parity cannot tell phases two apart).
    #[inline(always)]
    pub unsafe fn wait_parity(&self, parity: u32) {
        // SAFETY: forwarded contract.
        unsafe { backend::mbarrier_wait_parity(self.raw(), parity & 1) }
    }

    /// `mbarrier.inval.shared::cta.b64`: ends the barrier's life, so its memory may be used
    /// for anything else (or `init` again).
    ///
    /// # Safety
    ///
    /// `self` is an initialised barrier of this block that no thread or copy uses any more.
    #[inline(always)]
    pub unsafe fn inval(&self) {
        // SAFETY: forwarded contract.
        unsafe { backend::mbarrier_inval(self.raw()) }
    }
}
