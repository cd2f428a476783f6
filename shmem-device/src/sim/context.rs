//! Who the current host thread is, as a simulated GPU thread: its coordinates, block, launch
//! and PE. Every device function reads them from a thread-local set by the launch.

use core::cell::Cell;
use core::fmt;
use core::ptr;
use std::boxed::Box;
use std::format;
use std::string::String;

use super::barrier::Group;
use super::launch::{BlockState, Launch};
use super::{World, WARP_SIZE};
use crate::contract::Dim3;

std::thread_local! {
    /// The context of the simulated thread running on this host thread; null elsewhere.
    static CURRENT: Cell<*const ThreadCtx<'static>> = const { Cell::new(ptr::null()) };
}

/// The panic payload of a simulated thread that stops because its launch was aborted by
/// another thread's failure, or because it already recorded its own; the launch reports the
/// first failure and ignores these. Raised with `resume_unwind`, so the panic hook stays
/// silent.
pub(crate) struct Aborted;

/// One simulated thread.
pub(crate) struct ThreadCtx<'l> {
    pub launch: &'l Launch<'l>,
    pub block: &'l BlockState,
    /// Flat index in the block (`thread::thread_rank_in_block`).
    pub rank: u32,
    pub thread_idx: Dim3,
}

/// Formats a [`Dim3`] as `(x, y, z)`.
pub(crate) struct D3(pub Dim3);

impl fmt::Display for D3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.0.x, self.0.y, self.0.z)
    }
}

/// Resets the thread-local when the simulated thread ends, also by unwinding.
pub(crate) struct Installed(());

impl Drop for Installed {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(ptr::null()));
    }
}

impl<'l> ThreadCtx<'l> {
    /// Makes `self` the current context of this host thread until the guard drops.
    ///
    /// # Safety
    ///
    /// `self` must outlive the returned guard and must not move while it lives: the
    /// thread-local holds its address with the lifetime erased, and [`with`] hands out
    /// references only for the duration of a call.
    pub unsafe fn install(&self) -> Installed {
        let erased = (self as *const ThreadCtx<'l>).cast::<ThreadCtx<'static>>();
        CURRENT.with(|c| c.set(erased));
        Installed(())
    }

    pub fn world(&self) -> &'l World {
        self.launch.world
    }

    pub fn pe(&self) -> usize {
        self.launch.pe
    }

    /// This thread's warp and its lane in it.
    pub fn warp(&self) -> (&'l Group, u32) {
        (
            &self.block.warps[(self.rank / WARP_SIZE) as usize],
            self.rank % WARP_SIZE,
        )
    }

    /// Records `message` as this thread's failure (the launch keeps the first one), aborts
    /// the launch and unwinds this thread.
    pub fn fail(&self, message: String) -> ! {
        self.launch
            .record_failure(self.block.idx, self.thread_idx, message);
        std::panic::resume_unwind(Box::new(Aborted))
    }

    /// Unwinds this thread quietly: its launch has already failed elsewhere.
    pub fn abort(&self) -> ! {
        std::panic::resume_unwind(Box::new(Aborted))
    }
}

/// Runs `f` with the current simulated thread's context.
///
/// # Panics
///
/// Outside a simulated thread: `what` (the device function called) runs only in kernels.
pub(crate) fn with<R>(what: &str, f: impl for<'a> FnOnce(&'a ThreadCtx<'a>) -> R) -> R {
    let current = CURRENT.with(Cell::get);
    if current.is_null() {
        panic!(
            "rshmem_device::{what}() was called outside a kernel: device functions run only in a \
             kernel launched with `Module::launch`"
        );
    }
    // SAFETY: a non-null pointer was set by `install` on this thread, and its guard (which
    // lives on the same thread for as long as the context) clears it before the context
    // goes away; the reference given to `f` cannot escape the call (`R` cannot name `'a`).
    f(unsafe { &*current })
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn core::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        String::from("panicked (with a non-string payload)")
    }
}
