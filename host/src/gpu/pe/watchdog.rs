//! A GPU PE's watchdog: hangs end, and a PE ended from outside says what it was waiting for.
//!
//! *Progress* is anything completing: a stream found idle that was busy, a blocking host call
//! (`synchronize`, `barrier_all`, an allocation's exchange, NVSHMEM's teardown) returning, or
//! new work queued (a launch that returns means the launch queue moves). The PE counts the
//! last two in [`PeShared::progress`] (one relaxed atomic add per launch: nothing measurable on
//! the launch path); the watchdog thread polls the rest every [`TICK`] with `cuStreamQuery` on
//! the streams that have work queued since their last synchronisation. When the PE has work
//! pending (a stream not idle, or a blocking call under way) and nothing progresses for the
//! hang timeout, the PE is hung: the watchdog prints what is pending (per stream, the last
//! kernel queued and not known complete; the blocking calls), reports it to the launcher
//! ([`PeReport::Hung`]) and ends the process with [`HANG_STATUS`] — its other threads are
//! stuck in the driver, so there is nothing to unwind. The launcher then ends the others.
//!
//! A PE of rshmem's launcher also catches SIGTERM, which the launcher sends to end the job once
//! a PE failed: the handler only writes a byte to a pipe (async-signal-safe, no allocation);
//! this thread reads it, prints and reports what was pending ([`PeReport::Ended`]) and lets the
//! signal take its default course.
//!
//! No stream is queried while a graph capture runs (CUDA would invalidate it); the clock
//! restarts after it.

use super::super::Watch;
use super::state::{lock, PeShared};
use super::term::{catch_term, pipe, Watchdog, STOP, TERM, TERM_PIPE};
use crate::contract::StreamId;
use crate::launch::PeReport;
use std::fmt::Write as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread;
use std::time::{Duration, Instant};

/// How often the watchdog looks at the PE's streams.
const TICK: Duration = Duration::from_millis(100);
/// The status a PE exits with when its watchdog ends it (`timeout(1)`'s).
pub(crate) const HANG_STATUS: i32 = 124;
/// What the watchdog thread needs.
struct Watcher<W> {
    shared: Weak<W>,
    pe: usize,
    timeout: Option<Duration>,
    report: Option<PathBuf>,
    woken: OwnedFd,
}

/// What a watchdog watches: a PE's state, or a test's stand-in.
pub(super) trait Watched: Send + Sync + 'static {
    /// The PE.
    fn pe(&self) -> usize;
    /// The count of work queued and blocking calls returned.
    fn progress(&self) -> u64;
    /// What is pending now; `None` while nothing may be looked at (a graph capture runs).
    fn pending(&self) -> Option<Pending>;
}

impl Watched for PeShared {
    fn pe(&self) -> usize {
        self.pe
    }

    fn progress(&self) -> u64 {
        self.progress.load(Ordering::Relaxed)
    }

    fn pending(&self) -> Option<Pending> {
        pending(self)
    }
}

impl Watchdog {
    /// Starts the watchdog of the PE `shared`, where `watch` asks for one (a hang timeout, or
    /// a launcher to report to). Failing to start one is not fatal to the PE: it says so.
    pub(super) fn start<W: Watched>(shared: &Arc<W>, watch: &Watch<'_>) -> Option<Watchdog> {
        if watch.timeout.is_none() && watch.report.is_none() {
            return None;
        }
        match Watchdog::try_start(shared, watch) {
            Ok(watchdog) => Some(watchdog),
            Err(e) => {
                eprintln!(
                    "rshmem: PE {}: no hang watchdog ({e}); a hang of this PE will not end by itself",
                    shared.pe()
                );
                None
            }
        }
    }

    fn try_start<W: Watched>(shared: &Arc<W>, watch: &Watch<'_>) -> std::io::Result<Watchdog> {
        let (woken, wake) = pipe()?;
        let watcher = Watcher {
            shared: Arc::downgrade(shared),
            pe: shared.pe(),
            timeout: watch.timeout,
            report: watch.report.map(PathBuf::from),
            woken,
        };
        let mut watchdog = Watchdog {
            wake,
            thread: None,
            replaced: None,
        };
        watchdog.thread = Some(
            thread::Builder::new()
                .name(format!("rshmem-pe{}-watchdog", shared.pe()))
                .spawn(move || watcher.run())?,
        );
        // Only for rshmem's launcher, whose SIGTERM ends the job; one watchdog per process
        // catches it (a process runs one PE).
        if watch.report.is_some()
            && TERM_PIPE
                .compare_exchange(
                    -1,
                    watchdog.wake.as_raw_fd(),
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                )
                .is_ok()
        {
            match catch_term() {
                Ok(old) => watchdog.replaced = Some(old),
                Err(e) => {
                    TERM_PIPE.store(-1, Ordering::SeqCst);
                    return Err(e);
                }
            }
        }
        Ok(watchdog)
    }
}

/// What the PE has pending, as the watchdog saw it at one tick.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Pending {
    /// Streams with work not complete, each with the last kernel queued there.
    pub(crate) streams: Vec<(StreamId, String)>,
    /// Blocking host calls under way.
    pub(crate) calls: Vec<&'static str>,
}

impl Pending {
    fn busy(&self) -> bool {
        !self.streams.is_empty() || !self.calls.is_empty()
    }

    /// `kernel `k` not complete on stream 0 (the PE's own); `synchronize` under way`, or
    /// `nothing on the GPU`.
    pub(crate) fn describe(&self) -> String {
        let mut text = String::new();
        for (id, kernel) in &self.streams {
            let sep = if text.is_empty() { "" } else { ", " };
            let own = if *id == StreamId::PE {
                " (the PE's own)"
            } else {
                ""
            };
            let _ = write!(
                text,
                "{sep}`{kernel}` (the last work queued) not complete on stream {}{own}",
                id.0
            );
        }
        for call in &self.calls {
            let sep = if text.is_empty() { "" } else { "; " };
            let _ = write!(text, "{sep}`{call}` under way");
        }
        if text.is_empty() {
            text.push_str("no GPU work and no blocking call");
        }
        text
    }
}

/// When the PE's work last progressed, by what a tick sees.
#[derive(Debug, Default)]
pub(crate) struct Stall {
    last: Option<(u64, usize, Vec<&'static str>)>,
    since: Option<Instant>,
}

impl Stall {
    /// Notes a tick at `now` with the progress count and what is pending; how long the PE has
    /// had work pending without progress.
    pub(crate) fn tick(&mut self, now: Instant, progress: u64, pending: &Pending) -> Duration {
        let seen = (progress, pending.streams.len(), pending.calls.clone());
        if !pending.busy() || self.last.as_ref() != Some(&seen) {
            self.last = Some(seen);
            self.since = pending.busy().then_some(now);
            return Duration::ZERO;
        }
        now.duration_since(*self.since.get_or_insert(now))
    }

    /// Forgets the clock (a capture runs: nothing was looked at).
    fn reset(&mut self) {
        *self = Stall::default();
    }
}

impl<W: Watched> Watcher<W> {
    fn run(self) {
        let mut stall = Stall::default();
        loop {
            match self.wait_tick() {
                Some(TERM) => self.ended(),
                Some(_) => return,
                None => {}
            }
            let Some(shared) = self.shared.upgrade() else {
                return;
            };
            let Some(timeout) = self.timeout else {
                continue;
            };
            match shared.pending() {
                None => stall.reset(),
                Some(pending) => {
                    if stall.tick(Instant::now(), shared.progress(), &pending) >= timeout {
                        drop(shared);
                        self.hung(timeout, &pending);
                    }
                }
            }
        }
    }

    /// Waits up to a tick for a byte on the pipe.
    fn wait_tick(&self) -> Option<u8> {
        let mut poll = libc::pollfd {
            fd: self.woken.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let tick = TICK.as_millis() as libc::c_int;
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&raw mut poll, 1, tick) } <= 0 {
            return None;
        }
        let mut byte = 0u8;
        // SAFETY: one byte into a live local from a descriptor we own.
        match unsafe { libc::read(poll.fd, (&raw mut byte).cast(), 1) } {
            1 => Some(byte),
            // The write end is gone: the watchdog is being dropped.
            _ => Some(STOP),
        }
    }

    /// No progress for `timeout`: say what is pending and end the process.
    fn hung(&self, timeout: Duration, pending: &Pending) -> ! {
        let text = format!(
            "no progress for {} s; pending: {} (RSHMEM_HANG_TIMEOUT or Job::hang_timeout sets \
             the bound)",
            timeout.as_secs_f64(),
            pending.describe()
        );
        eprintln!("rshmem: PE {} hung: {text}", self.pe);
        if let Some(path) = &self.report {
            let _ = PeReport::Hung(text).write(path);
        }
        // The PE's other threads are stuck in the driver: nothing to unwind or tear down.
        // SAFETY: _exit(2) ends the process at once; it cannot fail.
        unsafe { libc::_exit(HANG_STATUS) }
    }

    /// The launcher's SIGTERM arrived: say what was pending, then end as SIGTERM would.
    fn ended(&self) -> ! {
        let text = match self.shared.upgrade() {
            Some(shared) => shared.pending().map_or_else(
                || "a graph capture".to_string(),
                |pending| pending.describe(),
            ),
            None => "nothing (its GPU state is gone)".to_string(),
        };
        eprintln!(
            "rshmem: PE {} ended by the launcher (SIGTERM); pending: {text}",
            self.pe
        );
        if let Some(path) = &self.report {
            let _ = PeReport::Ended(text).write(path);
        }
        // SAFETY: restoring the default disposition and signalling ourselves makes the
        // process end by SIGTERM, as it would have without the handler; _exit if not.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            libc::kill(libc::getpid(), libc::SIGTERM);
            libc::_exit(128 + libc::SIGTERM)
        }
    }
}

/// What `shared` has pending now; `None` while a capture runs (no stream may be queried).
fn pending(shared: &PeShared) -> Option<Pending> {
    let capture = lock(&shared.capture);
    if capture.is_some() {
        return None;
    }
    let queued: Vec<(StreamId, String)> = lock(&shared.pending)
        .iter()
        .map(|(id, kernel)| (*id, kernel.to_string()))
        .collect();
    let streams = queued
        .into_iter()
        .filter(|(id, _)| {
            let stream = if *id == StreamId::PE {
                Some(shared.stream.clone())
            } else {
                lock(&shared.user_streams).live.get(id).cloned()
            };
            // A destroyed stream's leftover entry, or a fault (the PE's own calls report it):
            // nothing of it can progress.
            stream.is_some_and(|stream| matches!(stream.is_idle(), Ok(false)))
        })
        .collect();
    let calls = lock(&shared.blocking).clone();
    drop(capture);
    Some(Pending { streams, calls })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::path::Path;
    use std::process::{Child, Command, Stdio};

    /// A stand-in PE whose work never completes: a kernel pending, `synchronize` under way.
    struct Stuck;

    impl Watched for Stuck {
        fn pe(&self) -> usize {
            3
        }

        fn progress(&self) -> u64 {
            0
        }

        fn pending(&self) -> Option<Pending> {
            Some(Pending {
                streams: vec![(StreamId::PE, "spin".into())],
                calls: vec!["synchronize"],
            })
        }
    }

    /// Set in the child process a test starts: the report file it writes to.
    const CHILD_VAR: &str = "RSHMEM_WATCHDOG_TEST_REPORT";

    /// In the child: a stuck PE watched with `timeout`, reporting to the file the parent
    /// named; says `ready` and waits to be ended. `None` in the parent.
    fn as_child(timeout: Option<Duration>) -> Option<()> {
        let report = PathBuf::from(std::env::var_os(CHILD_VAR)?);
        let stuck = Arc::new(Stuck);
        let _watchdog = Watchdog::start(
            &stuck,
            &Watch {
                timeout,
                report: Some(&report),
            },
        );
        println!("ready");
        thread::sleep(Duration::from_secs(20));
        // Not ended: the parent sees status 0 and fails.
        std::process::exit(0)
    }

    /// Starts this test binary's test `name` as the child, reporting to `report`; returns it
    /// once it said `ready`.
    fn start_child(name: &str, report: &Path) -> Child {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_VAR, report)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let said: Vec<String> = stdout
            .lines()
            .map_while(Result::ok)
            .take_while(|line| !line.contains("ready"))
            .collect();
        assert!(said.len() < 50, "the child never got ready: {said:?}");
        child
    }

    fn wait(child: &mut Child) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("the child was not ended within 10 s");
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn report_file(test: &str) -> (PathBuf, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("rshmem-watchdog-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        (dir.join("report"), dir)
    }

    #[test]
    fn a_stuck_pe_is_ended_as_hung_saying_what_was_pending() {
        if as_child(Some(Duration::from_millis(300))).is_some() {
            return;
        }
        let (report, dir) = report_file("hung");
        let start = Instant::now();
        let mut child = start_child(
            "gpu::pe::watchdog::tests::a_stuck_pe_is_ended_as_hung_saying_what_was_pending",
            &report,
        );
        let status = wait(&mut child);
        let took = start.elapsed();
        let written = PeReport::read(&report);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(status.code(), Some(HANG_STATUS), "{status:?}");
        assert!(took >= Duration::from_millis(300), "{took:?}");
        let Some(PeReport::Hung(text)) = written else {
            panic!("no hang report: {written:?}");
        };
        assert!(
            text.starts_with("no progress for 0.3 s; pending: `spin` (the last work queued) not complete on stream 0 (the PE's own); `synchronize` under way"),
            "{text}"
        );
    }

    #[test]
    fn sigterm_makes_a_pe_say_what_was_pending_and_end_by_it() {
        if as_child(None).is_some() {
            return;
        }
        let (report, dir) = report_file("term");
        let mut child = start_child(
            "gpu::pe::watchdog::tests::sigterm_makes_a_pe_say_what_was_pending_and_end_by_it",
            &report,
        );
        let pid = child.id() as libc::pid_t;
        // SAFETY: kill(2) takes integers; the pid is our own child's, not yet reaped.
        let sent = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(sent, 0);
        let status = wait(&mut child);
        let written = PeReport::read(&report);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
        assert_eq!(
            written,
            Some(PeReport::Ended(
                "`spin` (the last work queued) not complete on stream 0 (the PE's own); \
                 `synchronize` under way"
                    .into()
            ))
        );
    }

    #[test]
    fn a_stall_counts_only_while_work_is_pending_and_nothing_moves() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let busy = Pending {
            streams: vec![(StreamId::PE, "spin".into())],
            calls: vec!["synchronize"],
        };
        let mut stall = Stall::default();
        assert_eq!(stall.tick(at(0), 7, &busy), Duration::ZERO);
        assert_eq!(stall.tick(at(300), 7, &busy), Duration::from_millis(300));
        // A launch (the count moves) is progress: the clock restarts.
        assert_eq!(stall.tick(at(400), 8, &busy), Duration::ZERO);
        assert_eq!(stall.tick(at(900), 8, &busy), Duration::from_millis(500));
        // A stream going idle, or a call returning, is progress too.
        let fewer = Pending {
            streams: Vec::new(),
            calls: vec!["synchronize"],
        };
        assert_eq!(stall.tick(at(1000), 8, &fewer), Duration::ZERO);
        assert_eq!(stall.tick(at(1500), 8, &fewer), Duration::from_millis(500));
        // Nothing pending is no stall, however long.
        assert_eq!(stall.tick(at(9000), 8, &Pending::default()), Duration::ZERO);
        assert_eq!(
            stall.tick(at(99_000), 8, &Pending::default()),
            Duration::ZERO
        );
        assert_eq!(stall.tick(at(99_100), 8, &fewer), Duration::ZERO);
        assert_eq!(
            stall.tick(at(99_200), 8, &fewer),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn pending_work_is_described_per_stream_and_call() {
        let pending = Pending {
            streams: vec![(StreamId::PE, "spin".into()), (StreamId(3), "copy".into())],
            calls: vec!["synchronize"],
        };
        assert_eq!(
            pending.describe(),
            "`spin` (the last work queued) not complete on stream 0 (the PE's own), `copy` \
             (the last work queued) not complete on stream 3; `synchronize` under way"
        );
        assert_eq!(
            Pending::default().describe(),
            "no GPU work and no blocking call"
        );
    }
}
