//! One launch's shared state: what was launched, its blocks (their barriers and shared
//! memory), the PE's allocations as it started, and its first failure. Running the grid is
//! `run`.

use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::string::{String, ToString};
use std::sync::Mutex;
use std::vec::Vec;

use super::barrier::Group;
use super::sym_heap::Span;
use super::world::World;
use crate::contract::{Dim3, WARP_SIZE};

/// What to launch. Simulator internals, filled in by rshmem-host from a `LaunchConfig`.
#[derive(Clone, Copy, Debug)]
pub struct LaunchSpec {
    /// The kernel's name, for messages.
    pub kernel: &'static str,
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads per block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: usize,
}

/// Formats a [`Dim3`] as `(x, y, z)`.
pub(crate) struct D3(pub Dim3);

impl fmt::Display for D3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.0.x, self.0.y, self.0.z)
    }
}

/// The first failure of a launch: where it happened and what it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchFailure {
    /// The block of the failing thread.
    pub block: Dim3,
    /// The failing thread's index in its block.
    pub thread: Dim3,
    /// What happened.
    pub message: String,
}

impl fmt::Display for LaunchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "block {}, thread {}: {}",
            D3(self.block),
            D3(self.thread),
            self.message
        )
    }
}

/// Zeroed dynamic shared memory of one block, 16-byte aligned like the GPU's.
pub(crate) struct SharedMem {
    ptr: *mut u8,
    layout: Option<Layout>,
}

impl SharedMem {
    fn new(bytes: usize) -> Self {
        if bytes == 0 {
            return Self {
                ptr: core::ptr::NonNull::<u128>::dangling().as_ptr().cast(),
                layout: None,
            };
        }
        let layout = Layout::from_size_align(bytes, 16).expect("shared memory size fits a Layout");
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Self {
            ptr,
            layout: Some(layout),
        }
    }

    /// The block's dynamic shared memory and its size.
    pub fn get(&self) -> (*mut u8, usize) {
        (self.ptr, self.layout.map_or(0, |l| l.size()))
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        if let Some(layout) = self.layout {
            // SAFETY: allocated with this layout in `new`, freed once.
            unsafe { dealloc(self.ptr, layout) }
        }
    }
}

// SAFETY: the memory belongs to one block's threads, which synchronise their accesses
// themselves (with `sync_threads`), as on a GPU.
unsafe impl Send for SharedMem {}
// SAFETY: as above.
unsafe impl Sync for SharedMem {}

/// Shared state of one block.
pub(crate) struct BlockState {
    pub idx: Dim3,
    /// All threads of the block (`sync_threads`, block-scope calls).
    pub threads: Group,
    /// Its warps of [`WARP_SIZE`] consecutive ranks (warp-scope calls).
    pub warps: Vec<Group>,
    pub shared: SharedMem,
    /// Warpgroups and mbarriers (`crate::hopper`).
    pub hopper: super::hopper::state::BlockHopper,
}

/// One launch on one PE.
pub(crate) struct Launch<'j> {
    pub world: &'j World,
    pub pe: usize,
    pub spec: &'j LaunchSpec,
    /// The PE's live symmetric allocations when the launch started: the host side cannot
    /// change them while its launch runs, so threads check addresses without locking.
    pub spans: Vec<Span>,
    pub aborted: AtomicBool,
    pub failure: Mutex<Option<LaunchFailure>>,
    pub blocks: Vec<BlockState>,
}

/// The coordinates of flat index `i` in an extent `d` (x fastest).
pub(super) fn unflatten(i: u32, d: Dim3) -> Dim3 {
    Dim3 {
        x: i % d.x,
        y: i / d.x % d.y,
        z: i / (d.x * d.y),
    }
}

impl<'j> Launch<'j> {
    pub fn new(world: &'j World, pe: usize, spec: &'j LaunchSpec) -> Self {
        let threads = spec.block.size();
        let blocks = (0..spec.grid.size())
            .map(|b| BlockState {
                idx: unflatten(b, spec.grid),
                threads: Group::new("block", 0, threads),
                warps: (0..threads.div_ceil(WARP_SIZE))
                    .map(|w| {
                        let first = w * WARP_SIZE;
                        Group::new("warp", first, WARP_SIZE.min(threads - first))
                    })
                    .collect(),
                shared: SharedMem::new(spec.shared_mem_bytes),
                hopper: super::hopper::state::BlockHopper::new(threads),
            })
            .collect();
        Self {
            world,
            pe,
            spec,
            spans: world.heap(pe).spans(),
            aborted: AtomicBool::new(false),
            failure: Mutex::new(None),
            blocks,
        }
    }

    /// Keeps the first failure, aborts the launch (every waiting thread wakes and unwinds)
    /// and poisons the job's device-side collectives, which can no longer complete.
    pub fn record_failure(&self, block: Dim3, thread: Dim3, message: String) {
        let failure = LaunchFailure {
            block,
            thread,
            message,
        };
        let text = failure.to_string();
        {
            let mut first = self.failure.lock().unwrap_or_else(|e| e.into_inner());
            if first.is_some() {
                return;
            }
            *first = Some(failure);
        }
        self.aborted.store(true, SeqCst);
        for block in &self.blocks {
            block.threads.barrier.wake();
            block.warps.iter().for_each(|w| w.barrier.wake());
            block.hopper.wake();
        }
        self.world.poison_device(self.pe, self.spec.kernel, text);
    }
}
