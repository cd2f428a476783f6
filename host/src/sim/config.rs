//! The simulator's settings, from the environment.

use crate::contract::{Error, Result};
use crate::size::parse_size;

/// Symmetric heap per PE when nothing is set.
const DEFAULT_HEAP: usize = 64 << 20;
/// Simulated threads per launch when nothing is set: each is a host thread.
const DEFAULT_MAX_THREADS: u32 = 8192;

/// Where a setting came from, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    pub var: &'static str,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SimConfig {
    /// Bytes of symmetric heap per PE.
    pub heap_size: usize,
    /// The variable that set `heap_size`, if any.
    pub heap_origin: Option<Origin>,
    /// Simulated threads allowed in one launch on one PE.
    pub max_threads: u32,
    /// Whether `shmem::ptr` maps other PEs' memory (`RSHMEM_SIM_P2P`).
    pub peer_mappings: bool,
}

impl SimConfig {
    /// The variable that governs the simulator's heap size, for advice: the one that set it,
    /// else `RSHMEM_SIM_HEAP`.
    pub fn heap_var(&self) -> &'static str {
        self.heap_origin
            .as_ref()
            .map_or("RSHMEM_SIM_HEAP", |o| o.var)
    }

    /// Reads `RSHMEM_SIM_HEAP` (else `NVSHMEM_SYMMETRIC_SIZE`, so the advice of
    /// [`Error::HeapExhausted`] works here too), `RSHMEM_SIM_MAX_THREADS` and
    /// `RSHMEM_SIM_P2P`.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|var| std::env::var(var).ok())
    }

    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let heap_origin = ["RSHMEM_SIM_HEAP", "NVSHMEM_SYMMETRIC_SIZE"]
            .into_iter()
            .find_map(|var| get(var).map(|value| Origin { var, value }));
        let heap_size = match &heap_origin {
            None => DEFAULT_HEAP,
            Some(o) => parse_size(&o.value).ok_or_else(|| Error::BadEnv {
                var: o.var,
                value: o.value.clone(),
                expected: "a size in bytes, optionally with a K, M, G or T suffix (powers of 1024), e.g. 256M".into(),
            })?,
        };
        let max_threads = match get("RSHMEM_SIM_MAX_THREADS") {
            None => DEFAULT_MAX_THREADS,
            Some(v) => v
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| Error::BadEnv {
                    var: "RSHMEM_SIM_MAX_THREADS",
                    value: v.clone(),
                    expected: format!(
                        "a whole number of threads from 1 to {} (default {DEFAULT_MAX_THREADS})",
                        u32::MAX
                    ),
                })?,
        };
        let peer_mappings = match get("RSHMEM_SIM_P2P").as_deref().map(str::trim) {
            None | Some("1") => true,
            Some("0") => false,
            Some(other) => {
                return Err(Error::BadEnv {
                    var: "RSHMEM_SIM_P2P",
                    value: other.into(),
                    expected:
                        "1 (default: every PE's memory is mapped, as on one NVLink node) or 0 \
                               (`shmem::ptr` maps only the PE's own, as across nodes)"
                            .into(),
                })
            }
        };
        Ok(Self {
            heap_size,
            heap_origin,
            max_threads,
            peer_mappings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_variables_with_defaults_and_fallback() {
        let none = SimConfig::from_vars(|_| None).unwrap();
        assert_eq!(
            (none.heap_size, none.max_threads, none.peer_mappings),
            (64 << 20, 8192, true)
        );
        let nv =
            SimConfig::from_vars(|v| (v == "NVSHMEM_SYMMETRIC_SIZE").then(|| "1G".into())).unwrap();
        assert_eq!(nv.heap_size, 1 << 30);
        assert_eq!(nv.heap_var(), "NVSHMEM_SYMMETRIC_SIZE");
        assert_eq!(none.heap_var(), "RSHMEM_SIM_HEAP");
        // The value a GPU run takes means the same here (it was refused before).
        let decimal =
            SimConfig::from_vars(|v| (v == "NVSHMEM_SYMMETRIC_SIZE").then(|| "1.5G".into()))
                .unwrap();
        assert_eq!(decimal.heap_size, 3 << 29);
        let both = SimConfig::from_vars(|v| match v {
            "RSHMEM_SIM_HEAP" => Some("8M".into()),
            "NVSHMEM_SYMMETRIC_SIZE" => Some("1G".into()),
            "RSHMEM_SIM_MAX_THREADS" => Some("100".into()),
            "RSHMEM_SIM_P2P" => Some("0".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            (both.heap_size, both.max_threads, both.peer_mappings),
            (8 << 20, 100, false)
        );
    }

    #[test]
    fn bad_values_name_the_variable_and_the_format() {
        let err = SimConfig::from_vars(|v| (v == "RSHMEM_SIM_HEAP").then(|| "lots".into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("RSHMEM_SIM_HEAP=\"lots\"") && err.contains("256M"),
            "{err}"
        );
        let err = SimConfig::from_vars(|v| (v == "RSHMEM_SIM_MAX_THREADS").then(|| "0".into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("RSHMEM_SIM_MAX_THREADS=\"0\"") && err.contains("from 1"),
            "{err}"
        );
        let err = SimConfig::from_vars(|v| (v == "RSHMEM_SIM_P2P").then(|| "yes".into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("RSHMEM_SIM_P2P=\"yes\"") && err.contains("across nodes"),
            "{err}"
        );
    }
}
