//! Faults on the simulator: a kernel that fails on PE k while every other PE waits for it
//! (a device-side `wait_until` that only PE k's failure ends) is the job's error, named as
//! PE k with its assertion, for every k of 2, 3 and 4 PEs and many repetitions (the waiting
//! PEs often fail first in time); the waiting PEs are listed as consequences.

use rshmem::{Backend, Job, LaunchConfig, Shmem};
use rshmem_fixturekit::{basics, IMAGE};

type Outcome = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// How many jobs per (PE count, culprit): enough for the race between the culprit's and the
/// waiters' failures to go both ways many times (measured: both orders occur).
const ROUNDS: usize = 50;

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
