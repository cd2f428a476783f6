//! Faults on the simulator: a kernel that fails on PE k while every other PE waits for it
//! (a device-side `wait_until` that only PE k's failure ends) is the job's error, named as
//! PE k with its assertion, for every k of 2, 3 and 4 PEs and many repetitions (the waiting
//! PEs often fail first in time); the waiting PEs are listed as consequences.
//!
//! On every backend: a failed `device_assert!` puts its text, formatted, and its place in the
//! PE's error (on GPUs through the PE's fault mailbox).

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{Backend, Job, LaunchConfig, Shmem};
use rshmem_fixturekit::{basics, checked, IMAGE};

per_backend! {
    assertion_text_reaches_the_error => [2];
}

/// Every PE fails `device_assert!(value < t, "value %lld on PE %d is too large", ..)` in
/// every thread of one block; the PE's error carries the first failing thread's place and
/// the formatted text.
fn assertion_text_reaches_the_error(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    // SAFETY: no pointer arguments.
    let launched =
        unsafe { module.launch::<checked::assert_below>(LaunchConfig::new(1, 32), (1000,)) };
    let msg = launched
        .and_then(|()| shmem.synchronize())
        .expect_err("the assertion must fail")
        .to_string();
    let me = shmem.my_pe();
    assert!(
        msg.contains(&format!(
            "kernel `assert_below` failed on PE {me}: block (0, 0, 0), thread ("
        )) && msg.contains("kernel trapped (")
            && msg.contains("assertion failed: value < t at kernels/fixtures/src/checked.rs:")
            && msg.contains(&format!(": value 1000 on PE {me} is too large")),
        "{msg}"
    );
    // The text itself, for the log of a GPU run (`--nocapture`).
    println!("expected failure: {msg}");
    Ok(())
}

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
