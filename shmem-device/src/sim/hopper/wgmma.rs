//! `wgmma` as a warpgroup meeting, with its results held back until a `wait_group`.

use core::cell::RefCell;
use std::format;
use std::vec::Vec;

use super::state::Slot;
use super::{smem_read, warpgroup, with, ThreadCtx};
use crate::contract::hopper::{wgmma_acc_coords, Kind, SmemDesc, WgmmaA as RegsA};

/// Where a `wgmma`'s A operand comes from.
pub(crate) enum WgmmaA {
    Smem(u64),
    Regs([u32; 4]),
}

std::thread_local! {
    static THREAD: RefCell<State> = RefCell::new(State { needs_fence: true, ..Default::default() });
}

#[derive(Default)]
struct State {
    /// No `wgmma::fence` since the kernel began or the registers were last taken.
    needs_fence: bool,
    /// Results held back: accumulator address, the commit group, the values.
    pending: Vec<(usize, u64, Vec<f32>)>,
    committed: u64,
    /// Groups below this number have completed.
    completed: u64,
}

/// The value of an element of `kind` (its bits in the low byte or bytes).
fn to_f32(kind: Kind, bits: u16) -> f32 {
    match kind {
        Kind::Bf16 => f32::from_bits((bits as u32) << 16),
        Kind::F16 => f16_to_f32(bits),
        Kind::E4m3 => crate::fp8::E4m3::from_bits(bits as u8).to_f32(),
        Kind::E5m2 => crate::fp8::E5m2::from_bits(bits as u8).to_f32(),
    }
}

/// IEEE binary16 to binary32 (exact).
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1F) as u32;
    let man = (h & 0x3FF) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise.
            let shift = m.leading_zeros() - 21;
            let m = (m << shift) & 0x3FF;
            sign | (127 - 15 + 1 - shift) << 23 | m << 13
        }
        (0x1F, m) => sign | 0xFF << 23 | m << 13,
        (e, m) => sign | (e + 127 - 15) << 23 | m << 13,
    };
    f32::from_bits(bits)
}

/// The element of `bytes` (1 or 2) bytes at shared address `addr`.
fn smem_elem(c: &ThreadCtx<'_>, op: &str, addr: u32, bytes: u32) -> u16 {
    let (_, size) = c.block.shared.get();
    if (addr + bytes) as usize > size {
        c.fail(format!(
            "{op}: a descriptor addresses shared address {addr:#x}, beyond the block's {size} bytes \
             of shared memory"
        ));
    }
    let mut b = [0u8; 2];
    smem_read(c, addr, &mut b[..bytes as usize]);
    u16::from_le_bytes(b)
}

fn check_desc(c: &ThreadCtx<'_>, op: &str, which: &str, d: SmemDesc) {
    if d.base_offset() != 0 {
        c.fail(format!(
            "{op}: the {which} descriptor {:#018x} has base offset {}: not simulated (rshmem's \
             descriptors use 0; align swizzled buffers instead)",
            d.0,
            d.base_offset()
        ));
    }
}

/// # Safety
///
/// No preconditions on the simulator (checked): the accumulator is this thread's.
pub(crate) unsafe fn wgmma<const R: usize, const B_MN: bool>(
    kind: Kind,
    d: &mut [f32; R],
    a: WgmmaA,
    b: u64,
    scale_d: bool,
) {
    let op = match a {
        WgmmaA::Smem(_) => "WgmmaAcc::mma_ss",
        WgmmaA::Regs(_) => "WgmmaAcc::mma_rs",
    };
    with(op, |c| {
        let addr = d.as_ptr() as usize;
        // The D input: a result still held back for this accumulator (wgmmas chain on their
        // accumulators without a fence), else the registers, which need a fence first.
        let held = THREAD.with(|t| {
            let mut t = t.borrow_mut();
            let i = t.pending.iter().position(|p| p.0 == addr);
            i.map(|i| t.pending.remove(i).2)
        });
        let input: Vec<f32> = match held {
            Some(v) => v,
            None => {
                if THREAD.with(|t| t.borrow().needs_fence) {
                    c.fail(format!(
                        "{op}: no wgmma::fence() since this thread last accessed its registers \
                         (or since the kernel began): the GPU may read stale accumulators"
                    ));
                }
                d.to_vec()
            }
        };
        let (g, me) = warpgroup(c, op);
        let mine = Slot {
            kind: kind as u8,
            regs: R,
            a_smem: matches!(a, WgmmaA::Smem(_)),
            a_desc: match a {
                WgmmaA::Smem(x) => x,
                _ => 0,
            },
            a_regs: match a {
                WgmmaA::Regs(r) => r,
                _ => [0; 4],
            },
            b_desc: b,
            b_mn: B_MN,
            scale_d,
        };
        let slots = &c.block.hopper.slots[(c.rank - me) as usize..][..128];
        *slots[me as usize].lock().unwrap_or_else(|e| e.into_inner()) = mine;
        c.sync(g, op);
        let all: Vec<Slot> = slots
            .iter()
            .map(|s| *s.lock().unwrap_or_else(|e| e.into_inner()))
            .collect();
        c.sync(g, op);
        if let Some(t) = all
            .iter()
            .position(|s| s.shared_part() != mine.shared_part())
        {
            c.fail(format!(
                "{op}: thread {t} of this warpgroup calls with different operands (descriptors, \
                 shape, type or scale-d): all 128 threads must issue the same wgmma"
            ));
        }
        let (ad, bd) = (SmemDesc(mine.a_desc), SmemDesc(b));
        if mine.a_smem {
            check_desc(c, op, "A", ad);
        }
        check_desc(c, op, "B", bd);
        let (size, kk) = (kind.bytes(), kind.k());
        let a_at = |row: u32, k: u32| -> f32 {
            if mine.a_smem {
                to_f32(kind, smem_elem(c, op, ad.byte_address(row, size * k), size))
            } else {
                // The thread and register holding (row, k): WgmmaA::coords inverted.
                let (w, r) = (row / 16, row % 16);
                let lane = 4 * (r % 8) + (k % 8) / 2;
                let reg = r / 8 + 2 * (k / 8);
                let word = all[(32 * w + lane) as usize].a_regs[reg as usize];
                debug_assert_eq!(RegsA::coords(32 * w + lane, reg, k % 2), (row, k));
                to_f32(kind, (word >> (16 * (k % 2))) as u16)
            }
        };
        let mut out = std::vec![0f32; R];
        for (i, o) in out.iter_mut().enumerate() {
            let (row, col) = wgmma_acc_coords(me, i as u32);
            let mut acc = if scale_d { input[i] } else { 0.0 };
            // K order, each exact product (16- and 8-bit products are exact in f32) added in f32.
            for k in 0..kk {
                let b_at = if B_MN {
                    bd.element_address_mn(col, k)
                } else {
                    bd.byte_address(col, size * k)
                };
                acc += a_at(row, k) * to_f32(kind, smem_elem(c, op, b_at, size));
            }
            *o = acc;
        }
        d.fill(f32::NAN);
        THREAD.with(|t| {
            let mut t = t.borrow_mut();
            let group = t.committed;
            t.pending.push((addr, group, out));
        });
    })
}

pub(crate) fn wgmma_fence() {
    with("wgmma::fence", |_| {
        THREAD.with(|t| t.borrow_mut().needs_fence = false)
    })
}

pub(crate) fn wgmma_commit_group() {
    with("wgmma::commit_group", |_| {
        THREAD.with(|t| t.borrow_mut().committed += 1)
    })
}

pub(crate) fn wgmma_wait_group<const N: u32>() {
    with("wgmma::wait_group", |_| {
        THREAD.with(|t| {
            let mut t = t.borrow_mut();
            t.completed = t.completed.max(t.committed.saturating_sub(N as u64));
        })
    })
}

/// Writes back the held result of the accumulator at `d` if its group has completed; fails
/// if it has not.
pub(crate) fn wgmma_settle<const R: usize>(d: &mut [f32; R], each: &mut dyn FnMut(u32, f32)) {
    let op = "WgmmaAcc::regs/for_each";
    with(op, |c| {
        let addr = d.as_ptr() as usize;
        let r = THREAD.with(|t| {
            let mut t = t.borrow_mut();
            t.needs_fence = true;
            match t.pending.iter().position(|p| p.0 == addr) {
                None => Ok(()),
                Some(i) if t.pending[i].1 < t.completed => {
                    let v = t.pending.remove(i).2;
                    d.copy_from_slice(&v);
                    Ok(())
                }
                Some(i) => Err((t.pending[i].1, t.committed, t.completed)),
            }
        });
        if let Err((group, committed, completed)) = r {
            let how = if group == committed {
                "its wgmma was never committed (wgmma::commit_group)".into()
            } else {
                format!("its commit group {group} is still pending (groups below {completed} have completed): wgmma::wait_group first")
            };
            c.fail(format!(
                "{op}: accumulators read while a wgmma into them is in flight: {how}"
            ))
        }
    });
    for (i, v) in d.iter().enumerate() {
        each(i as u32, *v);
    }
}

#[cfg(test)]
mod tests {
    use super::f16_to_f32;

    #[test]
    fn f16_converts_exactly() {
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
        assert_eq!(f16_to_f32(0x7BFF), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03FF), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8000).to_bits(), (-0.0f32).to_bits());
        assert_eq!(f16_to_f32(0x7C00), f32::INFINITY);
        assert!(f16_to_f32(0x7E00).is_nan());
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
    }
}
