//! The flag words of the fused calls. The operations on them are rshmem-coll's per-chunk
//! signal blocks: [`rshmem_coll::signal::signal`] (one thread, after a block barrier: a
//! system-scope release of the block's writes, then the peer's flag) and
//! [`rshmem_coll::signal::wait`] (until a local flag reaches a value, then a system-scope
//! acquire).
//!
//! One symmetric `u64` buffer per `Ops` holds them: this PE's call counter, then three regions
//! indexed by the *sender's* team rank (each slot has one writer per call):
//!
//! | word | what | set by |
//! |---|---|---|
//! | [`EPOCH`] | calls this PE has started: the running call's epoch ([`crate::TpCall::epoch`]) | this PE's barrier kernel, which adds 1 |
//! | [`barrier_slot`]`(s)` | rank `s` has started the call ([`crate::barrier`]): its epoch | the barrier kernel of rank `s` |
//! | [`arrived_slot`]`(size, s)` | rank `s`'s chunk of A is here (all-gather): [`ARRIVED`] | rank `s`'s copy engine, after the chunk (`Stream::put_signal`); this PE's barrier clears it |
//! | [`tile_slot`]`(size, tiles, s, t)` | rank `s`'s partial of tile `t` is here (reduce-scatter): its epoch | rank `s`'s GEMM, after its stores of the tile ([`crate::rs`]) |
//!
//! [`words`] is the buffer's length. The barrier and tile flags hold epochs and only grow, so
//! they are never reset. The arrival flags cannot hold epochs: the copy engine writes a value
//! fixed when the call is queued (or recorded into a graph), while the epoch is known on the
//! device only. They hold [`ARRIVED`] and are cleared by their reader, in the barrier of the
//! next call (see [`crate::barrier`] for why that is never too early nor too late).
//!
//! ```
//! use rshmem_tp::flags;
//! // 4 PEs and 6 tiles of C: the counter, 8 words of barrier and arrival flags, 24 tile flags.
//! assert_eq!((flags::arrived_slot(4, 0), flags::tile_slot(4, 6, 0, 0)), (5, 9));
//! assert_eq!((flags::tile_slot(4, 6, 3, 5), flags::words(4, 6)), (32, 33));
//! ```

/// The word that counts this PE's fused calls (only this PE writes it): its barrier kernel of
/// a call adds 1, and every kernel of the call reads the call's epoch there
/// ([`crate::TpCall::load_epoch`]).
pub const EPOCH: usize = 0;

/// What the copy engine writes into an arrival flag once a chunk has arrived.
pub const ARRIVED: u64 = 1;

/// The word where rank `s` signals that it has started the call.
pub const fn barrier_slot(s: u32) -> usize {
    1 + s as usize
}

/// The word where rank `s` (of `size`) signals that its chunk of A has arrived here.
pub const fn arrived_slot(size: u32, s: u32) -> usize {
    1 + size as usize + s as usize
}

/// The word where rank `s` (of `size`) signals that its partial of tile `t` (of `tiles`) has
/// arrived here.
pub const fn tile_slot(size: u32, tiles: u32, s: u32, t: u32) -> usize {
    1 + 2 * size as usize + s as usize * tiles as usize + t as usize
}

/// Words of the flag buffer for a team of `size` PEs and `tiles` tiles of C.
pub const fn words(size: u32, tiles: u32) -> usize {
    tile_slot(size, tiles, size, 0)
}
