//! The variables rshmem's launcher sets for its PEs (and `RSHMEM_NPES`, which users set too),
//! read by [`super::role`] and the rendezvous.

use std::time::Duration;

/// The PE index, set by rshmem's launcher.
pub const PE_VAR: &str = "RSHMEM_PE";
/// The number of PEs: set by rshmem's launcher for each PE, or by the user to choose it.
pub const NPES_VAR: &str = "RSHMEM_NPES";
/// The PE's index among the PEs of its node, set by rshmem's launcher.
pub const LOCAL_RANK_VAR: &str = "RSHMEM_LOCAL_RANK";
/// Where the launcher's rendezvous listens, set by rshmem's launcher.
pub const RENDEZVOUS_VAR: &str = "RSHMEM_RENDEZVOUS";
/// How long [`PeInfo::fetch_uid`](super::PeInfo::fetch_uid) waits for PE 0, in seconds (default 60).
pub const TIMEOUT_VAR: &str = "RSHMEM_RENDEZVOUS_TIMEOUT";

/// How long a PE waits for PE 0's unique ID unless `RSHMEM_RENDEZVOUS_TIMEOUT` says otherwise.
pub const DEFAULT_UID_TIMEOUT: Duration = Duration::from_secs(60);
