//! The kernels of rshmem's examples (`examples/`), one module per program. Each `#[kernel]`
//! is a PTX entry on the GPU and a launchable type on the host (see `rshmem_device::kernel`).
//!
//! `testing/examples-image/build.rs` builds this crate's image, and only rshmem's examples, tests and
//! doctests depend on it (a dev-dependency of `rshmem`): applications never build it. Kernels
//! only tests launch live in `testing/kernels/fixtures` (`rshmem-test-kernels`); kernels that inline
//! NVSHMEM's collectives (minutes of ptxas) in `kernels/{conformance,teams,perftest}`.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

pub mod bandwidth;
pub mod gelu;
pub mod hello;
pub mod launch;
pub mod queue;
pub mod ring;
