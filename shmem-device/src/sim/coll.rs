//! Collectives on the simulator, over any team: each member's participating group (one
//! thread, warp or block per PE in a kernel; the PE's own thread for rshmem-host's on-stream
//! collectives) meets the other members, reads what it needs straight from their heaps, and
//! meets them again before anyone may overwrite a source.
//!
//! [`run`] is each algorithm, written once over [`Place`]: how the caller checks addresses
//! and meets the team. Kernels check through the calling thread (a bad address fails it);
//! the host side returns errors (`sim::host`).

use core::convert::Infallible;
use core::mem::{align_of, size_of};

use super::barrier::Call;
use super::context::{with, ThreadCtx};
use super::mem::{atomic_copy, scalar};
use super::rma::remote;
use super::scope::in_scope;
use super::team::{member, Member};
use super::world::Side;
use crate::contract::{ReduceOp, ScopeKind};

const COLL_ARGS: &[(&str, bool)] = &[
    ("dest", true),
    ("source", true),
    ("count", false),
    ("team", false),
];

/// A collective and its own arguments; every member passes the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coll {
    /// `n` elements of the member ranked `root` to every member.
    Broadcast {
        /// The source's rank in the team.
        root: usize,
    },
    /// Every member's `n` elements, concatenated in rank order, to every member.
    Fcollect,
    /// Block `j` of `n` elements of member `i` to block `i` of member `j`.
    Alltoall,
    /// Element-wise combination of every member's `n` elements, to every member.
    Reduce(ReduceOp),
    /// As `Reduce` over `n * size` elements; member `i` gets block `i`.
    ReduceScatter(ReduceOp),
}

impl Coll {
    /// The collective's name, for messages and to tell collectives apart in a rendezvous.
    pub fn name(self) -> &'static str {
        match self {
            Coll::Broadcast { .. } => "broadcast",
            Coll::Fcollect => "fcollect",
            Coll::Alltoall => "alltoall",
            Coll::Reduce(_) => "reduce",
            Coll::ReduceScatter(_) => "reducescatter",
        }
    }
}

/// How a collective's caller reaches memory and the other members.
pub(crate) trait Place {
    /// What stops the collective.
    type Error;
    /// The address on world PE `pe` of the `bytes` bytes at this PE's symmetric address
    /// `addr`, after checking that they lie in one live symmetric allocation, aligned to
    /// `align`.
    fn span(
        &self,
        addr: usize,
        bytes: usize,
        align: usize,
        pe: usize,
    ) -> Result<*mut u8, Self::Error>;
    /// Waits until every member of the team has arrived here.
    fn meet(&self) -> Result<(), Self::Error>;
    /// An argument no member can act on.
    fn invalid(&self, message: std::string::String) -> Self::Error;
}

/// Copies `count` elements of `T` between two checked spans (not at all if they coincide: an
/// in-place collective's own block).
fn copy<T>(to: *mut u8, from: *const u8, count: usize) {
    if to.cast_const() != from {
        // SAFETY: both spans were checked in bounds of live symmetric buffers; distinct
        // symmetric spans of one collective do not overlap.
        unsafe { atomic_copy(to, from, count * size_of::<T>()) }
    }
}

/// Runs `coll` on blocks of `n` elements of `T` at the symmetric addresses `dest` and `src`,
/// as member `me` of its team. Every member calls it with the same arguments.
pub(crate) fn run<T: Reducible, P: Place>(
    place: &P,
    me: Member,
    coll: Coll,
    dest: usize,
    src: usize,
    n: usize,
) -> Result<(), P::Error> {
    let (team, size, elem) = (me.shape, me.shape.size, size_of::<T>());
    let span =
        |addr: usize, count: usize, pe: usize| place.span(addr, count * elem, align_of::<T>(), pe);
    let own = team.pe(me.rank);
    // Block `i < size` of `n` elements of a span checked to hold `n * size` of them.
    let block = |base: *mut u8, i: usize| base.wrapping_add(i * n * elem);
    match coll {
        Coll::Broadcast { root } => {
            if root >= size {
                return Err(place.invalid(std::format!(
                    "root {root} is not a member of a {size}-PE team"
                )));
            }
            place.meet()?;
            copy::<T>(span(dest, n, own)?, span(src, n, team.pe(root))?, n);
        }
        Coll::Fcollect => {
            place.meet()?;
            let to = span(dest, n * size, own)?;
            for r in 0..size {
                copy::<T>(block(to, r), span(src, n, team.pe(r))?, n);
            }
        }
        Coll::Alltoall => {
            place.meet()?;
            let to = span(dest, n * size, own)?;
            for r in 0..size {
                let from = span(src, n * size, team.pe(r))?;
                copy::<T>(block(to, r), block(from, me.rank), n);
            }
        }
        Coll::Reduce(op) | Coll::ReduceScatter(op) => {
            let scatter = matches!(coll, Coll::ReduceScatter(_));
            place.meet()?;
            let (src_len, first) = if scatter {
                (n * size, me.rank * n)
            } else {
                (n, 0)
            };
            let sources = (0..size)
                .map(|r| span(src, src_len, team.pe(r)))
                .collect::<Result<std::vec::Vec<_>, _>>()?;
            let to = span(dest, n, own)?;
            // Results go to a scratch vector first: `dest` may be `src` (in-place reduction).
            let results: std::vec::Vec<T> = (0..n)
                .map(|k| {
                    let at = |r: usize| {
                        // SAFETY: element `first + k` of member `r`'s checked source.
                        unsafe { scalar::load(sources[r].cast::<T>().add(first + k).cast_const()) }
                    };
                    (1..size).fold(at(0), |acc, r| acc.combine(op, at(r)))
                })
                .collect();
            // Every member reads before any member writes: meet once more.
            place.meet()?;
            for (k, v) in results.into_iter().enumerate() {
                // SAFETY: element `k` of the checked destination.
                unsafe { scalar::store(to.cast::<T>().add(k), v) };
            }
        }
    }
    // Nobody may overwrite a source (or read a destination) before every member is done.
    place.meet()
}

/// A kernel's collective: addresses checked and meetings made through the calling thread,
/// which fails (and never returns an error) when something is wrong.
struct InKernel<'a, 'c> {
    c: &'a ThreadCtx<'c>,
    op: &'static str,
    team: i32,
}

impl Place for InKernel<'_, '_> {
    type Error = Infallible;

    fn span(
        &self,
        addr: usize,
        bytes: usize,
        align: usize,
        pe: usize,
    ) -> Result<*mut u8, Infallible> {
        Ok(remote(self.c, self.op, addr, bytes, pe as i32, align))
    }

    fn meet(&self) -> Result<(), Infallible> {
        let world = self.c.world();
        if let Err(e) = world.rendezvous(Side::Device, self.team, self.c.pe(), self.op, [0; 4]) {
            self.c.fail(std::format!("{}: {e}", self.op));
        }
        Ok(())
    }

    fn invalid(&self, message: std::string::String) -> Infallible {
        self.c.fail(std::format!("{}: {message}", self.op))
    }
}

/// A kernel's call of `coll` over `team` at `scope`: one run per participating group. Returns
/// 0, or -1 for the invalid team.
fn collective<T: Reducible>(
    op: &'static str,
    scope: ScopeKind,
    team: i32,
    coll: impl FnOnce(&ThreadCtx<'_>) -> Coll,
    dest: *const T,
    src: *const T,
    n: usize,
) -> i32 {
    with(op, |c| {
        let Some(me) = member(c, op, team) else {
            return -1;
        };
        let coll = coll(c);
        let call = Call {
            op,
            names: COLL_ARGS,
            args: [dest as usize, src as usize, n, team as usize],
        };
        in_scope(c, scope, call, || {
            let place = InKernel { c, op, team };
            let Ok(()) = run::<T, _>(&place, me, coll, dest as usize, src as usize, n);
        });
        0
    })
}

pub(crate) unsafe fn broadcast<T: Reducible>(
    scope: ScopeKind,
    team: i32,
    dest: *mut T,
    src: *const T,
    n: usize,
    root: i32,
) -> i32 {
    let op = "shmem::broadcast";
    let coll = |c: &ThreadCtx<'_>| match usize::try_from(root) {
        Ok(root) => Coll::Broadcast { root },
        Err(_) => c.fail(std::format!("{op}: root {root} is not a team rank")),
    };
    collective(op, scope, team, coll, dest, src, n)
}

pub(crate) unsafe fn fcollect<T: Reducible>(
    scope: ScopeKind,
    team: i32,
    dest: *mut T,
    src: *const T,
    n: usize,
) -> i32 {
    collective(
        "shmem::fcollect",
        scope,
        team,
        |_| Coll::Fcollect,
        dest,
        src,
        n,
    )
}

pub(crate) unsafe fn alltoall<T: Reducible>(
    scope: ScopeKind,
    team: i32,
    dest: *mut T,
    src: *const T,
    n: usize,
) -> i32 {
    collective(
        "shmem::alltoall",
        scope,
        team,
        |_| Coll::Alltoall,
        dest,
        src,
        n,
    )
}

/// `reduce` (every member gets all `n` results) or `reducescatter` (member `i` gets block
/// `i`).
pub(crate) unsafe fn reduce<T: Reducible>(
    scope: ScopeKind,
    team: i32,
    dest: *mut T,
    src: *const T,
    n: usize,
    rop: ReduceOp,
    scatter: bool,
) -> i32 {
    let (op, coll) = if scatter {
        ("shmem::reducescatter", Coll::ReduceScatter(rop))
    } else {
        ("shmem::reduce", Coll::Reduce(rop))
    };
    collective(op, scope, team, |_| coll, dest, src, n)
}

/// Element types the simulator's collectives move and combine (those of `CollScalar`).
pub trait Reducible: Copy + 'static {
    /// `self op other`. Bitwise operations are defined for integers only; callers refuse
    /// them for floats first.
    fn combine(self, op: ReduceOp, other: Self) -> Self;
    /// Whether `op` is defined for this type.
    fn supports(op: ReduceOp) -> bool;
}

macro_rules! reducible_int {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn combine(self, op: ReduceOp, other: Self) -> Self {
                match op {
                    ReduceOp::Sum => self.wrapping_add(other),
                    ReduceOp::Prod => self.wrapping_mul(other),
                    ReduceOp::Min => self.min(other),
                    ReduceOp::Max => self.max(other),
                    ReduceOp::And => self & other,
                    ReduceOp::Or => self | other,
                    ReduceOp::Xor => self ^ other,
                }
            }
            fn supports(_: ReduceOp) -> bool {
                true
            }
        }
    )*};
}
reducible_int!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! reducible_float {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn combine(self, op: ReduceOp, other: Self) -> Self {
                match op {
                    ReduceOp::Sum => self + other,
                    ReduceOp::Prod => self * other,
                    ReduceOp::Min => self.min(other),
                    ReduceOp::Max => self.max(other),
                    // `supports` says no; `CollScalar` returns -1 before reaching the simulator.
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => unreachable!("bitwise reduction of floats"),
                }
            }
            fn supports(op: ReduceOp) -> bool {
                !matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)
            }
        }
    )*};
}
reducible_float!(f32, f64);
