//! The kernels rshmem ships, one module per program. Each `#[kernel]` is a PTX entry on the
//! GPU and a launchable type on the host (see `rshmem_device::kernel`).
//!
//! Only kernels that build fast belong here: this crate is built to PTX and cubin by every
//! build of `rshmem`. Kernels that inline NVSHMEM's collectives (seconds of ptxas each) live
//! in crates of their own under `kernels/` (`conformance`, `teams`), built by `testkit/`.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

pub mod bandwidth;
pub mod basics;
pub mod hello;
pub mod queue;
pub mod ring;
pub mod streams;
pub mod views;
