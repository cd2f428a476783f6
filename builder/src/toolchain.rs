//! The Rust toolchain the nested device build uses: its sysroot, the `rust-src` and
//! `llvm-tools` components (added with rustup when missing), and the LLVM tools they ship.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The toolchain of the `rustc` cargo is using, and its LLVM tools.
#[derive(Debug, Clone)]
pub(crate) struct Toolchain {
    pub rustc: PathBuf,
    pub cargo: PathBuf,
    pub sysroot: PathBuf,
    pub llvm_bin: PathBuf,
}

impl Toolchain {
    /// Finds the toolchain (`$RUSTC`/`$CARGO` as cargo sets them for build scripts), and makes
    /// sure the components the device build needs are there.
    pub fn detect() -> Result<Self> {
        let rustc = std::env::var_os("RUSTC").map_or_else(|| "rustc".into(), PathBuf::from);
        let cargo = std::env::var_os("CARGO").map_or_else(|| "cargo".into(), PathBuf::from);
        let out = Command::new(&rustc)
            .args(["--print", "sysroot"])
            .output()
            .map_err(crate::error::io(format!(
                "running {} --print sysroot",
                rustc.display()
            )))?;
        if !out.status.success() {
            return Err(Error::Tool {
                tool: format!("{} --print sysroot", rustc.display()),
                message: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let host = host_triple(&rustc)?;
        ensure_components(&sysroot, &host, &rustup_add)?;
        Ok(Self {
            llvm_bin: llvm_bin(&sysroot, &host),
            rustc,
            cargo,
            sysroot,
        })
    }

    /// Path of an LLVM tool from the `llvm-tools` component.
    pub fn llvm(&self, tool: &str) -> PathBuf {
        self.llvm_bin.join(tool)
    }
}

fn host_triple(rustc: &Path) -> Result<String> {
    let out = Command::new(rustc)
        .arg("-vV")
        .output()
        .map_err(crate::error::io("running rustc -vV"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .ok_or_else(|| Error::Tool {
            tool: "rustc -vV".into(),
            message: "no `host:` line".into(),
        })
}

fn llvm_bin(sysroot: &Path, host: &str) -> PathBuf {
    sysroot.join("lib/rustlib").join(host).join("bin")
}

/// The components the device build needs, each with the file that shows it is installed.
fn missing_components(sysroot: &Path, host: &str) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if !sysroot
        .join("lib/rustlib/src/rust/library/core/Cargo.toml")
        .exists()
    {
        missing.push("rust-src");
    }
    if !llvm_bin(sysroot, host).join("llvm-link").exists() {
        missing.push("llvm-tools");
    }
    missing
}

/// Adds components with rustup for the toolchain at `sysroot`; returns why it failed.
fn rustup_add(sysroot: &Path, components: &[&str]) -> std::result::Result<(), String> {
    if std::env::var_os("RSHMEM_NO_RUSTUP").is_some() {
        return Err("RSHMEM_NO_RUSTUP is set".into());
    }
    let toolchain = sysroot
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let mut cmd = Command::new("rustup");
    cmd.args(["component", "add"]).args(components);
    if let Some(t) = &toolchain {
        cmd.args(["--toolchain", t]);
    }
    eprintln!(
        "rshmem-builder: adding {} with rustup",
        components.join(", ")
    );
    match cmd.output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        Err(e) => Err(format!("cannot run rustup: {e}")),
    }
}

/// Installs components into a sysroot; returns why it failed.
pub(crate) type AddComponents = dyn Fn(&Path, &[&str]) -> std::result::Result<(), String>;

/// Checks the components; if some are missing, asks `add` to install them, then checks
/// again. The error names the exact command.
pub(crate) fn ensure_components(sysroot: &Path, host: &str, add: &AddComponents) -> Result<()> {
    let missing = missing_components(sysroot, host);
    if missing.is_empty() {
        return Ok(());
    }
    let detail = add(sysroot, &missing).err();
    let still = missing_components(sysroot, host);
    if still.is_empty() {
        return Ok(());
    }
    let toolchain = sysroot
        .file_name()
        .map(|n| format!(" --toolchain {}", n.to_string_lossy()))
        .unwrap_or_default();
    Err(Error::MissingComponent {
        sysroot: sysroot.to_path_buf(),
        missing: still.join(", "),
        command: format!("rustup component add {}{toolchain}", still.join(" ")),
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_components_error_names_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let sysroot = dir.path().join("stable-x86_64-unknown-linux-gnu");
        std::fs::create_dir_all(&sysroot).unwrap();
        let err = ensure_components(&sysroot, "x86_64-unknown-linux-gnu", &|_, c| {
            assert_eq!(c, ["rust-src", "llvm-tools"]);
            Err("download refused".into())
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("rustup component add rust-src llvm-tools --toolchain stable-x86_64-unknown-linux-gnu"),
            "{err}"
        );
        assert!(err.contains("download refused"), "{err}");
    }

    #[test]
    fn components_added_by_rustup_pass() {
        let dir = tempfile::tempdir().unwrap();
        let host = "x86_64-unknown-linux-gnu";
        let install = |sysroot: &Path, _: &[&str]| {
            let core = sysroot.join("lib/rustlib/src/rust/library/core");
            std::fs::create_dir_all(&core).unwrap();
            std::fs::write(core.join("Cargo.toml"), "").unwrap();
            let bin = llvm_bin(sysroot, host);
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(bin.join("llvm-link"), "").unwrap();
            Ok(())
        };
        ensure_components(dir.path(), host, &install).unwrap();
        // Now present: `add` must not be called again.
        ensure_components(dir.path(), host, &|_, _| panic!("not needed")).unwrap();
    }
}
