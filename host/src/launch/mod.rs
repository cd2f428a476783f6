//! Starting PEs as processes. OWNED BY THE LAUNCHER WORK: to be implemented.

use crate::error::{Error, Result};

/// `RSHMEM_NPES`, if set: the number of PEs to start.
pub fn requested_npes() -> Result<Option<usize>> {
    match std::env::var("RSHMEM_NPES") {
        Err(_) => Ok(None),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(Error::Launcher(format!(
                "RSHMEM_NPES={v:?} is not a PE count: use a whole number >= 1"
            ))),
        },
    }
}
