//! Running a kernel grid: every simulated thread of every block at once, each on its own host
//! thread, with its context installed.

use std::format;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::context::{panic_message, Aborted, ThreadCtx};
use super::launch::{unflatten, BlockState, Launch, LaunchFailure, LaunchSpec, D3};
use super::world::World;

/// Stack of each simulated thread. GPU threads get about 1 KiB; this leaves room for debug
/// builds and panic reporting while keeping thousands of threads cheap in address space.
const THREAD_STACK: usize = 512 * 1024;

impl Launch<'_> {
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

impl World {
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
    use crate::contract::Dim3;
    use crate::sim::device;
    use std::collections::BTreeMap;
    use std::string::ToString;
    use std::sync::Mutex;
    use std::vec::Vec;

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
        let world = World::new(1, 4096).unwrap();
        let block = Dim3 { x: 3, y: 2, z: 2 };
        let seen = Mutex::new(Vec::new());
        world
            .launch(0, &spec(2, block, 0), &|| {
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
        let world = World::new(1, 4096).unwrap();
        let per_block = Mutex::new(BTreeMap::new());
        world
            .launch(0, &spec(3, Dim3 { x: 8, y: 1, z: 1 }, 100), &|| {
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
        let world = World::new(2, 4096).unwrap();
        let err = world
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
