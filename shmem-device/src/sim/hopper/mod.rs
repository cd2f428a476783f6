//! The Hopper primitives (`crate::hopper`) on the simulator.
//!
//! * **Warpgroups.** Each block has a meeting of each 128 consecutive thread ranks; a `wgmma`
//!   is a warpgroup meeting (every thread publishes its operands, all meet, each computes its
//!   own accumulator fragment from the shared memory the descriptors address, with the exact
//!   swizzle patterns, and all meet again). A warpgroup with fewer than 128 threads fails.
//! * **Asynchrony made visible.** A `wgmma` result is held back and the accumulator filled
//!   with NaN until a `wait_group` covers its commit group and the kernel takes the registers
//!   (`WgmmaAcc::regs`); a TMA load fills its destination with `0xFF` bytes (NaN in bf16, f16
//!   and f32) at issue and writes the data when a thread waits on its mbarrier; a TMA store
//!   reads shared memory only at the `cp.async.bulk.wait_group` that covers it. So a kernel
//!   that reads too early, reuses a stage before its consumer is done, or forgets a wait gets
//!   wrong numbers here, as it would (sometimes) on a GPU.
//! * **mbarrier** objects are tracked by shared address: arrival count, pending arrivals,
//!   transaction bytes (may go negative, as on the GPU), completed phases. Use before `init`,
//!   `init` of a live barrier, an arrival beyond the count, and a barrier outside shared memory
//!   or misaligned fail the thread.
//! * **Refused** (fail naming the operation): descriptors with a nonzero base offset, tensor
//!   maps not made for the simulator, copies whose shared address is misaligned or out of the
//!   block's shared memory, a `wgmma` issued after touching registers without `wgmma::fence`,
//!   TMA copies through a map the thread did not `fence_tensormap_acquire`.
//! * **Not modelled**: the generic/async proxy distinction (`fence_proxy_async_shared` is a
//!   plain fence here, so a missing one goes unnoticed), `setmaxnreg` (a warpgroup meeting
//!   with no other effect), and the order of the f32 additions inside one `wgmma` (the
//!   simulator adds the K products in K order: results equal the GPU's whenever the sums are
//!   exact in f32).

use core::sync::atomic::{
    fence, AtomicU8,
    Ordering::{Relaxed, SeqCst},
};
use std::format;

use super::barrier::Group;
use super::context::{with, ThreadCtx};
use state::WARPGROUP;

mod mbarrier;
pub(crate) mod state;
mod tma;
mod wgmma;

pub(crate) use mbarrier::{
    mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_expect_tx, mbarrier_init, mbarrier_inval,
    mbarrier_try_wait_parity, mbarrier_wait_parity,
};
pub use tma::encode_tensor_map;
pub(crate) use tma::{
    bulk_commit_group, bulk_wait_group, fence_tensormap_acquire, tma_load, tma_store,
};
pub(crate) use wgmma::{
    wgmma, wgmma_commit_group, wgmma_fence, wgmma_settle, wgmma_wait_group, WgmmaA,
};

/// This thread's warpgroup and its rank in it; fails if the warpgroup is not complete.
fn warpgroup<'c>(c: &ThreadCtx<'c>, op: &str) -> (&'c Group, u32) {
    let h = &c.block.hopper;
    let g = (c.rank / WARPGROUP) as usize;
    let size = WARPGROUP.min(c.launch.spec.block.size() - g as u32 * WARPGROUP);
    if size != WARPGROUP {
        c.fail(format!(
            "{op} needs the 128 threads of a warpgroup, but this thread's warpgroup (threads \
             {}..) has {size}: launch blocks of a multiple of 128 threads",
            g as u32 * WARPGROUP
        ));
    }
    (&h.warpgroups[g], c.rank % WARPGROUP)
}

/// The offset of `p` in this block's dynamic shared memory, checked to hold `len` bytes and be
/// aligned to `align`.
fn shared_offset(
    c: &ThreadCtx<'_>,
    op: &str,
    what: &str,
    p: *const u8,
    len: usize,
    align: usize,
) -> u32 {
    let (base, size) = c.block.shared.get();
    let off = (p as usize).wrapping_sub(base as usize);
    if (p as usize) < base as usize || off + len > size {
        c.fail(format!(
            "{op}: {what} {p:?} (+{len} bytes) is not in this block's dynamic shared memory \
             ({size} bytes at {base:?}; launch with more `shared_mem_bytes`)"
        ));
    }
    if off % align != 0 {
        c.fail(format!(
            "{op}: {what} at shared address {off:#x} is not {align}-byte aligned"
        ));
    }
    off as u32
}

/// Byte `off` of this block's shared memory (bounds checked by the caller).
fn smem_byte<'c>(c: &ThreadCtx<'c>, off: u32) -> &'c AtomicU8 {
    let (base, size) = c.block.shared.get();
    assert!(
        (off as usize) < size,
        "shared offset {off:#x} checked against {size}"
    );
    // SAFETY: inside the block's shared memory, which lives for the launch; the kernel's own
    // accesses to it are its business (as on a GPU), the simulator's are relaxed atomics.
    unsafe { AtomicU8::from_ptr(base.add(off as usize)) }
}

/// Reads `n` bytes of shared memory at `off`.
fn smem_read(c: &ThreadCtx<'_>, off: u32, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        *b = smem_byte(c, off + i as u32).load(Relaxed);
    }
}

/// Writes bytes to shared memory at `off`.
fn smem_write(c: &ThreadCtx<'_>, off: u32, bytes: &[u8]) {
    for (i, b) in bytes.iter().enumerate() {
        smem_byte(c, off + i as u32).store(*b, Relaxed);
    }
}

pub(crate) fn shared_address(p: *const u8) -> u32 {
    with("hopper::shared_address", |c| {
        shared_offset(c, "hopper::shared_address", "pointer", p, 0, 1)
    })
}

pub(crate) fn fence_proxy_async_shared() {
    fence(SeqCst)
}

pub(crate) fn fence_proxy_async_global() {
    fence(SeqCst)
}

pub(crate) fn fence_barrier_init() {
    fence(SeqCst)
}

/// # Safety
///
/// No preconditions on the simulator (the warpgroup meets, as the GPU's `.sync.aligned`).
pub(crate) unsafe fn setmaxnreg<const N: u32, const INC: bool>() {
    let op = if INC {
        "hopper::setmaxnreg_inc"
    } else {
        "hopper::setmaxnreg_dec"
    };
    with(op, |c| {
        let (g, _) = warpgroup(c, op);
        c.sync(g, op);
    })
}
