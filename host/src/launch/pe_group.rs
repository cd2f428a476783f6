//! The launcher's group of PE processes ([`PeGroup`]): the PEs as child processes, their
//! output relayed line by line with a `[PE k] ` prefix, and the whole group ended as soon as
//! one PE fails.
//!
//! Which PE the job's error names: the first (as the launcher saw them end) that failed *of
//! its own accord* — its program reported an error ([`PeReport::Failed`]), or it exited
//! non-zero or died before the launcher signalled it. Failing that, the first whose watchdog
//! reported a hang ([`PeReport::Hung`]); failing that, the first failure of all. A PE that
//! waits for a failed one can fail first in time (its wait fails, or its own watchdog fires),
//! and PEs the launcher ends fail after it; those that said why are listed as consequences.
//!
//! Each PE leads its own process group, so one signal reaches everything it started. The
//! launcher polls the PEs rather than blocking on one: it must notice the first failure
//! whichever PE it is, and a forwarded signal, within a few milliseconds.

use super::rendezvous::{Address, Server};
use super::report::PeReport;
use super::sys::{self, Forwarding, Signal};
use super::vars::{LOCAL_RANK_VAR, NPES_VAR, PE_VAR, RENDEZVOUS_VAR, REPORT_VAR};
use crate::contract::{Error, Result, MPS_SHARED_FAULT};
use std::ffi::OsString;
use std::fmt;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long PEs get between SIGTERM and SIGKILL once the job is ending.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);
/// How often the launcher looks at its PEs.
const POLL: Duration = Duration::from_millis(10);
/// How long the output of exited PEs may still take to drain: a process that left the PE's
/// group can hold its pipes open forever, and must not hang the launcher.
const DRAIN: Duration = Duration::from_secs(1);
/// Longer lines are relayed in pieces of this size, so a PE that never writes a newline
/// cannot make the launcher buffer without bound.
const MAX_LINE: u64 = 64 * 1024;
/// The status a panicking Rust program exits with.
const PANIC_STATUS: i32 = 101;

/// The PE processes of a job, to start: `npes` copies of a program, each told its PE index.
///
/// ```no_run
/// use rshmem_host::launch::PeGroup;
/// # fn main() -> rshmem_host::Result<()> {
/// PeGroup::new(4, "./my-app").args(["--size", "1M"]).run()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PeGroup {
    npes: usize,
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    grace: Duration,
}

/// How a PE process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeExit {
    /// It exited with this status.
    Code(i32),
    /// A signal killed it.
    Signal {
        /// The signal number.
        signal: i32,
        /// Whether it left a core dump.
        core_dumped: bool,
    },
}

/// The PE of a job that failed first of its own accord (see [`crate::launch`]), and
/// how; the PEs that failed as consequences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeFailure {
    /// The PE.
    pub pe: usize,
    /// How its process ended.
    pub exit: PeExit,
    /// The panic message it printed, if it panicked.
    pub panic: Option<String>,
    /// A signal the launcher received and forwarded to the PEs before this failure.
    pub forwarded: Option<i32>,
    /// What the PE reported about its end (`RSHMEM_REPORT`), if it did.
    pub report: Option<PeReport>,
    /// Whether the launcher had signalled the PE to end (another PE had failed, or a
    /// forwarded signal) before it exited.
    pub ended: bool,
    /// Other PEs that failed and said why (consequences of this one, as the launcher judges:
    /// they failed waiting, hung, or were ended; or they failed too), by PE.
    pub consequences: Vec<PeFailure>,
    /// PEs that had exited with status 0 when the job failed: for a hang, likely the cause (a
    /// PE that left while the others wait for it in a collective or a kernel).
    pub succeeded: Vec<usize>,
}

/// How a failed PE stands in the blame, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Standing {
    /// It failed of its own accord.
    Own,
    /// Its kernels failed with no fault of its own recorded, on a GPU shared under MPS
    /// ([`MPS_SHARED_FAULT`]): another PE's recorded fault is the likelier cause.
    Shared,
    /// Its watchdog saw no progress.
    Hung,
    /// It was ended, by the launcher or (forwarded) from outside.
    Ended,
}

impl PeGroup {
    /// `npes` PEs of `program`, with no arguments.
    pub fn new(npes: usize, program: impl Into<PathBuf>) -> PeGroup {
        PeGroup {
            npes,
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            grace: DEFAULT_GRACE,
        }
    }

    /// Appends arguments for every PE.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> PeGroup
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for every PE. It overrides the launcher's own
    /// environment and `RSHMEM_BACKEND=gpu`, but not the variables that place the PE.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> PeGroup {
        self.env.push((key.into(), value.into()));
        self
    }

    /// How long PEs get to exit after SIGTERM before SIGKILL (default [`DEFAULT_GRACE`]).
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> PeGroup {
        self.grace = grace;
        self
    }

    /// Runs the job: `Ok` if every PE exits 0, else the first failure as
    /// [`Error::PeFailed`], after ending the others.
    ///
    /// # Errors
    ///
    /// [`Error::PeFailed`] for the first PE that failed; the errors of [`PeGroup::status`].
    pub fn run(&self) -> Result<()> {
        self.status()?.map_err(Error::from)
    }

    /// Runs the job and says how it ended: `Err` is the launcher's own failure (a PE could
    /// not be started, ...), `Ok(Err(_))` the first PE that failed.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the program cannot be started (its `source` says why: not found,
    /// not executable, ...) or the launcher cannot set up its rendezvous, relays or signal
    /// handling; [`Error::Launcher`] for 0 PEs.
    pub fn status(&self) -> Result<std::result::Result<(), PeFailure>> {
        if self.npes == 0 {
            return Err(Error::Launcher(
                "a job needs at least 1 PE; asked to start 0".into(),
            ));
        }
        let server = Server::start()?;
        let mut forwarding = Forwarding::install().map_err(|source| Error::Io {
            context: "catching SIGINT and SIGTERM to forward them to the PEs".into(),
            source,
        })?;
        let launcher = sys::own_pid();
        let mut pes = Pes(Vec::with_capacity(self.npes));
        for pe in 0..self.npes {
            pes.0.push(self.spawn(pe, &server, launcher)?);
        }
        let failed = pes.supervise(&mut forwarding, self.grace)?;
        pes.drain();
        let failures = failed
            .into_iter()
            .map(|(index, status, forwarded)| {
                let pe = &pes.0[index];
                PeFailure {
                    pe: index,
                    exit: PeExit::from(status),
                    panic: pe
                        .panic
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .message
                        .clone(),
                    forwarded,
                    // Read before `server` drops and removes its directory.
                    report: PeReport::read(&report_path(server.dir(), index)),
                    ended: pe.ended,
                    consequences: Vec::new(),
                    succeeded: Vec::new(),
                }
            })
            .collect();
        let succeeded: Vec<usize> = (0..pes.0.len())
            .filter(|&pe| pes.0[pe].exit.is_some_and(|status| status.success()))
            .collect();
        Ok(match blame(failures) {
            None => Ok(()),
            Some(mut failure) => {
                failure.succeeded = succeeded;
                Err(failure)
            }
        })
    }

    fn spawn(&self, pe: usize, server: &Server, launcher: libc::pid_t) -> Result<Pe> {
        let rendezvous: &Address = server.address();
        // Only PE 0 gets the launcher's stdin, as with mpirun: several readers would race.
        // Not a terminal, though: a PE leads its own process group, so reading the terminal
        // would stop it (SIGTTIN) and hang the job.
        let terminal_stdin = io::stdin().is_terminal();
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env("RSHMEM_BACKEND", "gpu")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env(PE_VAR, pe.to_string())
            .env(NPES_VAR, self.npes.to_string())
            // One node: the PE's index is its GPU.
            .env(LOCAL_RANK_VAR, pe.to_string())
            .env(RENDEZVOUS_VAR, rendezvous.to_env())
            .env(REPORT_VAR, report_path(server.dir(), pe))
            .stdin(if pe == 0 && !terminal_stdin {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // SAFETY: the closure runs in the forked child before exec; `die_with_parent` makes
        // only async-signal-safe calls and allocates nothing, as that requires.
        unsafe { command.pre_exec(move || sys::die_with_parent(launcher)) };
        let mut child = command.spawn().map_err(|source| Error::Io {
            context: format!("starting PE {pe} as `{}`", self.program.display()),
            source,
        })?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        // Owned by a `Pe` before anything else can fail, so a failure below still ends it.
        let mut started = Pe {
            child,
            exit: None,
            ended: false,
            relays: Vec::new(),
            panic: Arc::default(),
        };
        let relays = [
            stdout.map(|out| relay(pe, out, Stream::Stdout, None)),
            stderr.map(|err| relay(pe, err, Stream::Stderr, Some(Arc::clone(&started.panic)))),
        ];
        for relay in relays.into_iter().flatten() {
            started.relays.push(relay.map_err(|source| Error::Io {
                context: format!("starting the thread that relays PE {pe}'s output"),
                source,
            })?);
        }
        Ok(started)
    }
}

/// Where PE `pe` writes its report: the launcher's private directory.
fn report_path(dir: &Path, pe: usize) -> PathBuf {
    dir.join(format!("pe{pe}.report"))
}

/// The failure the job's error names, with the others that said why as its consequences:
/// `failures` in the order the launcher saw them end (see the [module docs](self)).
fn blame(mut failures: Vec<PeFailure>) -> Option<PeFailure> {
    let cause = (0..failures.len()).min_by_key(|&i| (failures[i].standing(), i))?;
    let mut cause_failure = failures.remove(cause);
    cause_failure.consequences = failures
        .into_iter()
        .filter(|failure| failure.report.is_some())
        .collect();
    // By PE, not by the order they happened to end in: the same fault reads the same.
    cause_failure.consequences.sort_by_key(|failure| failure.pe);
    Some(cause_failure)
}

/// The PEs of a running job.
struct Pes(Vec<Pe>);

/// A started PE. Dropping it kills and reaps it if it still runs, so no early return (or
/// panic) of the launcher leaves orphans.
struct Pe {
    child: Child,
    exit: Option<ExitStatus>,
    /// The launcher signalled it to end while it ran.
    ended: bool,
    relays: Vec<JoinHandle<()>>,
    panic: Arc<Mutex<PanicWatch>>,
}

impl Pes {
    /// Waits for every PE; once one fails (or a forwarded signal arrives) it ends the others:
    /// SIGTERM (or that signal), then SIGKILL after `grace`. Returns the failed PEs' indices
    /// and statuses, in the order they ended, each with the signal forwarded before it
    /// ended, if any.
    fn supervise(
        &mut self,
        forwarding: &mut Forwarding,
        grace: Duration,
    ) -> Result<Vec<(usize, ExitStatus, Option<Signal>)>> {
        let mut failed = Vec::new();
        let mut forwarded = None;
        let mut ending_since: Option<Instant> = None;
        let mut killed = false;
        loop {
            for (index, pe) in self.0.iter_mut().enumerate() {
                if pe.exit.is_some() {
                    continue;
                }
                let status = pe.child.try_wait().map_err(|source| Error::Io {
                    context: format!("waiting for PE {index}"),
                    source,
                })?;
                if let Some(status) = status {
                    pe.exit = Some(status);
                    // Whatever the PE started dies with it. Its pid cannot have been reused
                    // yet: the group id stays taken while any member lives.
                    let _ = sys::signal_group(pe.child.id(), libc::SIGKILL);
                    if !status.success() {
                        failed.push((index, status, forwarded));
                    }
                }
            }
            let now = Instant::now();
            if !failed.is_empty() && ending_since.is_none() {
                self.signal_running(libc::SIGTERM);
                ending_since = Some(now);
            }
            for signal in forwarding.take() {
                self.signal_running(signal);
                forwarded = Some(signal);
                ending_since.get_or_insert(now);
            }
            if self.0.iter().all(|pe| pe.exit.is_some()) {
                return Ok(failed);
            }
            if ending_since.is_some_and(|since| !killed && since.elapsed() >= grace) {
                self.signal_running(libc::SIGKILL);
                killed = true;
            }
            thread::sleep(POLL);
        }
    }

    fn signal_running(&mut self, signal: Signal) {
        for pe in self.0.iter_mut().filter(|pe| pe.exit.is_none()) {
            pe.ended = true;
            // A PE that cannot be signalled is still reaped by the SIGKILL that follows,
            // or by Drop; there is nothing better to do with the error.
            let _ = sys::signal_group(pe.child.id(), signal);
        }
    }

    /// Waits (boundedly) for the relays to pass on the PEs' last lines.
    fn drain(&mut self) {
        let deadline = Instant::now() + DRAIN;
        for pe in &mut self.0 {
            for relay in std::mem::take(&mut pe.relays) {
                while !relay.is_finished() && Instant::now() < deadline {
                    thread::sleep(POLL);
                }
                if relay.is_finished() {
                    let _ = relay.join();
                }
            }
        }
    }
}

impl Drop for Pe {
    fn drop(&mut self) {
        if self.exit.is_none() {
            let _ = sys::signal_group(self.child.id(), libc::SIGKILL);
            self.exit = self.child.wait().ok();
        }
    }
}

/// The launcher's stream a PE stream is relayed to.
#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// Writes one whole line under the stream's lock, so lines of different PEs never mix.
    fn write_line(self, prefix: &[u8], line: &[u8]) -> io::Result<()> {
        fn write(mut out: impl Write, prefix: &[u8], line: &[u8]) -> io::Result<()> {
            out.write_all(prefix)?;
            out.write_all(line)?;
            if !line.ends_with(b"\n") {
                out.write_all(b"\n")?;
            }
            out.flush()
        }
        match self {
            Stream::Stdout => write(io::stdout().lock(), prefix, line),
            Stream::Stderr => write(io::stderr().lock(), prefix, line),
        }
    }
}

/// Relays `from` to `to` line by line with the `[PE k] ` prefix, noting a panic message.
fn relay(
    pe: usize,
    from: impl Read + Send + 'static,
    to: Stream,
    panic: Option<Arc<Mutex<PanicWatch>>>,
) -> io::Result<JoinHandle<()>> {
    thread::Builder::new()
        .name(format!("rshmem-pe{pe}-output"))
        .spawn(move || {
            let prefix = format!("[PE {pe}] ").into_bytes();
            let mut reader = BufReader::new(from);
            let mut line = Vec::new();
            let mut relaying = true;
            loop {
                line.clear();
                match reader.by_ref().take(MAX_LINE).read_until(b'\n', &mut line) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                }
                if let Some(panic) = &panic {
                    panic
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .see(&String::from_utf8_lossy(&line));
                }
                // If our own stream is gone (`rshmem-run ... | head`), keep draining the
                // PE's pipe so it does not block on a full one.
                relaying = relaying && to.write_line(&prefix, &line).is_ok();
            }
        })
}

/// Picks a Rust panic message out of a PE's stderr.
#[derive(Debug, Default)]
struct PanicWatch {
    /// The previous line was `thread '…' panicked at <location>:`; the message follows.
    expecting: bool,
    message: Option<String>,
}

impl PanicWatch {
    fn see(&mut self, line: &str) {
        if self.message.is_some() {
            return;
        }
        let line = line.trim_end();
        if std::mem::take(&mut self.expecting) {
            self.message = Some(line.to_string());
        } else if let Some((_, rest)) = line.split_once("panicked at ") {
            // Rust >= 1.73 puts the message on the next line; older ones on this one.
            if rest.ends_with(':') {
                self.expecting = true;
            } else {
                self.message = Some(rest.to_string());
            }
        }
    }
}

impl From<ExitStatus> for PeExit {
    fn from(status: ExitStatus) -> PeExit {
        match (status.code(), status.signal()) {
            (Some(code), _) => PeExit::Code(code),
            (None, Some(signal)) => PeExit::Signal {
                signal,
                core_dumped: status.core_dumped(),
            },
            // Stopped/continued statuses are not reported by try_wait.
            (None, None) => PeExit::Code(-1),
        }
    }
}

impl PeExit {
    /// The status a shell reports for it: the exit code, or 128 + the signal.
    #[must_use]
    pub fn shell_status(self) -> i32 {
        match self {
            PeExit::Code(code) => code,
            PeExit::Signal { signal, .. } => 128 + signal,
        }
    }
}

impl fmt::Display for PeExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PeExit::Code(code) => write!(f, "exited with status {code}"),
            PeExit::Signal {
                signal,
                core_dumped,
            } => {
                match sys::signal_name(signal) {
                    Some(name) => write!(f, "was killed by {name} (signal {signal}")?,
                    None => write!(f, "was killed by signal {signal} (")?,
                }
                f.write_str(if core_dumped { ", core dumped)" } else { ")" })
            }
        }
    }
}

impl PeFailure {
    fn standing(&self) -> Standing {
        match &self.report {
            Some(PeReport::Failed(text)) if text.contains(MPS_SHARED_FAULT) => Standing::Shared,
            Some(PeReport::Failed(_)) => Standing::Own,
            Some(PeReport::Hung(_)) => Standing::Hung,
            Some(PeReport::Ended(_)) => Standing::Ended,
            None if self.ended => Standing::Ended,
            None => Standing::Own,
        }
    }

    /// Whether the PE's watchdog ended it (no progress for the hang timeout).
    #[must_use]
    pub fn hung(&self) -> bool {
        matches!(self.report, Some(PeReport::Hung(_)))
    }

    /// How the PE failed, e.g. its program's error, `panicked: index out of bounds ...`,
    /// `was killed by SIGSEGV (signal 11, core dumped)`, or for a hang what was pending
    /// (`no progress for 30 s: ...`); then the consequences, if any.
    #[must_use]
    pub fn reason(&self) -> String {
        let mut reason = self.own_reason();
        if self.hung() && !self.succeeded.is_empty() {
            let pes: Vec<String> = self.succeeded.iter().map(|pe| format!("PE {pe}")).collect();
            reason.push_str(&format!(
                "\n({} had ended, with status 0, while the others still ran: a PE that left a \
                 collective or a wait the others are in makes them hang)",
                pes.join(", ")
            ));
        }
        // Those that waited (hung, or were ended) are consequences, and so are those whose
        // kernels MPS ended with this PE's fault; others that failed of their own accord
        // (every PE refusing the same bad call) failed too.
        let with = |standing: Standing| -> Vec<&PeFailure> {
            let of = |c: &&PeFailure| match c.standing() {
                Standing::Hung | Standing::Ended => Standing::Ended,
                other => other,
            };
            self.consequences
                .iter()
                .filter(|c| of(c) == standing)
                .collect()
        };
        let (waited, mut shared, mut too) = (
            with(Standing::Ended),
            with(Standing::Shared),
            with(Standing::Own),
        );
        if self.standing() == Standing::Shared {
            // No PE recorded a fault: nobody's is the cause to name.
            too.append(&mut shared);
        }
        let list = |failures: &[&PeFailure]| {
            let pes: Vec<String> = failures.iter().map(|c| format!("PE {}", c.pe)).collect();
            pes.join(", ")
        };
        if !waited.is_empty() {
            reason.push_str(&format!(
                "\n(consequences: {} failed waiting for PE {})",
                list(&waited),
                self.pe
            ));
        }
        if !shared.is_empty() {
            reason.push_str(&format!(
                "\n(consequences: {} failed with PE {}'s fault: {MPS_SHARED_FAULT})",
                list(&shared),
                self.pe
            ));
        }
        if !too.is_empty() {
            reason.push_str(&format!("\n({} failed too)", list(&too)));
        }
        for c in waited.iter().chain(&shared).chain(&too) {
            reason.push_str(&format!("\n  PE {} {}: {}", c.pe, c.verb(), c.own_reason()));
        }
        reason
    }

    fn verb(&self) -> &'static str {
        if self.hung() {
            "hung"
        } else {
            "failed"
        }
    }

    /// The reason without the consequences.
    fn own_reason(&self) -> String {
        match &self.report {
            Some(PeReport::Failed(text) | PeReport::Hung(text)) => return text.clone(),
            Some(PeReport::Ended(text)) if text.is_empty() => {
                return format!("ended by the launcher ({})", self.exit)
            }
            Some(PeReport::Ended(text)) => {
                return format!("ended by the launcher ({}); pending: {text}", self.exit)
            }
            None => {}
        }
        match (&self.panic, self.exit) {
            (Some(message), PeExit::Code(PANIC_STATUS)) => format!("panicked: {message}"),
            (_, PeExit::Code(PANIC_STATUS)) => {
                format!("{}, the status of a Rust panic", self.exit)
            }
            (_, PeExit::Signal { signal, .. }) if self.forwarded == Some(signal) => {
                format!("{}, which the launcher received and forwarded", self.exit)
            }
            (_, PeExit::Signal { signal, .. })
                if self.ended && (signal == libc::SIGTERM || signal == libc::SIGKILL) =>
            {
                format!("{}, sent by the launcher to end the job", self.exit)
            }
            _ => self.exit.to_string(),
        }
    }
}

impl fmt::Display for PeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PE {} {}: {}", self.pe, self.verb(), self.reason())
    }
}

impl std::error::Error for PeFailure {}

impl From<PeFailure> for Error {
    fn from(failure: PeFailure) -> Error {
        if failure.hung() {
            Error::PeHung {
                report: failure.reason(),
                pe: failure.pe,
            }
        } else {
            Error::PeFailed {
                reason: failure.reason(),
                pe: failure.pe,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(npes: usize, script: &str) -> PeGroup {
        PeGroup::new(npes, "/bin/sh").args(["-c", script])
    }

    fn failure(job: &PeGroup) -> (PeFailure, Duration) {
        let start = Instant::now();
        let failure = job.status().unwrap().unwrap_err();
        (failure, start.elapsed())
    }

    #[test]
    fn all_pes_exiting_zero_is_success() {
        sh(3, r#"test "$RSHMEM_NPES" = 3 && test "$RSHMEM_PE" = "$RSHMEM_LOCAL_RANK" && test "$RSHMEM_BACKEND" = gpu"#)
            .run()
            .unwrap();
    }

    #[test]
    fn the_first_failure_is_named_and_the_others_ended() {
        let (failure, elapsed) =
            failure(&sh(3, r#"[ "$RSHMEM_PE" = 2 ] && exit 7; exec sleep 60"#));
        assert_eq!((failure.pe, failure.exit), (2, PeExit::Code(7)));
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        let err = Error::from(failure).to_string();
        assert_eq!(err, "PE 2 failed: exited with status 7");
    }

    #[test]
    fn a_signal_death_is_named_and_stubborn_pes_get_sigkill() {
        let job = sh(
            2,
            r#"trap '' TERM; [ "$RSHMEM_PE" = 1 ] && kill -SEGV $$; while :; do sleep 1; done"#,
        )
        .grace(Duration::from_millis(300));
        let (failure, elapsed) = failure(&job);
        assert_eq!(failure.pe, 1);
        assert!(
            matches!(
                failure.exit,
                PeExit::Signal {
                    signal: libc::SIGSEGV,
                    ..
                }
            ),
            "{failure:?}"
        );
        assert_eq!(failure.exit.shell_status(), 128 + libc::SIGSEGV);
        assert!(
            failure
                .reason()
                .starts_with("was killed by SIGSEGV (signal 11"),
            "{}",
            failure.reason()
        );
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    }

    #[test]
    fn a_missing_program_is_a_launcher_error() {
        let err = PeGroup::new(2, "/nonexistent/rshmem-program")
            .run()
            .unwrap_err();
        assert!(
            matches!(&err, Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains("starting PE 0 as `/nonexistent/rshmem-program`"),
            "{err}"
        );
        assert!(PeGroup::new(0, "/bin/true")
            .run()
            .unwrap_err()
            .to_string()
            .contains("at least 1 PE"));
    }

    /// A PE script's command that writes a report of `kind` with `text` (no quotes in it),
    /// through the function `reporting` defines.
    fn report(kind: &str, text: &str) -> String {
        format!(r#"r {kind} "{text}""#)
    }

    /// `sh` with the function `report`'s commands call.
    fn reporting(npes: usize, script: &str) -> PeGroup {
        sh(
            npes,
            &format!(r#"r() {{ printf '%s\n%s' "$1" "$2" > "$RSHMEM_REPORT"; }}; {script}"#),
        )
    }

    #[test]
    fn a_pes_own_error_is_the_reason() {
        let (failure, elapsed) = failure(&reporting(
            2,
            &format!(
                r#"[ "$RSHMEM_PE" = 1 ] && {{ {}; exit 1; }}; exec sleep 60"#,
                report("failed", "kernel boom failed on PE 1: trapped")
            ),
        ));
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert_eq!(
            Error::from(failure).to_string(),
            "PE 1 failed: kernel boom failed on PE 1: trapped"
        );
    }

    /// PE 1 fails of its own accord, PE 0 waits for it: whichever ends first, PE 1 is named
    /// and PE 0 listed as a consequence, with what it said.
    #[test]
    fn the_cause_is_named_whichever_pe_ends_first() {
        let culprit = report("failed", "kernel trap failed on PE 1");
        let ended = report("ended", "kernel wait on stream 0");
        // The waiter first: its watchdog fires before the culprit (which ignores SIGTERM
        // before the waiter ends, so the launcher cannot end it first) reports its own
        // failure.
        let waiter_first = reporting(
            2,
            &format!(
                r#"ready="${{RSHMEM_REPORT%/*}}/ready"; if [ "$RSHMEM_PE" = 0 ]; then while [ ! -e "$ready" ]; do sleep 0.01; done; {}; exit 124; fi; trap '' TERM; touch "$ready"; sleep 0.3; {culprit}; exit 1"#,
                report(
                    "hung",
                    "no progress for 1 s; pending: kernel wait on stream 0"
                )
            ),
        );
        // The culprit first (once the waiter is ready to report): the launcher ends the
        // waiter, which says what it waited for.
        let culprit_first = reporting(
            2,
            &format!(
                r#"ready="${{RSHMEM_REPORT%/*}}/ready"; if [ "$RSHMEM_PE" = 1 ]; then while [ ! -e "$ready" ]; do sleep 0.01; done; {culprit}; exit 1; fi; trap '{ended}; exit 143' TERM; touch "$ready"; while :; do sleep 0.02; done"#
            ),
        );
        for (job, consequence) in [
            (
                waiter_first,
                "PE 0 hung: no progress for 1 s; pending: kernel wait on stream 0",
            ),
            (
                culprit_first,
                "PE 0 failed: ended by the launcher (exited with status 143); pending: kernel wait on stream 0",
            ),
        ] {
            let (failure, _) = failure(&job);
            let err = Error::from(failure.clone());
            assert!(matches!(err, Error::PeFailed { pe: 1, .. }), "{err:?}");
            assert_eq!(
                err.to_string(),
                format!(
                    "PE 1 failed: kernel trap failed on PE 1\n\
                     (consequences: PE 0 failed waiting for PE 1)\n  {consequence}"
                )
            );
        }
    }

    #[test]
    fn a_hang_is_named_as_one_with_what_every_pe_had_pending() {
        let job = reporting(
            3,
            &format!(
                r#"if [ "$RSHMEM_PE" = 2 ]; then while [ ! -e "$RSHMEM_REPORT.0" ] || [ ! -e "$RSHMEM_REPORT.1" ]; do sleep 0.01; done; {}; exit 124; fi; trap '{}; exit 143' TERM; touch "${{RSHMEM_REPORT%/*}}/pe2.report.$RSHMEM_PE"; while :; do sleep 0.02; done"#,
                report(
                    "hung",
                    "no progress for 5 s; pending: kernel spin on stream 0"
                ),
                report("ended", "barrier_all")
            ),
        );
        let (failure, elapsed) = failure(&job);
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert!(failure.hung());
        let err = Error::from(failure);
        assert!(matches!(err, Error::PeHung { pe: 2, .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "PE 2 hung: no progress for 5 s; pending: kernel spin on stream 0\n\
                 (consequences: PE 0, PE 1 failed waiting for PE 2)"
            ),
            "{msg}"
        );
        for pe in [0, 1] {
            assert!(
                msg.contains(&format!("PE {pe} failed: ended by the launcher (exited with status 143); pending: barrier_all")),
                "{msg}"
            );
        }
    }

    /// PE 2 fails of its own accord after PE 1 (it ignores the launcher's SIGTERM meanwhile).
    #[test]
    fn pes_failing_on_their_own_after_the_first_failed_too() {
        let job = reporting(
            3,
            &format!(
                r#"ready="${{RSHMEM_REPORT%/*}}/ready"; [ "$RSHMEM_PE" = 0 ] && exec sleep 60; if [ "$RSHMEM_PE" = 2 ]; then trap '' TERM; touch "$ready"; sleep 0.2; else while [ ! -e "$ready" ]; do sleep 0.01; done; fi; {}; exit 1"#,
                report("failed", "heap exhausted")
            ),
        );
        let msg = Error::from(failure(&job).0).to_string();
        assert_eq!(
            msg,
            "PE 1 failed: heap exhausted\n(PE 2 failed too)\n  PE 2 failed: heap exhausted"
        );
    }

    /// Under MPS one PE's fault ends the kernels of every PE on the GPU: the PE that recorded
    /// a fault is the cause even when another's failure was seen first, and the others are
    /// its consequences; where nobody recorded one, nobody is named for it.
    #[test]
    fn under_mps_the_recorded_fault_is_blamed_not_the_pes_it_ended() {
        let failed = |pe: usize, text: String| PeFailure {
            pe,
            exit: PeExit::Code(1),
            panic: None,
            forwarded: None,
            report: Some(PeReport::Failed(text)),
            ended: false,
            consequences: Vec::new(),
            succeeded: Vec::new(),
        };
        let ended_with_it = |pe: usize| {
            failed(
                pe,
                format!(
                    "kernel `wait` failed on PE {pe}: CUDA_ERROR_LAUNCH_FAILED; ({MPS_SHARED_FAULT})"
                ),
            )
        };
        let recorded = failed(
            0,
            "kernel `trap` failed on PE 0: block (0, 0, 0), thread (0, 0, 0): assertion failed"
                .into(),
        );
        let blamed = blame(vec![ended_with_it(2), recorded, ended_with_it(1)]).unwrap();
        assert_eq!(blamed.pe, 0);
        assert_eq!(
            blamed.reason(),
            format!(
                "kernel `trap` failed on PE 0: block (0, 0, 0), thread (0, 0, 0): assertion \
                 failed\n(consequences: PE 1, PE 2 failed with PE 0's fault: {MPS_SHARED_FAULT})\n  \
                 PE 1 failed: kernel `wait` failed on PE 1: CUDA_ERROR_LAUNCH_FAILED; \
                 ({MPS_SHARED_FAULT})\n  PE 2 failed: kernel `wait` failed on PE 2: \
                 CUDA_ERROR_LAUNCH_FAILED; ({MPS_SHARED_FAULT})"
            )
        );
        let nobody = blame(vec![ended_with_it(1), ended_with_it(0)]).unwrap();
        assert_eq!(nobody.pe, 1);
        assert!(
            nobody.reason().contains("\n(PE 0 failed too)\n"),
            "{}",
            nobody.reason()
        );
    }

    #[test]
    fn a_hang_after_a_pe_left_names_the_pe_that_left() {
        let job = reporting(
            2,
            &format!(
                r#"[ "$RSHMEM_PE" = 0 ] && exit 0; sleep 0.2; {}; exit 124"#,
                report("hung", "no progress for 5 s; pending: barrier_all")
            ),
        );
        let msg = Error::from(failure(&job).0).to_string();
        assert_eq!(
            msg,
            "PE 1 hung: no progress for 5 s; pending: barrier_all\n(PE 0 had ended, with \
             status 0, while the others still ran: a PE that left a collective or a wait the \
             others are in makes them hang)"
        );
    }

    #[test]
    fn panic_messages_are_picked_out_of_stderr() {
        let mut new_style = PanicWatch::default();
        for line in [
            "warming up\n",
            "thread 'main' panicked at src/main.rs:4:5:\n",
            "PE 1 gave up\n",
            "note: run with `RUST_BACKTRACE=1`\n",
        ] {
            new_style.see(line);
        }
        assert_eq!(new_style.message.as_deref(), Some("PE 1 gave up"));
        let mut old_style = PanicWatch::default();
        old_style.see("thread 'main' panicked at 'boom', src/main.rs:4:5\n");
        assert_eq!(
            old_style.message.as_deref(),
            Some("'boom', src/main.rs:4:5")
        );
        let failure = PeFailure {
            pe: 1,
            exit: PeExit::Code(101),
            panic: new_style.message,
            forwarded: None,
            report: None,
            ended: false,
            consequences: Vec::new(),
            succeeded: Vec::new(),
        };
        assert_eq!(failure.to_string(), "PE 1 failed: panicked: PE 1 gave up");
    }
}
