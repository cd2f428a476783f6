//! Builds the kernels rshmem ships (`kernels/`) to PTX and cubin for Hopper and Ampere.

fn main() {
    let out = rshmem_builder::Builder::new("kernels")
        .arch(rshmem_builder::Arch::Sm90)
        .arch(rshmem_builder::Arch::Sm80)
        .build()
        .unwrap_or_else(|e| panic!("building kernels/ for the GPU failed:\n{e}"));
    println!("cargo:rerun-if-changed=build.rs");
    let _ = out;
}
