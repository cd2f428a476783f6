//! The NVSHMEM environment a PE process sets for itself before NVSHMEM reads it (NVSHMEM
//! reads its `NVSHMEM_*` options in `nvshmemx_get_uniqueid` and in init). A variable the user
//! already set is never overridden.
//!
//! Always:
//! * `NVSHMEM_DISABLE_NVLS=1` — never NVLink multicast (NVLS/`multimem`); on the shared hosts
//!   rshmem targets it can take GPUs out of service.
//! * `NVSHMEM_DISABLE_NCCL=1` — NVSHMEM 3.4.5 runs its host-side collectives through NCCL
//!   whenever it can dlopen `libnccl.so.2` (`src/host/coll/cpu_coll.cpp`), creating NCCL
//!   communicators at init; rshmem's only host collective is a 16-byte gather per allocation,
//!   which NVSHMEM's own kernels do well, and NCCL would bring its own NVLS use and start-up.
//! * `NCCL_NVLS_ENABLE=0` — for the case where the user re-enables NCCL.
//!
//! PEs started by rshmem's launcher (one node, unique-ID bootstrap):
//! * `NVSHMEM_REMOTE_TRANSPORT=none` — every peer is on this node and reached over NVLink/PCIe;
//!   without it NVSHMEM probes for InfiniBand and fails where no NIC is usable.
//! * `NVSHMEM_BOOTSTRAP_UID_PLUGIN=<dir of libnvshmem_host.so.3>/nvshmem_bootstrap_uid.so.3` —
//!   NVSHMEM dlopens the plugin by this name. The host library's RPATH (`$ORIGIN`) already
//!   finds it next to itself, but an absolute path removes any dependence on the loader's
//!   search order (which `LD_LIBRARY_PATH` set after start-up could not change anyway).
//!
//! PEs started by an external launcher (srun, mpirun):
//! * `NVSHMEM_BOOTSTRAP` (and `NVSHMEM_BOOTSTRAP_PMI` for PMI flavours) as the launcher
//!   requires, unless `NVSHMEM_BOOTSTRAP` is set, plus the matching plugin's absolute path.

use std::ffi::OsString;
use std::path::Path;

/// How the PE was started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StartedBy<'a> {
    /// By rshmem's launcher, on one node, bootstrapped by unique ID.
    Local,
    /// By srun/mpirun; the value is the NVSHMEM bootstrap to use (`PMI`, `PMI2`, `PMIX`,
    /// `MPI`, ...).
    External(&'a str),
}

/// An external bootstrap: the names a launcher may give it, and what NVSHMEM needs.
struct Bootstrap {
    names: &'static [&'static str],
    /// `NVSHMEM_BOOTSTRAP`.
    bootstrap: &'static str,
    /// `NVSHMEM_BOOTSTRAP_PMI`, for the PMI family.
    pmi: Option<&'static str>,
    /// The variable naming the plugin, and the plugin's file name.
    plugin: (&'static str, &'static str),
}

/// NVSHMEM 3.4.5 accepts `NVSHMEM_BOOTSTRAP` = PMI, MPI, SHMEM, plugin or UID; PMI-2 and PMIx
/// are flavours of `PMI` selected by `NVSHMEM_BOOTSTRAP_PMI` (`src/host/bootstrap/bootstrap.cpp`).
const BOOTSTRAPS: &[Bootstrap] = &[
    Bootstrap {
        names: &["PMI"],
        bootstrap: "PMI",
        pmi: Some("PMI"),
        plugin: ("NVSHMEM_BOOTSTRAP_PMI_PLUGIN", "nvshmem_bootstrap_pmi.so.3"),
    },
    Bootstrap {
        names: &["PMI2", "PMI-2"],
        bootstrap: "PMI",
        pmi: Some("PMI-2"),
        plugin: (
            "NVSHMEM_BOOTSTRAP_PMI2_PLUGIN",
            "nvshmem_bootstrap_pmi2.so.3",
        ),
    },
    Bootstrap {
        names: &["PMIX"],
        bootstrap: "PMI",
        pmi: Some("PMIX"),
        plugin: (
            "NVSHMEM_BOOTSTRAP_PMIX_PLUGIN",
            "nvshmem_bootstrap_pmix.so.3",
        ),
    },
    Bootstrap {
        names: &["MPI"],
        bootstrap: "MPI",
        pmi: None,
        plugin: ("NVSHMEM_BOOTSTRAP_MPI_PLUGIN", "nvshmem_bootstrap_mpi.so.3"),
    },
    Bootstrap {
        names: &["SHMEM"],
        bootstrap: "SHMEM",
        pmi: None,
        plugin: (
            "NVSHMEM_BOOTSTRAP_SHMEM_PLUGIN",
            "nvshmem_bootstrap_shmem.so.3",
        ),
    },
];

/// The UID bootstrap plugin's file name.
pub(crate) const UID_PLUGIN: &str = "nvshmem_bootstrap_uid.so.3";

/// The variables to set, given the current environment (`env`), how the PE was started, the
/// folder of the loaded host library (where NVSHMEM's plugins live) and a file test.
pub(crate) fn plan(
    env: &dyn Fn(&str) -> Option<OsString>,
    started_by: StartedBy<'_>,
    plugin_dir: Option<&Path>,
    is_file: &dyn Fn(&Path) -> bool,
) -> Vec<(&'static str, OsString)> {
    let mut out: Vec<(&'static str, OsString)> = Vec::new();
    let mut set = |key: &'static str, value: OsString| {
        if env(key).is_none() {
            out.push((key, value));
        }
    };
    let plugin = |file: &str| {
        plugin_dir
            .map(|dir| dir.join(file))
            .filter(|p| is_file(p))
            .map(OsString::from)
    };

    set("NVSHMEM_DISABLE_NVLS", "1".into());
    set("NVSHMEM_DISABLE_NCCL", "1".into());
    set("NCCL_NVLS_ENABLE", "0".into());
    match started_by {
        StartedBy::Local => {
            set("NVSHMEM_REMOTE_TRANSPORT", "none".into());
            if let Some(path) = plugin(UID_PLUGIN) {
                set("NVSHMEM_BOOTSTRAP_UID_PLUGIN", path);
            }
        }
        StartedBy::External(_) if env("NVSHMEM_BOOTSTRAP").is_some() => {}
        StartedBy::External(kind) => {
            let known = BOOTSTRAPS
                .iter()
                .find(|b| b.names.iter().any(|n| n.eq_ignore_ascii_case(kind)));
            match known {
                Some(b) => {
                    set("NVSHMEM_BOOTSTRAP", b.bootstrap.into());
                    if let Some(pmi) = b.pmi {
                        set("NVSHMEM_BOOTSTRAP_PMI", pmi.into());
                    }
                    if let Some(path) = plugin(b.plugin.1) {
                        set(b.plugin.0, path);
                    }
                }
                // Unknown to this table: NVSHMEM gets the name as is and reports if invalid.
                None => set("NVSHMEM_BOOTSTRAP", kind.into()),
            }
        }
    }
    out
}

/// Sets the planned variables in this process.
///
/// Called once per PE before NVSHMEM starts and before the PE's closure can start threads, so
/// no other thread reads the environment concurrently.
pub(crate) fn apply(vars: &[(&'static str, OsString)]) {
    for (key, value) in vars {
        std::env::set_var(key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::discover::tests::TempDir;
    use std::collections::HashMap;

    fn plan_with(
        set: &[(&str, &str)],
        started_by: StartedBy<'_>,
        dir: Option<&Path>,
    ) -> HashMap<&'static str, String> {
        let env: HashMap<String, OsString> = set
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .collect();
        plan(&|k| env.get(k).cloned(), started_by, dir, &|p| p.is_file())
            .into_iter()
            .map(|(k, v)| (k, v.into_string().unwrap()))
            .collect()
    }

    #[test]
    fn local_job_disables_nvls_and_remote_transport_and_pins_the_uid_plugin() {
        let t = TempDir::new("env");
        let plugin = t.touch("lib/nvshmem_bootstrap_uid.so.3");
        let vars = plan_with(&[], StartedBy::Local, Some(&t.0.join("lib")));
        assert_eq!(vars["NVSHMEM_DISABLE_NVLS"], "1");
        assert_eq!(vars["NVSHMEM_DISABLE_NCCL"], "1");
        assert_eq!(vars["NCCL_NVLS_ENABLE"], "0");
        assert_eq!(vars["NVSHMEM_REMOTE_TRANSPORT"], "none");
        assert_eq!(
            vars["NVSHMEM_BOOTSTRAP_UID_PLUGIN"],
            plugin.to_str().unwrap()
        );
        assert!(!vars.contains_key("NVSHMEM_BOOTSTRAP"));
        // No plugin file there: leave the name to NVSHMEM's default.
        let vars = plan_with(&[], StartedBy::Local, Some(&t.0.join("elsewhere")));
        assert!(!vars.contains_key("NVSHMEM_BOOTSTRAP_UID_PLUGIN"));
    }

    #[test]
    fn user_settings_win() {
        let vars = plan_with(
            &[
                ("NVSHMEM_DISABLE_NVLS", "0"),
                ("NVSHMEM_DISABLE_NCCL", "0"),
                ("NCCL_NVLS_ENABLE", "1"),
                ("NVSHMEM_REMOTE_TRANSPORT", "ibrc"),
            ],
            StartedBy::Local,
            None,
        );
        assert!(vars.is_empty(), "{vars:?}");
        let vars = plan_with(
            &[("NVSHMEM_BOOTSTRAP", "MPI")],
            StartedBy::External("PMIX"),
            None,
        );
        assert!(!vars.contains_key("NVSHMEM_BOOTSTRAP"), "{vars:?}");
        assert!(!vars.contains_key("NVSHMEM_BOOTSTRAP_PMI"), "{vars:?}");
    }

    #[test]
    fn external_jobs_get_a_valid_nvshmem_bootstrap() {
        let t = TempDir::new("env-ext");
        let pmix = t.touch("lib/nvshmem_bootstrap_pmix.so.3");
        let vars = plan_with(&[], StartedBy::External("PMIX"), Some(&t.0.join("lib")));
        assert_eq!(vars["NVSHMEM_BOOTSTRAP"], "PMI");
        assert_eq!(vars["NVSHMEM_BOOTSTRAP_PMI"], "PMIX");
        assert_eq!(
            vars["NVSHMEM_BOOTSTRAP_PMIX_PLUGIN"],
            pmix.to_str().unwrap()
        );
        assert!(!vars.contains_key("NVSHMEM_REMOTE_TRANSPORT"));

        let vars = plan_with(
            &[("NVSHMEM_BOOTSTRAP_PMI", "PMI")],
            StartedBy::External("pmi-2"),
            None,
        );
        assert_eq!(vars["NVSHMEM_BOOTSTRAP"], "PMI");
        assert!(!vars.contains_key("NVSHMEM_BOOTSTRAP_PMI"));

        let vars = plan_with(&[], StartedBy::External("MPI"), None);
        assert_eq!(vars["NVSHMEM_BOOTSTRAP"], "MPI");
        assert!(!vars.contains_key("NVSHMEM_BOOTSTRAP_PMI"));
    }
}
