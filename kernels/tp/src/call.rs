//! [`TpCall`]: what every kernel of a fused call is told about it — the GEMM's shape, the
//! team it runs over, and the call's epoch.
//!
//! ```
//! use rshmem_tp::TpCall;
//! // PE 1 of a 2-PE team made of world PEs 0 and 2; M = 300 rows, 150 per PE.
//! let call = TpCall::new((300, 64, 32), (0, 2, 2, 1));
//! assert_eq!((call.rows(), call.first_row(1), call.world_pe(1)), (150, 150, 2));
//! assert_eq!(call.owner(149), 0);
//! ```

use rshmem_device::KernelArg;
use rshmem_gemm::Problem;

/// One fused call as its kernels see it (a kernel argument).
///
/// * `m`, `n`, `k`: the GEMM each PE runs. All-gather + GEMM: `m` = M, every row of the
///   gathered A and of C; reduce-scatter: `m` = M too (every row of this PE's partial
///   product), and `k` is this PE's share of K.
/// * The team: its PE of rank `i` is world PE `start + i * stride` (NVSHMEM's teams are all
///   strided), `size` PEs, this PE is `rank`. Rows are split evenly: rank `r` owns rows
///   `r * rows() .. (r + 1) * rows()` (its chunk), `rows() = m / size`.
/// * `epoch`: the call's number on this `Ops`, the same on every PE (calls are collective
///   and issued in the same order everywhere), starting at 1. It is counted on the device,
///   not the host: a graph launches its recorded kernels with the same arguments every time,
///   so the host passes 0 ([`TpCall::new`]); the call's barrier adds 1 to this PE's counter
///   ([`crate::flags::EPOCH`]) and every later kernel of the call reads it on entry
///   ([`TpCall::load_epoch`]), so each launch of a graph is a new call. The barrier and tile
///   flags a call sets hold its epoch, and every wait on them is for `>= epoch`: they never
///   need resetting, and a flag set by a later call (which can only happen once this call is
///   over on the PE that waits, see [`crate::barrier`]) satisfies the wait too.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpCall {
    /// Rows of A and C (all PEs' rows).
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// The GEMM's reduction length on this PE.
    pub k: u32,
    /// World PE of the team's rank 0.
    pub start: u32,
    /// World PEs between consecutive ranks.
    pub stride: u32,
    /// PEs in the team.
    pub size: u32,
    /// This PE's rank in the team.
    pub rank: u32,
    /// Reduce-scatter: nonzero when the GEMM's epilogue waits for nothing and the fix-up
    /// reduces this rank's whole chunk ([`crate::rs`], "Where PEs share a GPU"); 0 otherwise
    /// (and for the all-gather). Also keeps the layout free of padding (`KernelArg`).
    pub reduce_after_gemm: u32,
    /// The call's number (see the type's docs): 0 as the host passes it.
    pub epoch: u64,
}

// SAFETY: `#[repr(C)]` of eight `u32` and a `u64` (40 bytes, 8-aligned, no padding): the same
// bytes and meaning on the host and the device.
unsafe impl KernelArg for TpCall {}

impl TpCall {
    /// The call for the GEMM `(m, n, k)` over the team `(start, stride, size, rank)`, as the
    /// host passes it (epoch 0: the kernels read it, [`TpCall::load_epoch`]).
    pub const fn new(
        (m, n, k): (u32, u32, u32),
        (start, stride, size, rank): (u32, u32, u32, u32),
    ) -> Self {
        Self {
            m,
            n,
            k,
            start,
            stride,
            size,
            rank,
            reduce_after_gemm: 0,
            epoch: 0,
        }
    }

    /// The call with its reduce-scatter reducing this rank's chunk after the GEMM, which then
    /// waits for no other PE ([`crate::rs`], "Where PEs share a GPU").
    pub const fn reducing_after_gemm(self) -> Self {
        Self {
            reduce_after_gemm: 1,
            ..self
        }
    }

    /// Whether the reduce-scatter reduces this rank's chunk after the GEMM
    /// ([`TpCall::reducing_after_gemm`]).
    #[inline(always)]
    pub const fn reduces_after_gemm(&self) -> bool {
        self.reduce_after_gemm != 0
    }

    /// The call with its epoch: this PE's call counter ([`crate::flags::EPOCH`]), which the
    /// call's barrier advanced. What every kernel of a call but the barrier does first.
    ///
    /// # Safety
    ///
    /// `flags` is this PE's copy of the call's flag buffer, and the call's barrier kernel
    /// ([`crate::barrier::barrier`]) ran before this kernel in stream order (the counter is
    /// written only there, so a plain load sees its value).
    #[inline(always)]
    pub unsafe fn load_epoch(self, flags: *const u64) -> Self {
        // SAFETY: the counter word lies in the buffer; its last write (this PE's barrier
        // kernel) finished before this kernel started (the contract).
        let epoch = unsafe { flags.add(crate::flags::EPOCH).read_volatile() };
        Self { epoch, ..self }
    }

    /// The GEMM this PE runs.
    #[inline(always)]
    pub const fn problem(&self) -> Problem {
        Problem {
            m: self.m,
            n: self.n,
            k: self.k,
        }
    }

    /// Rows per PE (each PE's chunk of A's or C's rows).
    #[inline(always)]
    pub const fn rows(&self) -> u32 {
        self.m / self.size
    }

    /// First row of rank `r`'s chunk.
    #[inline(always)]
    pub const fn first_row(&self, r: u32) -> u32 {
        r * self.rows()
    }

    /// The rank whose chunk holds `row` (`row < m`).
    #[inline(always)]
    pub const fn owner(&self, row: u32) -> u32 {
        row / self.rows()
    }

    /// The world PE number of rank `r`, as `shmem` calls take it.
    #[inline(always)]
    pub const fn world_pe(&self, r: u32) -> i32 {
        (self.start + r * self.stride) as i32
    }

    /// The ranks whose chunks the rows `row0 .. row0 + len` meet (`row0 < m`, `len > 0`;
    /// rows past `m` do not count), first and last.
    #[inline(always)]
    pub const fn owners(&self, row0: u32, len: u32) -> (u32, u32) {
        let end = if row0 + len < self.m {
            row0 + len
        } else {
            self.m
        };
        (self.owner(row0), self.owner(end - 1))
    }
}
