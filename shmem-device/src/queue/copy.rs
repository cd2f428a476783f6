//! Moving elements between memory a crew reads or writes and the queue's slots on another PE.
//!
//! The elements' side is memory: the group's buffer of a batch (global or shared memory), or
//! the calling thread's own variable for the per-thread operations (its stack: local memory).
//! NVSHMEM's `putmem`/`getmem` must not be pointed at the latter: its copy loops access the
//! local side with global-space instructions, which fault with
//! `CUDA_ERROR_INVALID_ADDRESS_SPACE` (seen on an H200 with 1 KiB elements). So elements move
//! with instructions the compiler generates for each side:
//!
//! * When the slot's PE is reachable by loads and stores (NVLink, the same node: `shmem::ptr`
//!   gives a mapping), plain generic-address loads and stores through that mapping (any
//!   address space accepts them), in the widest word that the element's size and both
//!   sides' addresses allow: 16-byte vectors (`ld`/`st.v4.b32`) for 16-byte multiples on
//!   16-byte boundaries, else 8, 4, 2 or 1 bytes.
//! * Otherwise (a PE behind a network transport), word by word with `shmem::p` and
//!   `shmem::g`, which carry the value in registers; the widest word that divides the
//!   element's size is used.
//!
//! The words of `count` consecutive elements are spread over the crew: member `r` of `n`
//! moves words `r, r + n, ...` of the whole run, so a warp's 32 lanes touch 32 neighbouring
//! words of one element (a coalesced access), never 32 different slots.
//!
//! Never a whole element by value: an aggregate copy of more than 128 bytes (`*dst = *src`,
//! or passing a large `T` to a function that is not inlined) is lowered by LLVM's NVPTX
//! backend to a loop of one-byte loads and stores, each load waiting for the one before;
//! that loop, not the link, bounded the queue's 1 KiB elements (docs/queue.md).
//!
//! Nothing here orders anything: the ring's fences and sequence numbers do (see the module
//! documentation of [`super`]).

use core::mem::size_of;

use super::layout::slot_of;
use super::ring::Crew;
use crate::shmem::{self, RmaScalar};
use crate::vector::{self, Words4};

/// Which way the words go.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    /// From the elements' memory into the slots (a push).
    ToSlots,
    /// From the slots into the elements' memory (a pop).
    FromSlots,
}

/// The ring's element array: this PE's address of the symmetric `slots`, their number, and
/// the PE whose copy is meant.
#[derive(Clone, Copy)]
pub(super) struct Slots<T> {
    pub(super) base: *mut T,
    pub(super) capacity: u64,
    pub(super) pe: i32,
}

/// Moves this member's share of `count` elements between `data[..count]` and the slots of
/// tickets `first..first + count`, in direction `dir`.
///
/// # Safety
///
/// The slots are the queue's and the crew's alone during the call (it holds their tickets);
/// `count <= capacity`; `data` is valid for `count` elements (read for [`Dir::ToSlots`],
/// written for [`Dir::FromSlots`]) by every member, and nobody else writes what is read.
#[inline(always)]
pub(super) unsafe fn move_elements<T: Copy, C: Crew>(
    slots: Slots<T>,
    crew: &C,
    dir: Dir,
    first: u64,
    data: *mut T,
    count: u64,
) {
    if size_of::<T>() == 0 || count == 0 {
        return;
    }
    let run = Run {
        first_slot: slot_of(first, slots.capacity) as usize,
        capacity: slots.capacity as usize,
        count: count as usize,
        rank: crew.rank() as usize,
        size: crew.size() as usize,
    };
    // SAFETY: `base` is symmetric and `pe` a PE of the job (the handle's contract).
    let peer = unsafe { shmem::ptr(slots.base, slots.pe) };
    let (data, base) = (data.cast::<u8>(), slots.base.cast::<u8>());
    // SAFETY: (all arms) the words tile the elements on both sides; the slots are the
    // crew's, `data` as the caller guarantees; each word is aligned to its width (chosen from
    // the element size and both addresses for the mapping, and from the size alone for
    // `p`/`g`, whose element side is accessed unaligned).
    unsafe {
        if !peer.is_null() {
            let peer = peer.cast::<u8>();
            match (size_of::<T>() | data as usize | peer as usize).trailing_zeros() {
                4.. => run.mapped::<T, Words4>(dir, peer, data),
                3 => run.mapped::<T, u64>(dir, peer, data),
                2 => run.mapped::<T, u32>(dir, peer, data),
                1 => run.mapped::<T, u16>(dir, peer, data),
                _ => run.mapped::<T, u8>(dir, peer, data),
            }
        } else {
            match size_of::<T>().trailing_zeros() {
                3.. => run.remote::<T, u64>(dir, base, data, slots.pe),
                2 => run.remote::<T, u32>(dir, base, data, slots.pe),
                1 => run.remote::<T, u16>(dir, base, data, slots.pe),
                _ => run.remote::<T, u8>(dir, base, data, slots.pe),
            }
        }
    }
}

/// A run of consecutive tickets' slots and this member's place in the crew.
struct Run {
    first_slot: usize,
    capacity: usize,
    count: usize,
    rank: usize,
    size: usize,
}

/// Words each member loads before it stores them, where the run has that many left for it:
/// the loads of one group are in flight together (a load followed at once by its store
/// waits a whole memory latency per word, which bounds a thread to a word per latency).
const IN_FLIGHT: usize = 8;

impl Run {
    /// Calls `f(slot byte offset, data byte offset)` for this member's words of width `W`:
    /// words `rank, rank + size, ...` of the run, element after element.
    #[inline(always)]
    fn each_word<T, W>(&self, mut f: impl FnMut(usize, usize)) {
        let (per, total) = self.words::<T, W>();
        let mut k = self.rank;
        while k < total {
            let (at_slot, at_data) = self.offsets::<T, W>(k, per);
            f(at_slot, at_data);
            k += self.size;
        }
    }

    /// Words of width `W` per element, and in the run.
    #[inline(always)]
    fn words<T, W>(&self) -> (usize, usize) {
        let per = size_of::<T>() / size_of::<W>();
        (per, self.count * per)
    }

    /// Word `k` of the run (`per` words per element): its byte offsets in the slots and in
    /// the data.
    #[inline(always)]
    fn offsets<T, W>(&self, k: usize, per: usize) -> (usize, usize) {
        let (e, i) = (k / per, k % per);
        // `count <= capacity`, so the run wraps at most once.
        let mut slot = self.first_slot + e;
        if slot >= self.capacity {
            slot -= self.capacity;
        }
        let word = i * size_of::<W>();
        (slot * size_of::<T>() + word, e * size_of::<T>() + word)
    }

    /// Through the peer mapping `peer` (the slots' base on their PE): [`IN_FLIGHT`] loads,
    /// then their stores, then the rest one by one.
    ///
    /// # Safety
    ///
    /// As [`move_elements`], with both sides aligned to `W`.
    #[inline(always)]
    unsafe fn mapped<T, W: Word>(&self, dir: Dir, peer: *mut u8, data: *mut u8) {
        let (per, total) = self.words::<T, W>();
        let ends = |k: usize| {
            let (at_slot, at_data) = self.offsets::<T, W>(k, per);
            // SAFETY: inside the slots' and the data's elements (the caller's contract).
            let (slot, data) = unsafe { (peer.add(at_slot), data.add(at_data)) };
            match dir {
                Dir::ToSlots => (data, slot),
                Dir::FromSlots => (slot, data),
            }
        };
        let mut k = self.rank;
        while k + (IN_FLIGHT - 1) * self.size < total {
            let mut words = [W::default(); IN_FLIGHT];
            for (j, w) in words.iter_mut().enumerate() {
                // SAFETY: the caller's contract; `k + j * size < total`.
                *w = unsafe { W::load(ends(k + j * self.size).0) };
            }
            for (j, w) in words.into_iter().enumerate() {
                // SAFETY: as above.
                unsafe { W::store(ends(k + j * self.size).1, w) };
            }
            k += IN_FLIGHT * self.size;
        }
        while k < total {
            let (from, to) = ends(k);
            // SAFETY: as above.
            unsafe { W::store(to, W::load(from)) };
            k += self.size;
        }
    }

    /// With `p`/`g` on PE `pe`; `base` is this PE's address of the slots.
    ///
    /// # Safety
    ///
    /// As [`move_elements`], with the slots aligned to `W`.
    #[inline(always)]
    unsafe fn remote<T, W: RmaScalar>(&self, dir: Dir, base: *mut u8, data: *mut u8, pe: i32) {
        self.each_word::<T, W>(|at_slot, at_data| {
            // SAFETY: the caller's contract: `base` symmetric, `pe` a PE of the job.
            unsafe {
                let (slot, data) = (base.add(at_slot).cast::<W>(), data.add(at_data).cast::<W>());
                match dir {
                    Dir::ToSlots => shmem::p(slot, data.read_unaligned(), pe),
                    Dir::FromSlots => data.write_unaligned(shmem::g(slot, pe)),
                }
            }
        })
    }
}

/// A word moved with one load and one store.
trait Word: Copy + Default {
    /// # Safety
    ///
    /// `p` valid and aligned for a `Self`.
    unsafe fn load(p: *const u8) -> Self;
    /// # Safety
    ///
    /// `p` valid and aligned for a `Self`.
    unsafe fn store(p: *mut u8, v: Self);
}

impl Word for Words4 {
    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: the caller's contract (16 bytes, 16-aligned).
        unsafe { vector::load(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut u8, v: Self) {
        // SAFETY: as above.
        unsafe { vector::store(p.cast(), v) }
    }
}

macro_rules! plain_words {
    ($($t:ty),*) => {$(
        impl Word for $t {
            #[inline(always)]
            unsafe fn load(p: *const u8) -> Self {
                // SAFETY: the caller's contract.
                unsafe { p.cast::<$t>().read() }
            }
            #[inline(always)]
            unsafe fn store(p: *mut u8, v: Self) {
                // SAFETY: the caller's contract.
                unsafe { p.cast::<$t>().write(v) }
            }
        }
    )*};
}
plain_words!(u64, u32, u16, u8);
