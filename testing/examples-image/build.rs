//! Builds the examples' kernel crate (`testing/kernels/examples`) to PTX and cubin for Hopper and Ampere.

use rshmem_builder::{Arch, Builder};

fn main() {
    Builder::new("../kernels/examples")
        .arch(Arch::Sm90)
        .arch(Arch::Sm80)
        .build()
        .unwrap_or_else(|e| panic!("building testing/kernels/examples for the GPU failed:\n{e}"));
    println!("cargo:rerun-if-changed=build.rs");
}
