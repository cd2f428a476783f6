//! Tensors as the Python layer passes them to an op: `(address, bytes, dtype)` of a contiguous
//! tensor (the Python side refuses non-contiguous views first), or the tensor itself, read here
//! ([`read`]: a plain torch tensor in a few attribute reads, anything else through the Python
//! layer's `tensor_arg`); found back as the symmetric range it is ([`PeCore::find`]), typed;
//! or, for ops that reach no peer (the GEMM), memory of the PE's device allocated elsewhere (a
//! torch tensor; a numpy array on the simulator), taken as a checked [`DeviceRange`].

use crate::dtype::DType;
use crate::error::{arg, OrRaise};
use crate::pe::{Found, PeCore, Region};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use rshmem_host::{DeviceRange, DeviceRangeMut, Pod, Shmem, SymRange, SymRangeMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A tensor argument: its data's address, its size in bytes and its element type's name.
#[derive(FromPyObject, Clone, Debug)]
pub struct TensorArg(pub u64, pub usize, pub String);

/// The tensor type read here without Python-level code, and its dtypes' names
/// ([`set_tensor_type`]); `None` until torch is imported by the Python layer.
static TENSOR_TYPE: Mutex<Option<(Py<PyType>, Py<PyDict>)>> = Mutex::new(None);

/// `rshmem.capture`s under way in this process: while one is, tensors go through the Python
/// layer, which keeps them alive with the graph.
static CAPTURING: AtomicUsize = AtomicUsize::new(0);

/// Registers the tensor type ops read themselves (`torch.Tensor`, exactly: subclasses go
/// through Python) and `{dtype: rshmem's name}`; `None` unregisters.
#[pyfunction]
#[pyo3(signature = (ty, names))]
pub fn set_tensor_type(ty: Option<Bound<'_, PyType>>, names: Option<Bound<'_, PyDict>>) {
    let mut slot = TENSOR_TYPE.lock().unwrap_or_else(|e| e.into_inner());
    *slot = ty.zip(names).map(|(t, n)| (t.unbind(), n.unbind()));
}

/// Counts an `rshmem.capture` in (`+1`) or out (`-1`), as the Python layer's own count.
#[pyfunction]
pub fn set_capturing(delta: isize) {
    if delta >= 0 {
        CAPTURING.fetch_add(delta as usize, Ordering::Relaxed);
    } else {
        CAPTURING.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
    }
}

/// Tensor argument `what` of `call`: a `(address, bytes, type)` the Python layer read, a
/// contiguous tensor of the registered type read here (four attribute reads: the Python
/// function around them cost more than the reads, docs/python.md), or anything else through
/// the Python layer's `tensor_arg`, whose errors name the argument.
pub fn read(t: &Bound<'_, PyAny>, what: &str, call: &str) -> PyResult<TensorArg> {
    if let Ok(tuple) = t.cast::<PyTuple>() {
        return tuple.extract();
    }
    if let Some(arg) = read_registered(t) {
        return Ok(arg);
    }
    static TENSOR_ARG: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    TENSOR_ARG
        .import(t.py(), "rshmem._tensors", "tensor_arg")?
        .call1((t, what, call))?
        .extract()
}

/// [`read`]'s fast path: `None` where the Python layer must look (another type, a dtype rshmem
/// lacks, a view that is not contiguous, a capture under way).
fn read_registered(t: &Bound<'_, PyAny>) -> Option<TensorArg> {
    let py = t.py();
    let (ty, names) = {
        let slot = TENSOR_TYPE.lock().unwrap_or_else(|e| e.into_inner());
        let (ty, names) = slot.as_ref()?;
        (ty.clone_ref(py), names.clone_ref(py))
    };
    if !t.get_type().is(ty.bind(py)) || CAPTURING.load(Ordering::Relaxed) != 0 {
        return None;
    }
    let name = names
        .bind(py)
        .get_item(t.getattr(intern!(py, "dtype")).ok()?)
        .ok()??;
    let contiguous = t.call_method0(intern!(py, "is_contiguous")).ok()?;
    if !contiguous.is_truthy().ok()? {
        return None;
    }
    let addr = t
        .call_method0(intern!(py, "data_ptr"))
        .ok()?
        .extract()
        .ok()?;
    let bytes = t.getattr(intern!(py, "nbytes")).ok()?.extract().ok()?;
    Some(TensorArg(addr, bytes, name.extract().ok()?))
}

/// The 2-D shape of tensor argument `what` of `call` (its `shape`), or the error the Python
/// layer gives.
pub fn shape2(t: &Bound<'_, PyAny>, what: &str, call: &str) -> PyResult<(usize, usize)> {
    let shape: Vec<usize> = t.getattr(intern!(t.py(), "shape"))?.extract()?;
    match shape[..] {
        [rows, cols] => Ok((rows, cols)),
        _ => Err(arg(format!(
            "{call}: `{what}` has shape {}; a 2-D tensor is needed",
            python_tuple(&shape)
        ))),
    }
}

/// `shape` as Python prints a tuple.
fn python_tuple(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Where a tensor argument's memory is.
enum Memory {
    /// On the symmetric heap: what holds it (kept alive while the op uses it), and where the
    /// tensor starts there.
    Heap { region: Arc<dyn Region>, at: usize },
    /// Elsewhere on the PE's device, at this address (ops that reach no peer only).
    Device { addr: u64 },
}

/// A tensor argument found: its memory, how long it is, of which type.
pub struct Sym {
    memory: Memory,
    pub bytes: usize,
    pub dtype: DType,
    what: &'static str,
}

impl Sym {
    /// `t` (the argument named `what` of `call`) on `core`'s heap; an argument error if it is
    /// not all inside one live symmetric allocation.
    pub fn find(core: &PeCore, call: &str, what: &'static str, t: &TensorArg) -> PyResult<Sym> {
        let dtype = DType::parse(&t.2)?;
        let (region, at) = core.find(call, what, t.0, t.1)?;
        Ok(Sym {
            memory: Memory::Heap { region, at },
            bytes: t.1,
            dtype,
            what,
        })
    }

    /// [`Sym::find`], then [`Sym::expect`] of `dtype` (`why`: what needs it).
    pub fn find_as(
        core: &PeCore,
        call: &str,
        (what, t): (&'static str, &TensorArg),
        dtype: DType,
        why: &str,
    ) -> PyResult<Sym> {
        let sym = Sym::find(core, call, what, t)?;
        sym.expect(call, dtype, why)?;
        Ok(sym)
    }

    /// `t` for an op that reaches no peer: on `core`'s heap if it is there, else memory of the
    /// PE's device (checked when the op takes it, [`Sym::device`]). Memory that starts in a
    /// symmetric allocation and runs past its end is an error, as for [`Sym::find`].
    pub fn find_local(
        core: &PeCore,
        call: &str,
        what: &'static str,
        t: &TensorArg,
    ) -> PyResult<Sym> {
        let dtype = DType::parse(&t.2)?;
        let memory = match core.lookup(t.0, t.1) {
            Found::Inside(region, at) => Memory::Heap { region, at },
            Found::Outside => Memory::Device { addr: t.0 },
            Found::Straddles => return Err(core.straddles(call, what, t.0, t.1)),
        };
        Ok(Sym {
            memory,
            bytes: t.1,
            dtype,
            what,
        })
    }

    /// The heap memory, or an argument error (only [`Sym::find_local`] makes others).
    fn heap(&self) -> PyResult<(&Arc<dyn Region>, usize)> {
        match &self.memory {
            Memory::Heap { region, at } => Ok((region, *at)),
            Memory::Device { addr } => Err(arg(format!(
                "`{}` ({} bytes at {addr:#x}) is not on the symmetric heap",
                self.what, self.bytes
            ))),
        }
    }

    /// Its elements, as `T`s (a type of its element's size).
    pub fn range<T: Pod>(&self) -> PyResult<SymRange<'static, T>> {
        let (region, at) = self.heap()?;
        region
            .bytes(at, self.bytes)?
            .cast::<T>()
            .map_err(crate::error::to_py)
    }

    /// Its elements as `T`s, to write.
    pub fn range_mut<T: Pod>(&self) -> PyResult<SymRangeMut<'static, T>> {
        let (region, at) = self.heap()?;
        region
            .bytes_mut(at, self.bytes)?
            .cast::<T>()
            .map_err(crate::error::to_py)
    }

    /// Its elements as `T`s in the PE's device memory, symmetric or not: for ops that reach
    /// no peer.
    pub fn device<T: Pod>(&self, shmem: &Shmem) -> PyResult<DeviceRange<'static, T>> {
        match self.memory {
            Memory::Heap { .. } => Ok(self.range::<T>()?.into()),
            Memory::Device { addr } => {
                let len = self.elements::<T>()?;
                // SAFETY: the Python layer holds the tensor for the call (and, during
                // `rshmem.capture`, with the graph), launches on the simulator are
                // synchronous, and on GPUs the op is queued on torch's stream, whose order
                // torch's allocator keeps for the tensor's memory; `from_raw_parts` checks
                // the rest (alignment, and that it is this PE's device memory on GPUs).
                unsafe { DeviceRange::from_raw_parts(shmem, addr as *const T, len) }.or_raise()
            }
        }
    }

    /// [`Sym::device`], to write.
    pub fn device_mut<T: Pod>(&self, shmem: &Shmem) -> PyResult<DeviceRangeMut<'static, T>> {
        match self.memory {
            Memory::Heap { .. } => Ok(self.range_mut::<T>()?.into()),
            Memory::Device { addr } => {
                let len = self.elements::<T>()?;
                // SAFETY: as in `device`.
                unsafe { DeviceRangeMut::from_raw_parts(shmem, addr as *mut T, len) }.or_raise()
            }
        }
    }

    /// Its length in `T`s, or an argument error if its bytes are not whole `T`s.
    fn elements<T>(&self) -> PyResult<usize> {
        let size = size_of::<T>();
        if size == 0 || self.bytes % size != 0 {
            return Err(arg(format!(
                "`{}`: {} bytes are not whole {size}-byte elements",
                self.what, self.bytes
            )));
        }
        Ok(self.bytes / size)
    }

    /// An argument error unless it is of `dtype` (`call` and `why` say what needs it).
    pub fn expect(&self, call: &str, dtype: DType, why: &str) -> PyResult<()> {
        if self.dtype == dtype {
            return Ok(());
        }
        Err(arg(format!(
            "{call}: `{}` is {}, but {why} needs {}",
            self.what,
            self.dtype.name(),
            dtype.name()
        )))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_tensor_type, m)?)?;
    m.add_function(wrap_pyfunction!(set_capturing, m)?)
}
