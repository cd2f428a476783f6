//! Builds the ops' kernel crates, each into its own image: the Hopper GEMM for sm_90a (its
//! minutes of ptxas are paid only when it changes).
//!
//! `cfg(rshmem_ops_sm80)` marks the code of the sm_80 GEMM path (`rshmem-ops-sm80-kernels`,
//! image `SM80`), compiled once that crate is part of the workspace and built here.

use rshmem_builder::{Arch, Builder};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rshmem_ops_sm80)");
    Builder::new("../kernels/ops-sm90")
        .arch(Arch::Sm90a)
        .build()
        .unwrap_or_else(|e| panic!("building kernels/ops-sm90 for the GPU failed:\n{e}"));
    println!("cargo:rerun-if-changed=build.rs");
}
