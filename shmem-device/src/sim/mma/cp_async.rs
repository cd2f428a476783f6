//! `cp.async` on the simulator. Each thread keeps its copies: `cp_async` checks and records
//! one, `commit_group` closes the open group, `wait_group(n)` performs every group but the
//! newest `n` (oldest first), `wait_all` commits and performs all. Copies happen at the wait,
//! the latest moment the GPU allows, so a kernel that reads its destination before waiting
//! sees the old bytes here, as it may on a GPU. Copies never waited for are dropped when the
//! thread ends (no thread can have observed them without a wait).

use core::cell::RefCell;
use std::collections::VecDeque;
use std::format;
use std::vec::Vec;

use super::super::context::with;
use super::super::mem;
use super::meet::place;

#[derive(Clone, Copy)]
struct Copy {
    dst: *mut u8,
    src: *const u8,
    bytes: usize,
    src_bytes: usize,
}

#[derive(Default)]
struct Pending {
    open: Vec<Copy>,
    groups: VecDeque<Vec<Copy>>,
}

std::thread_local! {
    /// This simulated thread's copies (every simulated thread is a host thread of its own).
    static PENDING: RefCell<Pending> = RefCell::new(Pending::default());
}

/// Records a copy of `bytes` (4, 8 or 16) from global `src` to shared `dst`, of which the first
/// `src_bytes` come from `src` and the rest are zero.
pub(crate) fn cp_async(dst: *mut u8, src: *const u8, bytes: usize, src_bytes: usize, cg: bool) {
    let op = if cg {
        "cp.async.cg.shared.global"
    } else {
        "cp.async.ca.shared.global"
    };
    with(op, |c| {
        let at = || place(c, op);
        let (base, len) = c.block.shared.get();
        let (d, s) = (dst as usize, src as usize);
        let (base, end) = (base as usize, base as usize + len);
        if !matches!((cg, bytes), (false, 4 | 8 | 16) | (true, 16)) {
            c.fail(format!("{}: copies of {bytes} bytes do not exist", at()));
        }
        if src_bytes > bytes {
            c.fail(format!(
                "{}: src_size {src_bytes} exceeds the copy size {bytes}",
                at()
            ));
        }
        if d % bytes != 0 || s % bytes != 0 {
            c.fail(format!(
                "{}: the addresses must be aligned to the copy size {bytes} (dst {d:#x}, src {s:#x})",
                at()
            ));
        }
        if d < base || d + bytes > end {
            c.fail(format!(
                "{}: dst {d:#x} is not inside the block's dynamic shared memory ({base:#x}, {len} \
                 bytes)",
                at()
            ));
        }
        if s < end && base < s + bytes {
            c.fail(format!(
                "{}: src {s:#x} is in shared memory; it must be global memory",
                at()
            ));
        }
    });
    PENDING.with(|p| {
        p.borrow_mut().open.push(Copy {
            dst,
            src,
            bytes,
            src_bytes,
        })
    })
}

pub(crate) fn cp_async_commit() {
    with("cp.async.commit_group", |_| ());
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let group = core::mem::take(&mut p.open);
        p.groups.push_back(group);
    })
}

pub(crate) fn cp_async_wait_group(n: usize) {
    with("cp.async.wait_group", |_| ());
    let done: Vec<Copy> = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let finished = p.groups.len().saturating_sub(n);
        p.groups.drain(..finished).flatten().collect()
    });
    for cp in done {
        // SAFETY: `cp_async` checked that `dst` is `bytes` bytes of this block's shared memory
        // (which outlives the thread) and the kernel's contract makes `src` readable for
        // `src_bytes`; accesses are atomic, so a racing kernel is a race as on a GPU, not UB.
        unsafe {
            mem::atomic_copy(cp.dst, cp.src, cp.src_bytes);
            mem::atomic_zero(cp.dst.add(cp.src_bytes), cp.bytes - cp.src_bytes);
        }
    }
}

pub(crate) fn cp_async_wait_all() {
    cp_async_commit();
    cp_async_wait_group(0);
}
