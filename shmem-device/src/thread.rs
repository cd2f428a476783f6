//! Thread, block and grid coordinates, and block-wide synchronisation, shaped like
//! Rust-CUDA's `cuda_std::thread`.

use crate::backend;

pub use crate::contract::Dim3;

/// `a · b + c` rounded once (`fma.rn.f32`, one FFMA; the simulator computes the same). Rust
/// never contracts `a * b + c` into one instruction, so loops that scale and add per element
/// (a mainloop's promotion, an epilogue) call this to get FFMA instead of FMUL + FADD.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    backend::fma_f32(a, b, c)
}

/// This thread's index within its block (`threadIdx`).
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    backend::thread_idx()
}

/// This block's index within the grid (`blockIdx`).
#[inline(always)]
pub fn block_idx() -> Dim3 {
    backend::block_idx()
}

/// The extent of a block (`blockDim`).
#[inline(always)]
pub fn block_dim() -> Dim3 {
    backend::block_dim()
}

/// The extent of the grid in blocks (`gridDim`).
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    backend::grid_dim()
}

/// `threadIdx.x`.
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    thread_idx().x
}

/// `blockIdx.x`.
#[inline(always)]
pub fn block_idx_x() -> u32 {
    block_idx().x
}

/// `blockDim.x`.
#[inline(always)]
pub fn block_dim_x() -> u32 {
    block_dim().x
}

/// `gridDim.x`.
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    grid_dim().x
}

/// The flat index of this thread in a 1-D launch: `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
pub fn index_1d() -> u32 {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// The flat thread index within the block, over all three dimensions.
#[inline(always)]
pub fn thread_rank_in_block() -> u32 {
    let (t, d) = (thread_idx(), block_dim());
    (t.z * d.y + t.y) * d.x + t.x
}

/// Total number of threads in a 1-D grid: `gridDim.x * blockDim.x`.
#[inline(always)]
pub fn grid_size_1d() -> u32 {
    grid_dim_x() * block_dim_x()
}

/// Block-wide barrier (`__syncthreads()`): every thread of the block must reach it.
///
/// On the simulator, a thread that leaves the kernel while others wait here is reported as
/// an error naming the kernel, PE, block and thread.
#[inline(always)]
pub fn sync_threads() {
    backend::sync_threads()
}

/// This block's dynamic shared memory as `T`s: the pointer and how many whole `T`s fit in
/// the `shared_mem_bytes` the launch asked for. The memory is uninitialised on GPUs (zeroed
/// on the simulator) and shared by every thread of the block.
#[inline(always)]
pub fn dynamic_shared<T>() -> (*mut T, usize) {
    let (base, bytes) = backend::dynamic_shared_mem();
    (base.cast(), bytes / core::mem::size_of::<T>().max(1))
}

/// Sleeps this thread for about `ns` nanoseconds (`nanosleep`; a hint, bounded by 1 ms).
#[inline(always)]
pub fn nanosleep(ns: u32) {
    backend::nanosleep(ns)
}

/// A per-SM cycle counter (`%clock64`); on the simulator, nanoseconds since an arbitrary start.
#[inline(always)]
pub fn clock64() -> u64 {
    backend::clock64()
}

/// The SM this thread runs on (`%smid`: it may change while a thread runs, in principle, and
/// the numbers need not be contiguous); 0 on the simulator, which has no SMs. For
/// diagnostics: which SMs a grid, or the grids of PEs sharing a GPU, occupied.
#[inline(always)]
pub fn sm_id() -> u32 {
    backend::sm_id()
}

/// A global nanosecond timer (`%globaltimer`), comparable across SMs.
#[inline(always)]
pub fn globaltimer_ns() -> u64 {
    backend::globaltimer_ns()
}

/// The pacing of a polling loop over memory that other threads or PEs write (a flag, or data
/// that carries its own flag): call [`Poll::pause`] after each poll that did not see what it
/// waits for.
///
/// On a GPU the first polls go at full speed and later ones sleep a little (`nanosleep`). On
/// the simulator, where every GPU thread is a host thread, it yields the host thread, and it
/// ends the wait with an error naming `what` when another PE of the job failed (blaming it)
/// or when the wait ran past `RSHMEM_SIM_WAIT_TIMEOUT`, as `shmem::wait_until` does there.
///
/// ```ignore
/// let mut poll = thread::Poll::new();
/// while unsafe { atomic::load::<Sys, u32>(flag, Ordering::Acquire) } != 1 {
///     poll.pause("waiting for the producer's flag");
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Poll {
    polls: u32,
    start_ns: u64,
}

impl Poll {
    /// A poll that starts now.
    #[inline(always)]
    pub fn new() -> Self {
        Poll {
            polls: 0,
            start_ns: backend::globaltimer_ns(),
        }
    }

    /// Paces the next poll; on the simulator, may end the thread as described above.
    #[inline(always)]
    pub fn pause(&mut self, what: &'static str) {
        backend::poll_pause(what, self.polls, self.start_ns);
        self.polls = self.polls.saturating_add(1);
    }
}

impl Default for Poll {
    fn default() -> Self {
        Self::new()
    }
}

/// Aborts the kernel: the host sees a launch failure naming it (on the simulator, a failure
/// naming kernel, PE, block and thread).
#[inline(always)]
pub fn trap() -> ! {
    backend::trap()
}
