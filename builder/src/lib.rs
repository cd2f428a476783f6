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
//! debug info), `RSHMEM_CACHE_DIR` (download cache), `RSHMEM_OFFLINE=1` (never download),
//! `RSHMEM_NO_PTXAS=1` (skip cubins).

#![warn(missing_docs)]

mod error;
mod fetch;
mod link;
mod locate;
mod reuse;
mod toolchain;

pub use error::{Error, Result};
pub use fetch::cache_root;

use error::io;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use toolchain::Toolchain;

/// A GPU architecture to build for. Rust's nvptx backend needs sm_70 or newer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Arch {
    /// Volta (V100).
    Sm70,
    /// Turing (T4).
    Sm75,
    /// Ampere (A100).
    Sm80,
    /// Ampere (A10, RTX 30).
    Sm86,
    /// Ada (L4, L40, RTX 40).
    Sm89,
    /// Hopper (H100, H200). The default.
    Sm90,
    /// Hopper with its architecture-specific features (`wgmma`, `setmaxnreg`): `sm_90a` code
    /// runs on compute capability 9.0 only, so pair it with a portable target (the loader
    /// prefers it on sm_90 and falls back to the other elsewhere).
    Sm90a,
    /// Blackwell (B200).
    Sm100,
    /// Blackwell (RTX 50).
    Sm120,
}

impl Arch {
    /// Every architecture the builder knows.
    pub const ALL: &'static [Arch] = &[
        Arch::Sm70,
        Arch::Sm75,
        Arch::Sm80,
        Arch::Sm86,
        Arch::Sm89,
        Arch::Sm90,
        Arch::Sm90a,
        Arch::Sm100,
        Arch::Sm120,
    ];

    /// Compute capability as `major * 10 + minor`.
    pub const fn sm(self) -> u32 {
        match self {
            Arch::Sm70 => 70,
            Arch::Sm75 => 75,
            Arch::Sm80 => 80,
            Arch::Sm86 => 86,
            Arch::Sm89 => 89,
            Arch::Sm90 | Arch::Sm90a => 90,
            Arch::Sm100 => 100,
            Arch::Sm120 => 120,
        }
    }

    /// Whether the code uses architecture-specific features (the `a` suffix) and so runs
    /// only on exactly this compute capability.
    pub const fn arch_specific(self) -> bool {
        matches!(self, Arch::Sm90a)
    }

    /// `sm_90` style name (`sm_90a` for the architecture-specific target): what rustc's
    /// `target-cpu`, llc's `-mcpu` and ptxas's `-arch` take.
    pub fn name(self) -> String {
        format!(
            "sm_{}{}",
            self.sm(),
            if self.arch_specific() { "a" } else { "" }
        )
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Arch {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim();
        let digits = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("sm"))
            .unwrap_or(t);
        Arch::ALL
            .iter()
            .copied()
            .find(|a| a.name() == format!("sm_{digits}"))
            .ok_or_else(|| Error::BadArch(s.to_string()))
    }
}

/// Builds one kernel crate. See the crate documentation.
#[derive(Clone, Debug)]
pub struct Builder {
    krate: PathBuf,
    archs: Vec<Arch>,
    debug: bool,
    out_dir: Option<PathBuf>,
    target_dir: Option<PathBuf>,
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
    /// NVSHMEM device library version linked in, if the kernels call NVSHMEM.
    pub nvshmem_version: Option<(u32, u32, u32)>,
    /// Code per architecture.
    pub targets: Vec<TargetOutput>,
    /// The generated Rust file that `include_kernels!` includes.
    pub image_rs: PathBuf,
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
            out_dir: None,
            target_dir: None,
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

    /// Builds every architecture. See the crate documentation.
    pub fn build(self) -> Result<Output> {
        for var in [
            "NVSHMEM_HOME",
            "CUDA_HOME",
            "CUDA_PATH",
            "RSHMEM_ARCH",
            "RSHMEM_DEVICE_DEBUG",
            "RSHMEM_CACHE_DIR",
            "RSHMEM_OFFLINE",
            "RSHMEM_NO_PTXAS",
        ] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        let archs = match std::env::var("RSHMEM_ARCH") {
            Ok(list) if !list.trim().is_empty() => list
                .split(',')
                .map(Arch::from_str)
                .collect::<Result<Vec<_>>>()?,
            _ if self.archs.is_empty() => vec![Arch::Sm90],
            _ => self.archs.clone(),
        };
        let debug = self.debug || std::env::var_os("RSHMEM_DEVICE_DEBUG").is_some_and(|v| v != "0");
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or(Error::MissingEnv("OUT_DIR"))?),
        };
        let manifest = self.krate.join("Cargo.toml");
        let name = package_name(&manifest)?;
        let target_root = match &self.target_dir {
            Some(d) => d.clone(),
            // Shared by every kernel crate built into this outer target folder: `core` for
            // nvptx64 compiles once per architecture. Packages are told apart by name (cargo's
            // hashes of path packages are relative to their workspace, so two crates of the same
            // name could collide; within one workspace, names are unique).
            None => outer_target_dir(&out_dir).join("rshmem-device"),
        };
        let tc = Toolchain::detect()?;
        let ptxas = if std::env::var_os("RSHMEM_NO_PTXAS").is_some_and(|v| v != "0") {
            None
        } else {
            match locate::ptxas() {
                Ok(p) => Some(p),
                Err((_, why)) => {
                    println!("cargo:warning=rshmem-builder: no ptxas ({why}); embedding PTX only, the driver will JIT it");
                    None
                }
            }
        };

        let mut targets = Vec::new();
        let mut kernels = Vec::new();
        let mut nvshmem_version = None;
        let mut assembling = Vec::new();
        let mut finished = Vec::new();
        for arch in archs {
            let nested = nested_build(&tc, &manifest, &target_root.join(arch.name()), arch, debug)?;
            for dir in &nested.local_packages {
                for watched in ["src", "Cargo.toml", "build.rs"] {
                    let p = dir.join(watched);
                    if p.exists() {
                        println!("cargo:rerun-if-changed={}", p.display());
                    }
                }
            }
            let ptx = out_dir.join(format!("{name}.{arch}.ptx"));
            let cubin = ptxas
                .as_ref()
                .map(|_| out_dir.join(format!("{name}.{arch}.cubin")));
            let store = reuse::Store::new(target_root.join(arch.name()).join("images"));
            let inputs = reuse::Inputs::new(&nested.rlibs, arch.sm(), debug, ptxas.as_deref());
            let nvshmem_now = || locate::nvshmem().ok().map(|n| n.bitcode);
            if let Some(record) = inputs
                .as_ref()
                .and_then(|i| store.fetch(&name, i, nvshmem_now, &ptx, cubin.as_deref()))
            {
                if let Some(bc) = &record.nvshmem {
                    println!("cargo:rerun-if-changed={}", bc.path.display());
                }
                let text = std::fs::read_to_string(&ptx)
                    .map_err(io(format!("reading {}", ptx.display())))?;
                nvshmem_version = nvshmem_version.or(link::nvshmem_version_in_ptx(&text));
                kernels = record.kernels;
                targets.push(TargetOutput { arch, ptx, cubin });
                continue;
            }

            let work = out_dir.join(format!("{name}.{arch}.link"));
            let _ = std::fs::remove_dir_all(&work);
            let mut objects = Vec::new();
            let mut own = Vec::new();
            for (i, rlib) in nested.rlibs.iter().enumerate() {
                let members = link::extract_rlib(&tc, rlib, &work.join(format!("rlib{i}")))?;
                if *rlib == nested.own_rlib {
                    own = members.clone();
                }
                objects.extend(members);
            }
            kernels = link::kernels_in(&tc, &own)?;
            let crates_bc = work.join("crates-probe.bc");
            link::run(
                Command::new(tc.llvm("llvm-link"))
                    .args(&objects)
                    .arg("-o")
                    .arg(&crates_bc),
            )?;
            let wants_nvshmem: Vec<String> = link::undefined(&tc, &crates_bc)?
                .into_iter()
                .filter(|s| s.starts_with("nvshmem"))
                .collect();
            let nvshmem = if wants_nvshmem.is_empty() {
                None
            } else {
                let found = locate::nvshmem().map_err(|(searched, fetch_error)| {
                    Error::NvshmemNotFound {
                        symbols: wants_nvshmem
                            .iter()
                            .take(4)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", "),
                        searched,
                        version: fetch::NVSHMEM.version.into(),
                        fetch_error,
                    }
                })?;
                println!("cargo:rerun-if-changed={}", found.bitcode.display());
                Some(found.bitcode)
            };
            let linked = link::link(
                &tc,
                &link::LinkInputs {
                    work: &work,
                    objects: &objects,
                    kernels: &kernels,
                    nvshmem: nvshmem.as_deref(),
                    sm: arch,
                    debug,
                    ptx_out: &ptx,
                },
            )?;
            nvshmem_version = nvshmem_version.or(linked.nvshmem_version);

            // ptxas of one architecture runs while the next one is built and linked: it is
            // the longest step for kernels that use NVSHMEM's collectives.
            if let (Some(ptxas), Some(cubin)) = (&ptxas, &cubin) {
                let (ptxas, ptx, target) = (ptxas.clone(), linked.ptx.clone(), cubin.clone());
                assembling.push(std::thread::spawn(move || {
                    link::ptxas(&ptxas, &ptx, arch, &target)
                }));
            }
            let _ = std::fs::remove_dir_all(&work);
            if let Some(inputs) = inputs {
                let nvshmem = nvshmem.as_deref().and_then(reuse::FileStamp::of);
                let kernels = kernels.clone();
                let record = reuse::Record {
                    inputs,
                    nvshmem,
                    kernels,
                };
                finished.push((store, record, ptx.clone(), cubin.clone()));
            }
            targets.push(TargetOutput { arch, ptx, cubin });
        }
        for job in assembling {
            job.join().map_err(|_| Error::Tool {
                tool: "ptxas".into(),
                message: "the thread running it panicked".into(),
            })??;
        }
        // Only now is every output of these builds complete. Keeping them is an optimisation:
        // a failure costs the next build script its reuse, not this build.
        for (store, record, ptx, cubin) in finished {
            if let Err(e) = store.publish(&name, &record, &ptx, cubin.as_deref()) {
                println!(
                    "cargo:warning=rshmem-builder: could not keep {name}'s {} code for reuse: {e}",
                    ptx.display()
                );
            }
        }
        let image_rs = out_dir.join(format!("rshmem-image-{name}.rs"));
        let output = Output {
            name,
            kernels,
            nvshmem_version,
            targets,
            image_rs,
        };
        std::fs::write(&output.image_rs, image_source(&output))
            .map_err(io(format!("writing {}", output.image_rs.display())))?;
        Ok(output)
    }
}

/// What the nested cargo build produced.
struct Nested {
    /// Every rlib of the kernel crate's graph (core and compiler_builtins included).
    rlibs: Vec<PathBuf>,
    /// The kernel crate's own rlib.
    own_rlib: PathBuf,
    /// Folders of the local (path) packages in the graph, to watch for changes.
    local_packages: Vec<PathBuf>,
}

/// Environment variables cargo sets for a build script that must not leak into the nested
/// build: they describe the outer (host) build.
const OUTER_ENV: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_PRIMARY_PACKAGE",
    "TARGET",
    "HOST",
    "OUT_DIR",
    "PROFILE",
    "OPT_LEVEL",
    "DEBUG",
];

/// The first words of cargo's progress lines.
const CARGO_STATUS: &[&str] = &[
    "Compiling",
    "Updating",
    "Locking",
    "Downloading",
    "Downloaded",
    "Blocking",
    "Finished",
    "Adding",
    "Checking",
];

fn nested_build(
    tc: &Toolchain,
    manifest: &Path,
    target_dir: &Path,
    arch: Arch,
    debug: bool,
) -> Result<Nested> {
    let mut flags = vec![format!("-Ctarget-cpu={arch}")];
    if debug {
        flags.push("-Cdebuginfo=2".into());
    }
    let mut cmd = Command::new(&tc.cargo);
    cmd.args([
        "build",
        "--lib",
        "--release",
        "--target",
        "nvptx64-nvidia-cuda",
        "-Zbuild-std=core",
    ])
    .arg("--manifest-path")
    .arg(manifest)
    .arg("--target-dir")
    .arg(target_dir)
    .arg("--message-format=json-render-diagnostics");
    for var in OUTER_ENV {
        cmd.env_remove(var);
    }
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("CARGO_FEATURE_")
            || k.to_string_lossy().starts_with("CARGO_CFG_")
        {
            cmd.env_remove(k);
        }
    }
    cmd.env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"))
        .env("RUSTC", &tc.rustc)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = cmd.output().map_err(io(format!(
        "running {} for the device build",
        tc.cargo.display()
    )))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut rlibs = Vec::new();
    let mut own_rlib = None;
    let mut local_packages = Vec::new();
    let mut diagnostics = String::new();
    let manifest_canon = manifest
        .canonicalize()
        .unwrap_or_else(|_| manifest.to_path_buf());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<Message>(line) else {
            continue;
        };
        match msg.reason.as_str() {
            "compiler-message" => {
                if let Some(r) = msg.message.and_then(|m| m.rendered) {
                    diagnostics.push_str(&r);
                }
            }
            "compiler-artifact" => {
                let Some(mp) = msg.manifest_path.map(PathBuf::from) else {
                    continue;
                };
                let is_std = mp.starts_with(&tc.sysroot);
                let is_registry = mp
                    .components()
                    .any(|c| c.as_os_str() == "registry" || c.as_os_str() == "git");
                if !is_std && !is_registry {
                    if let Some(dir) = mp.parent() {
                        if !local_packages.iter().any(|p: &PathBuf| p == dir) {
                            local_packages.push(dir.to_path_buf());
                        }
                    }
                }
                for f in &msg.filenames {
                    let f = hashed_rlib(PathBuf::from(f), &msg.filenames);
                    if f.extension().is_some_and(|e| e == "rlib")
                        && f.components()
                            .any(|c| c.as_os_str() == "nvptx64-nvidia-cuda")
                    {
                        if mp.canonicalize().unwrap_or(mp.clone()) == manifest_canon {
                            own_rlib = Some(f.clone());
                        }
                        rlibs.push(f);
                    }
                }
            }
            _ => {}
        }
    }
    if !out.status.success() {
        // json-render-diagnostics sends rustc's rendered errors to stderr; keep both.
        // Keep rustc's messages, drop cargo's progress lines.
        let mut text = diagnostics;
        for line in stderr.lines() {
            let status = line.split_whitespace().next().unwrap_or("");
            if !CARGO_STATUS.contains(&status) {
                text.push_str(line);
                text.push('\n');
            }
        }
        return Err(Error::Compile {
            krate: manifest.to_path_buf(),
            arch: arch.name(),
            diagnostics: text.trim().to_string(),
        });
    }
    let own_rlib = own_rlib.ok_or_else(|| Error::Tool {
        tool: "cargo build (device)".into(),
        message: format!(
            "no rlib for {} among the artifacts: is it a library crate?",
            manifest.display()
        ),
    })?;
    Ok(Nested {
        rlibs,
        own_rlib,
        local_packages,
    })
}

/// Cargo reports the primary package's rlib at its uplifted path (`release/libX.rlib`),
/// which every package named X built into the same target folder overwrites; the copy in
/// `deps/` carries the package's hash (taken from its `.rmeta`) and stays put.
fn hashed_rlib(path: PathBuf, filenames: &[String]) -> PathBuf {
    if path.extension().is_none_or(|e| e != "rlib")
        || path.parent().is_some_and(|p| p.ends_with("deps"))
    {
        return path;
    }
    filenames
        .iter()
        .map(Path::new)
        .find(|f| {
            f.extension().is_some_and(|e| e == "rmeta")
                && f.parent().is_some_and(|p| p.ends_with("deps"))
        })
        .map(|rmeta| rmeta.with_extension("rlib"))
        .filter(|rlib| rlib.is_file())
        .unwrap_or(path)
}

#[derive(serde::Deserialize)]
struct Message {
    reason: String,
    #[serde(default)]
    manifest_path: Option<String>,
    #[serde(default)]
    filenames: Vec<String>,
    #[serde(default)]
    message: Option<Diagnostic>,
}

#[derive(serde::Deserialize)]
struct Diagnostic {
    rendered: Option<String>,
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

/// The Rust source `include_kernels!` includes: constants only, so the builder needs no
/// dependency on the host crate (the macro supplies `TargetImage`).
fn image_source(out: &Output) -> String {
    let version = match out.nvshmem_version {
        Some((a, b, c)) => format!("Some(({a}, {b}, {c}))"),
        None => "None".into(),
    };
    let targets: String = out
        .targets
        .iter()
        .map(|t| {
            let cubin = match &t.cubin {
                Some(c) => format!("Some(include_bytes!({:?}))", c.display().to_string()),
                None => "None".into(),
            };
            format!(
                "    TargetImage {{ sm: {}, ptx: include_str!({:?}), cubin: {cubin} }},\n",
                t.arch.sm(),
                t.ptx.display().to_string()
            )
        })
        .collect();
    format!(
        "// Generated by rshmem-builder. Do not edit.\n\
         pub const CRATE: &str = {:?};\n\
         pub const NVSHMEM_VERSION: Option<(u32, u32, u32)> = {version};\n\
         pub const KERNELS: &[&str] = &{:?};\n\
         pub const TARGETS: &[TargetImage] = &[\n{targets}];\n",
        out.name, out.kernels
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arches() {
        assert_eq!("sm_90".parse::<Arch>().unwrap(), Arch::Sm90);
        assert_eq!("sm80".parse::<Arch>().unwrap(), Arch::Sm80);
        assert_eq!(" 86 ".parse::<Arch>().unwrap(), Arch::Sm86);
        assert_eq!("sm_90a".parse::<Arch>().unwrap(), Arch::Sm90a);
        assert_eq!(Arch::Sm90a.to_string(), "sm_90a");
        assert_eq!(
            (Arch::Sm90a.sm(), Arch::Sm90.to_string()),
            (90, "sm_90".into())
        );
        let err = "sm_42".parse::<Arch>().unwrap_err().to_string();
        assert!(err.contains("\"sm_42\"") && err.contains("sm_90"), "{err}");
    }

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
}
