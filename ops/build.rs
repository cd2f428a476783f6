//! Builds the ops' kernel crates, each into its own image: the Hopper GEMM for sm_90a (its
//! minutes of ptxas are paid only when it changes).

use rshmem_builder::{Arch, Builder};

fn main() {
    Builder::new("../kernels/ops-sm90")
        .arch(Arch::Sm90a)
        .build()
        .unwrap_or_else(|e| panic!("building kernels/ops-sm90 for the GPU failed:\n{e}"));
    println!("cargo:rerun-if-changed=build.rs");
}
