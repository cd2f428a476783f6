//! Builds rshmem's own kernels (`kernels/ops`, one module per op family behind a feature of
//! its name) into one image per family, so that editing one family relinks and reassembles
//! only its own image (the other images' nested builds never read the edited module).

use rshmem_builder::{Arch, Builder};

/// Each family: its feature (and module), and the architectures its image holds. The
/// wgmma/TMA families need sm_90a; the others run from sm_80 on.
const FAMILIES: &[(&str, &[Arch])] = &[
    ("gemm90", &[Arch::Sm90a]),
    ("gemm80", &[Arch::Sm80, Arch::Sm90]),
    ("tp90", &[Arch::Sm90a]),
    ("tp80", &[Arch::Sm80, Arch::Sm90]),
    ("coll", &[Arch::Sm80, Arch::Sm90]),
    ("moe", &[Arch::Sm80, Arch::Sm90]),
    ("moe90", &[Arch::Sm90a]),
];

fn main() {
    for &(family, archs) in FAMILIES {
        let image = format!("rshmem-ops-{family}");
        let builder = archs.iter().fold(
            Builder::new("../kernels/ops")
                .features([family])
                .image_name(image.as_str()),
            |b, &arch| b.arch(arch),
        );
        builder.build().unwrap_or_else(|e| {
            panic!("building {image} (kernels/ops, feature {family}) for the GPU failed:\n{e}")
        });
    }
    println!("cargo:rerun-if-changed=build.rs");
}
