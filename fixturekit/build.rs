//! Builds the test fixtures' kernel crate (`kernels/fixtures`) to PTX and cubin for Hopper and
//! Ampere (the same architectures as the examples' image, so the tests cover both).

use rshmem_builder::{Arch, Builder};

fn main() {
    Builder::new("../kernels/fixtures")
        .arch(Arch::Sm90)
        .arch(Arch::Sm80)
        .build()
        .unwrap_or_else(|e| panic!("building kernels/fixtures for the GPU failed:\n{e}"));
    println!("cargo:rerun-if-changed=build.rs");
}
