//! Running a kernel grid: every simulated thread of every block at once, each on its own host
//! thread.

use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::format;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::string::{String, ToString};
use std::sync::Mutex;
use std::vec::Vec;

use super::barrier::Group;
use super::context::{panic_message, Aborted, ThreadCtx, D3};
use super::heap::Span;
use super::{Job, WARP_SIZE};
use crate::thread::Dim3;

/// Stack of each simulated thread. GPU threads get about 1 KiB; this leaves room for debug
/// builds and panic reporting while keeping thousands of threads cheap in address space.
const THREAD_STACK: usize = 512 * 1024;

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
    pub hopper: super::hopper::BlockHopper,
}

/// One launch on one PE.
pub(crate) struct Launch<'j> {
    pub job: &'j Job,
    pub pe: usize,
    pub spec: &'j LaunchSpec,
    /// The PE's live symmetric allocations when the launch started: the host side cannot
    /// change them while its launch runs, so threads check addresses without locking.
    pub spans: Vec<Span>,
    pub aborted: AtomicBool,
    failure: Mutex<Option<LaunchFailure>>,
    blocks: Vec<BlockState>,
}

/// The coordinates of flat index `i` in an extent `d` (x fastest).
fn unflatten(i: u32, d: Dim3) -> Dim3 {
    Dim3 {
        x: i % d.x,
        y: i / d.x % d.y,
        z: i / (d.x * d.y),
    }
}

impl<'j> Launch<'j> {
    fn new(job: &'j Job, pe: usize, spec: &'j LaunchSpec) -> Self {
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
                hopper: super::hopper::BlockHopper::new(threads),
            })
            .collect();
        Self {
            job,
            pe,
            spec,
            spans: job.heap(pe).spans(),
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
        self.job.poison_device(self.pe, self.spec.kernel, text);
    }

    /// Runs one simulated thread to its end.
    fn run_thread(&self, block: &BlockState, rank: u32, body: &(dyn Fn() + Sync)) {
        let ctx = ThreadCtx {
            launch: self,
            block,
            rank,
            thread_idx: unflatten(rank, self.spec.block),
        };
        {
            // SAFETY: `ctx` lives on this stack frame, does not move, and outlives the guard.
            let _installed = unsafe { ctx.install() };
            if let Err(payload) = catch_unwind(AssertUnwindSafe(body)) {
                if !payload.is::<Aborted>() {
                    self.record_failure(block.idx, ctx.thread_idx, panic_message(&*payload));
                }
            }
        }
        // After any failure is recorded, so waiters see an abort rather than a divergence.
        block.threads.barrier.exit(rank);
        let (warp, lane) = ctx.warp();
        warp.barrier.exit(lane);
        block.hopper.exit(rank);
    }
}

impl Job {
    /// Runs `body` once per simulated thread of the grid `spec` on PE `pe`, all threads at
    /// once, and returns when every thread has finished: `Err` with the first failure (a
    /// panic, a bad address, a divergent barrier, a thread that could not be started).
    ///
    /// The caller checks the configuration (non-empty, within the thread limit): every
    /// thread is a host thread, so a huge grid costs that many threads.
    pub fn launch(
        &self,
        pe: usize,
        spec: &LaunchSpec,
        body: &(dyn Fn() + Sync),
    ) -> Result<(), LaunchFailure> {
        let launch = &Launch::new(self, pe, spec);
        let threads = spec.block.size();
        std::thread::scope(|s| {
            'spawn: for block in &launch.blocks {
                for rank in 0..threads {
                    let thread = unflatten(rank, spec.block);
                    let name = format!(
                        "rshmem-sim `{}` PE {pe} block {} thread {}",
                        spec.kernel,
                        D3(block.idx),
                        D3(thread)
                    );
                    let spawned = std::thread::Builder::new()
                        .name(name)
                        .stack_size(THREAD_STACK)
                        .spawn_scoped(s, move || launch.run_thread(block, rank, body));
                    if let Err(e) = spawned {
                        // Threads already started wake up aborted and end; the rest never start.
                        launch.record_failure(
                            block.idx,
                            thread,
                            format!(
                                "the host could not start this simulated thread ({e}); run fewer \
                                 threads per launch or raise the process's thread limit (ulimit -u)"
                            ),
                        );
                        break 'spawn;
                    }
                }
            }
        });
        let failure = launch.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.clone().map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::device;
    use std::collections::BTreeMap;

    fn spec(grid: u32, block: Dim3, shared: usize) -> LaunchSpec {
        LaunchSpec {
            kernel: "t",
            grid: Dim3 {
                x: grid,
                y: 1,
                z: 1,
            },
            block,
            shared_mem_bytes: shared,
        }
    }

    #[test]
    fn every_thread_runs_once_with_its_coordinates() {
        let job = Job::new(1, 4096).unwrap();
        let block = Dim3 { x: 3, y: 2, z: 2 };
        let seen = Mutex::new(Vec::new());
        job.launch(0, &spec(2, block, 0), &|| {
            let (b, t) = (device::block_idx(), device::thread_idx());
            assert_eq!((device::block_dim(), device::grid_dim().x), (block, 2));
            seen.lock().unwrap().push((b.x, t.x, t.y, t.z));
        })
        .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        let mut want = Vec::new();
        for b in 0..2 {
            for z in 0..2 {
                for y in 0..2 {
                    for x in 0..3 {
                        want.push((b, x, y, z));
                    }
                }
            }
        }
        want.sort();
        assert_eq!(seen, want);
    }

    #[test]
    fn shared_memory_is_per_block_zeroed_and_aligned() {
        let job = Job::new(1, 4096).unwrap();
        let per_block = Mutex::new(BTreeMap::new());
        job.launch(0, &spec(3, Dim3 { x: 8, y: 1, z: 1 }, 100), &|| {
            let (ptr, len) = device::dynamic_shared_mem();
            assert_eq!((len, ptr as usize % 16), (100, 0));
            let b = device::block_idx().x;
            // SAFETY: 100 bytes of this block's shared memory; each thread writes its own
            // byte, after reading its zero.
            unsafe {
                let mine = ptr.add(device::thread_idx().x as usize);
                assert_eq!(*mine, 0);
                *mine = 1;
            }
            let prev = per_block.lock().unwrap().insert(b, ptr as usize);
            assert!(prev.is_none_or(|p| p == ptr as usize));
        })
        .unwrap();
        let ptrs: std::collections::BTreeSet<_> =
            per_block.into_inner().unwrap().into_values().collect();
        assert_eq!(ptrs.len(), 3);
    }

    #[test]
    fn the_first_failure_is_reported_with_its_place() {
        let job = Job::new(2, 4096).unwrap();
        let err = job
            .launch(1, &spec(2, Dim3 { x: 4, y: 1, z: 1 }, 0), &|| {
                if device::block_idx().x == 1 && device::thread_idx().x == 2 {
                    panic!("on purpose");
                }
                device::sync_threads();
            })
            .unwrap_err();
        assert_eq!((err.block.x, err.thread.x), (1, 2));
        assert_eq!(err.message, "panicked: on purpose");
        assert_eq!(
            err.to_string(),
            "block (1, 0, 0), thread (2, 0, 0): panicked: on purpose"
        );
    }
}
