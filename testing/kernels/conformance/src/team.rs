//! Teams and PE-wide synchronisation: the predefined teams' queries, and what `Team::barrier`,
//! `Team::sync` and `sync_all` guarantee at each scope.

use super::{for_each_scope, pe_caller, right};
use rshmem_device::prelude::*;

/// Team queries, then barriers. `out[0..6]` = `WORLD.my_pe()`, `WORLD.n_pes()`,
/// `WORLD.translate_pe(my_pe, SHARED)`, `INVALID.my_pe()`, `INVALID.n_pes()`,
/// `WORLD.translate_pe(0, INVALID)`. Then at each scope `k`, for each kind `j` (0:
/// `WORLD.barrier`, 1: `WORLD.sync` after a `quiet`, 2: `sync_all` after a `quiet`), slot
/// `s = 3k + j`: thread 0 `p`s `tokens[s]` into the right neighbour's `dst[s]`, the PEs meet
/// that way (one caller per PE at scope `k`), and thread 0 copies `dst[s]` into `seen[s]`
/// (the left neighbour's token); `out[6 + s]` is the meeting's return code (0 for
/// `sync_all`). One block, cooperative.
///
/// # Safety
///
/// Every PE launches it cooperatively; `tokens`, `dst` and `seen` hold 9 symmetric `i32`s,
/// `out` 15.
#[kernel]
pub unsafe fn team_world(tokens: *const i32, dst: *mut i32, seen: *mut i32, out: *mut i32) {
    let t = thread::thread_idx_x();
    if t == 0 {
        let world = Team::WORLD;
        let queries = [
            world.my_pe(),
            world.n_pes(),
            world.translate_pe(shmem::my_pe(), Team::SHARED),
            Team::INVALID.my_pe(),
            Team::INVALID.n_pes(),
            world.translate_pe(0, Team::INVALID),
        ];
        for (i, q) in queries.into_iter().enumerate() {
            *out.add(i) = q;
        }
    }
    for_each_scope!(k, S => for j in 0..3u32 {
        let s = (3 * k + j) as usize;
        if t == 0 {
            shmem::p(dst.add(s), *tokens.add(s), right());
            if j > 0 {
                // `sync` and `sync_all` order, but do not complete, earlier operations.
                shmem::quiet();
            }
        }
        thread::sync_threads();
        if pe_caller(k) {
            let code = match j {
                0 => Team::WORLD.barrier::<S>(),
                1 => Team::WORLD.sync::<S>(),
                _ => {
                    shmem::sync_all::<S>();
                    0
                }
            };
            if t == 0 {
                *out.add(6 + s) = code;
            }
        }
        thread::sync_threads();
        if t == 0 {
            *seen.add(s) = core::ptr::read_volatile(dst.add(s));
        }
    });
}
