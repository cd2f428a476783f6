//! What one [`Builder::build`](crate::Builder::build) will do, settled before anything runs:
//! the builder's settings with the environment's overrides (`RSHMEM_ARCH`,
//! `RSHMEM_DEVICE_DEBUG`, `RSHMEM_SIM_LIBRARY`), the kernel crate's name, and the folders; and
//! whether ptxas runs (`RSHMEM_NO_PTXAS`).

use crate::arch::Arch;
use crate::error::{io, Error, Result};
use crate::{locate, Builder};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Every variable the builder reads: a change to any of them reruns the build script.
const WATCHED_ENV: &[&str] = &[
    "NVSHMEM_HOME",
    "CUDA_HOME",
    "CUDA_PATH",
    "RSHMEM_ARCH",
    "RSHMEM_DEVICE_DEBUG",
    "RSHMEM_CHECKED",
    "RSHMEM_CACHE_DIR",
    "RSHMEM_OFFLINE",
    "RSHMEM_NO_PTXAS",
    "RSHMEM_SIM_LIBRARY",
];

/// A build's settled inputs.
pub(crate) struct Plan {
    /// The kernel crate's manifest.
    pub manifest: PathBuf,
    /// Its package name (the name `include_kernels!` takes).
    pub name: String,
    /// The architectures, in order.
    pub archs: Vec<Arch>,
    /// Device debug info.
    pub debug: bool,
    /// The checked device mode (`--cfg rshmem_checked`).
    pub checked: bool,
    /// The kernel crate's features (`None`: its defaults).
    pub features: Option<Vec<String>>,
    /// Where the PTX, cubins and image source go.
    pub out_dir: PathBuf,
    /// The nested builds' folder (one subfolder per architecture).
    pub target_root: PathBuf,
    /// Build the simulator library too (`Builder::sim_library`, or `RSHMEM_SIM_LIBRARY=1`).
    pub sim_library: bool,
}

impl Plan {
    /// Settles `builder`'s settings against the environment; prints the variables to watch.
    pub(crate) fn new(builder: &Builder) -> Result<Plan> {
        for var in WATCHED_ENV {
            println!("cargo:rerun-if-env-changed={var}");
        }
        let archs = match std::env::var("RSHMEM_ARCH") {
            Ok(list) if !list.trim().is_empty() => list
                .split(',')
                .map(Arch::from_str)
                .collect::<Result<Vec<_>>>()?,
            _ if builder.archs.is_empty() => vec![Arch::Sm90],
            _ => builder.archs.clone(),
        };
        let debug = builder.debug || env_flag("RSHMEM_DEVICE_DEBUG");
        let checked = builder
            .checked
            .or_else(|| std::env::var_os("RSHMEM_CHECKED").map(|v| v != "0"))
            .unwrap_or(debug);
        let out_dir = match &builder.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or(Error::MissingEnv("OUT_DIR"))?),
        };
        let manifest = builder.krate.join("Cargo.toml");
        let name = match &builder.image_name {
            Some(name) => name.clone(),
            None => package_name(&manifest)?,
        };
        let target_root = match &builder.target_dir {
            Some(d) => d.clone(),
            // Shared by every kernel crate built into this outer target folder: `core` for
            // nvptx64 compiles once per architecture. Packages are told apart by name (cargo's
            // hashes of path packages are relative to their workspace, so two crates of the same
            // name could collide; within one workspace, names are unique).
            None => outer_target_dir(&out_dir).join("rshmem-device"),
        };
        Ok(Plan {
            manifest,
            name,
            archs,
            debug,
            checked,
            features: builder.features.clone(),
            out_dir,
            target_root,
            sim_library: builder.sim_library || env_flag("RSHMEM_SIM_LIBRARY"),
        })
    }

    /// The nested build's target folder for `arch` (checked builds apart: their flags differ,
    /// and sharing a folder would rebuild everything at each switch).
    pub(crate) fn nested_dir(&self, arch: Arch) -> PathBuf {
        match self.checked {
            false => self.target_root.join(arch.name()),
            true => self.target_root.join(format!("{}-checked", arch.name())),
        }
    }
}

/// A variable set to anything but `0`.
fn env_flag(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| v != "0")
}

/// ptxas, unless `RSHMEM_NO_PTXAS` says to skip it; where none is found, a warning says that
/// the image carries PTX only. (Looked for once the toolchain is known to be complete: finding
/// it may download the pinned wheel.)
pub(crate) fn ptxas() -> Option<PathBuf> {
    if env_flag("RSHMEM_NO_PTXAS") {
        return None;
    }
    match locate::ptxas() {
        Ok(p) => Some(p),
        Err((_, why)) => {
            println!("cargo:warning=rshmem-builder: no ptxas ({why}); embedding PTX only, the driver will JIT it");
            None
        }
    }
}

/// The `[package] name` of a manifest.
fn package_name(manifest: &Path) -> Result<String> {
    let text = std::fs::read_to_string(manifest).map_err(io(format!(
        "reading the kernel crate's manifest {}",
        manifest.display()
    )))?;
    let mut in_package = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(v) = line
                .strip_prefix("name")
                .map(str::trim_start)
                .and_then(|r| r.strip_prefix('='))
            {
                return Ok(v.trim().trim_matches('"').to_string());
            }
        }
    }
    Err(Error::Tool {
        tool: "reading the kernel crate".into(),
        message: format!("{} has no [package] name", manifest.display()),
    })
}

/// The outer build's target folder: the nearest ancestor of `OUT_DIR` holding cargo's
/// `CACHEDIR.TAG`, else `OUT_DIR` itself.
fn outer_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .unwrap_or(out_dir)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_package_names() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("Cargo.toml");
        std::fs::write(
            &m,
            "[lib]\nname = \"x\"\n[package]\nversion = \"1\"\nname = \"my-kernels\"\n",
        )
        .unwrap();
        assert_eq!(package_name(&m).unwrap(), "my-kernels");
    }

    #[test]
    fn finds_the_outer_target_folder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("release/build/x-1/out");
        std::fs::create_dir_all(&out).unwrap();
        assert_eq!(
            outer_target_dir(&out),
            out,
            "no CACHEDIR.TAG: OUT_DIR itself"
        );
        std::fs::write(dir.path().join("CACHEDIR.TAG"), "").unwrap();
        assert_eq!(outer_target_dir(&out), dir.path());
    }
}
