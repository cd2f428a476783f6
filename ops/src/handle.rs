//! [`Ops`]: one PE's handle to rshmem's own operations. It holds what each family needs
//! between calls — the loaded images, the GEMM's tensor-map table, the fused calls' state, the
//! collectives' channels — and nothing else; the calls live with their families
//! ([`crate::gemm`], [`crate::fused`], [`crate::coll`], [`crate::moe`]).
//!
//! ```no_run
//! use rshmem_device::bf16;
//! use rshmem_ops::{BLayout, GemmShape, Ops};
//! # fn f(shmem: &rshmem_host::Shmem) -> rshmem_host::Result<()> {
//! let ops = Ops::new(shmem)?; // collective: every PE makes its Ops
//! let (m, n, k) = (1000, 1000, 512);
//! let a = shmem.alloc_from(&vec![bf16::ONE; m * k])?; // m x k
//! let b = shmem.alloc_from(&vec![bf16::ONE; n * k])?; // n x k
//! let mut c = shmem.alloc_zeroed::<f32>(m * n)?;
//! let shape = GemmShape::new(m as u32, n as u32, k as u32, BLayout::NK);
//! ops.gemm(&shmem.stream(), &a, &b, &mut c, shape)?; // queued on the stream
//! assert!(c.to_vec()?.iter().all(|&x| x == k as f32));
//! # Ok(()) }
//! ```

use crate::gemm::maps::MapTable;
use rshmem_host::{DeviceInfo, KernelImage, Module, Result, Shmem};
use std::sync::Mutex;

/// rshmem's operations on one PE: made once by [`Ops::new`] (collective), then used for any
/// number of calls on any of the PE's streams.
pub struct Ops<'s> {
    pub(crate) shmem: &'s Shmem,
    pub(crate) info: DeviceInfo,
    /// The Hopper GEMM's image, loaded where it can run (sm_90 GPUs, the simulator).
    pub(crate) gemm90: Option<Module<'s>>,
    /// The `mma.sync` GEMM's image (any GPU from sm_80 on).
    pub(crate) gemm80: Option<Module<'s>>,
    /// The fused tensor-parallel kernels on the Hopper GEMM (where `gemm90` is loaded).
    pub(crate) tp90: Option<Module<'s>>,
    /// The fused tensor-parallel kernels on the sm80 GEMM, the calls' barrier and the
    /// reduce-scatter's fix-up (where `gemm80` is loaded).
    pub(crate) tp80: Option<Module<'s>>,
    pub(crate) maps: Mutex<MapTable<'s>>,
    /// The split-K GEMMs' workspace and order ([`crate::gemm::split_k`]).
    pub(crate) split: Mutex<crate::gemm::split_k::SplitState<'s>>,
    /// The fused calls' workspace (the call counter among its flags), side stream and graph
    /// pin ([`crate::fused`]).
    pub(crate) tp: Mutex<crate::fused::calls::TpState<'s>>,
    /// The collectives' image, peer mappings and per-stream workspaces ([`crate::coll`]).
    pub(crate) coll: crate::coll::State<'s>,
    /// The mixture-of-experts image ([`crate::moe`]; any GPU from sm_80 on).
    pub(crate) moe: Option<Module<'s>>,
    /// The fused MoE layer's GEMMs on the Hopper GEMM (where `gemm90` is loaded).
    pub(crate) moe90: Option<Module<'s>>,
}

impl<'s> Ops<'s> {
    /// Loads the ops' kernel images that can run on this PE's device (once), allocates the
    /// GEMM's tensor-map table ([`crate::gemm::maps`]) and split-K workspace
    /// ([`crate::gemm::split_k`]) and finds which PEs the collectives reach
    /// through peer mappings ([`crate::coll`]). Collective: every PE calls it, in the same
    /// order relative to its other allocations.
    pub fn new(shmem: &'s Shmem) -> Result<Self> {
        let info = shmem.device_info();
        // The sm_90a images run on sm_90 alone; the others on anything from sm_80 on.
        let load = |image: &KernelImage, runs: bool| runs.then(|| shmem.load(image)).transpose();
        let (sm90, sm80) = (info.sm == 90, info.sm >= 80);
        Ok(Self {
            shmem,
            info,
            gemm90: load(&crate::gemm::IMAGE90, sm90)?,
            gemm80: load(&crate::gemm::IMAGE80, sm80)?,
            tp90: load(&crate::fused::IMAGE90, sm90)?,
            tp80: load(&crate::fused::IMAGE80, sm80)?,
            maps: Mutex::new(MapTable::new(shmem)?),
            split: Mutex::new(crate::gemm::split_k::SplitState::new(shmem)?),
            tp: Mutex::new(crate::fused::calls::TpState::default()),
            coll: crate::coll::State::new(shmem)?,
            moe: load(&crate::moe::IMAGE, sm80)?,
            moe90: load(&crate::moe::IMAGE90, sm90)?,
        })
    }

    /// The device the ops run on ([`Shmem::device_info`]).
    pub fn device_info(&self) -> DeviceInfo {
        self.info
    }

    /// Slots of the tensor-map table that hold maps (at most [`crate::MAP_SLOTS`]): a GEMM on
    /// operands seen before reuses their slot and leaves this unchanged.
    pub fn map_slots_in_use(&self) -> usize {
        self.table().in_use()
    }

    /// Slots of the tensor-map table that live graphs read (they recorded a GEMM on them):
    /// those are not refilled for other operands until the graphs are dropped.
    pub fn map_slots_pinned(&self) -> usize {
        self.table().pinned()
    }

    pub(crate) fn table(&self) -> std::sync::MutexGuard<'_, MapTable<'s>> {
        // A panic while holding the lock leaves the table consistent (keys are set last).
        self.maps.lock().unwrap_or_else(|p| p.into_inner())
    }
}
