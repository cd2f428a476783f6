//! Builds the examples' kernel crate (`testing/kernels/examples`) to PTX and cubin for Hopper
//! and Ampere, and the stand-in user crate (`testing/kernels/user`) likewise plus its
//! simulator library.

use rshmem_builder::{Arch, Builder};

fn main() {
    Builder::new("../kernels/examples")
        .arch(Arch::Sm90)
        .arch(Arch::Sm80)
        .build()
        .unwrap_or_else(|e| panic!("building testing/kernels/examples for the GPU failed:\n{e}"));
    Builder::new("../kernels/user")
        .arch(Arch::Sm90)
        .arch(Arch::Sm80)
        .sim_library(true)
        .build()
        .unwrap_or_else(|e| panic!("building testing/kernels/user failed:\n{e}"));
    println!("cargo:rerun-if-changed=build.rs");
}
