//! The POSIX calls the launcher makes, each wrapped and checked once here: signalling a PE's
//! process group, the parent-death signal, and catching SIGINT/SIGTERM to forward them.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// A signal number.
pub(crate) type Signal = libc::c_int;

/// Sends `signal` to every process in the group `pgid` (a PE and what it started). A group
/// that no longer exists is not an error: the job is ending either way.
pub(super) fn signal_group(pgid: u32, signal: Signal) -> io::Result<()> {
    // 0 would address our own group and 1 init's; a PE's group id is its pid, never either.
    let pgid = libc::pid_t::try_from(pgid)
        .ok()
        .filter(|&pgid| pgid > 1)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{pgid} is no PE's process group"),
            )
        })?;
    // SAFETY: kill(2) takes integers and touches no memory of ours; the negative pid
    // addresses the group, checked above to be neither ours nor init's.
    if unsafe { libc::kill(-pgid, signal) } == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ESRCH) => Ok(()),
        _ => Err(err),
    }
}

/// Arranges for the calling process to get SIGKILL when `parent` dies, and fails if it is
/// already gone. Meant for `pre_exec`, between fork and exec: it only makes
/// async-signal-safe calls and allocates nothing, errors included.
#[cfg(target_os = "linux")]
pub(super) fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes integers only and is async-signal-safe.
    if unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // If the launcher died between fork and prctl, no signal will ever come.
    // SAFETY: getppid(2) cannot fail and touches no memory.
    if unsafe { libc::getppid() } != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Elsewhere there is no parent-death signal; PEs then outlive a launcher killed by SIGKILL.
#[cfg(not(target_os = "linux"))]
pub(super) fn die_with_parent(_parent: libc::pid_t) -> io::Result<()> {
    Ok(())
}

/// This process's id, as the PEs will see it from `getppid`.
pub(super) fn own_pid() -> libc::pid_t {
    // SAFETY: getpid(2) cannot fail and touches no memory.
    unsafe { libc::getpid() }
}

macro_rules! signal_names {
    ($($name:ident),* $(,)?) => {
        /// The name of `signal` (`"SIGSEGV"`), for the usual ones.
        pub(crate) fn signal_name(signal: Signal) -> Option<&'static str> {
            $(if signal == libc::$name {
                return Some(stringify!($name));
            })*
            None
        }
    };
}

signal_names!(
    SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGKILL, SIGUSR1, SIGSEGV,
    SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGCHLD, SIGCONT, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU,
    SIGURG, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGWINCH, SIGIO, SIGSYS,
);

/// The signals a launcher passes on to its PEs (whose own process groups keep them from
/// getting a terminal's Ctrl-C directly).
pub(super) const FORWARDED: [Signal; 2] = [libc::SIGINT, libc::SIGTERM];

/// How many times each of [`FORWARDED`] arrived; only the handler writes.
static RECEIVED: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// Jobs in flight, and the dispositions our handler replaced (restored when the last ends).
static INSTALLED: Mutex<(usize, [Option<libc::sigaction>; 2])> = Mutex::new((0, [None, None]));

extern "C" fn record(signal: libc::c_int) {
    // An atomic add is all a handler may safely do here.
    for (count, &forwarded) in RECEIVED.iter().zip(&FORWARDED) {
        if forwarded == signal {
            count.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// While alive, SIGINT and SIGTERM are caught (not fatal to the launcher) and
/// [`Forwarding::take`] reports them. Signals the launcher was started ignoring (`nohup`, a
/// shell's background job) stay ignored.
pub(super) struct Forwarding {
    seen: [usize; 2],
}

impl Forwarding {
    pub(super) fn install() -> io::Result<Forwarding> {
        let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
        let seen = RECEIVED
            .each_ref()
            .map(|count| count.load(Ordering::SeqCst));
        if installed.0 == 0 {
            for (i, &signal) in FORWARDED.iter().enumerate() {
                match catch(signal) {
                    Ok(old) => installed.1[i] = old,
                    Err(e) => {
                        restore(&mut installed.1);
                        return Err(e);
                    }
                }
            }
        }
        installed.0 += 1;
        Ok(Forwarding { seen })
    }

    /// The forwarded signals that arrived since the last call.
    pub(super) fn take(&mut self) -> Vec<Signal> {
        let mut arrived = Vec::new();
        for ((seen, count), &signal) in self.seen.iter_mut().zip(&RECEIVED).zip(&FORWARDED) {
            let now = count.load(Ordering::SeqCst);
            if now != *seen {
                *seen = now;
                arrived.push(signal);
            }
        }
        arrived
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
        installed.0 -= 1;
        if installed.0 == 0 {
            restore(&mut installed.1);
        }
    }
}

/// Puts back the dispositions [`catch`] replaced.
fn restore(replaced: &mut [Option<libc::sigaction>; 2]) {
    for (slot, &signal) in replaced.iter_mut().zip(&FORWARDED) {
        if let Some(old) = slot.take() {
            // SAFETY: `old` is a disposition sigaction(2) gave us for this very signal.
            // Failing to restore leaves our harmless counting handler in place.
            unsafe { libc::sigaction(signal, &raw const old, std::ptr::null_mut()) };
        }
    }
}

/// Points `signal` at [`record`]; returns the replaced disposition, or `None` (and changes
/// nothing) if the signal was ignored.
fn catch(signal: Signal) -> io::Result<Option<libc::sigaction>> {
    // SAFETY: sigaction is plain data for which all-zero bytes are a valid value.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `old`, a valid out-pointer.
    if unsafe { libc::sigaction(signal, std::ptr::null(), &raw mut old) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if old.sa_sigaction == libc::SIG_IGN {
        return Ok(None);
    }
    // SAFETY: as above, all-zero is a valid sigaction.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = record as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // Restart interrupted system calls so the launcher's threads (output relays, the
    // rendezvous) never see EINTR.
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid sigset_t to initialise; `action` is fully set up
    // with a handler that is async-signal-safe, and `old` is a valid out-pointer.
    unsafe {
        libc::sigemptyset(&raw mut action.sa_mask);
        if libc::sigaction(signal, &raw const action, &raw mut old) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(Some(old))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_have_their_names() {
        assert_eq!(signal_name(libc::SIGSEGV), Some("SIGSEGV"));
        assert_eq!(signal_name(libc::SIGKILL), Some("SIGKILL"));
        assert_eq!(signal_name(libc::SIGINT), Some("SIGINT"));
        assert_eq!(signal_name(1000), None);
    }

    #[test]
    fn our_own_group_and_init_are_never_signalled() {
        for pgid in [0, 1, u32::MAX] {
            let err = signal_group(pgid, 0).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
    }
}
