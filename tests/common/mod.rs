//! The generic test suite machinery: one test body, instantiated for each backend (the way
//! CubeCL runs one suite per runtime).
//!
//! `per_backend! { case => [2, 3, 4]; ... }` makes, for each case and PE count,
//! `sim::case_Npe` (runs everywhere) and `gpu::case_Npe` (ignored where there are no GPUs;
//! `scripts/gpu-check.sh` runs them with `--ignored gpu::`). A GPU test starts its PEs as
//! processes of the test binary, each told (`--exact`) to run that one test.
//!
//! [`project`]: projects written from a document's code blocks (README's recipe, the guide
//! `docs/fused-kernels.md`) and built beside this checkout.

#![allow(dead_code)]

pub mod project;

use rshmem::{Backend, Job, Shmem};

/// What a test case returns.
pub type Outcome = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Runs `case` on `npes` PEs of `backend`; `name` is the test's path for libtest
/// (`gpu::ring_2pe`), so that each PE process runs exactly this test.
pub fn run_case(backend: Backend, npes: usize, name: &str, case: fn(&Shmem) -> Outcome) {
    let job = Job::new().backend(backend).npes(npes).pe_args([
        "--exact",
        name,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    if let Err(e) = job.run(case) {
        panic!("{name} on {npes} PEs: {e}");
    }
}

/// Instantiates test cases for the simulator and the GPUs. See the module docs.
#[macro_export]
macro_rules! per_backend {
    ($($case:ident => [$($n:literal),+ $(,)?];)*) => {
        mod sim {
            $($(paste::paste! {
                #[test]
                fn [<$case _ $n pe>]() {
                    $crate::common::run_case(
                        rshmem::Backend::Sim,
                        $n,
                        concat!("sim::", stringify!([<$case _ $n pe>])),
                        super::$case,
                    )
                }
            })+)*
        }
        mod gpu {
            $($(paste::paste! {
                #[test]
                #[ignore = "needs GPUs: scripts/gpu-check.sh runs it"]
                fn [<$case _ $n pe>]() {
                    $crate::common::run_case(
                        rshmem::Backend::Gpu,
                        $n,
                        concat!("gpu::", stringify!([<$case _ $n pe>])),
                        super::$case,
                    )
                }
            })+)*
        }
    };
}

/// Fresh pseudo-random data for a test (xorshift; the seed comes from the clock, so every run
/// differs, and from `salt`, so PEs can agree on it).
pub fn random_u32(len: usize, seed: u64) -> Vec<u32> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 16) as u32
        })
        .collect()
}

/// A fresh seed every PE agrees on: PE 0's clock, which every PE reads with a get on its
/// stream. Needs no kernel, so suites of any kernel image can use it.
pub fn agreed_seed(shmem: &Shmem) -> Result<u64, rshmem::Error> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let buf = shmem.alloc_from(&[nanos, 0])?;
    shmem.barrier_all()?;
    // Element 0 of PE 0 into this PE's element 1.
    shmem.get_on_stream(buf.range(1..)?, buf.range(..1)?, 0)?;
    let seed = buf.to_vec()?[1];
    // No PE may free the buffer while another still reads from it.
    shmem.barrier_all()?;
    Ok(seed)
}

/// Checks that `launched` (a launch of `kernel` that traps) fails, at once or at the PE's next
/// synchronisation, with an error naming the kernel and the PE.
pub fn expect_kernel_failure(shmem: &Shmem, launched: Result<(), rshmem::Error>, kernel: &str) {
    let failed = launched
        .and_then(|()| shmem.synchronize())
        .expect_err("the kernel must trap");
    let msg = failed.to_string();
    assert!(
        msg.contains(kernel) && msg.contains(&format!("PE {}", shmem.my_pe())),
        "{msg}"
    );
}

/// An example binary `cargo test` built next to this test binary (`target/<profile>/examples/`).
pub fn example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} not built: run through `cargo test`",
        path.display()
    );
    path
}

/// A finished process's stdout then stderr, as text (for assertions and their messages).
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs an example on `npes` simulated PEs; its output, or a panic naming the failure.
pub fn run_example_sim(name: &str, npes: usize, args: &[&str]) -> String {
    let out = std::process::Command::new(example(name))
        .args(args)
        .env("RSHMEM_BACKEND", "sim")
        .env("RSHMEM_NPES", npes.to_string())
        .output()
        .unwrap();
    let text = output_text(&out);
    assert!(out.status.success(), "{name} on {npes} PEs failed:\n{text}");
    text
}
