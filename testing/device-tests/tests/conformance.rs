//! The OpenSHMEM conformance table (`docs/conformance.md`, after Sandia OpenSHMEM's tests-sos) as
//! tests on every backend: each case launches kernels of `rshmem_device_tests::conformance` and
//! checks exact values.
//!
//! Every case uses fresh random data (PE 0's clock seeds every PE through a remote get; set
//! `RSHMEM_TEST_SEED` to replay a run, PE 0 prints the seed), lengths that are not multiples
//! of any vector width, and outputs poisoned before each launch. Scoped APIs run at thread,
//! warp and block scope.
//!
//! `cargo test -p rshmem-device-tests --test conformance` runs the simulator instances; the GPU
//! instances (`gpu::*`, ignored without GPUs) run through `scripts/gpu-check.sh`. The GPU
//! build carries a subset of the collective instantiations (`conformance::coll::on_gpu`);
//! there the others must report `NOT_BUILT`.

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::fmt::{Debug, Display};

use common::Outcome;
use rshmem::device::shmem::{Cmp, ReduceOp, Team};
use rshmem::{Backend, BoxError, Kernel, LaunchConfig, Module, Pod, Shmem, SymBuffer};
use rshmem_device_tests::conformance::{
    self as conf, amo, coll, order, rma, signal, team, wait, Elem, IMAGE,
};

per_backend! {
    p_g_ring => [2, 3, 4];
    put_get_every_scope => [2, 3, 4];
    iput_iget => [2, 3, 4];
    put_nbi_fence_inc => [2, 3, 4];
    put_twice_wait => [2, 3, 4];
    atomic_add => [2, 3, 4];
    compare_swap => [2, 3, 4];
    swap => [2, 3, 4];
    atomic_bitwise => [2, 3, 4];
    set_fetch_swap => [2, 3, 4];
    wait_until_any_sum => [2, 3, 4];
    wait_all_any_some => [2, 3, 4];
    test_family => [2];
    put_signal_relay => [2, 3, 4];
    signal_all_to_all => [2, 3, 4];
    fcollect_broadcast_alltoall => [2, 3, 4];
    reductions => [2, 3, 4];
    p_fence_set => [2, 3, 4];
    team_world_barriers => [2, 3, 4];
    ptr_direct_store => [2, 3, 4];
}

/// The scopes, with their names for messages.
const SCOPES: [(u32, &str); 3] = [
    (conf::THREAD, "thread"),
    (conf::WARP, "warp"),
    (conf::BLOCK, "block"),
];

/// Threads per block of most launches: two warps.
const THREADS: u32 = 64;

/// One block of `threads`, launched cooperatively (the kernel waits for other PEs).
fn coop(threads: u32) -> LaunchConfig {
    LaunchConfig::new(1, threads).cooperative()
}

/// How many groups of `scope` a grid of `blocks` blocks of `threads` threads has.
fn groups(scope: u32, blocks: u32, threads: u32) -> u64 {
    u64::from(match scope {
        conf::THREAD => blocks * threads,
        conf::WARP => blocks * threads / 32,
        _ => blocks,
    })
}

// ---------------------------------------------------------------------------------------
// Test context, random data, element types, checks.
// ---------------------------------------------------------------------------------------

/// What every case starts from: this PE, its module, and the seed all PEs agreed on.
struct Ctx<'s> {
    shmem: &'s Shmem,
    module: Module<'s>,
    seed: u64,
    me: usize,
    n: usize,
}

impl<'s> Ctx<'s> {
    /// Loads the kernels and agrees on a seed: PE 0's clock (`common::agreed_seed`), or
    /// `RSHMEM_TEST_SEED` (every PE process inherits it) to replay a run.
    fn new(shmem: &'s Shmem) -> Result<Self, BoxError> {
        let module = shmem.load(&IMAGE)?;
        let seed = match std::env::var("RSHMEM_TEST_SEED") {
            Ok(s) => {
                parse_seed(&s).ok_or_else(|| format!("RSHMEM_TEST_SEED={s:?}: not a number"))?
            }
            Err(_) => common::agreed_seed(shmem)?,
        };
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        if me == 0 {
            eprintln!("conformance seed {seed:#x} (RSHMEM_TEST_SEED={seed:#x} replays it)");
        }
        Ok(Self {
            shmem,
            module,
            seed,
            me,
            n,
        })
    }

    fn left(&self) -> usize {
        (self.me + self.n - 1) % self.n
    }

    fn right(&self) -> usize {
        (self.me + 1) % self.n
    }

    fn gpu(&self) -> bool {
        self.shmem.backend() == Backend::Gpu
    }

    /// The random stream `tag` of PE `pe`: every PE can compute every PE's data.
    fn rng(&self, tag: &str, pe: usize) -> Rng {
        Rng::new(self.seed, tag, pe)
    }

    /// `len` random non-zero values of stream `tag` of PE `pe`.
    fn vals<T: Val>(&self, tag: &str, pe: usize, len: usize) -> Vec<T> {
        let mut r = self.rng(tag, pe);
        (0..len).map(|_| T::draw(&mut r)).collect()
    }

    /// A symmetric buffer holding `data` (collective).
    fn buf<T: Pod>(&self, data: &[T]) -> Result<SymBuffer<'s, T>, BoxError> {
        Ok(self.shmem.alloc_from(data)?)
    }

    /// Launches `K` once every PE has written its inputs, and returns once every PE's launch
    /// has ended (so peers' writes into this PE are complete).
    ///
    /// # Safety
    ///
    /// `args` must satisfy `K`'s contract, on every PE.
    unsafe fn launch<K: Kernel>(&self, config: LaunchConfig, args: K::Args) -> Outcome {
        self.shmem.barrier_all()?;
        // SAFETY: forwarded from this function's contract.
        unsafe { self.module.launch::<K>(config, args)? };
        self.shmem.barrier_all()?;
        Ok(())
    }
}

fn parse_seed(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// splitmix64, seeded by the agreed seed, a stream name and a PE.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, tag: &str, pe: usize) -> Self {
        let mut h = seed ^ 0xcbf2_9ce4_8422_2325;
        for b in tag.bytes().chain((pe as u64).to_le_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng(h)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An element type of the tests: the kernel-side code and conversions, random draws, and the
/// host's model of reductions.
trait Val: Elem + Pod + PartialEq + PartialOrd + Debug + Send + Sync {
    const NAME: &'static str;
    const FLOAT: bool;
    const SIGNED: bool;
    /// Bits of the type.
    const BITS: u32;
    fn from_i64(v: i64) -> Self;
    /// The raw bits, zero-extended.
    fn bits(self) -> u64;
    /// A random value, never zero (floats: small multiples of 1/4, exact in sums).
    fn draw(r: &mut Rng) -> Self;
    /// `self op other` as NVSHMEM computes it (integers wrap).
    fn combine(self, op: ReduceOp, other: Self) -> Self;

    /// `bits` masked to the width of the type.
    fn mask() -> u64 {
        u64::MAX >> (64 - Self::BITS)
    }
}

macro_rules! int_vals {
    ($($t:ty => $u:ty),*) => {$(
        impl Val for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = false;
            const SIGNED: bool = <$t>::MIN != 0;
            const BITS: u32 = <$t>::BITS;
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn bits(self) -> u64 {
                self as $u as u64
            }
            fn draw(r: &mut Rng) -> Self {
                match r.next() as $t {
                    0 => 1,
                    v => v,
                }
            }
            fn combine(self, op: ReduceOp, other: Self) -> Self {
                match op {
                    ReduceOp::Sum => self.wrapping_add(other),
                    ReduceOp::Prod => self.wrapping_mul(other),
                    ReduceOp::Min => self.min(other),
                    ReduceOp::Max => self.max(other),
                    ReduceOp::And => self & other,
                    ReduceOp::Or => self | other,
                    ReduceOp::Xor => self ^ other,
                }
            }
        }
    )*};
}
int_vals!(i8 => u8, u8 => u8, i16 => u16, u16 => u16, i32 => u32, u32 => u32, i64 => u64, u64 => u64);

macro_rules! float_vals {
    ($($t:ty),*) => {$(
        impl Val for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = true;
            const SIGNED: bool = true;
            const BITS: u32 = 8 * std::mem::size_of::<$t>() as u32;
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            fn draw(r: &mut Rng) -> Self {
                ((r.below(1 << 21) as i64 - (1 << 20)) | 1) as $t / 4.0
            }
            fn combine(self, op: ReduceOp, other: Self) -> Self {
                match op {
                    ReduceOp::Sum => self + other,
                    ReduceOp::Prod => self * other,
                    ReduceOp::Min => self.min(other),
                    ReduceOp::Max => self.max(other),
                    bitwise => unreachable!("no {bitwise:?} reduction of floats"),
                }
            }
        }
    )*};
}
float_vals!(f32, f64);

/// `f::<T>(ctx)?` for each listed type.
macro_rules! for_types {
    ($f:ident($ctx:expr): $($t:ty),*) => {{
        $($f::<$t>($ctx)?;)*
    }};
}

/// Fails naming the first differing element, and how many differ, unless `got == want`.
fn same<T: PartialEq + Debug>(what: impl Display, got: &[T], want: &[T]) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()).into());
    }
    let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{what}: {} of {} elements differ; first [{i}]: got {:?}, want {:?}",
            bad.len(),
            got.len(),
            got[i],
            want[i]
        )
        .into()),
    }
}

/// Fails with `why()` unless `ok`.
fn ensure(ok: bool, why: impl FnOnce() -> String) -> Outcome {
    if ok {
        Ok(())
    } else {
        Err(why().into())
    }
}

/// Untyped views of a buffer, as the typed kernels take them.
fn bytes_mut<T: Pod>(b: &mut SymBuffer<'_, T>) -> *mut u8 {
    b.as_mut_ptr().cast()
}

fn bytes<T: Pod>(b: &SymBuffer<'_, T>) -> *const u8 {
    b.as_ptr().cast()
}

// ---------------------------------------------------------------------------------------
// RMA: rows 1, 2, 3 and shmem::ptr.
// ---------------------------------------------------------------------------------------

/// Rows 1 and 2: `p` to the right neighbour, a barrier at each scope, then `g` from it; every
/// RMA element type.
fn p_g_ring(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(p_g_ring_as(&ctx): i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);
    Ok(())
}

fn p_g_ring_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    const LEN: usize = 45;
    for (scope, sname) in SCOPES {
        let tag = format!("p_g_ring {} {sname}", T::NAME);
        let poison = vec![T::draw(&mut ctx.rng(&tag, usize::MAX)); LEN];
        let src = ctx.buf(&ctx.vals::<T>(&tag, ctx.me, LEN))?;
        let (mut dst, mut seen, mut got) =
            (ctx.buf(&poison)?, ctx.buf(&poison)?, ctx.buf(&poison)?);
        // SAFETY: every buffer holds LEN symmetric elements of type `ty`; one block.
        unsafe {
            ctx.launch::<rma::p_g_ring>(
                coop(THREADS),
                (
                    T::CODE,
                    scope,
                    bytes_mut(&mut dst),
                    bytes(&src),
                    bytes_mut(&mut seen),
                    bytes_mut(&mut got),
                    LEN as u32,
                ),
            )?
        };
        let what = |b: &str| format!("PE {} {} {sname}: {b}", ctx.me, T::NAME);
        let from_left = ctx.vals::<T>(&tag, ctx.left(), LEN);
        same(
            what("p seen after barrier_all"),
            &seen.to_vec()?,
            &from_left,
        )?;
        same(what("p"), &dst.to_vec()?, &from_left)?;
        same(
            what("g"),
            &got.to_vec()?,
            &ctx.vals::<T>(&tag, ctx.right(), LEN),
        )?;
    }
    Ok(())
}

/// Row 2 and the byte-wise family: putmem, putmem_nbi, getmem, getmem_nbi at each scope, by
/// every group of two blocks, an odd number of bytes split unevenly.
fn put_get_every_scope(shmem: &Shmem) -> Outcome {
    const BYTES: usize = 4099;
    const TAIL: usize = 5;
    let ctx = Ctx::new(shmem)?;
    let mut src = ctx.buf(&[0u8; BYTES])?;
    let mut dst = ctx.buf(&[0u8; BYTES + TAIL])?;
    let modes = [
        (rma::PUT, "putmem"),
        (rma::PUT_NBI, "putmem_nbi"),
        (rma::GET, "getmem"),
        (rma::GET_NBI, "getmem_nbi"),
    ];
    for (mode, mname) in modes {
        for (scope, sname) in SCOPES {
            let tag = format!("put_get {mname} {sname}");
            let data = |pe| ctx.vals::<u8>(&tag, pe, BYTES);
            let poison = vec![0xA5u8; BYTES + TAIL];
            src.copy_from_host(&data(ctx.me))?;
            dst.copy_from_host(&poison)?;
            // SAFETY: `dst` holds BYTES + TAIL symmetric bytes, `src` BYTES.
            unsafe {
                ctx.launch::<rma::put_get>(
                    LaunchConfig::new(2, THREADS),
                    (scope, mode, dst.as_mut_ptr(), src.as_ptr(), BYTES),
                )?
            };
            let from = if mode <= rma::PUT_NBI {
                ctx.left()
            } else {
                ctx.right()
            };
            let got = dst.to_vec()?;
            let what = format!("PE {} {mname} {sname} (from PE {from})", ctx.me);
            same(&what, &got[..BYTES], &data(from))?;
            same(
                format!("{what}: bytes past the end"),
                &got[BYTES..],
                &poison[BYTES..],
            )?;
        }
    }
    Ok(())
}

/// Row 3: PE 0 `iput`s to every PE with (target, source) strides (1, 2) — the table's — and
/// (3, 1), then `iget`s it back; every RMA element type, each scope.
fn iput_iget(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(iput_iget_as(&ctx): i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);
    Ok(())
}

fn iput_iget_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    const COUNT: usize = 37;
    const ROOT: usize = 0;
    for (ds, ss) in [(1usize, 2usize), (3, 1)] {
        for (scope, sname) in SCOPES {
            let tag = format!("iput {} {ds} {ss} {sname}", T::NAME);
            let poison = T::draw(&mut ctx.rng(&tag, usize::MAX));
            let src_of = |pe| ctx.vals::<T>(&tag, pe, COUNT * ss);
            let src = ctx.buf(&src_of(ctx.me))?;
            let mut dst = ctx.buf(&vec![poison; COUNT * ds + 3])?;
            let mut back = ctx.buf(&vec![poison; ctx.n * COUNT * ss])?;
            // SAFETY: sizes as `strided` requires for these strides; one block.
            unsafe {
                ctx.launch::<rma::strided>(
                    LaunchConfig::new(1, THREADS),
                    (
                        T::CODE,
                        scope,
                        ROOT as i32,
                        bytes_mut(&mut dst),
                        bytes(&src),
                        bytes_mut(&mut back),
                        COUNT,
                        ds as isize,
                        ss as isize,
                    ),
                )?
            };
            let root = src_of(ROOT);
            let mut want = vec![poison; COUNT * ds + 3];
            for i in 0..COUNT {
                want[i * ds] = root[i * ss];
            }
            let what = format!("PE {} {} strides ({ds}, {ss}) {sname}", ctx.me, T::NAME);
            same(
                format!("{what}: iput from PE {ROOT}"),
                &dst.to_vec()?,
                &want,
            )?;
            if ctx.me == ROOT {
                let mut want = vec![poison; ctx.n * COUNT * ss];
                for pe in 0..ctx.n {
                    for i in 0..COUNT {
                        want[pe * COUNT * ss + i * ss] = root[i * ss];
                    }
                }
                same(format!("{what}: iget round trip"), &back.to_vec()?, &want)?;
            }
        }
    }
    Ok(())
}

/// Direct stores and loads through `shmem::ptr`.
fn ptr_direct_store(shmem: &Shmem) -> Outcome {
    const LEN: usize = 45;
    let ctx = Ctx::new(shmem)?;
    let tag = "ptr";
    let poison = vec![i32::draw(&mut ctx.rng(tag, usize::MAX)); LEN];
    let src = ctx.buf(&ctx.vals::<i32>(tag, ctx.me, LEN))?;
    let (mut dst, mut seen, mut got) = (ctx.buf(&poison)?, ctx.buf(&poison)?, ctx.buf(&poison)?);
    let mut flags = ctx.buf(&[-1i32; 2])?;
    // SAFETY: LEN symmetric i32s in each buffer, two flags; one block.
    unsafe {
        ctx.launch::<rma::ptr_store>(
            coop(THREADS),
            (
                dst.as_mut_ptr(),
                src.as_ptr(),
                seen.as_mut_ptr(),
                got.as_mut_ptr(),
                flags.as_mut_ptr(),
                LEN as u32,
            ),
        )?
    };
    let me = ctx.me;
    same(
        format!("PE {me}: [ptr(dst, me) == dst, peers reachable]"),
        &flags.to_vec()?,
        &[1, 1],
    )?;
    let from_left = ctx.vals::<i32>(tag, ctx.left(), LEN);
    same(
        format!("PE {me}: stored through ptr, seen after barrier"),
        &seen.to_vec()?,
        &from_left,
    )?;
    same(
        format!("PE {me}: stored through ptr"),
        &dst.to_vec()?,
        &from_left,
    )?;
    same(
        format!("PE {me}: loaded through ptr"),
        &got.to_vec()?,
        &from_left,
    )
}

// ---------------------------------------------------------------------------------------
// Ordering: rows 4, 5, 17.
// ---------------------------------------------------------------------------------------

/// Row 4: `put_nbi`, `fence`, `atomic_inc(flag)` from PE 0 to every PE; the data must be
/// complete when the flag is seen.
fn put_nbi_fence_inc(shmem: &Shmem) -> Outcome {
    const LEN: usize = 1001;
    let ctx = Ctx::new(shmem)?;
    let mut data = ctx.buf(&[0i64; LEN])?;
    let mut seen = ctx.buf(&[0i64; LEN])?;
    let mut src = ctx.buf(&[0i64; LEN])?;
    let mut flag = ctx.buf(&[0u64])?;
    for (scope, sname) in SCOPES {
        let tag = format!("put_nbi {sname}");
        let poison = vec![i64::draw(&mut ctx.rng(&tag, usize::MAX)); LEN];
        src.copy_from_host(&ctx.vals::<i64>(&tag, ctx.me, LEN))?;
        data.copy_from_host(&poison)?;
        seen.copy_from_host(&poison)?;
        flag.copy_from_host(&[0])?;
        // SAFETY: LEN symmetric i64s in each buffer, one flag; one block, cooperative.
        unsafe {
            ctx.launch::<order::put_nbi_fence_inc>(
                coop(THREADS),
                (
                    scope,
                    data.as_mut_ptr(),
                    src.as_ptr(),
                    flag.as_mut_ptr(),
                    seen.as_mut_ptr(),
                    LEN,
                ),
            )?
        };
        let want = ctx.vals::<i64>(&tag, 0, LEN);
        let what = |b: &str| format!("PE {} {sname}: {b}", ctx.me);
        same(what("data when the flag was seen"), &seen.to_vec()?, &want)?;
        same(what("data"), &data.to_vec()?, &want)?;
        same(what("flag"), &flag.to_vec()?, &[groups(scope, 1, THREADS)])?;
    }
    Ok(())
}

/// Row 5: PE 0 puts zeros, `fence`s, then puts the data to the same place; receivers wait for
/// the data, and the zeros must not land afterwards.
fn put_twice_wait(shmem: &Shmem) -> Outcome {
    const LEN: usize = 1001;
    let ctx = Ctx::new(shmem)?;
    let mut data = ctx.buf(&[0i32; LEN])?;
    let mut src = ctx.buf(&[0i32; LEN])?;
    let zeros = ctx.buf(&[0i32; LEN])?;
    for (scope, sname) in SCOPES {
        let tag = format!("put_twice {sname}");
        // Every PE waits for PE 0's data, so every PE holds it in `src`.
        let want = ctx.vals::<i32>(&tag, 0, LEN);
        src.copy_from_host(&want)?;
        data.copy_from_host(&want.iter().map(|v| !v).collect::<Vec<_>>())?;
        // SAFETY: LEN symmetric i32s in each buffer; one block, cooperative.
        unsafe {
            ctx.launch::<order::put_twice_wait>(
                coop(THREADS),
                (scope, data.as_mut_ptr(), zeros.as_ptr(), src.as_ptr(), LEN),
            )?
        };
        same(
            format!("PE {} {sname}: data after the ordered second put", ctx.me),
            &data.to_vec()?,
            &want,
        )?;
    }
    Ok(())
}

/// Row 17: ten `p`s per thread, `fence`, `atomic_set(flag = 100)`; the receiver waits for the
/// flag and must see every value `salt + ((left << 16) + i)`.
fn p_fence_set(shmem: &Shmem) -> Outcome {
    const PER_THREAD: u32 = 10;
    const MARK: i32 = 100;
    let ctx = Ctx::new(shmem)?;
    let len = (THREADS * PER_THREAD) as usize;
    let tag = "p_fence_set";
    let mut r = ctx.rng(tag, 0);
    let salt = r.next() as i32;
    let poison = vec![
        match i32::draw(&mut r) {
            MARK => MARK + 1,
            v => v,
        };
        len
    ];
    let (mut data, mut seen) = (ctx.buf(&poison)?, ctx.buf(&poison)?);
    let mut flags = ctx.buf(&poison[..THREADS as usize])?;
    // SAFETY: `len` symmetric i32s in `data` and `seen`, THREADS flags; one block, cooperative.
    unsafe {
        ctx.launch::<order::p_fence_set>(
            coop(THREADS),
            (
                data.as_mut_ptr(),
                flags.as_mut_ptr(),
                seen.as_mut_ptr(),
                salt,
                MARK,
                PER_THREAD,
            ),
        )?
    };
    let left = ctx.left() as i32;
    let want: Vec<i32> = (0..len as i32)
        .map(|i| salt.wrapping_add((left << 16) + i))
        .collect();
    let me = ctx.me;
    same(
        format!("PE {me}: values when the flag was seen"),
        &seen.to_vec()?,
        &want,
    )?;
    same(format!("PE {me}: values"), &data.to_vec()?, &want)?;
    same(
        format!("PE {me}: flags"),
        &flags.to_vec()?,
        &vec![MARK; THREADS as usize],
    )
}

// ---------------------------------------------------------------------------------------
// Atomics: rows 6, 7, 8, bitwise, set/fetch/swap.
// ---------------------------------------------------------------------------------------

/// `(v - base) mod 2^BITS`.
fn offset<T: Val>(v: T, base: T) -> u64 {
    v.bits().wrapping_sub(base.bits()) & T::mask()
}

/// `base + k mod 2^BITS`.
fn plus<T: Val>(base: T, k: u64) -> T {
    T::from_bits(base.bits().wrapping_add(k) & T::mask())
}

/// Row 6: every thread of every PE adds `me + 1` to every PE (add, fetch_add), and
/// increments (fetch_inc, inc); every integer AMO type.
fn atomic_add(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(atomic_add_as(&ctx): i32, u32, i64, u64);
    Ok(())
}

fn atomic_add_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    let (me, n, nt) = (ctx.me, ctx.n, THREADS as usize);
    let tag = format!("add {}", T::NAME);
    let base = T::draw(&mut ctx.rng(&tag, 0));
    let poison = vec![T::draw(&mut ctx.rng(&tag, usize::MAX)); nt * n];
    let mut ctr = ctx.buf(&[base; 4])?;
    let (mut olds, mut incs) = (ctx.buf(&poison)?, ctx.buf(&poison)?);
    // SAFETY: 4 symmetric counters, `THREADS * n` slots each in `olds` and `incs`; one block.
    unsafe {
        ctx.launch::<amo::add>(
            LaunchConfig::new(1, THREADS),
            (
                T::CODE,
                bytes_mut(&mut ctr),
                bytes_mut(&mut olds),
                bytes_mut(&mut incs),
            ),
        )?
    };
    let added = (nt * n * (n + 1) / 2) as u64;
    let incremented = (nt * n) as u64;
    let what = format!("PE {me} {}", T::NAME);
    same(
        format!("{what}: [add, fetch_add, fetch_inc, inc] counters"),
        &ctr.to_vec()?,
        &[
            plus(base, added),
            plus(base, added),
            plus(base, incremented),
            plus(base, incremented),
        ],
    )?;
    for (name, got, last) in [
        ("fetch_add", olds.to_vec()?, added - (me as u64 + 1)),
        ("fetch_inc", incs.to_vec()?, incremented - 1),
    ] {
        for pe in 0..n {
            let seen: Vec<u64> = (0..nt).map(|t| offset(got[t * n + pe], base)).collect();
            let distinct: BTreeSet<u64> = seen.iter().copied().collect();
            ensure(
                distinct.len() == nt && seen.iter().all(|&o| o <= last),
                || {
                    format!(
                    "{what}: {name} on PE {pe} returned {:?} (as offsets from the start): each \
                     must be distinct and at most {last}",
                    seen
                )
                },
            )?;
        }
    }
    Ok(())
}

/// `count` distinct draws, none in `avoid`.
fn distinct<T: Val>(r: &mut Rng, count: usize, avoid: &[T]) -> Vec<T> {
    let mut taken: BTreeSet<u64> = avoid.iter().map(|v| v.bits()).collect();
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let v = T::draw(r);
        if taken.insert(v.bits()) {
            out.push(v);
        }
    }
    out
}

/// Row 7: every thread races `compare_swap(cond = initial, token)` on the right neighbour:
/// one wins, the rest see its token; a stale compare then fails; every integer AMO type.
fn compare_swap(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(compare_swap_as(&ctx): i32, u32, i64, u64);
    Ok(())
}

fn compare_swap_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    let nt = THREADS as usize;
    let tag = format!("cswap {}", T::NAME);
    let init = T::draw(&mut ctx.rng(&tag, usize::MAX));
    let tokens_of = |pe| distinct::<T>(&mut ctx.rng(&tag, pe), nt, &[init]);
    let all: Vec<T> = (0..ctx.n).flat_map(tokens_of).chain([init]).collect();
    let junk = distinct::<T>(&mut ctx.rng(&tag, ctx.n), 1, &all)[0];
    let poison = distinct::<T>(&mut ctx.rng(&tag, ctx.n + 1), 1, &all)[0];
    let mut target = ctx.buf(&[init])?;
    let tokens = ctx.buf(&tokens_of(ctx.me))?;
    let mut olds = ctx.buf(&vec![poison; 2 * nt])?;
    let mut fin = ctx.buf(&[poison; 2])?;
    // SAFETY: one symmetric target, THREADS tokens, 2 * THREADS olds, 2 fin; one block.
    unsafe {
        ctx.launch::<amo::cswap>(
            coop(THREADS),
            (
                T::CODE,
                bytes_mut(&mut target),
                init.bits(),
                bytes(&tokens),
                junk.bits(),
                bytes_mut(&mut olds),
                bytes_mut(&mut fin),
            ),
        )?
    };
    let (olds, mine) = (olds.to_vec()?, tokens_of(ctx.me));
    let what = format!("PE {} {}", ctx.me, T::NAME);
    let winners: Vec<usize> = (0..nt).filter(|&t| olds[t] == init).collect();
    ensure(winners.len() == 1, || {
        format!(
            "{what}: {} threads saw the initial value (exactly one must win)",
            winners.len()
        )
    })?;
    let won = mine[winners[0]];
    let losers: Vec<T> = (0..nt)
        .filter(|&t| t != winners[0])
        .map(|t| olds[t])
        .collect();
    same(
        format!("{what}: losing compare_swaps"),
        &losers,
        &vec![won; nt - 1],
    )?;
    same(
        format!("{what}: failing compare_swaps"),
        &olds[nt..],
        &vec![won; nt],
    )?;
    same(
        format!("{what}: value after, twice"),
        &fin.to_vec()?,
        &[won; 2],
    )?;
    let left_tokens = tokens_of(ctx.left());
    let got = target.to_vec()?[0];
    ensure(left_tokens.contains(&got), || {
        format!("{what}: own target {got:?} is not a token of the left neighbour")
    })
}

/// Row 8: every thread swaps a token into the right neighbour; the old values and the final
/// one are the initial value and the tokens, each exactly once; every integer AMO type.
fn swap(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(swap_as(&ctx): i32, u32, i64, u64);
    Ok(())
}

fn swap_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    let nt = THREADS as usize;
    let tag = format!("swap {}", T::NAME);
    let init = T::draw(&mut ctx.rng(&tag, usize::MAX));
    let tokens_of = |pe| distinct::<T>(&mut ctx.rng(&tag, pe), nt, &[init]);
    let mine = tokens_of(ctx.me);
    let mut target = ctx.buf(&[init])?;
    let tokens = ctx.buf(&mine)?;
    let mut olds = ctx.buf(&vec![init; nt])?;
    let mut fin = ctx.buf(&[init])?;
    // SAFETY: one symmetric target, THREADS tokens and olds, one fin; one block.
    unsafe {
        ctx.launch::<amo::swap>(
            coop(THREADS),
            (
                T::CODE,
                bytes_mut(&mut target),
                bytes(&tokens),
                bytes_mut(&mut olds),
                bytes_mut(&mut fin),
            ),
        )?
    };
    let sorted = |v: Vec<T>| {
        let mut b: Vec<u64> = v.iter().map(|x| x.bits()).collect();
        b.sort_unstable();
        b
    };
    let got: Vec<T> = olds.to_vec()?.into_iter().chain(fin.to_vec()?).collect();
    let want: Vec<T> = mine.iter().copied().chain([init]).collect();
    let what = format!("PE {} {}", ctx.me, T::NAME);
    same(
        format!("{what}: old values and the final one, sorted bits"),
        &sorted(got),
        &sorted(want),
    )?;
    let got = target.to_vec()?[0];
    ensure(tokens_of(ctx.left()).contains(&got), || {
        format!("{what}: own target {got:?} is not a token of the left neighbour")
    })
}

/// Bitwise and/or/xor and their fetch forms: 32 threads per PE on the right neighbour's
/// words; every integer AMO type.
fn atomic_bitwise(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(atomic_bitwise_as(&ctx): i32, u32, i64, u64);
    Ok(())
}

fn atomic_bitwise_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    const NT: usize = 32;
    for (op, name) in [(amo::AND, "and"), (amo::OR, "or"), (amo::XOR, "xor")] {
        let tag = format!("bitwise {} {name}", T::NAME);
        let init = T::draw(&mut ctx.rng(&tag, usize::MAX)).bits();
        // Masks: mostly ones for `and`, mostly zeros for `or` (so the results are neither 0
        // nor all ones), distinct single bits for `xor` (so each old value tells its place).
        let masks_of = |pe| -> Vec<u64> {
            let mut r = ctx.rng(&tag, pe);
            let mut bits: Vec<u64> = (0..u64::from(T::BITS)).collect();
            (0..NT)
                .map(|_| match op {
                    amo::AND => (r.next() | r.next()) & T::mask(),
                    amo::OR => r.next() & r.next() & T::mask(),
                    _ => 1 << bits.swap_remove(r.below(bits.len() as u64) as usize),
                })
                .collect()
        };
        let fold = |masks: &[u64]| {
            masks.iter().fold(init, |acc, m| match op {
                amo::AND => acc & m,
                amo::OR => acc | m,
                _ => acc ^ m,
            })
        };
        let to_t = |v: &[u64]| v.iter().map(|&b| T::from_bits(b)).collect::<Vec<T>>();
        let mine = masks_of(ctx.me);
        let mut ctr = ctx.buf(&to_t(&[init, init]))?;
        let masks = ctx.buf(&to_t(&mine))?;
        let mut olds = ctx.buf(&to_t(&[!init & T::mask(); NT]))?;
        // SAFETY: 2 symmetric words, NT masks and olds; one block.
        unsafe {
            ctx.launch::<amo::bitwise>(
                LaunchConfig::new(1, NT as u32),
                (
                    T::CODE,
                    op,
                    bytes_mut(&mut ctr),
                    bytes(&masks),
                    bytes_mut(&mut olds),
                ),
            )?
        };
        let what = format!("PE {} {} {name}", ctx.me, T::NAME);
        let want = T::from_bits(fold(&masks_of(ctx.left())));
        same(
            format!("{what}: [plain, fetch] results from the left neighbour"),
            &ctr.to_vec()?,
            &[want, want],
        )?;
        let olds: Vec<u64> = olds.to_vec()?.iter().map(|v| v.bits()).collect();
        let last = fold(&mine);
        let ok = match op {
            // Each old value lies between the start and the end, bit for bit.
            amo::AND => {
                olds.iter().all(|&o| o & !init == 0 && last & !o == 0) && olds.contains(&init)
            }
            amo::OR => {
                olds.iter().all(|&o| init & !o == 0 && o & !last == 0) && olds.contains(&init)
            }
            // The k-th xor saw exactly k of the masks applied.
            _ => {
                let counts: BTreeSet<u32> = olds.iter().map(|o| (o ^ init).count_ones()).collect();
                let union = mine.iter().fold(0, |a, m| a | m);
                counts == (0..NT as u32).collect() && olds.iter().all(|o| (o ^ init) & !union == 0)
            }
        };
        ensure(ok, || {
            format!("{what}: fetched old values {olds:x?} are not a sequence of atomic updates from {init:#x}")
        })?;
    }
    Ok(())
}

/// `atomic_set`, `atomic_fetch`, `atomic_swap` of every AMO type, floats included.
fn set_fetch_swap(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(set_fetch_swap_as(&ctx): i32, u32, i64, u64, f32, f64);
    Ok(())
}

fn set_fetch_swap_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    let tag = format!("set_fetch_swap {}", T::NAME);
    let vals_of = |pe| distinct::<T>(&mut ctx.rng(&tag, pe), 2, &[]);
    let poison = T::draw(&mut ctx.rng(&tag, usize::MAX));
    let mut target = ctx.buf(&[poison])?;
    let vals = ctx.buf(&vals_of(ctx.me))?;
    let mut out = ctx.buf(&[poison; 3])?;
    // SAFETY: one symmetric target, 2 values, 3 results; one thread.
    unsafe {
        ctx.launch::<amo::set_fetch_swap>(
            coop(1),
            (
                T::CODE,
                bytes_mut(&mut target),
                bytes(&vals),
                bytes_mut(&mut out),
            ),
        )?
    };
    let (left, mine) = (vals_of(ctx.left()), vals_of(ctx.me));
    let what = format!("PE {} {}", ctx.me, T::NAME);
    same(
        format!("{what}: [fetch after set, swap's old value, fetch after swap]"),
        &out.to_vec()?,
        &[left[0], mine[0], left[1]],
    )?;
    same(
        format!("{what}: final value"),
        &target.to_vec()?,
        &[left[1]],
    )
}

// ---------------------------------------------------------------------------------------
// Waits: rows 9, 10, the _vector forms and the test family.
// ---------------------------------------------------------------------------------------

/// Row 9: every PE `put_nbi`s a block to every PE and raises its flag there; receivers loop
/// on `wait_until_any` and sum what arrived.
fn wait_until_any_sum(shmem: &Shmem) -> Outcome {
    const LEN: usize = 301;
    let ctx = Ctx::new(shmem)?;
    let n = ctx.n;
    let mut data = ctx.buf(&vec![0i32; n * LEN])?;
    let mut src = ctx.buf(&[0i32; LEN])?;
    let mut flags = ctx.buf(&vec![0u64; n])?;
    let mut status = ctx.buf(&vec![0i32; n])?;
    let mut order = ctx.buf(&vec![0u64; n + 1])?;
    let mut sum = ctx.buf(&[0i64])?;
    for (scope, sname) in SCOPES {
        let tag = format!("wait_any {sname}");
        let block = |pe| ctx.vals::<i32>(&tag, pe, LEN);
        let poison = i32::draw(&mut ctx.rng(&tag, usize::MAX));
        src.copy_from_host(&block(ctx.me))?;
        data.copy_from_host(&vec![poison; n * LEN])?;
        flags.copy_from_host(&vec![0; n])?;
        status.copy_from_host(&vec![0; n])?;
        order.copy_from_host(&vec![u64::from(poison as u32); n + 1])?;
        sum.copy_from_host(&[i64::from(poison)])?;
        // SAFETY: buffer sizes as `wait_any_sum` requires; one block, cooperative.
        unsafe {
            ctx.launch::<wait::wait_any_sum>(
                coop(THREADS),
                (
                    scope,
                    data.as_mut_ptr(),
                    src.as_ptr(),
                    flags.as_mut_ptr(),
                    status.as_mut_ptr(),
                    order.as_mut_ptr(),
                    sum.as_mut_ptr(),
                    LEN,
                ),
            )?
        };
        let what = |b: &str| format!("PE {} {sname}: {b}", ctx.me);
        let all: Vec<i32> = (0..n).flat_map(block).collect();
        let order = order.to_vec()?;
        let mut arrived = order[..n].to_vec();
        arrived.sort_unstable();
        same(
            what("indices wait_until_any returned, sorted"),
            &arrived,
            &(0..n as u64).collect::<Vec<_>>(),
        )?;
        same(
            what("wait_until_any with all excluded"),
            &order[n..],
            &[usize::MAX as u64],
        )?;
        same(
            what("sum"),
            &sum.to_vec()?,
            &[all.iter().map(|&v| i64::from(v)).sum()],
        )?;
        same(what("data"), &data.to_vec()?, &all)?;
        same(
            what("flags"),
            &flags.to_vec()?,
            &vec![groups(scope, 1, THREADS); n],
        )?;
    }
    Ok(())
}

/// Row 10 with `wait_until_{all,any,some}` and their `_vector` forms, every wait type.
fn wait_all_any_some(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(wait_all_any_some_as(&ctx): i32, u32, i64, u64);
    Ok(())
}

fn wait_all_any_some_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    const LEN: usize = 45;
    for (vector, form) in [(0u32, "scalar"), (1, "_vector")] {
        let tag = format!("wait_all_any_some {} {form}", T::NAME);
        let mut r = ctx.rng(&tag, usize::MAX);
        let poison = T::draw(&mut r);
        let (hot, skip) = (
            r.below(LEN as u64) as usize,
            r.below(LEN as u64 - 1) as usize,
        );
        let skip = if skip >= hot { skip + 1 } else { skip };
        let vals_of = |pe| distinct::<T>(&mut ctx.rng(&tag, pe), LEN, &[poison]);
        let expect = vals_of(ctx.left());
        let mut ivars = ctx.buf(&[poison; 3 * LEN])?;
        let vals = ctx.buf(&vals_of(ctx.me))?;
        let expect_b = ctx.buf(&expect)?;
        let mut status_v = vec![0i32; 2 * LEN];
        status_v[skip] = 1;
        status_v[LEN + skip] = 1;
        let mut status = ctx.buf(&status_v)?;
        let mut indices = ctx.buf(&[usize::MAX - 1; LEN])?;
        let mut out = ctx.buf(&[u64::MAX - 1; 3 + LEN])?;
        let mut seen = ctx.buf(&[poison; LEN])?;
        // SAFETY: sizes as `all_any_some` requires; one block of at least LEN threads.
        unsafe {
            ctx.launch::<wait::all_any_some>(
                coop(THREADS),
                (
                    T::CODE,
                    vector,
                    bytes_mut(&mut ivars),
                    bytes(&vals),
                    bytes(&expect_b),
                    poison.bits(),
                    hot as u32,
                    status.as_mut_ptr(),
                    indices.as_mut_ptr(),
                    out.as_mut_ptr(),
                    bytes_mut(&mut seen),
                    LEN as u32,
                ),
            )?
        };
        let what = |b: &str| format!("PE {} {} {form}: {b}", ctx.me, T::NAME);
        let mut all = expect.clone();
        all[skip] = poison;
        same(
            what("wait_until_all (one element excluded), seen"),
            &seen.to_vec()?,
            &all,
        )?;
        let mut any = vec![poison; LEN];
        any[hot] = expect[hot];
        let mut want_ivars = all.clone();
        want_ivars.extend(&any);
        want_ivars.extend(&all);
        same(
            what("ivars [all, any, some]"),
            &ivars.to_vec()?,
            &want_ivars,
        )?;
        let out = out.to_vec()?;
        same(
            what("[wait_until_any, _any all excluded, _some all excluded]"),
            &out[..3],
            &[hot as u64, usize::MAX as u64, 0],
        )?;
        let mut some = out[3..3 + LEN - 1].to_vec();
        some.sort_unstable();
        let want: Vec<u64> = (0..LEN as u64).filter(|&i| i != skip as u64).collect();
        same(
            what("indices wait_until_some reported, sorted"),
            &some,
            &want,
        )?;
    }
    Ok(())
}

/// `test`, `test_all`, `test_any`, `test_some` with every comparison against the host's model;
/// every wait type.
fn test_family(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(test_family_as(&ctx): i32, u32, i64, u64);
    Ok(())
}

fn test_family_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    const LEN: usize = 7;
    const PROBES: usize = 3;
    let tag = format!("test {}", T::NAME);
    let mut r = ctx.rng(&tag, ctx.me);
    // Few distinct values, so every comparison is true for some elements and false for others.
    let low = if T::SIGNED { -2 } else { 0 };
    let small = |r: &mut Rng| T::from_i64(low + r.below(5) as i64);
    let ivars_v: Vec<T> = (0..LEN).map(|_| small(&mut r)).collect();
    let probes_v = [ivars_v[0], small(&mut r), small(&mut r)];
    let mut status_v: Vec<i32> = (0..LEN).map(|_| (r.below(3) == 0) as i32).collect();
    status_v[0] = 0;
    let (ivars, probes, status) = (ctx.buf(&ivars_v)?, ctx.buf(&probes_v)?, ctx.buf(&status_v)?);
    let mut indices = ctx.buf(&[usize::MAX - 1; LEN])?;
    let stride = 2 * LEN + 3;
    let mut out = ctx.buf(&vec![u64::MAX - 1; 6 * PROBES * stride])?;
    // SAFETY: LEN symmetric ivars, PROBES probes, LEN status and indices, the output table.
    unsafe {
        ctx.launch::<wait::tests>(
            LaunchConfig::new(1, 1),
            (
                T::CODE,
                bytes(&ivars),
                bytes(&probes),
                PROBES as u32,
                status.as_ptr(),
                indices.as_mut_ptr(),
                out.as_mut_ptr(),
                LEN as u32,
            ),
        )?
    };
    let out = out.to_vec()?;
    for (c, cmp) in wait::CMPS.iter().enumerate() {
        assert_eq!(Cmp::from_raw(c as i32), Some(*cmp));
        for (k, &v) in probes_v.iter().enumerate() {
            let rec = &out[(c * PROBES + k) * stride..][..stride];
            let holds: Vec<bool> = ivars_v.iter().map(|&x| cmp.holds(x, v)).collect();
            let live: Vec<usize> = (0..LEN).filter(|&i| status_v[i] == 0).collect();
            let qualify: Vec<u64> = live
                .iter()
                .filter(|&&i| holds[i])
                .map(|&i| i as u64)
                .collect();
            let what = |b: &str| {
                format!(
                    "PE {} {} {cmp:?} {v:?} over {ivars_v:?} (status {status_v:?}): {b}",
                    ctx.me,
                    T::NAME
                )
            };
            same(
                what("test per element"),
                &rec[..LEN],
                &holds.iter().map(|&h| u64::from(h)).collect::<Vec<_>>(),
            )?;
            same(
                what("test_all"),
                &rec[LEN..LEN + 1],
                &[u64::from(live.iter().all(|&i| holds[i]))],
            )?;
            let any = rec[LEN + 1];
            ensure(
                if qualify.is_empty() {
                    any == usize::MAX as u64
                } else {
                    qualify.contains(&any)
                },
                || what(&format!("test_any returned {any}")),
            )?;
            same(
                what("test_some count"),
                &rec[LEN + 2..LEN + 3],
                &[qualify.len() as u64],
            )?;
            same(
                what("test_some indices"),
                &rec[LEN + 3..LEN + 3 + qualify.len()],
                &qualify,
            )?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Signals: rows 11, 12.
// ---------------------------------------------------------------------------------------

/// Row 11: a relay around the ring with `put_signal` (and `_nbi`), `Set` then `Add`, at each
/// scope; every PE ends with PE 0's data.
fn put_signal_relay(shmem: &Shmem) -> Outcome {
    const LEN: usize = 1001;
    let ctx = Ctx::new(shmem)?;
    let mut data = ctx.buf(&[0u32; LEN])?;
    let mut src = ctx.buf(&[0u32; LEN])?;
    let mut sigs = ctx.buf(&[0u64; THREADS as usize])?;
    for (op, oname) in [(signal::SET, "set"), (signal::ADD, "add")] {
        for nbi in [0u32, 1] {
            for (scope, sname) in SCOPES {
                let tag = format!("relay {oname} {nbi} {sname}");
                let mut r = ctx.rng(&tag, usize::MAX);
                let (start, value) = (r.next(), r.next() | 1);
                let expect = if op == signal::SET {
                    value
                } else {
                    start.wrapping_add(value)
                };
                src.copy_from_host(&ctx.vals::<u32>(&tag, ctx.me, LEN))?;
                data.copy_from_host(&vec![r.next() as u32; LEN])?;
                sigs.copy_from_host(&[start; THREADS as usize])?;
                // SAFETY: LEN symmetric u32s, one signal per group; one block, cooperative.
                unsafe {
                    ctx.launch::<signal::relay>(
                        coop(THREADS),
                        (
                            scope,
                            op,
                            nbi,
                            data.as_mut_ptr(),
                            src.as_ptr(),
                            sigs.as_mut_ptr(),
                            value,
                            expect,
                            LEN,
                        ),
                    )?
                };
                let what =
                    |b: &str| format!("PE {} put_signal {oname} nbi={nbi} {sname}: {b}", ctx.me);
                same(
                    what("data relayed from PE 0"),
                    &data.to_vec()?,
                    &ctx.vals::<u32>(&tag, 0, LEN),
                )?;
                let g = groups(scope, 1, THREADS) as usize;
                let mut want = vec![start; THREADS as usize];
                want[..g].fill(expect);
                same(what("signals"), &sigs.to_vec()?, &want)?;
            }
        }
    }
    Ok(())
}

/// Row 12: every PE `put_signal(Add, 1)`s to every PE and adds its number with `signal_op`;
/// `signal_wait_until` returns the count, `signal_fetch` the sum, a `Set` arrives.
fn signal_all_to_all(shmem: &Shmem) -> Outcome {
    const LEN: usize = 257;
    let ctx = Ctx::new(shmem)?;
    let (n, nt) = (ctx.n, THREADS as usize);
    let mut data = ctx.buf(&vec![0u32; n * LEN])?;
    let mut src = ctx.buf(&[0u32; LEN])?;
    let mut sigs = ctx.buf(&[0u64; 3])?;
    let mut tokens = ctx.buf(&vec![0u64; n])?;
    let mut got = ctx.buf(&vec![0u64; 3 * nt])?;
    let mut seen = ctx.buf(&vec![0u32; n * LEN])?;
    for (scope, sname) in SCOPES {
        let tag = format!("all_signal {sname}");
        let poison = u64::draw(&mut ctx.rng(&tag, usize::MAX));
        let tokens_v = distinct::<u64>(&mut ctx.rng(&tag, n), n, &[poison]);
        let block = |pe| ctx.vals::<u32>(&tag, pe, LEN);
        src.copy_from_host(&block(ctx.me))?;
        data.copy_from_host(&vec![poison as u32; n * LEN])?;
        seen.copy_from_host(&vec![poison as u32; n * LEN])?;
        sigs.copy_from_host(&[0, 0, poison])?;
        tokens.copy_from_host(&tokens_v)?;
        got.copy_from_host(&vec![poison; 3 * nt])?;
        // SAFETY: sizes as `all_signal` requires (LEN >= THREADS); one block, cooperative.
        unsafe {
            ctx.launch::<signal::all_signal>(
                coop(THREADS),
                (
                    scope,
                    data.as_mut_ptr(),
                    src.as_ptr(),
                    sigs.as_mut_ptr(),
                    tokens.as_ptr(),
                    got.as_mut_ptr(),
                    seen.as_mut_ptr(),
                    LEN,
                ),
            )?
        };
        let what = |b: &str| format!("PE {} {sname}: {b}", ctx.me);
        let count = n as u64 * groups(scope, 1, THREADS);
        let sum = (n * (n - 1) / 2) as u64;
        let left = tokens_v[ctx.left()];
        let got = got.to_vec()?;
        same(
            what("signal_wait_until(Eq count) returns"),
            &got[..nt],
            &vec![count; nt],
        )?;
        same(
            what("signal_fetch of the sum of PE numbers"),
            &got[nt..2 * nt],
            &vec![sum; nt],
        )?;
        same(
            what("signal_wait_until of the Set from the left"),
            &got[2 * nt..],
            &vec![left; nt],
        )?;
        same(what("signals"), &sigs.to_vec()?, &[count, sum, left])?;
        let all: Vec<u32> = (0..n).flat_map(block).collect();
        same(what("data seen after the signals"), &seen.to_vec()?, &all)?;
        same(what("data"), &data.to_vec()?, &all)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Collectives: rows 13 to 16; teams and barriers.
// ---------------------------------------------------------------------------------------

/// The return code collective `code` must give for `T` at `scope` on this backend.
fn coll_rc<T: Val>(ctx: &Ctx<'_>, code: u32, scope: u32) -> i32 {
    let bitwise = code >= coll::REDUCE
        && matches!(
            coll::OPS[((code - coll::REDUCE) % 7) as usize],
            ReduceOp::And | ReduceOp::Or | ReduceOp::Xor
        );
    if ctx.gpu() && !coll::on_gpu(code, T::CODE, scope) {
        coll::NOT_BUILT
    } else if T::FLOAT && bitwise {
        -1
    } else {
        0
    }
}

/// Launches collective `code` for `T` with count `len` and checks, per scope, the return code
/// and either the destination (`out_len` elements, `want`) or, where nothing may run, its
/// poison.
fn run_collective<T: Val>(
    ctx: &Ctx<'_>,
    code: u32,
    src: &[T],
    len: usize,
    want: &[T],
    what: &str,
) -> Outcome {
    let out_len = want.len();
    let poison = T::draw(&mut ctx.rng(what, usize::MAX));
    let src = ctx.buf(src)?;
    let mut dst = ctx.buf(&vec![poison; 3 * out_len])?;
    let mut rc = ctx.buf(&[i32::MIN; 3])?;
    let root = (1 % ctx.n) as i32;
    // SAFETY: `src` and `dst` are symmetric and sized for collective `code` over WORLD (three
    // destinations); one block of two warps, cooperative; every PE launches it.
    unsafe {
        ctx.launch::<coll::collective>(
            coop(THREADS),
            (
                code,
                T::CODE,
                Team::WORLD,
                root,
                bytes(&src),
                bytes_mut(&mut dst),
                rc.as_mut_ptr(),
                len,
            ),
        )?
    };
    let (dst, rc) = (dst.to_vec()?, rc.to_vec()?);
    for (scope, sname) in SCOPES {
        let k = scope as usize;
        let expect_rc = coll_rc::<T>(ctx, code, scope);
        let what = format!("PE {} {} {what} {sname}", ctx.me, T::NAME);
        same(format!("{what}: return code"), &rc[k..k + 1], &[expect_rc])?;
        let got = &dst[k * out_len..(k + 1) * out_len];
        if expect_rc == 0 {
            same(&what, got, want)?;
        } else {
            same(
                format!("{what}: destination of a collective that did not run"),
                got,
                &vec![poison; out_len],
            )?;
        }
    }
    Ok(())
}

/// Rows 13 to 15: fcollect, broadcast from root 1, alltoall over WORLD; every element type.
fn fcollect_broadcast_alltoall(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(data_colls_as(&ctx): i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);
    Ok(())
}

fn data_colls_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    const LEN: usize = 13;
    let n = ctx.n;
    let tag = format!("data colls {}", T::NAME);
    let block = |pe| ctx.vals::<T>(&tag, pe, LEN);
    let a2a = |pe| ctx.vals::<T>(&format!("{tag} alltoall"), pe, n * LEN);
    let root = 1 % n;
    run_collective(
        ctx,
        coll::BROADCAST,
        &block(ctx.me),
        LEN,
        &block(root),
        "broadcast from PE 1",
    )?;
    let all: Vec<T> = (0..n).flat_map(block).collect();
    run_collective(ctx, coll::FCOLLECT, &block(ctx.me), LEN, &all, "fcollect")?;
    let mine: Vec<T> = (0..n)
        .flat_map(|pe| a2a(pe)[ctx.me * LEN..][..LEN].to_vec())
        .collect();
    run_collective(ctx, coll::ALLTOALL, &a2a(ctx.me), LEN, &mine, "alltoall")
}

/// Row 16 and reducescatter: every operation of every element type (bitwise ones for
/// integers only; floats must refuse them), on random operands and on the table's all-ones.
fn reductions(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    for_types!(reductions_as(&ctx): i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);
    Ok(())
}

/// A random operand for `op` whose reduction over up to 4 PEs is exact in every type:
/// small for sums and extremes, ±1..3 for products, any bits for bitwise operations.
fn operand<T: Val>(r: &mut Rng, op: ReduceOp) -> T {
    let sign = |r: &mut Rng| {
        if T::SIGNED && r.next() & 1 == 1 {
            -1
        } else {
            1
        }
    };
    match op {
        ReduceOp::Sum | ReduceOp::Min | ReduceOp::Max => {
            let v = 1 + r.below(15) as i64;
            T::from_i64(sign(r) * v)
        }
        ReduceOp::Prod => T::from_i64(sign(r) * (1 + r.below(3) as i64)),
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => T::draw(r),
    }
}

/// The table's result of reducing all-ones input over `n` PEs.
fn of_ones<T: Val>(op: ReduceOp, n: usize) -> T {
    T::from_i64(match op {
        ReduceOp::Sum => n as i64,
        ReduceOp::Xor => (n % 2) as i64,
        _ => 1,
    })
}

fn reductions_as<T: Val>(ctx: &Ctx<'_>) -> Outcome {
    const RANDOM: usize = 11;
    const ONES: usize = 10;
    const LEN: usize = RANDOM + ONES;
    let n = ctx.n;
    for (i, &op) in coll::OPS.iter().enumerate() {
        let tag = format!("reduce {} {op:?}", T::NAME);
        // A block of LEN: RANDOM random operands, then ONES ones.
        let block = |pe: usize, b: usize| -> Vec<T> {
            let mut r = ctx.rng(&tag, pe * n + b);
            (0..LEN)
                .map(|j| {
                    if j < RANDOM {
                        operand(&mut r, op)
                    } else {
                        T::from_i64(1)
                    }
                })
                .collect()
        };
        let reduced = |b: usize| -> Vec<T> {
            (0..LEN)
                .map(|j| {
                    (1..n).fold(block(0, b)[j], |acc, pe| {
                        if T::FLOAT && matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor) {
                            acc
                        } else {
                            acc.combine(op, block(pe, b)[j])
                        }
                    })
                })
                .collect()
        };
        for (code, name, src, want) in [
            (
                coll::REDUCE + i as u32,
                "reduce",
                block(ctx.me, 0),
                reduced(0),
            ),
            (
                coll::REDUCESCATTER + i as u32,
                "reducescatter",
                (0..n).flat_map(|b| block(ctx.me, b)).collect(),
                reduced(ctx.me),
            ),
        ] {
            let what = format!("{name} {op:?}");
            if !(T::FLOAT && matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)) {
                // The table's values, independently of the model.
                same(
                    format!("{} {what}: model of all-ones", T::NAME),
                    &want[RANDOM..],
                    &[of_ones::<T>(op, n); ONES],
                )?;
            }
            run_collective(ctx, code, &src, LEN, &want, &what)?;
        }
    }
    Ok(())
}

/// Team queries, `Team::barrier`, `Team::sync` and `sync_all` at each scope.
fn team_world_barriers(shmem: &Shmem) -> Outcome {
    let ctx = Ctx::new(shmem)?;
    let tag = "team";
    let poison = vec![i32::MIN + 7; 9];
    let tokens = ctx.buf(&ctx.vals::<i32>(tag, ctx.me, 9))?;
    let (mut dst, mut seen) = (ctx.buf(&poison)?, ctx.buf(&poison)?);
    let mut out = ctx.buf(&[i32::MIN; 15])?;
    // SAFETY: 9 symmetric tokens, destinations and copies, 15 results; one block, cooperative.
    unsafe {
        ctx.launch::<team::team_world>(
            coop(THREADS),
            (
                tokens.as_ptr(),
                dst.as_mut_ptr(),
                seen.as_mut_ptr(),
                out.as_mut_ptr(),
            ),
        )?
    };
    let (me, n) = (ctx.me as i32, ctx.n as i32);
    let out = out.to_vec()?;
    same(
        format!(
            "PE {me}: WORLD my_pe, n_pes, translate to SHARED; INVALID my_pe, n_pes, translate"
        ),
        &out[..6],
        &[me, n, me, -1, -1, -1],
    )?;
    same(
        format!("PE {me}: barrier/sync return codes"),
        &out[6..],
        &[0; 9],
    )?;
    let from_left = ctx.vals::<i32>(tag, ctx.left(), 9);
    same(
        format!("PE {me}: p seen after [barrier, sync, sync_all] x [thread, warp, block]"),
        &seen.to_vec()?,
        &from_left,
    )?;
    same(format!("PE {me}: p"), &dst.to_vec()?, &from_left)
}
