//! A GPU PE's on-stream operations: NVSHMEM's `nvshmemx_*_on_stream` puts, gets, barriers
//! and collectives, queued under the NVSHMEM lock and remembered as the stream's pending work
//! (or recorded, on a stream that records a graph).
//!
//! What NVSHMEM 3.4.5 does on the stream decides what a graph can record: puts and gets
//! between mapped PEs are device copies (`cudaMemcpyAsync` on the stream), through a proxy
//! kernel otherwise; barriers and collectives are kernels, which ask `cudaStreamIsCapturing`
//! and adapt (a system fence inside the barrier kernel, the same team's duplicates prepared at
//! initialisation): all recordable. The exception is `nvshmemx_barrier_all_on_stream` in
//! limited multi-process-per-GPU mode, which meets the PEs sharing the GPU with a host-side
//! barrier and waits on their IPC events at the call: a graph would record neither, so it is
//! refused on a recording stream there.

use super::super::nvshmem::{result as nv, sys};
use super::state::{limited_mpg_remedy, lock, GpuPe, PeShared};
use super::teams::c_int_of;
use crate::contract::{CollOp, ElemKind, Error, OnStreamBackend, Result, StreamId};
use rshmem_device::shmem::{ReduceOp, Team};

impl PeShared {
    /// Queues an NVSHMEM on-stream operation `call` on stream `id` under the NVSHMEM lock; a
    /// fault in it is reported as `call`'s by the next synchronisation.
    pub(super) fn on_stream(
        &self,
        call: &'static str,
        id: StreamId,
        f: impl FnOnce(&'static sys::Lib, cudarc::driver::sys::CUstream) -> Result<()>,
    ) -> Result<()> {
        let stream = self.stream(id);
        let _serial = lock(&self.serial);
        self.ctx().bind()?;
        f(self.lib(), stream.raw())?;
        self.queued(id, call, || None);
        Ok(())
    }
}

/// Where `op` is in `sys::REDUCE_OPS` (and so in a `TypedColls` reduction table).
fn reduce_op_index(op: ReduceOp) -> usize {
    // `ReduceOp`'s variants are declared in the order of `sys::REDUCE_OPS` (tested below).
    op as usize
}

impl OnStreamBackend for GpuPe {
    fn rma_on_stream(
        &self,
        id: StreamId,
        put: bool,
        dest: u64,
        src: u64,
        bytes: usize,
        pe: usize,
    ) -> Result<()> {
        let call = if put {
            "nvshmemx_putmem_on_stream"
        } else {
            "nvshmemx_getmem_on_stream"
        };
        self.shared.on_stream(call, id, |lib, stream| {
            // SAFETY: `Stream` checked both ranges to lie in live symmetric buffers of this PE
            // (device memory of its GPU, freed only after a synchronisation) and `pe` to be a
            // PE of the job; the stream is on NVSHMEM's context.
            unsafe { nv::rma_on_stream(lib, put, dest, src, bytes, pe, stream) };
            Ok(())
        })
    }

    fn put_signal_on_stream(
        &self,
        id: StreamId,
        dest: u64,
        src: u64,
        bytes: usize,
        sig: u64,
        value: u64,
        pe: usize,
    ) -> Result<()> {
        self.shared
            .on_stream("nvshmemx_putmem_signal_on_stream", id, |lib, stream| {
                // SAFETY: `Stream` checked the ranges (inside live symmetric buffers of this
                // PE, freed only after a synchronisation), `sig` (one aligned `u64` of a live
                // symmetric buffer) and `pe` (a PE of the job); the stream is on NVSHMEM's
                // context.
                unsafe { nv::put_signal_on_stream(lib, dest, src, bytes, sig, value, pe, stream) };
                Ok(())
            })
    }

    fn barrier_all_on_stream(&self, id: StreamId) -> Result<()> {
        if self.shared.limited_mpg() && self.shared.recording(id) {
            return Err(Error::Unsupported {
                call: "barrier_all_on_stream",
                reason: format!(
                    "in a graph capture in NVSHMEM's limited multi-process-per-GPU mode: there \
                     NVSHMEM meets the PEs sharing the GPU with a host-side barrier when the \
                     call is made, which a graph cannot record. Queue the barrier outside the \
                     capture; {}",
                    limited_mpg_remedy()
                ),
            });
        }
        self.shared
            .on_stream("nvshmemx_barrier_all_on_stream", id, |lib, stream| {
                // SAFETY: NVSHMEM is initialised, the stream is on its context, and every PE
                // queues its barriers in the same order (the contract of the caller).
                unsafe { nv::barrier_all_on_stream(lib, stream) };
                Ok(())
            })
    }

    fn barrier_on_stream(&self, id: StreamId, team: Team) -> Result<()> {
        let sh = &*self.shared;
        sh.require_host_collectives("barrier_on_stream")?;
        sh.on_stream("nvshmemx_barrier_on_stream", id, |lib, stream| {
            // SAFETY: as in `barrier_all_on_stream`, over a team this PE holds and is a
            // member of; not in limited MPG mode (checked above).
            unsafe { nv::barrier_on_stream(lib, team.raw(), stream) }
        })
    }

    fn collective_on_stream(
        &self,
        id: StreamId,
        team: Team,
        op: CollOp,
        elem: ElemKind,
        dest: u64,
        src: u64,
        n: usize,
    ) -> Result<()> {
        let sh = &*self.shared;
        let call = op.call();
        sh.require_host_collectives(call)?;
        let colls = sh
            .lib()
            .colls
            .iter()
            .find(|c| c.ty == elem.nvshmem_name())
            .ok_or_else(|| Error::NvshmemLoad {
                path: sh.nvshmem.path().to_path_buf(),
                message: format!("no collectives of {} were loaded", elem.nvshmem_name()),
            })?;
        let coll = match op {
            CollOp::Broadcast { root } => nv::TypedColl::Broadcast {
                root: c_int_of(call, "root", root)?,
            },
            CollOp::Fcollect => nv::TypedColl::Fcollect,
            CollOp::Alltoall => nv::TypedColl::Alltoall,
            CollOp::Reduce(op) => nv::TypedColl::Reduce {
                op: reduce_op_index(op),
            },
            CollOp::ReduceScatter(op) => nv::TypedColl::ReduceScatter {
                op: reduce_op_index(op),
            },
        };
        sh.on_stream(call, id, |_, stream| {
            // SAFETY: not in limited MPG mode (checked above); `Shmem` checked the team (held,
            // this PE a member), the slices (inside live symmetric buffers of `elem`
            // elements, lengths fitting the collective for `n` on this team, not
            // overlapping) and the root; every member queues it at the same point (the
            // caller's contract).
            unsafe { nv::collective_on_stream(colls, coll, team.raw(), dest, src, n, stream) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_ops_index_nvshmems_names() {
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Min,
            ReduceOp::Max,
            ReduceOp::And,
            ReduceOp::Or,
            ReduceOp::Xor,
        ];
        for op in ops {
            let name = sys::REDUCE_OPS[reduce_op_index(op)];
            assert_eq!(name, format!("{op:?}").to_lowercase());
        }
    }
}
