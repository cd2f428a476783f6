//! The device side of the fault mailbox (`contract::fault`): the per-image global the host
//! fills at load, and [`report`], which the first faulting thread of the PE uses to leave its
//! facts in the PE's record before it traps. Also, under `--cfg rshmem_checked`, the checks
//! of the checked device mode ([`checked`]).

use crate::contract::fault::{
    FaultConfig, FaultKind, FaultRecord, ARGS_BYTES, CALL_BYTES, CLAIMED, COMPLETE, TEXT_BYTES,
};

/// Where this image's faults go, written by the host with `cuModuleGetGlobal` + a copy when
/// it loads the image (rshmem-builder keeps the symbol through internalisation). Zero as
/// built: then a fault traps without a record, as before the mailbox existed.
#[no_mangle]
#[used]
pub static mut rshmem_fault_config: FaultConfig = FaultConfig::NONE;

/// The address of the PE's fault record (0: none).
#[inline(always)]
fn record() -> u64 {
    // SAFETY: read-only on the device; the host writes it before launching kernels of this
    // image, and the read is volatile so LLVM cannot fold the zero initialiser.
    unsafe { (&raw const rshmem_fault_config.record).read_volatile() }
}

/// The bound on checked waits in nanoseconds (0: none).
#[cfg(rshmem_checked)]
#[inline(always)]
fn wait_bound_ns() -> u64 {
    // SAFETY: as in `record`.
    unsafe { (&raw const rshmem_fault_config.wait_bound_ns).read_volatile() }
}

/// What a fault report says beyond its kind.
pub(crate) struct Facts<'a> {
    pub call: &'a str,
    pub text: &'a str,
    pub args: &'a [u8],
    pub line: u32,
    pub value: u64,
    pub extra: u64,
}

impl Facts<'static> {
    pub(crate) const NONE: Facts<'static> = Facts {
        call: "",
        text: "",
        args: &[],
        line: 0,
        value: 0,
        extra: 0,
    };
}

/// Copies `src` into `dst` (truncated) with volatile stores; returns the bytes copied.
///
/// # Safety
///
/// `dst` valid for `cap` byte writes.
#[inline(never)]
unsafe fn copy_bytes(dst: *mut u8, cap: usize, src: &[u8]) -> u32 {
    let n = src.len().min(cap);
    for (i, &b) in src[..n].iter().enumerate() {
        // SAFETY: `i < n <= cap` (the caller's contract).
        unsafe { dst.add(i).write_volatile(b) };
    }
    n as u32
}

/// Leaves the fault's facts in the PE's record (if the host set one up and nobody faulted
/// first), makes them visible to the host, and traps.
#[inline(never)]
#[cold]
pub(crate) fn report(kind: FaultKind, facts: &Facts<'_>) -> ! {
    let record = record() as *mut FaultRecord;
    if !record.is_null() {
        // SAFETY: the host points `record` at a live, host-mapped `FaultRecord` for as long
        // as this image is loaded; `fill` writes it only after claiming it.
        unsafe { fill(record, kind, facts) };
    }
    super::trap()
}

/// # Safety
///
/// `record` points at a live `FaultRecord`.
#[inline(never)]
unsafe fn fill(record: *mut FaultRecord, kind: FaultKind, facts: &Facts<'_>) {
    // The first faulting thread of this image claims the record; later ones only trap. (Two
    // images faulting at the same instant could both write it: the fault is reported either
    // way, and a trap ends the context at once.)
    let claim = (&raw mut rshmem_fault_config.claimed) as u64;
    let old: u32;
    // SAFETY: a GPU-scope CAS on the image's claim word, a global in device memory.
    unsafe {
        core::arch::asm!(
            "atom.relaxed.gpu.cas.b32 {o}, [{p}], {c}, {n};",
            o = out(reg32) old, p = in(reg64) claim, c = in(reg32) 0u32, n = in(reg32) 1u32,
            options(nostack)
        )
    };
    if old != 0 {
        return;
    }
    let (b, t) = (super::block_idx(), super::thread_idx());
    let r = record;
    // SAFETY: this thread claimed the record; every field write stays inside it.
    unsafe {
        // Plain volatile stores: the host reads the record only after the kernel trapped.
        (&raw mut (*r).state).write_volatile(CLAIMED);
        (&raw mut (*r).kind).write_volatile(kind as u32);
        (&raw mut (*r).line).write_volatile(facts.line);
        (&raw mut (*r).block).write_volatile([b.x, b.y, b.z]);
        (&raw mut (*r).thread).write_volatile([t.x, t.y, t.z]);
        (&raw mut (*r).value).write_volatile(facts.value);
        (&raw mut (*r).extra).write_volatile(facts.extra);
        let call = copy_bytes(
            (&raw mut (*r).call).cast(),
            CALL_BYTES,
            facts.call.as_bytes(),
        );
        (&raw mut (*r).call_len).write_volatile(call);
        let text = copy_bytes(
            (&raw mut (*r).text).cast(),
            TEXT_BYTES,
            facts.text.as_bytes(),
        );
        (&raw mut (*r).text_len).write_volatile(text);
        let args = copy_bytes((&raw mut (*r).args).cast(), ARGS_BYTES, facts.args);
        (&raw mut (*r).args_len).write_volatile(args);
        // __threadfence_system(): the facts reach host memory before the state says so.
        core::arch::asm!("fence.sc.sys;", options(nostack));
        (&raw mut (*r).state).write_volatile(COMPLETE);
        core::arch::asm!("fence.sc.sys;", options(nostack));
    }
}

/// A failed `device_assert!`: its format (condition, place, message) and packed arguments.
#[inline(always)]
pub(crate) fn assert_failed(text: &'static str, args: &[u8]) -> ! {
    report(
        FaultKind::Assert,
        &Facts {
            text,
            args,
            ..Facts::NONE
        },
    )
}

/// A Rust panic at `file:line` (the default `#[panic_handler]`): its message would need
/// `core::fmt` on the device, its place does not.
#[inline(always)]
pub(crate) fn panicked(file: &str, line: u32) -> ! {
    report(
        FaultKind::Panic,
        &Facts {
            text: file,
            line,
            ..Facts::NONE
        },
    )
}

/// The checked device mode (`--cfg rshmem_checked`): bounded waits, PE numbers and symmetric
/// addresses checked at every SHMEM call. Without the cfg every function here is empty and
/// inlined away, so unchecked code is unchanged.
pub(crate) mod checked {
    #[cfg(rshmem_checked)]
    use super::{report, Facts, FaultKind};

    /// Fails the call `op` if `pe` is not in `0..n_pes()`.
    #[inline(always)]
    pub(crate) fn pe(op: &'static str, pe: i32) {
        #[cfg(rshmem_checked)]
        {
            let n = super::super::n_pes();
            if pe < 0 || pe >= n {
                bad_pe(op, pe, n)
            }
        }
        #[cfg(not(rshmem_checked))]
        let _ = (op, pe);
    }

    #[cfg(rshmem_checked)]
    #[cold]
    #[inline(never)]
    fn bad_pe(op: &'static str, pe: i32, n: i32) -> ! {
        report(
            FaultKind::BadPe,
            &Facts {
                call: op,
                value: pe as i64 as u64,
                extra: n as u64,
                ..Facts::NONE
            },
        )
    }

    /// Fails the call `op` unless `bytes` bytes at `addr` lie in this PE's symmetric heap, as
    /// NVSHMEM's own device state bounds it (`nvshmem_ptr` to this PE is null outside it).
    #[inline(always)]
    pub(crate) fn symmetric(op: &'static str, addr: *const u8, bytes: usize) {
        #[cfg(rshmem_checked)]
        {
            let me = super::super::my_pe();
            // SAFETY: `nvshmem_ptr` only compares the address with the heap's bounds.
            let inside = |a: *const u8| !unsafe { super::super::heap_ptr(a, me) }.is_null();
            let last = addr.wrapping_add(bytes.saturating_sub(1));
            if !inside(addr) || (bytes > 1 && !inside(last)) {
                bad_address(op, addr, bytes)
            }
        }
        #[cfg(not(rshmem_checked))]
        let _ = (op, addr, bytes);
    }

    #[cfg(rshmem_checked)]
    #[cold]
    #[inline(never)]
    fn bad_address(op: &'static str, addr: *const u8, bytes: usize) -> ! {
        report(
            FaultKind::BadAddress,
            &Facts {
                call: op,
                value: addr as u64,
                extra: bytes as u64,
                ..Facts::NONE
            },
        )
    }

    /// Whether checked waits are compiled in (the waits that NVSHMEM would spin in are then
    /// polled by rshmem, so that they can be bounded).
    pub(crate) const WAITS: bool = cfg!(rshmem_checked);

    /// Fails the wait `what` once it has lasted longer than the host's bound.
    #[inline(always)]
    pub(crate) fn wait(what: &'static str, start_ns: u64) {
        #[cfg(rshmem_checked)]
        {
            let bound = super::wait_bound_ns();
            let waited = super::super::globaltimer_ns().wrapping_sub(start_ns);
            if bound != 0 && waited > bound {
                wait_expired(what, waited, bound)
            }
        }
        #[cfg(not(rshmem_checked))]
        let _ = (what, start_ns);
    }

    #[cfg(rshmem_checked)]
    #[cold]
    #[inline(never)]
    fn wait_expired(what: &'static str, waited: u64, bound: u64) -> ! {
        report(
            FaultKind::Wait,
            &Facts {
                call: what,
                value: waited,
                extra: bound,
                ..Facts::NONE
            },
        )
    }
}
