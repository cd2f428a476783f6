//! # rshmem-coll
//!
//! The collectives of rshmem's kernels as device functions: block-level building blocks a
//! kernel calls to move and combine tiles between the PEs of a team, and the algorithms
//! (all-reduce, reduce-scatter, all-gather, all-reduce + RMSNorm) made of them. rshmem's
//! `ops` launch these algorithms (`kernels/ops`' `coll` family); a fused kernel (an all-gather feeding
//! a GEMM, a GEMM whose epilogue pushes tiles to their owners) calls the same blocks.
//!
//! | module | what |
//! |---|---|
//! | [`elem`] | element types (bf16, f16, f32, i32, i64) and reductions (sum, max, min; a NaN propagates, as in `torch.max`), generic |
//! | [`pack`] | 16-byte packs: vector loads and stores, lane-wise reduction |
//! | [`peers`] | a team as a kernel sees it: ranks, world PE numbers, members' copies of a buffer |
//! | [`tile`] | block-level: reduce a tile from every member ([`tile::reduce_tile`]), push a tile to its owner ([`tile::push_tile`]), copy |
//! | [`signal`] | signal and wait per chunk at system scope (release/acquire), and [`signal::Steps`], the pairwise step flags the collectives synchronise with |
//! | [`lamport`] | flag-in-data tiles: publish, poll-and-empty, reduce |
//! | [`channel`] | the symmetric workspace of one stream's collectives, and its layout |
//! | [`algo`] | the algorithms: push rounds, two-shot, flag-in-data, all-gather, all-reduce + RMSNorm |
//!
//! Every building block is called by every thread of a block with the same arguments (the
//! `thread` forms of [`signal`] by one thread). Element-wise work goes in 16-byte packs where
//! every pointer is 16-byte aligned, element by element elsewhere, so any count works.
//!
//! **Memory ordering.** Peers' memory is reached with plain loads and stores through peer
//! mappings (`shmem::ptr`: NVLink, or one GPU shared by several PEs), or with NVSHMEM puts
//! where there is none. Nothing is ordered until a [`signal`]: the producer's block barrier
//! and `st.release.sys` (or `fence` + `signal_op`) after its writes, the consumer's wait,
//! `fence.acq_rel.sys` and block barrier before its reads. [`lamport`] tiles need neither:
//! each 32-bit word of the data says whether it has arrived.
//!
//! **Floats' special values.** `Max` and `Min` propagate NaN (any NaN in, NaN out: IEEE
//! `maximum`/`minimum`, `torch.max`'s rule, not `fmaxf`'s), order −0 below +0 and keep ±∞; every
//! NaN a reduction returns, sums' included, is the canonical one (`0x7FFF_FFFF` in f32, `0x7FFF`
//! in bf16/f16). Every algorithm and backend gives the same bits: [`elem`] has the rule.
//!
//! # Example: a kernel that sums a tile over the team, then signals a consumer
//!
//! ```ignore
//! use rshmem_coll::{elem::Sum, peers::Peers, signal, tile};
//! use rshmem_device::prelude::*;
//!
//! /// `y[off..off + len] = Σ over members of x[off..off + len]` on this PE, then tells PE
//! /// `consumer` through its `flag` (value `epoch`). Peer-mapped teams of up to 8.
//! #[kernel]
//! pub unsafe fn sum_tile(team: Team, x: *const f32, y: *mut f32, off: u32, len: u32,
//!                        flag: *mut u64, epoch: u64, consumer: i32) {
//!     let peers = Peers::of(team);
//!     // SAFETY: x is symmetric; every member has written its x before this kernel (a Steps
//!     // exchange or the host's barrier ordered it).
//!     let xs = unsafe { peers.mapped(x) }.expect("peer-mapped team");
//!     let srcs: [*const f32; 8] =
//!         core::array::from_fn(|r| unsafe { xs[r].add(off as usize) }.cast_const());
//!     unsafe {
//!         tile::reduce_tile::<f32, Sum>(&[y.add(off as usize)], &srcs[..peers.n as usize], len as usize);
//!         signal::signal_block(flag, epoch, consumer);
//!     }
//! }
//! ```
//!
//! The simulator runs all of it (the crate is built for the host too); the unit tests below
//! check the pure parts, and `ops/tests/coll.rs` runs the algorithms on 2 to 4 simulated PEs.

#![no_std]
#![allow(clippy::too_many_arguments)]

#[cfg(test)]
extern crate std;

pub mod algo;
pub mod channel;
pub mod elem;
pub mod lamport;
pub mod pack;
pub mod peers;
pub mod signal;
pub mod tile;

pub use channel::{Channel, Shape};
pub use elem::{Elem, Max, Min, Reduce, Sum};
pub use peers::{Peers, MAX_PEERS};
