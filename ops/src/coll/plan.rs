//! Which algorithm a collective runs and with what grid: [`Algorithm`] (what a user may
//! force), the size thresholds of [`Algorithm::Auto`] and the channel's dimensions.
//!
//! **The thresholds are reasoned, not measured** (no two-GPU machine was available when
//! they were set; see `docs/collectives.md`). Per PE and call, with `B` the bytes of one
//! PE's data and `n` the team size, over NVLink (H200: ~450 GB/s per direction, one-way
//! latency ~1 µs):
//!
//! * flag-in-data (Lamport) one-shot: `(n − 1)·B` written to peers in one one-way trip, no
//!   signal round; each PE reduces `n·B` locally. Best while latency dominates: `B ≤ 256 KiB`
//!   at `n = 2`, `128 KiB` at `n ≤ 4`, `64 KiB` above (the write volume grows with `n`);
//!   TensorRT-LLM's Lamport kernels cover the same range.
//! * one-shot through push slots: the same writes, plus one signal round (~2 µs), but any
//!   element type and no polling of data: up to `1 MiB` at `n = 2` (where it moves exactly
//!   what two-shot moves, in one step instead of two), `512 KiB` at `n ≤ 4`, `256 KiB` above —
//!   vLLM's custom all-reduce switches from one to two stages at 512 KiB for 4 to 8 GPUs.
//! * two-shot: `2·(n − 1)/n·B` per PE in two steps, the bandwidth-optimal exchange on a
//!   full NVLink mesh; everything larger.
//!
//! Teams that are not reached through peer mappings (several nodes) always use the push
//! slots, whose pushes become NVSHMEM puts.

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
    match n {
        0..=2 => 256 << 10,
        3..=4 => 128 << 10,
        _ => 64 << 10,
    }
}

/// Largest per-PE message of the one-shot all-reduce under [`Algorithm::Auto`].
pub(crate) fn one_shot_limit(n: usize) -> usize {
    match n {
        0..=2 => 1 << 20,
        3..=4 => 512 << 10,
        _ => 256 << 10,
    }
}

/// How many blocks and threads the collectives launch on this PE's device: on a GPU up to
/// one block per SM (at most the channel's rows) of 512 threads; on the simulator, where
/// every thread is a host thread, 2 blocks of 64.
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
                threads: 64,
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
