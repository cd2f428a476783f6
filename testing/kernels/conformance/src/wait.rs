//! Point-to-point synchronisation: `wait_until_any` driving a receive loop (row 9),
//! `wait_until_{all,any,some}` and their `_vector` forms (row 10), and the `test` family,
//! each for element type `ty` (`i32`, `u32`, `i64`, `u64`).

use super::{group, right, share, with_int_type, with_scope, Elem};
use rshmem_device::prelude::*;
use rshmem_device::shmem::{RmaScalar, WaitScalar};

/// Every comparison, at the index of its raw `NVSHMEM_CMP_*` value.
pub const CMPS: [Cmp; 6] = [Cmp::Eq, Cmp::Ne, Cmp::Gt, Cmp::Le, Cmp::Lt, Cmp::Ge];

/// Row 9. Every group of `scope`, for every PE: `put_nbi` its share of `src` into block
/// `my_pe` of `data` there, `fence`, meet the block, and the group's leader adds 1 to
/// `flags[my_pe]` there (so each flag ends at the number of groups). Thread 0 then receives:
/// `n_pes` times, `i = wait_until_any(flags, status, Eq, groups)`, excludes `i` (`status[i] =
/// 1`), logs it in `order[k]` and adds block `i` of `data` to `sum[0]`; a last
/// `wait_until_any` with every flag excluded goes to `order[n_pes]` (`NONE`). One block.
///
/// # Safety
///
/// Every PE launches it cooperatively; `data` holds `n_pes * len` symmetric `i32`s, `src`
/// `len`, `flags` `n_pes` symmetric `u64`s starting at 0, `status` `n_pes` zeros, `order`
/// `n_pes + 1`, `sum` 1.
#[kernel]
pub unsafe fn wait_any_sum(
    scope: u32,
    data: *mut i32,
    src: *const i32,
    flags: *mut u64,
    status: *mut i32,
    order: *mut u64,
    sum: *mut i64,
    len: usize,
) {
    let (me, n) = (shmem::my_pe(), shmem::n_pes());
    let g = group(scope);
    let (start, count) = share(len, g.index, g.count);
    for pe in 0..n {
        if count > 0 {
            let d = data.add(me as usize * len + start);
            with_scope!(scope, S => shmem::put_nbi::<S, i32>(d, src.add(start), count, pe));
        }
        shmem::fence();
        thread::sync_threads();
        if g.leader {
            shmem::atomic_add(flags.add(me as usize), 1, pe);
        }
    }
    if thread::thread_idx_x() != 0 {
        return;
    }
    let (n, groups) = (n as usize, u64::from(g.count));
    let mut total = 0i64;
    for k in 0..n {
        let i = shmem::wait_until_any(flags, n, status, Cmp::Eq, groups);
        *order.add(k) = i as u64;
        if i >= n {
            // Logged for the host to report; reading block `i` would leave the buffer.
            return;
        }
        *status.add(i) = 1;
        for j in 0..len {
            total = total.wrapping_add(i64::from(core::ptr::read_volatile(data.add(i * len + j))));
        }
    }
    *sum = total;
    *order.add(n) = shmem::wait_until_any(flags, n, status, Cmp::Eq, groups) as u64;
}

/// Row 10 and the `_vector` forms. `ivars` holds three arrays of `len`: *all*, *any*, *some*,
/// initially `poison`. Thread `t < len` of every PE `p`s `vals[t]` into the right neighbour's
/// *all* and *some* unless `status[t] != 0` (`status` is the same on every PE), and into its
/// *any* only if `t == hot`. Thread 0 of the receiver, with the comparison `Ne poison`
/// (`vector == 0`) or `Eq expect[i]` (`_vector` forms, `expect` = what the left neighbour
/// sends):
///
/// * `wait_until_all` over *all* excluding `status`, then copies *all* into `seen`;
/// * `out[0]` = `wait_until_any` over *any* (must be `hot`);
/// * `wait_until_some` over *some* with `status[len..]` until every non-excluded index was
///   reported once, logging them in `out[3..]` and excluding each;
/// * `out[1]`, `out[2]` = `wait_until_any`, `wait_until_some` with everything excluded
///   (`shmem::wait::NONE` and 0).
///
/// One block of at least `len` threads.
///
/// # Safety
///
/// `ivars` is `3 * len` symmetric `T`s; `status` holds `2 * len`; `vals`, `expect`, `seen`,
/// `indices` `len`; `out` `3 + len`.
unsafe fn all_any_some_as<T: WaitScalar + RmaScalar>(
    vector: u32,
    ivars: *mut T,
    vals: *const T,
    expect: *const T,
    poison: T,
    hot: u32,
    status: *mut i32,
    indices: *mut usize,
    out: *mut u64,
    seen: *mut T,
    len: u32,
) {
    let (t, n) = (thread::thread_idx_x() as usize, len as usize);
    let (all, any, some) = (ivars, ivars.add(n), ivars.add(2 * n));
    if t < n {
        if *status.add(t) == 0 {
            shmem::p(all.add(t), *vals.add(t), right());
            shmem::p(some.add(t), *vals.add(t), right());
        }
        if t == hot as usize {
            shmem::p(any.add(t), *vals.add(t), right());
        }
    }
    if t != 0 {
        return;
    }
    let vector = vector != 0;
    if vector {
        shmem::wait_until_all_vector(all, n, status, Cmp::Eq, expect);
    } else {
        shmem::wait_until_all(all, n, status, Cmp::Ne, poison);
    }
    for i in 0..n {
        *seen.add(i) = core::ptr::read_volatile(all.add(i));
    }
    *out = if vector {
        shmem::wait_until_any_vector(any, n, core::ptr::null(), Cmp::Eq, expect)
    } else {
        shmem::wait_until_any(any, n, core::ptr::null(), Cmp::Ne, poison)
    } as u64;
    let some_status = status.add(n);
    let wanted = (0..n).filter(|&i| *some_status.add(i) == 0).count();
    let mut logged = 0;
    while logged < wanted {
        let k = if vector {
            shmem::wait_until_some_vector(some, n, indices, some_status, Cmp::Eq, expect)
        } else {
            shmem::wait_until_some(some, n, indices, some_status, Cmp::Ne, poison)
        };
        for j in 0..k {
            let i = *indices.add(j);
            if logged < n && i < n {
                *out.add(3 + logged) = i as u64;
                *some_status.add(i) = 1;
            }
            logged += 1;
        }
        if k == 0 {
            // Nothing qualified although something was still awaited: a wrong return.
            break;
        }
    }
    let (any_none, some_none) = if vector {
        (
            shmem::wait_until_any_vector(some, n, some_status, Cmp::Eq, expect),
            shmem::wait_until_some_vector(some, n, indices, some_status, Cmp::Eq, expect),
        )
    } else {
        (
            shmem::wait_until_any(some, n, some_status, Cmp::Ne, poison),
            shmem::wait_until_some(some, n, indices, some_status, Cmp::Ne, poison),
        )
    };
    *out.add(1) = any_none as u64;
    *out.add(2) = some_none as u64;
}

/// The `test` family, one thread, on local `ivars` the host wrote: for every comparison `c`
/// and probe value `probes[k]`, record at `out[(c * nprobes + k) * (2 * len + 3)..]`:
/// `test(ivars[j])` for every `j`, `test_all`, `test_any` and `test_some`'s count and indices
/// (all with `status`).
///
/// # Safety
///
/// `ivars` is `len` symmetric `T`s; `status` and `indices` hold `len`; `probes` `nprobes`;
/// `out` `6 * nprobes * (2 * len + 3)`.
unsafe fn tests_as<T: WaitScalar>(
    ivars: *const T,
    probes: *const T,
    nprobes: u32,
    status: *const i32,
    indices: *mut usize,
    out: *mut u64,
    len: u32,
) {
    if thread::index_1d() != 0 {
        return;
    }
    let n = len as usize;
    for (c, &cmp) in CMPS.iter().enumerate() {
        for k in 0..nprobes as usize {
            let v = *probes.add(k);
            let rec = out.add((c * nprobes as usize + k) * (2 * n + 3));
            for j in 0..n {
                *rec.add(j) = u64::from(shmem::test(ivars.add(j), cmp, v));
            }
            *rec.add(n) = u64::from(shmem::test_all(ivars, n, status, cmp, v));
            *rec.add(n + 1) = shmem::test_any(ivars, n, status, cmp, v) as u64;
            let found = shmem::test_some(ivars, n, indices, status, cmp, v);
            *rec.add(n + 2) = found as u64;
            for j in 0..found.min(n) {
                *rec.add(n + 3 + j) = *indices.add(j) as u64;
            }
        }
    }
}

/// `all_any_some_as` for element type `ty`; `poison` holds the bits of a `T`. One block,
/// cooperative.
///
/// # Safety
///
/// As `all_any_some_as`, with `ty` naming `T`; every PE launches it.
#[kernel]
pub unsafe fn all_any_some(
    ty: u32,
    vector: u32,
    ivars: *mut u8,
    vals: *const u8,
    expect: *const u8,
    poison: u64,
    hot: u32,
    status: *mut i32,
    indices: *mut usize,
    out: *mut u64,
    seen: *mut u8,
    len: u32,
) {
    with_int_type!(ty, T => all_any_some_as::<T>(
        vector, ivars.cast(), vals.cast(), expect.cast(), T::from_bits(poison), hot, status,
        indices, out, seen.cast(), len))
}

/// `tests_as` for element type `ty`. One thread.
///
/// # Safety
///
/// As `tests_as`, with `ty` naming `T`.
#[kernel]
pub unsafe fn tests(
    ty: u32,
    ivars: *const u8,
    probes: *const u8,
    nprobes: u32,
    status: *const i32,
    indices: *mut usize,
    out: *mut u64,
    len: u32,
) {
    with_int_type!(ty, T => tests_as::<T>(
        ivars.cast(), probes.cast(), nprobes, status, indices, out, len))
}
