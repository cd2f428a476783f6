//! # rshmem-builder
//!
//! Builds a `no_std` kernel crate to PTX (and cubin where `ptxas` is available), linked with
//! NVSHMEM's device library, from a `build.rs` — the role of Rust-CUDA's `cuda_builder`.
//!
//! ```no_run
//! // build.rs of the crate that launches the kernels
//! use rshmem_builder::{Arch, Builder};
//!
//! fn main() {
//!     Builder::new("kernels")           // path of the kernel crate, relative to this crate
//!         .arch(Arch::Sm90)
//!         .arch(Arch::Sm80)
//!         .build()
//!         .unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```
//!
//! and in the crate: `static KERNELS: rshmem::KernelImage = rshmem::include_kernels!("kernels");`
//! (the kernel crate's package name).
//!
//! What `build` does, per architecture:
//!
//! 1. a nested `cargo build --release --target nvptx64-nvidia-cuda -Zbuild-std=core` of the
//!    kernel crate, in its own target folder next to the outer one (no lock contention, no
//!    rebuild of the outer crate), with `RUSTC_BOOTSTRAP=1` set for that build only;
//! 2. the link step in [`link`](crate::link): all crate bitcode, then — only if the kernels
//!    call NVSHMEM — the needed part of NVSHMEM's device bitcode, internalize, O3, `llc`;
//! 3. `ptxas` to a cubin, failing the build with ptxas's message on error.
//!
//! Steps 2 and 3 are skipped when the nested build left every rlib as it was and nothing else
//! they read changed (`src/reuse.rs`): their outputs are kept beside the nested build and
//! copied from there. A `build.rs` that builds several kernel crates reruns when any of them
//! changes, and then links only the one that changed; `cargo test`, `cargo clippy` and
//! `cargo build --release`, each with a build-script output folder of its own, link once.
//!
//! It writes `<name>.sm_XX.ptx`/`.cubin` and `rshmem-image-<name>.rs` into `OUT_DIR`, and
//! prints `cargo:rerun-if-changed` for every local crate the kernels are built from.
//!
//! Environment: `NVSHMEM_HOME` (NVSHMEM install), `CUDA_HOME` (for ptxas),
//! `RSHMEM_ARCH=sm_80,sm_90` (overrides the architectures), `RSHMEM_DEVICE_DEBUG=1` (device
//! debug info), `RSHMEM_CHECKED=1|0` (the checked device mode where the build script does not
//! choose it, see [`Builder::checked`]), `RSHMEM_CACHE_DIR` (download cache), `RSHMEM_OFFLINE=1` (never download),
//! `RSHMEM_NO_PTXAS=1` (skip cubins), `RSHMEM_SIM_LIBRARY=1` (a simulator library beside every
//! image, [`Builder::sim_library`]).

//! The source is laid out by step: [`Arch`] (`src/arch.rs`, the one table of architectures),
//! `plan.rs` (settings and environment, settled first), `nested.rs` (the nested cargo build),
//! `per_arch.rs` (one architecture: reuse or link, then ptxas), `link.rs`, `reuse.rs`,
//! `image.rs` (the generated image source); `locate.rs`, `fetch.rs` and `toolchain.rs` find
//! the tools and NVSHMEM.

#![warn(missing_docs)]

mod arch;
mod error;
mod fetch;
mod image;
mod link;
mod locate;
mod nested;
mod per_arch;
mod plan;
mod reuse;
mod toolchain;

pub use arch::Arch;
pub use error::{Error, Result};
pub use fetch::cache_root;

use std::path::{Path, PathBuf};
use toolchain::Toolchain;

/// Builds one kernel crate. See the crate documentation.
#[derive(Clone, Debug)]
pub struct Builder {
    krate: PathBuf,
    archs: Vec<Arch>,
    debug: bool,
    checked: Option<bool>,
    image_name: Option<String>,
    features: Option<Vec<String>>,
    out_dir: Option<PathBuf>,
    target_dir: Option<PathBuf>,
    sim_library: bool,
}

/// The code built for one architecture.
#[derive(Clone, Debug)]
pub struct TargetOutput {
    /// The architecture.
    pub arch: Arch,
    /// The PTX file.
    pub ptx: PathBuf,
    /// The cubin file, where ptxas was available.
    pub cubin: Option<PathBuf>,
}

/// What a build produced.
#[derive(Clone, Debug)]
pub struct Output {
    /// The kernel crate's package name (the name `include_kernels!` takes).
    pub name: String,
    /// The kernel entry points.
    pub kernels: Vec<String>,
    /// Each kernel's parameter list as written, `(kernel, "x: *mut f32, n: u32")`.
    pub signatures: Vec<(String, String)>,
    /// NVSHMEM device library version linked in, if the kernels call NVSHMEM.
    pub nvshmem_version: Option<(u32, u32, u32)>,
    /// Code per architecture.
    pub targets: Vec<TargetOutput>,
    /// The generated Rust file that `include_kernels!` includes.
    pub image_rs: PathBuf,
    /// The same image as JSON (`rshmem-image-<name>.json`: names, signatures, NVSHMEM version,
    /// the PTX and cubin files), what a program loads at run time (`rshmem.load_kernels` in
    /// Python).
    pub manifest: PathBuf,
    /// The simulator library, where [`Builder::sim_library`] asked for one.
    pub sim_library: Option<PathBuf>,
}

impl Builder {
    /// A builder for the kernel crate at `path` (relative paths are relative to
    /// `CARGO_MANIFEST_DIR`, i.e. the crate whose `build.rs` calls this).
    pub fn new(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let krate = match std::env::var_os("CARGO_MANIFEST_DIR") {
            Some(dir) if path.is_relative() => PathBuf::from(dir).join(path),
            _ => path.to_path_buf(),
        };
        Self {
            krate,
            archs: Vec::new(),
            debug: false,
            checked: None,
            image_name: None,
            features: None,
            out_dir: None,
            target_dir: None,
            sim_library: false,
        }
    }

    /// Adds an architecture (default: sm_90 alone).
    pub fn arch(mut self, arch: Arch) -> Self {
        if !self.archs.contains(&arch) {
            self.archs.push(arch);
        }
        self
    }

    /// Emits device debug info (`-C debuginfo=2`, O1 instead of O3). Off by default.
    pub fn device_debug(mut self, on: bool) -> Self {
        self.debug = on;
        self
    }

    /// The checked device mode (`--cfg rshmem_checked` for the kernel crate and
    /// `rshmem-device`): device waits are bounded (`RSHMEM_HANG_TIMEOUT` at run time) and
    /// every SHMEM call checks its PE number and that its symmetric address lies in the heap,
    /// a failure trapping with the call, PE, block and thread in the job's error.
    ///
    /// Default: what `RSHMEM_CHECKED` says (`1` on, `0` off) where it is set, else on exactly
    /// when the kernels are built with device debug info ([`Builder::device_debug`] or
    /// `RSHMEM_DEVICE_DEBUG=1`), the kernels' debug build: the nested device build is always
    /// a release build, whatever the profile of the crate whose `build.rs` runs it. A checked
    /// build has a nested target folder of its own, so switching does not rebuild the other.
    pub fn checked(mut self, on: bool) -> Self {
        self.checked = Some(on);
        self
    }

    /// The image's name: what `include_kernels!` takes and the output files are named after
    /// (default: the kernel crate's package name). Two images of one crate (checked and
    /// unchecked) need two names.
    pub fn image_name(mut self, name: impl Into<String>) -> Self {
        self.image_name = Some(name.into());
        self
    }

    /// Builds the kernel crate with exactly these cargo features (`--no-default-features
    /// --features ...`) instead of its defaults: one crate can then hold several families of
    /// kernels, each its own image. Give each such image its own [`Builder::image_name`].
    ///
    /// A change to a source file that only a disabled feature's modules read leaves the nested
    /// build of this image as it was (cargo's dependency info lists the files rustc read), so
    /// its link and ptxas are reused: editing one family relinks only its own image.
    ///
    /// ```no_run
    /// # use rshmem_builder::{Arch, Builder};
    /// Builder::new("../kernels/ops")
    ///     .features(["coll"])
    ///     .image_name("rshmem-ops-coll")
    ///     .arch(Arch::Sm90)
    ///     .build()
    ///     .unwrap_or_else(|e| panic!("{e}"));
    /// ```
    pub fn features<S: Into<String>>(mut self, features: impl IntoIterator<Item = S>) -> Self {
        self.features = Some(features.into_iter().map(Into::into).collect());
        self
    }

    /// Where outputs go (default: `OUT_DIR`).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The nested build's target folder (default: `rshmem-device` in the outer target
    /// folder, one subfolder per architecture).
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Also builds the kernel crate for the host as a simulator library (off by default):
    /// `lib<name>.sim.so` beside the image, named in its manifest (`sim_library`), which a
    /// program that was not compiled with the kernel crate loads to run its kernels on the
    /// simulator (Python's `rshmem.load_kernels`; `rshmem_host::SimLibrary`). It is a second
    /// nested build, a release build for the host in `<target>/sim`, and works only with the
    /// `rshmem-device` source and rustc of the program that loads it. `RSHMEM_SIM_LIBRARY=1`
    /// in the build's environment turns it on for every image the build makes.
    pub fn sim_library(mut self, on: bool) -> Self {
        self.sim_library = on;
        self
    }

    /// Builds every architecture. See the crate documentation.
    pub fn build(self) -> Result<Output> {
        let plan = plan::Plan::new(&self)?;
        let tc = Toolchain::detect()?;
        let ptxas = plan::ptxas();

        let mut targets = Vec::new();
        let mut kernels = Vec::new();
        let mut signatures = Vec::new();
        let mut nvshmem_version = None;
        let mut assembling = Vec::new();
        let mut finished = Vec::new();
        for &arch in &plan.archs {
            let code = per_arch::build(&plan, &tc, ptxas.as_deref(), arch)?;
            nvshmem_version = nvshmem_version.or(code.nvshmem_version);
            kernels = code.kernels;
            signatures = code.signatures;
            assembling.extend(code.assembling);
            if let Some((store, record)) = code.keep {
                finished.push((store, record, code.target.clone()));
            }
            targets.push(code.target);
        }
        for job in assembling {
            job.join().map_err(|_| Error::Tool {
                tool: "ptxas".into(),
                message: "the thread running it panicked".into(),
            })??;
        }
        // Only now is every output of these builds complete. Keeping them is an optimisation:
        // a failure costs the next build script its reuse, not this build.
        for (store, record, target) in finished {
            if let Err(e) = store.publish(&plan.name, &record, &target.ptx, target.cubin.as_deref())
            {
                println!(
                    "cargo:warning=rshmem-builder: could not keep {}'s {} code for reuse: {e}",
                    plan.name,
                    target.ptx.display()
                );
            }
        }
        let sim_library = match plan.sim_library {
            true => Some(sim_library(&plan, &tc)?),
            false => None,
        };
        let image_rs = plan.out_dir.join(format!("rshmem-image-{}.rs", plan.name));
        let manifest = plan
            .out_dir
            .join(format!("rshmem-image-{}.json", plan.name));
        let output = Output {
            name: plan.name,
            kernels,
            signatures,
            nvshmem_version,
            targets,
            image_rs,
            manifest,
            sim_library,
        };
        image::write(&output)?;
        Ok(output)
    }
}

/// Builds `plan`'s simulator library and puts it beside the image, replacing any earlier one
/// by a rename (a running program may have the old one loaded).
fn sim_library(plan: &plan::Plan, tc: &Toolchain) -> Result<PathBuf> {
    let built = nested::sim_library(tc, plan, &plan.target_root.join("sim"))?;
    let (prefix, suffix) = (std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let dest = plan
        .out_dir
        .join(format!("{prefix}{}.sim{suffix}", plan.name));
    let part = dest.with_extension("part");
    std::fs::copy(&built, &part).map_err(error::io(format!("writing {}", part.display())))?;
    std::fs::rename(&part, &dest).map_err(error::io(format!("writing {}", dest.display())))?;
    Ok(dest)
}
