//! Reusing an architecture's PTX and cubin when nothing they are made from changed.
//!
//! Cargo reruns a build script when any path it watches changes. A package whose `build.rs`
//! builds several kernel crates watches all of them, so editing one kernel crate reruns the
//! build of every other; the nested cargo then leaves their rlibs untouched, and the link,
//! `opt`, `llc` and `ptxas` (minutes for kernels that inline NVSHMEM's collectives) would
//! redo identical work. Each cargo profile and mode (`cargo build --release`, `cargo test`,
//! `cargo clippy`) also runs the build script in an `OUT_DIR` of its own, while the nested
//! build, and so its rlibs, is shared by all of them.
//!
//! So every finished build is kept in a [`Store`] beside the nested build (one per
//! architecture), under a key made of its [`Inputs`] — every rlib's path, size and
//! modification time, the options, `ptxas` and the builder's own source — with a [`Record`] of
//! what it produced. A build script whose inputs have an entry copies its PTX and cubin into
//! its `OUT_DIR` instead of linking.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// The builder's source: part of every key, so a changed link recipe never reuses what an
/// older one made. (`builder_source_is_all_of_src` checks that no file is missing.)
const BUILDER_SOURCE: &[(&str, &str)] = &[
    ("arch.rs", include_str!("arch.rs")),
    ("error.rs", include_str!("error.rs")),
    ("fetch.rs", include_str!("fetch.rs")),
    ("image.rs", include_str!("image.rs")),
    ("lib.rs", include_str!("lib.rs")),
    ("link.rs", include_str!("link.rs")),
    ("locate.rs", include_str!("locate.rs")),
    ("nested.rs", include_str!("nested.rs")),
    ("per_arch.rs", include_str!("per_arch.rs")),
    ("plan.rs", include_str!("plan.rs")),
    ("reuse.rs", include_str!("reuse.rs")),
    ("toolchain.rs", include_str!("toolchain.rs")),
];

/// A file as a key knows it: path, size and modification time.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct FileStamp {
    pub path: PathBuf,
    len: u64,
    modified_ns: u128,
}

impl FileStamp {
    /// Stamps `path`; `None` if it cannot be read (then nothing is reused).
    pub(crate) fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        let since = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        Some(Self {
            path: path.to_path_buf(),
            len: meta.len(),
            modified_ns: since.as_nanos(),
        })
    }
}

/// What one architecture's PTX and cubin are made from, known before linking.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct Inputs {
    rlibs: Vec<FileStamp>,
    sm: u32,
    debug: bool,
    ptxas: Option<FileStamp>,
    builder: u64,
}

impl Inputs {
    /// The inputs of a build from `rlibs` for `sm`; `None` if any file cannot be stamped.
    pub(crate) fn new(
        rlibs: &[PathBuf],
        sm: u32,
        debug: bool,
        ptxas: Option<&Path>,
    ) -> Option<Self> {
        let mut stamps = rlibs
            .iter()
            .map(|r| FileStamp::of(r))
            .collect::<Option<Vec<_>>>()?;
        // Sorted: cargo reports artifacts in the order they finish, which varies.
        stamps.sort_by(|a, b| a.path.cmp(&b.path));
        Some(Self {
            rlibs: stamps,
            sm,
            debug,
            ptxas: match ptxas {
                Some(p) => Some(FileStamp::of(p)?),
                None => None,
            },
            builder: hash(&BUILDER_SOURCE),
        })
    }

    /// The name of these inputs' entry in a store.
    fn key(&self) -> String {
        format!("{:016x}", hash(self))
    }
}

/// `DefaultHasher` with its fixed keys: the same value in every build script that one
/// toolchain compiled (a new toolchain rebuilds the rlibs, which changes the inputs anyway).
fn hash<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// What a finished build produced, kept with its PTX and cubin.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Record {
    /// What the outputs were made from.
    pub inputs: Inputs,
    /// The NVSHMEM bitcode linked in, if the kernels call NVSHMEM.
    pub nvshmem: Option<FileStamp>,
    /// The kernel entry points.
    pub kernels: Vec<String>,
    /// Their parameter lists, `(kernel, text)`.
    #[serde(default)]
    pub signatures: Vec<(String, String)>,
}

/// Finished builds of one architecture: `<dir>/<crate>-<key>/{code.ptx, code.cubin,
/// record.json}`. An entry appears whole (written aside, then renamed into place) and is never
/// changed after; publishing a crate's new entry removes its older ones, which no build can
/// want again (their rlibs have been rebuilt).
pub(crate) struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir` (created when first published to).
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn entry(&self, name: &str, inputs: &Inputs) -> PathBuf {
        self.dir.join(format!("{name}-{}", inputs.key()))
    }

    /// Copies the PTX (and, where `cubin` is given, the cubin) of crate `name` built from
    /// `inputs` to `ptx` and `cubin`, if the store has them and the NVSHMEM bitcode they were
    /// linked with is still what `nvshmem` finds; returns their record. `None` (and nothing
    /// reliable written) where it has not: the caller builds.
    pub(crate) fn fetch(
        &self,
        name: &str,
        inputs: &Inputs,
        nvshmem: impl FnOnce() -> Option<PathBuf>,
        ptx: &Path,
        cubin: Option<&Path>,
    ) -> Option<Record> {
        let entry = self.entry(name, inputs);
        let record: Record =
            serde_json::from_slice(&std::fs::read(entry.join("record.json")).ok()?).ok()?;
        if record.inputs != *inputs {
            return None;
        }
        if let Some(was) = &record.nvshmem {
            if nvshmem().and_then(|now| FileStamp::of(&now)).as_ref() != Some(was) {
                return None;
            }
        }
        std::fs::copy(entry.join("code.ptx"), ptx).ok()?;
        if let Some(cubin) = cubin {
            std::fs::copy(entry.join("code.cubin"), cubin).ok()?;
        }
        Some(record)
    }

    /// Keeps `ptx` (and `cubin`) as crate `name`'s build from `record.inputs`, and drops the
    /// crate's older entries.
    pub(crate) fn publish(
        &self,
        name: &str,
        record: &Record,
        ptx: &Path,
        cubin: Option<&Path>,
    ) -> std::io::Result<()> {
        let entry = self.entry(name, &record.inputs);
        let staging = self.dir.join(format!(
            ".{name}-{}-{}",
            record.inputs.key(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging)?;
        std::fs::copy(ptx, staging.join("code.ptx"))?;
        if let Some(cubin) = cubin {
            std::fs::copy(cubin, staging.join("code.cubin"))?;
        }
        let text = serde_json::to_vec_pretty(record).expect("a record always serialises");
        std::fs::write(staging.join("record.json"), text)?;
        if std::fs::rename(&staging, &entry).is_err() {
            // Another build script published the same inputs first: same code, keep theirs.
            let _ = std::fs::remove_dir_all(&staging);
        }
        let prefix = format!("{name}-");
        for old in std::fs::read_dir(&self.dir)?.flatten() {
            let file_name = old.file_name();
            let file_name = file_name.to_string_lossy();
            // `<name>-<16 hex digits>` only: `my-kernels-…` must not match `my-…`.
            let is_older = file_name
                .strip_prefix(&prefix)
                .is_some_and(|k| k.len() == 16 && k.bytes().all(|b| b.is_ascii_hexdigit()));
            if is_older && old.path() != entry {
                let _ = std::fs::remove_dir_all(old.path());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
    }

    struct Fixture {
        dir: tempfile::TempDir,
        rlib: PathBuf,
        bc: PathBuf,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let (rlib, bc) = (dir.path().join("libk.rlib"), dir.path().join("nvshmem.bc"));
            write(&rlib, "bitcode");
            write(&bc, "nvshmem");
            Self { dir, rlib, bc }
        }

        fn inputs(&self, sm: u32, debug: bool) -> Inputs {
            Inputs::new(std::slice::from_ref(&self.rlib), sm, debug, None).unwrap()
        }

        fn out(&self, file: &str) -> PathBuf {
            self.dir.path().join(file)
        }

        /// Publishes `ptx` as crate `name`'s build from `inputs`.
        fn publish(&self, store: &Store, name: &str, inputs: &Inputs, ptx: &str) {
            let built = self.out("built.ptx");
            write(&built, ptx);
            let record = Record {
                inputs: inputs.clone(),
                nvshmem: FileStamp::of(&self.bc),
                kernels: vec!["k".into()],
                signatures: vec![("k".into(), "x: *mut f32".into())],
            };
            store.publish(name, &record, &built, None).unwrap();
        }
    }

    #[test]
    fn fetches_only_what_the_same_inputs_made() {
        let f = Fixture::new();
        let store = Store::new(f.out("sm_90/images"));
        let inputs = f.inputs(90, false);
        let (ptx, found) = (f.out("k.sm_90.ptx"), || Some(f.bc.clone()));
        assert!(store.fetch("k", &inputs, found, &ptx, None).is_none());

        f.publish(&store, "k", &inputs, ".entry k");
        let record = store.fetch("k", &inputs, found, &ptx, None).unwrap();
        assert_eq!(record.kernels, ["k"]);
        assert_eq!(std::fs::read_to_string(&ptx).unwrap(), ".entry k");
        // No cubin in the entry, and one is wanted.
        let cubin = f.out("k.sm_90.cubin");
        assert!(store
            .fetch("k", &inputs, found, &ptx, Some(&cubin))
            .is_none());
        // Another crate, architecture, or device debug info.
        assert!(store.fetch("j", &inputs, found, &ptx, None).is_none());
        assert!(store
            .fetch("k", &f.inputs(80, false), found, &ptx, None)
            .is_none());
        assert!(store
            .fetch("k", &f.inputs(90, true), found, &ptx, None)
            .is_none());
        // NVSHMEM now found elsewhere, or not at all.
        assert!(store
            .fetch("k", &inputs, || Some(f.rlib.clone()), &ptx, None)
            .is_none());
        assert!(store.fetch("k", &inputs, || None, &ptx, None).is_none());
        // The rlib rebuilt (a new size here; a new modification time counts the same).
        write(&f.rlib, "new bitcode");
        assert!(store
            .fetch("k", &f.inputs(90, false), found, &ptx, None)
            .is_none());
    }

    #[test]
    fn a_new_entry_replaces_its_crates_old_ones_only() {
        let f = Fixture::new();
        let store = Store::new(f.out("images"));
        let old = f.inputs(90, false);
        f.publish(&store, "k", &old, "old k");
        f.publish(&store, "k-more", &old, "k-more");
        write(&f.rlib, "rebuilt");
        let new = f.inputs(90, false);
        f.publish(&store, "k", &new, "new k");
        // Publishing the same inputs again (another build script won the race) changes nothing.
        f.publish(&store, "k", &new, "new k");
        let ptx = f.out("got.ptx");
        assert!(store
            .fetch("k", &old, || Some(f.bc.clone()), &ptx, None)
            .is_none());
        store
            .fetch("k", &new, || Some(f.bc.clone()), &ptx, None)
            .unwrap();
        assert_eq!(std::fs::read_to_string(&ptx).unwrap(), "new k");
        store
            .fetch("k-more", &old, || Some(f.bc.clone()), &ptx, None)
            .unwrap();
        assert_eq!(std::fs::read_to_string(&ptx).unwrap(), "k-more");
        let mut left: Vec<String> = std::fs::read_dir(f.out("images"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left[0].starts_with("k-") && left[1].starts_with("k-more-"));
    }

    #[test]
    fn the_order_cargo_reports_rlibs_in_does_not_matter() {
        let f = Fixture::new();
        let other = f.out("libother.rlib");
        write(&other, "other");
        assert_eq!(
            Inputs::new(&[f.rlib.clone(), other.clone()], 90, false, None),
            Inputs::new(&[other, f.rlib.clone()], 90, false, None)
        );
        assert!(Inputs::new(&[f.out("missing.rlib")], 90, false, None).is_none());
    }

    #[test]
    fn builder_source_is_all_of_src() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files: Vec<String> = std::fs::read_dir(src)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let listed: Vec<&str> = BUILDER_SOURCE.iter().map(|(name, _)| *name).collect();
        assert_eq!(files, listed);
    }
}
