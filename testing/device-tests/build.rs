//! Builds the heavy kernel crates to PTX and cubin, each into its own image. One crate's edit
//! reruns this script for all of them, but the builder links again only the crate whose rlibs
//! changed (it reuses the others' PTX and cubin).

use rshmem_builder::{Arch, Builder};

fn main() {
    let both = [Arch::Sm90, Arch::Sm80];
    // The perftest measures H200s (sm_90) beside a CUDA C++ twin built for sm_90 alone; each
    // more architecture would cost its collectives' minutes of ptxas again.
    let hopper = [Arch::Sm90];
    // wgmma and setmaxnreg exist only in sm_90a code (which runs on sm_90 GPUs alone).
    let sm90a = [Arch::Sm90a];
    for (krate, archs) in [
        ("../kernels/conformance", &both[..]),
        ("../kernels/teams", &both[..]),
        ("../kernels/perftest", &hopper[..]),
        // stmatrix needs sm_90 (the rest of the tensor-core kernels would run on sm_80).
        ("../kernels/tensor", &hopper[..]),
        ("../kernels/hopper", &sm90a[..]),
    ] {
        archs
            .iter()
            .fold(Builder::new(krate), |b, &arch| b.arch(arch))
            .build()
            .unwrap_or_else(|e| panic!("building {krate} for the GPU failed:\n{e}"));
    }
    println!("cargo:rerun-if-changed=build.rs");
}
