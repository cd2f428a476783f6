//! The fused tensor-parallel family: [`Ops::all_gather_gemm`](crate::Ops::all_gather_gemm) and
//! [`Ops::gemm_reduce_scatter`](crate::Ops::gemm_reduce_scatter) (their calls in `calls.rs`),
//! their options ([`FusedOptions`]) and what the calls promise.
//!
//! [`Ops::all_gather_gemm`](crate::Ops::all_gather_gemm) and
//! [`Ops::gemm_reduce_scatter`](crate::Ops::gemm_reduce_scatter) compute and communicate at
//! once: the GEMM is rshmem-gemm's (the Hopper wgmma kernel on sm_90, the mma.sync one
//! elsewhere) with the hooks of `rshmem-tp`, which wait for peers' data tile by tile or send
//! partial tiles to their owners. bf16 in, f32 accumulation, bf16 out.
//!
//! # Rules of a fused call
//!
//! * **Collective.** Every PE of the job calls the fused ops of its `Ops` in the same
//!   sequence, each over a team it belongs to ([`FusedOptions::team`]; the job may be split
//!   into several teams that call at the same time), with the same shape and kernel: each call
//!   is numbered (its epoch) the same everywhere, and a workspace that has to grow is
//!   allocated by every PE at the same call.
//! * **In order.** The fused calls of one `Ops` run one after another in issue order, on
//!   whatever streams they are queued; other work on the given stream is ordered as usual.
//! * **Rows.** `m` is divisible by the team's size `n`; rank `r` of the team owns rows
//!   `r * m / n .. (r + 1) * m / n` (its chunk). Any `m` (a chunk need not be a whole number of
//!   tiles), `n` and `k` as [`GemmShape`](crate::GemmShape) allows.
//! * **Peers mapped.** The team's PEs reach each other's memory directly (one node: NVLink or
//!   one GPU); where `shmem::ptr` finds no mapping the reduce-scatter stores element by element
//!   through NVSHMEM (correct, slow).
//!
//! The ordering arguments (why a tile never reads a chunk before it arrived, why a reduction
//! never reads a partial before it is complete, why buffers can be reused across calls) are in
//! `rshmem-tp` (`kernels/tp/src/{ag,rs,barrier}.rs`), where the code makes them;
//! `docs/fused.md` has the overview and the choice of how data moves.

pub(crate) mod calls;

use crate::gemm::shape::Kernel;
use rshmem_host::Team;
use std::time::Duration;

/// The sm_90a image of the `tp90` family (the fused ops on the Hopper GEMM).
pub static IMAGE90: rshmem_host::KernelImage = rshmem_host::include_kernels!("rshmem-ops-tp90");

/// The sm_80 and sm_90 image of the `tp80` family (the fused ops on the `mma.sync` GEMM, the
/// calls' barrier and the reduce-scatter's fix-up).
pub static IMAGE80: rshmem_host::KernelImage = rshmem_host::include_kernels!("rshmem-ops-tp80");

/// Options of the fused calls (`Ops::*_with`).
///
/// ```
/// use rshmem_ops::{FusedOptions, Kernel};
/// let opts = FusedOptions { kernel: Kernel::Sm80, ..FusedOptions::default() };
/// assert_eq!(opts.team, rshmem_host::Team::WORLD);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FusedOptions {
    /// The team the rows are split over (this PE's handle of it; [`Team::WORLD`] by default).
    pub team: Team,
    /// The GEMM kernel; [`Kernel::Auto`] unless a test or benchmark forces one. Every PE of
    /// the team must run the same one.
    pub kernel: Kernel,
    /// For tests: how long this PE waits on the host, after the call's barrier is queued,
    /// before it queues what sends its data to the peers (the all-gather's copies of its
    /// chunk; the reduce-scatter's GEMM, which stores the partial tiles), so that its data
    /// arrives last. Zero by default.
    pub send_delay: Duration,
}

impl Default for FusedOptions {
    fn default() -> Self {
        Self {
            team: Team::WORLD,
            kernel: Kernel::Auto,
            send_delay: Duration::ZERO,
        }
    }
}

/// The call all-gather + GEMM errors name.
pub(crate) const AG_CALL: &str = "Ops::all_gather_gemm";
/// The call GEMM + reduce-scatter errors name.
pub(crate) const RS_CALL: &str = "Ops::gemm_reduce_scatter";
