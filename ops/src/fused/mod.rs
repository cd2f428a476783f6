//! The fused tensor-parallel family: [`Ops::all_gather_gemm`](crate::Ops::all_gather_gemm) and
//! [`Ops::gemm_reduce_scatter`](crate::Ops::gemm_reduce_scatter) (their calls in `calls.rs`),
//! their options ([`FusedOptions`]) and what the calls promise.
//!
//! [`Ops::all_gather_gemm`](crate::Ops::all_gather_gemm) and
//! [`Ops::gemm_reduce_scatter`](crate::Ops::gemm_reduce_scatter) compute and communicate at
//! once: the GEMM is rshmem-gemm's (the Hopper wgmma kernel on sm_90, the mma.sync one
//! elsewhere) with the schedules and epilogues of `rshmem-tp`, which wait for peers' data tile by tile or send
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
//! * **Ranges.** `a`, `b` and `c` are buffers or ranges of them (`a.range_mut(off..)?`); a
//!   matrix starts at its range's first element, A and B 16-byte aligned, C at a multiple of
//!   two elements ([`Ops::gemm`](crate::Ops::gemm)'s rule; refused otherwise). The all-gather
//!   copies each chunk into the other ranks' `a` at the address it has here, so every PE
//!   passes the same range of `a` (the same offset into the same buffer).
//! * **Peers mapped.** The team's PEs reach each other's memory directly (one node: NVLink or
//!   one GPU); where `shmem::ptr` finds no mapping the reduce-scatter stores element by element
//!   through NVSHMEM (correct, slow).
//!
//! # Graphs
//!
//! A fused call queued on a stream that records a graph ([`Stream::capture`]) is recorded,
//! and each launch of the graph is a new call on the data the buffers hold then (write the
//! inputs in stream order before the launch). The kernels count the calls on the device, so
//! launches of a graph and eager calls of the same `Ops` may be mixed in any sequence, with
//! these rules:
//!
//! * **Made once first.** The first call of a shape, team and buffers is not recordable: it
//!   may allocate or grow the `Ops`' workspace (flags, the reduce-scatter's slots) and, on the
//!   sm90 path, fill the operands' tensor-map slot — host work a graph cannot replay. Make the
//!   same call once outside the capture (refused with [`Error::Capture`] otherwise).
//! * **The workspace stays.** A live graph pins the workspace its calls point into: a later
//!   eager call that would need a larger one is refused ([`Error::Unsupported`]) until the
//!   graphs are dropped (on every PE: the refusal must be the same everywhere). Make the
//!   largest call first.
//! * **Collective.** Every PE launches the graph at the same point of its sequence of fused
//!   calls, as it would make the calls it holds.
//! * **Ordered by its stream.** Eager fused calls order themselves after the previous fused
//!   call on any stream; a graph launch is ordered only by the stream it is launched on. Launch
//!   it on the stream the previous fused calls were queued on (or one that waits for it), and
//!   queue the next ones there too (or make their stream wait for it).
//!
//! [`Stream::capture`]: rshmem_host::Stream::capture
//! [`Error::Capture`]: rshmem_host::Error::Capture
//! [`Error::Unsupported`]: rshmem_host::Error::Unsupported
//!
//! The ordering arguments (why a tile never reads a chunk before it arrived, why a reduction
//! never reads a partial before it is complete, why buffers can be reused across calls) are in
//! `rshmem-tp` (`kernels/tp/src/{ag,rs,barrier}.rs`), where the code makes them;
//! `docs/fused.md` has the overview and the choice of how data moves.

pub(crate) mod calls;

use crate::gemm::shape::Kernel;
use rshmem_host::Team;

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
    /// Where the call waits for the other PEs' data; [`Waits::Auto`] unless a test or
    /// benchmark forces one. Every PE of the team must use the same.
    pub waits: Waits,
}

impl Default for FusedOptions {
    fn default() -> Self {
        Self {
            team: Team::WORLD,
            kernel: Kernel::Auto,
            waits: Waits::Auto,
        }
    }
}

/// Where a fused call waits for the other PEs' data ([`FusedOptions::waits`]; the arguments
/// are in `rshmem-tp`'s `ag` and `rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Waits {
    /// [`Waits::InGemm`] where the PE has its GPU to itself, [`Waits::OutsideGemm`] where PEs
    /// share one (MPS or time-slicing).
    #[default]
    Auto,
    /// In the GEMM, tile by tile: the all-gather's tiles wait for their chunk, the
    /// reduce-scatter's epilogue adds the peers' partials of this rank's rows as they arrive
    /// (the rows of tiles that straddle two ranks' chunks after the GEMM). Communication
    /// overlaps the GEMM, but its blocks wait for work of other PEs' kernels: every PE's
    /// grid must be resident at once, which MPS does not promise (four PEs sharing an H100
    /// hung).
    InGemm,
    /// Outside the GEMM, which then waits for nothing: the all-gather waits for every chunk
    /// before it, the reduce-scatter sends every partial row to its owner and reduces this
    /// rank's rows after it, in one pass (its own partial is rounded to bf16 before the sum
    /// too, within the same error bound). One block per PE waits.
    OutsideGemm,
}

impl Waits {
    /// Whether a call on a PE whose GPU is shared (`shared`) or not waits outside its GEMM.
    pub(crate) fn outside_gemm(self, shared: bool) -> bool {
        match self {
            Waits::Auto => shared,
            Waits::InGemm => false,
            Waits::OutsideGemm => true,
        }
    }
}

/// The call all-gather + GEMM errors name.
pub(crate) const AG_CALL: &str = "Ops::all_gather_gemm";
/// The call GEMM + reduce-scatter errors name.
pub(crate) const RS_CALL: &str = "Ops::gemm_reduce_scatter";
