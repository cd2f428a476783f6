//! Kernels run from a simulator library: a kernel crate built as a host `cdylib`
//! (`rshmem_builder::Builder::sim_library`) that a program loads at run time, so that the
//! simulator can run kernels the program was not compiled with (Python's
//! `rshmem.load_kernels`).
//!
//! Each `#[kernel]` of such a build exports `rshmem_sim_kernel_<name>`, a function returning
//! its [`SimExport`]. The library carries its own copy of this crate: the loading program's
//! copy sets up the simulated thread and hands the library the address of its context, which
//! the library's copy installs and reads. That is sound only where both copies lay out their
//! types alike, which [`ABI`] (this crate's source and the rustc that built it) vouches for.
//! Both sides grow and free the shared state (a failure's message, a rendezvous's lists), so
//! both must use the system allocator (Rust's default). Panics never unwind across the
//! boundary (each side has its own runtime): a panic comes back as text in a buffer the
//! caller owns.

use core::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::context::{panic_message, with, Aborted, ThreadCtx};
use crate::kernel::{Kernel, KernelArgs};

/// The fingerprint a library must match: this crate's version and source hash and the rustc
/// that built it (`build.rs`).
pub const ABI: &str = env!("RSHMEM_DEVICE_SIM_ABI");

/// The start of each exported symbol's name; the kernel's name follows.
pub const SYMBOL_PREFIX: &str = "rshmem_sim_kernel_";

/// A `&'static str` of the library, as C sees it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Text {
    ptr: *const u8,
    len: usize,
}

impl Text {
    const fn of(s: &'static str) -> Self {
        Self {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// The text, where it is UTF-8 (a library of another layout may hold anything).
    ///
    /// # Safety
    ///
    /// `self` is a field of a [`SimExport`] whose library stays loaded.
    pub unsafe fn get(&self) -> Option<&'static str> {
        // SAFETY: the caller's contract: `ptr` and `len` describe a static string of the
        // loaded library.
        core::str::from_utf8(unsafe { core::slice::from_raw_parts(self.ptr, self.len) }).ok()
    }
}

/// How a failure comes back from the library: the message, truncated to fit.
#[repr(C)]
pub struct Report {
    len: usize,
    text: [u8; 2048],
}

/// What a library's run returned.
const RETURNED: u32 = 0;
/// The thread stopped because its launch failed (recorded by whoever failed).
const ABORTED: u32 = 1;
/// The thread panicked: the report holds the message.
const PANICKED: u32 = 2;

type Run = unsafe extern "C" fn(*const c_void, *const *const c_void, usize, *mut Report) -> u32;

/// One kernel of a simulator library. `#[repr(C)]`, with the fingerprint first, so that a
/// library of another layout is recognised before anything else of it is read.
#[repr(C)]
pub struct SimExport {
    /// The library's [`ABI`].
    pub abi: Text,
    /// The kernel's name.
    pub name: Text,
    /// Its parameter list as written (`Kernel::SIGNATURE`).
    pub signature: Text,
    params: usize,
    run: Run,
}

// SAFETY: immutable static data (pointers to static strings and a function).
unsafe impl Sync for SimExport {}

impl SimExport {
    /// Kernel `K`'s export (what `#[kernel]` emits in a simulator library build).
    pub const fn of<K: Kernel>() -> Self {
        Self {
            abi: Text::of(ABI),
            name: Text::of(K::NAME),
            signature: Text::of(K::SIGNATURE),
            params: K::Args::COUNT,
            run: run_exported::<K>,
        }
    }

    /// Runs the kernel's body as the current simulated thread (the loading program's side):
    /// a failure inside the library becomes this thread's failure, with its message.
    ///
    /// # Safety
    ///
    /// As `Kernel::run_sim` and `KernelArgs::from_param_ptrs` for the library's kernel, and
    /// the library's [`ABI`] equals this crate's (checked when it was loaded).
    pub unsafe fn run(&self, params: &[*const c_void]) {
        let ctx = ThreadCtx::current_addr();
        with("SimExport::run", |current| {
            if params.len() != self.params {
                current.fail(std::format!(
                    "launched with {} arguments; the library's kernel takes {}",
                    params.len(),
                    self.params
                ));
            }
        });
        let mut report = Report {
            len: 0,
            text: [0; 2048],
        };
        // SAFETY: this function's contract; `ctx` is the current context of this thread, which
        // outlives the call, and `report` is ours.
        match unsafe { (self.run)(ctx, params.as_ptr(), params.len(), &mut report) } {
            RETURNED => {}
            ABORTED => std::panic::resume_unwind(std::boxed::Box::new(Aborted)),
            status => {
                let text = &report.text[..report.len.min(report.text.len())];
                let message = match status {
                    PANICKED => std::string::String::from_utf8_lossy(text).into_owned(),
                    _ => std::format!("the simulator library returned status {status}"),
                };
                with("SimExport::run", |current| current.fail(message))
            }
        }
    }
}

/// The library's side of [`SimExport::run`].
unsafe extern "C" fn run_exported<K: Kernel>(
    ctx: *const c_void,
    params: *const *const c_void,
    count: usize,
    report: *mut Report,
) -> u32 {
    // SAFETY: `ctx` is the calling thread's context, made by a copy of this crate of the same
    // layout (the loader checked `ABI`), and outlives this call.
    let _installed = unsafe { ThreadCtx::install_addr(ctx) };
    let body = || {
        // SAFETY: `params` holds `count` pointers (`SimExport::run` checked the count), each
        // to its argument; the kernel's contract is the launcher's.
        unsafe {
            let params = core::slice::from_raw_parts(params, count);
            K::run_sim(K::Args::from_param_ptrs(params))
        }
    };
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(()) => RETURNED,
        Err(payload) if payload.is::<Aborted>() => ABORTED,
        Err(payload) => {
            let message = panic_message(&*payload);
            // SAFETY: `report` is the caller's, valid for writes for this call.
            let report = unsafe { &mut *report };
            let mut len = message.len().min(report.text.len());
            while !message.is_char_boundary(len) {
                len -= 1;
            }
            report.text[..len].copy_from_slice(&message.as_bytes()[..len]);
            report.len = len;
            PANICKED
        }
    }
}

/// Exports a kernel from a simulator library build (`--cfg rshmem_sim_export`, set by
/// rshmem-builder for that build alone); `#[kernel]` invokes it beside every kernel.
#[cfg(rshmem_sim_export)]
#[doc(hidden)]
#[macro_export]
macro_rules! __sim_export {
    ($kernel:ident, $symbol:literal) => {
        const _: () = {
            #[export_name = $symbol]
            extern "C" fn export() -> &'static $crate::sim::SimExport {
                static EXPORT: $crate::sim::SimExport = $crate::sim::SimExport::of::<$kernel>();
                &EXPORT
            }
        };
    };
}

/// Outside a simulator library build, kernels export nothing.
#[cfg(not(rshmem_sim_export))]
#[doc(hidden)]
#[macro_export]
macro_rules! __sim_export {
    ($kernel:ident, $symbol:literal) => {};
}
