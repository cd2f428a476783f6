//! The vocabulary both backends and the public API speak: launch coordinates, cooperation and
//! memory scopes, orderings, operation codes, comparison codes, team handles and `printf`
//! values. This is the bottom layer of the crate: it imports nothing from it, so the public
//! modules (above), [`crate::backend`] (beside them, below) and the simulator (under the
//! backend) can all name these types without importing one another.
//!
//! Each type is re-exported from the public module where users meet it
//! (`thread::Dim3`, `shmem::{ScopeKind, Cmp, ReduceOp, Team}`, `atomic::{ScopeKind, Ordering,
//! RmwOp}`, `warp::Shuffle`, `debug::PrintfValue`); the paths in that list are the public API.
//!
//! ```
//! use rshmem_device::shmem::{Cmp, Team};
//! assert!(Cmp::Le.holds(3, 3));
//! assert_eq!(Cmp::from_raw(Cmp::Ge as i32), Some(Cmp::Ge));
//! assert_eq!(Team::from_raw(Team::WORLD.raw()), Team::WORLD);
//! ```

pub mod fault;
pub mod hopper;

/// Threads per warp, as on NVIDIA GPUs.
pub const WARP_SIZE: u32 = 32;

/// A 3-component launch coordinate or extent (`threadIdx`, `blockDim`, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x component.
    pub x: u32,
    /// y component.
    pub y: u32,
    /// z component.
    pub z: u32,
}

impl Dim3 {
    /// Number of elements in the extent, `x * y * z`.
    #[inline(always)]
    pub const fn size(self) -> u32 {
        self.x * self.y * self.z
    }
}

/// Which threads cooperate in one SHMEM call: the runtime form of a `shmem::Scope`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    /// One thread.
    Thread,
    /// The 32 lanes of a warp, all calling together.
    Warp,
    /// Every thread of the block, all calling together.
    Block,
}

/// Who must observe an atomic or a fence: the runtime form of an `atomic::MemScope`
/// (published as `atomic::ScopeKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemScopeKind {
    /// The thread block.
    Cta,
    /// This GPU.
    Gpu,
    /// The whole system: other GPUs (NVLink peers) and the host.
    Sys,
}

/// Memory ordering of an atomic (C++'s, without `consume`). Loads take `Relaxed`, `Acquire`
/// or `SeqCst`; stores `Relaxed`, `Release` or `SeqCst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// No ordering beyond atomicity.
    Relaxed,
    /// Later accesses stay after it.
    Acquire,
    /// Earlier accesses stay before it.
    Release,
    /// Both.
    AcqRel,
    /// Both, and one total order of all `SeqCst` operations (a `fence.sc` first).
    SeqCst,
}

/// A read-modify-write operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOp {
    /// Wrapping add.
    Add,
    /// Exchange.
    Exch,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
}

/// A bitwise remote AMO (`shmem::atomic_{and,or,xor}` and their fetch forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    /// `&=`
    And,
    /// `|=`
    Or,
    /// `^=`
    Xor,
}

/// A comparison for waits and tests (`NVSHMEM_CMP_*`): `*ivar <cmp> value`.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `==`
    Eq = 0,
    /// `!=`
    Ne = 1,
    /// `>`
    Gt = 2,
    /// `<=`
    Le = 3,
    /// `<`
    Lt = 4,
    /// `>=`
    Ge = 5,
}

impl Cmp {
    /// Evaluates `a <cmp> b`.
    #[inline(always)]
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Gt => a > b,
            Cmp::Le => a <= b,
            Cmp::Lt => a < b,
            Cmp::Ge => a >= b,
        }
    }

    /// The comparison from its raw `NVSHMEM_CMP_*` value.
    pub fn from_raw(raw: i32) -> Option<Cmp> {
        [Cmp::Eq, Cmp::Ne, Cmp::Gt, Cmp::Le, Cmp::Lt, Cmp::Ge]
            .get(usize::try_from(raw).ok()?)
            .copied()
    }
}

/// How a reduction combines elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum (wrapping for integers).
    Sum,
    /// Product (wrapping for integers).
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers only).
    And,
    /// Bitwise or (integers only).
    Or,
    /// Bitwise xor (integers only).
    Xor,
}

/// A team handle (`nvshmem_team_t`). Cheap to copy; pass it to kernels as an argument.
///
/// The handle itself lives here, in the vocabulary, because the simulator needs its
/// predefined values; the operations on a team are in `shmem::team`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Team(i32);

impl Team {
    /// Every PE.
    pub const WORLD: Team = Team(0);
    /// The PEs that share memory with this one (on one node, over NVLink).
    pub const SHARED: Team = Team(1);
    /// The PEs on this node.
    pub const NODE: Team = Team(2);
    /// No team: what a failed split returns; operations on it return -1.
    pub const INVALID: Team = Team(-1);

    /// A handle from its raw `nvshmem_team_t` value (as the host API returns it).
    pub const fn from_raw(raw: i32) -> Self {
        Team(raw)
    }

    /// The raw `nvshmem_team_t` value.
    pub const fn raw(self) -> i32 {
        self.0
    }
}

/// How a shuffle picks its source lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shuffle {
    /// From lane `arg`.
    Idx,
    /// From lane `lane - arg` (own value when below 0).
    Up,
    /// From lane `lane + arg` (own value when past the warp).
    Down,
    /// From lane `lane ^ arg`.
    Xor,
}

/// One `printf!` argument as the simulator's formatter sees it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum PrintfValue {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer or pointer.
    Uint(u64),
    /// A float (promoted).
    Float(f64),
}
