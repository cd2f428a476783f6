//! [`SymQueue`]: a bounded, lock-free multi-producer multi-consumer queue in symmetric memory,
//! which threads on any PE push to and pop from.
//!
//! The host creates a queue collectively (`rshmem::SymQueue::new(&shmem, capacity, home)`) and
//! passes [`SymQueue`], this handle, to kernels. The ring lives on its *home* PE; threads of
//! every PE reach it with remote atomics and puts/gets. Every PE's copy of the allocation is a
//! complete queue, so [`SymQueue::on`] addresses the queue on any PE: that is the per-PE
//! (mailbox) form, where each PE owns a queue and producers push to a chosen PE's.
//!
//! ```ignore
//! #[kernel]
//! pub unsafe fn relay(q: SymQueue<[u32; 3]>, n: u32) {
//!     for i in 0..n {
//!         q.push([shmem::my_pe() as u32, i, 7]); // blocks while full
//!         let got = q.pop();                     // blocks while empty
//!     }
//! }
//! ```
//!
//! # Operations
//!
//! | | thread | warp / block (one reservation per batch) |
//! |---|---|---|
//! | waits | [`push`](SymQueue::push), [`push_ref`](SymQueue::push_ref), [`pop`](SymQueue::pop) | [`push_batch`](SymQueue::push_batch), [`pop_batch`](SymQueue::pop_batch) (each member its elements); [`push_cooperative`](SymQueue::push_cooperative), [`pop_cooperative`](SymQueue::pop_cooperative) (each element by a whole warp) |
//! | returns at once | [`try_push`](SymQueue::try_push), [`try_pop`](SymQueue::try_pop) | |
//!
//! Elements are any `Copy` type (the host requires `bytemuck::Pod`: no padding, every bit
//! pattern valid), of any size: they move through the peer mapping `shmem::ptr` gives, or word by
//! word with `p`/`g` where a PE has none (the `copy` module says why not `putmem`/`getmem`). Each producer's elements
//! come out in the order it pushed them; no element is lost, duplicated or torn.
//!
//! # Algorithm
//!
//! Vyukov's bounded MPMC queue in its ticketed form (Rigtorp's `MPMCQueue`), on 64-bit
//! counters and sequence numbers, written once in [`ring`] against the operations of
//! [`ring::RingMemory`] (which this handle implements with SHMEM calls, and the loom model in
//! `tests/queue_loom.rs` with loom's atomics).
//!
//! * `tail` and `head` count tickets pushed and popped. A blocking push takes ticket
//!   `t = fetch_add(tail, 1)`; a blocking pop takes `h = fetch_add(head, 1)`. Ticket `t` uses
//!   slot `t mod capacity` (a mask for powers of two).
//! * Slot `s` carries a sequence number: `2t` means "free for ticket `t`'s producer", `2t + 1`
//!   "holds ticket `t`'s element" ([`layout::free_for`], [`layout::holds`]). The producer of
//!   `t` waits for `2t`, writes the element and `2t + 1`; the consumer of `t` waits for
//!   `2t + 1`, reads the element and sets `2(t + capacity)`, freeing the slot for the next
//!   round's producer. (Doubling keeps "holds `t`" apart from "free for `t + 1`" at
//!   capacity 1.)
//! * `try_push` reads `tail = t` and slot `t`'s sequence; if it is `2t` it claims the ticket
//!   with `compare_swap(tail, t, t + 1)`, if it is smaller the queue is full. `try_pop` is
//!   the mirror image on `head`. Blocking and non-blocking calls mix freely.
//! * A batch of `n` claims `n` consecutive tickets with one `fetch_add(tail, n)` (one
//!   reservation per batch) and hands the first to the group through `scratch` and a group
//!   barrier. Then [`ring::move_tickets`] moves the elements: each member its share (elements
//!   `rank, rank + size, ...`) alone, or each warp a contiguous part together (a
//!   [`ring::Crew`]: lanes poll the next slots, copy the ready elements' words side by side,
//!   and publish up to 32 with one fence). Nobody waits while holding an element someone else
//!   waits for (a crew publishes before it waits): a group that waited for all of its slots
//!   before writing any could wait for a consumer that waits for one of its elements. Pops
//!   mirror this.
//!
//! # Why it is correct (the ordering argument)
//!
//! 1. **Ownership.** Tickets are unique: each comes from one `fetch_add` or one successful
//!    `compare_swap` on a 64-bit counter (it would take centuries to wrap). A slot's sequence
//!    number is changed only by the holder of the ticket it names (`2t` by producer `t`,
//!    `2t + 1` by consumer `t`), so at any time at most one thread owns a slot: producer `t`
//!    from seeing `2t` to setting `2t + 1`, consumer `t` from seeing `2t + 1` to setting
//!    `2(t + capacity)`. The consumer of ticket `t` therefore receives exactly the element of
//!    ticket `t`: nothing is lost or duplicated. `try_push` claims ticket `t` only if `tail`
//!    still equals `t` at its `compare_swap`, so nobody else holds `t` and the slot it saw
//!    free is still free (only `t`'s holder changes it). A sequence number past the awaited
//!    one can only come from foreign writes, and is reported.
//! 2. **FIFO per producer.** A producer's pushes take increasing tickets (its `fetch_add`s
//!    are program-ordered on one counter; a batch member's share is in ticket order), and a
//!    consumer's pops take increasing tickets; the consumer of ticket `t` gets element `t`.
//!    So any consumer sees each producer's elements in the order they were pushed.
//! 3. **Publication (no torn reads).** The producer writes the element, executes `fence`
//!    — NVSHMEM's `nvshmem_fence`, on NVLink a `membar.sys` (PTX `fence.sc.sys`), a full
//!    fence — and then sets the sequence number with `atomic_set`: a release. The consumer
//!    polls the sequence with `atomic_fetch` (an `atom.sys`: a strong read that cannot be
//!    hoisted out of the loop), and after seeing `2t + 1` executes `fence` before reading the
//!    element: an acquire. `signal_wait_until` and plain polls have no trailing acquire,
//!    which is why the fence is there.
//! 4. **Reuse (no write-after-read race).** The element is read into the consumer's own
//!    registers or stack before it fences (release) and frees the slot with `atomic_set`.
//!    The next producer sees that, fences (acquire), and only then overwrites the slot.
//! 5. **Counters need no ordering.** No data is published through `tail` or `head`, so their
//!    atomics may be relaxed (NVSHMEM's AMOs are); the loom model checks the protocol with
//!    `Relaxed` counters and sequence accesses, `Release` publication and the fences only,
//!    and a control run without the fences fails.
//! 6. **Batches** run the protocol above per member or per warp; the group barriers only
//!    hand out the reservation and keep `scratch` until every member has read it.
//! 7. **Crews.** A polling lane fences after its own poll and before the vote's barrier
//!    (acquire), which hands the slot to the lanes that copy its words; before publishing, a
//!    barrier orders every lane's copies before every lane's fence, and lane `j`'s fence and
//!    store publish element `j` (release, carried to the other lanes' copies by the barrier).
//!
//! On the CPU simulator every operation is sequentially consistent, which satisfies all of
//! the above; the loom model is what checks the weaker orderings.
//!
//! # Progress and waiting
//!
//! A blocked push waits for the consumer of the ticket `capacity` before its own; a blocked
//! pop waits for the producer of its ticket. Those threads must be able to run: on a GPU,
//! launch kernels whose blocks wait for each other cooperatively (all blocks resident), and
//! target sm_70 or newer (independent thread scheduling lets lanes of one warp wait for each
//! other). Kernels of different PEs that wait for each other must run at the same time, which
//! nothing promises where PEs share a GPU (docs/queue.md, "Progress"). Waits poll with
//! `atomic_fetch` and back off (`nanosleep` from 32 ns to 1 µs on the GPU; spin, yield, then
//! sleep on the simulator).
//!
//! **Debug bound.** A queue created with `max_spins(n)` (or with `RSHMEM_QUEUE_MAX_SPINS=n`
//! in the host's environment) gives up after `n` polls of one wait. On the GPU the thread
//! prints one line with the device `printf`, naming the queue's label and home PE, the
//! operation, the PE, block and thread, the ticket, the slot and its sequence, then traps
//! (a trap cannot carry text; the line appears on the PE's stdout, `[PE k]`-prefixed). On the
//! simulator the kernel fails with the same sentence as its error. The simulator also ends
//! every unbounded wait when the job can no longer satisfy it (a failed thread, kernel or
//! PE) or after `RSHMEM_SIM_WAIT_TIMEOUT` seconds, with that sentence.

mod copy;
pub mod layout;
pub mod phases;
pub mod ring;
mod wait;

use core::marker::PhantomData;
use core::mem::MaybeUninit;

use crate::kernel::KernelArg;
use crate::shmem::{self, Scope, ScopeKind};
use crate::warp::WARP_SIZE;
use copy::Dir;
use layout::{HEAD, SEQ, TAIL};
use ring::{Counter, Crew, Op, RingMemory, Stall};

/// A kernel's handle to a symmetric queue of `T`: raw pointers to this PE's copy of the
/// queue's symmetric allocations, the capacity, the PE whose queue it addresses, and the debug
/// bound. Plain data (`#[repr(C)]`, `Copy`), passed to kernels by value.
///
/// Made by the host's `rshmem::SymQueue::handle`; see the [module documentation](self).
#[repr(C)]
pub struct SymQueue<T> {
    words: *mut u64,
    slots: *mut T,
    capacity: u64,
    max_spins: u64,
    pe: i32,
    /// Keeps the layout free of padding (a `KernelArg` requirement).
    _reserved: u32,
    _t: PhantomData<T>,
}

impl<T> Clone for SymQueue<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SymQueue<T> {}

// SAFETY: `#[repr(C)]` of two pointers, two `u64`, an `i32` and a `u32`: the same size,
// alignment and meaning on the host and the device, with no padding.
unsafe impl<T: Copy + 'static> KernelArg for SymQueue<T> {}

impl<T> core::fmt::Debug for SymQueue<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SymQueue")
            .field("words", &self.words)
            .field("slots", &self.slots)
            .field("capacity", &self.capacity)
            .field("pe", &self.pe)
            .field("max_spins", &self.max_spins)
            .finish()
    }
}

impl<T: Copy> SymQueue<T> {
    /// A handle from its parts; the host's `SymQueue` makes it.
    ///
    /// # Safety
    ///
    /// `words` and `slots` must be symmetric allocations of [`layout::words_len`]`(capacity)`
    /// words and `capacity` elements, initialised on every PE as [`layout::initial_words`]
    /// describes before any kernel uses the handle; `capacity >= 1`; `pe` a PE of the job.
    pub unsafe fn from_raw_parts(
        words: *mut u64,
        slots: *mut T,
        capacity: u64,
        pe: i32,
        max_spins: u64,
    ) -> Self {
        Self {
            words,
            slots,
            capacity,
            max_spins,
            pe,
            _reserved: 0,
            _t: PhantomData,
        }
    }

    /// Slots in the ring.
    #[inline(always)]
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The PE whose queue this handle addresses.
    #[inline(always)]
    pub fn pe(&self) -> i32 {
        self.pe
    }

    /// The debug bound on polls per wait (0: none).
    #[inline(always)]
    pub fn max_spins(&self) -> u64 {
        self.max_spins
    }

    /// The same queue's copy on PE `pe`: in the per-PE form, PE `pe`'s mailbox.
    ///
    /// # Panics
    ///
    /// If `pe` is not in `0..n_pes()` (a trap on the GPU).
    #[inline(always)]
    pub fn on(self, pe: i32) -> Self {
        assert!(pe >= 0 && pe < shmem::n_pes(), "SymQueue::on: no PE {pe}");
        Self { pe, ..self }
    }

    /// Pushes `item`, waiting while the queue is full.
    ///
    /// # Safety
    ///
    /// The handle must come from a host `SymQueue` that outlives the kernel (the launch's
    /// contract), and threads that will pop must be able to run while this one waits (see
    /// [Progress](self#progress-and-waiting)).
    #[inline(always)]
    pub unsafe fn push(&self, item: T) {
        // SAFETY: forwarded; the handle describes an initialised ring.
        unsafe { ring::push(self, &item) }
    }

    /// Pushes a copy of `*item`, waiting while the queue is full: [`push`](Self::push)
    /// without moving the element into the call. For elements of more than 128 bytes built in
    /// a variable: passing one by value may be compiled as a copy a byte at a time (the
    /// module's `copy` says why).
    ///
    /// # Safety
    ///
    /// As [`push`](Self::push).
    #[inline(always)]
    pub unsafe fn push_ref(&self, item: &T) {
        // SAFETY: forwarded; the handle describes an initialised ring.
        unsafe { ring::push(self, item) }
    }

    /// Pops an element, waiting while the queue is empty.
    ///
    /// # Safety
    ///
    /// As [`push`](Self::push), with threads that will push able to run.
    #[inline(always)]
    pub unsafe fn pop(&self) -> T {
        let mut out = MaybeUninit::<T>::uninit();
        // SAFETY: forwarded; `pop` writes every byte of `out`.
        unsafe {
            ring::pop(self, out.as_mut_ptr());
            out.assume_init()
        }
    }

    /// Pushes `item` if a slot is free now; returns it otherwise.
    ///
    /// # Safety
    ///
    /// The handle must come from a host `SymQueue` that outlives the kernel.
    #[inline(always)]
    pub unsafe fn try_push(&self, item: T) -> Result<(), T> {
        // SAFETY: forwarded.
        match unsafe { ring::try_push(self, &item) } {
            true => Ok(()),
            false => Err(item),
        }
    }

    /// Pops an element if one is ready now.
    ///
    /// # Safety
    ///
    /// As [`try_push`](Self::try_push).
    #[inline(always)]
    pub unsafe fn try_pop(&self) -> Option<T> {
        let mut out = MaybeUninit::<T>::uninit();
        // SAFETY: forwarded; a successful `try_pop` writes every byte of `out`.
        unsafe { ring::try_pop(self, out.as_mut_ptr()).then(|| out.assume_init()) }
    }

    /// Elements in the queue at one moment (a hint: producers and consumers move on).
    ///
    /// # Safety
    ///
    /// As [`try_push`](Self::try_push).
    #[inline(always)]
    pub unsafe fn len(&self) -> u64 {
        ring::len(self)
    }

    /// Whether [`len`](Self::len) is 0.
    ///
    /// # Safety
    ///
    /// As [`try_push`](Self::try_push).
    #[inline(always)]
    pub unsafe fn is_empty(&self) -> bool {
        // SAFETY: forwarded.
        unsafe { self.len() == 0 }
    }

    /// Pushes `items[..n]` in order, cooperatively: every thread of the scope `S` (the thread,
    /// its warp or its block) calls with the same arguments. One reservation (one `fetch_add`
    /// of `n` on the tail) for the whole batch, then each member pushes its share (elements
    /// `rank, rank + size, ...`) on its own, waiting while their slots are full; `n` may exceed
    /// the capacity. `scratch` is one `u64` in memory the whole group reads and writes (shared or
    /// global memory, this group's alone during the call) through which the leader hands out
    /// the reservation. Returns when the whole batch is in.
    ///
    /// Each member moves whole elements by itself: for elements of more than a few words,
    /// [`push_cooperative`](Self::push_cooperative) moves each with a whole warp, faster.
    ///
    /// # Safety
    ///
    /// As [`push`](Self::push); `items` valid for reading `n` elements and `scratch` for
    /// reading and writing one `u64` by every member; for `Warp`, all lanes of the warp call.
    pub unsafe fn push_batch<S: Scope>(&self, items: *const T, n: usize, scratch: *mut u64) {
        // SAFETY: forwarded.
        unsafe { self.batch::<S>(Op::Push, items.cast_mut(), n, scratch, Split::PerMember) }
    }

    /// Pops `n` elements into `out[..n]`, in ticket order, cooperatively (as
    /// [`push_batch`](Self::push_batch)); waits while the queue lacks elements.
    ///
    /// # Safety
    ///
    /// As [`push_batch`](Self::push_batch), with `out` valid for writing `n` elements.
    pub unsafe fn pop_batch<S: Scope>(&self, out: *mut T, n: usize, scratch: *mut u64) {
        // SAFETY: forwarded.
        unsafe { self.batch::<S>(Op::Pop, out, n, scratch, Split::PerMember) }
    }

    /// Pushes `items[..n]` in order with one reservation, each element moved by a whole warp:
    /// every thread of the scope `S` calls with the same arguments. With `Warp`, the warp moves
    /// the batch's elements one after another, its lanes copying each element's 16-byte words
    /// side by side (a coalesced access), and publishes up to 32 at a time with one fence; with
    /// `Block`, each warp of the block so moves its own contiguous part of the batch; with
    /// `Thread`, the thread alone. One lane polls each slot, so a warp waits as one thread.
    /// `n` may exceed the capacity; `scratch` is as for [`push_batch`](Self::push_batch).
    ///
    /// `items` must be memory every member reads (global or shared memory; the call begins
    /// with a barrier of the group, so members may write their elements just before it), not
    /// one thread's local variables. This is the fast way to move elements of hundreds of
    /// bytes or more.
    ///
    /// # Safety
    ///
    /// As [`push_batch`](Self::push_batch); for `Warp` and `Block`, every thread of the warp
    /// or block calls (all lanes of each warp: they meet in warp barriers and votes).
    pub unsafe fn push_cooperative<S: Scope>(&self, items: *const T, n: usize, scratch: *mut u64) {
        // SAFETY: forwarded.
        unsafe { self.batch::<S>(Op::Push, items.cast_mut(), n, scratch, Split::PerWarp) }
    }

    /// Pops `n` elements into `out[..n]`, in ticket order, each moved by a whole warp (as
    /// [`push_cooperative`](Self::push_cooperative)); waits while the queue lacks elements.
    /// When it returns, every element is in `out` for the whole group.
    ///
    /// # Safety
    ///
    /// As [`push_cooperative`](Self::push_cooperative), with `out` valid for writing `n`
    /// elements by every member.
    pub unsafe fn pop_cooperative<S: Scope>(&self, out: *mut T, n: usize, scratch: *mut u64) {
        // SAFETY: forwarded.
        unsafe { self.batch::<S>(Op::Pop, out, n, scratch, Split::PerWarp) }
    }

    /// One batched push or pop: the leader reserves `n` tickets, then the elements move as
    /// `split` says: each member its elements `rank, rank + size, ...` alone, or each warp a
    /// contiguous part, together ([`ring::move_tickets`]).
    ///
    /// Nobody waits while holding an element another thread waits for (the ring's
    /// `move_tickets` publishes before it waits): a group that waited for all of its slots
    /// before moving any could wait for a consumer that waits for one of its elements.
    ///
    /// # Safety
    ///
    /// As [`push_batch`](Self::push_batch).
    unsafe fn batch<S: Scope>(
        &self,
        op: Op,
        data: *mut T,
        n: usize,
        scratch: *mut u64,
        split: Split,
    ) {
        if n == 0 {
            return;
        }
        let (rank, size) = wait::group::<S>();
        let mut lap = phases::Lap::start();
        if rank == 0 {
            let counter = match op {
                Op::Push => Counter::Tail,
                Op::Pop => Counter::Head,
            };
            let first = self.fetch_add(counter, n as u64);
            // SAFETY: the caller's contract on `scratch`.
            unsafe { scratch.write_volatile(first) };
        }
        wait::group_sync::<S>(size);
        // SAFETY: written by the leader before the barrier.
        let first = unsafe { scratch.read_volatile() };
        lap.lap(phases::Phase::Reserve);
        // Each ticket of the reservation is moved once, by the member or warp it falls to.
        match (split, S::KIND) {
            (Split::PerMember, _) | (Split::PerWarp, ScopeKind::Thread) => {
                let crew = ring::Alone;
                let (step, whole) = (size as usize, split == Split::PerWarp);
                let mut i = if whole { 0 } else { rank as usize };
                while i < n {
                    let count = if whole { n - i } else { 1 };
                    // SAFETY: tickets `first + i ..` of the reservation are this member's;
                    // `data` holds `n` elements (the caller's contract).
                    unsafe {
                        ring::move_tickets(
                            self,
                            &crew,
                            op,
                            first + i as u64,
                            data.add(i),
                            count as u64,
                        )
                    };
                    i += if whole { count } else { step };
                }
            }
            (Split::PerWarp, _) => {
                let crew = wait::WarpCrew::of_this_thread();
                // Warp `w` of `warps` in the group moves elements `lo..hi`.
                let (w, warps) = match S::KIND {
                    ScopeKind::Block => (rank / WARP_SIZE, size.div_ceil(WARP_SIZE)),
                    _ => (0, 1),
                };
                let per = n.div_ceil(warps as usize);
                let lo = (w as usize * per).min(n);
                let hi = (lo + per).min(n);
                if lo < hi {
                    // SAFETY: tickets `first + lo .. first + hi` are this warp's part of the
                    // reservation; `data` holds `n` elements (the caller's contract).
                    unsafe {
                        ring::move_tickets(
                            self,
                            &crew,
                            op,
                            first + lo as u64,
                            data.add(lo),
                            (hi - lo) as u64,
                        )
                    };
                }
            }
        }
        // Every member has read `scratch` (the leader's next call may overwrite it), and every
        // popped element is in `data` for the whole group.
        wait::group_sync::<S>(size);
    }

    #[inline(always)]
    fn counter(&self, c: Counter) -> *mut u64 {
        self.words.wrapping_add(match c {
            Counter::Tail => TAIL,
            Counter::Head => HEAD,
        })
    }

    #[inline(always)]
    fn seq(&self, slot: u64) -> *mut u64 {
        self.words.wrapping_add(SEQ + slot as usize)
    }

    #[inline(always)]
    fn slots(&self) -> copy::Slots<T> {
        copy::Slots {
            base: self.slots,
            capacity: self.capacity,
            pe: self.pe,
        }
    }
}

/// How a batch's elements fall to its group's threads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Split {
    /// Member `rank` moves elements `rank, rank + size, ...`, each alone.
    PerMember,
    /// Each warp moves a contiguous part, its lanes together (the thread alone at `Thread`).
    PerWarp,
}

// SAFETY: every method maps to SHMEM operations on the queue's home PE with the stated
// guarantee: AMOs are atomic across PEs; `put`/`get` copy the member's words and order
// nothing; `fence` is a full fence (`membar.sys` on the GPU, `SeqCst` on the simulator).
unsafe impl<T: Copy> RingMemory for SymQueue<T> {
    type Item = T;
    type Backoff = wait::Backoff;

    #[inline(always)]
    fn capacity(&self) -> u64 {
        self.capacity
    }

    #[inline(always)]
    fn fetch_add(&self, counter: Counter, n: u64) -> u64 {
        // SAFETY: the counter is a symmetric u64 of the queue; `pe` is a PE of the job.
        unsafe { shmem::atomic_fetch_add(self.counter(counter), n, self.pe) }
    }

    #[inline(always)]
    fn load(&self, counter: Counter) -> u64 {
        // SAFETY: as above.
        unsafe { shmem::atomic_fetch(self.counter(counter), self.pe) }
    }

    #[inline(always)]
    fn compare_swap(&self, counter: Counter, cond: u64, new: u64) -> u64 {
        // SAFETY: as above.
        unsafe { shmem::atomic_compare_swap(self.counter(counter), cond, new, self.pe) }
    }

    #[inline(always)]
    fn load_seq(&self, slot: u64) -> u64 {
        // SAFETY: `slot < capacity`, so the sequence word is inside the queue's words.
        unsafe { shmem::atomic_fetch(self.seq(slot), self.pe) }
    }

    #[inline(always)]
    fn store_seq(&self, slot: u64, seq: u64) {
        // SAFETY: as above.
        unsafe { shmem::atomic_set(self.seq(slot), seq, self.pe) }
    }

    #[inline(always)]
    unsafe fn put<C: Crew>(&self, crew: &C, first: u64, src: *const T, count: u64) {
        // SAFETY: the crew owns the slots and `src` holds `count` elements (the caller's
        // contract).
        unsafe {
            copy::move_elements(
                self.slots(),
                crew,
                Dir::ToSlots,
                first,
                src.cast_mut(),
                count,
            )
        }
    }

    #[inline(always)]
    unsafe fn get<C: Crew>(&self, crew: &C, first: u64, dst: *mut T, count: u64) {
        // SAFETY: as above, with `dst` writable.
        unsafe { copy::move_elements(self.slots(), crew, Dir::FromSlots, first, dst, count) }
    }

    #[inline(always)]
    fn fence(&self) {
        shmem::fence()
    }

    #[inline(always)]
    fn max_spins(&self) -> u64 {
        self.max_spins
    }

    #[inline(always)]
    fn pause(&self, backoff: &mut wait::Backoff, spins: u64, what: &dyn Fn() -> Stall) {
        wait::pause(self, backoff, spins, what)
    }

    #[cold]
    fn stalled(&self, stall: Stall) -> ! {
        wait::report(self, stall)
    }
}
