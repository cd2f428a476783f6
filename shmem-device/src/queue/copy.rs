//! Moving one element between a thread's own memory and a slot of the queue on another PE.
//!
//! The element lives in the calling thread's registers or stack (a push takes it by value, a
//! pop returns it), and NVSHMEM's `putmem`/`getmem` must not be pointed at it: on the GPU a
//! large element sits in local memory, and NVSHMEM's copy loops access the local side with
//! global-space instructions, which fault with `CUDA_ERROR_INVALID_ADDRESS_SPACE` (seen on an
//! H200 with 1 KiB elements). So the element moves with instructions the compiler generates
//! for each side:
//!
//! * When the slot's PE is reachable by loads and stores (NVLink, the same node: `shmem::ptr`
//!   gives a mapping), a plain copy through that mapping — generic-address loads and stores,
//!   which any address space accepts — in 16-byte vectors where they tile the element.
//! * Otherwise (a PE behind a network transport), word by word with `shmem::p` and
//!   `shmem::g`, which carry the value in registers; the widest word that divides the
//!   element's size is used.
//!
//! Neither orders anything: the ring's fences and sequence numbers do (see the module
//! documentation of [`super`]).

use core::mem::{size_of, MaybeUninit};

use crate::shmem;

/// Writes `item` into `slot`, a symmetric address, on PE `pe`.
///
/// # Safety
///
/// `slot` must point into a symmetric allocation holding a `T` on `pe`, which no other thread
/// accesses during the call; `pe` a PE of the job.
#[inline(always)]
pub(super) unsafe fn put<T: Copy>(slot: *mut T, item: &T, pe: i32) {
    // SAFETY: `slot` is symmetric and `pe` in range (the caller's contract).
    let peer = unsafe { shmem::ptr(slot, pe) };
    if !peer.is_null() {
        if size_of::<T>() % CHUNK == 0 {
            let src = (item as *const T).cast::<[u64; 2]>();
            for i in 0..size_of::<T>() / CHUNK {
                // SAFETY: `peer` maps `slot` on `pe`, which this thread alone accesses now;
                // the chunks tile the `T` and are 16-aligned on the slot's side.
                unsafe {
                    peer.cast::<Chunk>()
                        .add(i)
                        .write(Chunk(src.add(i).read_unaligned()))
                };
            }
        } else {
            // SAFETY: as above.
            unsafe { peer.write(*item) };
        }
        return;
    }
    let src = (item as *const T).cast::<u8>();
    // SAFETY: `item` is a whole `T` (`Copy` data; the host requires `Pod`, so every byte is
    // initialised), read in words that tile it; `slot` as the caller guarantees.
    unsafe {
        by_words::<T>(
            |at| {
                shmem::p(
                    slot.cast::<u64>().add(at),
                    src.add(8 * at).cast::<u64>().read_unaligned(),
                    pe,
                )
            },
            |at| {
                shmem::p(
                    slot.cast::<u32>().add(at),
                    src.add(4 * at).cast::<u32>().read_unaligned(),
                    pe,
                )
            },
            |at| shmem::p(slot.cast::<u8>().add(at), *src.add(at), pe),
        )
    }
}

/// Reads the `T` at `slot`, a symmetric address, on PE `pe`.
///
/// # Safety
///
/// `slot` must point into a symmetric allocation holding an initialised `T` on `pe`, which
/// no other thread writes during the call; `pe` a PE of the job.
#[inline(always)]
pub(super) unsafe fn get<T: Copy>(slot: *const T, pe: i32) -> T {
    // SAFETY: as in `put`.
    let peer = unsafe { shmem::ptr(slot, pe) };
    let mut item = MaybeUninit::<T>::uninit();
    if !peer.is_null() {
        if size_of::<T>() % CHUNK != 0 {
            // SAFETY: `peer` maps `slot` on `pe`, which nobody writes now.
            return unsafe { peer.read() };
        }
        let dst = item.as_mut_ptr().cast::<[u64; 2]>();
        for i in 0..size_of::<T>() / CHUNK {
            // SAFETY: as above; the chunks tile the `T` in both places, 16-aligned on the
            // slot's side.
            unsafe {
                dst.add(i)
                    .write_unaligned(peer.cast::<Chunk>().add(i).read().0)
            };
        }
        // SAFETY: every byte of `item` was written.
        return unsafe { item.assume_init() };
    }
    let dst = item.as_mut_ptr().cast::<u8>();
    // SAFETY: the words tile the `T` at `slot` and in `item`, so every byte of `item` is
    // written before `assume_init`.
    unsafe {
        by_words::<T>(
            |at| {
                dst.add(8 * at)
                    .cast::<u64>()
                    .write_unaligned(shmem::g(slot.cast::<u64>().add(at), pe))
            },
            |at| {
                dst.add(4 * at)
                    .cast::<u32>()
                    .write_unaligned(shmem::g(slot.cast::<u32>().add(at), pe))
            },
            |at| *dst.add(at) = shmem::g(slot.cast::<u8>().add(at), pe),
        );
        item.assume_init()
    }
}

/// Bytes moved per access through a peer mapping, where they tile the element.
const CHUNK: usize = 16;

/// 16 bytes, 16-aligned: one vector load or store (`ld`/`st.v2.b64`) through the mapping,
/// where 8-byte words took twice the NVLink requests. A slot of an element whose size is a
/// multiple of 16 is 16-aligned: allocations are 512-aligned and slots follow each other.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u64; 2]);

/// Calls one of the three word movers for each word of a `T`: 8-byte words if they tile it,
/// else 4-byte words, else bytes. (A slot's address is a multiple of `size_of::<T>()` past a
/// 512-byte-aligned allocation, so these words are aligned on the slot's side.)
#[inline(always)]
fn by_words<T>(w8: impl Fn(usize), w4: impl Fn(usize), w1: impl Fn(usize)) {
    match size_of::<T>() {
        n if n % 8 == 0 => (0..n / 8).for_each(w8),
        n if n % 4 == 0 => (0..n / 4).for_each(w4),
        n => (0..n).for_each(w1),
    }
}
