//! The kernels rshmem ships, one module per program. Each `#[kernel]` is a PTX entry on the
//! GPU and a launchable type on the host (see `rshmem_device::kernel`).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

pub mod bandwidth;
pub mod basics;
pub mod conformance;
pub mod hello;
pub mod queue;
pub mod ring;
pub mod teams;
pub mod views;
