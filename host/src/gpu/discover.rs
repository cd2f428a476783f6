//! Where NVSHMEM's host library (`libnvshmem_host.so.3`) is found, in this order — the first
//! file that exists wins:
//!
//! 1. `$NVSHMEM_HOME/lib/` then `$NVSHMEM_HOME/lib64/` (an NVSHMEM install or unpacked wheel);
//! 2. the Python package `nvidia.nvshmem` (`pip install nvidia-nvshmem-cu13`), asked of
//!    `python3` quietly (no `python3`, or no package, just moves on);
//! 3. the rshmem builder's download cache,
//!    `<cache>/nvidia-nvshmem-cu13-3.4.5/nvidia/nvshmem/lib/`, where `<cache>` is
//!    [`cache_root`]: `$RSHMEM_CACHE_DIR`, else `$XDG_CACHE_HOME/rshmem`, else
//!    `$HOME/.cache/rshmem` — the same rule the builder uses to store the wheel;
//! 4. the dynamic loader's own search (`LD_LIBRARY_PATH`, `ld.so.cache`) by soname.
//!
//! If all fail, [`Error::NvshmemNotFound`](crate::contract::Error::NvshmemNotFound) lists every place
//! tried. The search itself ([`locate`]) is a pure function of an environment lookup, a Python
//! query and a file test, so it is unit-tested with temporary folders.

use std::ffi::{CStr, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The host library's file name (its soname).
pub(crate) const HOST_LIB: &str = "libnvshmem_host.so.3";

/// The NVSHMEM version rshmem pins by default (builder and run time).
pub(crate) const PINNED_VERSION: &str = "3.4.5";

/// The Python wheel that ships NVSHMEM for CUDA 13.
pub(crate) const WHEEL: &str = "nvidia-nvshmem-cu13";

/// Where the host library will be opened from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Located {
    /// A file that exists.
    File(PathBuf),
    /// None of the folders had it: ask the dynamic loader by soname; `searched` is what to
    /// report if that fails too.
    Soname { searched: Vec<PathBuf> },
}

impl Located {
    /// What to pass to `dlopen`.
    pub(crate) fn dlopen_target(&self) -> PathBuf {
        match self {
            Located::File(path) => path.clone(),
            Located::Soname { .. } => PathBuf::from(HOST_LIB),
        }
    }
}

/// What [`locate`] may consult; tests substitute each.
pub(crate) struct Sources<'a> {
    /// Environment lookup (`std::env::var_os`).
    pub env: &'a dyn Fn(&str) -> Option<OsString>,
    /// The `nvidia.nvshmem` Python package's folder, if Python has it (only called when the
    /// earlier places fail, because it starts a process).
    pub python_package: &'a dyn Fn() -> Option<PathBuf>,
    /// Whether a path is an existing file.
    pub is_file: &'a dyn Fn(&Path) -> bool,
}

/// Looks for the host library in the documented order (see the module docs).
pub(crate) fn locate(src: &Sources<'_>) -> Located {
    let mut searched = Vec::new();
    let try_dir = |dir: PathBuf, searched: &mut Vec<PathBuf>| {
        let file = dir.join(HOST_LIB);
        let found = (src.is_file)(&file);
        searched.push(file.clone());
        found.then_some(file)
    };

    if let Some(home) = non_empty(src.env, "NVSHMEM_HOME") {
        let home = PathBuf::from(home);
        for lib in ["lib", "lib64"] {
            if let Some(file) = try_dir(home.join(lib), &mut searched) {
                return Located::File(file);
            }
        }
    }

    match (src.python_package)() {
        Some(pkg) => {
            if let Some(file) = try_dir(pkg.join("lib"), &mut searched) {
                return Located::File(file);
            }
        }
        None => searched.push(PathBuf::from(
            "python3 -c 'import nvidia.nvshmem' (python3 or the package is missing)",
        )),
    }

    if let Some(cache) = cache_root(src.env) {
        if let Some(file) = try_dir(wheel_dir(&cache).join("lib"), &mut searched) {
            return Located::File(file);
        }
    }

    searched.push(PathBuf::from(format!(
        "{HOST_LIB} on the dynamic loader's search path (LD_LIBRARY_PATH, ld.so.cache)"
    )));
    Located::Soname { searched }
}

/// [`locate`] on this process's environment, Python and file system; computed once per
/// process (the backend probe and the PE start-up both ask, and asking Python costs a process).
pub(crate) fn locate_host_lib() -> Located {
    static LOCATED: OnceLock<Located> = OnceLock::new();
    LOCATED
        .get_or_init(|| {
            locate(&Sources {
                env: &|k| std::env::var_os(k),
                python_package: &python_package_dir,
                is_file: &|p| p.is_file(),
            })
        })
        .clone()
}

/// The root of rshmem's download cache: `$RSHMEM_CACHE_DIR`, else `$XDG_CACHE_HOME/rshmem`
/// (only if absolute, as the XDG spec asks), else `$HOME/.cache/rshmem`; `None` if none of
/// them is set. The builder stores the NVSHMEM wheel under the same root.
pub(crate) fn cache_root(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(dir) = non_empty(env, "RSHMEM_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(xdg) = non_empty(env, "XDG_CACHE_HOME").map(PathBuf::from) {
        if xdg.is_absolute() {
            return Some(xdg.join("rshmem"));
        }
    }
    non_empty(env, "HOME").map(|home| PathBuf::from(home).join(".cache").join("rshmem"))
}

/// The unpacked wheel's `nvidia/nvshmem` folder inside the cache.
pub(crate) fn wheel_dir(cache: &Path) -> PathBuf {
    cache
        .join(format!("{WHEEL}-{PINNED_VERSION}"))
        .join("nvidia")
        .join("nvshmem")
}

fn non_empty(env: &dyn Fn(&str) -> Option<OsString>, key: &str) -> Option<OsString> {
    env(key).filter(|v| !v.is_empty())
}

/// Asks `python3` where the `nvidia.nvshmem` package is, silently: any failure is `None`.
fn python_package_dir() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import nvidia.nvshmem as m; print(list(m.__path__)[0])",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let dir = text.trim();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// The file of the loaded shared object that contains `addr` (`dladdr`), e.g. to learn where
/// a library opened by soname lives.
pub(crate) fn loaded_path(addr: *const ()) -> Option<PathBuf> {
    // SAFETY: `Dl_info` is plain data; all-zero is a valid value for it.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `dladdr` only inspects `addr` (never dereferences it) and fills `info`.
    if unsafe { libc::dladdr(addr.cast(), &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success `dli_fname` is a NUL-terminated string owned by the loader, valid
    // while the object stays loaded; it is copied at once.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(OsStr::from_bytes(name.to_bytes())))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A temporary folder removed on drop (no extra crate needed for this).
    pub(crate) struct TempDir(pub PathBuf);

    impl TempDir {
        pub(crate) fn new(tag: &str) -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "rshmem-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        /// Creates an empty file at `rel` (and its folders).
        pub(crate) fn touch(&self, rel: &str) -> PathBuf {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, b"").unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn env_of(pairs: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn run(env: &dyn Fn(&str) -> Option<OsString>, python: Option<PathBuf>) -> Located {
        locate(&Sources {
            env,
            python_package: &move || python.clone(),
            is_file: &|p| p.is_file(),
        })
    }

    #[test]
    fn nvshmem_home_wins_and_lib64_is_tried() {
        let t = TempDir::new("home");
        let lib64 = t.touch("home/lib64/libnvshmem_host.so.3");
        let pkg = t.touch("pkg/lib/libnvshmem_host.so.3");
        let env = env_of(&[("NVSHMEM_HOME", &t.0.join("home"))]);
        assert_eq!(
            run(&env, Some(pkg.parent().unwrap().parent().unwrap().into())),
            Located::File(lib64)
        );
    }

    #[test]
    fn python_package_then_cache_then_soname() {
        let t = TempDir::new("order");
        let pkg_lib = t.touch("pkg/lib/libnvshmem_host.so.3");
        let cached =
            t.touch("cache/nvidia-nvshmem-cu13-3.4.5/nvidia/nvshmem/lib/libnvshmem_host.so.3");
        // An NVSHMEM_HOME without the library does not stop the search.
        let env = env_of(&[
            ("NVSHMEM_HOME", &t.0.join("empty")),
            ("RSHMEM_CACHE_DIR", &t.0.join("cache")),
        ]);
        assert_eq!(run(&env, Some(t.0.join("pkg"))), Located::File(pkg_lib));
        assert_eq!(run(&env, None), Located::File(cached));

        let env = env_of(&[("RSHMEM_CACHE_DIR", &t.0.join("nothing"))]);
        match run(&env, None) {
            Located::Soname { searched } => assert_eq!(searched.len(), 3, "{searched:?}"),
            other => panic!("expected the soname fallback, got {other:?}"),
        }
    }

    #[test]
    fn not_found_lists_every_place_tried_and_the_fix() {
        let t = TempDir::new("none");
        let env = env_of(&[("NVSHMEM_HOME", &t.0.join("nv")), ("HOME", &t.0.join("h"))]);
        let Located::Soname { searched } = run(&env, Some(t.0.join("pkg"))) else {
            panic!("nothing exists, so nothing can be found");
        };
        let msg = crate::contract::Error::NvshmemNotFound { searched }.to_string();
        for expected in [
            t.0.join("nv/lib/libnvshmem_host.so.3"),
            t.0.join("nv/lib64/libnvshmem_host.so.3"),
            t.0.join("pkg/lib/libnvshmem_host.so.3"),
            t.0.join(
                "h/.cache/rshmem/nvidia-nvshmem-cu13-3.4.5/nvidia/nvshmem/lib/libnvshmem_host.so.3",
            ),
        ] {
            assert!(msg.contains(&*expected.to_string_lossy()), "{msg}");
        }
        assert!(
            msg.contains("dynamic loader") && msg.contains("NVSHMEM_HOME"),
            "{msg}"
        );
    }

    #[test]
    fn python_absence_is_reported_not_fatal() {
        let env = |_: &str| None;
        let Located::Soname { searched } = run(&env, None) else {
            panic!("no sources at all");
        };
        assert!(searched[0]
            .to_string_lossy()
            .contains("import nvidia.nvshmem"));
    }

    #[test]
    fn cache_root_rule() {
        let p = Path::new;
        let env = env_of(&[
            ("RSHMEM_CACHE_DIR", p("/c")),
            ("XDG_CACHE_HOME", p("/x")),
            ("HOME", p("/h")),
        ]);
        assert_eq!(cache_root(&env), Some(PathBuf::from("/c")));
        let env = env_of(&[("XDG_CACHE_HOME", p("/x")), ("HOME", p("/h"))]);
        assert_eq!(cache_root(&env), Some(PathBuf::from("/x/rshmem")));
        let env = env_of(&[("XDG_CACHE_HOME", p("rel")), ("HOME", p("/h"))]);
        assert_eq!(cache_root(&env), Some(PathBuf::from("/h/.cache/rshmem")));
        let env = env_of(&[("RSHMEM_CACHE_DIR", p(""))]);
        assert_eq!(cache_root(&env), None);
    }

    #[test]
    fn loaded_path_names_the_library_of_a_symbol() {
        let path = loaded_path(libc::malloc as *const ()).expect("libc is loaded");
        assert!(path.to_string_lossy().contains("libc"), "{path:?}");
        assert_eq!(loaded_path(std::ptr::null()), None);
    }
}
