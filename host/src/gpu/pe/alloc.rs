//! A GPU PE's symmetric heap: the size exchange that lets every PE refuse an allocation
//! alike before `nvshmem_malloc` (see `gpu::heap_accounting`), deferred frees, and copies
//! between the heap and the host.

use super::super::heap_accounting::{decide, HeapLimit};
use super::super::nvshmem::{result as nv, sys};
use super::state::{lock, GpuPe, HeapState};
use crate::contract::{Error, HeapBackend, Result, StreamId};

/// Bytes of one bank of the control block: this PE's `[requested, room]`, then every PE's.
fn bank_bytes(npes: usize) -> usize {
    (2 + 2 * npes) * std::mem::size_of::<u64>()
}

/// Allocates the PE's control block (two banks of [`bank_bytes`]) at start-up and returns it
/// with the heap bookkeeping that already counts it. Collective.
pub(super) fn control_block(lib: &'static sys::Lib, npes: usize) -> Result<(u64, HeapState)> {
    let control_bytes = 2 * bank_bytes(npes);
    // SAFETY: NVSHMEM is initialised; every PE runs this same start-up sequence with the
    // same `npes`, hence the same non-zero size.
    let control = unsafe { nv::malloc(lib, control_bytes) }.ok_or_else(|| Error::Nvshmem {
        call: "nvshmem_malloc",
        status: 0,
        hint: Some(format!(
            "rshmem's {control_bytes}-byte control block could not be allocated at start-up: \
             the symmetric heap is too small or the GPU is out of memory"
        )),
    })?;
    let mut state = HeapState::default();
    state.accounting.allocated(control, control_bytes);
    Ok((control, state))
}

impl GpuPe {
    /// Gathers every PE's `[requested, room]` (in PE order) through the control block.
    /// Collective.
    ///
    /// Where every peer's slot is directly reachable (`nvshmem_ptr`: one node, NVLink or a
    /// shared GPU) each PE writes its own slot, all meet in `nvshmem_barrier_all`, and each
    /// reads the others' slots through the peer mappings: that works in every NVSHMEM mode,
    /// including several PEs per GPU without MPS, where NVSHMEM refuses host collectives (and
    /// exits the process). Otherwise (several nodes) `nvshmem_uint64_fcollect` gathers them.
    fn exchange(&self, state: &mut HeapState, mine: [u64; 2]) -> Result<Vec<[u64; 2]>> {
        let sh = &*self.shared;
        let bank = (state.exchanges % 2) as usize;
        state.exchanges += 1;
        let src = self.control + (bank * bank_bytes(sh.npes)) as u64;
        let dest = src + std::mem::size_of_val(&mine) as u64;
        // SAFETY: `src` is this PE's 16-byte slot in the control block; `mine` outlives the
        // synchronisation below.
        unsafe { sh.stream.copy_to_device(src, bytemuck::bytes_of(&mine)) }
            .map_err(|e| sh.fault(e, StreamId::PE))?;
        // Peers read `src` after the barrier (or fcollect reads it from NVSHMEM's stream), so
        // the copy must be complete.
        sh.sync_stream(StreamId::PE)?;
        // SAFETY: `src` is symmetric and every PE index is in range.
        let peers: Option<Vec<u64>> = (0..sh.npes)
            .map(|pe| unsafe { nv::ptr(sh.lib(), src, pe) })
            .collect();
        let mut offers = vec![[0u64; 2]; sh.npes];
        match peers {
            Some(peers) => {
                // SAFETY: collective, every PE calls it here. The bank alternation keeps the
                // slots just written stable until every PE has read them: a PE writes this
                // bank again only after the next exchange's barrier, which every PE enters
                // after its reads here.
                unsafe { nv::barrier_all(sh.lib()) };
                for (offer, peer) in offers.iter_mut().zip(peers) {
                    // SAFETY: `peer` maps a peer's 16-byte slot, complete before the barrier.
                    unsafe { sh.stream.copy_to_host(bytemuck::bytes_of_mut(offer), peer) }
                        .map_err(|e| sh.fault(e, StreamId::PE))?;
                }
            }
            None => {
                // SAFETY: `src` (2 words) and `dest` (2 × npes words) lie in the symmetric
                // control block; the bank alternation keeps `dest` free of other readers and
                // writers (every PE has left exchange k before any PE enters exchange k + 2).
                unsafe { nv::fcollect_u64(sh.lib(), dest, src, 2) }?;
                // SAFETY: `dest` holds `npes` pairs; `offers` is not touched until the sync.
                unsafe {
                    sh.stream
                        .copy_to_host(bytemuck::cast_slice_mut(&mut offers), dest)
                }
                .map_err(|e| sh.fault(e, StreamId::PE))?;
            }
        }
        sh.sync_stream(StreamId::PE)?;
        Ok(offers)
    }

    /// `nvshmem_free`s the allocations dropped since the last collective heap call.
    fn flush_frees(&self, state: &mut HeapState) {
        for addr in std::mem::take(&mut state.pending_frees) {
            // SAFETY: `addr` came from `nvshmem_malloc` and was dropped exactly once (its
            // `SymBuffer` synchronised first); every PE flushes the same list at the same
            // collective.
            unsafe { nv::free(self.shared.lib(), addr) };
            state.accounting.freed(addr);
        }
    }

    fn limit_bytes(&self) -> usize {
        match self.limit {
            HeapLimit::Static { size } => size,
            HeapLimit::Growable { max } => max,
        }
    }
}

impl HeapBackend for GpuPe {
    fn alloc(&self, bytes: usize, init: Option<&[u8]>) -> Result<u64> {
        let sh = &*self.shared;
        let mut state = lock(&sh.serial);
        let _blocking = sh.blocking("alloc (collective: every PE allocates)");
        sh.ctx().bind()?;
        self.flush_frees(&mut state);
        let device_free = match self.limit {
            HeapLimit::Growable { .. } => sh.ctx().free_memory()?,
            HeapLimit::Static { .. } => 0,
        };
        let room = state.accounting.room(self.limit, device_free);
        let offers = self.exchange(&mut state, [bytes as u64, room as u64])?;
        decide(sh.pe, &offers, self.limit)?;
        if bytes == 0 {
            // NVSHMEM returns NULL for 0 bytes without its barrier; an empty buffer needs
            // no memory and no address.
            return Ok(0);
        }
        // SAFETY: `decide` passed on data every PE shares, so every PE is here with the same
        // non-zero `bytes`, at the same point of its collective sequence.
        let addr = unsafe { nv::malloc(sh.lib(), bytes) }.ok_or(Error::HeapExhausted {
            var: "NVSHMEM_SYMMETRIC_SIZE",
            requested: bytes,
            available: room,
            heap_size: self.limit_bytes(),
        })?;
        state.accounting.allocated(addr, bytes);
        match init {
            // SAFETY: `addr..addr + bytes` was just allocated on this PE's GPU and is unused;
            // `data` is `bytes` long (the trait's contract) and outlives the sync below.
            Some(data) => unsafe { sh.stream.copy_to_device(addr, data) },
            // SAFETY: as above.
            None => unsafe { sh.stream.zero(addr, bytes) },
        }
        .map_err(|e| sh.fault(e, StreamId::PE))?;
        // Queued behind the fill on the same stream: once it completes, every PE's copy holds
        // its contents, so no peer can read or write this PE's copy before it is filled.
        // SAFETY: NVSHMEM is initialised, the stream is on its context, and every PE queues
        // this barrier at the same point (right after the same allocation).
        unsafe { nv::barrier_all_on_stream(sh.lib(), sh.stream.raw()) };
        sh.sync_stream(StreamId::PE)?;
        Ok(addr)
    }

    /// Defers `nvshmem_free` to the next allocation: it is collective (it starts with a
    /// barrier), and a PE whose closure is failing must not block in it while the others wait
    /// elsewhere — deferred, the frees run only on PEs that go on allocating together.
    fn free(&self, addr: u64) {
        if addr != 0 {
            lock(&self.shared.serial).pending_frees.push(addr);
        }
    }

    fn copy_to_host(&self, addr: u64, dst: &mut [u8]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let sh = &*self.shared;
        // SAFETY: `addr` and the length come from a live `SymBuffer` of this PE (the only
        // caller), so they name memory of this GPU; `dst` is untouched until the sync.
        unsafe { sh.stream.copy_to_host(dst, addr) }.map_err(|e| sh.fault(e, StreamId::PE))?;
        sh.sync_stream(StreamId::PE)
    }

    fn copy_from_host(&self, addr: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        let sh = &*self.shared;
        // SAFETY: as in `copy_to_host`; `src` outlives the sync.
        unsafe { sh.stream.copy_to_device(addr, src) }.map_err(|e| sh.fault(e, StreamId::PE))?;
        sh.sync_stream(StreamId::PE)
    }

    fn check_device_memory(&self, addr: u64, bytes: usize) -> std::result::Result<(), String> {
        use cudarc::driver::sys::CUmemorytype::*;
        let ctx = self.shared.ctx();
        let mine = ctx.ordinal;
        // The first and the last byte: an allocator that maps a tensor's pages separately
        // (torch's expandable segments) makes one range of several driver allocations.
        for (which, at) in [("first", addr), ("last", addr + bytes as u64 - 1)] {
            let (ty, ordinal) = ctx.locate(at).map_err(|e| {
                format!("the driver could not say where {at:#x} is: {}", e.message())
            })?;
            let place = match ty {
                t if t == CU_MEMORYTYPE_DEVICE as u32 && usize::try_from(ordinal) == Ok(mine) => {
                    continue
                }
                t if t == CU_MEMORYTYPE_DEVICE as u32 => format!("device memory of cuda:{ordinal}"),
                t if t == CU_MEMORYTYPE_HOST as u32 => {
                    "host memory (pinned), not device memory".into()
                }
                t if t == CU_MEMORYTYPE_UNIFIED as u32 => "unified (managed) memory".into(),
                t if t == CU_MEMORYTYPE_ARRAY as u32 => "a CUDA array".into(),
                _ => "host memory the driver does not know (not device memory)".into(),
            };
            return Err(format!(
                "{bytes} bytes at {addr:#x}: the {which} byte ({at:#x}) is {place}; this PE's \
                 GPU is cuda:{mine}: move the data there first"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_block_banks_hold_a_pair_per_pe() {
        assert_eq!(bank_bytes(2), 6 * 8);
        assert_eq!(bank_bytes(8), 18 * 8);
    }
}
