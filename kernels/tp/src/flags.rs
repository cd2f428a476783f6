//! The flag words of the fused calls. The operations on them are rshmem-coll's per-chunk
//! signal blocks: [`rshmem_coll::signal::signal`] (one thread, after a block barrier: a
//! system-scope release of the block's writes, then the peer's flag) and
//! [`rshmem_coll::signal::wait`] (until a local flag reaches the call's epoch, then a
//! system-scope acquire).
//!
//! One symmetric `u64` buffer per `Ops` holds them, in three regions indexed by the *sender's*
//! team rank (each slot has one writer per call):
//!
//! | word | what | set by |
//! |---|---|---|
//! | [`barrier_slot`]`(s)` | rank `s` has started the call ([`crate::barrier`]) | the barrier kernel of rank `s` |
//! | [`arrived_slot`]`(size, s)` | rank `s`'s chunk of A is here (all-gather) | rank `s`'s copy engine, after the chunk (`Stream::put_signal`) |
//! | [`tile_slot`]`(size, tiles, s, t)` | rank `s`'s partial of tile `t` is here (reduce-scatter) | rank `s`'s GEMM, after its stores of the tile ([`crate::rs`]) |
//!
//! [`words`] is the buffer's length. Flags hold epochs ([`crate::TpCall::epoch`]) and only
//! grow, so they are never reset.
//!
//! ```
//! use rshmem_tp::flags;
//! // 4 PEs and 6 tiles of C: 8 words of barrier and arrival flags, 24 tile flags.
//! assert_eq!((flags::arrived_slot(4, 0), flags::tile_slot(4, 6, 0, 0)), (4, 8));
//! assert_eq!((flags::tile_slot(4, 6, 3, 5), flags::words(4, 6)), (31, 32));
//! ```

/// The word where rank `s` signals that it has started the call.
pub const fn barrier_slot(s: u32) -> usize {
    s as usize
}

/// The word where rank `s` (of `size`) signals that its chunk of A has arrived here.
pub const fn arrived_slot(size: u32, s: u32) -> usize {
    size as usize + s as usize
}

/// The word where rank `s` (of `size`) signals that its partial of tile `t` (of `tiles`) has
/// arrived here.
pub const fn tile_slot(size: u32, tiles: u32, s: u32, t: u32) -> usize {
    2 * size as usize + s as usize * tiles as usize + t as usize
}

/// Words of the flag buffer for a team of `size` PEs and `tiles` tiles of C.
pub const fn words(size: u32, tiles: u32) -> usize {
    tile_slot(size, tiles, size, 0)
}
