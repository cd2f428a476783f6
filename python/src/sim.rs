//! Simulated PEs from Python: `sim_run(main, npes)` runs `main(pe)` once per PE, each on a
//! thread of its own (PEs are threads of one process on the simulator), and returns what each
//! returned. Every blocking call of a PE releases the GIL, so the PEs meet in collectives
//! while Python code runs one thread at a time.
//!
//! A PE whose function raises (or whose work fails) fails the job: the PEs waiting for it
//! (collectives, allocations, device waits) fail too, naming it, and `sim_run` raises
//! `RshmemError` naming the PE that failed first of its own accord, with its traceback.

use crate::error::{with_pe, OrRaise, RshmemError};
use crate::pe::PeCore;
use crate::Pe;
use pyo3::prelude::*;
use rshmem_host::SimJob;

/// Runs `main(pe)` on `npes` simulated PEs; returns their results in PE order.
#[pyfunction]
fn sim_run(py: Python<'_>, main: Py<PyAny>, npes: usize) -> PyResult<Vec<Py<PyAny>>> {
    let job = SimJob::new(npes).or_raise()?;
    let results: Vec<Option<Py<PyAny>>> = py.detach(|| {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..npes)
                .map(|pe| {
                    let (job, main) = (&job, &main);
                    std::thread::Builder::new()
                        .name(format!("rshmem-sim PE {pe}"))
                        .spawn_scoped(s, move || run_pe(job, pe, main))
                })
                .collect();
            handles
                .into_iter()
                .enumerate()
                .map(|(pe, h)| match h {
                    Ok(h) => h.join().ok().flatten(),
                    Err(e) => {
                        job.finished(pe, Err(format!("the host could not start its thread: {e}")));
                        None
                    }
                })
                .collect()
        })
    });
    match job.verdict() {
        Err(rshmem_host::Error::PeFailed { pe, reason }) => Err(with_pe(
            RshmemError::new_err(format!("PE {pe} failed: {reason}")),
            pe,
        )),
        Err(other) => Err(crate::error::to_py(other)),
        Ok(()) => Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| py.None()))
            .collect()),
    }
}

/// One PE's thread: its ops, `main(pe)`, and its verdict for the job.
fn run_pe(job: &SimJob, pe: usize, main: &Py<PyAny>) -> Option<Py<PyAny>> {
    job.run_pe(pe, |shmem| {
        // Collective (Ops::new allocates): without the GIL, which the other PEs need.
        let core = PeCore::new(shmem).map_err(|e| e.to_string())?;
        let outcome = Python::attach(|py| {
            let handle = Py::new(py, Pe { core: core.clone() }).map_err(|e| describe(py, &e))?;
            main.call1(py, (handle,)).map_err(|e| describe(py, &e))
        });
        // The PE's work is over: its heap stays mapped while tensors use it.
        core.end(false).map_err(|e| e.to_string())?;
        outcome
    })
}

/// A Python exception as its traceback's text (the job's error carries it).
fn describe(py: Python<'_>, e: &PyErr) -> String {
    let formatted = py.import("traceback").and_then(|tb| {
        let lines = tb.call_method1(
            "format_exception",
            (e.get_type(py), e.value(py), e.traceback(py)),
        )?;
        let text: Vec<String> = lines.extract()?;
        Ok(text.concat())
    });
    formatted
        .unwrap_or_else(|_| e.to_string())
        .trim_end()
        .to_string()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sim_run, m)?)
}
