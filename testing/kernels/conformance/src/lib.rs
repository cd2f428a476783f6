//! Conformance kernels: the OpenSHMEM semantics that Sandia OpenSHMEM's test suite
//! (tests-sos) checks with exact values, written afresh as rshmem kernels, one module per API
//! family. `testing/device-tests/tests/conformance.rs` launches them on every backend and checks the
//! results; the table they implement is `docs/conformance.md` (its row numbers appear in the docs
//! below). A crate of their own, built into its own image by `testing/device-tests/build.rs`: NVSHMEM's
//! inlined collectives make their PTX large and ptxas slow, which only the conformance suite
//! should pay for.
//!
//! Conventions shared by every family:
//!
//! * **Scope.** APIs with thread, warp and block variants take a `scope: u32` kernel argument
//!   ([`THREAD`], [`WARP`], [`BLOCK`]) that `with_scope!` turns into the type parameter.
//! * **Element type.** Typed families take a `ty: u32` argument (an [`Elem::CODE`], see
//!   [`ty`]) and untyped buffer pointers, and `with_type!` picks the instantiation: one
//!   kernel per family rather than one per type keeps the PTX small, which matters because
//!   NVSHMEM's device functions are inlined at every instantiation (see [`coll`]).
//! * **Groups.** At a given scope, the grid is made of [`Group`]s (one thread, one warp, one
//!   block); every member of a group makes the same call, and the data is split between the
//!   groups with [`share`], so several groups call concurrently with different arguments.
//!   Blocks must be a whole number of warps.
//! * **PE-wide calls** (barriers, collectives) have one caller per PE: thread 0, warp 0 or the
//!   whole block ([`pe_caller`]); kernels using them run with one block.
//! * Kernels that wait for other PEs, or call barriers or collectives, must be launched
//!   cooperatively (every block resident), as NVSHMEM requires.
//! * Data comes from the host (fresh random values each run); results go to buffers the host
//!   poisoned before the launch, so a value that was never written cannot pass.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
// Kernels take every buffer and parameter as an argument of their own, as PTX entries do.
#![allow(clippy::too_many_arguments)]

use rshmem_device::prelude::*;

pub mod amo;
pub mod coll;
pub mod order;
pub mod rma;
pub mod signal;
pub mod team;
pub mod wait;

/// `scope` value for [`Thread`].
pub const THREAD: u32 = 0;
/// `scope` value for [`Warp`].
pub const WARP: u32 = 1;
/// `scope` value for [`Block`].
pub const BLOCK: u32 = 2;

/// Threads per warp.
const WARP_SIZE: u32 = 32;

/// Element type codes: the `ty` argument of typed kernels.
pub mod ty {
    /// `i8`
    pub const I8: u32 = 0;
    /// `u8`
    pub const U8: u32 = 1;
    /// `i16`
    pub const I16: u32 = 2;
    /// `u16`
    pub const U16: u32 = 3;
    /// `i32`
    pub const I32: u32 = 4;
    /// `u32`
    pub const U32: u32 = 5;
    /// `i64`
    pub const I64: u32 = 6;
    /// `u64`
    pub const U64: u32 = 7;
    /// `f32`
    pub const F32: u32 = 8;
    /// `f64`
    pub const F64: u32 = 9;
}

/// An element type of the typed kernels.
pub trait Elem: Copy + 'static {
    /// Its code in [`ty`].
    const CODE: u32;
    /// The value whose bits (the low ones, for types narrower than 64) are `bits`: how scalar
    /// arguments of any element type travel as one `u64` kernel argument.
    fn from_bits(bits: u64) -> Self;
}

macro_rules! elems {
    ($($t:ty => $code:ident, |$b:ident| $from:expr;)*) => {$(
        impl Elem for $t {
            const CODE: u32 = ty::$code;
            #[inline(always)]
            fn from_bits($b: u64) -> Self {
                $from
            }
        }
    )*};
}

elems! {
    i8 => I8, |b| b as i8;
    u8 => U8, |b| b as u8;
    i16 => I16, |b| b as i16;
    u16 => U16, |b| b as u16;
    i32 => I32, |b| b as i32;
    u32 => U32, |b| b as u32;
    i64 => I64, |b| b as i64;
    u64 => U64, |b| b;
    f32 => F32, |b| f32::from_bits(b as u32);
    f64 => F64, |b| f64::from_bits(b);
}

/// `with_type!(ty, T in [i32, u64, ...] => body)`: evaluates `body` with the type `T` bound to
/// the listed type whose [`Elem::CODE`] is the run-time `ty`; any other code panics (a trap
/// on the GPU, a failed launch on the simulator).
macro_rules! with_type {
    ($ty:expr, $t:ident in [$($each:ty),* $(,)?] => $body:expr) => {{
        let code: u32 = $ty;
        $(
            if code == <$each as $crate::Elem>::CODE {
                type $t = $each;
                $body
            } else
        )* {
            panic!("conformance kernel: element type code not accepted by this kernel")
        }
    }};
}
pub(crate) use with_type;

/// `with_type!` over all ten element types (RMA and collectives).
macro_rules! with_any_type {
    ($ty:expr, $t:ident => $body:expr) => {
        $crate::with_type!($ty, $t in [i8, u8, i16, u16, i32, u32, i64, u64, f32, f64] => $body)
    };
}
pub(crate) use with_any_type;

/// `with_type!` over the four integer types of atomics and waits.
macro_rules! with_int_type {
    ($ty:expr, $t:ident => $body:expr) => {
        $crate::with_type!($ty, $t in [i32, u32, i64, u64] => $body)
    };
}
pub(crate) use with_int_type;

/// `with_scope!(scope, S => body)`: evaluates `body` with the type `S` bound to [`Thread`],
/// [`Warp`] or [`Block`] according to the run-time `scope` ([`THREAD`], [`WARP`], anything
/// else is [`BLOCK`]). One kernel thus covers all three variants of an API.
macro_rules! with_scope {
    ($scope:expr, $s:ident => $body:expr) => {
        match $scope {
            $crate::THREAD => {
                type $s = ::rshmem_device::shmem::Thread;
                $body
            }
            $crate::WARP => {
                type $s = ::rshmem_device::shmem::Warp;
                $body
            }
            _ => {
                type $s = ::rshmem_device::shmem::Block;
                $body
            }
        }
    };
}
pub(crate) use with_scope;

/// `for_each_scope!(k, S => body)`: runs `body` three times in a row, with `S` = [`Thread`],
/// [`Warp`], [`Block`] and `k` = 0, 1, 2; the block meets (`sync_threads`) between runs.
/// For collectives, whose callers are one group per PE ([`pe_caller`]): one launch covers the
/// three variants.
macro_rules! for_each_scope {
    ($k:ident, $s:ident => $body:expr) => {{
        for $k in [
            $crate::THREAD,
            $crate::WARP,
            $crate::BLOCK,
        ] {
            ::rshmem_device::thread::sync_threads();
            $crate::with_scope!($k, $s => $body);
        }
        ::rshmem_device::thread::sync_threads();
    }};
}
pub(crate) use for_each_scope;

/// The calling thread's group at some scope.
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// Its index among the grid's groups.
    pub index: u32,
    /// How many groups the grid has.
    pub count: u32,
    /// Whether this thread is the group's first (lane 0, thread 0).
    pub leader: bool,
}

/// The calling thread's group at `scope`, over the whole 1-D grid.
#[inline(always)]
pub fn group(scope: u32) -> Group {
    let (t, total) = (thread::index_1d(), thread::grid_size_1d());
    match scope {
        THREAD => Group {
            index: t,
            count: total,
            leader: true,
        },
        WARP => Group {
            index: t / WARP_SIZE,
            count: total / WARP_SIZE,
            leader: t % WARP_SIZE == 0,
        },
        _ => Group {
            index: thread::block_idx_x(),
            count: thread::grid_dim_x(),
            leader: thread::thread_idx_x() == 0,
        },
    }
}

/// Group `index`'s part of `n` items split between `count` groups: `(start, len)`. The first
/// `n % count` groups take one item more, so uneven splits are exercised.
#[inline(always)]
pub fn share(n: usize, index: u32, count: u32) -> (usize, usize) {
    let (index, count) = (index as usize, count as usize);
    let (base, extra) = (n / count, n % count);
    let start = index * base + index.min(extra);
    (start, base + usize::from(index < extra))
}

/// Whether the calling thread takes part in a PE-wide call (barrier, collective) at `scope`:
/// thread 0, the threads of warp 0, or every thread of the (single) block.
#[inline(always)]
pub fn pe_caller(scope: u32) -> bool {
    let t = thread::thread_idx_x();
    match scope {
        THREAD => t == 0,
        WARP => t < WARP_SIZE,
        _ => true,
    }
}

/// `barrier_all` at `scope`, with the rest of the (single) block waiting around it, so that
/// every thread continues after the PEs have met. Out of line: each NVSHMEM barrier variant
/// is some 40 KB of PTX, worth having once rather than in every kernel.
#[inline(never)]
pub fn barrier_all_at(scope: u32) {
    thread::sync_threads();
    if pe_caller(scope) {
        with_scope!(scope, S => shmem::barrier_all::<S>());
    }
    thread::sync_threads();
}

/// The right neighbour on the ring of PEs.
#[inline(always)]
pub fn right() -> i32 {
    (shmem::my_pe() + 1) % shmem::n_pes()
}

/// The left neighbour on the ring of PEs.
#[inline(always)]
pub fn left() -> i32 {
    (shmem::my_pe() + shmem::n_pes() - 1) % shmem::n_pes()
}
