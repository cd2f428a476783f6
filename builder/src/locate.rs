//! Finding NVSHMEM's device bitcode and ptxas: an explicit install first, then a Python
//! package, then the cache (fetching the pinned wheel into it when allowed).

use crate::fetch::{self, Pinned};
use std::path::{Path, PathBuf};
use std::process::Command;

/// NVSHMEM's device library as found.
#[derive(Debug, Clone)]
pub(crate) struct Nvshmem {
    /// `libnvshmem_device.bc`.
    pub bitcode: PathBuf,
}

/// The outcome of a search: the thing, or every place looked in and why fetching failed.
pub(crate) type Found<T> = std::result::Result<T, (Vec<PathBuf>, String)>;

/// Looks for NVSHMEM: `$NVSHMEM_HOME/lib{,64}`, the `nvidia.nvshmem` Python package, the
/// cache, then fetches the pinned wheel into the cache.
pub(crate) fn nvshmem() -> Found<Nvshmem> {
    let mut searched = Vec::new();
    let bitcode = |root: &Path| -> Option<PathBuf> {
        ["lib", "lib64"]
            .iter()
            .map(|l| root.join(l).join("libnvshmem_device.bc"))
            .find(|p| p.is_file())
    };
    let mut candidates = Vec::new();
    if let Some(home) = std::env::var_os("NVSHMEM_HOME").filter(|v| !v.is_empty()) {
        candidates.push(PathBuf::from(home));
    }
    if let Some(pkg) = python_package_dir("nvidia.nvshmem") {
        candidates.push(pkg);
    }
    let root = fetch::cache_root();
    if let Some(root) = &root {
        candidates.push(fetch::NVSHMEM.dir(root).join("nvidia/nvshmem"));
    }
    for c in candidates {
        match bitcode(&c) {
            Some(bitcode) => return Ok(Nvshmem { bitcode }),
            None => searched.push(c),
        }
    }
    fetched(
        &fetch::NVSHMEM,
        root.as_deref(),
        "nvidia/nvshmem",
        bitcode,
        searched,
    )
    .map(|bitcode| Nvshmem { bitcode })
}

/// Looks for ptxas: `$PATH`, `$CUDA_HOME/bin`, `$CUDA_PATH/bin`, the cache, then fetches the
/// pinned nvcc wheel into the cache.
pub(crate) fn ptxas() -> Found<PathBuf> {
    let mut searched = Vec::new();
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            candidates.push(PathBuf::from(home).join("bin"));
        }
    }
    let root = fetch::cache_root();
    if let Some(root) = &root {
        candidates.push(fetch::NVCC.dir(root).join("nvidia/cu13/bin"));
    }
    let exe = |dir: &Path| Some(dir.join("ptxas")).filter(|p| p.is_file());
    for c in candidates {
        match exe(&c) {
            Some(p) => return Ok(p),
            None => searched.push(c),
        }
    }
    fetched(
        &fetch::NVCC,
        root.as_deref(),
        "nvidia/cu13/bin",
        exe,
        searched,
    )
}

fn fetched(
    pinned: &Pinned,
    root: Option<&Path>,
    sub: &str,
    pick: impl Fn(&Path) -> Option<PathBuf>,
    searched: Vec<PathBuf>,
) -> Found<PathBuf> {
    let Some(root) = root else {
        return Err((
            searched,
            "no cache folder: set RSHMEM_CACHE_DIR or HOME".into(),
        ));
    };
    match pinned.fetch(root) {
        Ok(dir) => pick(&dir.join(sub)).ok_or_else(|| {
            (
                searched,
                format!(
                    "{} unpacked into {} but lacks {sub}",
                    pinned.spec(),
                    dir.display()
                ),
            )
        }),
        Err(why) => Err((searched, why)),
    }
}

/// The folder of an installed Python package, if `python3` has it.
fn python_package_dir(module: &str) -> Option<PathBuf> {
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    let out = Command::new(python)
        .args([
            "-c",
            &format!("import {module} as m; print(list(m.__path__)[0])"),
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .filter(|p| p.is_dir())
}
