//! The one-warp tile GEMM of `docs/tensor-cores.md`: how `cp.async`, `ldmatrix` and `mma.sync`
//! fit together.

use rshmem_device::half::bf16;
use rshmem_device::mma::{
    commit_group, cp_async_cg, mma_sync, wait_group, FragA, FragB, FragC, M16N8K16,
};
use rshmem_device::prelude::*;

/// Rows and columns of C each block (one warp) computes.
pub const TILE: usize = 32;
/// K per pipeline stage (one `m16n8k16` deep).
const TK: usize = 16;
/// Elements of one stage's A tile (`TILE × TK`, row-major) and B tile (`TK × TILE`, K-major).
const STAGE: usize = TILE * TK;
/// Dynamic shared memory of [`gemm_bf16`]: two stages of A and B tiles.
pub const GEMM_SHARED: u32 = (2 * 2 * STAGE * 2) as u32;

/// `C = A · B` in f32 for bf16 `A` (`m × k`, row-major) and `B` (`k × n`, row-major), one warp
/// per 32×32 tile of `C` (`m × n`, row-major). Grid: `(n / 32, m / 32)` blocks of 32 threads.
///
/// Each stage, every lane issues four 16-byte `cp.async.cg` (two of A's 64 chunks, two of
/// B's), the warp computes on the stage loaded before (double buffering: `wait_group 1`
/// leaves the newest stage in flight), loading A with `ldmatrix.x4` (two 16×16 fragments) and
/// B with `ldmatrix.x2.trans` (four 16×8), and issues 8 `mma.sync`.
///
/// # Safety
///
/// `m` and `n` multiples of 32, `k` of 16; `a`, `b` 16-byte aligned and valid for their
/// matrices, `c` for `m × n` f32; launched as above with [`GEMM_SHARED`] bytes of dynamic
/// shared memory.
#[kernel]
pub unsafe fn gemm_bf16(m: u32, n: u32, k: u32, a: *const bf16, b: *const bf16, c: *mut f32) {
    let (n, k) = (n as usize, k as usize);
    let _ = m;
    let lane = warp::lane_id() as usize;
    let (m0, n0) = (
        thread::block_idx().y as usize * TILE,
        thread::block_idx().x as usize * TILE,
    );
    let smem = thread::dynamic_shared::<bf16>().0;
    let (tile_a, tile_b) = (
        |s: usize| smem.add(s * STAGE),
        |s: usize| smem.add((2 + s) * STAGE),
    );

    // Stage `s` ← A[m0.., k0..k0+16] and B[k0..k0+16, n0..]: 64 chunks of 8 elements each.
    let load = |k0: usize, s: usize| {
        for chunk in [lane, lane + 32] {
            let (row, part) = (chunk / 2, chunk % 2);
            cp_async_cg(
                tile_a(s).add(row * TK + 8 * part).cast(),
                a.add((m0 + row) * k + k0 + 8 * part).cast(),
            );
            let (row, part) = (chunk / 4, chunk % 4);
            cp_async_cg(
                tile_b(s).add(row * TILE + 8 * part).cast(),
                b.add((k0 + row) * n + n0 + 8 * part).cast(),
            );
        }
    };

    let mut acc = [[FragC::<M16N8K16>::zero(); 4]; 2];
    let stages = k / TK;
    load(0, 0);
    commit_group();
    for kt in 0..stages {
        if kt + 1 < stages {
            load((kt + 1) * TK, (kt + 1) % 2);
        }
        // Always commit (an empty group at the end), so `wait_group 1` means "stage kt landed".
        commit_group();
        wait_group::<1>();
        // Every lane's copies of stage kt are in; make them visible to the whole warp.
        thread::sync_threads();
        let (sa, sb) = (tile_a(kt % 2), tile_b(kt % 2));
        let fa = [0, 1].map(|i| FragA::<M16N8K16, bf16>::ldmatrix(sa.add(16 * i * TK), TK));
        let fb = [0, 1, 2, 3].map(|j| FragB::<M16N8K16, bf16>::ldmatrix_trans(sb.add(8 * j), TILE));
        for (i, row) in acc.iter_mut().enumerate() {
            for (j, d) in row.iter_mut().enumerate() {
                *d = mma_sync(&fa[i], &fb[j], d);
            }
        }
        // The next iteration's copies overwrite this stage: every lane must be done with it.
        thread::sync_threads();
    }
    for (i, row) in acc.iter().enumerate() {
        for (j, d) in row.iter().enumerate() {
            d.store(c.add((m0 + 16 * i) * n + n0 + 8 * j), n);
        }
    }
}
