//! The variables rshmem's launcher sets for its PEs (and `RSHMEM_NPES`, which users set too),
//! read by [`super::role`] and the rendezvous.

use crate::contract::{Error, Result};
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

/// The file a PE writes its last word to (why it ends: its error, a hang, or being ended),
/// set by rshmem's launcher, which reads it once the PE has exited.
pub const REPORT_VAR: &str = "RSHMEM_REPORT";
/// How long a GPU PE may have work pending without progress before its watchdog ends it as
/// hung, in seconds (default [`DEFAULT_HANG_TIMEOUT`]; `0` turns the watchdog off).
pub const HANG_TIMEOUT_VAR: &str = "RSHMEM_HANG_TIMEOUT";

/// The hang timeout unless `RSHMEM_HANG_TIMEOUT` or `Job::hang_timeout` says otherwise: long
/// enough that no sane single kernel or barrier of a working program comes near it (the
/// longest kernels of this repository's benchmarks take seconds), short enough that a
/// deadlocked job ends well inside a CI step's or batch allocation's limit instead of using
/// it all up.
pub const DEFAULT_HANG_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a PE waits for PE 0's unique ID unless `RSHMEM_RENDEZVOUS_TIMEOUT` says otherwise.
pub const DEFAULT_UID_TIMEOUT: Duration = Duration::from_secs(60);

/// `RSHMEM_HANG_TIMEOUT` as `env` gives it: `None` for `0` (the watchdog off), the default
/// where unset.
///
/// # Errors
///
/// [`Error::LaunchEnv`] unless it is a number of seconds >= 0.
pub fn hang_timeout(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Duration>> {
    let Some(v) = env(HANG_TIMEOUT_VAR).filter(|v| !v.trim().is_empty()) else {
        return Ok(Some(DEFAULT_HANG_TIMEOUT));
    };
    let seconds = v
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| Error::LaunchEnv {
            var: HANG_TIMEOUT_VAR.into(),
            found: format!("{v:?}"),
            expected: "it must be a number of seconds, 0 to turn the hang watchdog off".into(),
            fix: "Set e.g. RSHMEM_HANG_TIMEOUT=600, or unset it for the default of 300 s.".into(),
        })?;
    Ok((!seconds.is_zero()).then_some(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hang_timeout_has_a_default_an_off_switch_and_checks_its_value() {
        let with = |v: Option<&str>| {
            let v = v.map(str::to_string);
            hang_timeout(&move |k| (k == HANG_TIMEOUT_VAR).then(|| v.clone()).flatten())
        };
        assert_eq!(with(None).unwrap(), Some(DEFAULT_HANG_TIMEOUT));
        assert_eq!(
            with(Some("2.5")).unwrap(),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(with(Some("0")).unwrap(), None);
        let msg = with(Some("-1")).unwrap_err().to_string();
        assert!(msg.contains("RSHMEM_HANG_TIMEOUT"), "{msg}");
    }
}
