//! `ldmatrix`, `stmatrix` and `cp.async`, one warp each.

use rshmem_device::mma::{
    commit_group, cp_async_ca, cp_async_cg, cp_async_cg_zfill, ldmatrix, ldmatrix_trans, stmatrix,
    stmatrix_trans, wait_all, wait_group, Matrices,
};
use rshmem_device::prelude::*;

/// Bytes between rows of the test matrices in shared memory: 32, so rows are 16-byte aligned
/// but not contiguous (a stride mistake shows).
const ROW_BYTES: usize = 32;
/// Shared memory the matrix kernels need: 4 matrices of 8 rows.
pub const MATRIX_SHARED: u32 = (4 * 8 * ROW_BYTES) as u32;

/// One warp: shared memory holds 4 matrices, element (r, c) of matrix m being
/// `m * 64 + r * 8 + c` (rows `ROW_BYTES` apart); `ldmatrix` (`trans` ≠ 0: `.trans`) of
/// `x` (1, 2, 4) of them, lane `l` giving row `l % 8` of matrix `l / 8`; lane `l` writes
/// register `m` to `out[4 l + m]`.
///
/// # Safety
///
/// One warp, [`MATRIX_SHARED`] bytes of dynamic shared memory, `out` valid for 128 words.
#[kernel]
pub unsafe fn ldmatrix_test(x: u32, trans: u32, out: *mut u32) {
    let lane = warp::lane_id() as usize;
    let s = thread::dynamic_shared::<u16>().0;
    for i in (lane..4 * 64).step_by(32) {
        let (m, r, c) = (i / 64, i / 8 % 8, i % 8);
        *s.add((m * 8 + r) * ROW_BYTES / 2 + c) = i as u16;
    }
    warp::sync_warp(warp::FULL_MASK);
    let row = s.add((lane / 8 * 8 + lane % 8) * ROW_BYTES / 2);
    match x {
        1 => ld::<1>(row, trans != 0, out.add(4 * lane)),
        2 => ld::<2>(row, trans != 0, out.add(4 * lane)),
        _ => ld::<4>(row, trans != 0, out.add(4 * lane)),
    }
}

unsafe fn ld<const N: usize>(row: *const u16, trans: bool, out: *mut u32)
where
    [u32; N]: Matrices,
{
    let regs: [u32; N] = if trans {
        ldmatrix_trans::<N>(row)
    } else {
        ldmatrix::<N>(row)
    };
    for (m, r) in regs.iter().enumerate() {
        *out.add(m) = *r;
    }
}

/// One warp: lane `l` holds in register `m` the pair `regs[4 l + m]` and `stmatrix`es (`trans`
/// ≠ 0: `.trans`) `x` matrices to zeroed shared memory, lane `l` giving row `l % 8` of matrix
/// `l / 8` (rows `ROW_BYTES` apart); then lane 0 copies the 4 × 8 rows of 8 elements to `out`
/// (row-major, 256 u16).
///
/// # Safety
///
/// One warp, [`MATRIX_SHARED`] bytes of dynamic shared memory; `regs` 128 words, `out` 256
/// elements. sm_90.
#[kernel]
pub unsafe fn stmatrix_test(x: u32, trans: u32, regs: *const u32, out: *mut u16) {
    let lane = warp::lane_id() as usize;
    let s = thread::dynamic_shared::<u16>().0;
    for i in (lane..MATRIX_SHARED as usize / 2).step_by(32) {
        *s.add(i) = 0;
    }
    warp::sync_warp(warp::FULL_MASK);
    let row = s.add((lane / 8 * 8 + lane % 8) * ROW_BYTES / 2);
    let r = regs.add(4 * lane);
    match x {
        1 => st::<1>(row, trans != 0, r),
        2 => st::<2>(row, trans != 0, r),
        _ => st::<4>(row, trans != 0, r),
    }
    warp::sync_warp(warp::FULL_MASK);
    for i in (lane..256).step_by(32) {
        let (m, r, c) = (i / 64, i / 8 % 8, i % 8);
        *out.add(i) = *s.add((m * 8 + r) * ROW_BYTES / 2 + c);
    }
}

unsafe fn st<const N: usize>(row: *mut u16, trans: bool, regs: *const u32)
where
    [u32; N]: Matrices,
{
    let regs: [u32; N] = core::array::from_fn(|m| *regs.add(m));
    if trans {
        stmatrix_trans::<N>(row, regs)
    } else {
        stmatrix::<N>(row, regs)
    }
}

/// Bytes each lane copies in [`cp_async_test`]: 4 + 8 + 16 + 16 in group 0, 16 + 16 (zero-fill
/// of all but the first `lane % 17` bytes) in group 1.
pub const CP_LANE_BYTES: usize = 80;

/// One warp: lane `l` copies its 80 bytes `src[80 l ..]` into shared memory with
/// `cp.async.ca` 4, 8, 16 and `cp.async.cg` 16 (group 0), then `cp.async.cg` 16 and a
/// zero-filling `cp.async.cg` of `l % 17` bytes (group 1); after `wait_group 1` it copies its
/// group-0 bytes to `early[80 l ..]`, after `wait_all` all 80 bytes to `late[80 l ..]`.
///
/// # Safety
///
/// One warp, `32 · 80` bytes of dynamic shared memory; `src`, `early`, `late` valid for
/// `32 · 80` bytes, `src` 16-byte aligned.
#[kernel]
pub unsafe fn cp_async_test(src: *const u8, early: *mut u8, late: *mut u8) {
    let lane = warp::lane_id() as usize;
    let base = lane * CP_LANE_BYTES;
    let (s, g) = (thread::dynamic_shared::<u8>().0.add(base), src.add(base));
    cp_async_ca::<4>(s, g);
    cp_async_ca::<8>(s.add(8), g.add(8));
    cp_async_ca::<16>(s.add(16), g.add(16));
    cp_async_cg(s.add(32), g.add(32));
    commit_group();
    cp_async_cg(s.add(48), g.add(48));
    cp_async_cg_zfill(s.add(64), g.add(64), lane % 17);
    commit_group();
    wait_group::<1>();
    for i in (0..4).chain(8..48) {
        *early.add(base + i) = *s.add(i);
    }
    wait_all();
    for i in 0..CP_LANE_BYTES {
        *late.add(base + i) = *s.add(i);
    }
}
