//! The Hopper state of one block ([`BlockHopper`]: warpgroup meetings, their operand slots,
//! mbarrier objects), held by the launch's per-block state. Plain data: the operations on it
//! (`wgmma`, `mbarrier`, `tma`) are beside this file and reach it through the current
//! thread's context, which is why this part imports neither.

use std::vec::Vec;

use crate::sim::barrier::Group;

/// Threads per warpgroup.
pub(super) const WARPGROUP: u32 = 128;

/// The Hopper state of one block: its warpgroup meetings, their operand slots, and its
/// mbarrier objects.
pub(crate) struct BlockHopper {
    pub(super) warpgroups: Vec<Group>,
    pub(super) slots: Vec<std::sync::Mutex<Slot>>,
    pub(super) mbarriers: std::sync::Mutex<std::collections::HashMap<u32, Mbar>>,
}

impl BlockHopper {
    pub fn new(threads: u32) -> Self {
        Self {
            warpgroups: (0..threads.div_ceil(WARPGROUP))
                .map(|g| {
                    let first = g * WARPGROUP;
                    Group::new("warpgroup", first, WARPGROUP.min(threads - first))
                })
                .collect(),
            slots: (0..threads).map(|_| Default::default()).collect(),
            mbarriers: Default::default(),
        }
    }

    /// Wakes the warpgroup meetings' waiters (the launch was aborted).
    pub fn wake(&self) {
        self.warpgroups.iter().for_each(|g| g.barrier.wake());
    }

    /// Thread `rank` of the block has left the kernel.
    pub fn exit(&self, rank: u32) {
        self.warpgroups[(rank / WARPGROUP) as usize]
            .barrier
            .exit(rank % WARPGROUP);
    }
}

/// One thread's operands, published for its warpgroup.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(super) kind: u8,
    pub(super) regs: usize,
    pub(super) a_smem: bool,
    pub(super) a_desc: u64,
    pub(super) a_regs: [u32; 4],
    pub(super) b_desc: u64,
    /// B is MN-major (`imm-trans-b = 1`).
    pub(super) b_mn: bool,
    pub(super) scale_d: bool,
}

impl Slot {
    /// What every thread of the warpgroup must agree on.
    pub(super) fn shared_part(&self) -> (u8, usize, bool, u64, u64, bool, bool) {
        (
            self.kind,
            self.regs,
            self.a_smem,
            if self.a_smem { self.a_desc } else { 0 },
            self.b_desc,
            self.b_mn,
            self.scale_d,
        )
    }
}

/// One mbarrier object.
pub(crate) struct Mbar {
    pub(super) count: u32,
    pub(super) pending: u32,
    pub(super) tx: i64,
    /// Phases completed since init.
    pub(super) phase: u32,
    pub(super) inflight: Vec<Landing>,
}

/// A TMA load in flight: its bytes (the whole box, as laid out in shared memory before the
/// swizzle) land when a thread waits on the barrier.
pub(super) struct Landing {
    /// Shared address of the box.
    pub dst: u32,
    pub data: Vec<u8>,
    pub swizzle: crate::contract::hopper::Swizzle,
}
