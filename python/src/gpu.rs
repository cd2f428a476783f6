//! A GPU PE in this process (under torchrun, or any launcher that started it): the unique ID
//! PE 0 makes, and the PE's start by it on a device's primary context (torch's). The Python
//! layer carries the ID through torch.distributed's store. Not yet run on a GPU.

use crate::error::OrRaise;
use crate::pe::PeCore;
use crate::Pe;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rshmem_host::{GpuAttach, Shmem};

/// A fresh NVSHMEM unique ID (PE 0 makes it; every PE attaches with it).
#[pyfunction]
fn unique_id(py: Python<'_>) -> PyResult<Py<PyBytes>> {
    let bytes = py.detach(|| rshmem_host::attach::unique_id().or_raise())?;
    Ok(PyBytes::new(py, &bytes).unbind())
}

/// Starts this process's PE `pe` of `npes` on CUDA device `device` with PE 0's `uid`
/// (collective), rshmem's ops loaded.
#[pyfunction]
#[pyo3(signature = (pe, npes, device, uid, hang_timeout=None))]
fn attach_gpu(
    py: Python<'_>,
    pe: usize,
    npes: usize,
    device: usize,
    uid: Vec<u8>,
    hang_timeout: Option<f64>,
) -> PyResult<Pe> {
    let config = GpuAttach {
        pe,
        npes,
        device,
        unique_id: uid,
        hang_timeout: hang_timeout.map(std::time::Duration::from_secs_f64),
    };
    let core = py.detach(move || -> PyResult<_> {
        let shmem = Shmem::attach_gpu(&config).or_raise()?;
        PeCore::new(shmem).or_raise()
    })?;
    Ok(Pe { core })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(unique_id, m)?)?;
    m.add_function(wrap_pyfunction!(attach_gpu, m)?)
}
