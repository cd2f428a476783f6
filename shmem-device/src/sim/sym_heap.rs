//! One PE's symmetric heap: a zeroed host allocation (the arena) and a first-fit allocator
//! over it.
//!
//! Symmetry comes from determinism: every PE runs the same allocator on an arena of the
//! same size, and allocation is collective (same sizes, same order, checked by the host
//! side with [`SymHeap::summary`]), so an allocation lands at the same offset on every PE
//! and a peer's copy of a local address is `peer_base + (addr - local_base)`.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::format;
use std::string::String;
use std::sync::{Mutex, MutexGuard};
use std::vec::Vec;

use super::mem;

/// Every allocation starts at a multiple of this (as `cudaMalloc` and NVSHMEM do), so any
/// element type is aligned and buffers never share a cache line.
pub const ALLOC_ALIGN: usize = 256;
/// Alignment of the arena's start.
const ARENA_ALIGN: usize = 4096;
/// Alignment asked of the allocator. Larger alignments make `alloc_zeroed` fall back to
/// malloc + memset, touching every page; at this one it is `calloc`, whose large blocks are
/// fresh zero pages mapped on first touch. The arena is aligned by hand inside the block.
const BLOCK_ALIGN: usize = 16;

/// A PE's symmetric heap. Simulator internals, used by rshmem-host.
pub struct SymHeap {
    /// The arena: `base..base + size`, inside `block`.
    base: *mut u8,
    size: usize,
    block: *mut u8,
    layout: Layout,
    table: Mutex<Allocator>,
}

// SAFETY: the arena is plain memory owned by this value; the simulator reads and writes it
// only with atomic accesses (see `mem`) or through pointers kernels were given, whose
// synchronisation is the kernel's contract, as on a GPU.
unsafe impl Send for SymHeap {}
// SAFETY: as above; the allocator table is behind a mutex.
unsafe impl Sync for SymHeap {}

/// Why the arena could not be created or an allocation not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeapError {
    /// The host could not reserve the arena.
    Reserve {
        /// The arena size asked for.
        size: usize,
    },
    /// Not enough contiguous free space.
    Exhausted {
        /// Bytes asked for.
        requested: usize,
        /// The largest free block.
        available: usize,
        /// The arena size.
        heap_size: usize,
    },
}

/// What the live allocations of a heap look like; equal on every PE of a correct program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapSummary {
    /// Number of live allocations.
    pub count: u64,
    /// Their total requested size in bytes.
    pub bytes: u64,
    /// A hash of every live `(offset, size)`, order-independent.
    pub fingerprint: u64,
}

/// A live allocation, as kernels see it: `[offset, offset + bytes)` of the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub offset: usize,
    pub bytes: usize,
    /// Bytes reserved for it (`bytes` rounded up to [`ALLOC_ALIGN`]).
    pub reserve: usize,
}

/// First-fit allocator. `free` maps offset → length of each free block, coalesced, so its
/// state depends only on which blocks are live, not on the order they were freed in.
struct Allocator {
    size: usize,
    free: BTreeMap<usize, usize>,
    /// offset → (requested bytes, reserved bytes).
    live: BTreeMap<usize, (usize, usize)>,
    summary: HeapSummary,
}

/// Mixes an allocation into a 64-bit value (splitmix64's finaliser), so the XOR of all live
/// allocations identifies the set with high probability.
fn mix(offset: usize, bytes: usize) -> u64 {
    let mut z = (offset as u64) ^ (bytes as u64).rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Allocator {
    fn new(size: usize) -> Self {
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        Self {
            size,
            free,
            live: BTreeMap::new(),
            summary: HeapSummary {
                count: 0,
                bytes: 0,
                fingerprint: 0,
            },
        }
    }

    fn alloc(&mut self, bytes: usize) -> Result<usize, HeapError> {
        // A zero-byte buffer still gets its own address, as distinct buffers must.
        let reserve = bytes
            .max(1)
            .checked_next_multiple_of(ALLOC_ALIGN)
            .unwrap_or(usize::MAX);
        let found = self
            .free
            .iter()
            .find(|&(_, &len)| len >= reserve)
            .map(|(&off, &len)| (off, len));
        let Some((offset, len)) = found else {
            return Err(HeapError::Exhausted {
                requested: bytes,
                available: self.free.values().copied().max().unwrap_or(0),
                heap_size: self.size,
            });
        };
        self.free.remove(&offset);
        if len > reserve {
            self.free.insert(offset + reserve, len - reserve);
        }
        self.live.insert(offset, (bytes, reserve));
        self.summary.count += 1;
        self.summary.bytes += bytes as u64;
        self.summary.fingerprint ^= mix(offset, bytes);
        Ok(offset)
    }

    fn free(&mut self, offset: usize) -> Option<()> {
        let (bytes, reserve) = self.live.remove(&offset)?;
        self.summary.count -= 1;
        self.summary.bytes -= bytes as u64;
        self.summary.fingerprint ^= mix(offset, bytes);
        let (mut start, mut len) = (offset, reserve);
        if let Some((&prev, &prev_len)) = self.free.range(..offset).next_back() {
            if prev + prev_len == offset {
                self.free.remove(&prev);
                start = prev;
                len += prev_len;
            }
        }
        if let Some(next_len) = self.free.remove(&(offset + reserve)) {
            len += next_len;
        }
        self.free.insert(start, len);
        Some(())
    }

    /// The live allocation containing `offset`, if any.
    fn span_at(&self, offset: usize) -> Option<Span> {
        let (&start, &(bytes, reserve)) = self.live.range(..=offset).next_back()?;
        (offset < start + reserve).then_some(Span {
            offset: start,
            bytes,
            reserve,
        })
    }
}

impl SymHeap {
    /// Reserves a zeroed arena of `size` bytes. The memory is requested zeroed from the OS,
    /// which maps pages on first touch, so an unused heap costs address space only.
    pub fn new(size: usize) -> Result<Self, HeapError> {
        let layout = size
            .checked_add(ARENA_ALIGN)
            .and_then(|total| Layout::from_size_align(total, BLOCK_ALIGN).ok())
            .ok_or(HeapError::Reserve { size })?;
        // SAFETY: `layout` has a non-zero size.
        let block = unsafe { alloc_zeroed(layout) };
        if block.is_null() {
            return Err(HeapError::Reserve { size });
        }
        // SAFETY: the offset is below ARENA_ALIGN, and the block has ARENA_ALIGN bytes
        // beyond `size`.
        let base = unsafe { block.add(block.align_offset(ARENA_ALIGN)) };
        Ok(Self {
            base,
            size,
            block,
            layout,
            table: Mutex::new(Allocator::new(size)),
        })
    }

    /// The arena's address; symmetric addresses are `base + offset`.
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// The arena's size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    fn table(&self) -> MutexGuard<'_, Allocator> {
        // A panic while the table is locked leaves it consistent (every mutation is
        // completed before anything can panic), so a poisoned lock is still usable.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates `bytes` (first fit, [`ALLOC_ALIGN`]-aligned) and returns the offset. Not
    /// zeroed: the caller zeroes when no peer can be writing (see rshmem-host's simulator).
    pub fn alloc(&self, bytes: usize) -> Result<usize, HeapError> {
        self.table().alloc(bytes)
    }

    /// Frees the allocation at `offset`.
    ///
    /// # Panics
    ///
    /// If no allocation starts there (the host side passes only offsets `alloc` returned).
    pub fn free(&self, offset: usize) {
        if self.table().free(offset).is_none() {
            panic!("rshmem simulator: free of offset {offset:#x}, which is not a live symmetric allocation");
        }
    }

    /// The live allocations, for comparison across PEs before a collective allocation.
    pub fn summary(&self) -> HeapSummary {
        self.table().summary
    }

    /// Checks that `[addr, addr + len)` lies in one live allocation and returns its offset
    /// from the arena's base; the message says what is wrong otherwise.
    pub fn offset_of(&self, addr: usize, len: usize) -> Result<usize, String> {
        let offset = self.arena_offset(addr)?;
        check_span(self.table().span_at(offset), offset, len)
    }

    fn arena_offset(&self, addr: usize) -> Result<usize, String> {
        let (base, size) = (self.base as usize, self.size);
        match addr.checked_sub(base) {
            Some(off) if off < size => Ok(off),
            _ => Err(format!(
                "address {addr:#x} is not on the symmetric heap (this PE's heap spans {base:#x}..{:#x}); \
                 pass a pointer into a SymBuffer",
                base + size
            )),
        }
    }

    /// The live allocations in offset order, for a launch to check addresses without locking.
    pub(crate) fn spans(&self) -> Vec<Span> {
        self.table()
            .live
            .iter()
            .map(|(&offset, &(bytes, reserve))| Span {
                offset,
                bytes,
                reserve,
            })
            .collect()
    }

    /// Like [`SymHeap::offset_of`], against a snapshot from [`SymHeap::spans`].
    pub(crate) fn offset_in(
        &self,
        spans: &[Span],
        addr: usize,
        len: usize,
    ) -> Result<usize, String> {
        let offset = self.arena_offset(addr)?;
        let i = spans.partition_point(|s| s.offset <= offset);
        let span = i
            .checked_sub(1)
            .map(|i| spans[i])
            .filter(|s| offset < s.offset + s.reserve);
        check_span(span, offset, len)
    }

    /// Copies `dst.len()` bytes from `addr` (checked to be in one live allocation).
    pub fn read(&self, addr: usize, dst: &mut [u8]) -> Result<(), String> {
        let off = self.offset_of(addr, dst.len())?;
        // SAFETY: the range is inside the arena (checked above); `dst` is exclusive.
        unsafe { mem::atomic_copy(dst.as_mut_ptr(), self.base.add(off), dst.len()) };
        Ok(())
    }

    /// Copies `src` to `addr` (checked to be in one live allocation).
    pub fn write(&self, addr: usize, src: &[u8]) -> Result<(), String> {
        let off = self.offset_of(addr, src.len())?;
        // SAFETY: as in `read`.
        unsafe { mem::atomic_copy(self.base.add(off), src.as_ptr(), src.len()) };
        Ok(())
    }

    /// Zeroes `len` bytes at `offset`.
    ///
    /// # Panics
    ///
    /// If the range leaves the arena.
    pub fn zero(&self, offset: usize, len: usize) {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.size));
        // SAFETY: in bounds (asserted); concurrent accessors, if any, are atomic too.
        unsafe { mem::atomic_zero(self.base.add(offset), len) }
    }
}

fn check_span(span: Option<Span>, offset: usize, len: usize) -> Result<usize, String> {
    match span {
        None => Err(format!(
            "heap offset {offset:#x} is not inside any live symmetric allocation (freed, or never allocated)"
        )),
        Some(s) if offset - s.offset + len > s.bytes => Err(format!(
            "out of bounds: {len} byte(s) at byte {} of a {}-byte symmetric buffer (heap offset {:#x})",
            offset - s.offset,
            s.bytes,
            s.offset
        )),
        Some(_) => Ok(offset),
    }
}

impl Drop for SymHeap {
    fn drop(&mut self) {
        // SAFETY: `block` came from `alloc_zeroed(self.layout)` and is freed once.
        unsafe { dealloc(self.block, self.layout) }
    }
}

impl core::fmt::Debug for SymHeap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SymHeap")
            .field("base", &self.base)
            .field("size", &self.size)
            .field("summary", &self.summary())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_reuses_and_coalesces() {
        let heap = SymHeap::new(4 * ALLOC_ALIGN).unwrap();
        let a = heap.alloc(10).unwrap();
        let b = heap.alloc(ALLOC_ALIGN + 1).unwrap();
        let c = heap.alloc(0).unwrap();
        assert_eq!((a, b, c), (0, ALLOC_ALIGN, 3 * ALLOC_ALIGN));
        assert!(matches!(
            heap.alloc(1),
            Err(HeapError::Exhausted {
                requested: 1,
                available: 0,
                ..
            })
        ));
        heap.free(a);
        heap.free(b);
        // a and b coalesced: a 3-block request fits at 0 again.
        assert_eq!(heap.alloc(3 * ALLOC_ALIGN).unwrap(), 0);
    }

    #[test]
    fn summary_depends_on_live_set_not_free_order() {
        let (h1, h2) = (
            SymHeap::new(1 << 16).unwrap(),
            SymHeap::new(1 << 16).unwrap(),
        );
        let xs: Vec<_> = [100, 200, 300]
            .iter()
            .map(|&n| h1.alloc(n).unwrap())
            .collect();
        let ys: Vec<_> = [100, 200, 300]
            .iter()
            .map(|&n| h2.alloc(n).unwrap())
            .collect();
        h1.free(xs[0]);
        h1.free(xs[2]);
        h2.free(ys[2]);
        h2.free(ys[0]);
        assert_eq!(h1.summary(), h2.summary());
        assert_eq!(h1.alloc(50).unwrap(), h2.alloc(50).unwrap());
        h1.free(xs[1]);
        assert_ne!(h1.summary(), h2.summary());
    }

    #[test]
    fn checks_ranges_against_live_allocations() {
        let heap = SymHeap::new(1 << 16).unwrap();
        let off = heap.alloc(16).unwrap();
        let base = heap.base() as usize;
        assert_eq!(heap.offset_of(base + off + 4, 12), Ok(off + 4));
        let err = heap.offset_of(base + off + 4, 13).unwrap_err();
        assert!(
            err.contains("out of bounds") && err.contains("16-byte"),
            "{err}"
        );
        let err = heap.offset_of(base + 1024, 1).unwrap_err();
        assert!(err.contains("not inside any live"), "{err}");
        let err = heap.offset_of(8, 1).unwrap_err();
        assert!(err.contains("not on the symmetric heap"), "{err}");
        let spans = heap.spans();
        assert_eq!(heap.offset_in(&spans, base + off, 16), Ok(off));
        assert!(heap.offset_in(&spans, base + off, 17).is_err());
        let mut out = [0u8; 4];
        heap.write(base + off, &[1, 2, 3, 4]).unwrap();
        heap.read(base + off, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
    }
}
