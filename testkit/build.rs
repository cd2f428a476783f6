//! Builds the heavy kernel crates to PTX and cubin, each into its own image. One crate's edit
//! reruns this script for all of them, but the builder links again only the crate whose rlibs
//! changed (it reuses the others' PTX and cubin).

use rshmem_builder::{Arch, Builder};

fn main() {
    for krate in ["../kernels/conformance", "../kernels/teams"] {
        Builder::new(krate)
            .arch(Arch::Sm90)
            .arch(Arch::Sm80)
            .build()
            .unwrap_or_else(|e| panic!("building {krate} for the GPU failed:\n{e}"));
    }
    println!("cargo:rerun-if-changed=build.rs");
}
