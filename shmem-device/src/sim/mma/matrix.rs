//! `ldmatrix` and `stmatrix` on the simulator: the warp meets to exchange row addresses
//! (lanes `8m..8m+8` give the rows of matrix `m`), then each lane reads or writes its own
//! elements of the 8×8 matrices of 16-bit elements: lane `l` holds, of matrix `m`, row `l / 4`,
//! columns `2(l % 4)` and `2(l % 4) + 1` (the lower in the low half of register `m`); with
//! `.trans` the matrix as stored is the transpose of that.

use std::format;

use super::super::context::ThreadCtx;
use super::meet::{meet, place};

/// The row addresses of `n` matrices from every lane's `[lo, hi]` words, checked: 16-byte
/// aligned and inside the block's dynamic shared memory.
fn rows(c: &ThreadCtx<'_>, op: &str, all: &[&[u32]], n: usize) -> [[usize; 8]; 4] {
    let (base, len) = c.block.shared.get();
    let (base, end) = (base as usize, base as usize + len);
    let mut rows = [[0usize; 8]; 4];
    for (l, words) in all.iter().enumerate().take(8 * n) {
        let a = words[0] as usize | (words[1] as usize) << 32;
        if a % 16 != 0 {
            c.fail(format!(
                "{}: lane {l}'s row address {a:#x} is not 16-byte aligned",
                place(c, op)
            ));
        }
        if a < base || a + 16 > end {
            c.fail(format!(
                "{}: lane {l}'s row address {a:#x} is not inside the block's dynamic shared memory \
                 ({base:#x}, {len} bytes): the rows must be in shared memory",
                place(c, op)
            ));
        }
        rows[l / 8][l % 8] = a;
    }
    rows
}

fn split(p: usize) -> [u32; 2] {
    [p as u32, (p as u64 >> 32) as u32]
}

/// Where lane `lane`'s halves of register `m` live: `(row, col)` of the stored matrix for the
/// low and the high half.
fn halves(lane: usize, trans: bool) -> [(usize, usize); 2] {
    let (r, c) = (lane / 4, 2 * (lane % 4));
    if trans {
        [(c, r), (c + 1, r)]
    } else {
        [(r, c), (r, c + 1)]
    }
}

fn op_name(load: bool, n: usize, trans: bool) -> &'static str {
    match (load, n, trans) {
        (true, 1, false) => "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
        (true, 2, false) => "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
        (true, 4, false) => "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        (true, 1, true) => "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
        (true, 2, true) => "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        (true, 4, true) => "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        (false, 1, false) => "stmatrix.sync.aligned.m8n8.x1.shared.b16",
        (false, 2, false) => "stmatrix.sync.aligned.m8n8.x2.shared.b16",
        (false, 4, false) => "stmatrix.sync.aligned.m8n8.x4.shared.b16",
        (false, 1, true) => "stmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
        (false, 2, true) => "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        (false, 4, true) => "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        _ => unreachable!("ldmatrix/stmatrix take 1, 2 or 4 matrices"),
    }
}

pub(crate) fn ldmatrix<const N: usize>(row: *const u8, trans: bool) -> [u32; N] {
    let op = op_name(true, N, trans);
    meet(op, &split(row as usize), |c, lane, all| {
        let rows = rows(c, op, all, N);
        core::array::from_fn(|m| {
            let [lo, hi] = halves(lane, trans).map(|(r, col)| {
                // SAFETY: the row address is checked to lie in the block's shared memory with
                // 16 bytes behind it; `col < 8`.
                unsafe { ((rows[m][r] + 2 * col) as *const u16).read() }
            });
            u32::from(lo) | u32::from(hi) << 16
        })
    })
}

pub(crate) fn stmatrix<const N: usize>(row: *mut u8, regs: [u32; N], trans: bool) {
    let op = op_name(false, N, trans);
    let mut mine = std::vec::Vec::from(split(row as usize));
    mine.extend_from_slice(&regs);
    meet(op, &mine, |c, lane, all| {
        let rows = rows(c, op, all, N);
        if lane >= 8 * N {
            return;
        }
        // This lane writes the row it gave the address of: row `r` of matrix `m`.
        let (m, r) = (lane / 8, lane % 8);
        for col in 0..8 {
            // The holder of (r, col) of the stored matrix: invert `halves`.
            let (fr, fc) = if trans { (col, r) } else { (r, col) };
            let holder = 4 * fr + fc / 2;
            let v = (all[holder][2 + m] >> (16 * (fc % 2))) as u16;
            // SAFETY: checked as in `ldmatrix`; each row is written by one lane only.
            unsafe { ((rows[m][r] + 2 * col) as *mut u16).write(v) }
        }
    })
}
