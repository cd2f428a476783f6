//! Blame: a kernel that fails on PE k while every other PE waits for it (a device-side
//! `wait_until` that only PE k's failure could end) is the job's error, named as PE k, for
//! every k of 2, 3 and 4 PEs and many repetitions (the waiting PEs often fail first in time);
//! the waiting PEs are listed as consequences.
//!
//! On the simulator the jobs run in this process, with the assertion's text checked too. On
//! GPUs (`gpu::`, ignored where there are none) each job is a child process (`faultkit`),
//! [`GPU_ROUNDS`] per (PE count, culprit): the culprit's process fails with its kernel's error,
//! the waiters' kernels wait until the launcher ends them, and they say so.

#[path = "faultkit/mod.rs"]
mod faultkit;

use rshmem::{Backend, Job, LaunchConfig, Shmem};
use rshmem_api_tests::{basics, IMAGE};

type Outcome = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// How many jobs per (PE count, culprit): enough for the race between the culprit's and the
/// waiters' failures to go both ways many times (measured: both orders occur).
const ROUNDS: usize = 50;
/// Jobs per (PE count, culprit) on GPUs, where NVSHMEM's start costs seconds per job; there
/// the waiters cannot fail first (their kernels wait until the launcher ends them), so the
/// rounds check that the launcher never blames them.
const GPU_ROUNDS: usize = 3;

fn case(shmem: &Shmem, culprit: i32) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let mut flag = shmem.alloc_zeroed::<i32>(1)?;
    // SAFETY: `flag` is a symmetric i32 holding 0; every PE launches it.
    unsafe {
        module.launch::<basics::trap_while_others_wait>(
            LaunchConfig::new(1, 32),
            (culprit, flag.as_mut_ptr()),
        )?
    };
    shmem.synchronize()?;
    Ok(())
}

#[test]
fn the_failing_pe_is_blamed_not_its_waiters() {
    for npes in 2..=4usize {
        for culprit in 0..npes as i32 {
            for round in 0..ROUNDS {
                let err = Job::new()
                    .backend(Backend::Sim)
                    .npes(npes)
                    .run(move |shmem: &Shmem| case(shmem, culprit))
                    .expect_err("the culprit's assertion must fail the job");
                let msg = err.to_string();
                let what = format!("{npes} PEs, culprit PE {culprit}, round {round}: {msg}");
                let first_line = msg.lines().next().unwrap_or_default();
                assert!(
                    first_line.starts_with(&format!("PE {culprit} failed")),
                    "{what}"
                );
                assert!(
                    first_line.contains("gives up") && !first_line.contains("shmem::wait_until"),
                    "a waiter was blamed, or the assertion's text is missing: {what}"
                );
                let waiters = (0..npes as i32).filter(|&q| q != culprit);
                for q in waiters {
                    assert!(
                        msg.contains(&format!("PE {q}")),
                        "waiter PE {q} not listed as a consequence: {what}"
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "a job the GPU blame test starts as a child process"]
fn fault_job() {
    faultkit::job_main(
        |name, shmem| {
            assert_eq!(name, "blame", "the only case of this binary");
            case(shmem, faultkit::culprit() as i32)
        },
        |_| {},
    );
}

mod gpu {
    use super::*;
    use std::time::Duration;

    #[test]
    #[ignore = "needs GPUs: scripts/gpu-check.sh faults runs it"]
    fn the_failing_pe_is_blamed_not_its_waiters() {
        // At most 3 PEs unless told (gpu-check.sh says how many PEs fit its GPUs).
        let max_npes: usize = std::env::var("RSHMEM_FAULT_MAX_NPES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3);
        for npes in 2..=max_npes.clamp(2, 4) {
            for culprit in 0..npes {
                for round in 0..GPU_ROUNDS {
                    let c = culprit.to_string();
                    let ran = faultkit::run_job(
                        Backend::Gpu,
                        npes,
                        "blame",
                        &[
                            ("RSHMEM_FAULT_CULPRIT", &c),
                            ("RSHMEM_FAULT_HANG_TIMEOUT", "60"),
                        ],
                        Duration::from_secs(120),
                    );
                    let msg = ran.error().unwrap_or_else(|| {
                        panic!(
                            "no job error ({npes} PEs, culprit {culprit})\n{}",
                            ran.output()
                        )
                    });
                    let what = format!("{npes} PEs, culprit PE {culprit}, round {round}: {msg}");
                    assert!(!ran.status.success(), "{what}");
                    let first_line = msg.lines().next().unwrap_or_default();
                    // The kernel's name from the host's record of pending work; the
                    // assertion's text and place from the device's fault mailbox.
                    assert!(
                        first_line.starts_with(&format!("PE {culprit} failed"))
                            && first_line.contains("trap_while_others_wait")
                            && first_line.contains("assertion failed: culprit < 0 at ")
                            && first_line.contains(&format!("PE {culprit} gives up")),
                        "{what}"
                    );
                    // A waiter is ended by the launcher; under MPS its kernel may end first,
                    // with the culprit's fault (MPS ends every process's kernels on the GPU
                    // when one faults): then it is listed as that fault's consequence.
                    let ended_with_it = format!("failed with PE {culprit}'s fault: under MPS");
                    for q in (0..npes).filter(|&q| q != culprit) {
                        let listed = msg.lines().any(|l| {
                            l.strip_prefix("(consequences: ").is_some_and(|l| {
                                let pes = l.split(" failed").next().unwrap_or_default();
                                pes.split(", ").any(|p| p == format!("PE {q}"))
                            }) && (l.contains(&format!("failed waiting for PE {culprit}"))
                                || l.contains(&ended_with_it))
                        });
                        assert!(
                            listed
                                && (msg.contains(&format!("PE {q} failed: ended by the launcher"))
                                    || msg.contains(&format!("PE {q} failed: kernel "))),
                            "waiter PE {q} not listed as a consequence: {what}"
                        );
                    }
                }
            }
        }
    }
}
