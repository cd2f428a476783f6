//! One simulated PE ([`SimPe`]): the backend contract over the job of `rshmem_device::sim`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rshmem_device::shmem::Team;
use rshmem_device::sim::{Coll, CollectiveError, HeapError, HostOpError, World};

use super::config::SimConfig;
use super::graph::Capture;
use super::module::SimModule;
use crate::contract::{
    BoxError, Checked, CollOp, DeviceInfo, ElemKind, Error, GraphBackend, GraphExecBackend,
    HeapBackend, KernelImage, ModuleBackend, OnStreamBackend, PeBackend, Result, StreamBackend,
    StreamId, TeamBackend, TiledSpec,
};

/// One PE of a simulated job, as the host runtime sees it.
pub(crate) struct SimPe {
    pub job: Arc<World>,
    pub pe: usize,
    pub config: SimConfig,
    /// The last stream id handed out: ids are only names here, since every stream's work
    /// runs when it is queued (see `crate::stream`).
    pub last_stream: AtomicU32,
    /// The graph capture, shared with the PE's modules.
    pub capture: Arc<Capture>,
}

/// Turns a failed rendezvous into this PE's error.
fn collective_error(pe: usize, op: &'static str, e: CollectiveError) -> Error {
    match e {
        CollectiveError::PeFailed { pe, reason } => Error::PeFailed { pe, reason },
        other => Error::Collective {
            op,
            pe,
            message: other.to_string(),
        },
    }
}

/// Turns a failed host-side operation into this PE's error.
fn host_op_error(pe: usize, call: &'static str, e: HostOpError) -> Error {
    match e {
        HostOpError::Collective(e) => collective_error(pe, call, e),
        HostOpError::Invalid(message) => Error::InvalidArgument { call, message },
    }
}

/// Runs `$body` with `$t` the Rust type of element kind `$kind`.
macro_rules! with_elem_type {
    ($kind:expr, $t:ident => $body:expr) => {
        match $kind {
            ElemKind::I32 => {
                type $t = i32;
                $body
            }
            ElemKind::U32 => {
                type $t = u32;
                $body
            }
            ElemKind::I64 => {
                type $t = i64;
                $body
            }
            ElemKind::U64 => {
                type $t = u64;
                $body
            }
            ElemKind::F32 => {
                type $t = f32;
                $body
            }
            ElemKind::F64 => {
                type $t = f64;
                $body
            }
        }
    };
}

impl SimPe {
    fn heap(&self) -> &rshmem_device::sim::SymHeap {
        self.job.heap(self.pe)
    }

    /// Runs on-stream operation `op` now, or records it if `stream` records a graph.
    fn queue(
        &self,
        stream: StreamId,
        op: impl Fn() -> Result<()> + Send + Sync + 'static,
    ) -> Result<()> {
        match self.capture.record(stream, op) {
            Ok(()) => Ok(()),
            Err(op) => op(),
        }
    }

    /// Checks that every PE asks for the same size from the same heap state; every PE
    /// reaches the same verdict, so all fail or none does.
    fn check_symmetric(&self, bytes: usize) -> Result<()> {
        let mine = self.heap().summary();
        let all = self
            .job
            .all_gather(
                self.pe,
                "alloc",
                [bytes as u64, mine.count, mine.bytes, mine.fingerprint],
            )
            .map_err(|e| collective_error(self.pe, "alloc", e))?;
        let others: Vec<(usize, usize)> = all
            .iter()
            .enumerate()
            .filter(|(_, v)| v[0] != bytes as u64)
            .map(|(q, v)| (q, v[0] as usize))
            .collect();
        if !others.is_empty() {
            return Err(Error::AsymmetricAlloc {
                pe: self.pe,
                mine: bytes,
                others,
            });
        }
        let state = [mine.count, mine.bytes, mine.fingerprint];
        let differing: Vec<String> = all
            .iter()
            .enumerate()
            .filter(|(_, v)| v[1..] != state)
            .map(|(q, v)| {
                let at = if v[1..3] == state[..2] {
                    " at other offsets"
                } else {
                    ""
                };
                format!("PE {q} holds {} ({} bytes){at}", v[1], v[2])
            })
            .collect();
        if !differing.is_empty() {
            return Err(Error::Collective {
                op: "alloc",
                pe: self.pe,
                message: format!(
                    "the symmetric heaps differ before this allocation: this PE holds {} buffer(s) ({} bytes), \
                     but {}; every PE must allocate and free the same buffers in the same order",
                    mine.count,
                    mine.bytes,
                    differing.join(", ")
                ),
            });
        }
        Ok(())
    }
}

impl PeBackend for SimPe {
    fn my_pe(&self) -> usize {
        self.pe
    }

    fn n_pes(&self) -> usize {
        self.job.n_pes()
    }

    fn barrier_all(&self) -> Result<()> {
        self.job
            .barrier(self.pe, "barrier_all")
            .map_err(|e| collective_error(self.pe, "barrier_all", e))
    }

    fn load(&self, _image: &KernelImage) -> Result<Box<dyn ModuleBackend>> {
        // The kernels are compiled into this program; the image's PTX and NVSHMEM version
        // matter only on GPUs, and `Module::launch` checks each kernel is in the image.
        Ok(Box::new(SimModule::new(
            Arc::clone(&self.job),
            self.pe,
            self.config.max_threads,
            Arc::clone(&self.capture),
        )))
    }

    fn device_info(&self) -> DeviceInfo {
        DeviceInfo::SIM
    }

    fn encode_tensor_map(
        &self,
        spec: &TiledSpec<'_>,
        c: &Checked,
    ) -> Result<rshmem_device::hopper::TensorMap> {
        Ok(rshmem_device::sim::encode_tensor_map(
            spec.ty,
            c.rank,
            spec.global as u64,
            c.dims,
            c.strides,
            c.box_dims,
            spec.swizzle,
        ))
    }

    fn finish(&self, outcome: Result<(), BoxError>) -> Result<(), BoxError> {
        // Launches run to completion and report their failure before returning: nothing is
        // left to wait for.
        outcome
    }
}

impl HeapBackend for SimPe {
    fn alloc(&self, bytes: usize, init: Option<&[u8]>) -> Result<u64> {
        self.check_symmetric(bytes)?;
        // Identical heaps and requests: every PE gets the same offset, or the same error.
        let offset = self.heap().alloc(bytes).map_err(|e| match e {
            HeapError::Exhausted {
                requested,
                available,
                heap_size,
            } => Error::HeapExhausted {
                var: self.config.heap_var(),
                requested,
                available,
                heap_size,
            },
            HeapError::Reserve { size } => Error::HeapExhausted {
                var: self.config.heap_var(),
                requested: bytes,
                available: 0,
                heap_size: size,
            },
        })?;
        match init {
            Some(data) => self
                .heap()
                .write(self.heap().base() as usize + offset, data)
                .unwrap_or_else(|why| panic!("rshmem simulator: alloc_from fill failed: {why}")),
            None => self.heap().zero(offset, bytes),
        }
        // Nobody may touch a peer's new buffer before the peer has filled it.
        if let Err(e) = self.job.barrier(self.pe, "alloc") {
            self.heap().free(offset);
            return Err(collective_error(self.pe, "alloc", e));
        }
        Ok((self.heap().base() as usize + offset) as u64)
    }

    fn free(&self, addr: u64) {
        // Local: a later alloc synchronises all PEs before reusing the space, so no peer
        // can still be using it then (NVSHMEM's free has its own barrier; this one runs from
        // `Drop`, also while a failing PE unwinds, where a collective could not complete).
        // An address `alloc` did not return wraps to an offset `free` reports as not live.
        self.heap()
            .free((addr as usize).wrapping_sub(self.heap().base() as usize))
    }

    fn copy_to_host(&self, addr: u64, dst: &mut [u8]) -> Result<()> {
        self.heap()
            .read(addr as usize, dst)
            .unwrap_or_else(|why| panic!("rshmem simulator: SymBuffer read failed: {why}"));
        Ok(())
    }

    fn copy_from_host(&self, addr: u64, src: &[u8]) -> Result<()> {
        self.heap()
            .write(addr as usize, src)
            .unwrap_or_else(|why| panic!("rshmem simulator: SymBuffer write failed: {why}"));
        Ok(())
    }

    fn check_device_memory(&self, _addr: u64, _bytes: usize) -> std::result::Result<(), String> {
        // Kernels run on host memory here, and any host memory is as good as the heap.
        Ok(())
    }
}

impl StreamBackend for SimPe {
    fn synchronize(&self) -> Result<()> {
        // Launches run to completion and report their failure before returning.
        Ok(())
    }

    fn create_stream(&self) -> Result<StreamId> {
        Ok(StreamId(
            self.last_stream.fetch_add(1, Ordering::Relaxed) + 1,
        ))
    }

    unsafe fn adopt_stream(&self, _raw: u64) -> Result<StreamId> {
        self.create_stream()
    }

    fn destroy_stream(&self, _stream: StreamId) {}

    fn synchronize_stream(&self, _stream: StreamId) -> Result<()> {
        Ok(())
    }

    fn stream_is_captured(&self, _stream: StreamId) -> Result<bool> {
        Ok(false)
    }

    fn stream_wait(&self, waiter: StreamId, on: StreamId) -> Result<()> {
        // What `on` was given has run already, or is recorded: then `waiter` records too.
        self.capture.wait(waiter, on);
        Ok(())
    }

    fn time(&self, _stream: StreamId, f: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        let start = Instant::now();
        f()?;
        Ok(start.elapsed())
    }
}

impl TeamBackend for SimPe {
    /// The job's split: a rendezvous over the parent even for invalid arguments, so that
    /// members that passed different ones are told so, and all fail alike.
    fn team_split_strided(
        &self,
        parent: Team,
        triplet: [usize; 3],
        verdict: Result<()>,
    ) -> Result<Team> {
        const CALL: &str = "team_split_strided";
        let args = triplet.map(|v| v as u64);
        let split = self
            .job
            .team_split(self.pe, parent.raw(), args, verdict.is_ok())
            .map_err(|e| collective_error(self.pe, CALL, e))?;
        let (shape, _) = self
            .job
            .team_view(self.pe, parent.raw())
            .map_err(|e| collective_error(self.pe, CALL, e))?;
        let show = |a: &[u64]| format!("(start {}, stride {}, size {})", a[0], a[1], a[2]);
        let differing: Vec<String> = split
            .args
            .iter()
            .enumerate()
            .filter(|(_, a)| a[..3] != args)
            .map(|(rank, a)| format!("PE {} passed {}", shape.pe(rank), show(a)))
            .collect();
        if !differing.is_empty() {
            return Err(Error::Collective {
                op: CALL,
                pe: self.pe,
                message: format!(
                    "this PE passed {}, but {}; every member of the parent team must pass the \
                     same arguments",
                    show(&args),
                    differing.join(", ")
                ),
            });
        }
        verdict?;
        Ok(Team::from_raw(split.team))
    }

    fn team_destroy(&self, team: Team) {
        self.job.team_destroy(self.pe, team.raw())
    }

    fn team_my_pe(&self, team: Team) -> Option<usize> {
        self.job.team_view(self.pe, team.raw()).ok()?.1
    }

    fn team_n_pes(&self, team: Team) -> usize {
        self.job
            .team_view(self.pe, team.raw())
            .map_or(0, |(shape, _)| shape.size)
    }

    fn team_translate_pe(&self, src: Team, pe: usize, dest: Team) -> Option<usize> {
        let (from, _) = self.job.team_view(self.pe, src.raw()).ok()?;
        let (to, _) = self.job.team_view(self.pe, dest.raw()).ok()?;
        (pe < from.size).then(|| to.rank_of(from.pe(pe))).flatten()
    }
}

impl GraphBackend for SimPe {
    fn begin_capture(&self, stream: StreamId) -> Result<()> {
        self.capture.begin(stream)
    }

    fn end_capture(&self, stream: StreamId) -> Result<Box<dyn GraphExecBackend>> {
        self.capture.end(stream)
    }
}

/// Each operation runs now, or is recorded (a closure owning its arguments) to run at each
/// launch of the graph.
impl OnStreamBackend for SimPe {
    fn rma_on_stream(
        &self,
        stream: StreamId,
        put: bool,
        dest: u64,
        src: u64,
        bytes: usize,
        target: usize,
    ) -> Result<()> {
        let (job, pe, dest, src) = (Arc::clone(&self.job), self.pe, dest as usize, src as usize);
        self.queue(stream, move || {
            let (call, done) = if put {
                ("put_on_stream", job.put(pe, dest, src, bytes, target))
            } else {
                ("get_on_stream", job.get(pe, dest, src, bytes, target))
            };
            done.map_err(|message| Error::InvalidArgument { call, message })
        })
    }

    fn put_signal_on_stream(
        &self,
        stream: StreamId,
        dest: u64,
        src: u64,
        bytes: usize,
        sig: u64,
        value: u64,
        target: usize,
    ) -> Result<()> {
        let (job, pe) = (Arc::clone(&self.job), self.pe);
        let data = (dest as usize, src as usize, bytes);
        self.queue(stream, move || {
            job.put_signal(pe, data, (sig as usize, value), target)
                .map_err(|message| Error::InvalidArgument {
                    call: "put_signal_on_stream",
                    message,
                })
        })
    }

    fn barrier_all_on_stream(&self, stream: StreamId) -> Result<()> {
        let (job, pe) = (Arc::clone(&self.job), self.pe);
        self.queue(stream, move || {
            job.barrier(pe, "barrier_all_on_stream")
                .map_err(|e| collective_error(pe, "barrier_all_on_stream", e))
        })
    }

    fn barrier_on_stream(&self, stream: StreamId, team: Team) -> Result<()> {
        let (job, pe) = (Arc::clone(&self.job), self.pe);
        self.queue(stream, move || {
            job.team_barrier(pe, team.raw(), "barrier_on_stream")
                .map_err(|e| collective_error(pe, "barrier_on_stream", e))
        })
    }

    fn collective_on_stream(
        &self,
        stream: StreamId,
        team: Team,
        op: CollOp,
        elem: ElemKind,
        dest: u64,
        src: u64,
        n: usize,
    ) -> Result<()> {
        let coll = match op {
            CollOp::Broadcast { root } => Coll::Broadcast { root },
            CollOp::Fcollect => Coll::Fcollect,
            CollOp::Alltoall => Coll::Alltoall,
            CollOp::Reduce(op) => Coll::Reduce(op),
            CollOp::ReduceScatter(op) => Coll::ReduceScatter(op),
        };
        let (job, pe, team, dest, src) = (
            Arc::clone(&self.job),
            self.pe,
            team.raw(),
            dest as usize,
            src as usize,
        );
        self.queue(stream, move || {
            with_elem_type!(elem, T => job.collective::<T>(pe, team, coll, dest, src, n))
                .map_err(|e| host_op_error(pe, coll.name(), e))
        })
    }
}
