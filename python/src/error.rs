//! rshmem's errors as Python exceptions: `rshmem.RshmemError` (a `RuntimeError`), and
//! `rshmem.ArgumentError` (a subclass) for arguments refused before anything was queued. Each
//! carries rshmem's message; a failed PE's error also its number (`.pe`).

use pyo3::prelude::*;
use pyo3::PyErr;
use rshmem_host::Error;

pyo3::create_exception!(
    _native,
    RshmemError,
    pyo3::exceptions::PyRuntimeError,
    "An error of rshmem (its message says what was expected, what was found and the fix)."
);
pyo3::create_exception!(
    _native,
    ArgumentError,
    RshmemError,
    "Arguments rshmem refused before queueing anything (shapes, lengths, dtypes, buffers)."
);

/// rshmem's `Error` as the Python exception of its kind.
pub fn to_py(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::InvalidArgument { .. }
        | Error::LengthMismatch { .. }
        | Error::Unsupported { .. } => ArgumentError::new_err(message),
        Error::PeFailed { pe, .. } => with_pe(RshmemError::new_err(message), pe),
        _ => RshmemError::new_err(message),
    }
}

/// `err` with the attribute `pe` set to the PE it names.
pub fn with_pe(err: PyErr, pe: usize) -> PyErr {
    Python::attach(|py| {
        // Setting an attribute on a fresh exception object cannot fail in practice; if it did,
        // the message still names the PE.
        let _ = err.value(py).setattr("pe", pe);
    });
    err
}

/// An argument error with `message`, raised before anything is queued.
pub fn arg(message: impl Into<String>) -> PyErr {
    ArgumentError::new_err(message.into())
}

/// `Result<T, Error>` → `PyResult<T>`.
pub trait OrRaise<T> {
    /// The value, or the error as its Python exception.
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, Error> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
