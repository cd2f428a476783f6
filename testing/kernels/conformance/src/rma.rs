//! Remote memory access: `p`/`g` (rows 1, 2), `put`/`get` and their `_nbi` forms at every
//! scope (row 2), strided `iput`/`iget` (row 3), and direct access through `shmem::ptr`.

use super::{barrier_all_at, group, left, right, share, with_any_type, with_scope};
use rshmem_device::prelude::*;
use rshmem_device::shmem::RmaScalar;

/// Rows 1 and 2 for element type `ty` (any of the ten): thread `t < len` `p`s `src[t]` into
/// `dst[t]` on the right neighbour and completes it (`quiet`); the PEs meet in `barrier_all`
/// at `scope`; then thread `t` copies `dst[t]` into `seen[t]` (what the barrier made visible,
/// expected: the left neighbour's `src[t]`) and `g`s the right neighbour's `src[t]` into
/// `got[t]`. One block.
///
/// # Safety
///
/// Every PE launches it with the same `ty`, `scope` and `len`; `dst`, `src`, `seen`, `got`
/// are symmetric with `len` elements of type `ty`; `len` at most the block size.
#[kernel]
pub unsafe fn p_g_ring(
    ty: u32,
    scope: u32,
    dst: *mut u8,
    src: *const u8,
    seen: *mut u8,
    got: *mut u8,
    len: u32,
) {
    let t = thread::thread_idx_x();
    if t < len {
        let t = t as usize;
        with_any_type!(ty, T => {
            shmem::p(dst.cast::<T>().add(t), *src.cast::<T>().add(t), right());
        });
        // The barrier below completes the caller's operations only (NVSHMEM's are per
        // thread), so every thread completes its own.
        shmem::quiet();
    }
    barrier_all_at(scope);
    if t < len {
        let t = t as usize;
        with_any_type!(ty, T => {
            *seen.cast::<T>().add(t) = core::ptr::read_volatile(dst.cast::<T>().add(t));
            *got.cast::<T>().add(t) = shmem::g(src.cast::<T>().add(t), right());
        });
    }
}

/// `mode` of [`put_get`](fn@put_get): blocking `putmem`.
pub const PUT: u32 = 0;
/// `mode` of [`put_get`](fn@put_get): `putmem_nbi`, then `quiet`.
pub const PUT_NBI: u32 = 1;
/// `mode` of [`put_get`](fn@put_get): blocking `getmem`.
pub const GET: u32 = 2;
/// `mode` of [`put_get`](fn@put_get): `getmem_nbi`, then `quiet`.
pub const GET_NBI: u32 = 3;

/// Row 2 and the byte-wise RMA family: `bytes` bytes move between this PE and its right
/// neighbour, split between the groups of `scope`, each group making one call of `mode`:
/// a put writes local `src` into the right neighbour's `dst`; a get reads the right
/// neighbour's `src` into local `dst` (the circular shift). Any grid of whole warps.
///
/// # Safety
///
/// Every PE launches it; `dst` and `src` are symmetric with `bytes` bytes.
#[kernel]
pub unsafe fn put_get(scope: u32, mode: u32, dst: *mut u8, src: *const u8, bytes: usize) {
    let g = group(scope);
    let (start, len) = share(bytes, g.index, g.count);
    let (d, s, pe) = (dst.add(start), src.add(start), right());
    with_scope!(scope, S => match mode {
        PUT => shmem::putmem::<S>(d, s, len, pe),
        PUT_NBI => shmem::putmem_nbi::<S>(d, s, len, pe),
        GET => shmem::getmem::<S>(d, s, len, pe),
        _ => shmem::getmem_nbi::<S>(d, s, len, pe),
    });
    // Completes the `_nbi` forms; for a get, `dst` is valid only after it.
    shmem::quiet();
}

/// Row 3 for element type `ty` (any of the ten). PE `root` alone: for every PE, the groups of
/// `scope` split the `count` elements and `iput` `src[i * src_stride]` into
/// `dst[i * dst_stride]` there; after every thread's `quiet` and the block's meeting, they
/// `iget` it back into `back[pe * count * src_stride + i * src_stride]` (the round trip).
/// One block.
///
/// # Safety
///
/// Every PE launches it with the same arguments; `dst` is symmetric with `count *
/// dst_stride` elements of type `ty`, `src` holds `count * src_stride`, `back` `n_pes *
/// count * src_stride`; strides positive.
#[kernel]
pub unsafe fn strided(
    ty: u32,
    scope: u32,
    root: i32,
    dst: *mut u8,
    src: *const u8,
    back: *mut u8,
    count: usize,
    dst_stride: isize,
    src_stride: isize,
) {
    if shmem::my_pe() != root {
        return;
    }
    with_any_type!(ty, T => strided_as::<T>(
        scope, dst.cast(), src.cast(), back.cast(), count, dst_stride, src_stride))
}

/// [`strided`](fn@strided) for one element type.
///
/// # Safety
///
/// As the kernel: `dst` symmetric with `count * dst_stride` elements, `src` `count *
/// src_stride`, `back` `n_pes * count * src_stride`; positive strides; one block.
unsafe fn strided_as<T: RmaScalar>(
    scope: u32,
    dst: *mut T,
    src: *const T,
    back: *mut T,
    count: usize,
    dst_stride: isize,
    src_stride: isize,
) {
    let g = group(scope);
    let (first, len) = share(count, g.index, g.count);
    let (ds, ss) = (dst_stride as usize, src_stride as usize);
    for pe in 0..shmem::n_pes() {
        if len > 0 {
            with_scope!(scope, S => shmem::iput::<S, T>(
                dst.add(first * ds), src.add(first * ss), dst_stride, src_stride, len, pe));
        }
        // A blocking put completes locally only: the get below may see it only after a
        // `quiet` (by the thread that issued each part) and the block's meeting.
        shmem::quiet();
        thread::sync_threads();
        if len > 0 {
            let back = back.add(pe as usize * count * ss);
            with_scope!(scope, S => shmem::iget::<S, T>(
                back.add(first * ss), dst.add(first * ds), src_stride, dst_stride, len, pe));
        }
    }
}

/// Direct access through `shmem::ptr`: thread `t < len` stores `src[t]` straight into the
/// right neighbour's `dst[t]` through the pointer `ptr` gives, fences, and after the PEs meet
/// (`barrier_all` at block scope) copies its own `dst[t]` into `seen[t]` and loads the left
/// neighbour's `src[t]` through its pointer into `got[t]`. Thread 0 writes `flags[0] = 1` if
/// `ptr(dst, my_pe)` is `dst` itself and `flags[1] = 1` if both peer pointers were non-null.
/// One block.
///
/// # Safety
///
/// Every PE launches it; `dst` and `src` are symmetric with `len` `i32`s, `seen` and `got`
/// hold `len`, `flags` 2; `len` at most the block size.
#[kernel]
pub unsafe fn ptr_store(
    dst: *mut i32,
    src: *const i32,
    seen: *mut i32,
    got: *mut i32,
    flags: *mut i32,
    len: u32,
) {
    let t = thread::thread_idx_x() as usize;
    let (to_right, from_left) = (shmem::ptr(dst, right()), shmem::ptr(src, left()));
    let reachable = !to_right.is_null() && !from_left.is_null();
    if t == 0 {
        *flags = i32::from(shmem::ptr(dst, shmem::my_pe()) == dst);
        *flags.add(1) = i32::from(reachable);
    }
    if reachable && t < len as usize {
        core::ptr::write_volatile(to_right.add(t), *src.add(t));
        // Plain stores through a peer mapping are ordered like any other memory access.
        shmem::fence();
    }
    barrier_all_at(super::BLOCK);
    if reachable && t < len as usize {
        *seen.add(t) = core::ptr::read_volatile(dst.add(t));
        *got.add(t) = core::ptr::read_volatile(from_left.add(t));
    }
}
