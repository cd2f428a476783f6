//! The Python package's tests, run by `cargo test --workspace` (what CI runs): builds the
//! package into a virtual environment and runs its pytest suite (`python/tests/test_*.py`) on
//! the CPU simulator.
//!
//! What it fetches, once: `maturin`, `numpy` and `pytest` (the versions in [`PINS`]) from the
//! Python package index with pip, into the virtual environment `<target>/python-venv` (made
//! with `python3 -m venv`; `RSHMEM_PYTHON` names another interpreter). Later runs reuse it while
//! the pins are the same. The extension is built by `maturin develop` (the dev profile, in
//! this workspace's target folder, so the crates and kernel images the workspace's tests built
//! are reused), with the examples' kernels compiled in for the simulator.

#[path = "../../tests/common/project.rs"]
#[allow(dead_code)]
mod project;

use project::without_outer_package;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What the virtual environment holds (`pip install` arguments).
const PINS: &[&str] = &["maturin==1.16.0", "numpy==2.2.6", "pytest==8.3.5"];

/// The workspace's target folder: this test binary is `<target>/<profile>/deps/<test>-<hash>`.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

/// Runs `cmd`, failing the test with its output if it fails.
fn run(what: &str, cmd: &mut Command) {
    let started = Instant::now();
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not start {:?}: {e}", cmd.get_program()));
    eprintln!(
        "python test: {what}: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if !out.status.success() {
        panic!(
            "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    print!("{}", String::from_utf8_lossy(&out.stdout));
}

/// The virtual environment with [`PINS`] installed, made or updated if needed.
fn venv(target: &Path) -> PathBuf {
    let venv = target.join("python-venv");
    let python = venv.join("bin/python");
    let stamp = venv.join("rshmem-pins.txt");
    let wanted = PINS.join("\n");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return venv;
    }
    let base = std::env::var("RSHMEM_PYTHON").unwrap_or_else(|_| "python3".into());
    if !python.exists() {
        eprintln!(
            "python test: making a virtual environment in {} ({base} -m venv)",
            venv.display()
        );
        run(
            "python -m venv",
            Command::new(&base).args(["-m", "venv"]).arg(&venv),
        );
    }
    eprintln!(
        "python test: installing {} from the Python package index into {} (once)",
        PINS.join(", "),
        venv.display()
    );
    run(
        "pip install",
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(PINS),
    );
    std::fs::write(&stamp, wanted).unwrap();
    venv
}

#[test]
fn pytest_suite_on_the_simulator() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = target_dir();
    let venv = venv(&target);
    let bin = venv.join("bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(
        "maturin develop",
        without_outer_package(
            Command::new(bin.join("maturin"))
                .args(["develop", "--quiet", "--manifest-path"])
                .arg(crate_dir.join("Cargo.toml"))
                .env("VIRTUAL_ENV", &venv)
                .env("PATH", &path)
                .env("CARGO_TARGET_DIR", &target),
        ),
    );
    run(
        "pytest",
        Command::new(bin.join("python"))
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(crate_dir.join("tests"))
            .env("RSHMEM_BACKEND", "sim")
            .env_remove("RSHMEM_NPES"),
    );
}
