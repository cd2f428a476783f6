//! Step 1 of a build: the nested `cargo build` of the kernel crate for `nvptx64-nvidia-cuda`,
//! and what it reports back (the rlibs of the crate graph, the crate's own rlib, the local
//! packages to watch), read from cargo's JSON messages.
//!
//! The nested cargo runs with `RUSTC_BOOTSTRAP=1` (for `-Zbuild-std=core`) and
//! `-Ctarget-cpu=<arch>`, set for it alone, and without the variables that describe the outer
//! build ([`OUTER_ENV`]). The simulator library ([`sim_library`]) is a second nested build,
//! for the host.

use crate::arch::Arch;
use crate::error::{io, Error, Result};
use crate::plan::Plan;
use crate::toolchain::Toolchain;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the nested cargo build produced.
pub(crate) struct Nested {
    /// Every rlib of the kernel crate's graph (core and compiler_builtins included).
    pub rlibs: Vec<PathBuf>,
    /// The kernel crate's own rlib.
    pub own_rlib: PathBuf,
    /// Folders of the local (path) packages in the graph, to watch for changes.
    pub local_packages: Vec<PathBuf>,
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

/// Prefixes of further outer-build variables (the outer package's features and cfgs).
const OUTER_ENV_PREFIXES: &[&str] = &["CARGO_FEATURE_", "CARGO_CFG_"];

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

/// Builds `plan`'s kernel crate for `arch` into `target_dir`.
pub(crate) fn build(tc: &Toolchain, plan: &Plan, target_dir: &Path, arch: Arch) -> Result<Nested> {
    let manifest = plan.manifest.as_path();
    let out = command(tc, plan, target_dir, arch)
        .output()
        .map_err(io(format!(
            "running {} for the device build",
            tc.cargo.display()
        )))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = Report::read(tc, manifest, &stdout);
    if !out.status.success() {
        return Err(Error::Compile {
            krate: manifest.to_path_buf(),
            arch: arch.name(),
            diagnostics: failure_text(report.diagnostics, &String::from_utf8_lossy(&out.stderr)),
        });
    }
    let own_rlib = report.own_rlib.ok_or_else(|| Error::Tool {
        tool: "cargo build (device)".into(),
        message: format!(
            "no rlib for {} among the artifacts: is it a library crate?",
            manifest.display()
        ),
    })?;
    Ok(Nested {
        rlibs: report.rlibs,
        own_rlib,
        local_packages: report.local_packages,
    })
}

/// Prints `cargo:rerun-if-changed` for the sources of every local package the kernels are
/// built from (so that editing `rshmem-device` reruns the outer build script too).
pub(crate) fn watch(nested: &Nested) {
    for dir in &nested.local_packages {
        for watched in ["src", "Cargo.toml", "build.rs"] {
            let p = dir.join(watched);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
}

/// Builds `plan`'s kernel crate for the host as a `cdylib` that exports each kernel's host
/// code (`--cfg rshmem_sim_export`, see `rshmem_device::sim::SimExport`) into `target_dir`,
/// and returns the library's path.
pub(crate) fn sim_library(tc: &Toolchain, plan: &Plan, target_dir: &Path) -> Result<PathBuf> {
    let manifest = plan.manifest.as_path();
    let mut cmd = cargo(
        tc,
        plan,
        target_dir,
        &["rustc", "--lib", "--release", "--crate-type", "cdylib"],
    );
    cmd.env("CARGO_ENCODED_RUSTFLAGS", "--cfg\x1frshmem_sim_export");
    let out = cmd.output().map_err(io(format!(
        "running {} for the simulator library",
        tc.cargo.display()
    )))?;
    let report = Report::read(tc, manifest, &String::from_utf8_lossy(&out.stdout));
    if !out.status.success() {
        return Err(Error::Compile {
            krate: manifest.to_path_buf(),
            arch: "the simulator library (host)".into(),
            diagnostics: failure_text(report.diagnostics, &String::from_utf8_lossy(&out.stderr)),
        });
    }
    report.own_cdylib.ok_or_else(|| Error::Tool {
        tool: "cargo rustc (simulator library)".into(),
        message: format!(
            "cargo reported no `*{}` of {} (is it a library crate?)",
            std::env::consts::DLL_SUFFIX,
            manifest.display()
        ),
    })
}

/// The nested `cargo build` command, its environment cleaned of the outer build's.
fn command(tc: &Toolchain, plan: &Plan, target_dir: &Path, arch: Arch) -> Command {
    let mut flags = vec![format!("-Ctarget-cpu={arch}")];
    if plan.debug {
        flags.push("-Cdebuginfo=2".into());
    }
    if plan.checked {
        flags.extend(["--cfg".into(), "rshmem_checked".into()]);
    }
    let mut cmd = cargo(
        tc,
        plan,
        target_dir,
        &[
            "build",
            "--lib",
            "--release",
            "--target",
            "nvptx64-nvidia-cuda",
            "-Zbuild-std=core",
        ],
    );
    cmd.env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"));
    cmd
}

/// A nested cargo command on `plan`'s kernel crate (`args` first), reporting in JSON, with
/// the kernel crate's features and the environment cleaned of the outer build's.
fn cargo(tc: &Toolchain, plan: &Plan, target_dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(&tc.cargo);
    cmd.args(args)
        .arg("--manifest-path")
        .arg(&plan.manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .arg("--message-format=json-render-diagnostics");
    if let Some(features) = &plan.features {
        cmd.arg("--no-default-features");
        if !features.is_empty() {
            cmd.arg("--features").arg(features.join(","));
        }
    }
    for var in OUTER_ENV {
        cmd.env_remove(var);
    }
    for (k, _) in std::env::vars_os() {
        let key = k.to_string_lossy();
        if OUTER_ENV_PREFIXES.iter().any(|p| key.starts_with(p)) {
            cmd.env_remove(&k);
        }
    }
    cmd.env("RUSTC", &tc.rustc)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// What cargo's JSON messages on stdout say.
#[derive(Default)]
struct Report {
    rlibs: Vec<PathBuf>,
    own_rlib: Option<PathBuf>,
    /// The kernel crate's host `cdylib` (a simulator library build).
    own_cdylib: Option<PathBuf>,
    local_packages: Vec<PathBuf>,
    /// rustc's rendered diagnostics.
    diagnostics: String,
}

impl Report {
    /// Reads the messages of a build of `manifest`.
    fn read(tc: &Toolchain, manifest: &Path, stdout: &str) -> Report {
        let mut report = Report::default();
        let manifest_canon = manifest
            .canonicalize()
            .unwrap_or_else(|_| manifest.to_path_buf());
        for line in stdout.lines() {
            let Ok(msg) = serde_json::from_str::<Message>(line) else {
                continue;
            };
            match msg.reason.as_str() {
                "compiler-message" => {
                    if let Some(r) = msg.message.and_then(|m| m.rendered) {
                        report.diagnostics.push_str(&r);
                    }
                }
                "compiler-artifact" => report.artifact(tc, &manifest_canon, msg),
                _ => {}
            }
        }
        report
    }

    /// Notes one artifact: its package's folder if local, its nvptx64 rlibs.
    fn artifact(&mut self, tc: &Toolchain, manifest_canon: &Path, msg: Message) {
        let Some(mp) = msg.manifest_path.map(PathBuf::from) else {
            return;
        };
        let is_std = mp.starts_with(&tc.sysroot);
        let is_registry = mp
            .components()
            .any(|c| c.as_os_str() == "registry" || c.as_os_str() == "git");
        if !is_std && !is_registry {
            if let Some(dir) = mp.parent() {
                if !self.local_packages.iter().any(|p| p == dir) {
                    self.local_packages.push(dir.to_path_buf());
                }
            }
        }
        let own = || mp.canonicalize().unwrap_or(mp.clone()) == manifest_canon;
        for f in &msg.filenames {
            if f.ends_with(std::env::consts::DLL_SUFFIX) && own() {
                self.own_cdylib = Some(PathBuf::from(f));
            }
            let f = hashed_rlib(PathBuf::from(f), &msg.filenames);
            if f.extension().is_some_and(|e| e == "rlib")
                && f.components()
                    .any(|c| c.as_os_str() == "nvptx64-nvidia-cuda")
            {
                if own() {
                    self.own_rlib = Some(f.clone());
                }
                self.rlibs.push(f);
            }
        }
    }
}

/// A failed build's message: rustc's diagnostics, then stderr without cargo's progress lines
/// (json-render-diagnostics sends rustc's rendered errors to stderr too; keep both).
fn failure_text(mut text: String, stderr: &str) -> String {
    for line in stderr.lines() {
        let status = line.split_whitespace().next().unwrap_or("");
        if !CARGO_STATUS.contains(&status) {
            text.push_str(line);
            text.push('\n');
        }
    }
    text.trim().to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_keep_rustc_and_drop_cargo_progress() {
        let text = failure_text(
            "error[E0425]: cannot find value `x`\n".into(),
            "   Compiling k v0.1.0\nerror: could not compile `k`\n",
        );
        assert_eq!(
            text,
            "error[E0425]: cannot find value `x`\nerror: could not compile `k`"
        );
    }
}
