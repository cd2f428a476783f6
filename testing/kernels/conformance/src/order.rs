//! Ordering: what `fence` guarantees between deliveries to one PE (rows 4, 5 and 17). In
//! each kernel the receiver records what it sees the moment its wait ends, so a delivery
//! that overtook the one it was ordered behind shows up as a wrong value.

use super::{group, right, share, with_scope};
use rshmem_device::prelude::*;

/// Row 4: PE 0, for every PE in turn: the groups of `scope` `put_nbi` their share of `src`
/// into `data` there, every thread `fence`s, the block meets, and each group's leader
/// increments `flag` there. Every PE then waits, in every thread, for `flag` to reach the
/// number of groups and copies its share of `data` into `seen`: all of it must be there.
/// One block.
///
/// # Safety
///
/// Every PE launches it cooperatively; `data`, `src` and `seen` hold `len` symmetric
/// `i64`s, `flag` is one symmetric `u64` that starts at 0.
#[kernel]
pub unsafe fn put_nbi_fence_inc(
    scope: u32,
    data: *mut i64,
    src: *const i64,
    flag: *mut u64,
    seen: *mut i64,
    len: usize,
) {
    let g = group(scope);
    if shmem::my_pe() == 0 {
        let (start, count) = share(len, g.index, g.count);
        for pe in 0..shmem::n_pes() {
            if count > 0 {
                with_scope!(scope, S => shmem::put_nbi::<S, i64>(
                    data.add(start), src.add(start), count, pe));
            }
            // Each thread orders the part of the put it issued before the increment.
            shmem::fence();
            thread::sync_threads();
            if g.leader {
                shmem::atomic_inc(flag, pe);
            }
        }
    }
    shmem::wait_until(flag, Cmp::Eq, u64::from(g.count));
    let (start, count) = share(len, thread::thread_idx_x(), thread::block_dim_x());
    for i in start..start + count {
        *seen.add(i) = core::ptr::read_volatile(data.add(i));
    }
}

/// Row 5: PE 0, for every PE: the groups of `scope` put their share of `zeros` into `data`
/// there, `fence`, then put their share of `src` to the same place. Every thread of every PE
/// waits (`wait_until_all_vector`, `Eq`) until its share of `data` equals its local `src`
/// (the host gives every PE PE 0's data); the zeros, ordered before, must never land after.
/// One block.
///
/// # Safety
///
/// Every PE launches it cooperatively with PE 0's data in `src`; `data`, `zeros` and `src`
/// hold `len` symmetric `i32`s; `data` must differ from `src` everywhere at the start.
#[kernel]
pub unsafe fn put_twice_wait(
    scope: u32,
    data: *mut i32,
    zeros: *const i32,
    src: *const i32,
    len: usize,
) {
    if shmem::my_pe() == 0 {
        let g = group(scope);
        let (start, count) = share(len, g.index, g.count);
        if count > 0 {
            for pe in 0..shmem::n_pes() {
                let d = data.add(start);
                with_scope!(scope, S => {
                    shmem::put::<S, i32>(d, zeros.add(start), count, pe);
                    shmem::fence();
                    shmem::put::<S, i32>(d, src.add(start), count, pe);
                });
            }
        }
    }
    let (start, count) = share(len, thread::thread_idx_x(), thread::block_dim_x());
    shmem::wait_until_all_vector(
        data.add(start),
        count,
        core::ptr::null(),
        Cmp::Eq,
        src.add(start),
    );
}

/// Row 17 (from Intel SHMEM's `put_fence`): thread `t` of every PE `p`s `per_thread` values
/// `salt + (my_pe << 16) + i` (`i = t * per_thread + k`) into `data[i]` on the right
/// neighbour, `fence`s, then `atomic_set`s `flags[t] = mark` there. Thread `t` of the receiver
/// waits for `flags[t] == mark` and copies its values into `seen`: each must be
/// `salt + (left << 16) + i`. One block.
///
/// # Safety
///
/// Every PE launches it cooperatively; `data` and `seen` hold `block_dim * per_thread`
/// symmetric `i32`s and `flags` `block_dim`, none equal to `mark` at the start.
#[kernel]
pub unsafe fn p_fence_set(
    data: *mut i32,
    flags: *mut i32,
    seen: *mut i32,
    salt: i32,
    mark: i32,
    per_thread: u32,
) {
    let t = thread::thread_idx_x();
    let first = (t * per_thread) as usize;
    for i in first..first + per_thread as usize {
        let value = salt.wrapping_add((shmem::my_pe() << 16) + i as i32);
        shmem::p(data.add(i), value, right());
    }
    shmem::fence();
    shmem::atomic_set(flags.add(t as usize), mark, right());
    shmem::wait_until(flags.add(t as usize), Cmp::Eq, mark);
    for i in first..first + per_thread as usize {
        *seen.add(i) = core::ptr::read_volatile(data.add(i));
    }
}
