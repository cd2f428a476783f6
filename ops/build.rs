//! Builds the ops' kernel crates, each into its own image: the Hopper GEMM for sm_90a (its
//! minutes of ptxas are paid only when it changes), the mma.sync GEMM for sm_80 and sm_90,
//! the collectives (`kernels/ops-coll`) for sm_80 and sm_90, and the fused tensor-parallel
//! kernels on each GEMM (ops-tp90: sm_90a; ops-tp80: sm_80 and sm_90, with the calls' barrier
//! and the reduce-scatter's fix-up).

use rshmem_builder::{Arch, Builder};

fn main() {
    Builder::new("../kernels/ops-sm90")
        .arch(Arch::Sm90a)
        .build()
        .unwrap_or_else(|e| panic!("building kernels/ops-sm90 for the GPU failed:\n{e}"));
    Builder::new("../kernels/ops-sm80")
        .arch(Arch::Sm80)
        .arch(Arch::Sm90)
        .build()
        .unwrap_or_else(|e| panic!("building kernels/ops-sm80 for the GPU failed:\n{e}"));
    Builder::new("../kernels/ops-coll")
        .arch(Arch::Sm80)
        .arch(Arch::Sm90)
        .build()
        .unwrap_or_else(|e| panic!("building kernels/ops-coll for the GPU failed:\n{e}"));
    // The fused tensor-parallel kernels: their own images, so that editing them rebuilds
    // neither GEMM image (and the other way round only through rshmem-gemm).
    Builder::new("../kernels/ops-tp90")
        .arch(Arch::Sm90a)
        .build()
        .unwrap_or_else(|e| panic!("building kernels/ops-tp90 for the GPU failed:\n{e}"));
    Builder::new("../kernels/ops-tp80")
        .arch(Arch::Sm80)
        .arch(Arch::Sm90)
        .build()
        .unwrap_or_else(|e| panic!("building kernels/ops-tp80 for the GPU failed:\n{e}"));
    println!("cargo:rerun-if-changed=build.rs");
}
