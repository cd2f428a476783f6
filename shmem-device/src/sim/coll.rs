//! Collectives on the simulator, over the all-PE teams: every participating group (one
//! thread, warp or block per PE) meets the others, reads what it needs straight from the
//! peers' heaps, and meets them again before anyone may overwrite a source.

use core::mem::{align_of, size_of};

use super::barrier::Call;
use super::context::{with, ThreadCtx};
use super::device::in_scope;
use super::job::Side;
use super::mem::{atomic_copy, scalar};
use super::rma::remote;
use super::team::members;
use crate::shmem::{ReduceOp, ScopeKind};

const COLL_ARGS: &[(&str, bool)] = &[
    ("dest", true),
    ("source", true),
    ("count", false),
    ("team", false),
];

/// Runs `work(c, npes)` for the calling group between two PE-wide meetings. Returns 0, or -1
/// for the invalid team.
fn collective(
    op: &'static str,
    scope: ScopeKind,
    team: i32,
    args: [usize; 4],
    work: impl Fn(&ThreadCtx<'_>, usize),
) -> i32 {
    with(op, |c| {
        let Some(npes) = members(c, op, team) else {
            return -1;
        };
        let call = Call {
            op,
            names: COLL_ARGS,
            args,
        };
        in_scope(c, scope, call, || {
            let meet = |stage: &'static str| {
                if let Err(e) = c.job().rendezvous(Side::Device, c.pe(), stage, [0; 4]) {
                    c.fail(std::format!("{op}: {e}"));
                }
            };
            meet(op);
            work(c, npes);
            meet(op);
        });
        0
    })
}

/// `count` elements of `T` at `addr` on `pe`, checked.
fn span<T>(c: &ThreadCtx<'_>, op: &str, addr: *const T, count: usize, pe: usize) -> *mut u8 {
    remote(
        c,
        op,
        addr as usize,
        count * size_of::<T>(),
        pe as i32,
        align_of::<T>(),
    )
}

fn copy_span<T>(to: *mut u8, from: *const u8, count: usize) {
    if to.cast_const() != from {
        // SAFETY: both spans were checked in bounds of live symmetric buffers; distinct
        // symmetric spans of one collective do not overlap.
        unsafe { atomic_copy(to, from, count * size_of::<T>()) }
    }
}

pub(crate) unsafe fn broadcast<T: Copy>(
    scope: ScopeKind,
    team: i32,
    dest: *mut T,
    src: *const T,
    n: usize,
    root: i32,
) -> i32 {
    let op = "shmem::broadcast";
    collective(
        op,
        scope,
        team,
        [dest as usize, src as usize, n, team as usize],
        |c, npes| {
            let root = usize::try_from(root)
                .ok()
                .filter(|r| *r < npes)
                .unwrap_or_else(|| {
                    c.fail(std::format!(
                        "{op}: root {root} is not a member of a {npes}-PE team"
                    ))
                });
            let from = span(c, op, src, n, root);
            let to = span(c, op, dest, n, c.pe());
            copy_span::<T>(to, from, n);
        },
    )
}

pub(crate) unsafe fn fcollect<T: Copy>(
    scope: ScopeKind,
    team: i32,
    dest: *mut T,
    src: *const T,
    n: usize,
) -> i32 {
    let op = "shmem::fcollect";
    collective(
        op,
        scope,
        team,
        [dest as usize, src as usize, n, team as usize],
        |c, npes| {
            let to = span(c, op, dest, n * npes, c.pe());
            for pe in 0..npes {
                let from = span(c, op, src, n, pe);
                // SAFETY: block `pe` of the checked `n * npes`-element destination.
                copy_span::<T>(unsafe { to.add(pe * n * size_of::<T>()) }, from, n);
            }
        },
    )
}

pub(crate) unsafe fn alltoall<T: Copy>(
    scope: ScopeKind,
    team: i32,
    dest: *mut T,
    src: *const T,
    n: usize,
) -> i32 {
    let op = "shmem::alltoall";
    collective(
        op,
        scope,
        team,
        [dest as usize, src as usize, n, team as usize],
        |c, npes| {
            let to = span(c, op, dest, n * npes, c.pe());
            for pe in 0..npes {
                let from = span(c, op, src, n * npes, pe);
                // SAFETY: block `me` of PE `pe`'s source into block `pe` of ours, both checked.
                unsafe {
                    copy_span::<T>(
                        to.add(pe * n * size_of::<T>()),
                        from.add(c.pe() * n * size_of::<T>()),
                        n,
                    )
                };
            }
        },
    )
}

/// Element types the simulator can combine.
pub(crate) trait Reducible: Copy {
    fn combine(self, op: ReduceOp, other: Self) -> Self;
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
                    // `CollScalar` returns -1 for these before reaching the simulator.
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => unreachable!("bitwise reduction of floats"),
                }
            }
        }
    )*};
}
reducible_float!(f32, f64);

/// `reduce` (every PE gets all `n` results) or `reducescatter` (PE `i` gets block `i`).
pub(crate) unsafe fn reduce<T: Reducible>(
    scope: ScopeKind,
    team: i32,
    dest: *mut T,
    src: *const T,
    n: usize,
    rop: ReduceOp,
    scatter: bool,
) -> i32 {
    let op = if scatter {
        "shmem::reducescatter"
    } else {
        "shmem::reduce"
    };
    collective(
        op,
        scope,
        team,
        [dest as usize, src as usize, n, team as usize],
        |c, npes| {
            let src_len = if scatter { n * npes } else { n };
            let first = if scatter { c.pe() * n } else { 0 };
            let sources: std::vec::Vec<*mut u8> =
                (0..npes).map(|pe| span(c, op, src, src_len, pe)).collect();
            let to = span(c, op, dest, n, c.pe());
            // Results go to a scratch vector first: `dest` may be `src` (in-place reduction).
            let results: std::vec::Vec<T> = (0..n)
                .map(|k| {
                    let at = |pe: usize| {
                        // SAFETY: element `first + k` of PE `pe`'s checked source.
                        unsafe { scalar::load(sources[pe].cast::<T>().add(first + k).cast_const()) }
                    };
                    (1..npes).fold(at(0), |acc, pe| acc.combine(rop, at(pe)))
                })
                .collect();
            // Every PE reads before any PE writes: meet once more.
            if let Err(e) = c.job().rendezvous(Side::Device, c.pe(), op, [0; 4]) {
                c.fail(std::format!("{op}: {e}"));
            }
            for (k, v) in results.into_iter().enumerate() {
                // SAFETY: element `k` of the checked destination.
                unsafe { scalar::store(to.cast::<T>().add(k), v) };
            }
        },
    )
}
