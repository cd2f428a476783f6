//! The launcher with real processes, no GPU: `rshmem-run` (and `launch_self`) starting the
//! `rshmem-test-pe` helper, whose behaviour each test scripts through `RSHMEM_TEST_PE*`.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const RSHMEM_RUN: &str = env!("CARGO_BIN_EXE_rshmem-run");
const TEST_PE: &str = env!("CARGO_BIN_EXE_rshmem-test-pe");

/// What "ended within 5 s" allows.
const BOUND: Duration = Duration::from_secs(5);
/// Past this a test's launcher is hung: kill it and fail rather than hang the suite.
const WATCHDOG: Duration = Duration::from_secs(20);

/// A command for `program` with none of the variables that would place it in a job.
fn clean(program: &str) -> Command {
    let mut command = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let placing = key.starts_with("RSHMEM_")
            || key.starts_with("SLURM_")
            || key.starts_with("OMPI_")
            || key.starts_with("PMI")
            || key.starts_with("MPI_");
        if placing {
            command.env_remove(&*key);
        }
    }
    command
}

/// `rshmem-run -n npes rshmem-test-pe` with `env`.
fn rshmem_run(npes: usize, env: &[(&str, &str)]) -> Command {
    let mut command = clean(RSHMEM_RUN);
    command
        .args(["-n", &npes.to_string(), TEST_PE])
        .envs(env.iter().copied());
    command
}

struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Finished {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Runs `command` to the end, capturing its output.
fn finish(mut command: Command) -> Finished {
    let start = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the command");
    let stdout = collect(child.stdout.take().unwrap());
    let stderr = collect(child.stderr.take().unwrap());
    let status = wait(&mut child, WATCHDOG);
    let elapsed = start.elapsed();
    Finished {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        elapsed,
    }
}

fn collect(mut from: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut text = String::new();
        from.read_to_string(&mut text).unwrap();
        text
    })
}

fn wait(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("still running after {limit:?}: the launcher hangs");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Whether process `pid` is gone (or a zombie: dead, waiting for whoever adopted it).
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
    }
}

fn assert_gone_soon(pids: &[u32]) {
    let start = Instant::now();
    while !pids.iter().all(|&pid| is_gone(pid)) {
        assert!(
            start.elapsed() < BOUND,
            "processes {pids:?} outlived their job"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// The numbers after `[PE k] <word> ` in `text`, by PE.
fn numbers_after(text: &str, word: &str) -> Vec<(usize, u32)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("[PE ")?;
            let (pe, rest) = rest.split_once("] ")?;
            let n = rest.strip_prefix(word)?.trim().parse().ok()?;
            Some((pe.parse().ok()?, n))
        })
        .collect()
}

#[test]
fn a_successful_job_prefixes_every_line_on_the_right_stream() {
    let run = finish(rshmem_run(3, &[("RSHMEM_TEST_PE", "hello")]));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    for pe in 0..3 {
        let hello = format!("[PE {pe}] hello from PE {pe} of 3 (local rank {pe})");
        assert!(
            run.stdout.lines().any(|l| l == hello),
            "{hello:?} not in\n{}",
            run.stdout
        );
        let note = format!("[PE {pe}] note from PE {pe}");
        assert!(
            run.stderr.lines().any(|l| l == note),
            "{note:?} not in\n{}",
            run.stderr
        );
    }
    assert_eq!(run.stdout.lines().count(), 3, "{}", run.stdout);
    assert!(
        run.stdout.lines().all(|l| l.starts_with("[PE ")),
        "{}",
        run.stdout
    );
}

#[test]
fn a_panicking_pe_is_named_with_its_message_and_the_others_ended() {
    let run = finish(rshmem_run(
        3,
        &[
            ("RSHMEM_TEST_PE", "pid+sleep"),
            ("RSHMEM_TEST_PE1", "panic"),
        ],
    ));
    assert_eq!(run.code(), Some(101), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "rshmem-run: PE 1 failed: panicked: PE 1 was told to panic (the job was ended)"
        ),
        "{}",
        run.stderr
    );
    assert!(run.elapsed < BOUND, "took {:?}", run.elapsed);
    let sleepers: Vec<u32> = numbers_after(&run.stdout, "pid")
        .into_iter()
        .map(|(_, pid)| pid)
        .collect();
    assert_gone_soon(&sleepers);
}

#[test]
fn a_non_zero_exit_is_reported_with_its_status() {
    let run = finish(rshmem_run(
        3,
        &[("RSHMEM_TEST_PE", "sleep"), ("RSHMEM_TEST_PE2", "exit:7")],
    ));
    assert_eq!(run.code(), Some(7), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("rshmem-run: PE 2 failed: exited with status 7"),
        "{}",
        run.stderr
    );
    assert!(run.elapsed < BOUND, "took {:?}", run.elapsed);
}

#[test]
fn a_pes_own_error_reaches_the_launchers_message() {
    let run = finish(rshmem_run(
        3,
        &[
            ("RSHMEM_TEST_PE", "sleep"),
            (
                "RSHMEM_TEST_PE1",
                "delay:100+error:kernel `k` failed on PE 1: trapped",
            ),
        ],
    ));
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "rshmem-run: PE 1 failed: kernel `k` failed on PE 1: trapped (the job was ended)"
        ),
        "{}",
        run.stderr
    );
    assert!(run.elapsed < BOUND, "took {:?}", run.elapsed);
}

#[test]
fn a_pe_killed_by_a_signal_gives_128_plus_the_signal() {
    let run = finish(rshmem_run(
        2,
        &[("RSHMEM_TEST_PE", "sleep"), ("RSHMEM_TEST_PE0", "abort")],
    ));
    assert_eq!(run.code(), Some(128 + libc::SIGABRT), "{}", run.stderr);
    assert!(
        run.stderr.contains("PE 0 failed: was killed by SIGABRT"),
        "{}",
        run.stderr
    );
    assert!(run.elapsed < BOUND, "took {:?}", run.elapsed);
}

#[test]
fn a_pe_ignoring_sigterm_and_its_child_are_killed_when_another_fails() {
    // PE 1 fails only once PE 0 is ready (it waits for PE 0's "uid"), so PE 0 has surely
    // started its grandchild and ignores SIGTERM: only the SIGKILL after the grace ends it.
    let run = finish(rshmem_run(
        2,
        &[
            ("RSHMEM_TEST_PE0", "ignore-term+grandchild+publish+sleep"),
            ("RSHMEM_TEST_PE1", "fetch+exit:3"),
        ],
    ));
    assert_eq!(run.code(), Some(3), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("rshmem-run: PE 1 failed: exited with status 3"),
        "{}",
        run.stderr
    );
    assert!(run.elapsed < BOUND, "took {:?}", run.elapsed);
    assert!(
        run.elapsed >= rshmem_host::launch::DEFAULT_GRACE,
        "PE 0 ignores SIGTERM, so it can only have ended by SIGKILL after the grace; took {:?}",
        run.elapsed
    );
    let grandchild = numbers_after(&run.stdout, "grandchild");
    assert!(matches!(grandchild[..], [(0, _)]), "{}", run.stdout);
    assert_gone_soon(&[grandchild[0].1]);
}

#[test]
fn the_unique_id_goes_from_pe_0_to_every_pe() {
    let state = RandomState::new();
    let uid: String = (0..16)
        .map(|i| {
            let mut hasher = state.build_hasher();
            hasher.write_usize(i);
            format!("{:016x}", hasher.finish())
        })
        .collect();
    // PE 0 publishes late, so the others are already waiting.
    let run = finish(rshmem_run(
        4,
        &[
            ("RSHMEM_TEST_PE", "fetch"),
            ("RSHMEM_TEST_PE0", "delay:200+publish+fetch"),
            ("RSHMEM_TEST_UID", &uid),
        ],
    ));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    for pe in 0..4 {
        let line = format!("[PE {pe}] uid ok {uid}");
        assert!(
            run.stdout.lines().any(|l| l == line),
            "{line:?} not in\n{}",
            run.stdout
        );
    }
}

#[test]
fn a_unique_id_that_never_comes_times_out_naming_pe_0() {
    let run = finish(rshmem_run(
        2,
        &[
            ("RSHMEM_TEST_PE0", "sleep"),
            ("RSHMEM_TEST_PE1", "fetch"),
            ("RSHMEM_RENDEZVOUS_TIMEOUT", "0.5"),
        ],
    ));
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("[PE 1] error: PE 1 waited 0.5 s for NVSHMEM's unique ID from PE 0"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("rshmem-run: PE 1 failed: exited with status 1"),
        "{}",
        run.stderr
    );
    assert!(run.elapsed < BOUND, "took {:?}", run.elapsed);
}

#[test]
fn launch_self_restarts_the_program_with_its_arguments() {
    let mut command = clean(TEST_PE);
    command
        .args(["--flag", "two words"])
        .env("RSHMEM_TEST_SELF_LAUNCH", "2")
        .env("RSHMEM_TEST_PE", "args");
    let run = finish(command);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    for pe in 0..2 {
        let line = format!(r#"[PE {pe}] args ["--flag", "two words"]"#);
        assert!(
            run.stdout.lines().any(|l| l == line),
            "{line:?} not in\n{}",
            run.stdout
        );
    }

    let mut command = clean(TEST_PE);
    command
        .env("RSHMEM_TEST_SELF_LAUNCH", "2")
        .env("RSHMEM_TEST_PE", "sleep")
        .env("RSHMEM_TEST_PE1", "exit:4");
    let run = finish(command);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("launcher: PE 1 failed: exited with status 4"),
        "{}",
        run.stderr
    );
    assert!(run.elapsed < BOUND, "took {:?}", run.elapsed);
}

/// Starts `rshmem-run -n npes` with PEs that print their pid and sleep; returns it and the
/// PE pids once all have printed.
fn sleeping_job(npes: usize) -> (Child, Vec<u32>) {
    let mut command = rshmem_run(npes, &[("RSHMEM_TEST_PE", "pid+sleep")]);
    // The launcher keeps signals it was started ignoring ignored (as under `nohup`), and a
    // test run started in the background by a non-interactive shell ignores SIGINT: start it
    // with the default dispositions, which these tests are about.
    // SAFETY: between fork and exec the closure only calls signal(2), which is
    // async-signal-safe, with valid arguments.
    unsafe {
        command.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (send, receive) = mpsc::channel();
    thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    let mut pids = Vec::new();
    while pids.len() < npes {
        let line = receive
            .recv_timeout(WATCHDOG)
            .expect("every PE prints its pid");
        pids.extend(numbers_after(&line, "pid").into_iter().map(|(_, pid)| pid));
    }
    (child, pids)
}

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) takes integers and touches no memory; `pid` is our own child.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, signal) }, 0);
}

#[test]
fn sigint_to_the_launcher_reaches_the_pes() {
    let (mut launcher, pes) = sleeping_job(2);
    let start = Instant::now();
    signal(launcher.id(), libc::SIGINT);
    let status = wait(&mut launcher, WATCHDOG);
    assert!(start.elapsed() < BOUND, "took {:?}", start.elapsed());
    let mut stderr = String::new();
    launcher
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGINT), "{stderr}");
    assert!(
        stderr
            .contains("was killed by SIGINT (signal 2), which the launcher received and forwarded"),
        "{stderr}"
    );
    assert_gone_soon(&pes);
}

#[test]
fn the_pes_die_with_a_killed_launcher() {
    let (mut launcher, pes) = sleeping_job(2);
    signal(launcher.id(), libc::SIGKILL);
    wait(&mut launcher, WATCHDOG);
    assert_gone_soon(&pes);
    // A launcher killed by SIGKILL cannot remove its rendezvous directory: tidy up here.
    let prefix = format!("rshmem-{}-", launcher.id());
    for entry in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[test]
fn rshmem_run_usage() {
    let with = |args: &[&str], npes_env: Option<&str>| {
        let mut command = clean(RSHMEM_RUN);
        command.args(args);
        if let Some(npes) = npes_env {
            command.env("RSHMEM_NPES", npes);
        }
        finish(command)
    };
    let help = with(&["--help"], None);
    assert_eq!(help.code(), Some(0));
    assert!(
        help.stdout.starts_with("Usage: rshmem-run -n N"),
        "{}",
        help.stdout
    );

    for (args, env, message) in [
        (&[][..], None, "no PROGRAM to start"),
        (&["-n", "0", TEST_PE], None, "at least 1"),
        (&[TEST_PE], None, "pass -n N or set RSHMEM_NPES"),
        (&[TEST_PE], Some("many"), "RSHMEM_NPES is \"many\""),
        (&["--bogus", TEST_PE], None, "unknown option --bogus"),
    ] {
        let run = with(args, env);
        assert_eq!(run.code(), Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("rshmem-run --help"), "{}", run.stderr);
    }

    let from_env = with(&[TEST_PE], Some("2"));
    assert_eq!(from_env.code(), Some(0), "{}", from_env.stderr);
    assert!(
        from_env.stdout.contains("[PE 1] hello from PE 1 of 2"),
        "{}",
        from_env.stdout
    );

    let missing = with(&["-n", "2", "/nonexistent/rshmem-program"], None);
    assert_eq!(missing.code(), Some(127), "{}", missing.stderr);
    assert!(
        missing
            .stderr
            .contains("starting PE 0 as `/nonexistent/rshmem-program`"),
        "{}",
        missing.stderr
    );
}
