//! The handle of a GPU PE's watchdog thread ([`Watchdog`]) and the SIGTERM self-pipe: the
//! handler only writes a byte to a pipe (async-signal-safe, no allocation), which the
//! watchdog thread (`watchdog.rs`) reads. Apart from `watchdog.rs` so that the PE's state can
//! hold the handle without importing the thread's code, which reads that state.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread::JoinHandle;

/// The write end of the pipe the SIGTERM handler writes to; -1 when no watchdog catches it.
pub(super) static TERM_PIPE: AtomicI32 = AtomicI32::new(-1);
/// What the handler writes, and what `Drop` writes to stop the thread.
pub(super) const TERM: u8 = b'T';
pub(super) const STOP: u8 = b'S';

/// A running watchdog thread; dropping it stops the thread and restores SIGTERM.
pub(crate) struct Watchdog {
    pub(super) wake: OwnedFd,
    pub(super) thread: Option<JoinHandle<()>>,
    /// The SIGTERM disposition replaced, if this watchdog catches SIGTERM.
    pub(super) replaced: Option<libc::sigaction>,
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(old) = self.replaced.take() {
            // SAFETY: `old` is the disposition sigaction(2) returned for SIGTERM.
            unsafe { libc::sigaction(libc::SIGTERM, &raw const old, std::ptr::null_mut()) };
            TERM_PIPE.store(-1, Ordering::SeqCst);
        }
        // The pipe has room (only the handler and this write to it); should the write fail,
        // the thread still ends within a tick once it cannot upgrade the PE.
        write_byte(self.wake.as_raw_fd(), STOP);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

extern "C" fn on_term(_: libc::c_int) {
    // SAFETY: __errno_location is this thread's errno; write(2) is async-signal-safe. The
    // write end stays open while TERM_PIPE names it (Drop clears it before closing).
    unsafe {
        let errno = *libc::__errno_location();
        let fd = TERM_PIPE.load(Ordering::SeqCst);
        if fd >= 0 {
            let byte = TERM;
            libc::write(fd, (&raw const byte).cast(), 1);
        }
        *libc::__errno_location() = errno;
    }
}

/// Points SIGTERM at [`on_term`]; returns the replaced disposition.
pub(super) fn catch_term() -> std::io::Result<libc::sigaction> {
    // SAFETY: all-zero is a valid sigaction; `action` is fully set up with an async-signal-safe
    // handler and `old` is a valid out-pointer.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        let mut old: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_term as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&raw mut action.sa_mask);
        if libc::sigaction(libc::SIGTERM, &raw const action, &raw mut old) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(old)
    }
}

/// A pipe (read end, write end), both close-on-exec, the write end non-blocking (a signal
/// handler must never block on it).
pub(super) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2(2) returns.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded: both are fresh descriptors that nothing else owns.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl(2) on a descriptor we own, with integer arguments.
    if unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((read, write))
}

pub(super) fn write_byte(fd: libc::c_int, byte: u8) {
    // SAFETY: one byte from a live local to a descriptor the caller owns.
    unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
}
