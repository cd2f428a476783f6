//! Starting PEs as processes: the role of `nvshmrun` or `torchrun`.
//!
//! A GPU job runs one process per GPU, a *PE*. [`role`] tells a process which part it plays,
//! from its environment alone:
//!
//! | started by | role | NVSHMEM bootstraps with |
//! |---|---|---|
//! | a shell, plainly | [`Role::Launcher`]: start the PEs with [`launch_self`] | — |
//! | [`launch_self`] / `rshmem-run` | [`Role::Pe`] | the unique ID PE 0 hands out ([`PeInfo::publish_uid`], [`PeInfo::fetch_uid`]) |
//! | `srun`, `mpirun`, `mpiexec` | [`Role::External`] | the launcher's own PMI/PMIx/MPI ([`External::nvshmem_env`]) |
//!
//! # One node: rshmem's launcher
//!
//! [`launch_self`] (what [`crate::run`] does when started plainly) or `rshmem-run -n N
//! program args...` starts N PEs of the program with `RSHMEM_PE`, `RSHMEM_NPES`,
//! `RSHMEM_LOCAL_RANK`, `RSHMEM_RENDEZVOUS` and `RSHMEM_BACKEND=gpu` set. Each PE leads its
//! own process group. The launcher then:
//!
//! * relays every line the PEs print, prefixed `[PE k] `, to its own stdout or stderr;
//! * serves NVSHMEM's unique ID: PE 0 publishes it, the others block in `fetch_uid` until it
//!   is there (up to `RSHMEM_RENDEZVOUS_TIMEOUT` seconds, default 60), over a Unix socket in
//!   a private temporary directory;
//! * when a PE exits non-zero, panics or is killed, ends the others (SIGTERM to their
//!   process groups, SIGKILL 2 s later) and reports the PE that failed first *of its own
//!   accord* as [`Error::PeFailed`]: with the error the PE's program failed with (each PE
//!   writes it to a private report file, `RSHMEM_REPORT`, see [`PeReport`]), e.g.
//!   `PE 1 failed: kernel `k` failed on PE 1: ...`, else its panic message or exit status.
//!   PEs that failed because they waited for it — ended by the launcher, or by their own
//!   watchdog — follow as `(consequences: ...)` with what each had pending;
//! * names a hang as one: a GPU PE whose work makes no progress for `RSHMEM_HANG_TIMEOUT`
//!   seconds ([`DEFAULT_HANG_TIMEOUT`], 300; `0`: off; `Job::hang_timeout` sets it for a
//!   job) reports its pending kernels, per stream, and blocking call and exits; the
//!   launcher ends the others, which report theirs, and the job fails with
//!   [`Error::PeHung`], e.g. `PE 1 hung: no progress for 30 s; pending: ...`;
//! * forwards SIGINT and SIGTERM to the PEs (then ends them the same way);
//! * dies with its PEs: each is started with a parent-death signal (Linux), so killing the
//!   launcher, even with SIGKILL, leaves no PE behind.
//!
//! `RSHMEM_NPES` chooses how many PEs [`crate::run`] starts (default: one per visible GPU).
//!
//! What a GPU backend does with each role (the unique ID here stands for
//! `nvshmemx_get_uniqueid`'s bytes):
//!
//! ```no_run
//! use rshmem_host::launch::{self, Role};
//! # fn main() -> rshmem_host::Result<()> {
//! # let get_uniqueid = || vec![0u8; 128];
//! match launch::role()? {
//!     Role::Launcher => launch::launch_self(launch::requested_npes()?.unwrap_or(2))?,
//!     Role::Pe(me) => {
//!         let uid = if me.pe == 0 {
//!             let uid = get_uniqueid();
//!             me.publish_uid(&uid)?;
//!             uid
//!         } else {
//!             me.fetch_uid()?
//!         };
//!         // nvshmemx_set_attr_uniqueid_args(me.pe, me.npes, &uid, ..) on GPU me.local_rank
//!         # drop(uid);
//!     }
//!     Role::External(launcher) => {
//!         let (pe, npes, local_rank) = launcher.placement()?;
//!         // set launcher.nvshmem_env() (unless already set), then nvshmem_init on that GPU
//!         # drop((pe, npes, local_rank));
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # Several nodes: `srun` or `mpirun`
//!
//! Across nodes the job is started by the cluster's launcher, one process per GPU, and
//! NVSHMEM bootstraps through that launcher's process-management interface. rshmem detects
//! it and sets `NVSHMEM_BOOTSTRAP` (and `NVSHMEM_BOOTSTRAP_PMI`) to match, unless you set
//! them yourself:
//!
//! | launcher | detected by | `NVSHMEM_BOOTSTRAP` / `_PMI` |
//! |---|---|---|
//! | Open MPI `mpirun` | `OMPI_COMM_WORLD_RANK` | `MPI` |
//! | MPICH / Intel MPI `mpiexec` (Hydra) | `PMI_RANK` + `MPI_LOCALRANKID` | `PMI` / `PMI` |
//! | `srun --mpi=pmix` | `SLURM_PROCID` + `PMIX_RANK` | `PMI` / `PMIX` |
//! | `srun --mpi=pmi2` | `SLURM_PROCID` + `PMI_RANK` | `PMI` / `PMI-2` |
//! | other PMI-1 launchers (MVAPICH, ...) | `PMI_RANK` | `PMI` / `PMI` |
//! | other `PMIx` launchers | `PMIX_RANK` | `PMI` / `PMIX` |
//!
//! The first match wins, top down, after rshmem's own `RSHMEM_PE`: an `mpirun` inside a
//! Slurm allocation inherits Slurm's variables but is seen as `mpirun`. The PE's GPU is its
//! local rank (`SLURM_LOCALID`, `OMPI_COMM_WORLD_LOCAL_RANK`, `MPI_LOCALRANKID`), so start
//! one task per GPU:
//!
//! ```text
//! # 2 nodes x 8 GPUs under Slurm
//! srun -N 2 --ntasks-per-node=8 --gpus-per-node=8 --mpi=pmix ./target/release/my-app
//!
//! # the same with Open MPI; NVSHMEM's MPI bootstrap plugin must match this MPI, or use
//! # Open MPI's PMIx instead: -x NVSHMEM_BOOTSTRAP=PMI -x NVSHMEM_BOOTSTRAP_PMI=PMIX
//! mpirun -np 16 --map-by ppr:8:node ./target/release/my-app
//! ```
//!
//! NVSHMEM's bootstrap plugins (`nvshmem_bootstrap_pmix.so.3`, `..._pmi2.so.3`,
//! `..._mpi.so.3`) must be on `LD_LIBRARY_PATH`, like `nvshmem_bootstrap_uid.so.3` on one
//! node. An `srun` of several tasks without `--mpi=pmix`/`pmi2` is refused with that fix: its
//! tasks could not find each other. A single task (`srun -n 1`, or an `sbatch` script
//! running the program directly) acts as a launcher and starts one PE per GPU of its node.

mod detect;
mod pe_group;
mod rendezvous;
mod report;
mod sys;
mod vars;

pub use detect::{parse_npes, External, MpiLauncher, Pmi, Role};
pub use pe_group::{PeExit, PeFailure, PeGroup, DEFAULT_GRACE};
pub use rendezvous::PeInfo;
pub use report::PeReport;
pub use vars::{
    hang_timeout, DEFAULT_HANG_TIMEOUT, DEFAULT_UID_TIMEOUT, HANG_TIMEOUT_VAR, LOCAL_RANK_VAR,
    NPES_VAR, PE_VAR, RENDEZVOUS_VAR, REPORT_VAR, TIMEOUT_VAR,
};

use crate::contract::{Error, Result};
use std::ffi::OsString;
use std::path::Path;

/// `RSHMEM_NPES`, if set: the number of PEs to start.
///
/// # Errors
///
/// [`Error::LaunchEnv`] if it is not a whole number >= 1.
pub fn requested_npes() -> Result<Option<usize>> {
    detect::npes_in(&detect::process_env)
}

/// Decides this process's role from the environment (see the [module docs](self)).
///
/// # Errors
///
/// [`Error::LaunchEnv`] if rshmem's variables are partial or malformed;
/// [`Error::Launcher`] for an `srun` of several tasks without PMI.
pub fn role() -> Result<Role> {
    detect::detect(&detect::process_env)
}

/// Re-executes this program (with its arguments) as `npes` PEs and waits: `Ok` if every PE
/// exits 0, else the first failure as [`Error::PeFailed`], after ending the others.
///
/// # Errors
///
/// [`Error::PeFailed`] for the first PE that failed; the launcher's own errors as
/// [`PeGroup::status`].
pub fn launch_self(npes: usize) -> Result<()> {
    let exe = std::env::current_exe().map_err(|source| Error::Io {
        context: "finding this program's executable to start it as the PEs".into(),
        source,
    })?;
    PeGroup::new(npes, exe)
        .args(std::env::args_os().skip(1))
        .run()
}

/// Starts `program args...` as `npes` PEs (the `rshmem-run` binary) and waits, as
/// [`launch_self`].
///
/// # Errors
///
/// As [`launch_self`].
pub fn launch(npes: usize, program: &Path, args: &[OsString]) -> Result<()> {
    PeGroup::new(npes, program).args(args).run()
}
