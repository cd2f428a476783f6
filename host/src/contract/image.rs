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

impl KernelImage {
    /// Picks code for a device of compute capability `sm`: an exact cubin, else the PTX of
    /// the highest architecture not above `sm` (the driver JIT-compiles it).
    pub(crate) fn code_for(&self, sm: u32) -> Result<(u32, Code)> {
        if let Some(t) = self
            .targets
            .iter()
            .find(|t| t.sm == sm && t.cubin.is_some())
        {
            return Ok((t.sm, Code::Cubin(t.cubin.unwrap())));
        }
        self.targets
            .iter()
            .filter(|t| t.sm <= sm)
            .max_by_key(|t| t.sm)
            .map(|t| (t.sm, Code::Ptx(t.ptx)))
            .ok_or_else(|| Error::Module {
                module: self.name.to_string(),
                message: format!(
                    "no code for this GPU (sm_{sm}): the image has {}; add Arch::Sm{sm} to the builder",
                    self.targets
                        .iter()
                        .map(|t| format!("sm_{}", t.sm))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }

    /// The NVSHMEM version as `major.minor.patch`, if linked.
    pub fn nvshmem_version_string(&self) -> Option<String> {
        self.nvshmem_version.map(|(a, b, c)| format!("{a}.{b}.{c}"))
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
        let err = IMG.check_has("zz").unwrap_err().to_string();
        assert!(err.contains("`zz`") && err.contains("a, b"), "{err}");
    }
}
