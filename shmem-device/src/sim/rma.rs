//! Remote memory access on the simulator: address translation with its checks, byte copies
//! and the typed `p`/`g`.

use core::mem::size_of;
use core::sync::atomic::{fence, Ordering::SeqCst};
use std::format;

use super::context::{self, ThreadCtx};
use super::mem::{self, scalar};

/// Checks that `pe` is a PE of the job and returns it as an index.
pub(super) fn target(c: &ThreadCtx<'_>, op: &str, pe: i32) -> usize {
    let n = c.world().n_pes();
    match usize::try_from(pe) {
        Ok(p) if p < n => p,
        _ => c.fail(format!(
            "{op}: PE {pe} is out of range: the job has {n} PE(s), numbered 0..{n}"
        )),
    }
}

/// The address on PE `pe` of the symmetric range `[addr, addr + len)` of this PE, after
/// checking the PE number, the alignment and that the range lies in one live symmetric
/// allocation. Any violation fails the calling thread with a message naming `op`.
pub(super) fn remote(
    c: &ThreadCtx<'_>,
    op: &str,
    addr: usize,
    len: usize,
    pe: i32,
    align: usize,
) -> *mut u8 {
    let target = target(c, op, pe);
    if addr % align != 0 {
        c.fail(format!(
            "{op}: address {addr:#x} is not aligned to {align} bytes (the size of the element)"
        ));
    }
    let world = c.world();
    let offset = world
        .heap(c.pe())
        .offset_in(&c.launch.spans, addr, len)
        .unwrap_or_else(|why| c.fail(format!("{op}: {why}")));
    // SAFETY: `offset + len` lies in a live allocation of this PE's heap; every heap has the
    // same size, so it lies inside PE `target`'s arena too.
    unsafe { world.heap(target).base().add(offset) }
}

/// Fails if `pe` is this PE and the two `len`-byte ranges overlap (the contract of
/// put/get forbids it; a GPU would copy garbage).
fn check_disjoint(c: &ThreadCtx<'_>, op: &str, a: *const u8, b: *const u8, len: usize) {
    let (a, b) = (a as usize, b as usize);
    if a < b + len && b < a + len {
        c.fail(format!(
            "{op}: the source and destination ranges overlap ({len} bytes at {a:#x} and {b:#x})"
        ));
    }
}

/// Copies `len` bytes from local `src` to symmetric `dest` on `pe`.
///
/// # Safety
///
/// `src` must be valid for reading `len` bytes; the symmetric side is checked.
pub(super) unsafe fn put_bytes(
    c: &ThreadCtx<'_>,
    op: &str,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    pe: i32,
) {
    if len == 0 {
        target(c, op, pe);
        return;
    }
    let to = remote(c, op, dest as usize, len, pe, 1);
    check_disjoint(c, op, to, src, len);
    fence(SeqCst);
    // SAFETY: `to` is checked to be `len` bytes of a heap, `src` is the caller's, and they
    // do not overlap; heap bytes are accessed only atomically by the simulator.
    unsafe { mem::atomic_copy(to, src, len) };
    fence(SeqCst);
}

/// Copies `len` bytes from symmetric `src` on `pe` to local `dest`.
///
/// # Safety
///
/// `dest` must be valid for writing `len` bytes; the symmetric side is checked.
pub(super) unsafe fn get_bytes(
    c: &ThreadCtx<'_>,
    op: &str,
    dest: *mut u8,
    src: *const u8,
    len: usize,
    pe: i32,
) {
    if len == 0 {
        target(c, op, pe);
        return;
    }
    let from = remote(c, op, src as usize, len, pe, 1);
    check_disjoint(c, op, dest, from, len);
    fence(SeqCst);
    // SAFETY: as in `put_bytes`, the other way round.
    unsafe { mem::atomic_copy(dest, from, len) };
    fence(SeqCst);
}

/// `nvshmem_TYPE_p`: one `SeqCst` store into PE `pe`'s copy of `dest`.
///
/// # Safety
///
/// `T` must be one of the `RmaScalar` types (plain integers and floats); the address and PE
/// are checked.
pub(crate) unsafe fn p<T: Copy>(dest: *mut T, value: T, pe: i32) {
    context::with("shmem::p", |c| {
        let to = remote(
            c,
            "shmem::p",
            dest as usize,
            size_of::<T>(),
            pe,
            align_of::<T>(),
        );
        // SAFETY: `to` is checked in bounds and aligned to `T`'s size; `T` is plain data.
        unsafe { scalar::store(to.cast::<T>(), value) }
    })
}

/// `nvshmem_TYPE_g`: one `SeqCst` load from PE `pe`'s copy of `source`.
///
/// # Safety
///
/// As [`p`].
pub(crate) unsafe fn g<T: Copy>(source: *const T, pe: i32) -> T {
    context::with("shmem::g", |c| {
        let from = remote(
            c,
            "shmem::g",
            source as usize,
            size_of::<T>(),
            pe,
            align_of::<T>(),
        );
        // SAFETY: as in `p`.
        unsafe { scalar::load(from.cast::<T>().cast_const()) }
    })
}

const STRIDED_ARGS: &[(&str, bool)] = &[
    ("dest", true),
    ("source", true),
    ("count", false),
    ("pe", false),
];

/// `iput`/`iget` at `scope`: element `i` moves between `dest[i * dst]` and `source[i * sst]`
/// (strides in elements), once per calling group, each remote element checked.
///
/// # Safety
///
/// The local side (`source` for a put, `dest` for a get) must be valid for every strided
/// element; the symmetric side is checked.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn istrided<T: Copy>(
    scope: crate::contract::ScopeKind,
    put: bool,
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    n: usize,
    pe: i32,
) {
    let op = if put { "shmem::iput" } else { "shmem::iget" };
    context::with(op, |c| {
        let call = super::barrier::Call {
            op,
            names: STRIDED_ARGS,
            args: [dest as usize, source as usize, n, pe as isize as usize],
        };
        if dst < 1 || sst < 1 {
            c.fail(format!(
                "{op}: strides must be positive, got dst = {dst}, sst = {sst}"
            ));
        }
        super::scope::in_scope(c, scope, call, || {
            for i in 0..n as isize {
                let (d, s) = (
                    dest.wrapping_offset(i * dst),
                    source.wrapping_offset(i * sst),
                );
                let symmetric = if put { d as usize } else { s as usize };
                let far = remote(c, op, symmetric, size_of::<T>(), pe, align_of::<T>());
                fence(SeqCst);
                // SAFETY: the remote element is checked; the local one is the caller's.
                unsafe {
                    if put {
                        scalar::store(far.cast::<T>(), core::ptr::read_volatile(s));
                    } else {
                        core::ptr::write_volatile(d, scalar::load(far.cast::<T>().cast_const()));
                    }
                }
            }
            fence(SeqCst);
        })
    })
}

/// `nvshmem_ptr`: every PE's heap is host memory of this process, so the peer's copy is
/// always directly addressable.
pub(crate) fn ptr(dest: *const u8, pe: i32) -> *mut u8 {
    context::with("shmem::ptr", |c| {
        let mapped = remote(c, "shmem::ptr", dest as usize, 1, pe, 1);
        // Without peer mappings only the PE's own memory is mapped (NVSHMEM: a PE behind a
        // network transport), after the same checks of the address and the PE.
        if c.world().peer_mappings() || pe as usize == c.pe() {
            mapped
        } else {
            core::ptr::null_mut()
        }
    })
}
