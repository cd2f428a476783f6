//! `rshmem._native`: the Rust side of the `rshmem` Python package (its Python side, `rshmem/`,
//! is the API users import). Nothing here touches a GPU until a PE is started
//! ([`gpu::attach`] under torchrun, [`sim::run`] on the simulator).
//!
//! * [`pe`]: one PE as Python holds it (`Shmem`, `Ops`, adopted streams, the symmetric
//!   allocations by address), and the lifetimes' rules;
//! * [`args`]: tensors passed to ops, found back as symmetric ranges; [`dtype`]: element
//!   types and the typed dispatch of ops;
//! * [`gpu`], [`sim`]: starting PEs (NVSHMEM by unique ID in a torchrun process; simulated PEs
//!   as threads calling a Python function);
//! * [`ops`]: the collectives and fused tensor-parallel ops; [`gemm`]: the GEMMs (plain on any
//!   device memory, grouped, FP8); [`moe`]: the MoE buffers and calls, the fused layer;
//!   [`team`]: team splits; [`kernels`]: images loaded from a builder's manifest and kernels
//!   launched by name; [`graph`]: rshmem's graphs;
//! * [`error`]: rshmem's errors as Python exceptions.

mod args;
mod dtype;
mod error;
mod gemm;
mod gpu;
mod graph;
mod kernels;
mod moe;
mod ops;
mod pe;
mod profile;
mod sim;
mod team;

use error::OrRaise;
use pe::{Alloc, PeCore};
use pyo3::prelude::*;
use std::sync::Arc;

/// A PE of this process (or, on the simulator, of this thread): what `rshmem.current()` is.
#[pyclass(module = "rshmem._native", frozen)]
pub struct Pe {
    pub core: Arc<PeCore>,
}

#[pymethods]
impl Pe {
    /// This PE's number.
    #[getter]
    fn my_pe(&self) -> usize {
        self.core.pe
    }

    /// The number of PEs.
    #[getter]
    fn n_pes(&self) -> usize {
        self.core.npes
    }

    /// `"gpu"` or `"sim"`.
    #[getter]
    fn backend(&self) -> &'static str {
        match self.core.backend {
            rshmem_host::Backend::Gpu => "gpu",
            rshmem_host::Backend::Sim => "sim",
        }
    }

    /// `(sm, multiprocessors, sharing)` of the PE's device.
    fn device_info(&self) -> PyResult<(u32, u32, String)> {
        self.core.with_live(|live| {
            let info = live.shmem().device_info();
            Ok((info.sm, info.multiprocessors, format!("{:?}", info.sharing)))
        })
    }

    /// Allocates `nbytes` zeroed bytes on the symmetric heap (collective).
    fn alloc(&self, py: Python<'_>, nbytes: usize) -> PyResult<SymAlloc> {
        let core = self.core.clone();
        let alloc = py.detach(move || Alloc::new(&core, nbytes))?;
        Ok(SymAlloc { alloc })
    }

    /// Host-side barrier over all PEs, after this PE's work (collective).
    fn barrier_all(&self, py: Python<'_>) -> PyResult<()> {
        let core = self.core.clone();
        py.detach(move || core.with_live(|live| live.shmem().barrier_all().or_raise()))
    }

    /// Waits for `stream` (a raw handle; `None`: every stream of the PE).
    #[pyo3(signature = (stream=None))]
    fn synchronize(&self, py: Python<'_>, stream: Option<u64>) -> PyResult<()> {
        let core = self.core.clone();
        py.detach(move || {
            core.with_live(|live| match stream {
                None => live.shmem().synchronize().or_raise(),
                Some(_) => live.stream(stream)?.synchronize().or_raise(),
            })
        })
    }

    /// Ends the PE: collectively (`finalize=True`, refused while tensors live), or abandoned.
    fn end(&self, py: Python<'_>, finalize: bool) -> PyResult<()> {
        let core = self.core.clone();
        py.detach(move || core.end(finalize))
    }
}

/// One symmetric allocation; the Python layer makes arrays and tensors over it (each keeps it
/// alive), and it is freed when the last goes.
#[pyclass(module = "rshmem._native", frozen)]
pub struct SymAlloc {
    alloc: Arc<Alloc>,
}

#[pymethods]
impl SymAlloc {
    /// The local address of its first byte (a host address on the simulator, a device
    /// address on GPUs).
    #[getter]
    fn ptr(&self) -> u64 {
        self.alloc.addr
    }

    /// Its size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.alloc.bytes
    }

    /// The PE it belongs to.
    #[getter]
    fn pe(&self) -> usize {
        self.alloc.core.pe
    }
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RshmemError", py.get_type::<error::RshmemError>())?;
    m.add("ArgumentError", py.get_type::<error::ArgumentError>())?;
    m.add_class::<Pe>()?;
    m.add_class::<SymAlloc>()?;
    args::register(m)?;
    sim::register(m)?;
    gpu::register(m)?;
    ops::register(m)?;
    gemm::register(m)?;
    team::register(m)?;
    moe::register(m)?;
    kernels::register(m)?;
    graph::register(m)?;
    profile::register(m)?;
    Ok(())
}
