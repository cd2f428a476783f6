//! Kernels the simulator runs without the program having been compiled with them: a kernel
//! crate built as a simulator library (`rshmem_builder::Builder::sim_library`, recorded in
//! the image's manifest as `sim_library`) and loaded here at run time. This is how Python's
//! `rshmem.load_kernels` runs your own kernels on the simulator; a Rust program normally links
//! its kernel crate and needs none of this.
//!
//! ```no_run
//! # fn main() -> rshmem_host::Result<()> {
//! use rshmem_host::SimLibrary;
//! let lib = SimLibrary::open("target/release/build/app-1234/out/librshmem_sim_my_kernels.so")?;
//! let scale = lib.kernel("scale", Some("x: *mut f32, n: u32, k: f32"))?;
//! // module.launch_raw_on(&stream, "scale", config, &args, Some(scale)) on a simulator PE
//! # let _ = scale; Ok(()) }
//! ```
//!
//! The library carries its own copy of `rshmem-device`, which reads the simulator's state
//! this program's copy made: it is refused unless both come from the same source and rustc
//! (`rshmem_device::sim::SIM_ABI`). Memory one side allocates in that state the other may
//! free, so both must use the system allocator (Rust's default, the library's): a program
//! with its own `#[global_allocator]` cannot load one. A library stays loaded until the
//! process ends.

use crate::contract::{Error, Result, SimEntry};
use rshmem_device::sim::{SimExport, SIM_ABI, SIM_SYMBOL_PREFIX};
use std::path::{Path, PathBuf};

/// A simulator library, loaded for the rest of the process.
#[derive(Debug)]
pub struct SimLibrary {
    path: PathBuf,
    lib: &'static libloading::Library,
}

impl SimLibrary {
    /// Loads the library at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        // SAFETY: a library rshmem-builder made runs no code when loaded (Rust has no
        // constructors); one made otherwise is the caller's to vouch for, as for any dlopen.
        let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| Error::Module {
            module: path.display().to_string(),
            message: format!("cannot load the simulator library: {e}"),
        })?;
        // Never unloaded: its kernels' exports are `'static`, and threads it ran may have
        // registered thread-local destructors in it.
        Ok(Self {
            path,
            lib: Box::leak(Box::new(lib)),
        })
    }

    /// The path it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The host code of kernel `name`, checked to be built from this program's
    /// `rshmem-device` and rustc, and, where `signature` is given, to take that parameter
    /// list (the image's record of the same kernel).
    pub fn kernel(&self, name: &str, signature: Option<&str>) -> Result<SimEntry> {
        let refuse = |message: String| Error::Module {
            module: self.path.display().to_string(),
            message,
        };
        let symbol = format!("{SIM_SYMBOL_PREFIX}{name}\0");
        // SAFETY: the symbol is the export `#[kernel]` emits in a simulator library build:
        // `extern "C" fn() -> &'static SimExport`.
        let export: &'static SimExport = unsafe {
            let f = self
                .lib
                .get::<extern "C" fn() -> &'static SimExport>(symbol.as_bytes())
                .map_err(|_| {
                    refuse(format!(
                        "the simulator library has no kernel `{name}` (symbol `{}`)",
                        &symbol[..symbol.len() - 1]
                    ))
                })?;
            f()
        };
        // SAFETY: the fingerprint comes first in every layout of `SimExport` and is a static
        // string of the library, which stays loaded.
        let abi = unsafe { export.abi.get() };
        if abi != Some(SIM_ABI) {
            return Err(refuse(format!(
                "the simulator library was built from another rshmem-device or rustc ({}) than \
                 this program ({SIM_ABI}): it shares the simulator's state with this program, \
                 so both must come from the same source and toolchain; rebuild it (or this \
                 program)",
                abi.unwrap_or("no readable fingerprint")
            )));
        }
        // SAFETY: the same layout (checked above); static strings of the loaded library.
        let (got_name, got_sig) = unsafe { (export.name.get(), export.signature.get()) };
        if got_name != Some(name) {
            return Err(refuse(format!(
                "the export for `{name}` names kernel {got_name:?}"
            )));
        }
        if let Some(want) = signature {
            if got_sig != Some(want) {
                return Err(refuse(format!(
                    "kernel `{name}` is `{name}({})` in the simulator library but `{name}({want})` \
                     in the image: they come from different sources; rebuild both",
                    got_sig.unwrap_or("?")
                )));
            }
        }
        Ok(SimEntry::Loaded(export))
    }
}
