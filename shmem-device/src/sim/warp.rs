//! Warp shuffles and votes on the simulator: the warp's threads do not run in lockstep, so
//! each operation is a meeting of the whole warp: every lane writes its word into the warp's
//! slots, the warp meets, each lane reads what it needs, and the warp meets again before the
//! slots are reused. A mask other than the warp's existing lanes fails the thread.

use core::sync::atomic::Ordering::SeqCst;

use super::context::{with, ThreadCtx};
use crate::contract::Shuffle;

/// The lanes that exist in this thread's warp (all 32 but in a partial last warp).
fn lanes(c: &ThreadCtx<'_>) -> u32 {
    c.warp().0.slots.len() as u32
}

fn existing_mask(c: &ThreadCtx<'_>) -> u32 {
    match lanes(c) {
        32 => u32::MAX,
        n => (1u32 << n) - 1,
    }
}

fn check_mask(c: &ThreadCtx<'_>, op: &str, mask: u32) {
    let all = existing_mask(c);
    if mask & all != all {
        c.fail(std::format!(
            "{op}: mask {mask:#010x} leaves out lanes of the warp ({all:#010x}); the simulator runs \
             warp operations with every lane of the warp"
        ));
    }
}

pub(crate) fn lane_id() -> u32 {
    with("warp::lane_id", |c| c.warp().1)
}

pub(crate) fn active_mask() -> u32 {
    with("warp::active_mask", existing_mask)
}

pub(crate) fn sync_warp(mask: u32) {
    with("warp::sync_warp", |c| {
        check_mask(c, "warp::sync_warp", mask);
        c.sync(c.warp().0, "warp::sync_warp")
    })
}

/// Every lane publishes `word`; `read(slots)` runs after all have, before any rewrites.
fn exchange<R>(
    op: &'static str,
    mask: u32,
    word: u64,
    read: impl FnOnce(&ThreadCtx<'_>, u32, &dyn Fn(u32) -> u64) -> R,
) -> R {
    with(op, |c| {
        check_mask(c, op, mask);
        let (warp, lane) = c.warp();
        warp.slots[lane as usize].store(word, SeqCst);
        c.sync(warp, op);
        let r = read(c, lane, &|l| warp.slots[l as usize].load(SeqCst));
        c.sync(warp, op);
        r
    })
}

pub(crate) fn shuffle32(mask: u32, mode: Shuffle, value: u32, arg: u32) -> u32 {
    exchange("warp::shuffle", mask, value as u64, |c, lane, slot| {
        let n = lanes(c);
        let src = match mode {
            Shuffle::Idx => arg % 32,
            Shuffle::Up => lane.checked_sub(arg).unwrap_or(lane),
            Shuffle::Down => Some(lane + arg).filter(|&l| l < 32).unwrap_or(lane),
            Shuffle::Xor => lane ^ (arg & 31),
        };
        // A lane that does not exist in a partial warp reads as the caller's own value.
        (if src < n { slot(src) } else { value as u64 }) as u32
    })
}

pub(crate) fn ballot(mask: u32, pred: bool) -> u32 {
    exchange("warp::ballot", mask, pred as u64, |c, _, slot| {
        (0..lanes(c))
            .filter(|&l| slot(l) != 0)
            .fold(0u32, |acc, l| acc | 1 << l)
    })
}

pub(crate) fn match_any(mask: u32, value: u32) -> u32 {
    exchange("warp::match_any", mask, value as u64, |c, _, slot| {
        (0..lanes(c))
            .filter(|&l| slot(l) == value as u64)
            .fold(0u32, |acc, l| acc | 1 << l)
    })
}
