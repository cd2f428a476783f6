//! Who the current host thread is, as a simulated GPU thread: its coordinates, block, launch
//! and PE. Every device function reads them from a thread-local set by the launch.

use core::cell::Cell;
use core::ptr;
use std::boxed::Box;
use std::format;
use std::string::String;

use super::barrier::{Call, Group, WaitError};
use super::launch::{BlockState, Launch, D3};
use super::world::World;
use crate::contract::{Dim3, WARP_SIZE};

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

    /// The current context as an address (null outside a simulated thread), for the copy of
    /// this crate inside a simulator library ([`super::export`]).
    pub fn current_addr() -> *const core::ffi::c_void {
        CURRENT.with(Cell::get).cast()
    }

    /// Makes the context at `addr` current until the guard drops: a simulator library's copy
    /// of this crate running a thread the loading program's copy set up.
    ///
    /// # Safety
    ///
    /// `addr` is [`ThreadCtx::current_addr`] of the same host thread, read by a copy of this
    /// crate with the same layout (same source and rustc: [`super::export::ABI`]), and that
    /// context outlives the guard.
    pub unsafe fn install_addr(addr: *const core::ffi::c_void) -> Installed {
        CURRENT.with(|c| c.set(addr.cast()));
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

    /// Waits at `group`'s barrier, turning a failed wait into this thread's failure.
    pub fn sync(&self, group: &Group, what: &str) {
        match group.barrier.wait(&self.launch.aborted) {
            Ok(()) => {}
            Err(WaitError::Aborted) => self.abort(),
            Err(WaitError::Divergent { exited, first }) => self.fail(format!(
                "divergent barrier: this thread waits in {what}, but {exited} thread(s) of its {} \
                 left the kernel without reaching it (the first: thread {}); every thread of the {} \
                 must reach each barrier the same number of times",
                group.kind,
                D3(group.thread_of(first, self.launch.spec.block)),
                group.kind,
            )),
        }
    }

    /// Makes `call` as member `member` of `group`: checks that every member passes the same
    /// arguments, waits for all, lets member 0 run `work`, and waits for all again, so every
    /// member returns after the work is done. NVSHMEM's warp and block variants also synchronise
    /// the group on entry and on exit.
    pub fn collective(&self, group: &Group, member: u32, call: Call, work: impl FnOnce()) {
        let mismatch = {
            let mut slot = group.call.lock().unwrap_or_else(|e| e.into_inner());
            match *slot {
                None => {
                    *slot = Some((call, member));
                    None
                }
                Some((first, _)) if first == call => None,
                Some((first, by)) => Some((first, by)),
            }
        };
        if let Some((first, by)) = mismatch {
            self.fail(format!(
                "this thread calls {}, but thread {} of its {} calls {}: every thread of the {} \
                 must make the same call with the same arguments",
                call.describe(),
                D3(group.thread_of(by, self.launch.spec.block)),
                group.kind,
                first.describe(),
                group.kind,
            ));
        }
        self.sync(group, call.op);
        if member == 0 {
            // Every member has compared its call (all arrived); clear it for the next one
            // before anyone can pass the second barrier.
            *group.call.lock().unwrap_or_else(|e| e.into_inner()) = None;
            work();
        }
        self.sync(group, call.op);
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
