//! The download cache for pinned wheels (NVSHMEM's device library, ptxas), fetched with pip
//! from the Python package index configured on the machine and unpacked once.
//!
//! Cache root: `$RSHMEM_CACHE_DIR`, else `$XDG_CACHE_HOME/rshmem`, else `$HOME/.cache/rshmem`.
//! Each wheel unpacks into `<root>/<name>-<version>/`. Set `RSHMEM_OFFLINE=1` to never fetch.

use crate::error::{io, Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A wheel pinned by name and version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pinned {
    pub name: &'static str,
    pub version: &'static str,
}

/// NVSHMEM's device bitcode; must match the host library on the GPU machines (3.4.5).
pub(crate) const NVSHMEM: Pinned = Pinned {
    name: "nvidia-nvshmem-cu13",
    version: "3.4.5",
};

/// ptxas of CUDA 13.0, the CUDA of the GPU machines.
pub(crate) const NVCC: Pinned = Pinned {
    name: "nvidia-cuda-nvcc",
    version: "13.0.88",
};

/// The cache root, from the environment (see the module docs).
pub fn cache_root() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("RSHMEM_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|p| p.join("rshmem")))
        .or_else(|| var("HOME").map(|p| p.join(".cache/rshmem")))
}

impl Pinned {
    /// Where this wheel is (or will be) unpacked.
    pub fn dir(&self, root: &Path) -> PathBuf {
        root.join(format!("{}-{}", self.name, self.version))
    }

    /// `name==version`.
    pub fn spec(&self) -> String {
        format!("{}=={}", self.name, self.version)
    }

    /// Returns the unpacked wheel, fetching it first if needed and allowed.
    pub fn fetch(&self, root: &Path) -> std::result::Result<PathBuf, String> {
        let dir = self.dir(root);
        if dir.join(".complete").exists() {
            return Ok(dir);
        }
        if std::env::var_os("RSHMEM_OFFLINE").is_some_and(|v| v != "0") {
            return Err("RSHMEM_OFFLINE is set".into());
        }
        self.download_and_unpack(root, &dir)
            .map_err(|e| e.to_string())?;
        Ok(dir)
    }

    fn download_and_unpack(&self, root: &Path, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(root).map_err(io(format!("creating {}", root.display())))?;
        // A private staging folder per process: concurrent builds never see a half-written
        // cache entry, and the last rename wins with identical contents.
        let stage = root.join(format!(".stage-{}-{}", self.name, std::process::id()));
        let _ = std::fs::remove_dir_all(&stage);
        std::fs::create_dir_all(&stage).map_err(io(format!("creating {}", stage.display())))?;
        let msg = format!(
            "rshmem-builder: fetching {} into {}",
            self.spec(),
            dir.display()
        );
        eprintln!("{msg}");
        println!("cargo:warning={msg}");
        let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
        let out = Command::new(&python)
            .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
            .args([
                "--platform",
                "manylinux2014_x86_64",
                "--python-version",
                "3.12",
            ])
            .arg("--dest")
            .arg(&stage)
            .arg(self.spec())
            .output()
            .map_err(|e| Error::Tool {
                tool: format!("{} -m pip download", Path::new(&python).display()),
                message: format!("cannot run it ({e}); install Python 3 with pip"),
            })?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&stage);
            return Err(Error::Tool {
                tool: format!("pip download {}", self.spec()),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        let wheel = std::fs::read_dir(&stage)
            .map_err(io("listing the downloaded wheel"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|e| e == "whl"))
            .ok_or_else(|| Error::Tool {
                tool: format!("pip download {}", self.spec()),
                message: "no .whl file was saved".into(),
            })?;
        let unpacked = stage.join("unpacked");
        unzip(&wheel, &unpacked)?;
        std::fs::write(unpacked.join(".complete"), self.spec())
            .map_err(io("marking the cache entry complete"))?;
        if std::fs::rename(&unpacked, dir).is_err() && !dir.join(".complete").exists() {
            let _ = std::fs::remove_dir_all(dir);
            std::fs::rename(&unpacked, dir)
                .map_err(io(format!("moving into {}", dir.display())))?;
        }
        let _ = std::fs::remove_dir_all(&stage);
        Ok(())
    }
}

/// Unpacks a zip archive, keeping the executable bits it records (ptxas must run).
fn unzip(archive: &Path, into: &Path) -> Result<()> {
    let file =
        std::fs::File::open(archive).map_err(io(format!("opening {}", archive.display())))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| Error::Tool {
        tool: "unzip".into(),
        message: format!("{}: {e}", archive.display()),
    })?;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| Error::Tool {
            tool: "unzip".into(),
            message: e.to_string(),
        })?;
        let Some(rel) = entry.enclosed_name() else {
            continue;
        };
        let path = into.join(&rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).map_err(io(format!("creating {}", path.display())))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io(format!("creating {}", parent.display())))?;
        }
        let mut out =
            std::fs::File::create(&path).map_err(io(format!("writing {}", path.display())))?;
        std::io::copy(&mut entry, &mut out).map_err(io(format!("writing {}", path.display())))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Wheels often record no mode; everything under a bin/ folder is a program.
            let mode = entry.unix_mode().unwrap_or(0o644);
            let exec = mode & 0o111 != 0 || rel.components().any(|c| c.as_os_str() == "bin");
            let mode = if exec { 0o755 } else { 0o644 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(io(format!("setting the mode of {}", path.display())))?;
        }
    }
    Ok(())
}
