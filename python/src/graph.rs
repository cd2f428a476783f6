//! rshmem's graphs from Python: `capture(pe, fn, stream)` records what `fn` queues on the
//! stream (`Stream::capture`: CUDA stream capture on GPUs, a recording on the simulator) into
//! a graph launched many times. The Python layer keeps the tensors the recorded work uses
//! alive with the graph.

use crate::error::OrRaise;
use crate::pe::PeCore;
use crate::Pe;
use pyo3::prelude::*;
use rshmem_host::{Error, Graph};
use std::sync::{Arc, Mutex};

/// A captured graph of one PE.
#[pyclass(module = "rshmem._native", frozen)]
pub struct PyGraph {
    core: Arc<PeCore>,
    graph: Mutex<Option<Graph<'static>>>,
}

impl Drop for PyGraph {
    fn drop(&mut self) {
        self.core.end_object(&mut self.graph);
    }
}

#[pymethods]
impl PyGraph {
    /// Queues the recorded work on `stream` (`None`: the PE's own).
    #[pyo3(signature = (stream=None))]
    fn launch(&self, py: Python<'_>, stream: Option<u64>) -> PyResult<()> {
        let core = self.core.clone();
        py.detach(|| {
            core.with_live(|live| {
                let stream = live.stream(stream)?;
                let graph = self.graph.lock().unwrap_or_else(|p| p.into_inner());
                let graph = graph.as_ref().expect("a graph alive");
                // SAFETY: the Python layer keeps every tensor the recorded work used alive with
                // this graph, and the PE's modules and ops live while the PE does.
                unsafe { graph.launch(&stream) }.or_raise()
            })
        })
    }

    /// The operations recorded.
    fn operations(&self) -> usize {
        let graph = self.graph.lock().unwrap_or_else(|p| p.into_inner());
        graph.as_ref().map_or(0, |g| g.operations())
    }
}

/// Records what `f()` queues on `stream` into a graph.
#[pyfunction]
#[pyo3(signature = (pe, f, stream=None))]
fn capture(py: Python<'_>, pe: &Pe, f: Py<PyAny>, stream: Option<u64>) -> PyResult<PyGraph> {
    let core = pe.core.clone();
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let graph = py.detach(|| {
        core.with_live(|live| {
            let stream = live.stream(stream)?;
            let outcome = stream.capture(|| {
                Python::attach(|py| f.call0(py)).map(drop).map_err(|e| {
                    let message = e.to_string();
                    *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    Error::InvalidArgument {
                        call: "rshmem.capture",
                        message: format!("the captured function raised: {message}"),
                    }
                })
            });
            // SAFETY: the graph borrows the `Shmem`; it is dropped under the PE's state
            // (`PyGraph`'s drop), before the `Shmem`.
            Ok(outcome.map(|g| unsafe { std::mem::transmute::<Graph<'_>, Graph<'static>>(g) }))
        })
    })?;
    if let Some(e) = raised.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let graph = graph.or_raise()?;
    core.retain();
    Ok(PyGraph {
        core,
        graph: Mutex::new(Some(graph)),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGraph>()?;
    m.add_function(wrap_pyfunction!(capture, m)?)
}
