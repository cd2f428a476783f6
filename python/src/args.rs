//! Tensors as the Python layer passes them to an op: `(address, bytes, dtype)` of a contiguous
//! tensor (the Python side refuses non-contiguous views first), found back as the symmetric
//! range it is ([`PeCore::find`]), typed.

use crate::dtype::DType;
use crate::error::arg;
use crate::pe::{PeCore, Region};
use pyo3::prelude::*;
use rshmem_host::{Pod, SymRange, SymRangeMut};
use std::sync::Arc;

/// A tensor argument: its data's address, its size in bytes and its element type's name.
#[derive(FromPyObject, Clone, Debug)]
pub struct TensorArg(pub u64, pub usize, pub String);

/// A tensor argument found on the symmetric heap: what holds it (kept alive while the op
/// uses it), where it starts there, how long it is, of which type.
pub struct Sym {
    region: Arc<dyn Region>,
    at: usize,
    pub bytes: usize,
    pub dtype: DType,
    what: &'static str,
}

impl Sym {
    /// `t` (the argument named `what` of `call`) on `core`'s heap.
    pub fn find(core: &PeCore, call: &str, what: &'static str, t: &TensorArg) -> PyResult<Sym> {
        let dtype = DType::parse(&t.2)?;
        let (region, at) = core.find(call, what, t.0, t.1)?;
        Ok(Sym {
            region,
            at,
            bytes: t.1,
            dtype,
            what,
        })
    }

    /// Its elements, as `T`s (a type of its element's size).
    pub fn range<T: Pod>(&self) -> PyResult<SymRange<'static, T>> {
        self.region
            .bytes(self.at, self.bytes)?
            .cast::<T>()
            .map_err(crate::error::to_py)
    }

    /// Its elements as `T`s, to write.
    pub fn range_mut<T: Pod>(&self) -> PyResult<SymRangeMut<'static, T>> {
        self.region
            .bytes_mut(self.at, self.bytes)?
            .cast::<T>()
            .map_err(crate::error::to_py)
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
