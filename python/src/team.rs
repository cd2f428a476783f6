//! Teams from Python: the collective splits of `Shmem` ([`Shmem::team_split_strided`],
//! [`Shmem::team_split_2d`]) as `rshmem.Team` objects, which every op with a team argument
//! takes (`team=None`: all PEs). A split team is destroyed (locally, after the PE's queued
//! work) when its object goes.

use crate::error::{arg, OrRaise};
use crate::pe::PeCore;
use crate::Pe;
use pyo3::prelude::*;
use rshmem_host::{Shmem, Team, TeamHandle};
use std::sync::{Arc, Mutex};

/// A team this PE got from a split, and is a member of.
#[pyclass(name = "Team", module = "rshmem._native", frozen)]
pub struct PyTeam {
    core: Arc<PeCore>,
    /// Always `Some` until dropped (taken then, to drop while the PE's `Shmem` lives).
    handle: Mutex<Option<TeamHandle<'static>>>,
    team: Team,
    my_pe: usize,
    pub(crate) n_pes: usize,
}

impl PyTeam {
    fn new(core: &Arc<PeCore>, handle: TeamHandle<'static>) -> PyTeam {
        core.retain();
        PyTeam {
            core: core.clone(),
            team: handle.team(),
            my_pe: handle.my_pe(),
            n_pes: handle.n_pes(),
            handle: Mutex::new(Some(handle)),
        }
    }
}

impl Drop for PyTeam {
    fn drop(&mut self) {
        self.core.end_object(&mut self.handle);
    }
}

#[pymethods]
impl PyTeam {
    /// This PE's number in the team.
    #[getter]
    fn my_pe(&self) -> usize {
        self.my_pe
    }

    /// The number of PEs in the team.
    #[getter]
    fn n_pes(&self) -> usize {
        self.n_pes
    }

    /// The number in `dest` (`None`: all PEs) of this team's PE `pe`, or `None` if it is not
    /// a member of `dest`.
    #[pyo3(signature = (pe, dest=None))]
    fn translate_pe(&self, pe: usize, dest: Option<&PyTeam>) -> PyResult<Option<usize>> {
        let dest = team_of(&self.core, dest)?;
        self.core
            .with_live(|live| Ok(live.shmem().team_translate_pe(self.team, pe, dest)))
    }

    fn __repr__(&self) -> String {
        format!(
            "rshmem.Team(my_pe={}, n_pes={}, of PE {})",
            self.my_pe, self.n_pes, self.core.pe
        )
    }
}

/// The team an op of `core`'s PE runs over: `team`'s, or all PEs for `None`; an argument error
/// for a team of another PE (each PE holds its own handles).
pub fn team_of(core: &Arc<PeCore>, team: Option<&PyTeam>) -> PyResult<Team> {
    match team {
        None => Ok(Team::WORLD),
        Some(t) if Arc::ptr_eq(&t.core, core) => Ok(t.team),
        Some(t) => Err(arg(format!(
            "a team of PE {} passed to PE {}: each PE passes the team its own split returned",
            t.core.pe, core.pe
        ))),
    }
}

/// Splits `parent` (`None`: all PEs) into its PEs `start + i·stride`, `i < size`
/// (collective over the parent). The team on its members, `None` elsewhere.
#[pyfunction]
#[pyo3(signature = (pe, start, stride, size, parent=None))]
fn team_split_strided(
    py: Python<'_>,
    pe: &Pe,
    start: usize,
    stride: usize,
    size: usize,
    parent: Option<&PyTeam>,
) -> PyResult<Option<PyTeam>> {
    let core = pe.core.clone();
    let parent = team_of(&core, parent)?;
    let handle = py.detach(|| {
        core.with_live(|live| {
            let shmem: &'static Shmem = live.shmem();
            shmem
                .team_split_strided(parent, start, stride, size)
                .or_raise()
        })
    })?;
    Ok(handle.map(|h| PyTeam::new(&core, h)))
}

/// Splits `parent` (`None`: all PEs) into rows of `xrange` consecutive PEs and the columns
/// across them (collective over the parent): this PE's `(row, column)`.
#[pyfunction]
#[pyo3(signature = (pe, xrange, parent=None))]
fn team_split_2d(
    py: Python<'_>,
    pe: &Pe,
    xrange: usize,
    parent: Option<&PyTeam>,
) -> PyResult<(PyTeam, PyTeam)> {
    let core = pe.core.clone();
    let parent = team_of(&core, parent)?;
    let (row, column) = py.detach(|| {
        core.with_live(|live| {
            let shmem: &'static Shmem = live.shmem();
            shmem.team_split_2d(parent, xrange).or_raise()
        })
    })?;
    Ok((PyTeam::new(&core, row), PyTeam::new(&core, column)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTeam>()?;
    m.add_function(wrap_pyfunction!(team_split_strided, m)?)?;
    m.add_function(wrap_pyfunction!(team_split_2d, m)?)
}
