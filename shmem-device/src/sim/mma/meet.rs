//! The warp meeting every tensor-core operation is on the simulator: each lane publishes its
//! registers, the warp meets, every lane reads all 32 lanes' words and computes its own result,
//! and the warp meets again before anything is freed. Lanes that make different operations
//! (or a partial warp) fail with the operation named.

use core::sync::atomic::Ordering::SeqCst;
use std::boxed::Box;
use std::format;
use std::vec::Vec;

use super::super::context::{with, ThreadCtx};

/// What one lane brings to a meeting.
struct Contribution {
    op: &'static str,
    words: Vec<u32>,
}

/// Frees a lane's contribution after the second meeting, when no lane reads it any more. A lane
/// that unwinds (its launch aborted, or it failed) leaks it instead: others may still be
/// reading it, and a failed launch is the end anyway.
struct Published(*mut Contribution);

impl Drop for Published {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            // SAFETY: made by `Box::into_raw` in `meet`; the second meeting has completed, so
            // every lane has finished reading it.
            drop(unsafe { Box::from_raw(self.0) })
        }
    }
}

/// The first words of a failure message: the operation and the kernel.
pub(super) fn place(c: &ThreadCtx<'_>, op: &str) -> std::string::String {
    format!("{op} in kernel `{}`", c.launch.spec.kernel)
}

/// Runs `op` as a meeting of the whole warp: `mine` is this lane's words; `compute(c, lane,
/// all)` runs on every lane with `all[l]` the words of lane `l`, between the two meetings.
pub(super) fn meet<R>(
    op: &'static str,
    mine: &[u32],
    compute: impl FnOnce(&ThreadCtx<'_>, usize, &[&[u32]]) -> R,
) -> R {
    with(op, |c| {
        let (warp, lane) = c.warp();
        let lanes = warp.slots.len();
        if lanes != 32 {
            c.fail(format!(
                "{}: a warp-collective tensor-core operation needs all 32 lanes, but this \
                 thread's warp has {lanes} (the block's last, partial warp): make the block's \
                 size a multiple of 32",
                place(c, op)
            ));
        }
        let published = Published(Box::into_raw(Box::new(Contribution {
            op,
            words: mine.to_vec(),
        })));
        warp.slots[lane as usize].store(published.0 as u64, SeqCst);
        c.sync(warp, op);
        let all: Vec<&Contribution> = (0..32)
            // SAFETY: every lane stored a pointer to its live contribution before the first
            // meeting, and frees it only after the second (or never, when unwinding).
            .map(|l| unsafe { &*(warp.slots[l].load(SeqCst) as *const Contribution) })
            .collect();
        if let Some((l, other)) = all
            .iter()
            .enumerate()
            .find(|(_, o)| o.op != op || o.words.len() != mine.len())
        {
            c.fail(format!(
                "{}: lane {l} of this warp makes `{}` at the same time: every lane of the warp \
                 must execute the same warp-collective instruction together (converged)",
                place(c, op),
                other.op
            ));
        }
        let words: Vec<&[u32]> = all.iter().map(|o| o.words.as_slice()).collect();
        let r = compute(c, lane as usize, &words);
        c.sync(warp, op);
        drop(published);
        r
    })
}
