//! The simulator's ABI fingerprint (`RSHMEM_DEVICE_SIM_ABI`): a kernel crate built as a
//! simulator library (`rshmem_builder::Builder::sim_library`) carries its own copy of this
//! crate, which reads the simulator's state that the loading program's copy made. That is
//! sound only where both copies lay their types out alike: the same source and the same
//! rustc. The fingerprint names both; a library whose fingerprint differs is refused.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

/// FNV-1a, 64 bits: stable across Rust versions (std's hashers are not promised to be).
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading src/") {
        let path = entry.expect("reading src/").path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let src = root.join("src");
    let mut paths = Vec::new();
    files(&src, &mut paths);
    paths.sort();
    let mut hash = Fnv(0xcbf2_9ce4_8422_2325);
    for path in &paths {
        hash.write(
            path.strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .as_bytes(),
        );
        hash.write(&std::fs::read(path).expect("reading a source file"));
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = std::process::Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| format!("{} (version unknown)", rustc.to_string_lossy()));
    println!(
        "cargo:rustc-env=RSHMEM_DEVICE_SIM_ABI=rshmem-device {} source {:016x}, {version}",
        std::env::var("CARGO_PKG_VERSION").unwrap(),
        hash.finish()
    );
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
