//! Jobs that fail, run as child processes of the test: the test binary starts itself with
//! `--exact fault_job` (each binary that includes this module defines that ignored test,
//! calling [`job_main`]) and the case in the environment; the child runs one job on the
//! backend asked for (on GPUs it is the launcher, whose PEs are more copies of the binary
//! running `fault_job` too) and prints the job's error between markers. The parent
//! ([`run_job`]) bounds the child, and checks that no process of the job outlives it: every
//! process of a job carries a fresh token in its environment, which a scan of `/proc` finds.

#![allow(dead_code)]

use rshmem::{Backend, Job, Shmem};
use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// What a case returns.
pub type Outcome = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const CASE_VAR: &str = "RSHMEM_FAULT_CASE";
const BACKEND_VAR: &str = "RSHMEM_FAULT_BACKEND";
const NPES_VAR: &str = "RSHMEM_FAULT_NPES";
const CULPRIT_VAR: &str = "RSHMEM_FAULT_CULPRIT";
const HANG_VAR: &str = "RSHMEM_FAULT_HANG_TIMEOUT";
const TOKEN_VAR: &str = "RSHMEM_FAULT_TOKEN";
const ERROR_BEGIN: &str = "FAULT JOB ERROR BEGIN";
const ERROR_END: &str = "FAULT JOB ERROR END";
const OK_LINE: &str = "FAULT JOB OK";
/// How long the processes of an ended job may take to be gone (the launcher's SIGKILL comes
/// 2 s after its SIGTERM).
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// The PE a case makes fail (its `culprit`), as the child sees it.
pub fn culprit() -> usize {
    std::env::var(CULPRIT_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// The backend of the job this child runs.
pub fn backend() -> Backend {
    match std::env::var(BACKEND_VAR).as_deref() {
        Ok("gpu") => Backend::Gpu,
        _ => Backend::Sim,
    }
}

/// Whether this process is a PE started by rshmem's launcher (a GPU job's PE), and which.
pub fn launched_pe() -> Option<usize> {
    std::env::var("RSHMEM_PE").ok()?.parse().ok()
}

/// The child's side: runs the job `RSHMEM_FAULT_*` describe with `case` as each PE's
/// closure; the job's error goes to stderr between markers and the process exits 1. Does
/// nothing where no case is set (a plain `--ignored` run). `before_init` runs first, in each
/// process (on GPUs: in each PE process, before NVSHMEM starts).
pub fn job_main(case: fn(&str, &Shmem) -> Outcome, before_init: fn(&str)) {
    let Ok(name) = std::env::var(CASE_VAR) else {
        return;
    };
    let backend = backend();
    let npes: usize = std::env::var(NPES_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let mut job = Job::new().backend(backend).npes(npes).pe_args([
        "--exact",
        "fault_job",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    if let Some(seconds) = std::env::var(HANG_VAR)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
    {
        job = job.hang_timeout(Duration::from_secs_f64(seconds));
    }
    before_init(&name);
    match job.run(|shmem: &Shmem| case(&name, shmem)) {
        Ok(()) => println!("{OK_LINE}"),
        Err(e) => {
            eprintln!("{ERROR_BEGIN}\n{e}\n{ERROR_END}");
            std::process::exit(1);
        }
    }
}

/// A finished child job.
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Ran {
    /// The job's error as the child printed it (the launcher's, not a PE's `[PE k]` lines).
    pub fn error(&self) -> Option<String> {
        let (_, rest) = self
            .stderr
            .split_once(&format!("\n{ERROR_BEGIN}\n"))
            .or_else(|| {
                self.stderr
                    .strip_prefix(&format!("{ERROR_BEGIN}\n"))
                    .map(|rest| ("", rest))
            })?;
        Some(rest.split_once(&format!("\n{ERROR_END}"))?.0.to_string())
    }

    /// Whether the job ran to its end without error.
    pub fn ok(&self) -> bool {
        self.status.success() && self.stdout.contains(OK_LINE)
    }

    /// Everything it printed, for failure messages.
    pub fn output(&self) -> String {
        format!(
            "status {:?} after {:.1?}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// Runs case `case` as a child job on `npes` PEs of `backend` with `env` set, waits for it
/// (failing the test if it runs past `limit`), and checks that no process of the job is left
/// within [`GONE_WITHIN`] of its end.
pub fn run_job(
    backend: Backend,
    npes: usize,
    case: &str,
    env: &[(&str, &str)],
    limit: Duration,
) -> Ran {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let token = format!(
        "{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if [
            "RSHMEM_PE",
            "RSHMEM_LOCAL_RANK",
            "RSHMEM_RENDEZVOUS",
            "RSHMEM_REPORT",
        ]
        .contains(&&*key)
        {
            command.env_remove(&*key);
        }
    }
    command
        .args([
            "--exact",
            "fault_job",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CASE_VAR, case)
        .env(
            BACKEND_VAR,
            if backend == Backend::Gpu {
                "gpu"
            } else {
                "sim"
            },
        )
        .env(NPES_VAR, npes.to_string())
        .env(TOKEN_VAR, &token)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = command.spawn().expect("start the test binary as a job");
    let collect = |mut from: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = from.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            kill_all(&token);
            panic!("job `{case}` on {npes} PEs still ran after {limit:?}: it hangs");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    let ran = Ran {
        status,
        // A process left behind could hold the pipes open: they are read only once the
        // leftovers are known to be gone (or killed).
        stdout: String::new(),
        stderr: String::new(),
        elapsed,
    };
    let left = leftovers_after(&token, GONE_WITHIN);
    if !left.is_empty() {
        kill_all(&token);
    }
    let ran = Ran {
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        ..ran
    };
    assert!(
        left.is_empty(),
        "job `{case}` on {npes} PEs left processes {left:?} running {GONE_WITHIN:?} after it \
         ended\n{}",
        ran.output()
    );
    ran
}

/// The live processes (not zombies) whose environment holds `token`, other than this one.
pub fn leftovers(token: &str) -> Vec<u32> {
    let needle = format!("{TOKEN_VAR}={token}");
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter(|pid| {
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                return false;
            };
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let (_, rest) = stat.rsplit_once(')')?;
                    rest.trim_start().chars().next()
                })
                .is_some_and(|state| !matches!(state, 'Z' | 'X'));
            alive
                && environ
                    .split(|&b| b == 0)
                    .any(|var| var == needle.as_bytes())
        })
        .collect()
}

fn leftovers_after(token: &str, within: Duration) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let left = leftovers(token);
        if left.is_empty() || start.elapsed() > within {
            return left;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

fn kill_all(token: &str) {
    let pids: Vec<String> = leftovers(token).iter().map(u32::to_string).collect();
    if !pids.is_empty() {
        let _ = Command::new("kill").arg("-KILL").args(&pids).status();
    }
}

/// Whether `error` is rshmem's report of an MPS server that a job ended mid-kernel left
/// failing every later context (`docs/mps.md`).
pub fn broken_mps_server(error: &str) -> bool {
    error.contains("an MPS server left broken")
}

/// Restarts the MPS control daemon (and with it the server) as rshmem's error and
/// `docs/mps.md` say to, in the pipe directory of this process's environment; whether the
/// new daemon answers.
pub fn restart_mps() -> bool {
    let control = |stdin: &str, args: &[&str]| {
        let mut child = match Command::new("nvidia-cuda-mps-control")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(_) => return false,
        };
        if let Some(mut input) = child.stdin.take() {
            use std::io::Write;
            let _ = input.write_all(stdin.as_bytes());
        }
        child.wait().is_ok_and(|s| s.success())
    };
    control("quit\n", &[]);
    // `quit` returns before the daemon has gone; a new one cannot start until it has (10 s).
    let started = (0..50).any(|_| {
        thread::sleep(Duration::from_millis(200));
        control("", &["-d"])
    });
    started
        && (0..25).any(|_| {
            thread::sleep(Duration::from_millis(200));
            control("get_default_active_thread_percentage\n", &[])
        })
}
