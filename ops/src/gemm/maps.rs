//! The table of tensor maps the sm90 GEMM reads: TMA takes its maps from global memory, so
//! [`Ops`](crate::Ops) keeps [`MAP_SLOTS`] slots of two maps (A's, B's) in one symmetric
//! buffer, with a host copy, and remembers which operands each slot describes.
//!
//! A GEMM on operands a slot already describes (same pointers, same shape, same element
//! type) uploads nothing and launches at once. A new pair of operands takes a free slot, or
//! the one used longest ago; filling it uploads the table (8 KiB), which first waits for all
//! of the PE's launched work ([`Shmem::synchronize`]): a kernel in flight may still read the
//! slot being replaced. So the first GEMM on new buffers costs a synchronisation; loops over
//! the same buffers (or up to [`MAP_SLOTS`] distinct pairs) cost none.
//!
//! A graph that recorded a GEMM reads its slot at each launch, so the slot must not be refilled
//! while the graph lives: the recorded GEMM hands the slot's pin to the graph
//! (`Stream::keep_with_graph`), and a slot whose pin is held is never chosen for new operands.
//! Recording cannot fill a slot (the upload is a host copy), so a GEMM recorded on operands no
//! slot describes is refused.
//!
//! ```ignore
//! let slot = table.slot(key, || encode_both())?; // uploads only on a miss
//! let (map_a, map_b) = table.kernel_ptrs(slot);
//! let pin = table.pin(slot); // held by a graph: the slot stays
//! ```

use super::shape::CALL;
use rshmem_device::hopper::TensorMap as DevTensorMap;
use rshmem_host::{Error, Result, Shmem, SymBuffer, TensorMap};
use std::sync::Arc;

/// Slots of the table: distinct operand pairs whose maps stay cached.
pub const MAP_SLOTS: usize = 32;

/// What a slot's maps describe: the operands' addresses, the shape and the element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct MapKey {
    pub a: u64,
    pub b: u64,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub elem: &'static str,
    /// B is K x N (its map is of another shape).
    pub b_kn: bool,
    /// Groups of a grouped GEMM (B's map is 3-D), 0 for a plain one.
    pub groups: u32,
    /// The boxes (the kernel's tile configuration).
    pub boxes: super::launch::Boxes,
}

/// The slots on the device and what each holds.
pub(crate) struct MapTable<'s> {
    device: SymBuffer<'s, TensorMap>,
    host: Vec<TensorMap>,
    /// Per slot: its key and when it was last used (a counter).
    keys: Vec<Option<(MapKey, u64)>>,
    clock: u64,
    /// Per slot: the pin graphs that read the slot hold; a slot is refilled only when the
    /// table holds its pin alone.
    pins: Vec<Arc<()>>,
}

impl<'s> MapTable<'s> {
    /// Collective: allocates the table on every PE.
    pub(crate) fn new(shmem: &'s Shmem) -> Result<Self> {
        let device = shmem.alloc_zeroed::<TensorMap>(2 * MAP_SLOTS)?;
        let zero = bytemuck::Zeroable::zeroed();
        Ok(Self {
            device,
            host: vec![zero; 2 * MAP_SLOTS],
            keys: vec![None; MAP_SLOTS],
            clock: 0,
            pins: (0..MAP_SLOTS).map(|_| Arc::new(())).collect(),
        })
    }

    /// Slots holding maps.
    pub(crate) fn in_use(&self) -> usize {
        self.keys.iter().filter(|k| k.is_some()).count()
    }

    /// Slots whose pin a graph holds.
    pub(crate) fn pinned(&self) -> usize {
        self.pins
            .iter()
            .filter(|p| Arc::strong_count(p) > 1)
            .count()
    }

    /// The slot describing `key`, if one does (it counts as used now).
    pub(crate) fn find(&mut self, key: MapKey) -> Option<usize> {
        self.clock += 1;
        let i = self
            .keys
            .iter()
            .position(|s| matches!(s, Some((k, _)) if *k == key))?;
        self.keys[i] = Some((key, self.clock));
        Some(i)
    }

    /// Slot `i`'s pin: while a clone lives, the slot keeps its maps.
    pub(crate) fn pin(&self, i: usize) -> Arc<()> {
        self.pins[i].clone()
    }

    /// The slot describing `key`, filled with `encode()`'s maps (A's, B's) on a miss: see the
    /// module docs for what a miss costs.
    pub(crate) fn slot(
        &mut self,
        key: MapKey,
        encode: impl FnOnce() -> Result<[TensorMap; 2]>,
    ) -> Result<usize> {
        if let Some(i) = self.find(key) {
            return Ok(i);
        }
        let i = victim(&self.keys, |i| Arc::strong_count(&self.pins[i]) > 1).ok_or_else(|| {
            Error::Unsupported {
                call: CALL,
                reason: format!(
                    "on new operands while all {MAP_SLOTS} tensor-map slots describe operands \
                     of GEMMs that live graphs launch (a slot a graph reads is never refilled): \
                     drop the graphs that are no longer launched, or run the GEMM on operands \
                     already seen"
                ),
            }
        })?;
        let maps = encode()?;
        self.keys[i] = None;
        self.host[2 * i..2 * i + 2].copy_from_slice(&maps);
        // Waits for the PE's launched work first: none of it reads the old slot after this.
        self.device.copy_from_host(&self.host)?;
        self.keys[i] = Some((key, self.clock));
        Ok(i)
    }

    /// The kernel arguments of slot `i`'s maps: A's, B's.
    pub(crate) fn kernel_ptrs(&self, i: usize) -> (*const DevTensorMap, *const DevTensorMap) {
        let base = TensorMap::kernel_ptr(&self.device);
        // Device addresses: offsets only, never dereferenced here.
        (base.wrapping_add(2 * i), base.wrapping_add(2 * i + 1))
    }
}

/// The slot new operands take: a free one first (never used: time 0), else the one used
/// longest ago; never one a graph reads (`pinned`). `None` when every slot is pinned.
fn victim(keys: &[Option<(MapKey, u64)>], pinned: impl Fn(usize) -> bool) -> Option<usize> {
    (0..keys.len())
        .filter(|&i| !pinned(i))
        .min_by_key(|&i| keys[i].map_or(0, |(_, t)| t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(m: u32) -> MapKey {
        MapKey {
            a: 256,
            b: 512,
            m,
            n: 8,
            k: 8,
            elem: "bf16",
            b_kn: false,
            groups: 0,
            boxes: super::super::launch::Boxes {
                a: [64, 128],
                b: [64, 256],
            },
        }
    }

    #[test]
    fn new_operands_never_take_a_slot_a_graph_reads() {
        // Every slot used, slot 0 longest ago.
        let keys: Vec<_> = (0..MAP_SLOTS)
            .map(|i| Some((key(i as u32), 10 + i as u64)))
            .collect();
        assert_eq!(victim(&keys, |_| false), Some(0));
        // Slot 0 read by a graph: the next oldest.
        assert_eq!(victim(&keys, |i| i == 0), Some(1));
        assert_eq!(victim(&keys, |i| i < 5), Some(5));
        // Every slot read by a graph: none.
        assert_eq!(victim(&keys, |_| true), None);
        // A free slot first, even behind older used ones.
        let mut keys = keys;
        keys[7] = None;
        assert_eq!(victim(&keys, |_| false), Some(7));
        assert_eq!(victim(&keys, |i| i == 7), Some(0));
    }
}
