//! The sm_90a GEMMs of the fused MoE layer (`rshmem::ops::Ops::moe_layer`;
//! [`rshmem_moe::layer`] has the steps and their ordering): [`rshmem_gemm::sm90::gemm`] with
//! bf16 inputs, f32 accumulation, the experts' weights N x K (`out x in`, a `Linear`'s),
//! one group per local expert in the masked layout of the dispatch's `recv_count`:
//!
//! * `moe_gate_up90` (every rank peer-mapped) and `moe_gate_up90_unmapped` (NVSHMEM's waits):
//!   `act = SwiGLU(recv_x · W₁ᵀ)` — [`ArrivalSchedule`] (a tile's loads wait for its rows'
//!   arrival flags) and [`SwiGlu`] (W₁'s gate and up rows interleaved by pairs); A is
//!   `recv_x` (`problem.m` rows of `hidden`), C's `2 × intermediate` columns become `act`'s
//!   `intermediate`;
//! * `moe_down90`: `act · W₂ᵀ`, each row stored on its source rank ([`SendRows`]).
//!
//! Launch each with 1-D blocks of [`sm90::THREADS`], [`sm90::SHARED_BYTES`] of shared memory
//! and at most one block per SM, after the layer's `moe_layer_send` (the `moe` family) on the
//! same stream; B's maps are 3-D (`{hidden, 2 intermediate, experts}`, `{intermediate,
//! hidden, experts}`).

use rshmem_device::bf16;
use rshmem_device::prelude::*;
pub use rshmem_gemm::sm90;
use rshmem_gemm::{GroupRows, Grouped, Problem, Sm90Maps, SwiGlu};
use rshmem_moe::layer::{ArrivalSchedule, LayerBufs, Ranks, SendRows};
use rshmem_moe::MoeCall;

/// The GEMMs' arguments: `(maps, problem, rows, ranks, lb, call)`.
pub type Args = (Sm90Maps, Problem, GroupRows, Ranks, LayerBufs, MoeCall);

/// The gate/up kernel for a team whose every rank is reached through a peer mapping
/// (`MAPPED`: its waits spin on the flags) or not (NVSHMEM's waits), from this module's table.
#[cfg(not(target_arch = "nvptx64"))]
pub trait GateUp90<const MAPPED: bool> {
    /// The kernel.
    type Kernel: rshmem_device::Kernel<Args = Args>;
}

/// Which of the gate/up kernels a call runs: `MAPPED` or not.
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug)]
pub struct Waits<const MAPPED: bool>;

macro_rules! gate_up90 {
    ($($name:ident: $mapped:literal;)*) => {$(
        #[doc = concat!("The gate/up GEMM with SwiGLU (see the module docs); its waits for \
            `MAPPED = ", stringify!($mapped), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm90::gemm`] (launch shape; maps of bf16 over `recv_x`, `problem.m
        /// x hidden`, and W₁, `local x 2 intermediate x hidden`, in global memory; `problem.n`
        /// = 2 × intermediate); the contract of [`ArrivalSchedule::new`] (`rows` the masked
        /// layout of `lb.ll.recv_count`); `lb.act` holds `problem.m x intermediate`.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $name(
            maps: Sm90Maps,
            problem: Problem,
            rows: GroupRows,
            ranks: Ranks,
            lb: LayerBufs,
            call: MoeCall,
        ) {
            let _ = call;
            // SAFETY: after the layer's send (the contract).
            let schedule = unsafe {
                ArrivalSchedule::<{ sm90::BM }, true, $mapped>::new(ranks, lb, rows, problem)
            };
            let i = problem.n / 2;
            // SAFETY: `act` holds m x intermediate (the contract).
            let out = unsafe { MatrixMut::from_raw_parts(lb.act, problem.m, i, i) };
            // SAFETY: this kernel's contract is the mainloop's, the schedule's and the
            // epilogue's.
            unsafe { sm90::gemm::<bf16, _, _, false>(maps.a, maps.b, problem, schedule, SwiGlu { out }) }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl GateUp90<$mapped> for Waits<$mapped> {
            type Kernel = $name;
        }
    )*};
}

gate_up90! {
    moe_gate_up90: true;
    moe_gate_up90_unmapped: false;
}

/// The down GEMM, each row stored on its source (see the module docs).
///
/// # Safety
///
/// The contract of [`sm90::gemm`] (maps of bf16 over `act`, `problem.m x intermediate`, and
/// W₂, `local x hidden x intermediate`; `problem.n` = hidden); after this PE's gate/up GEMM of
/// the call; `rows` as for it; [`SendRows::new`]'s contract.
#[kernel(launch_bounds(384, 1))]
pub unsafe fn moe_down90(
    maps: Sm90Maps,
    problem: Problem,
    rows: GroupRows,
    ranks: Ranks,
    lb: LayerBufs,
    call: MoeCall,
) {
    // SAFETY: `recv_count` holds one count per local expert, unchanged while this runs.
    let schedule = unsafe { Grouped::new(rows, problem) };
    // SAFETY: after the gate/up GEMM (the contract).
    let epilogue = unsafe { SendRows::new(ranks, lb, call.hidden) };
    // SAFETY: this kernel's contract is the mainloop's, the schedule's and the epilogue's.
    unsafe { sm90::gemm::<bf16, _, _, false>(maps.a, maps.b, problem, schedule, epilogue) }
}
