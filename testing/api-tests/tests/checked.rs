//! The checked device mode, on every backend: a SHMEM call with a PE number out of range, one
//! with an address off the symmetric heap, and a wait nobody satisfies each end the kernel
//! with an error naming the call, the PE, the block and the thread (on GPUs through the PE's
//! fault mailbox, from the checked image `CHECKED_IMAGE`; the simulator always checks); and a
//! valid put/get/atomic/wait-heavy kernel runs clean and right in the checked image. And, in
//! any image (here the unchecked `IMAGE`): a failed `device_assert!` puts its formatted text
//! and its place in the PE's error (on GPUs through the fault mailbox). (It lives here rather
//! than in `faults.rs`, whose `gpu::` module holds the GPU blame test.)

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{LaunchConfig, Shmem};
use rshmem_api_tests::{checked, CHECKED_IMAGE, IMAGE};
use std::time::{Duration, Instant};

/// The suite for one backend: `mod $m` with a test per case (`_2pe`: two PEs) and the
/// endless wait's (run in a child process, see [`endless_wait_in_child`]). Written out rather
/// than with `per_backend!`, so that the endless wait's test is `gpu::` too (what
/// `scripts/gpu-check.sh` runs).
macro_rules! suite {
    ($m:ident, $backend:expr $(, #[$attr:meta])?) => {
        mod $m {
            use rshmem::Backend;
            $(#[$attr])?
            #[test]
            fn bad_pe_traps_naming_the_call_2pe() {
                crate::common::run_case(
                    $backend,
                    2,
                    concat!(stringify!($m), "::bad_pe_traps_naming_the_call_2pe"),
                    super::bad_pe_traps_naming_the_call,
                )
            }
            $(#[$attr])?
            #[test]
            fn off_heap_address_traps_naming_the_call_2pe() {
                crate::common::run_case(
                    $backend,
                    2,
                    concat!(stringify!($m), "::off_heap_address_traps_naming_the_call_2pe"),
                    super::off_heap_address_traps_naming_the_call,
                )
            }
            $(#[$attr])?
            #[test]
            fn valid_calls_run_clean_2pe() {
                crate::common::run_case(
                    $backend,
                    2,
                    concat!(stringify!($m), "::valid_calls_run_clean_2pe"),
                    super::valid_calls_run_clean,
                )
            }
            $(#[$attr])?
            #[test]
            fn assertion_text_reaches_the_error_2pe() {
                crate::common::run_case(
                    $backend,
                    2,
                    concat!(stringify!($m), "::assertion_text_reaches_the_error_2pe"),
                    super::assertion_text_reaches_the_error,
                )
            }
            $(#[$attr])?
            #[test]
            fn endless_wait_ends_within_the_bound() {
                super::endless_wait_in_child(concat!("endless::", stringify!($m), "_job"));
            }
        }
    };
}

suite!(sim, Backend::Sim);
suite!(gpu, Backend::Gpu, #[ignore = "needs GPUs: scripts/gpu-check.sh runs it"]);

/// Every PE puts to PE `n_pes() + 1`.
fn bad_pe_traps_naming_the_call(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&CHECKED_IMAGE)?;
    let mut dest = shmem.alloc_zeroed::<i32>(1)?;
    let bad = shmem.n_pes() as i32 + 1;
    // SAFETY: `dest` is a symmetric i32; the PE number is the fault under test.
    let launched = unsafe {
        module.launch::<checked::put_to_pe>(LaunchConfig::new(1, 32), (dest.as_mut_ptr(), bad))
    };
    let msg = failure(shmem, launched, "put_to_pe");
    let n = shmem.n_pes();
    assert!(
        msg.contains("block (0, 0, 0), thread (0, 0, 0)")
            && msg.contains(&format!(
                "shmem::p: PE {bad} is out of range: the job has {n} PE(s), numbered 0..{n}"
            )),
        "{msg}"
    );
    Ok(())
}

/// Every PE reads from the address of a local variable.
fn off_heap_address_traps_naming_the_call(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&CHECKED_IMAGE)?;
    let mut out = shmem.alloc_zeroed::<i32>(1)?;
    // SAFETY: `out` holds one i32; the kernel's address is the fault under test.
    let launched = unsafe {
        module.launch::<checked::get_from_local>(LaunchConfig::new(1, 32), (out.as_mut_ptr(),))
    };
    let msg = failure(shmem, launched, "get_from_local");
    assert!(
        msg.contains("block (0, 0, 0), thread (0, 0, 0)")
            && msg.contains("shmem::g: address 0x")
            && msg.contains("is not on the symmetric heap"),
        "{msg}"
    );
    Ok(())
}

/// The workload of the cost benchmark, three rounds, its sums checked.
fn valid_calls_run_clean(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&CHECKED_IMAGE)?;
    let threads = checked::WORKLOAD_THREADS as usize;
    let mut data = shmem.alloc_zeroed::<u64>(threads)?;
    let mut counter = shmem.alloc_zeroed::<u64>(1)?;
    let mut out = shmem.alloc_zeroed::<u64>(threads)?;
    let iters = 4u32;
    for round in 0..3 {
        // SAFETY: the buffers have the sizes `shmem_workload` needs; every PE launches it.
        unsafe {
            module.launch::<checked::shmem_workload>(
                LaunchConfig::new(1, checked::WORKLOAD_THREADS),
                (
                    data.as_mut_ptr(),
                    counter.as_mut_ptr(),
                    out.as_mut_ptr(),
                    iters,
                    round,
                ),
            )?
        };
        shmem.synchronize()?;
        shmem.barrier_all()?;
    }
    let expected = 3 * u64::from(iters) * threads as u64;
    assert_eq!(
        counter.to_vec()?[0],
        expected,
        "every PE's atomic adds arrived"
    );
    // Each `g` read its own or an earlier iteration's value: at most the sum of all.
    let sums = out.to_vec()?;
    for (t, &s) in sums.iter().enumerate() {
        let most: u64 = (0..u64::from(iters)).map(|i| i + t as u64).sum();
        assert!(s <= most, "thread {t} read {s} > {most}");
    }
    shmem.barrier_all()?;
    Ok(())
}

/// Every PE fails `device_assert!(value < t, "value %lld on PE %d is too large", ..)` in
/// every thread of one block, in the unchecked image; the PE's error carries the first
/// failing thread's place and the formatted text.
fn assertion_text_reaches_the_error(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    // No PE traps before every PE has loaded the image (the other tests' symmetric allocation
    // does this for them): under MPS a trap poisons the context of every PE sharing the GPU,
    // and NVSHMEM's module initialisation exits the process on that error instead of returning
    // it (an H100, 2026-12-06: PE 0 exited with status 255 there while PE 1's kernel trapped).
    shmem.barrier_all()?;
    // SAFETY: no pointer arguments.
    let launched =
        unsafe { module.launch::<checked::assert_below>(LaunchConfig::new(1, 32), (1000,)) };
    let msg = failure(shmem, launched, "assert_below");
    let me = shmem.my_pe();
    assert!(
        msg.contains("block (0, 0, 0), thread (")
            && msg.contains("kernel trapped (")
            && msg.contains(
                "assertion failed: value < t at testing/kernels/fixtures/src/checked.rs:"
            )
            && msg.contains(&format!(": value 1000 on PE {me} is too large")),
        "{msg}"
    );
    Ok(())
}

/// The launch's failure (at once or at the next synchronisation), which must name `kernel`
/// and this PE; its text.
fn failure(shmem: &Shmem, launched: Result<(), rshmem::Error>, kernel: &str) -> String {
    let msg = launched
        .and_then(|()| shmem.synchronize())
        .expect_err("the checked call must trap")
        .to_string();
    assert!(
        msg.contains(&format!("kernel `{kernel}` failed on PE {}", shmem.my_pe())),
        "{msg}"
    );
    // The text itself, for the log of a GPU run (`--nocapture`).
    println!("expected failure: {msg}");
    msg
}

/// The bound the endless-wait job runs under (both backends' variables; on GPUs a checked
/// wait may last 80% of it, so that it reports itself before the host's hang watchdog).
const BOUND: Duration = Duration::from_secs(3);

/// One PE waits for a flag nobody sets: the wait ends once the bound passed, naming the
/// wait, the kernel, the PE, the block and the thread.
fn endless_wait(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&CHECKED_IMAGE)?;
    let mut flag = shmem.alloc_zeroed::<i32>(1)?;
    let start = Instant::now();
    // SAFETY: `flag` is a symmetric i32.
    let launched = unsafe {
        module.launch::<checked::wait_forever>(LaunchConfig::new(1, 32), (flag.as_mut_ptr(),))
    };
    let msg = failure(shmem, launched, "wait_forever");
    let took = start.elapsed();
    assert!(
        msg.contains("block (0, 0, 0), thread (0, 0, 0)")
            && msg.contains("shmem::wait_until: still waiting after")
            && (msg.contains("RSHMEM_SIM_WAIT_TIMEOUT sets the bound")
                || msg.contains("is 80% of the hang timeout (RSHMEM_HANG_TIMEOUT")),
        "{msg}"
    );
    assert!(
        took >= BOUND.mul_f64(0.8 * 0.9) && took < BOUND + Duration::from_secs(30),
        "the wait ended after {took:?}, the bound is {BOUND:?}: {msg}"
    );
    println!("endless wait ended after {took:.1?} (bound {BOUND:?}): {msg}");
    Ok(())
}

/// The endless-wait job, run by [`endless_wait_in_child`] in a process of its own whose
/// environment sets the bound (`RSHMEM_HANG_TIMEOUT` on GPUs, `RSHMEM_SIM_WAIT_TIMEOUT` on
/// the simulator) without touching this process's.
mod endless {
    #[test]
    #[ignore = "run by sim::endless_wait_ends_within_the_bound in a child process"]
    fn sim_job() {
        crate::common::run_case(
            rshmem::Backend::Sim,
            1,
            "endless::sim_job",
            super::endless_wait,
        )
    }

    #[test]
    #[ignore = "run by gpu::endless_wait_ends_within_the_bound in a child process"]
    fn gpu_job() {
        crate::common::run_case(
            rshmem::Backend::Gpu,
            1,
            "endless::gpu_job",
            super::endless_wait,
        )
    }
}

/// Runs the test `job` of this binary in a child process with the bound set, and checks that
/// it passed.
fn endless_wait_in_child(job: &str) {
    let secs = BOUND.as_secs().to_string();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            job,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RSHMEM_HANG_TIMEOUT", &secs)
        .env("RSHMEM_SIM_WAIT_TIMEOUT", &secs)
        .output()
        .unwrap();
    let text = common::output_text(&out);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{job} failed:\n{text}"
    );
    assert!(text.contains("endless wait ended after"), "{text}");
    for line in text
        .lines()
        .filter(|l| l.contains("endless wait ended after"))
    {
        println!("{line}");
    }
}
