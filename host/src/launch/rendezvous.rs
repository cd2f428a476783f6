//! The launcher's rendezvous: how PE 0 hands NVSHMEM's unique ID to the other PEs.
//!
//! The launcher listens on a Unix socket in a fresh private directory (mode 0700: other
//! users of the machine can neither read the ID nor plant one, which a loopback TCP port
//! would allow) and passes `unix:<path>` in `RSHMEM_RENDEZVOUS`. One request per connection:
//!
//! ```text
//! request: "RSHM" op:u8 [len:u32le bytes]   op b'P': publish the bytes; op b'G': get them
//! reply:   status:u8 len:u32le bytes         status 0: done (a get carries the ID);
//!                                            status 1: refused (bytes: the reason, UTF-8)
//! ```
//!
//! A get is answered once PE 0 has published; the client's read timeout bounds its wait.

use super::report::PeReport;
use super::vars::{RENDEZVOUS_VAR, REPORT_VAR};
use crate::contract::{Error, Result};
use std::ffi::OsString;
use std::fs::DirBuilder;
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

const MAGIC: &[u8; 4] = b"RSHM";
const PUBLISH: u8 = b'P';
const GET: u8 = b'G';
const DONE: u8 = 0;
const REFUSED: u8 = 1;
/// NVSHMEM's unique ID is 128 bytes; anything far larger is not one.
const MAX_PAYLOAD: usize = 64 * 1024;
/// How long the server waits for a connected client to send its request: a stray
/// connection must not hold a thread for the whole job.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// `sun_path` holds 108 bytes with its NUL; leave room for `rshmem-<pid>-<n>/uid.sock`.
const MAX_BASE_LEN: usize = 60;

/// Where a rendezvous listens: a Unix socket path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Address(PathBuf);

impl Address {
    /// Parses the `RSHMEM_RENDEZVOUS` form, `unix:<path>`.
    pub(crate) fn parse(value: &str) -> Option<Address> {
        value
            .strip_prefix("unix:")
            .filter(|path| !path.is_empty())
            .map(|path| Address(PathBuf::from(path)))
    }

    /// The `RSHMEM_RENDEZVOUS` form of this address.
    pub(crate) fn to_env(&self) -> OsString {
        let mut value = OsString::from("unix:");
        value.push(self.0.as_os_str());
        value
    }

    /// Sends one request and reads its reply.
    fn request(
        &self,
        op: u8,
        payload: &[u8],
        timeout: Duration,
    ) -> std::result::Result<Vec<u8>, Failure> {
        let mut stream = UnixStream::connect(&self.0).map_err(Failure::Connect)?;
        let exchange =
            |stream: &mut UnixStream| -> io::Result<std::result::Result<Vec<u8>, String>> {
                stream.set_read_timeout(Some(timeout))?;
                stream.set_write_timeout(Some(timeout))?;
                let mut message = Vec::with_capacity(MAGIC.len() + 5 + payload.len());
                message.extend_from_slice(MAGIC);
                message.push(op);
                if op == PUBLISH {
                    message.extend_from_slice(&frame_len(payload.len())?);
                    message.extend_from_slice(payload);
                }
                stream.write_all(&message)?;
                let status = read_u8(stream)?;
                let body = read_frame(stream)?;
                Ok(match status {
                    DONE => Ok(body),
                    _ => Err(String::from_utf8_lossy(&body).into_owned()),
                })
            };
        match exchange(&mut stream) {
            Ok(Ok(body)) => Ok(body),
            Ok(Err(reason)) => Err(Failure::Refused(reason)),
            Err(e) => Err(Failure::Exchange(e)),
        }
    }
}

/// Why a request failed, by stage: each maps to a different fix.
enum Failure {
    Connect(io::Error),
    Exchange(io::Error),
    Refused(String),
}

/// A PE started by rshmem's launcher: its place in the job and the way to exchange
/// NVSHMEM's unique ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeInfo {
    /// This PE's index, `0..npes`.
    pub pe: usize,
    /// The number of PEs in the job.
    pub npes: usize,
    /// Index among the PEs on this node: the GPU this PE drives.
    pub local_rank: usize,
    pub(super) rendezvous: Address,
    pub(super) timeout: Duration,
    /// Where the launcher reads this PE's last word (`RSHMEM_REPORT`), if it named a file.
    pub(super) report: Option<PathBuf>,
}

impl PeInfo {
    /// PE 0 hands NVSHMEM's unique ID (opaque bytes) to the others.
    ///
    /// # Errors
    ///
    /// [`Error::Launcher`] on a PE other than 0, for an empty or oversized ID, or if PE 0
    /// already published a different one; [`Error::Io`] if the launcher cannot be reached.
    pub fn publish_uid(&self, uid: &[u8]) -> Result<()> {
        if self.pe != 0 {
            return Err(Error::Launcher(format!(
                "PE {} tried to publish NVSHMEM's unique ID, but only PE 0 publishes it; the other PEs call fetch_uid",
                self.pe
            )));
        }
        if uid.is_empty() || uid.len() > MAX_PAYLOAD {
            return Err(Error::Launcher(format!(
                "PE 0 tried to publish a unique ID of {} bytes; NVSHMEM's is 128 bytes (at most {MAX_PAYLOAD} are accepted)",
                uid.len()
            )));
        }
        self.rendezvous
            .request(PUBLISH, uid, self.timeout)
            .map(drop)
            .map_err(|failure| self.error(failure, PUBLISH))
    }

    /// PEs other than 0 wait for the unique ID PE 0 published, up to
    /// `RSHMEM_RENDEZVOUS_TIMEOUT` seconds (default 60).
    ///
    /// # Errors
    ///
    /// [`Error::UidTimeout`] if PE 0 publishes nothing in that time; [`Error::Launcher`] if
    /// the job ends first; [`Error::Io`] if the launcher cannot be reached.
    pub fn fetch_uid(&self) -> Result<Vec<u8>> {
        self.rendezvous
            .request(GET, &[], self.timeout)
            .map_err(|failure| self.error(failure, GET))
    }

    /// Tells the launcher why this PE is ending, for the job's error (see [`PeReport`]). The
    /// first report of a PE stands; later ones are dropped. Does nothing where the launcher
    /// named no report file.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the file cannot be written (the launcher is gone).
    pub fn report(&self, report: &PeReport) -> Result<()> {
        let Some(path) = &self.report else {
            return Ok(());
        };
        report.write(path).map_err(|source| Error::Io {
            context: format!(
                "PE {}: writing its report for the launcher to {} ({REPORT_VAR})",
                self.pe,
                path.display()
            ),
            source,
        })
    }

    /// The file this PE's report goes to, where the launcher named one.
    #[must_use]
    pub fn report_path(&self) -> Option<&Path> {
        self.report.as_deref()
    }

    fn error(&self, failure: Failure, op: u8) -> Error {
        let pe = self.pe;
        let doing = if op == GET { "fetching" } else { "publishing" };
        match failure {
            Failure::Connect(source) => Error::Io {
                context: format!(
                    "PE {pe}: {doing} NVSHMEM's unique ID: cannot reach the launcher's rendezvous at {} ({RENDEZVOUS_VAR}); the launcher that started this PE has exited, or the variable was copied from another job",
                    self.rendezvous.0.display()
                ),
                source,
            },
            // Only a get waits for PE 0; a publish is answered at once.
            Failure::Exchange(e)
                if op == GET
                    && matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) =>
            {
                Error::UidTimeout {
                    pe,
                    waited: self.timeout,
                }
            }
            Failure::Exchange(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Error::Launcher(format!(
                    "PE {pe}: {doing} NVSHMEM's unique ID: the launcher closed the rendezvous before answering; the job is ending"
                ))
            }
            Failure::Exchange(source) => Error::Io {
                context: format!("PE {pe}: {doing} NVSHMEM's unique ID with the launcher"),
                source,
            },
            Failure::Refused(reason) => Error::Launcher(format!(
                "PE {pe}: {doing} NVSHMEM's unique ID: the launcher refused: {reason}"
            )),
        }
    }
}

/// The launcher's side: a listener thread answering requests until dropped.
pub(crate) struct Server {
    address: Address,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    /// Removed on drop, after the acceptor has stopped.
    _dir: PrivateDir,
}

#[derive(Default)]
struct Shared {
    slot: Mutex<Slot>,
    changed: Condvar,
}

#[derive(Default)]
struct Slot {
    uid: Option<Vec<u8>>,
    closed: bool,
}

impl Server {
    /// Listens on a socket in a new private directory under the temp dir.
    pub(crate) fn start() -> Result<Server> {
        let io = |context: String| move |source| Error::Io { context, source };
        let dir = PrivateDir::create().map_err(io(format!(
            "creating a private directory for the launcher's rendezvous socket in {} (set TMPDIR to a writable directory)",
            socket_base().display()
        )))?;
        let path = dir.0.join("uid.sock");
        let listener = UnixListener::bind(&path).map_err(io(format!(
            "listening on the launcher's rendezvous socket {}",
            path.display()
        )))?;
        let shared = Arc::new(Shared::default());
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("rshmem-rendezvous".into())
                .spawn(move || accept(&listener, &shared))
                .map_err(io("starting the launcher's rendezvous thread".into()))?
        };
        Ok(Server {
            address: Address(path),
            shared,
            acceptor: Some(acceptor),
            _dir: dir,
        })
    }

    /// The address to pass to the PEs.
    pub(crate) fn address(&self) -> &Address {
        &self.address
    }

    /// The launcher's private directory (where the socket is), for the PEs' report files.
    pub(crate) fn dir(&self) -> &Path {
        &self._dir.0
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.slot().closed = true;
        self.shared.changed.notify_all();
        // accept() has no timeout: a connection of our own wakes it to see `closed`. Should
        // even that fail, the thread stays blocked, holding nothing but the listener.
        if UnixStream::connect(&self.address.0).is_ok() {
            if let Some(acceptor) = self.acceptor.take() {
                let _ = acceptor.join();
            }
        }
    }
}

impl Shared {
    fn slot(&self) -> MutexGuard<'_, Slot> {
        // The slot holds plain data that no panic leaves half-written.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, uid: Vec<u8>) -> std::result::Result<Vec<u8>, String> {
        let mut slot = self.slot();
        match &slot.uid {
            Some(existing) if *existing != uid => {
                return Err("PE 0 already published a different unique ID; a job has one".into())
            }
            Some(_) => {}
            None => slot.uid = Some(uid),
        }
        self.changed.notify_all();
        Ok(Vec::new())
    }

    fn get(&self) -> std::result::Result<Vec<u8>, String> {
        let mut slot = self.slot();
        loop {
            if let Some(uid) = &slot.uid {
                return Ok(uid.clone());
            }
            if slot.closed {
                return Err("the job is ending before PE 0 published the unique ID".into());
            }
            slot = self
                .changed
                .wait(slot)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

fn accept(listener: &UnixListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.slot().closed {
            return;
        }
        let Ok(stream) = stream else {
            // Out of descriptors, most likely: give the PEs time to finish their requests.
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        let shared = Arc::clone(shared);
        // One thread per request: a get blocks until PE 0 publishes. If no thread can be
        // started the stream drops and that client sees the connection close.
        let _ = thread::Builder::new()
            .name("rshmem-rendezvous-request".into())
            .spawn(move || serve(stream, &shared));
    }
}

fn serve(mut stream: UnixStream, shared: &Shared) {
    let request = (|| -> io::Result<u8> {
        stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
        let mut magic = [0; 4];
        stream.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not an rshmem request",
            ));
        }
        read_u8(&mut stream)
    })();
    let reply = match request {
        Ok(PUBLISH) => match read_frame(&mut stream) {
            Ok(uid) => shared.publish(uid),
            Err(e) => Err(format!("unreadable publish request: {e}")),
        },
        Ok(GET) => shared.get(),
        Ok(op) => Err(format!("unknown request {op:#04x}")),
        Err(e) => Err(format!("unreadable request: {e}")),
    };
    let (status, body) = match reply {
        Ok(body) => (DONE, body),
        Err(reason) => (REFUSED, reason.into_bytes()),
    };
    // The client may have timed out and gone: nobody is left to tell.
    let _ = frame_len(body.len()).and_then(|len| {
        let mut message = vec![status];
        message.extend_from_slice(&len);
        message.extend_from_slice(&body);
        stream.write_all(&message)
    });
}

fn frame_len(len: usize) -> io::Result<[u8; 4]> {
    if len > MAX_PAYLOAD {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{len} bytes is over the rendezvous limit of {MAX_PAYLOAD}"),
        ));
    }
    u32::try_from(len)
        .map(u32::to_le_bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too long"))
}

fn read_u8(stream: &mut impl Read) -> io::Result<u8> {
    let mut byte = [0];
    stream.read_exact(&mut byte)?;
    Ok(byte[0])
}

fn read_frame(stream: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut len = [0; 4];
    stream.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_PAYLOAD {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is over the rendezvous limit of {MAX_PAYLOAD}"),
        ));
    }
    let mut body = vec![0; len];
    stream.read_exact(&mut body)?;
    Ok(body)
}

/// A directory only this user can enter, removed with its contents on drop.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn create() -> io::Result<PrivateDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = socket_base();
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("rshmem-{}-{n}", std::process::id()));
            // A fresh name each time: never adopt a directory someone else made.
            match DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(PrivateDir(dir)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The temp dir, unless its path is too long for a socket address.
fn socket_base() -> PathBuf {
    let temp = std::env::temp_dir();
    if temp.as_os_str().len() <= MAX_BASE_LEN {
        temp
    } else {
        Path::new("/tmp").to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Instant;

    fn pe(server: &Server, pe: usize, timeout: Duration) -> PeInfo {
        PeInfo {
            pe,
            npes: 4,
            local_rank: pe,
            rendezvous: server.address().clone(),
            timeout,
            report: None,
        }
    }

    const LONG: Duration = Duration::from_secs(20);

    #[test]
    fn fetchers_waiting_before_the_publish_all_get_the_id() {
        let server = Server::start().unwrap();
        let uid: Vec<u8> = (0..=255).rev().collect();
        let fetchers: Vec<_> = (1..4)
            .map(|k| {
                let info = pe(&server, k, LONG);
                thread::spawn(move || info.fetch_uid())
            })
            .collect();
        thread::sleep(Duration::from_millis(50));
        pe(&server, 0, LONG).publish_uid(&uid).unwrap();
        for fetcher in fetchers {
            assert_eq!(fetcher.join().unwrap().unwrap(), uid);
        }
        // A late fetch, and PE 0 republishing the same ID, still work.
        assert_eq!(pe(&server, 2, LONG).fetch_uid().unwrap(), uid);
        pe(&server, 0, LONG).publish_uid(&uid).unwrap();
    }

    #[test]
    fn a_fetch_times_out_naming_pe_0() {
        let server = Server::start().unwrap();
        let start = Instant::now();
        let err = pe(&server, 3, Duration::from_millis(200))
            .fetch_uid()
            .unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(matches!(err, Error::UidTimeout { pe: 3, .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("from PE 0") && msg.contains("RSHMEM_RENDEZVOUS_TIMEOUT"),
            "{msg}"
        );
    }

    #[test]
    fn conflicting_and_misplaced_publishes_are_refused() {
        let server = Server::start().unwrap();
        pe(&server, 0, LONG).publish_uid(b"first").unwrap();
        let msg = pe(&server, 0, LONG)
            .publish_uid(b"second")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("different unique ID"), "{msg}");
        let msg = pe(&server, 1, LONG)
            .publish_uid(b"x")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("only PE 0 publishes"), "{msg}");
        let msg = pe(&server, 0, LONG)
            .publish_uid(&[])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("0 bytes"), "{msg}");
        assert_eq!(pe(&server, 1, LONG).fetch_uid().unwrap(), b"first");
    }

    #[test]
    fn stray_connections_do_not_disturb_the_server() {
        let server = Server::start().unwrap();
        // Sent whole, so the server reads all of it (unread bytes would reset the socket).
        for junk in [&b"HTTP"[..], b"RSHMX", b""] {
            let mut stray = UnixStream::connect(&server.address().0).unwrap();
            stray.write_all(junk).unwrap();
            stray.shutdown(std::net::Shutdown::Write).unwrap();
            let mut reply = Vec::new();
            stray.read_to_end(&mut reply).unwrap();
            assert_eq!(reply[0], REFUSED, "{junk:?}");
        }
        pe(&server, 0, LONG).publish_uid(b"uid").unwrap();
        assert_eq!(pe(&server, 1, LONG).fetch_uid().unwrap(), b"uid");
    }

    #[test]
    fn dropping_the_server_releases_waiters_and_removes_the_socket() {
        let server = Server::start().unwrap();
        let path = server.address().0.clone();
        let dir = path.parent().unwrap().to_path_buf();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o700,
            "the socket's directory must be private"
        );
        let info = pe(&server, 1, LONG);
        let waiter = thread::spawn(move || info.fetch_uid());
        thread::sleep(Duration::from_millis(50));
        let info = pe(&server, 2, LONG);
        drop(server);
        let msg = waiter.join().unwrap().unwrap_err().to_string();
        assert!(msg.contains("job is ending"), "{msg}");
        assert!(!dir.exists());
        let msg = info.fetch_uid().unwrap_err().to_string();
        assert!(
            msg.contains("cannot reach the launcher's rendezvous"),
            "{msg}"
        );
    }

    #[test]
    fn addresses_round_trip_through_the_environment_form() {
        let address = Address::parse("unix:/tmp/rshmem-1-0/uid.sock").unwrap();
        assert_eq!(address.to_env(), "unix:/tmp/rshmem-1-0/uid.sock");
        assert_eq!(Address::parse("unix:"), None);
        assert_eq!(Address::parse("/tmp/x"), None);
    }
}
