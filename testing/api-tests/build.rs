//! Builds the test fixtures' kernel crate (`testing/kernels/fixtures`) to PTX and cubin for Hopper and
//! Ampere (the same architectures as the examples' image, so the tests cover both), and once
//! more in the checked device mode (`rshmem-test-kernels-checked`, sm_90 only: the machine
//! that runs its GPU tests is a Hopper, and one more architecture would only cost build time).

use rshmem_builder::{Arch, Builder};

fn main() {
    Builder::new("../kernels/fixtures")
        .arch(Arch::Sm90)
        .arch(Arch::Sm80)
        .checked(false)
        .build()
        .unwrap_or_else(|e| panic!("building testing/kernels/fixtures for the GPU failed:\n{e}"));
    Builder::new("../kernels/fixtures")
        .image_name("rshmem-test-kernels-checked")
        .arch(Arch::Sm90)
        .checked(true)
        .build()
        .unwrap_or_else(|e| {
            panic!("building testing/kernels/fixtures (checked) for the GPU failed:\n{e}")
        });
    println!("cargo:rerun-if-changed=build.rs");
}
