//! Builds the examples' kernel crate (`testing/kernels/examples`) to PTX and cubin for Hopper
//! and Ampere, and the stand-in user crate (`testing/kernels/user`) likewise plus its
//! simulator library.

use rshmem_builder::{Arch, Builder};

fn main() {
    // RSHMEM_QUEUE_PHASES=1: a diagnostic image whose queue times its batches by phase
    // (queue_bench prints them, docs/queue.md); off, the crate's default features.
    let phases = std::env::var("RSHMEM_QUEUE_PHASES").is_ok_and(|v| v == "1");
    let mut examples = Builder::new("../kernels/examples")
        .arch(Arch::Sm90)
        .arch(Arch::Sm80);
    if phases {
        examples = examples.features(["queue-phases"]);
    }
    examples
        .build()
        .unwrap_or_else(|e| panic!("building testing/kernels/examples for the GPU failed:\n{e}"));
    Builder::new("../kernels/user")
        .arch(Arch::Sm90)
        .arch(Arch::Sm80)
        .sim_library(true)
        .build()
        .unwrap_or_else(|e| panic!("building testing/kernels/user failed:\n{e}"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RSHMEM_QUEUE_PHASES");
}
