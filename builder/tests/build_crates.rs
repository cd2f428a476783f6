//! End-to-end builds through rshmem-builder, as a user's `build.rs` runs it: the shipped
//! kernels, a new user crate, and every error a user can hit, each checked by its message.
//!
//! The scaffolded crates share one target folder (`target/builder-tests`), so `core` for
//! nvptx64 and the builder's own dependencies compile once for the whole file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn shared_target() -> PathBuf {
    workspace().join("target/builder-tests")
}

/// A kernel crate `user-kernels-N` (in folder `user-kernels`) and an app `user-app-N` whose
/// build.rs builds it.
struct Scaffold {
    _dir: tempfile::TempDir,
    root: PathBuf,
    kernel_name: String,
}

/// A fresh number per scaffold: the tests run in parallel in one target folder, where
/// packages of the same name would overwrite each other's artifacts.
fn unique() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// `main.rs` of the bare app: includes the generated image with its own `TargetImage`, so it
/// needs nothing but the builder (and so builds where NVSHMEM is absent).
const BARE_MAIN: &str = r#"
#[allow(dead_code)]
struct TargetImage { sm: u32, ptx: &'static str, cubin: Option<&'static [u8]> }
mod image {
    use super::TargetImage;
    include!(concat!(env!("OUT_DIR"), "/rshmem-image-user-kernels.rs"));
}
fn main() {
    println!("crate={}", image::CRATE);
    println!("kernels={:?}", image::KERNELS);
    println!("nvshmem={:?}", image::NVSHMEM_VERSION);
    for t in image::TARGETS {
        println!("sm_{} entries={} cubin={}", t.sm, t.ptx.matches(".entry").count(), t.cubin.is_some());
    }
}
"#;

impl Scaffold {
    fn new(kernel_src: &str, app_deps: &str, main_rs: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let ws = workspace();
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let n = unique();
        let (app, kernels) = (format!("user-app-{n}"), format!("user-kernels-{n}"));
        write(
            "user-kernels/Cargo.toml",
            &format!(
                "[package]\nname = \"{kernels}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [dependencies]\nrshmem-device = {{ path = {:?} }}\n\n[workspace]\n",
                ws.join("shmem-device")
            ),
        );
        write("user-kernels/src/lib.rs", kernel_src);
        write(
            "user-app/Cargo.toml",
            &format!(
                "[package]\nname = \"{app}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [dependencies]\n{app_deps}\n\n\
                 [build-dependencies]\nrshmem-builder = {{ path = {:?} }}\n\n[workspace]\n",
                ws.join("builder")
            ),
        );
        write(
            "user-app/build.rs",
            "fn main() {\n    rshmem_builder::Builder::new(\"../user-kernels\").build().unwrap_or_else(|e| panic!(\"{e}\"));\n}\n",
        );
        write(
            "user-app/src/main.rs",
            &main_rs.replace("user-kernels", &kernels),
        );
        Scaffold {
            _dir: dir,
            root,
            kernel_name: kernels,
        }
    }

    fn bare(kernel_src: &str) -> Self {
        Self::new(kernel_src, "", BARE_MAIN)
    }

    fn kernel_file(&self) -> PathBuf {
        self.root.join("user-kernels/src/lib.rs")
    }

    /// `cargo run` of the app, with extra environment.
    fn run(&self, envs: &[(&str, &str)]) -> Output {
        self.cargo(&["run", "--quiet"], envs)
    }

    /// A cargo command on the app, with extra environment.
    fn cargo(&self, args: &[&str], envs: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(args)
            .current_dir(self.root.join("user-app"))
            .env("CARGO_TARGET_DIR", shared_target());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const NVSHMEM_KERNEL: &str = r#"#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
use rshmem_device::prelude::*;

#[kernel]
pub unsafe fn to_right(dst: *mut i32) {
    let (me, n) = (shmem::my_pe(), shmem::n_pes());
    shmem::p(dst, me, (me + 1) % n);
    shmem::quiet();
}
"#;

const PLAIN_KERNEL: &str = r#"#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
use rshmem_device::prelude::*;

#[kernel]
pub unsafe fn scale(x: *mut f32, n: u32, k: f32) {
    let i = thread::index_1d();
    if i < n {
        *x.add(i as usize) *= k;
    }
}
"#;

/// Environment in which no NVSHMEM can be found or fetched: an empty cache and a pip that
/// may use no index.
fn no_nvshmem_env(cache: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("RSHMEM_CACHE_DIR", cache.display().to_string()),
        ("NVSHMEM_HOME", String::new()),
        ("PIP_NO_INDEX", "1".into()),
        (
            "PIP_FIND_LINKS",
            cache.join("no-wheels-here").display().to_string(),
        ),
        ("RSHMEM_NO_PTXAS", "1".into()),
    ]
}

fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, s)| (*k, s.as_str())).collect()
}

#[test]
fn new_user_crate_builds_and_embeds_its_kernels() {
    let s = Scaffold::new(
        NVSHMEM_KERNEL,
        &format!("rshmem = {{ path = {:?} }}", workspace()),
        r#"
static KERNELS: rshmem::KernelImage = rshmem::include_kernels!("user-kernels");
fn main() {
    println!("name={} kernels={:?} nvshmem={:?}", KERNELS.name, KERNELS.kernels, KERNELS.nvshmem_version);
    for t in KERNELS.targets {
        assert!(t.ptx.contains(".visible .entry to_right("));
        println!("sm_{} cubin={}", t.sm, t.cubin.is_some_and(|c| c.starts_with(b"\x7fELF")));
    }
}
"#,
    );
    let out = s.run(&[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("kernels=[\"to_right\"] nvshmem=Some((3, 4, 5))"),
        "{t}"
    );
    assert!(t.contains("sm_90 cubin=true"), "{t}");
}

#[test]
fn kernels_without_nvshmem_need_no_nvshmem() {
    let cache = tempfile::tempdir().unwrap();
    let s = Scaffold::bare(PLAIN_KERNEL);
    let env = no_nvshmem_env(cache.path());
    let out = s.run(&as_refs(&env));
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("kernels=[\"scale\"]") && t.contains("nvshmem=None"),
        "{t}"
    );
    assert!(t.contains("sm_90 entries=1 cubin=false"), "{t}");
    assert!(!cache.path().join("nvidia-nvshmem-cu13-3.4.5").exists());
}

#[test]
fn missing_nvshmem_without_network_says_what_to_do() {
    let cache = tempfile::tempdir().unwrap();
    let s = Scaffold::bare(NVSHMEM_KERNEL);
    let env = no_nvshmem_env(cache.path());
    let out = s.run(&as_refs(&env));
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("the kernels call NVSHMEM (nvshmem_"), "{t}");
    assert!(t.contains("NVSHMEM's device library was not found"), "{t}");
    assert!(
        t.contains("fetching nvidia-nvshmem-cu13==3.4.5 failed"),
        "{t}"
    );
    assert!(t.contains("Set NVSHMEM_HOME"), "{t}");
}

#[test]
fn bad_arch_is_named() {
    let s = Scaffold::bare(PLAIN_KERNEL);
    let out = s.run(&[("RSHMEM_ARCH", "sm_90,sm_42"), ("RSHMEM_NO_PTXAS", "1")]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("unknown GPU architecture \"sm_42\": use one of sm_70"),
        "{t}"
    );
}

#[test]
fn kernel_compile_errors_show_rustc_diagnostics() {
    let s = Scaffold::bare(&PLAIN_KERNEL.replace("*= k;", "*= \"not a float\";"));
    let out = s.run(&[("RSHMEM_NO_PTXAS", "1")]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("failed to compile for sm_90"), "{t}");
    assert!(
        t.contains("error[E0277]") || t.contains("error[E0308]"),
        "{t}"
    );
    assert!(t.contains("src/lib.rs:9"), "{t}");
    assert!(
        !t.contains("Compiling core"),
        "cargo's progress lines are noise: {t}"
    );
}

#[test]
fn kernel_signature_errors_come_from_the_macro() {
    let s = Scaffold::bare(
        &PLAIN_KERNEL
            .replace("k: f32) {", "k: f32) -> u32 {")
            .replace("    }\n}", "    }\n    0\n}"),
    );
    let out = s.run(&[("RSHMEM_NO_PTXAS", "1")]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("a #[kernel] cannot return a value"), "{t}");
}

/// A `ptxas` of the test's own, to put first on `PATH`.
struct FakePtxas {
    dir: tempfile::TempDir,
}

impl FakePtxas {
    /// One that runs the shell script `body` (ptxas's arguments: `-arch=sm_XX PTX -o CUBIN`).
    fn new(body: impl FnOnce(&Path) -> String) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ptxas = dir.path().join("ptxas");
        std::fs::write(&ptxas, format!("#!/bin/sh\n{}", body(dir.path()))).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&ptxas, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Self { dir }
    }

    /// One that notes every PTX it is given (one per link) and writes a stand-in cubin.
    fn counting() -> Self {
        Self::new(|dir| {
            format!(
                "echo \"$2\" >>'{}'\nprintf '\\177ELF' >\"$4\"\n",
                dir.join("assembled").display()
            )
        })
    }

    /// `PATH` with this ptxas first.
    fn path(&self) -> String {
        format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap()
        )
    }

    /// How many times crate `krate`'s sm_90 PTX was assembled, i.e. linked.
    fn assembled(&self, krate: &str) -> usize {
        let log = std::fs::read_to_string(self.dir.path().join("assembled")).unwrap_or_default();
        let ptx = format!("/{krate}.sm_90.ptx");
        log.lines().filter(|l| l.ends_with(&ptx)).count()
    }
}

#[test]
fn ptxas_errors_fail_the_build_with_its_message() {
    let fake = FakePtxas::new(|_| "echo 'ptxas fatal   : planted failure' >&2\nexit 255\n".into());
    let s = Scaffold::bare(PLAIN_KERNEL);
    let out = s.run(&[("PATH", &fake.path())]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("rejected") && t.contains("planted failure"),
        "{t}"
    );
}

#[test]
fn rebuilds_exactly_when_kernel_sources_change() {
    let s = Scaffold::bare(PLAIN_KERNEL);
    let ptxas = FakePtxas::counting();
    let path = ptxas.path();
    let env = [("PATH", path.as_str())];
    let first = s.run(&env);
    assert!(first.status.success(), "{}", text(&first));
    assert_eq!(ptxas.assembled(&s.kernel_name), 1);

    // No change: the build script does not run again.
    let again = s.run(&env);
    assert!(again.status.success());
    assert_eq!(ptxas.assembled(&s.kernel_name), 1);

    // The build script reruns (a variable it watches changed) but the kernel crate did not:
    // the code is reused, not linked again.
    let rerun = s.run(&[("PATH", path.as_str()), ("RSHMEM_OFFLINE", "1")]);
    let t = text(&rerun);
    assert!(rerun.status.success(), "{t}");
    assert!(
        t.contains("kernels=[\"scale\"]") && t.contains("cubin=true"),
        "{t}"
    );
    assert_eq!(ptxas.assembled(&s.kernel_name), 1);

    // A new kernel in the source: rebuilt, and the new entry is in the PTX.
    let mut src = std::fs::read_to_string(s.kernel_file()).unwrap();
    src.push_str("\n#[kernel]\npub unsafe fn added_later(x: *mut u32) { *x = 7; }\n");
    std::fs::write(s.kernel_file(), src).unwrap();
    let edited = s.run(&env);
    let t = text(&edited);
    assert!(edited.status.success(), "{t}");
    assert!(t.contains("kernels=[\"added_later\", \"scale\"]"), "{t}");
    assert!(t.contains("sm_90 entries=2 cubin=true"), "{t}");
    assert_eq!(ptxas.assembled(&s.kernel_name), 2);
}

#[test]
fn one_build_script_relinks_only_the_kernel_crate_that_changed() {
    let s = Scaffold::bare(PLAIN_KERNEL);
    // A second kernel crate beside the first, built by the same build.rs.
    let other = format!("other-kernels-{}", unique());
    let other_dir = s.root.join("other-kernels");
    std::fs::create_dir_all(other_dir.join("src")).unwrap();
    let manifest = std::fs::read_to_string(s.root.join("user-kernels/Cargo.toml")).unwrap();
    std::fs::write(
        other_dir.join("Cargo.toml"),
        manifest.replace(&s.kernel_name, &other),
    )
    .unwrap();
    std::fs::write(other_dir.join("src/lib.rs"), NVSHMEM_KERNEL).unwrap();
    std::fs::write(
        s.root.join("user-app/build.rs"),
        "fn main() {\n    for k in [\"../user-kernels\", \"../other-kernels\"] {\n        \
         rshmem_builder::Builder::new(k).build().unwrap_or_else(|e| panic!(\"{e}\"));\n    }\n}\n",
    )
    .unwrap();
    let ptxas = FakePtxas::counting();
    let path = ptxas.path();
    let env = [("PATH", path.as_str())];
    let first = s.run(&env);
    assert!(first.status.success(), "{}", text(&first));
    assert_eq!(ptxas.assembled(&s.kernel_name), 1);
    assert_eq!(ptxas.assembled(&other), 1);

    // Editing the first crate reruns the build script for both; only the first is linked.
    let mut src = std::fs::read_to_string(s.kernel_file()).unwrap();
    src.push_str("\n#[kernel]\npub unsafe fn added_later(x: *mut u32) { *x = 7; }\n");
    std::fs::write(s.kernel_file(), src).unwrap();
    let edited = s.run(&env);
    let t = text(&edited);
    assert!(edited.status.success(), "{t}");
    assert!(t.contains("kernels=[\"added_later\", \"scale\"]"), "{t}");
    assert_eq!(ptxas.assembled(&s.kernel_name), 2);
    assert_eq!(ptxas.assembled(&other), 1);
}

#[test]
fn every_profile_and_mode_reuses_one_link() {
    let s = Scaffold::bare(PLAIN_KERNEL);
    let ptxas = FakePtxas::counting();
    let path = ptxas.path();
    let env = [("PATH", path.as_str())];
    // `cargo run`, `cargo run --release` and `cargo check` run the build script each in an
    // output folder of its own; the code is linked once.
    for args in [
        &["run", "--quiet"][..],
        &["run", "--quiet", "--release"],
        &["check", "--quiet"],
    ] {
        let out = s.cargo(args, &env);
        let t = text(&out);
        assert!(out.status.success(), "{args:?}: {t}");
        if args[0] == "run" {
            assert!(t.contains("sm_90 entries=1 cubin=true"), "{args:?}: {t}");
        }
    }
    assert_eq!(ptxas.assembled(&s.kernel_name), 1);
}
