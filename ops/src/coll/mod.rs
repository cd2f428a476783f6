//! rshmem's own collectives: all-reduce (in place and out of place), reduce-scatter,
//! all-gather, all-gather with per-PE counts, and all-reduce + residual add + RMSNorm,
//! queued on a [`Stream`](rshmem_host::Stream) over a [`Team`](rshmem_host::Team), as Rust
//! kernels on the symmetric heap (`kernels/ops`' `coll` family, made of `rshmem_coll`'s
//! blocks). Unlike NVSHMEM's on-stream collectives they run where several PEs share a GPU.
//!
//! ```no_run
//! use rshmem_host::{ReduceOp, Team};
//! use rshmem_ops::Ops;
//!
//! rshmem_host::run(|shmem| -> rshmem_host::Result<()> {
//!     let ops = Ops::new(shmem)?;
//!     let stream = shmem.stream();
//!     let n = 1000;
//!     let x = shmem.alloc_from(&vec![1.0f32; n])?;
//!     let mut sum = shmem.alloc_zeroed::<f32>(n)?;
//!     ops.all_reduce(&stream, Team::WORLD, &x, &mut sum, n, ReduceOp::Sum)?;
//!     let mut all = shmem.alloc_zeroed::<f32>(n * shmem.n_pes())?;
//!     ops.all_gather(&stream, Team::WORLD, &x, &mut all, n)?;
//!     assert!(sum.to_vec()?.iter().all(|&v| v == shmem.n_pes() as f32));
//!     Ok(())
//! })
//! .unwrap();
//! ```
//!
//! **Rules** (NVSHMEM's and NCCL's): every member of the team makes the same collective calls
//! in the same order, with the same counts, operation and element type, and passes the same
//! symmetric buffers (allocated in the same order on every PE); only members call. Each call
//! checks its buffers' lengths and its arguments before anything is queued, and says what is
//! wrong. Sums are taken in team-rank order, so every member gets bitwise the same result.
//!
//! **Ranges.** Every buffer argument takes a whole buffer (`&x`, `&mut y`) or a range of one
//! (`x.range(..)?`, `y.range_mut(4096..8192)?`): the call reads and writes from the range's
//! first element, and nothing of the buffer outside it. Peers are reached at the same address
//! as here, so every member passes the same range (the same offset into the same buffer); a
//! call cannot check that. Any offset works: the kernels move 16-byte packs where every
//! pointer is 16-byte aligned, single elements elsewhere (slower at a misaligned offset).
//!
//! **Reductions of floats** ([`ReduceOp`](rshmem_host::ReduceOp) `Sum`, `Max`, `Min`). A NaN
//! on any member makes the result a NaN, for `Max` and `Min` as for a sum (`torch.max`'s rule
//! and IEEE 754-2019's `maximum`/`minimum`; C's `fmaxf` drops it; NVSHMEM's on-stream
//! `Stream::reduce` is NVSHMEM's own). Every NaN returned is the canonical one: `0x7FFF_FFFF` in
//! f32, `0x7FFF` in bf16 and f16, whatever the inputs' payloads. `Max` takes +0.0 over −0.0,
//! `Min` −0.0 over +0.0; ±∞ order as usual (`max(∞, NaN)` is NaN). The same bits from every
//! algorithm (the flag-in-data one takes no NaN for "not arrived"), team size and backend.
//!
//! **Workspace.** Each stream's collectives run in a *channel*: a symmetric allocation of
//! flags and staging slots (about `2 × PEs × 1 MiB` + `PEs × 512 KiB` up to 8 PEs), made the
//! first time a collective is queued on the stream and kept, reused by every later call on
//! it, until the [`Ops`](crate::Ops) is dropped. The algorithms stream through it in rounds,
//! so it never grows with the message. Making it is a symmetric allocation, which every PE
//! must make: the first collective on a stream must be over a team of every PE, or call
//! [`Ops::prepare_collectives`](crate::Ops::prepare_collectives) on every PE first. Streams
//! have channels of their own, so collectives on two streams may run at once; one stream's
//! collectives run one after another. A channel that does not fit the heap is an error naming
//! its size and the variable that sets the heap.
//!
//! **Algorithms** ([`Algorithm`], forced with
//! [`Ops::set_algorithm`](crate::Ops::set_algorithm)): flag-in-data one-shot for small
//! float all-reduces, one-shot through push slots for small and medium ones, two-shot above;
//! see [`plan`] for the thresholds and why. Teams not reachable through peer mappings
//! (several nodes) use the push slots with NVSHMEM puts.

pub mod elem;
pub mod plan;

mod api;
mod channels;

pub use elem::{CollElem, NormElem};
pub use plan::Algorithm;

/// The sm_80 and sm_90 image of the `coll` family of `kernels/ops` (the collectives).
pub static IMAGE: rshmem_host::KernelImage = rshmem_host::include_kernels!("rshmem-ops-coll");

pub(crate) use channels::State;
