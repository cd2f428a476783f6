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
//! ```ignore
//! let slot = table.slot(&shmem, key, || encode_both())?; // uploads only on a miss
//! let (map_a, map_b) = table.kernel_ptrs(slot);
//! ```

use rshmem_device::hopper::TensorMap as DevTensorMap;
use rshmem_host::{Result, Shmem, SymBuffer, TensorMap};

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
}

/// The slots on the device and what each holds.
pub(crate) struct MapTable<'s> {
    device: SymBuffer<'s, TensorMap>,
    host: Vec<TensorMap>,
    /// Per slot: its key and when it was last used (a counter).
    keys: Vec<Option<(MapKey, u64)>>,
    clock: u64,
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
        })
    }

    /// Slots holding maps.
    pub(crate) fn in_use(&self) -> usize {
        self.keys.iter().filter(|k| k.is_some()).count()
    }

    /// The slot describing `key`, filled with `encode()`'s maps (A's, B's) on a miss: see the
    /// module docs for what a miss costs.
    pub(crate) fn slot(
        &mut self,
        key: MapKey,
        encode: impl FnOnce() -> Result<[TensorMap; 2]>,
    ) -> Result<usize> {
        self.clock += 1;
        if let Some(i) = self
            .keys
            .iter()
            .position(|s| matches!(s, Some((k, _)) if *k == key))
        {
            self.keys[i] = Some((key, self.clock));
            return Ok(i);
        }
        let maps = encode()?;
        let i = self
            .keys
            .iter()
            .position(Option::is_none)
            .unwrap_or_else(|| {
                // Every slot is taken: the one used longest ago.
                (0..MAP_SLOTS)
                    .min_by_key(|&i| self.keys[i].map_or(0, |(_, t)| t))
                    .unwrap_or(0)
            });
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
