//! Kernels over a team the host split off (`Shmem::team_split_strided`/`team_split_2d`):
//! team queries, a team barrier, and collectives over the team (conformance row 15: an
//! alltoall over a strided team), for `testing/device-tests/tests/teams.rs`.
//!
//! Each kernel that calls a collective takes the scope to call it at: 0 = thread 0 alone
//! (`Thread`), 1 = warp 0 (`Warp`), 2 = the whole block (`Block`); it writes the first
//! non-zero return code (or 0) to `status[0]`. Launch one block of at least 32 threads,
//! cooperatively, on every member of the team.
//!
//! A crate of its own, built into its own image by `testing/device-tests/build.rs`: seven collectives at
//! three scopes, each inlined from NVSHMEM, are some 5 MB of PTX and two minutes of ptxas on
//! two cores, more than all the examples' kernels together.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use rshmem_device::prelude::*;
use rshmem_device::shmem::ReduceOp;

/// Runs `$call` with `$S` the scope that `$scope` selects, in the threads that make that call
/// (thread 0, warp 0 or the whole block); `Some(value)` there, `None` in the other threads.
macro_rules! at_scope {
    ($scope:expr, $S:ident => $call:expr) => {{
        let rank = thread::thread_rank_in_block();
        match $scope {
            0 if rank == 0 => {
                type $S = Thread;
                Some($call)
            }
            1 if rank < 32 => {
                type $S = Warp;
                Some($call)
            }
            2 => {
                type $S = Block;
                Some($call)
            }
            _ => None,
        }
    }};
}

/// Thread 0 stores the first non-zero of `codes` (or 0) in `status[0]`.
///
/// # Safety
///
/// `status` must be valid for one `i32` write.
unsafe fn report(status: *mut i32, codes: Option<&[i32]>) {
    if let (0, Some(codes)) = (thread::thread_rank_in_block(), codes) {
        *status = codes.iter().copied().find(|&c| c != 0).unwrap_or(0);
    }
}

/// What this PE sees of `team`, written by thread 0 to `out[0..5]`: its number in the team,
/// the team's size, the world PEs of the team's first and last members, and this PE's number
/// in the team translated from `Team::WORLD`.
///
/// # Safety
///
/// `out` is valid for five `i32` writes.
#[kernel]
pub unsafe fn team_info(team: Team, out: *mut i32) {
    if thread::thread_rank_in_block() == 0 {
        let n = team.n_pes();
        *out = team.my_pe();
        *out.add(1) = n;
        *out.add(2) = team.translate_pe(0, Team::WORLD);
        *out.add(3) = team.translate_pe(n - 1, Team::WORLD);
        *out.add(4) = Team::WORLD.translate_pe(shmem::my_pe(), team);
    }
}

/// Thread 0 puts this PE's world number into `slots[my team number]` on every member, then
/// the team meets in `Team::barrier` at the chosen scope (which completes the puts first):
/// afterwards `slots[i]` holds member `i`'s world number on every member.
///
/// # Safety
///
/// Every member of `team` launches it with the same `scope`; `slots` is symmetric with
/// `team.n_pes()` elements; `status` valid for one `i32` write.
#[kernel]
pub unsafe fn team_barrier_exchange(team: Team, slots: *mut i32, scope: u32, status: *mut i32) {
    if thread::thread_rank_in_block() == 0 {
        let me = team.my_pe();
        for r in 0..team.n_pes() {
            shmem::p(
                slots.add(me as usize),
                shmem::my_pe(),
                team.translate_pe(r, Team::WORLD),
            );
        }
    }
    thread::sync_threads();
    let code = at_scope!(scope, S => team.barrier::<S>());
    report(status, code.as_ref().map(core::slice::from_ref));
}

/// All-to-all over `team`: block `j` (`n` elements) of this member's `src` lands in block
/// `my team number` of member `j`'s `dst` (both hold `n * team.n_pes()` elements).
///
/// # Safety
///
/// Collective over `team` at `scope` (every member launches it with the same `n` and
/// `scope`); `dst` and `src` symmetric with `n * team.n_pes()` elements; `status` valid for
/// one `i32` write.
#[kernel]
pub unsafe fn team_alltoall(
    team: Team,
    dst: *mut i32,
    src: *const i32,
    n: u32,
    scope: u32,
    status: *mut i32,
) {
    let code = at_scope!(scope, S => shmem::alltoall::<S, i32>(team, dst, src, n as usize));
    report(status, code.as_ref().map(core::slice::from_ref));
}

/// Reductions over `team` of `n` elements of `src`: their sum into `sum`, their maximum into
/// `max`.
///
/// # Safety
///
/// Collective over `team` at `scope`; `sum`, `max` and `src` symmetric with `n` elements;
/// `status` valid for one `i32` write.
#[kernel]
pub unsafe fn team_reduce(
    team: Team,
    sum: *mut i64,
    max: *mut i64,
    src: *const i64,
    n: u32,
    scope: u32,
    status: *mut i32,
) {
    let n = n as usize;
    let codes = at_scope!(scope, S => [
        shmem::reduce::<S, i64>(ReduceOp::Sum, team, sum, src, n),
        shmem::reduce::<S, i64>(ReduceOp::Max, team, max, src, n),
    ]);
    report(status, codes.as_ref().map(|c| &c[..]));
}

/// fcollect over `team` of `n` elements of `src` into `all` (`n * team.n_pes()` elements),
/// then broadcast of `n` elements of `src` from the team's last member into `bcast`.
///
/// # Safety
///
/// Collective over `team` at `scope`; `src` and `bcast` symmetric with `n` elements, `all`
/// with `n * team.n_pes()`; `status` valid for one `i32` write.
#[kernel]
pub unsafe fn team_fcollect_broadcast(
    team: Team,
    all: *mut u64,
    bcast: *mut u64,
    src: *const u64,
    n: u32,
    scope: u32,
    status: *mut i32,
) {
    let (n, root) = (n as usize, team.n_pes() - 1);
    let codes = at_scope!(scope, S => [
        shmem::fcollect::<S, u64>(team, all, src, n),
        shmem::broadcast::<S, u64>(team, bcast, src, n, root),
    ]);
    report(status, codes.as_ref().map(|c| &c[..]));
}
