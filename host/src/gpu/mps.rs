//! NVIDIA's Multi-Process Service (MPS): whether its control daemon answers here, and how the
//! PEs that share a GPU are placed under it.
//!
//! Several PEs on one GPU run in one of two NVSHMEM modes. Without MPS (only with
//! `RSHMEM_GPU_OVERSUBSCRIBE=1`), NVSHMEM's *limited* multi-process mode: the PEs' kernels
//! time-slice, and NVSHMEM ends the process on host-side team splits and collectives (rshmem
//! refuses them first). Under MPS the PEs' kernels run at once, and NVSHMEM 3.4.5 runs its
//! *full* mode only when the `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`s of the PEs sharing a GPU add
//! up to at most 100 (`nvshmemi_determine_mpg_support_level` in its `init.cu`): a PE that
//! spins waiting for a peer's kernel must not be starved of SMs by that peer's grid. So
//! rshmem's launcher gives each of them `100 / (PEs per GPU)` percent, unless the user set
//! the variable, and [`DeviceInfo::multiprocessors`](crate::DeviceInfo) is the PE's share.
//!
//! Starting MPS (the pipe and log folders must be writable; the defaults are
//! `/tmp/nvidia-mps` and `/var/log/nvidia-mps`):
//!
//! ```sh
//! export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
//! mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
//! nvidia-cuda-mps-control -d           # stop: echo quit | nvidia-cuda-mps-control
//! ```

use super::cuda;
use crate::contract::{Error, Result};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The variable MPS clients read their share of the GPU's threads (and SMs) from.
pub(crate) const PERCENTAGE_VAR: &str = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";

/// The commands that restart it (with the same `CUDA_MPS_*` variables set).
pub(crate) const RESTART: &str = "echo quit | nvidia-cuda-mps-control; nvidia-cuda-mps-control -d";

/// What the launcher tells the PEs it starts under MPS: that the daemon answered it. Each PE
/// asking the daemon again raced its siblings (three PEs asking at once: one was refused now
/// and then, and started as if there were no MPS).
pub(crate) const LAUNCHED_UNDER_VAR: &str = "RSHMEM_MPS";

/// Attempts [`detect`] makes, 200 ms apart, before it says no daemon answers.
const ATTEMPTS: u32 = 3;

/// How long the control daemon gets to answer: a control pipe left by a daemon that died has
/// no reader, and writing to it would block for ever.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// A control daemon that answered.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Daemon {
    /// Its pipe folder.
    pub(crate) pipe_dir: PathBuf,
}

/// The daemon's pipe folder: `CUDA_MPS_PIPE_DIRECTORY`, else MPS's default.
pub(crate) fn pipe_directory(var: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
    var("CUDA_MPS_PIPE_DIRECTORY")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/tmp/nvidia-mps"), PathBuf::from)
}

/// The MPS control daemon of this environment, if one answers: its control pipe exists and
/// `nvidia-cuda-mps-control` gets an answer from it (what NVSHMEM asks it too).
pub(crate) fn detect() -> Option<Daemon> {
    let pipe_dir = pipe_directory(&|k| std::env::var_os(k));
    if !pipe_dir.join("control").exists() {
        return None;
    }
    // The daemon serves one client at a time: another client's request (a sibling PE's, a
    // script's) can make this one fail; a daemon that is gone never answers.
    (0..ATTEMPTS).find_map(|i| {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(200));
        }
        ask(
            &mut Command::new("nvidia-cuda-mps-control"),
            "get_default_active_thread_percentage",
            ANSWER_TIMEOUT,
        )
    })?;
    Some(Daemon { pipe_dir })
}

/// Whether MPS runs for this PE: its launcher found the daemon ([`LAUNCHED_UNDER_VAR`]), or,
/// for a PE started otherwise (srun, mpirun), the daemon answers it ([`detect`]).
pub(crate) fn active() -> bool {
    std::env::var_os(LAUNCHED_UNDER_VAR).is_some_and(|v| v == "1") || detect().is_some()
}

/// What `client` prints when given `command` on its standard input and exits successfully
/// within `timeout`; `None` otherwise (it is then killed).
fn ask(client: &mut Command, command: &str, timeout: Duration) -> Option<String> {
    let mut child = client
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // A write that fails (the client gave up) leaves the exit status to say so.
    let _ = child
        .stdin
        .take()
        .map(|mut stdin| writeln!(stdin, "{command}"));
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if start.elapsed() < timeout => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut answer = String::new();
    child.stdout.take()?.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// How a job's PEs share its node's GPUs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sharing {
    /// At most one PE per GPU.
    OnePerGpu,
    /// Up to `per_gpu` PEs per GPU under MPS, each with `percentage` of its threads: set by
    /// rshmem (`Set`) or the user's own `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` (`Users`).
    Mps {
        per_gpu: usize,
        percentage: Percentage,
    },
    /// Up to `per_gpu` PEs per GPU without MPS (`RSHMEM_GPU_OVERSUBSCRIBE=1`): time-sliced.
    TimeSliced { per_gpu: usize },
}

/// A PE's share of its GPU under MPS, in percent of its threads.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Percentage {
    /// rshmem's: `100 / per_gpu`.
    Set(u32),
    /// The user's `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`, as written.
    Users(String),
}

/// How `npes` PEs share `visible` GPUs: `oversubscribe` is `RSHMEM_GPU_OVERSUBSCRIBE`,
/// `mps` whether a control daemon answered, `users` the user's
/// `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`. More PEs than GPUs need MPS or `oversubscribe`.
pub(crate) fn plan(
    npes: usize,
    visible: usize,
    oversubscribe: bool,
    mps: bool,
    users: Option<String>,
) -> Result<Sharing> {
    if npes <= visible {
        return Ok(Sharing::OnePerGpu);
    }
    let per_gpu = npes.div_ceil(visible.max(1));
    match (mps, oversubscribe) {
        (true, _) => Ok(Sharing::Mps {
            per_gpu,
            percentage: match users.filter(|v| !v.is_empty()) {
                Some(v) => Percentage::Users(v),
                None => Percentage::Set(100 / per_gpu as u32),
            },
        }),
        (false, true) => Ok(Sharing::TimeSliced { per_gpu }),
        // The first PE without a GPU of its own.
        (false, false) => Err(unavailable(visible, visible, visible)),
    }
}

impl Sharing {
    /// The variables rshmem's launcher sets for every PE.
    pub(crate) fn pe_env(&self) -> Vec<(&'static str, String)> {
        match self {
            Sharing::Mps { percentage, .. } => {
                let mut env = vec![(LAUNCHED_UNDER_VAR, "1".to_string())];
                if let Percentage::Set(p) = percentage {
                    env.push((PERCENTAGE_VAR, p.to_string()));
                }
                env
            }
            _ => Vec::new(),
        }
    }

    /// What the launcher should say before the job starts, if anything: where NVSHMEM will
    /// run its limited mode although MPS runs.
    pub(crate) fn warning(&self) -> Option<String> {
        let Sharing::Mps {
            per_gpu,
            percentage: Percentage::Users(v),
        } = self
        else {
            return None;
        };
        let p: f64 = v.trim().parse().ok()?;
        (p * *per_gpu as f64 > 100.0).then(|| {
            format!(
                "{per_gpu} PEs share a GPU under MPS with {PERCENTAGE_VAR}={v} each, more than \
                 100 % in sum: NVSHMEM then runs its limited multi-process mode (no host-side \
                 team splits or collectives, and a PE spinning for a peer can starve). Unset it \
                 (rshmem then gives each PE {} %) or set \
                 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1",
                100 / per_gpu
            )
        })
    }
}

/// `Error::DeviceUnavailable` for PE `pe` placed on GPU `local_rank` of `visible`.
pub(crate) fn unavailable(pe: usize, local_rank: usize, visible: usize) -> Error {
    Error::DeviceUnavailable {
        pe,
        local_rank,
        visible,
        cuda_visible_devices: std::env::var("CUDA_VISIBLE_DEVICES").ok(),
    }
}

/// Whether `e` is an error a broken (or recovering) MPS server gives a new client.
fn broken_server(e: &Error) -> bool {
    matches!(e, Error::Cuda { message, .. } if broken_server_message(message))
}

fn broken_server_message(message: &str) -> bool {
    [
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_UNKNOWN",
        "CUDA_ERROR_MPS",
    ]
    .iter()
    .any(|code| message.contains(code))
}

/// `e`, with the MPS server named as its likely cause where a daemon runs and the driver's
/// error is one a broken MPS server gives (a client ended mid-kernel can leave it so: every
/// later client's context then fails until it is restarted).
pub(crate) fn explain(e: Error, mps: bool) -> Error {
    match e {
        Error::Cuda { call, message } if mps && broken_server_message(&message) => Error::Cuda {
            call,
            message: format!(
                "{message}; an MPS control daemon runs here, and an MPS server left broken by a \
                 client that was ended mid-kernel fails every later context so (rshmem waited \
                 {} s for it to recover): restart it ({RESTART})",
                RECOVERY.as_secs()
            ),
        },
        other => other,
    }
}

/// How long a PE starting under MPS retries its context while the server gives a broken
/// server's errors. A server whose client was ended mid-kernel recovers by itself once that
/// client is gone: on an H100 (2026-12-05) a 2-PE job started 0.4 s after such an end failed
/// at `cuDevicePrimaryCtxRetain`, one started 1 s after ran.
pub(crate) const RECOVERY: Duration = Duration::from_secs(3);

/// Device `device`'s primary context for a PE, made current. Under MPS (`mps`) it is probed
/// ([`cuda::Context::probe`]: a context handed out by a server still recovering from an ended
/// client failed later, inside NVSHMEM's init, with "unspecified launch failure") and, with a
/// failed probe, released and made again, [`while_recovering`].
pub(crate) fn context(mps: bool, device: usize) -> Result<Arc<cuda::Context>> {
    while_recovering(mps, || {
        let ctx = cuda::Context::primary(device)?;
        if mps {
            ctx.probe()?;
        }
        Ok(ctx)
    })
}

/// `attempt()` (a PE's context, made under MPS when `mps`) until it succeeds, fails with an
/// error other than a recovering server's, or [`RECOVERY`] has passed; the last error
/// [`explain`]ed.
pub(crate) fn while_recovering<T>(mps: bool, attempt: impl FnMut() -> Result<T>) -> Result<T> {
    retry_for(mps, RECOVERY, attempt)
}

fn retry_for<T>(mps: bool, wait: Duration, mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
    let deadline = Instant::now() + wait;
    loop {
        match attempt() {
            Err(e) if mps && broken_server(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100))
            }
            other => return other.map_err(|e| explain(e, mps)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_directory_defaults_to_mps_default() {
        assert_eq!(pipe_directory(&|_| None), PathBuf::from("/tmp/nvidia-mps"));
        let set = |k: &str| (k == "CUDA_MPS_PIPE_DIRECTORY").then(|| OsString::from("/x/p"));
        assert_eq!(pipe_directory(&set), PathBuf::from("/x/p"));
        let empty = |_: &str| Some(OsString::new());
        assert_eq!(pipe_directory(&empty), PathBuf::from("/tmp/nvidia-mps"));
    }

    #[test]
    fn one_pe_per_gpu_needs_nothing() {
        for (mps, over) in [(false, false), (true, false), (false, true)] {
            assert_eq!(plan(2, 2, over, mps, None).unwrap(), Sharing::OnePerGpu);
            assert_eq!(plan(1, 8, over, mps, None).unwrap(), Sharing::OnePerGpu);
        }
        assert!(Sharing::OnePerGpu.pe_env().is_empty());
    }

    #[test]
    fn mps_splits_the_gpu_between_its_pes() {
        for (npes, visible, per_gpu, p) in
            [(2, 1, 2, 50), (3, 1, 3, 33), (4, 1, 4, 25), (3, 2, 2, 50)]
        {
            let s = plan(npes, visible, false, true, None).unwrap();
            assert_eq!(
                s,
                Sharing::Mps {
                    per_gpu,
                    percentage: Percentage::Set(p)
                },
                "{npes} PEs on {visible} GPUs"
            );
            assert_eq!(
                s.pe_env(),
                vec![
                    (LAUNCHED_UNDER_VAR, "1".to_string()),
                    (PERCENTAGE_VAR, p.to_string())
                ]
            );
            assert_eq!(s.warning(), None);
            // MPS wins over time-slicing where both are possible.
            assert_eq!(plan(npes, visible, true, true, None).unwrap(), s);
        }
    }

    #[test]
    fn the_users_percentage_is_kept_and_checked() {
        let s = plan(2, 1, false, true, Some("40".into())).unwrap();
        assert_eq!(s.pe_env(), vec![(LAUNCHED_UNDER_VAR, "1".to_string())]);
        assert_eq!(s.warning(), None);
        let s = plan(2, 1, false, true, Some("80".into())).unwrap();
        let w = s.warning().unwrap();
        assert!(
            w.contains("limited multi-process mode") && w.contains("50 %"),
            "{w}"
        );
        // An empty value is no setting.
        assert_eq!(
            plan(4, 1, false, true, Some(String::new()))
                .unwrap()
                .pe_env(),
            vec![
                (LAUNCHED_UNDER_VAR, "1".to_string()),
                (PERCENTAGE_VAR, "25".to_string())
            ]
        );
    }

    #[test]
    fn sharing_without_mps_needs_oversubscribe() {
        assert_eq!(
            plan(3, 1, true, false, None).unwrap(),
            Sharing::TimeSliced { per_gpu: 3 }
        );
        let e = plan(3, 1, false, false, None).unwrap_err().to_string();
        assert!(e.contains("nvidia-cuda-mps-control -d"), "{e}");
        assert!(e.contains("RSHMEM_GPU_OVERSUBSCRIBE=1"), "{e}");
    }

    #[test]
    fn a_broken_server_is_named() {
        let e = || Error::Cuda {
            call: "cuDevicePrimaryCtxRetain",
            message: "CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)".into(),
        };
        let named = explain(e(), true).to_string();
        assert!(
            named.contains("MPS server") && named.contains(RESTART),
            "{named}"
        );
        assert_eq!(explain(e(), false).to_string(), e().to_string());
        let other = Error::Cuda {
            call: "cuMemAlloc",
            message: "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".into(),
        };
        assert!(!explain(other, true).to_string().contains("MPS"));
    }

    #[test]
    fn a_recovering_server_is_waited_for_within_a_bound() {
        let broken = || Error::Cuda {
            call: "cuDevicePrimaryCtxRetain",
            message: "CUDA_ERROR_UNKNOWN (unknown error)".into(),
        };
        // Recovers on the third try: the PE starts.
        let mut tries = 0;
        let r = retry_for(true, Duration::from_secs(5), || {
            tries += 1;
            if tries < 3 {
                Err(broken())
            } else {
                Ok(tries)
            }
        });
        assert_eq!(r.unwrap(), 3);
        // Never recovers: given up on after the bound, the MPS server named.
        let t = Instant::now();
        let e = retry_for(true, Duration::from_millis(300), || Err::<(), _>(broken()))
            .unwrap_err()
            .to_string();
        assert!(
            t.elapsed() >= Duration::from_millis(300),
            "{:?}",
            t.elapsed()
        );
        assert!(e.contains("MPS server") && e.contains(RESTART), "{e}");
        // Without MPS, or for another error, no retry.
        let mut tries = 0;
        let _ = retry_for(false, Duration::from_secs(5), || {
            tries += 1;
            Err::<(), _>(broken())
        });
        assert_eq!(tries, 1);
        let mut tries = 0;
        let _ = retry_for(true, Duration::from_secs(5), || {
            tries += 1;
            Err::<(), _>(Error::Cuda {
                call: "cuDevicePrimaryCtxRetain",
                message: "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".into(),
            })
        });
        assert_eq!(tries, 1);
    }

    #[test]
    fn asking_is_bounded() {
        let quick = Duration::from_millis(300);
        assert_eq!(
            ask(&mut Command::new("cat"), "get_server_list", quick).as_deref(),
            Some("get_server_list\n")
        );
        // A client that never answers (a control pipe without a daemon) is given up on.
        let t = Instant::now();
        assert_eq!(ask(Command::new("sleep").arg("30"), "x", quick), None);
        assert!(t.elapsed() < Duration::from_secs(10));
        assert_eq!(ask(&mut Command::new("false"), "x", quick), None);
        assert_eq!(ask(&mut Command::new("/nonexistent/mps"), "x", quick), None);
    }

    /// Where no daemon runs (CI), detection says so at once instead of hanging on a pipe.
    #[test]
    fn detect_without_a_daemon() {
        let dir = pipe_directory(&|k| std::env::var_os(k));
        if !dir.join("control").exists() {
            let t = Instant::now();
            assert_eq!(detect(), None);
            assert!(t.elapsed() < ANSWER_TIMEOUT);
        }
    }
}
