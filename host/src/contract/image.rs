//! Kernel images, as rshmem-builder embeds them ([`KernelImage`]), and which code of one a
//! GPU runs.

use super::error::{Error, Result};

/// A kernel crate as built by rshmem-builder: PTX (and cubin where ptxas ran) per GPU
/// architecture, the kernel names, and the NVSHMEM version linked in. Made by
/// [`crate::include_kernels!`].
#[derive(Clone, Copy, Debug)]
pub struct KernelImage {
    /// The kernel crate's name.
    pub name: &'static str,
    /// `(major, minor, patch)` of the NVSHMEM device library linked in; `None` if the
    /// kernels call no NVSHMEM function.
    pub nvshmem_version: Option<(u32, u32, u32)>,
    /// The `#[kernel]` entry points in the PTX.
    pub kernels: &'static [&'static str],
    /// Each kernel's parameter list as written (`("scale", "x: *mut f32, n: u32, k: f32")`),
    /// for launches whose arguments are checked at run time (the Python bindings); `&[]` in
    /// images made before the builder recorded them.
    pub signatures: &'static [(&'static str, &'static str)],
    /// Code per architecture.
    pub targets: &'static [TargetImage],
}

/// The code for one GPU architecture.
#[derive(Clone, Copy, Debug)]
pub struct TargetImage {
    /// Compute capability as `major * 10 + minor` (90 for `sm_90`).
    pub sm: u32,
    /// The PTX text.
    pub ptx: &'static str,
    /// The cubin ptxas made from it, where ptxas was available at build time.
    pub cubin: Option<&'static [u8]>,
}

/// Which code of an image a device runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Code {
    Cubin(&'static [u8]),
    Ptx(&'static str),
}

impl TargetImage {
    /// Whether the PTX targets an architecture-specific variant (`.target sm_90a`): such code
    /// runs on exactly its compute capability, never on a later one. Read from the PTX, so
    /// images made before the builder knew `Arch::Sm90a` keep their meaning.
    pub fn arch_specific(&self) -> bool {
        self.ptx
            .lines()
            .find_map(|l| l.trim_start().strip_prefix(".target"))
            .and_then(|rest| rest.split([' ', ',', '\t']).find(|w| !w.is_empty()))
            .is_some_and(|arch| arch.starts_with("sm_") && arch.ends_with('a'))
    }

    /// `sm_90` or `sm_90a`, for messages.
    fn name(&self) -> String {
        format!(
            "sm_{}{}",
            self.sm,
            if self.arch_specific() { "a" } else { "" }
        )
    }
}

impl KernelImage {
    /// Picks code for a device of compute capability `sm`. Candidates are the
    /// architecture-specific targets of exactly `sm` (`sm_90a` on an sm_90 GPU) and the
    /// portable targets not above `sm`; the best is architecture-specific first, then the
    /// highest, and its cubin is used where it was made for exactly `sm`, else its PTX (the
    /// driver JIT-compiles it).
    pub(crate) fn code_for(&self, sm: u32) -> Result<(u32, Code)> {
        self.targets
            .iter()
            .filter(|t| if t.arch_specific() { t.sm == sm } else { t.sm <= sm })
            .max_by_key(|t| (t.arch_specific(), t.sm, t.cubin.is_some()))
            .map(|t| match t.cubin {
                Some(cubin) if t.sm == sm => (t.sm, Code::Cubin(cubin)),
                _ => (t.sm, Code::Ptx(t.ptx)),
            })
            .ok_or_else(|| Error::Module {
                module: self.name.to_string(),
                message: format!(
                    "no code for this GPU (sm_{sm}): the image has {}; add Arch::Sm{sm} to the builder",
                    self.targets
                        .iter()
                        .map(TargetImage::name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }

    /// The NVSHMEM version as `major.minor.patch`, if linked.
    pub fn nvshmem_version_string(&self) -> Option<String> {
        self.nvshmem_version.map(|(a, b, c)| format!("{a}.{b}.{c}"))
    }

    /// Kernel `kernel`'s parameter list as the builder recorded it, if it did.
    pub fn signature(&self, kernel: &str) -> Option<&'static str> {
        self.signatures
            .iter()
            .find(|(k, _)| *k == kernel)
            .map(|&(_, s)| s)
    }

    pub(crate) fn check_has(&self, kernel: &str) -> Result<()> {
        if self.kernels.contains(&kernel) {
            Ok(())
        } else {
            Err(Error::Module {
                module: self.name.to_string(),
                message: format!(
                    "no kernel `{kernel}` in this image (it has: {})",
                    self.kernels.join(", ")
                ),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static IMG: KernelImage = KernelImage {
        name: "k",
        nvshmem_version: Some((3, 4, 5)),
        kernels: &["a", "b"],
        signatures: &[("a", "x: *mut f32")],
        targets: &[
            TargetImage {
                sm: 80,
                ptx: "ptx80",
                cubin: Some(b"c80"),
            },
            TargetImage {
                sm: 90,
                ptx: "ptx90",
                cubin: None,
            },
        ],
    };

    /// An image with portable sm_80 code and Hopper-specific sm_90a code, as device-tests builds
    /// the Hopper kernels.
    static HOPPER: KernelImage = KernelImage {
        name: "h",
        nvshmem_version: None,
        kernels: &["a"],
        signatures: &[],
        targets: &[
            TargetImage {
                sm: 90,
                ptx: "//\n.version 8.6\n.target sm_90a\n.address_size 64\n",
                cubin: Some(b"c90a"),
            },
            TargetImage {
                sm: 80,
                ptx: ".version 8.6\n.target sm_80\n",
                cubin: Some(b"c80"),
            },
        ],
    };

    #[test]
    fn prefers_sm90a_on_sm90_only() {
        assert!(HOPPER.targets[0].arch_specific() && !HOPPER.targets[1].arch_specific());
        assert!(!IMG.targets[1].arch_specific());
        assert_eq!(HOPPER.code_for(90).unwrap(), (90, Code::Cubin(b"c90a")));
        // sm_90a code never runs on a later GPU: those get the portable sm_80 PTX.
        assert_eq!(
            HOPPER.code_for(100).unwrap(),
            (80, Code::Ptx(".version 8.6\n.target sm_80\n"))
        );
        assert_eq!(
            HOPPER.code_for(89).unwrap(),
            (80, Code::Ptx(".version 8.6\n.target sm_80\n"))
        );
        assert_eq!(HOPPER.code_for(80).unwrap(), (80, Code::Cubin(b"c80")));
        let err = HOPPER.code_for(75).unwrap_err().to_string();
        assert!(err.contains("sm_90a, sm_80"), "{err}");
        // Alone, sm_90a code has nothing for other GPUs.
        let only = KernelImage {
            targets: &HOPPER.targets[..1],
            ..HOPPER
        };
        assert!(only.code_for(100).is_err() && only.code_for(90).is_ok());
    }

    #[test]
    fn picks_exact_cubin_then_best_ptx() {
        assert_eq!(IMG.code_for(80).unwrap(), (80, Code::Cubin(b"c80")));
        assert_eq!(IMG.code_for(90).unwrap(), (90, Code::Ptx("ptx90")));
        assert_eq!(IMG.code_for(100).unwrap(), (90, Code::Ptx("ptx90")));
        assert_eq!(IMG.code_for(86).unwrap(), (80, Code::Ptx("ptx80")));
        let err = IMG.code_for(75).unwrap_err().to_string();
        assert!(
            err.contains("sm_75") && err.contains("sm_80, sm_90"),
            "{err}"
        );
    }

    #[test]
    fn names_missing_kernels() {
        assert!(IMG.check_has("a").is_ok());
        assert_eq!(IMG.signature("a"), Some("x: *mut f32"));
        assert_eq!(IMG.signature("b"), None);
        let err = IMG.check_has("zz").unwrap_err().to_string();
        assert!(err.contains("`zz`") && err.contains("a, b"), "{err}");
    }
}
