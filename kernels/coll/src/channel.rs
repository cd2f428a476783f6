//! [`Channel`]: the symmetric workspace one stream's collectives run in, as kernels see it
//! (a kernel argument), and its layout, which the host uses to size and initialise it.
//!
//! ```text
//! flags    [rows][world] u64     set by peers (Steps)
//! counts   [rows][world] u64     this PE's step counts per (row, peer)
//! push     [2][world][rows]      push_region bytes each: (parity, source PE, row)
//! lamport  [2][world][slots]     lamport_region bytes each, every word EMPTY when idle
//! ```
//!
//! Row `r` belongs to block `r` of whichever collective kernel runs (and, for the
//! flag-in-data slots, to slot `r`): one kernel at a time per channel, so a row is never
//! used by two blocks at once. The two parities alternate by the step count of the pair
//! (source, consumer) on that row, which both sides know (see [`crate::signal::Steps`] and
//! [`crate::lamport`]).
//!
//! ```
//! use rshmem_coll::channel::Shape;
//! let shape = Shape { world: 2, rows: 64, push_region: 16 << 10, lamport_slots: 32, lamport_region: 8 << 10 };
//! let layout = shape.layout();
//! assert_eq!(layout.push_bytes, 2 * 2 * 64 * (16 << 10));
//! assert!(layout.lamport_offset % 256 == 0 && layout.bytes >= layout.lamport_offset + layout.lamport_bytes);
//! ```

use rshmem_device::KernelArg;

use crate::pack::Pack;
use crate::signal::Steps;

/// A channel's dimensions (all PEs of the job use the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// PEs in the job.
    pub world: u32,
    /// Flag rows: the most blocks a collective kernel on the channel launches.
    pub rows: u32,
    /// Bytes of each push slot (a multiple of 16).
    pub push_region: u32,
    /// Flag-in-data slots per (parity, source); 0 when the channel has none.
    pub lamport_slots: u32,
    /// Bytes of each flag-in-data slot (a multiple of 16).
    pub lamport_region: u32,
}

/// Byte offsets and sizes of a channel's parts (each part 256-byte aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Offset of the step counts (the flags are at 0).
    pub counts_offset: usize,
    /// Offset of the push slots.
    pub push_offset: usize,
    /// Their total size.
    pub push_bytes: usize,
    /// Offset of the flag-in-data slots.
    pub lamport_offset: usize,
    /// Their total size (fill with [`crate::lamport::EMPTY`] words before first use).
    pub lamport_bytes: usize,
    /// The whole channel.
    pub bytes: usize,
}

const fn round_up(x: usize) -> usize {
    x.div_ceil(256) * 256
}

impl Shape {
    /// Where each part lies.
    pub const fn layout(&self) -> Layout {
        let (world, rows) = (self.world as usize, self.rows as usize);
        let flags = round_up(rows * world * 8);
        let counts_offset = flags;
        let push_offset = counts_offset + flags;
        let push_bytes = 2 * world * rows * self.push_region as usize;
        let lamport_offset = round_up(push_offset + push_bytes);
        let lamport_bytes = 2 * world * self.lamport_slots as usize * self.lamport_region as usize;
        Layout {
            counts_offset,
            push_offset,
            push_bytes,
            lamport_offset,
            lamport_bytes,
            bytes: round_up(lamport_offset + lamport_bytes),
        }
    }
}

/// A channel as a kernel argument: its symmetric base address and [`Shape`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Channel {
    /// This PE's copy of the workspace (symmetric).
    pub base: *mut u8,
    /// PEs in the job.
    pub world: u32,
    /// See [`Shape::rows`].
    pub rows: u32,
    /// See [`Shape::push_region`].
    pub push_region: u32,
    /// See [`Shape::lamport_slots`].
    pub lamport_slots: u32,
    /// See [`Shape::lamport_region`].
    pub lamport_region: u32,
    /// Keeps the struct free of padding (always 0).
    pub reserved: u32,
}

// SAFETY: `repr(C)`, a pointer and six `u32`s (8 + 24 bytes, no padding), the same on the host
// and nvptx64.
unsafe impl KernelArg for Channel {}

impl Channel {
    /// The channel at `base` with dimensions `shape`.
    pub const fn new(base: *mut u8, shape: Shape) -> Self {
        Channel {
            base,
            world: shape.world,
            rows: shape.rows,
            push_region: shape.push_region,
            lamport_slots: shape.lamport_slots,
            lamport_region: shape.lamport_region,
            reserved: 0,
        }
    }

    /// Its dimensions.
    pub const fn shape(&self) -> Shape {
        Shape {
            world: self.world,
            rows: self.rows,
            push_region: self.push_region,
            lamport_slots: self.lamport_slots,
            lamport_region: self.lamport_region,
        }
    }

    /// The step flags and counts.
    #[inline(always)]
    pub fn steps(&self) -> Steps {
        let layout = self.shape().layout();
        Steps {
            flags: self.base.cast(),
            counts: self.base.wrapping_add(layout.counts_offset).cast(),
            world: self.world,
        }
    }

    /// The push slot of (`parity`, source PE `src`, `row`): a symmetric address.
    #[inline(always)]
    pub fn push_slot(&self, parity: u64, src: i32, row: u32) -> *mut u8 {
        let layout = self.shape().layout();
        let index = (parity as usize * self.world as usize + src as usize) * self.rows as usize
            + row as usize;
        self.base
            .wrapping_add(layout.push_offset + index * self.push_region as usize)
    }

    /// The flag-in-data slot of (`parity`, source PE `src`, `slot`): a symmetric address.
    #[inline(always)]
    pub fn lamport_slot(&self, parity: u64, src: i32, slot: u32) -> *mut Pack {
        let layout = self.shape().layout();
        let index = (parity as usize * self.world as usize + src as usize)
            * self.lamport_slots as usize
            + slot as usize;
        self.base
            .wrapping_add(layout.lamport_offset + index * self.lamport_region as usize)
            .cast()
    }
}
