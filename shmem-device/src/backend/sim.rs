//! The simulator behind the backend interface: every function and typed family forwards to
//! `crate::sim`, which checks what a GPU would fault on and names the calling thread when
//! it fails. The simulator's modules import only [`crate::contract`], never the public
//! modules, so this file is the one place where the two meet.
//!
//! The typed families are implemented for every type the simulator's arithmetic allows
//! (blanket impls); the public traits' own lists say which of those kernels may use.

use super::{Amo, Coll, Rma, ScopedAtomic, Wait};
use crate::contract::{BitOp, MemScopeKind, Ordering, PrintfValue, ReduceOp, RmwOp, ScopeKind};
use crate::sim::atomic::SimAtomic;
use crate::sim::coll::Reducible;
use crate::sim::{amo, atomic, coll, rma, team, wait};

pub(crate) use crate::sim::device::*;
// Families with a namespace of their own: bf16/f16/tf32 conversions, warp-level tensor cores
// (`mma`, `ldmatrix`, `cp.async`), and the Hopper primitives; the GPU side has modules of
// the same names.
pub(crate) use crate::sim::wait::check_spin;
pub(crate) use crate::sim::{cvt, hopper, math, mma};

/// # Safety
///
/// As `shmem::ptr`.
#[inline(always)]
pub(crate) unsafe fn ptr(dest: *const u8, pe: i32) -> *mut u8 {
    rma::ptr(dest, pe)
}

/// # Safety
///
/// As `shmem::signal_op`; `op` is a raw `NVSHMEM_SIGNAL_*` value.
#[inline(always)]
pub(crate) unsafe fn signal_op(sig: *mut u64, value: u64, op: i32, pe: i32) {
    // SAFETY: forwarded from this function's contract.
    unsafe { amo::signal_op(sig, value, op, pe) }
}

/// # Safety
///
/// As `shmem::signal_fetch`.
#[inline(always)]
pub(crate) unsafe fn signal_fetch(sig: *const u64) -> u64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { amo::fetch(sig, my_pe()) }
}

/// # Safety
///
/// As `shmem::signal_wait_until`; `cmp` is a raw `NVSHMEM_CMP_*` value.
#[inline(always)]
pub(crate) unsafe fn signal_wait_until(sig: *const u64, cmp: i32, value: u64) -> u64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { wait::signal_wait_until(sig, cmp, value) }
}

/// # Safety
///
/// As `shmem::putmem_signal`; the simulator completes every put before it returns, so
/// `nbi` changes nothing.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn putmem_signal(
    scope: ScopeKind,
    _nbi: bool,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    sig: *mut u64,
    value: u64,
    op: i32,
    pe: i32,
) {
    // SAFETY: forwarded from this function's contract.
    unsafe { amo::putmem_signal(scope, dest, source, bytes, sig, value, op, pe) }
}

#[inline(always)]
pub(crate) fn team_my_pe(team: i32) -> i32 {
    team::my_pe(team)
}

#[inline(always)]
pub(crate) fn team_n_pes(team: i32) -> i32 {
    team::n_pes(team)
}

#[inline(always)]
pub(crate) fn team_translate_pe(src: i32, pe: i32, dst: i32) -> i32 {
    team::translate_pe(src, pe, dst)
}

/// `Team::barrier` (`quiet`) or `Team::sync`.
///
/// # Safety
///
/// As `Team::barrier`.
#[inline(always)]
pub(crate) unsafe fn team_barrier(scope: ScopeKind, team: i32, quiet: bool) -> i32 {
    team::barrier(scope, team, quiet)
}

/// `printf!`'s arguments as the simulator's formatter reads them: at most 16.
#[derive(Clone, Copy)]
pub(crate) struct PrintfValues {
    values: [Option<PrintfValue>; 16],
    count: usize,
}

impl PrintfValues {
    #[inline(always)]
    pub(crate) const fn new() -> Self {
        Self {
            values: [None; 16],
            count: 0,
        }
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, value: PrintfValue) {
        if let Some(slot) = self.values.get_mut(self.count) {
            *slot = Some(value);
            self.count += 1;
        }
    }
}

/// Interprets `format` on the host (the packed bytes are the GPU's; the simulator reads the
/// values).
#[inline(always)]
/// A failed `device_assert!`, which printed its text just before: the simulator's trap
/// reports the last printed line as the reason.
pub(crate) fn assert_failed(_text: &'static str, _args: &[u8]) -> ! {
    trap()
}

pub(crate) fn printf(format: &'static str, _args: &[u8], values: &PrintfValues) {
    crate::sim::printf(
        format.trim_end_matches('\0'),
        &values.values[..values.count],
    );
}

impl<T: Copy + 'static> Rma for T {
    #[inline(always)]
    unsafe fn p(dest: *mut Self, value: Self, pe: i32) {
        // SAFETY: forwarded from the trait's contract.
        unsafe { rma::p(dest, value, pe) }
    }
    #[inline(always)]
    unsafe fn g(source: *const Self, pe: i32) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { rma::g(source, pe) }
    }
    #[inline(always)]
    unsafe fn istrided(
        scope: ScopeKind,
        put: bool,
        dest: *mut Self,
        source: *const Self,
        dst: isize,
        sst: isize,
        n: usize,
        pe: i32,
    ) {
        // SAFETY: forwarded from the trait's contract.
        unsafe { rma::istrided(scope, put, dest, source, dst, sst, n, pe) }
    }
}

impl<T: SimAtomic + 'static> Amo for T {
    #[inline(always)]
    unsafe fn fetch(source: *const Self, pe: i32) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::fetch(source, pe) }
    }
    #[inline(always)]
    unsafe fn set(dest: *mut Self, value: Self, pe: i32) {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::swap(dest, value, pe) };
    }
    #[inline(always)]
    unsafe fn swap(dest: *mut Self, value: Self, pe: i32) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::swap(dest, value, pe) }
    }
    #[inline(always)]
    unsafe fn compare_swap(dest: *mut Self, cond: Self, value: Self, pe: i32) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::compare_swap(dest, cond, value, pe) }
    }
    #[inline(always)]
    unsafe fn fetch_add(dest: *mut Self, value: Self, pe: i32) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::fetch_add(dest, value, pe) }
    }
    #[inline(always)]
    unsafe fn add(dest: *mut Self, value: Self, pe: i32) {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::fetch_add(dest, value, pe) };
    }
    #[inline(always)]
    unsafe fn fetch_inc(dest: *mut Self, pe: i32) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::fetch_add(dest, T::ONE, pe) }
    }
    #[inline(always)]
    unsafe fn inc(dest: *mut Self, pe: i32) {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::fetch_add(dest, T::ONE, pe) };
    }
    #[inline(always)]
    unsafe fn fetch_bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::fetch_bitwise(op, dest, value, pe) }
    }
    #[inline(always)]
    unsafe fn bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32) {
        // SAFETY: forwarded from the trait's contract.
        unsafe { amo::fetch_bitwise(op, dest, value, pe) };
    }
}

impl<T: Copy + PartialOrd + 'static> Wait for T {
    #[inline(always)]
    unsafe fn wait_until(ivar: *const Self, cmp: i32, value: Self) {
        // SAFETY: forwarded from the trait's contract.
        unsafe { wait::wait_until(ivar, cmp, value) }
    }
    #[inline(always)]
    unsafe fn test(ivar: *const Self, cmp: i32, value: Self) -> i32 {
        // SAFETY: forwarded from the trait's contract.
        unsafe { wait::test(ivar, cmp, value) }
    }
    #[inline(always)]
    unsafe fn wait_until_all(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) {
        // SAFETY: forwarded from the trait's contract.
        unsafe { wait::wait_all(ivars, n, status, cmp, |_| value) }
    }
    #[inline(always)]
    unsafe fn wait_until_any(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize {
        // SAFETY: forwarded from the trait's contract.
        unsafe { wait::wait_any(ivars, n, status, cmp, |_| value) }
    }
    #[inline(always)]
    unsafe fn wait_until_some(
        ivars: *const Self,
        n: usize,
        indices: *mut usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize {
        // SAFETY: forwarded from the trait's contract.
        unsafe { wait::wait_some(ivars, n, indices, status, cmp, |_| value) }
    }
    #[inline(always)]
    unsafe fn wait_until_all_vector(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        values: *const Self,
    ) {
        // SAFETY: forwarded from the trait's contract (`values` holds `n` elements).
        unsafe { wait::wait_all(ivars, n, status, cmp, |i| *values.add(i)) }
    }
    #[inline(always)]
    unsafe fn wait_until_any_vector(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        values: *const Self,
    ) -> usize {
        // SAFETY: forwarded from the trait's contract (`values` holds `n` elements).
        unsafe { wait::wait_any(ivars, n, status, cmp, |i| *values.add(i)) }
    }
    #[inline(always)]
    unsafe fn wait_until_some_vector(
        ivars: *const Self,
        n: usize,
        indices: *mut usize,
        status: *const i32,
        cmp: i32,
        values: *const Self,
    ) -> usize {
        // SAFETY: forwarded from the trait's contract (`values` holds `n` elements).
        unsafe { wait::wait_some(ivars, n, indices, status, cmp, |i| *values.add(i)) }
    }
    #[inline(always)]
    unsafe fn test_all(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> i32 {
        // SAFETY: forwarded from the trait's contract.
        unsafe { wait::test_all(ivars, n, status, cmp, value) }
    }
    #[inline(always)]
    unsafe fn test_any(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize {
        // SAFETY: forwarded from the trait's contract.
        unsafe { wait::test_any(ivars, n, status, cmp, value) }
    }
    #[inline(always)]
    unsafe fn test_some(
        ivars: *const Self,
        n: usize,
        indices: *mut usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize {
        // SAFETY: forwarded from the trait's contract.
        unsafe { wait::test_some(ivars, n, indices, status, cmp, value) }
    }
}

impl<T: Reducible> Coll for T {
    #[inline(always)]
    unsafe fn broadcast(
        scope: ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
        root: i32,
    ) -> i32 {
        // SAFETY: forwarded from the trait's contract.
        unsafe { coll::broadcast(scope, team, dest, src, n, root) }
    }
    #[inline(always)]
    unsafe fn fcollect(
        scope: ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
    ) -> i32 {
        // SAFETY: forwarded from the trait's contract.
        unsafe { coll::fcollect(scope, team, dest, src, n) }
    }
    #[inline(always)]
    unsafe fn alltoall(
        scope: ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
    ) -> i32 {
        // SAFETY: forwarded from the trait's contract.
        unsafe { coll::alltoall(scope, team, dest, src, n) }
    }
    #[inline(always)]
    unsafe fn reduce(
        op: ReduceOp,
        scatter: bool,
        scope: ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
    ) -> i32 {
        // NVSHMEM has no bitwise reductions of floats and answers -1; so does the simulator,
        // before any check or meeting, as a GPU build never reaches NVSHMEM for them.
        if !T::supports(op) {
            return -1;
        }
        // SAFETY: forwarded from the trait's contract.
        unsafe { coll::reduce(scope, team, dest, src, n, op, scatter) }
    }
}

impl<T: SimAtomic + 'static> ScopedAtomic for T {
    // Host atomics are sequentially consistent at every scope the simulator has, so scope
    // and ordering change nothing.
    #[inline(always)]
    unsafe fn rmw(op: RmwOp, _: MemScopeKind, _: Ordering, ptr: *mut Self, value: Self) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { atomic::rmw(op, ptr, value) }
    }
    #[inline(always)]
    unsafe fn cas(_: MemScopeKind, _: Ordering, ptr: *mut Self, current: Self, new: Self) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { atomic::cas(ptr, current, new) }
    }
    #[inline(always)]
    unsafe fn load(_: MemScopeKind, _: Ordering, ptr: *const Self) -> Self {
        // SAFETY: forwarded from the trait's contract.
        unsafe { atomic::load(ptr) }
    }
    #[inline(always)]
    unsafe fn store(_: MemScopeKind, _: Ordering, ptr: *mut Self, value: Self) {
        // SAFETY: forwarded from the trait's contract.
        unsafe { atomic::store(ptr, value) }
    }
}

/// # Safety
///
/// As `atomic::load_relaxed_x4`: four sequentially consistent 32-bit loads here.
#[inline(always)]
pub(crate) unsafe fn load_relaxed_x4(_: MemScopeKind, ptr: *const [u32; 4]) -> [u32; 4] {
    let words = ptr.cast::<u32>();
    // SAFETY: the caller's contract: 16 valid bytes, aligned, accessed only atomically.
    unsafe { core::array::from_fn(|i| atomic::load(words.add(i))) }
}

/// # Safety
///
/// As `atomic::store_relaxed_x4`: four sequentially consistent 32-bit stores here.
#[inline(always)]
pub(crate) unsafe fn store_relaxed_x4(_: MemScopeKind, ptr: *mut [u32; 4], v: [u32; 4]) {
    let words = ptr.cast::<u32>();
    for (i, w) in v.into_iter().enumerate() {
        // SAFETY: as above.
        unsafe { atomic::store(words.add(i), w) }
    }
}

/// # Safety
///
/// As `vector::load`: a plain host read.
#[inline(always)]
pub(crate) unsafe fn load_x4(ptr: *const [u32; 4]) -> [u32; 4] {
    // SAFETY: the caller's contract.
    unsafe { ptr.read() }
}

/// # Safety
///
/// As `vector::store`: a plain host write.
#[inline(always)]
pub(crate) unsafe fn store_x4(ptr: *mut [u32; 4], v: [u32; 4]) {
    // SAFETY: the caller's contract.
    unsafe { ptr.write(v) }
}

/// # Safety
///
/// As `vector::store_streaming`: the plain store (the simulator has no caches to spare).
#[inline(always)]
pub(crate) unsafe fn store_x4_streaming(ptr: *mut [u32; 4], v: [u32; 4]) {
    // SAFETY: the caller's contract.
    unsafe { store_x4(ptr, v) }
}

/// `global::store`'s forms: plain host writes (the simulator has one address space).
macro_rules! store_global {
    ($($name:ident: $t:ty;)*) => {$(
        /// # Safety
        ///
        /// As `global::store`.
        #[inline(always)]
        pub(crate) unsafe fn $name(ptr: *mut $t, v: $t) {
            // SAFETY: the caller's contract.
            unsafe { ptr.write(v) }
        }
    )*};
}
store_global! {
    store_global_u16: u16;
    store_global_u32: u32;
    store_global_u64: u64;
}

/// After a failed poll (`thread::Poll`): spins, yields the host thread, then sleeps 50 µs
/// per poll (the simulator's own waits do the same); every 64 polls
/// it checks whether the job failed (ending this thread, blaming the failed PE) or the wait
/// ran past `RSHMEM_SIM_WAIT_TIMEOUT`, as the simulator's own waits do.
pub(crate) fn poll_pause(what: &'static str, polls: u32, start_ns: u64) {
    if polls % 64 == 63 {
        let waited = std::time::Duration::from_nanos(globaltimer_ns().saturating_sub(start_ns));
        check_spin(what, waited, &|| {
            "the memory it polls never took the value it waits for".into()
        });
    }
    match polls {
        0..=63 => core::hint::spin_loop(),
        64..=1023 => std::thread::yield_now(),
        _ => std::thread::sleep(std::time::Duration::from_micros(50)),
    }
}
