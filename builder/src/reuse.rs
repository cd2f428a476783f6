//! Reusing an architecture's PTX and cubin when nothing they are made from changed.
//!
//! Cargo reruns a build script when any path it watches changes. A package whose `build.rs`
//! builds several kernel crates watches all of them, so editing one kernel crate reruns the
//! build of every other; the nested cargo then leaves their rlibs untouched, and the link,
//! `opt`, `llc` and `ptxas` (minutes for kernels that inline NVSHMEM's collectives) would
//! redo identical work. So each architecture's outputs are kept with a [`Record`] of their
//! inputs — every rlib's path, size and modification time, the options, `ptxas`, the build
//! script's own executable (which changes with the builder) and the NVSHMEM bitcode linked —
//! and reused as they are while the record matches.

use crate::error::{io, Result};
use std::path::{Path, PathBuf};

/// A file as the record knows it: path, size and modification time.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FileStamp {
    pub path: PathBuf,
    len: u64,
    modified_ns: u128,
}

impl FileStamp {
    /// Stamps `path`; `None` if it cannot be read (then nothing is reused).
    pub(crate) fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        let modified = meta.modified().ok()?;
        let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
        Some(Self {
            path: path.to_path_buf(),
            len: meta.len(),
            modified_ns: since.as_nanos(),
        })
    }
}

/// What one architecture's PTX and cubin are made from, known before linking.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Inputs {
    rlibs: Vec<FileStamp>,
    sm: u32,
    debug: bool,
    ptxas: Option<FileStamp>,
    build_script: Option<FileStamp>,
}

impl Inputs {
    /// The inputs of a build from `rlibs` for `sm`; `None` if any file cannot be stamped.
    pub(crate) fn new(
        rlibs: &[PathBuf],
        sm: u32,
        debug: bool,
        ptxas: Option<&Path>,
    ) -> Option<Self> {
        Some(Self {
            // Sorted: cargo reports artifacts in the order they finish, which varies.
            rlibs: {
                let mut stamps = rlibs
                    .iter()
                    .map(|r| FileStamp::of(r))
                    .collect::<Option<Vec<_>>>()?;
                stamps.sort_by(|a, b| a.path.cmp(&b.path));
                stamps
            },
            sm,
            debug,
            ptxas: match ptxas {
                Some(p) => Some(FileStamp::of(p)?),
                None => None,
            },
            // The build script is relinked whenever the builder (or the build.rs) changes,
            // and so is its executable: a new builder never reuses an old builder's output.
            build_script: std::env::current_exe()
                .ok()
                .and_then(|exe| FileStamp::of(&exe)),
        })
    }
}

/// The record kept beside an architecture's outputs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Record {
    /// What the outputs were made from.
    pub inputs: Inputs,
    /// The NVSHMEM bitcode linked in, if the kernels call NVSHMEM.
    pub nvshmem: Option<FileStamp>,
    /// The kernel entry points.
    pub kernels: Vec<String>,
}

impl Record {
    /// Where the record of crate `name`'s build for `arch` lives in `out_dir`.
    pub(crate) fn path(out_dir: &Path, name: &str, arch: impl std::fmt::Display) -> PathBuf {
        out_dir.join(format!("{name}.{arch}.inputs.json"))
    }

    /// The record at `path`, if there is a readable one.
    pub(crate) fn load(path: &Path) -> Option<Self> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// Writes the record to `path`.
    pub(crate) fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_vec_pretty(self).expect("a record always serialises");
        std::fs::write(path, text).map_err(io(format!("writing {}", path.display())))
    }

    /// Whether outputs made from this record's inputs can stand for a build from `inputs`
    /// that would link the NVSHMEM bitcode `nvshmem` (as found now) into `ptx` and, where
    /// given, `cubin`.
    pub(crate) fn reusable(
        &self,
        inputs: &Inputs,
        nvshmem: impl FnOnce() -> Option<PathBuf>,
        ptx: &Path,
        cubin: Option<&Path>,
    ) -> bool {
        self.inputs == *inputs
            && ptx.is_file()
            && cubin.is_none_or(Path::is_file)
            && match &self.nvshmem {
                None => true,
                Some(was) => nvshmem().and_then(|now| FileStamp::of(&now)).as_ref() == Some(was),
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn reuses_only_what_the_same_inputs_made() {
        let dir = tempfile::tempdir().unwrap();
        let (rlib, bc, ptx) = (
            dir.path().join("libk.rlib"),
            dir.path().join("nvshmem.bc"),
            dir.path().join("k.sm_90.ptx"),
        );
        write(&rlib, "bitcode");
        write(&bc, "nvshmem");
        let inputs = Inputs::new(std::slice::from_ref(&rlib), 90, false, None).unwrap();
        let record = Record {
            inputs: inputs.clone(),
            nvshmem: FileStamp::of(&bc),
            kernels: vec!["k".into()],
        };
        let path = Record::path(dir.path(), "k", "sm_90");
        record.save(&path).unwrap();
        let loaded = Record::load(&path).unwrap();
        assert_eq!(loaded, record);
        let found = || Some(bc.clone());

        // No PTX yet: nothing to reuse.
        assert!(!loaded.reusable(&inputs, found, &ptx, None));
        write(&ptx, ".entry k");
        assert!(loaded.reusable(&inputs, found, &ptx, None));
        // A cubin is wanted now and there is none.
        assert!(!loaded.reusable(&inputs, found, &ptx, Some(&dir.path().join("k.cubin"))));
        // Another architecture, or device debug info.
        let sm80 = Inputs::new(std::slice::from_ref(&rlib), 80, false, None).unwrap();
        assert!(!loaded.reusable(&sm80, found, &ptx, None));
        let debug = Inputs::new(std::slice::from_ref(&rlib), 90, true, None).unwrap();
        assert!(!loaded.reusable(&debug, found, &ptx, None));
        // NVSHMEM now found elsewhere, or not at all.
        assert!(!loaded.reusable(&inputs, || Some(rlib.clone()), &ptx, None));
        assert!(!loaded.reusable(&inputs, || None, &ptx, None));
        // The rlib rebuilt (a new size here; a new modification time counts the same).
        write(&rlib, "new bitcode");
        let rebuilt = Inputs::new(std::slice::from_ref(&rlib), 90, false, None).unwrap();
        assert!(!loaded.reusable(&rebuilt, found, &ptx, None));
    }

    #[test]
    fn unreadable_records_and_files_reuse_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.inputs.json");
        assert!(Record::load(&path).is_none());
        write(&path, "{ not json");
        assert!(Record::load(&path).is_none());
        assert!(Inputs::new(&[dir.path().join("missing.rlib")], 90, false, None).is_none());
    }

    #[test]
    fn the_order_cargo_reports_rlibs_in_does_not_matter() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("liba.rlib"), dir.path().join("libb.rlib"));
        write(&a, "a");
        write(&b, "bb");
        assert_eq!(
            Inputs::new(&[a.clone(), b.clone()], 90, false, None),
            Inputs::new(&[b, a], 90, false, None)
        );
    }
}
