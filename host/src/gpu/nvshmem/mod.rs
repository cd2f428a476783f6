//! NVSHMEM's host library, loaded at run time: [`sys`] (raw symbols) → [`result`] (checked
//! calls) → [`Nvshmem`] (the loaded library, where it came from and which version it is).

pub(crate) mod result;
pub(crate) mod sys;

use super::discover::{self, Located};
use crate::contract::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The host library of this process, opened once and never closed.
pub(crate) struct Nvshmem {
    lib: sys::Lib,
    /// The file the dynamic loader actually mapped.
    path: PathBuf,
}

impl Nvshmem {
    /// Finds (see [`discover`]) and opens NVSHMEM's host library, once per process.
    pub(crate) fn get() -> Result<&'static Nvshmem> {
        static LIB: OnceLock<Nvshmem> = OnceLock::new();
        if let Some(lib) = LIB.get() {
            return Ok(lib);
        }
        let opened = Self::open(discover::locate_host_lib())?;
        // A racing thread may have won; either copy is the same library, and the loser's
        // handle only drops a reference count.
        Ok(LIB.get_or_init(|| opened))
    }

    fn open(located: Located) -> Result<Nvshmem> {
        let target = located.dlopen_target();
        // SAFETY: the file is named libnvshmem_host.so.3 and was found where NVSHMEM installs
        // it; `sys::Lib::open` checks every symbol rshmem uses.
        let lib = unsafe { sys::Lib::open(&target) }.map_err(|e| match &located {
            Located::Soname { searched } if is_not_found(&e) => Error::NvshmemNotFound {
                searched: searched.clone(),
            },
            _ => Error::NvshmemLoad {
                path: target.clone(),
                message: e.to_string(),
            },
        })?;
        let path = discover::loaded_path(lib.nvshmem_my_pe as *const ()).unwrap_or(target);
        Ok(Nvshmem { lib, path })
    }

    /// The raw symbols, for [`result`]'s calls.
    pub(crate) fn lib(&self) -> &sys::Lib {
        &self.lib
    }

    /// The library file in use.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The folder holding the library and, in NVSHMEM's layout, its bootstrap plugins.
    pub(crate) fn dir(&self) -> Option<&Path> {
        self.path.parent()
    }

    /// The library's `(major, minor, patch)`.
    pub(crate) fn version(&self) -> (u32, u32, u32) {
        result::vendor_version(&self.lib)
    }
}

/// Whether a dlopen failure means "no such file" rather than "found but broken".
fn is_not_found(e: &libloading::Error) -> bool {
    e.to_string().contains("No such file")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opens a real NVSHMEM (found the normal way, e.g. via NVSHMEM_HOME) and checks that
    /// every symbol resolves and that the version query works before init.
    #[test]
    #[ignore = "needs NVSHMEM 3.4.5 (NVSHMEM_HOME=.../nvidia/nvshmem); run with --ignored"]
    fn opens_the_real_library() {
        let nv = Nvshmem::get().expect("NVSHMEM found and opened");
        assert_eq!(nv.version(), (3, 4, 5), "{}", nv.path().display());
        assert!(nv.path().is_absolute(), "{}", nv.path().display());
        assert!(nv
            .dir()
            .unwrap()
            .join(crate::gpu::env::UID_PLUGIN)
            .is_file());
        // Every typed collective table, with the bitwise reductions of integers only.
        let tables: Vec<&str> = nv.lib().colls.iter().map(|c| c.ty).collect();
        assert_eq!(tables, sys::COLL_TYPES);
        for c in &nv.lib().colls {
            let integer = !matches!(c.ty, "float" | "double");
            for table in [&c.reduce, &c.reducescatter] {
                assert!(table[..4].iter().all(Option::is_some), "{}", c.ty);
                assert!(
                    table[4..].iter().all(|f| f.is_some() == integer),
                    "{}",
                    c.ty
                );
            }
        }
    }

    /// `nvshmemx_get_uniqueid` needs no GPU: it loads the UID bootstrap plugin (by the
    /// absolute path `env::plan` sets) and opens a listening socket.
    #[test]
    #[ignore = "needs NVSHMEM 3.4.5 (NVSHMEM_HOME=.../nvidia/nvshmem); run with --ignored"]
    fn creates_a_unique_id_without_a_gpu() {
        let nv = Nvshmem::get().expect("NVSHMEM found and opened");
        let vars = crate::gpu::env::plan(
            &|k| std::env::var_os(k),
            crate::gpu::env::StartedBy::Local,
            nv.dir(),
            &|p| p.is_file(),
        );
        assert!(vars
            .iter()
            .any(|(k, _)| *k == "NVSHMEM_BOOTSTRAP_UID_PLUGIN"));
        crate::gpu::env::apply(&vars);
        let uid = result::get_uniqueid(nv.lib()).expect("a unique ID");
        assert_eq!(uid.version, (1 << 16) + 128);
        assert!(uid.internal.iter().any(|&b| b != 0));
    }
}
