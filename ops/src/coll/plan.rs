//! Which algorithm a collective runs and with what grid: [`Algorithm`] (what a user may
//! force), the size thresholds of [`Algorithm::Auto`] and the channel's dimensions.
//!
//! **The thresholds, measured where one GPU can measure them.** Under MPS several PEs share
//! one GPU and run at once, so the protocols' own costs (flags, slots, steps) show; peers are
//! local HBM, not NVLink, so bandwidth crossovers may move on links. Per PE and call, `B` the
//! bytes of one PE's data and `n` the team size; µs per bf16 all-reduce in a CUDA graph, 2 and
//! 4 PEs sharing an H100 under MPS (`docs/mps.md`, 2026-12-06):
//!
//! | B | n = 2: Lamport / one-shot / two-shot | n = 4: Lamport / one-shot / two-shot |
//! |---|---|---|
//! | 8 B | 6.2 / 10.1 / 12.3 | 10.0 / 15.5 / 20.4 |
//! | 64 KiB | 6.8 / 12.4 / 14.8 | 10.5 / 18.9 / 23.2 |
//! | 256 KiB | 7.0 / 13.0 / 15.2 | 17.7 / 19.5 / 24.0 |
//! | 1 MiB | – / 21.2 / 15.5 | – / 66.3 / 24.6 |
//!
//! * flag-in-data (Lamport) one-shot: `(n − 1)·B` written to peers in one one-way trip, no
//!   signal round. The fastest wherever its slots hold the message (256 KiB) at n = 2 and
//!   n = 4: so `B ≤ 256 KiB` for `n ≤ 4`. Above 4 members the write volume grows with `n`:
//!   64 KiB, reasoned (not measured: one GPU runs at most 4 PEs under MPS).
//! * one-shot through push slots: the same writes plus one signal round; integers, and floats
//!   above the slots. Beats two-shot at 256 KiB and loses at 1 MiB for n = 2 and 4: `512 KiB`
//!   for `n ≤ 4` (the crossover lies between the two measured sizes); `256 KiB` above,
//!   reasoned. On NVLink the push writes cross the link and two-shot's reads do too: the
//!   crossover needs two GPUs to be confirmed.
//! * two-shot: `2·(n − 1)/n·B` per PE in two steps, the bandwidth-optimal exchange on a
//!   full NVLink mesh; everything larger.
//! * The fused all-reduce + RMSNorm splits rows over the members above the Lamport limit's old
//!   values (256 / 128 / 64 KiB, `rmsnorm_split_limit`), reasoned, not measured.
//!
//! Teams that are not reached through peer mappings (several nodes) always use the push
//! slots, whose pushes become NVSHMEM puts.

use super::elem::Family;
use rshmem_coll::channel::Shape;
use rshmem_host::{Backend, DeviceInfo};

/// Which algorithm a collective runs (`Ops::set_algorithm`); [`Algorithm::Auto`] picks by
/// size and element type (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Algorithm {
    /// By size, element type and peer mappings (the default).
    #[default]
    Auto,
    /// The flag-in-data all-reduce (floats, peer-mapped teams of up to 8, messages that fit
    /// the channel's flag-in-data slots).
    Lamport,
    /// One step through push slots: every member's data to every member (reduce-scatter: each
    /// chunk to its owner), reduced there; all-gather's only algorithm; RMSNorm on every
    /// member for every row.
    OneShot,
    /// Reduce-scatter then all-gather through peer reads and writes (peer-mapped teams of up
    /// to 8); RMSNorm with rows split over the members.
    TwoShot,
}

/// The most blocks a collective launches on a GPU, and the rows of a channel.
pub(crate) const ROWS: u32 = 64;
/// Bytes of one push slot (and the part of a message a block takes per round).
pub(crate) const PUSH_REGION: u32 = 16 << 10;
/// Flag-in-data slots per (parity, source), and their size: 256 KiB per PE message.
pub(crate) const LAMPORT_SLOTS: u32 = 32;
pub(crate) const LAMPORT_REGION: u32 = 8 << 10;
/// Bytes a block of a two-shot or all-gather kernel takes before another block is added.
const BLOCK_BYTES: usize = 16 << 10;

/// The channel of a job of `world` PEs: 64 rows and flag-in-data slots up to 8 PEs; beyond,
/// fewer rows so that the push slots stay within 16 MiB per PE.
pub(crate) fn channel_shape(world: usize) -> Shape {
    let rows = (512 / world.max(1)).clamp(1, ROWS as usize) as u32;
    Shape {
        world: world as u32,
        rows,
        push_region: PUSH_REGION,
        lamport_slots: if world <= rshmem_coll::MAX_PEERS {
            LAMPORT_SLOTS
        } else {
            0
        },
        lamport_region: LAMPORT_REGION,
    }
}

/// Largest per-PE message of the flag-in-data all-reduce under [`Algorithm::Auto`].
pub(crate) fn lamport_limit(n: usize) -> usize {
    if n <= 4 {
        256 << 10
    } else {
        64 << 10
    }
}

/// Largest per-PE message the fused all-reduce + RMSNorm runs in one step under
/// [`Algorithm::Auto`] (reasoned: module docs).
pub(crate) fn rmsnorm_split_limit(n: usize) -> usize {
    match n {
        0..=2 => 256 << 10,
        3..=4 => 128 << 10,
        _ => 64 << 10,
    }
}

/// Largest per-PE message of the one-shot all-reduce under [`Algorithm::Auto`].
pub(crate) fn one_shot_limit(n: usize) -> usize {
    match n {
        0..=4 => 512 << 10,
        _ => 256 << 10,
    }
}

/// The kernel family [`Algorithm::Auto`] runs for a reduction of `bytes` per PE over `n`
/// members (the thresholds of the module docs): one-shot (push slots) where some member is
/// not peer-mapped; a reduce-scatter (`scatter`: no flag-in-data form, `n·bytes` per PE in
/// its one-shot form) one-shot or two-shot; an all-reduce flag-in-data for float elements
/// whose message fits the limit and the channel's slots (`lamport_room` bytes), else one-shot
/// or two-shot.
pub(crate) fn auto_family(
    float: bool,
    mapped: bool,
    scatter: bool,
    bytes: usize,
    n: usize,
    lamport_room: usize,
) -> Family {
    let one_shot_bytes = if scatter {
        bytes.saturating_mul(n)
    } else {
        bytes
    };
    if !mapped {
        Family::Push
    } else if !scatter && float && bytes <= lamport_limit(n).min(lamport_room) {
        Family::Lamport
    } else if one_shot_bytes <= one_shot_limit(n) {
        Family::Push
    } else {
        Family::TwoShot
    }
}

/// How many blocks and threads the collectives launch on this PE's device: on a GPU up to
/// one block per SM (at most the channel's rows) of 512 threads; on the simulator, where
/// every thread is a host thread, 2 blocks of 32 (the fused RMSNorm: 64).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grid {
    pub(crate) max_blocks: u32,
    pub(crate) threads: u32,
}

impl Grid {
    pub(crate) fn new(backend: Backend, info: DeviceInfo, shape: Shape) -> Grid {
        match backend {
            Backend::Sim => Grid {
                max_blocks: 2.min(shape.rows),
                threads: 32,
            },
            _ => Grid {
                max_blocks: info.multiprocessors.clamp(1, shape.rows),
                threads: 512,
            },
        }
    }

    /// Blocks for `bytes` of work at `per_block` bytes each (at least 1).
    pub(crate) fn blocks(self, bytes: usize, per_block: usize) -> u32 {
        bytes
            .div_ceil(per_block.max(1))
            .clamp(1, self.max_blocks as usize) as u32
    }

    /// Blocks of a two-shot or all-gather kernel moving `bytes` per PE.
    pub(crate) fn blocks_for(self, bytes: usize) -> u32 {
        self.blocks(bytes, BLOCK_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Auto's picks on the sizes the same-GPU latency rows measured (module docs: the fastest
    /// algorithm at each, 2 and 4 PEs), and where no measurement reaches (more members,
    /// unmapped teams, integers, reduce-scatter).
    #[test]
    fn auto_picks_the_measured_fastest() {
        use Family::{Lamport, Push, TwoShot};
        let room = 256 << 10;
        let all_reduce = |float, bytes, n| auto_family(float, true, false, bytes, n, room);
        for n in [2, 4] {
            for bytes in [8, 4 << 10, 64 << 10, 256 << 10] {
                assert_eq!(all_reduce(true, bytes, n), Lamport, "{bytes} B, {n} PEs");
            }
            for bytes in [1 << 20, 4 << 20] {
                assert_eq!(all_reduce(true, bytes, n), TwoShot, "{bytes} B, {n} PEs");
            }
            // Integers: one-shot (push) measured faster than two-shot at 256 KiB, slower at 1 MiB.
            assert_eq!(all_reduce(false, 256 << 10, n), Push);
            assert_eq!(all_reduce(false, 1 << 20, n), TwoShot);
        }
        // Slots smaller than the limit, more members, a team not peer-mapped, reduce-scatter.
        assert_eq!(auto_family(true, true, false, 128 << 10, 2, 64 << 10), Push);
        assert_eq!(all_reduce(true, 128 << 10, 8), Push);
        assert_eq!(all_reduce(true, 512 << 10, 8), TwoShot);
        assert_eq!(auto_family(true, false, false, 8, 2, room), Push);
        assert_eq!(auto_family(true, false, false, 64 << 20, 2, room), Push);
        assert_eq!(auto_family(true, true, true, 8, 2, room), Push);
        assert_eq!(auto_family(true, true, true, 256 << 10, 2, room), Push);
        assert_eq!(auto_family(true, true, true, 512 << 10, 2, room), TwoShot);
    }

    #[test]
    fn shapes_and_limits() {
        let s2 = channel_shape(2);
        assert_eq!((s2.rows, s2.lamport_slots), (64, 32));
        // One round of one-shot holds the Auto limit; the flag-in-data slots hold theirs.
        for n in [2, 4, 8] {
            let s = channel_shape(n);
            assert!(one_shot_limit(n) <= (s.rows * s.push_region) as usize);
            assert!(lamport_limit(n) <= (s.lamport_slots * s.lamport_region) as usize);
        }
        let s64 = channel_shape(64);
        assert_eq!((s64.rows, s64.lamport_slots), (8, 0));
        assert!(s64.layout().push_bytes <= 16 << 20);
    }
}
