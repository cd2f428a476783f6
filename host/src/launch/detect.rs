//! What this process is in a job, decided from environment variables alone.
//!
//! Detection is a pure function over a variable lookup ([`detect`]), so the layout of every
//! launcher is unit-tested without setting the process environment. [`super::role`] feeds it
//! the real environment.
//!
//! Precedence follows "closest launcher first": a process started by rshmem's launcher
//! inherits whatever `srun`/`mpirun` set for the launcher itself, so `RSHMEM_PE` wins; an
//! `mpirun` inside a Slurm allocation starts its ranks from daemons that `srun` placed, so the
//! MPI variables beat the Slurm ones.

use super::rendezvous::{Address, PeInfo};
use super::vars::{
    DEFAULT_UID_TIMEOUT, LOCAL_RANK_VAR, NPES_VAR, PE_VAR, RENDEZVOUS_VAR, REPORT_VAR, TIMEOUT_VAR,
};
use crate::contract::{Error, Result};
use std::fmt;
use std::time::Duration;

/// Reads one environment variable; `None` when unset.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What this process is in a GPU job.
#[derive(Debug)]
pub enum Role {
    /// Started plainly: start the PEs ([`super::launch_self`]) and wait for them.
    Launcher,
    /// A PE started by our launcher ([`super::launch_self`] or `rshmem-run`).
    Pe(PeInfo),
    /// A PE started by an external launcher (`srun`, `mpirun`, ...): NVSHMEM bootstraps itself.
    External(External),
}

/// The external launcher detected from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum External {
    /// Slurm `srun`, with the PMI flavour its `--mpi` plugin provides.
    Slurm(Pmi),
    /// `mpirun`/`mpiexec` of an MPI library.
    Mpi(MpiLauncher),
    /// A bare `PMIx` server (PRRTE's `prterun`, Flux, ...) without Slurm or Open MPI variables.
    Pmix,
}

/// The PMI interface `srun` gives its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pmi {
    /// `srun --mpi=pmi2`: `PMI_RANK`, `PMI_FD`.
    Pmi2,
    /// `srun --mpi=pmix`: `PMIX_RANK`, `PMIX_SERVER_URI*`.
    Pmix,
}

/// Which MPI's launcher started this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpiLauncher {
    /// Open MPI (`OMPI_COMM_WORLD_*`).
    OpenMpi,
    /// MPICH or Intel MPI, whose launcher is Hydra (`PMI_RANK`, `MPI_LOCALRANKID`), or
    /// another launcher serving PMI-1 (`PMI_RANK` without Slurm, e.g. MVAPICH's).
    Hydra,
}

/// Where an external launcher puts (pe, npes, local rank): for each, the variables to try
/// in order.
struct Layout {
    pe: &'static [&'static str],
    npes: &'static [&'static str],
    local_rank: &'static [&'static str],
}

impl External {
    /// The `NVSHMEM_BOOTSTRAP` value to use: `"PMI"` (with [`Self::nvshmem_bootstrap_pmi`]
    /// choosing the flavour) or `"MPI"`.
    ///
    /// Open MPI gets NVSHMEM's MPI bootstrap, the one NVSHMEM documents for `mpirun` (its
    /// plugin calls `MPI_Init` itself). Hydra gets plain PMI: it serves the PMI-1 wire
    /// protocol NVSHMEM's built-in client speaks, with no dependence on the MPI library's ABI.
    #[must_use]
    pub fn nvshmem_bootstrap(self) -> &'static str {
        match self {
            External::Mpi(MpiLauncher::OpenMpi) => "MPI",
            External::Slurm(_) | External::Mpi(MpiLauncher::Hydra) | External::Pmix => "PMI",
        }
    }

    /// The `NVSHMEM_BOOTSTRAP_PMI` value (`"PMI"`, `"PMI-2"` or `"PMIX"`) when
    /// [`Self::nvshmem_bootstrap`] is `"PMI"`.
    #[must_use]
    pub fn nvshmem_bootstrap_pmi(self) -> Option<&'static str> {
        match self {
            External::Slurm(Pmi::Pmi2) => Some("PMI-2"),
            External::Slurm(Pmi::Pmix) | External::Pmix => Some("PMIX"),
            External::Mpi(MpiLauncher::Hydra) => Some("PMI"),
            External::Mpi(MpiLauncher::OpenMpi) => None,
        }
    }

    /// The NVSHMEM variables to set before `nvshmem_init` (skip any the user already set:
    /// theirs win).
    #[must_use]
    pub fn nvshmem_env(self) -> Vec<(&'static str, &'static str)> {
        let mut vars = vec![("NVSHMEM_BOOTSTRAP", self.nvshmem_bootstrap())];
        vars.extend(
            self.nvshmem_bootstrap_pmi()
                .map(|pmi| ("NVSHMEM_BOOTSTRAP_PMI", pmi)),
        );
        vars
    }

    /// `(pe, npes, local_rank)` as the launcher's variables say.
    ///
    /// # Errors
    ///
    /// [`Error::LaunchEnv`] naming the variable that is missing, malformed or out of range;
    /// always for [`External::Pmix`], whose environment holds only the rank.
    pub fn placement(self) -> Result<(usize, usize, usize)> {
        self.placement_in(&process_env)
    }

    /// [`Self::placement`] over any variable lookup.
    pub(crate) fn placement_in(self, env: Lookup<'_>) -> Result<(usize, usize, usize)> {
        let Some(layout) = self.layout() else {
            let rank = env("PMIX_RANK").unwrap_or_default();
            return Err(Error::LaunchEnv {
                var: "PMIX_RANK".into(),
                found: format!("{rank:?} with no job size or local rank beside it"),
                expected: "a bare PMIx launcher exports only the rank, not the job size or the PE's index on its node".into(),
                fix: "Start the job with `srun --mpi=pmix` or Open MPI's `mpirun`, which also export them, or let NVSHMEM's PMIx bootstrap place the PE.".into(),
            });
        };
        let fix = format!(
            "{self} sets it for every task: start the program through it rather than setting it by hand."
        );
        let (pe_var, pe) = index(env, layout.pe, &fix)?;
        let (npes_var, npes) = index(env, layout.npes, &fix)?;
        let (local_var, local_rank) = index(env, layout.local_rank, &fix)?;
        check_placement(
            (pe_var, pe),
            (npes_var, npes),
            (local_var, local_rank),
            &fix,
        )?;
        Ok((pe, npes, local_rank))
    }

    fn layout(self) -> Option<Layout> {
        Some(match self {
            External::Slurm(_) => Layout {
                pe: &["SLURM_PROCID"],
                npes: &["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"],
                local_rank: &["SLURM_LOCALID"],
            },
            External::Mpi(MpiLauncher::OpenMpi) => Layout {
                pe: &["OMPI_COMM_WORLD_RANK"],
                npes: &["OMPI_COMM_WORLD_SIZE"],
                local_rank: &["OMPI_COMM_WORLD_LOCAL_RANK"],
            },
            External::Mpi(MpiLauncher::Hydra) => Layout {
                pe: &["PMI_RANK"],
                npes: &["PMI_SIZE"],
                local_rank: &["MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK"],
            },
            External::Pmix => return None,
        })
    }
}

impl fmt::Display for External {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            External::Slurm(Pmi::Pmi2) => "Slurm's srun (PMI-2)",
            External::Slurm(Pmi::Pmix) => "Slurm's srun (PMIx)",
            External::Mpi(MpiLauncher::OpenMpi) => "Open MPI's mpirun",
            External::Mpi(MpiLauncher::Hydra) => "a PMI launcher (MPICH's or Intel MPI's mpiexec)",
            External::Pmix => "a PMIx launcher",
        })
    }
}

impl PeInfo {
    /// Reads a PE's placement from the variables rshmem's launcher sets.
    fn from_env(env: Lookup<'_>) -> Result<PeInfo> {
        let fix = "rshmem's launcher sets RSHMEM_PE, RSHMEM_NPES, RSHMEM_LOCAL_RANK and RSHMEM_RENDEZVOUS together: start the program plainly or with `rshmem-run` rather than setting them by hand.";
        let (_, pe) = index(env, &[PE_VAR], fix)?;
        let (_, npes) = index(env, &[NPES_VAR], fix)?;
        let (_, local_rank) = index(env, &[LOCAL_RANK_VAR], fix)?;
        check_placement(
            (PE_VAR, pe),
            (NPES_VAR, npes),
            (LOCAL_RANK_VAR, local_rank),
            fix,
        )?;
        let rendezvous = match env(RENDEZVOUS_VAR) {
            Some(value) => Address::parse(&value).ok_or_else(|| Error::LaunchEnv {
                var: RENDEZVOUS_VAR.into(),
                found: format!("{value:?}"),
                expected: "it must be `unix:<socket path>`".into(),
                fix: fix.into(),
            })?,
            None => {
                return Err(missing(
                    RENDEZVOUS_VAR,
                    "it must be `unix:<socket path>`",
                    fix,
                ))
            }
        };
        Ok(PeInfo {
            pe,
            npes,
            local_rank,
            rendezvous,
            timeout: uid_timeout(env)?,
            report: env(REPORT_VAR)
                .filter(|path| !path.is_empty())
                .map(std::path::PathBuf::from),
        })
    }
}

/// Decides the role from the variables `env` gives (see the module docs for the order).
pub(crate) fn detect(env: Lookup<'_>) -> Result<Role> {
    let set = |var: &str| env(var).is_some_and(|v| !v.trim().is_empty());
    if set(PE_VAR) {
        return PeInfo::from_env(env).map(Role::Pe);
    }
    if set("OMPI_COMM_WORLD_RANK") {
        return Ok(Role::External(External::Mpi(MpiLauncher::OpenMpi)));
    }
    // Slurm's PMI-2 plugin sets PMI_RANK too; MPI_LOCALRANKID is Hydra's own.
    if set("PMI_RANK") && set("MPI_LOCALRANKID") {
        return Ok(Role::External(External::Mpi(MpiLauncher::Hydra)));
    }
    if set("SLURM_PROCID") {
        if set("PMIX_RANK") {
            return Ok(Role::External(External::Slurm(Pmi::Pmix)));
        }
        if set("PMI_RANK") {
            return Ok(Role::External(External::Slurm(Pmi::Pmi2)));
        }
        // A batch script also has SLURM_PROCID; only an srun step has SLURM_STEP_NUM_TASKS.
        // One task without PMI may start its own PEs; several would each start a job.
        if set("SLURM_STEP_NUM_TASKS") {
            let fix = "srun sets it for every task: start the program through srun unchanged.";
            let (_, tasks) = index(env, &["SLURM_STEP_NUM_TASKS"], fix)?;
            if tasks > 1 {
                return Err(Error::Launcher(format!(
                    "srun started {tasks} tasks without a PMI interface (neither PMI_RANK nor PMIX_RANK is set), so NVSHMEM cannot join them into one job. Run `srun --mpi=pmix ...` (or `--mpi=pmi2`), or run one task (`srun -n 1`) and let rshmem start one PE per GPU of its node"
                )));
            }
        }
    }
    // Without Slurm, PMI_RANK means some other PMI-1 server (MVAPICH's mpirun_rsh, ...).
    if set("PMI_RANK") {
        return Ok(Role::External(External::Mpi(MpiLauncher::Hydra)));
    }
    if set("PMIX_RANK") {
        return Ok(Role::External(External::Pmix));
    }
    Ok(Role::Launcher)
}

/// `RSHMEM_NPES` parsed: `None` when unset or empty.
pub(crate) fn npes_in(env: Lookup<'_>) -> Result<Option<usize>> {
    match env(NPES_VAR) {
        Some(v) if !v.trim().is_empty() => {
            let n = parse_npes(&v).ok_or_else(|| Error::LaunchEnv {
                var: NPES_VAR.into(),
                found: format!("{v:?}"),
                expected: "it must be a whole number of PEs, at least 1".into(),
                fix: "Set e.g. RSHMEM_NPES=4, or unset it to start one PE per GPU.".into(),
            })?;
            Ok(Some(n))
        }
        _ => Ok(None),
    }
}

/// A PE count as `RSHMEM_NPES` and `rshmem-run -n` take it: a whole number >= 1.
#[must_use]
pub fn parse_npes(text: &str) -> Option<usize> {
    text.trim().parse::<usize>().ok().filter(|&n| n >= 1)
}

fn uid_timeout(env: Lookup<'_>) -> Result<Duration> {
    let Some(v) = env(TIMEOUT_VAR).filter(|v| !v.trim().is_empty()) else {
        return Ok(DEFAULT_UID_TIMEOUT);
    };
    v.trim()
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| Error::LaunchEnv {
            var: TIMEOUT_VAR.into(),
            found: format!("{v:?}"),
            expected: "it must be a number of seconds above 0".into(),
            fix: "Set e.g. RSHMEM_RENDEZVOUS_TIMEOUT=120, or unset it for the default of 60 s."
                .into(),
        })
}

/// The first of `vars` that is set, parsed as an index or count.
fn index(env: Lookup<'_>, vars: &[&'static str], fix: &str) -> Result<(&'static str, usize)> {
    let Some((var, value)) = vars.iter().find_map(|&var| env(var).map(|v| (var, v))) else {
        return Err(missing(
            &vars.join(" or "),
            "it must be a whole number",
            fix,
        ));
    };
    value
        .trim()
        .parse::<usize>()
        .map(|n| (var, n))
        .map_err(|_| Error::LaunchEnv {
            var: var.into(),
            found: format!("{value:?}"),
            expected: "it must be a whole number".into(),
            fix: fix.into(),
        })
}

fn check_placement(
    (pe_var, pe): (&str, usize),
    (npes_var, npes): (&str, usize),
    (local_var, local_rank): (&str, usize),
    fix: &str,
) -> Result<()> {
    let out_of_range = |var: &str, value: usize| Error::LaunchEnv {
        var: var.into(),
        found: format!("\"{value}\""),
        expected: format!("it must be below {npes_var}={npes}"),
        fix: fix.into(),
    };
    if npes == 0 {
        return Err(Error::LaunchEnv {
            var: npes_var.into(),
            found: "\"0\"".into(),
            expected: "a job has at least 1 PE".into(),
            fix: fix.into(),
        });
    }
    if pe >= npes {
        return Err(out_of_range(pe_var, pe));
    }
    if local_rank >= npes {
        return Err(out_of_range(local_var, local_rank));
    }
    Ok(())
}

fn missing(var: &str, expected: &str, fix: &str) -> Error {
    Error::LaunchEnv {
        var: var.into(),
        found: "not set".into(),
        expected: expected.into(),
        fix: fix.into(),
    }
}

/// The lookup over this process's environment. Non-UTF-8 values come through lossily, so
/// they fail to parse (with their value shown) instead of reading as unset.
pub(crate) fn process_env(var: &str) -> Option<String> {
    std::env::var_os(var).map(|v| v.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn external(pairs: &[(&str, &str)]) -> (External, (usize, usize, usize)) {
        let env = env(pairs);
        match detect(&env).unwrap() {
            Role::External(ext) => (ext, ext.placement_in(&env).unwrap()),
            other => panic!("{pairs:?} detected as {other:?}"),
        }
    }

    #[test]
    fn plain_start_is_the_launcher() {
        assert!(matches!(detect(&env(&[])).unwrap(), Role::Launcher));
        // An sbatch script carries SLURM_PROCID but is no srun step.
        let batch = env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "8")]);
        assert!(matches!(detect(&batch).unwrap(), Role::Launcher));
        let one_task = env(&[("SLURM_PROCID", "0"), ("SLURM_STEP_NUM_TASKS", "1")]);
        assert!(matches!(detect(&one_task).unwrap(), Role::Launcher));
    }

    #[test]
    fn our_launcher_wins_over_external_variables() {
        let env = env(&[
            ("RSHMEM_PE", "2"),
            ("RSHMEM_NPES", "4"),
            ("RSHMEM_LOCAL_RANK", "2"),
            ("RSHMEM_RENDEZVOUS", "unix:/tmp/x/uid.sock"),
            ("SLURM_PROCID", "0"),
            ("PMIX_RANK", "0"),
            ("OMPI_COMM_WORLD_RANK", "0"),
        ]);
        let Role::Pe(info) = detect(&env).unwrap() else {
            panic!("not a PE")
        };
        assert_eq!((info.pe, info.npes, info.local_rank), (2, 4, 2));
        assert_eq!(
            info.rendezvous,
            Address::parse("unix:/tmp/x/uid.sock").unwrap()
        );
        assert_eq!(info.timeout, DEFAULT_UID_TIMEOUT);
    }

    #[test]
    fn partial_or_bad_pe_variables_are_named() {
        let base = [
            ("RSHMEM_PE", "1"),
            ("RSHMEM_NPES", "2"),
            ("RSHMEM_LOCAL_RANK", "1"),
            ("RSHMEM_RENDEZVOUS", "unix:/tmp/s"),
        ];
        let without = |var: &str| -> Vec<(&str, &str)> {
            base.iter().copied().filter(|(k, _)| *k != var).collect()
        };
        for var in ["RSHMEM_NPES", "RSHMEM_LOCAL_RANK", "RSHMEM_RENDEZVOUS"] {
            let msg = detect(&env(&without(var))).unwrap_err().to_string();
            assert!(msg.starts_with(&format!("{var} is not set")), "{msg}");
            assert!(msg.contains("rshmem-run"), "{msg}");
        }
        let mut bad = base.to_vec();
        bad[0] = ("RSHMEM_PE", "2");
        let msg = detect(&env(&bad)).unwrap_err().to_string();
        assert!(
            msg.contains("RSHMEM_PE is \"2\"") && msg.contains("below RSHMEM_NPES=2"),
            "{msg}"
        );
        bad[0] = ("RSHMEM_PE", "one");
        let msg = detect(&env(&bad)).unwrap_err().to_string();
        assert!(
            msg.contains("\"one\"") && msg.contains("whole number"),
            "{msg}"
        );
        let mut tcp = base.to_vec();
        tcp[3] = ("RSHMEM_RENDEZVOUS", "tcp:127.0.0.1:5");
        let msg = detect(&env(&tcp)).unwrap_err().to_string();
        assert!(msg.contains("unix:<socket path>"), "{msg}");
    }

    #[test]
    fn rendezvous_timeout_is_overridable() {
        let base = [
            ("RSHMEM_PE", "0"),
            ("RSHMEM_NPES", "1"),
            ("RSHMEM_LOCAL_RANK", "0"),
            ("RSHMEM_RENDEZVOUS", "unix:/tmp/s"),
        ];
        let with = |t: &'static str| {
            let mut v = base.to_vec();
            v.push(("RSHMEM_RENDEZVOUS_TIMEOUT", t));
            detect(&env(&v))
        };
        let Role::Pe(info) = with("2.5").unwrap() else {
            panic!()
        };
        assert_eq!(info.timeout, Duration::from_millis(2500));
        for bad in ["0", "-1", "soon"] {
            let msg = with(bad).unwrap_err().to_string();
            assert!(
                msg.contains("RSHMEM_RENDEZVOUS_TIMEOUT") && msg.contains("above 0"),
                "{msg}"
            );
        }
    }

    #[test]
    fn slurm_pmix_and_pmi2() {
        let step = [
            ("SLURM_PROCID", "5"),
            ("SLURM_STEP_NUM_TASKS", "8"),
            ("SLURM_NTASKS", "16"),
            ("SLURM_LOCALID", "1"),
        ];
        let mut pmix = step.to_vec();
        pmix.push(("PMIX_RANK", "5"));
        let (ext, placement) = external(&pmix);
        assert_eq!(ext, External::Slurm(Pmi::Pmix));
        assert_eq!(
            placement,
            (5, 8, 1),
            "the step's size, not the allocation's"
        );
        assert_eq!(
            ext.nvshmem_env(),
            [
                ("NVSHMEM_BOOTSTRAP", "PMI"),
                ("NVSHMEM_BOOTSTRAP_PMI", "PMIX")
            ]
        );

        let mut pmi2 = step.to_vec();
        pmi2.extend([("PMI_RANK", "5"), ("PMI_SIZE", "8")]);
        let (ext, placement) = external(&pmi2);
        assert_eq!(ext, External::Slurm(Pmi::Pmi2));
        assert_eq!(placement, (5, 8, 1));
        assert_eq!(
            (ext.nvshmem_bootstrap(), ext.nvshmem_bootstrap_pmi()),
            ("PMI", Some("PMI-2"))
        );

        // Without SLURM_STEP_NUM_TASKS the task count comes from SLURM_NTASKS.
        let (_, placement) = external(&[
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_LOCALID", "3"),
            ("PMI_RANK", "3"),
        ]);
        assert_eq!(placement, (3, 4, 3));
    }

    #[test]
    fn srun_without_pmi_is_refused_with_the_fix() {
        let msg = detect(&env(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_STEP_NUM_TASKS", "4"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("4 tasks") && msg.contains("--mpi=pmix"),
            "{msg}"
        );
    }

    #[test]
    fn open_mpi_beats_the_slurm_variables_of_its_daemons() {
        let (ext, placement) = external(&[
            ("OMPI_COMM_WORLD_RANK", "6"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("PMIX_RANK", "6"),
            ("SLURM_PROCID", "1"),
            ("SLURM_STEP_NUM_TASKS", "2"),
        ]);
        assert_eq!(ext, External::Mpi(MpiLauncher::OpenMpi));
        assert_eq!(placement, (6, 8, 2));
        assert_eq!(ext.nvshmem_env(), [("NVSHMEM_BOOTSTRAP", "MPI")]);
    }

    #[test]
    fn mpich_hydra() {
        let (ext, placement) = external(&[
            ("PMI_RANK", "3"),
            ("PMI_SIZE", "4"),
            ("MPI_LOCALRANKID", "1"),
            ("PMI_FD", "7"),
            ("SLURM_PROCID", "0"),
        ]);
        assert_eq!(ext, External::Mpi(MpiLauncher::Hydra));
        assert_eq!(placement, (3, 4, 1));

        // Another PMI-1 launcher: MVAPICH's names its local rank differently.
        let (ext, placement) = external(&[
            ("PMI_RANK", "2"),
            ("PMI_SIZE", "4"),
            ("MV2_COMM_WORLD_LOCAL_RANK", "0"),
        ]);
        assert_eq!(
            (ext, placement),
            (External::Mpi(MpiLauncher::Hydra), (2, 4, 0))
        );
        assert_eq!(
            (ext.nvshmem_bootstrap(), ext.nvshmem_bootstrap_pmi()),
            ("PMI", Some("PMI"))
        );
    }

    #[test]
    fn bare_pmix_is_detected_but_cannot_be_placed() {
        let env = env(&[("PMIX_RANK", "2"), ("PMIX_NAMESPACE", "prterun-x-1@1")]);
        let Role::External(ext) = detect(&env).unwrap() else {
            panic!()
        };
        assert_eq!(ext, External::Pmix);
        assert_eq!(ext.nvshmem_bootstrap_pmi(), Some("PMIX"));
        let msg = ext.placement_in(&env).unwrap_err().to_string();
        assert!(
            msg.contains("PMIX_RANK") && msg.contains("srun --mpi=pmix"),
            "{msg}"
        );
    }

    #[test]
    fn external_placement_errors_name_the_variable_and_launcher() {
        let env = env(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "x")]);
        let msg = External::Mpi(MpiLauncher::OpenMpi)
            .placement_in(&env)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("OMPI_COMM_WORLD_SIZE is \"x\"") && msg.contains("Open MPI's mpirun"),
            "{msg}"
        );
        let msg = External::Slurm(Pmi::Pmix)
            .placement_in(&self::env(&[("SLURM_PROCID", "0"), ("SLURM_LOCALID", "0")]))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("SLURM_STEP_NUM_TASKS or SLURM_NTASKS is not set"),
            "{msg}"
        );
        let msg = External::Mpi(MpiLauncher::Hydra)
            .placement_in(&self::env(&[
                ("PMI_RANK", "4"),
                ("PMI_SIZE", "4"),
                ("MPI_LOCALRANKID", "0"),
            ]))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("PMI_RANK is \"4\"") && msg.contains("below PMI_SIZE=4"),
            "{msg}"
        );
    }

    #[test]
    fn rshmem_npes_parsing() {
        assert_eq!(npes_in(&env(&[])).unwrap(), None);
        assert_eq!(npes_in(&env(&[("RSHMEM_NPES", "")])).unwrap(), None);
        assert_eq!(npes_in(&env(&[("RSHMEM_NPES", " 8 ")])).unwrap(), Some(8));
        for bad in ["0", "-2", "two", "1.5"] {
            let msg = npes_in(&env(&[("RSHMEM_NPES", bad)]))
                .unwrap_err()
                .to_string();
            assert!(
                msg.contains(&format!("RSHMEM_NPES is {bad:?}")) && msg.contains("at least 1"),
                "{msg}"
            );
        }
    }
}
