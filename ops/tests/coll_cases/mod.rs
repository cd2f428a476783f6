//! The collectives' test cases, shared by `coll.rs` (peer-mapped: every algorithm) and
//! `coll_no_p2p.rs` (the simulator without peer mappings: the put fallbacks).
//!
//! Data are fresh random values every run (the seed agreed through PE 0's clock): floats
//! uniform in [-1, 1) rounded to the type, integers over their whole range. References are
//! computed on the host from every PE's data: integers exact (sums wrapping, as the
//! kernels'), maxima and minima exact, float sums within
//!
//! `|got − Σ| ≤ u·(|Σ| + e) + e + a`,  `e = (n − 1)·2⁻²⁴·Σ|xᵢ|`
//!
//! of the f64 sum Σ, where `u` is the type's unit roundoff (2⁻⁸ bf16, 2⁻¹¹ f16, 2⁻²⁴ f32: the
//! final rounding), `e` bounds the f32 accumulation of `n` terms, and `a` covers f16's
//! subnormal spacing (2⁻²⁴; 0 otherwise). All-reduce results must also be bitwise the same on
//! every member. Elements past `count` and chunks a call does not own must stay as they were.

#![allow(dead_code)]

use rshmem::{bf16, f16, Pod, ReduceOp, Shmem, Stream, SymBuffer, Team};
use rshmem_ops::{Algorithm, CollElem, Ops};

use crate::common::{agreed_seed, Outcome};

/// Host side of the tested element types.
pub trait TestElem: CollElem + Pod + PartialEq + std::fmt::Debug {
    /// Whether results compare exactly.
    const INT: bool;
    /// Unit roundoff of the final rounding (floats).
    const U: f64;
    /// Absolute slack (f16 subnormals).
    const ABS: f64;
    /// A value from 64 random bits.
    fn random(bits: u64) -> Self;
    /// As f64 (floats) for the bound.
    fn f64(self) -> f64;
    /// A value no result takes by chance.
    fn poison() -> Self;
    /// The exact reduction of `xs` by `op` for integers (wrapping sum), as the type.
    fn exact(op: ReduceOp, xs: &[Self]) -> Self;
}

fn fold_f(op: ReduceOp, xs: impl Iterator<Item = f64>) -> f64 {
    xs.reduce(|a, b| match op {
        ReduceOp::Sum => a + b,
        ReduceOp::Max => a.max(b),
        _ => a.min(b),
    })
    .unwrap()
}

macro_rules! float_elems {
    ($($t:ty: $u:expr, $abs:expr, |$b:ident| $rand:expr, |$s:ident| $to:expr, $poison:expr;)*) => {$(
        impl TestElem for $t {
            const INT: bool = false;
            const U: f64 = $u;
            const ABS: f64 = $abs;
            fn random($b: u64) -> Self { $rand }
            fn f64(self) -> f64 { let $s = self; $to }
            fn poison() -> Self { $poison }
            fn exact(_: ReduceOp, _: &[Self]) -> Self { unreachable!("floats are checked with a bound") }
        }
    )*};
}

/// Uniform in [-1, 1).
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

float_elems! {
    bf16: 1.0 / 256.0, 0.0, |b| bf16::from_f64(unit(b)), |s| s.to_f64(), bf16::from_f32(-77.0);
    f16: 1.0 / 2048.0, 1.0 / 16_777_216.0, |b| f16::from_f64(unit(b)), |s| s.to_f64(), f16::from_f32(-77.0);
    f32: 1.0 / 16_777_216.0, 0.0, |b| unit(b) as f32, |s| s as f64, -77.0;
}

macro_rules! int_elems {
    ($($t:ty),*) => {$(
        impl TestElem for $t {
            const INT: bool = true;
            const U: f64 = 0.0;
            const ABS: f64 = 0.0;
            fn random(b: u64) -> Self { b as $t }
            fn f64(self) -> f64 { self as f64 }
            fn poison() -> Self { 0x5A5A_5A5A as $t }
            fn exact(op: ReduceOp, xs: &[Self]) -> Self {
                xs.iter().copied().reduce(|a, b| match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Max => a.max(b),
                    _ => a.min(b),
                }).unwrap()
            }
        }
    )*};
}
int_elems!(i32, i64);

/// splitmix64: the value for (`seed`, `pe`, `i`), the same on every PE.
pub fn bits(seed: u64, pe: usize, i: usize) -> u64 {
    let mut x = seed
        ^ (pe as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Member `r`'s data of a case.
pub fn data<T: TestElem>(seed: u64, r: usize, len: usize) -> Vec<T> {
    (0..len).map(|i| T::random(bits(seed, r, i))).collect()
}

/// Checks `got` against the reduction of `xs` (one value per member); `what` names the
/// element in the message (made only on failure).
pub fn check_reduced<T: TestElem>(
    what: impl Fn() -> String,
    op: ReduceOp,
    got: T,
    xs: &[T],
) -> Result<(), String> {
    if T::INT || op != ReduceOp::Sum {
        let want = if T::INT {
            T::exact(op, xs)
        } else {
            // Max and min of floats are exact: one of the values.
            let w = fold_f(op, xs.iter().map(|x| x.f64()));
            *xs.iter().find(|x| x.f64() == w).unwrap()
        };
        if got == want || (got.f64() == want.f64() && !T::INT) {
            return Ok(());
        }
        return Err(format!(
            "{}: got {got:?}, want {want:?} (from {xs:?})",
            what()
        ));
    }
    let sum: f64 = xs.iter().map(|x| x.f64()).sum();
    let abs: f64 = xs.iter().map(|x| x.f64().abs()).sum();
    let e = (xs.len() as f64 - 1.0) * 2f64.powi(-24) * abs;
    let bound = T::U * (sum.abs() + e) + e + T::ABS;
    if (got.f64() - sum).abs() <= bound {
        Ok(())
    } else {
        Err(format!(
            "{}: got {got:?}, the f64 sum is {sum} (bound {bound:e}, from {xs:?})",
            what()
        ))
    }
}

/// Sizes: 1, odd, and 1 MiB + 3 elements.
pub fn sizes<T>() -> [usize; 3] {
    [1, 1001, (1 << 20) / std::mem::size_of::<T>() + 3]
}

/// The teams a case runs over: the world, then PEs 1.. (a split that renumbers; a single PE
/// on 2 PEs).
pub struct Teams<'s> {
    pub split: Option<rshmem::TeamHandle<'s>>,
    /// No split could be made: several PEs share one GPU (NVSHMEM's limited
    /// multi-process-per-GPU mode refuses host-side team splits); only the world runs.
    pub world_only: bool,
}

/// `team_split_strided(WORLD, 1, 1, n - 1)`, or `Ok(None)` where the backend refuses splits
/// (GPUs in NVSHMEM's limited multi-process-per-GPU mode: the split-team cases need one PE per
/// GPU there). Every other error is the test's.
pub fn split_tail(shmem: &Shmem) -> rshmem::Result<Option<Option<rshmem::TeamHandle<'_>>>> {
    let n = shmem.n_pes();
    match shmem.team_split_strided(Team::WORLD, 1, 1, n - 1) {
        Ok(t) => Ok(Some(t)),
        Err(rshmem::Error::Unsupported { .. })
            if shmem.device_info().sharing == rshmem::GpuSharing::TimeSliced =>
        {
            eprintln!(
                "PE {}: no team splits where PEs share a GPU (limited MPG mode): the split-team \
                 cases need one PE per GPU or MPS; the world's run",
                shmem.my_pe()
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// A case's team as every PE sees it: the team (`Team::INVALID` where this PE is not a
/// member), this PE's rank in it (`None` where not a member) and its size. Symmetric
/// allocations are made by every PE, members or not (they are collective over the world), so
/// the cases run on every PE and only members call the collective.
pub type TeamOf = (Team, Option<usize>, usize);

impl<'s> Teams<'s> {
    pub fn new(shmem: &'s Shmem) -> rshmem::Result<Self> {
        let split = split_tail(shmem)?;
        Ok(Teams {
            world_only: split.is_none(),
            split: split.flatten(),
        })
    }

    pub fn each(&self, shmem: &Shmem) -> Vec<TeamOf> {
        let n = shmem.n_pes();
        let split = match &self.split {
            Some(t) => (t.team(), Some(t.my_pe()), n - 1),
            None => (Team::INVALID, None, n - 1),
        };
        let world = (Team::WORLD, Some(shmem.my_pe()), n);
        if self.world_only {
            vec![world]
        } else {
            vec![world, split]
        }
    }
}

/// Every collective × this element type × the sizes × both teams × in/out of place, with the
/// algorithms `algos` forced in turn for the reductions (all-gathers have one).
pub fn matrix<T: TestElem>(shmem: &Shmem, ops: &Ops<'_>, algos: &[Algorithm]) -> Outcome {
    let stream = shmem.stream();
    let teams = Teams::new(shmem)?;
    let seed = agreed_seed(shmem)?;
    let mut case = 0u64;
    let reduce_ops = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min];
    for (team, rank, n) in teams.each(shmem) {
        for count in sizes::<T>() {
            // Small sizes: every algorithm in and out of place. The 1 MiB size (what costs
            // time on the simulator): each algorithm once, in or out of place in turn.
            let big = count > 4096;
            let mut combos = Vec::new();
            for (k, &algo) in algos.iter().enumerate() {
                if !applies::<T>(algo, count) {
                    continue;
                }
                if big {
                    combos.push((algo, k % 2 == 1));
                } else {
                    combos.extend([(algo, false), (algo, true)]);
                }
            }
            for (algo, in_place) in combos {
                ops.set_algorithm(algo);
                case += 1;
                let op = reduce_ops[(case % 3) as usize];
                let s = seed ^ case.wrapping_mul(0x1000_0001);
                let what = format!(
                    "{} count {count} team of {n} (rank {rank:?}) {algo:?} {op:?} in place {in_place}",
                    <T as rshmem_coll::Elem>::NAME
                );
                all_reduce::<T>(shmem, ops, &stream, (team, rank, n), count, op, in_place, s)
                    .map_err(|e| format!("all_reduce {what}: {e}"))?;
                if algo != Algorithm::Lamport {
                    reduce_scatter::<T>(
                        shmem,
                        ops,
                        &stream,
                        (team, rank, n),
                        count,
                        op,
                        in_place,
                        s,
                    )
                    .map_err(|e| format!("reduce_scatter {what}: {e}"))?;
                }
            }
            ops.set_algorithm(Algorithm::Auto);
            for in_place in [false, true] {
                case += 1;
                let s = seed ^ case.wrapping_mul(0x1000_0001);
                if !(big && in_place) {
                    all_gather::<T>(shmem, ops, &stream, (team, rank, n), count, in_place, s)
                        .map_err(|e| {
                            format!("all_gather {count} team of {n} in place {in_place}: {e}")
                        })?;
                }
                if !big || in_place {
                    all_gather_v::<T>(shmem, ops, &stream, (team, rank, n), count, in_place, s)
                        .map_err(|e| {
                            format!(
                                "all_gather_v around {count} team of {n} in place {in_place}: {e}"
                            )
                        })?;
                }
            }
        }
    }
    Ok(())
}

/// Whether a forced algorithm takes this element type and size (Lamport: floats that fit).
fn applies<T: TestElem>(algo: Algorithm, count: usize) -> bool {
    algo != Algorithm::Lamport || (!T::INT && count * std::mem::size_of::<T>() <= 256 << 10)
}

/// A case's inputs and reference: `data(r, len)` is member `r`'s `len` elements (the same on
/// every PE), `check(i, op, got, xs)` checks result element `i` against the members' values
/// `xs` (in rank order).
pub struct Values<D, C> {
    pub data: D,
    pub check: C,
}

/// The random data of `seed`, checked by [`check_reduced`].
#[allow(clippy::type_complexity)]
pub fn random<T: TestElem>(
    seed: u64,
) -> Values<impl Fn(usize, usize) -> Vec<T>, impl Fn(usize, ReduceOp, T, &[T]) -> Result<(), String>>
{
    Values {
        data: move |r, len| data::<T>(seed, r, len),
        check: |i, op, got, xs: &[T]| check_reduced(|| format!("element {i}"), op, got, xs),
    }
}

/// Whether `a` and `b` hold the same bits (NaNs included, which `==` calls unequal).
fn same_bits<T: Pod>(a: &[T], b: &[T]) -> bool {
    bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b)
}

/// A buffer of `len` poison values plus a guard of 3 more.
fn poisoned<'s, T: TestElem>(shmem: &'s Shmem, len: usize) -> rshmem::Result<SymBuffer<'s, T>> {
    shmem.alloc_from(&vec![T::poison(); len + 3])
}

#[allow(clippy::too_many_arguments)]
pub fn all_reduce<T: TestElem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    stream: &Stream<'_>,
    team: TeamOf,
    count: usize,
    op: ReduceOp,
    in_place: bool,
    seed: u64,
) -> Result<(), String> {
    all_reduce_with(
        shmem,
        ops,
        stream,
        team,
        count,
        op,
        in_place,
        &random::<T>(seed),
    )
}

/// [`all_reduce`] of `values`' data, checked by `values.check`.
#[allow(clippy::too_many_arguments)]
pub fn all_reduce_with<T: TestElem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    stream: &Stream<'_>,
    (team, rank, n): TeamOf,
    count: usize,
    op: ReduceOp,
    in_place: bool,
    values: &Values<
        impl Fn(usize, usize) -> Vec<T>,
        impl Fn(usize, ReduceOp, T, &[T]) -> Result<(), String>,
    >,
) -> Result<(), String> {
    let e = |e: rshmem::Error| e.to_string();
    let mine = (values.data)(rank.unwrap_or(0), count);
    let mut src = shmem
        .alloc_from(&[mine.clone(), vec![T::poison(); 3]].concat())
        .map_err(e)?;
    let mut dst = poisoned::<T>(shmem, if in_place { 0 } else { count }).map_err(e)?;
    let mut everyone = shmem.alloc_zeroed::<T>(n * count).map_err(e)?;
    let mut result = shmem.alloc_zeroed::<T>(count).map_err(e)?;
    let Some(_) = rank else { return Ok(()) };
    let got = if in_place {
        ops.all_reduce_in_place(stream, team, &mut src, count, op)
            .map_err(e)?;
        src.to_vec().map_err(e)?
    } else {
        ops.all_reduce(stream, team, &src, &mut dst, count, op)
            .map_err(e)?;
        if !same_bits(&src.to_vec().map_err(e)?[..count], &mine) {
            return Err("the source changed".into());
        }
        dst.to_vec().map_err(e)?
    };
    let all: Vec<Vec<T>> = (0..n).map(|r| (values.data)(r, count)).collect();
    let mut xs = vec![<T as bytemuck::Zeroable>::zeroed(); n];
    for i in 0..count {
        for (x, d) in xs.iter_mut().zip(&all) {
            *x = d[i];
        }
        (values.check)(i, op, got[i], &xs)?;
    }
    if got[count..] != [T::poison(); 3] {
        return Err(format!("past the end: {:?}", &got[count..]));
    }
    // Every member holds bitwise the same result: compare through an all-gather of it.
    result.copy_from_host(&got[..count]).map_err(e)?;
    ops.all_gather(stream, team, &result, &mut everyone, count)
        .map_err(e)?;
    let everyone = everyone.to_vec().map_err(e)?;
    for r in 0..n {
        if !same_bits(&everyone[r * count..(r + 1) * count], &got[..count]) {
            return Err(format!("member {r}'s result differs from this PE's"));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub fn reduce_scatter<T: TestElem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    stream: &Stream<'_>,
    team: TeamOf,
    count: usize,
    op: ReduceOp,
    in_place: bool,
    seed: u64,
) -> Result<(), String> {
    reduce_scatter_with(
        shmem,
        ops,
        stream,
        team,
        count,
        op,
        in_place,
        &random::<T>(seed),
    )
}

/// [`reduce_scatter`] of `values`' data (member `r` gives `data(r, n × count)`), checked by
/// `values.check` (`i` counts from the start of the member's chunk).
#[allow(clippy::too_many_arguments)]
pub fn reduce_scatter_with<T: TestElem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    stream: &Stream<'_>,
    (team, rank, n): TeamOf,
    count: usize,
    op: ReduceOp,
    in_place: bool,
    values: &Values<
        impl Fn(usize, usize) -> Vec<T>,
        impl Fn(usize, ReduceOp, T, &[T]) -> Result<(), String>,
    >,
) -> Result<(), String> {
    let e = |e: rshmem::Error| e.to_string();
    let mine = (values.data)(rank.unwrap_or(0), n * count);
    let mut src = shmem
        .alloc_from(&[mine.clone(), vec![T::poison(); 3]].concat())
        .map_err(e)?;
    let mut dst = poisoned::<T>(shmem, if in_place { 0 } else { count }).map_err(e)?;
    let Some(rank) = rank else { return Ok(()) };
    let (got, rest) = if in_place {
        ops.reduce_scatter_in_place(stream, team, &mut src, count, op)
            .map_err(e)?;
        let v = src.to_vec().map_err(e)?;
        (v[rank * count..(rank + 1) * count].to_vec(), Some(v))
    } else {
        ops.reduce_scatter(stream, team, &src, &mut dst, count, op)
            .map_err(e)?;
        let v = dst.to_vec().map_err(e)?;
        if v[count..] != [T::poison(); 3] {
            return Err(format!("past the end: {:?}", &v[count..]));
        }
        (v[..count].to_vec(), None)
    };
    let all: Vec<Vec<T>> = (0..n).map(|r| (values.data)(r, n * count)).collect();
    let mut xs = vec![<T as bytemuck::Zeroable>::zeroed(); n];
    for i in 0..count {
        for (x, d) in xs.iter_mut().zip(&all) {
            *x = d[rank * count + i];
        }
        (values.check)(i, op, got[i], &xs)?;
    }
    if let Some(v) = rest {
        for (i, (a, b)) in v
            .iter()
            .zip(mine.iter().chain(&[T::poison(); 3]))
            .enumerate()
        {
            if (i < rank * count || i >= (rank + 1) * count) && !same_bits(&[*a], &[*b]) {
                return Err(format!(
                    "in place: element {i} outside this PE's chunk changed"
                ));
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub fn all_gather<T: TestElem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    stream: &Stream<'_>,
    (team, rank, n): TeamOf,
    count: usize,
    in_place: bool,
    seed: u64,
) -> Result<(), String> {
    let counts = vec![count; n];
    gather_check::<T>(
        shmem,
        ops,
        stream,
        (team, rank, n),
        &counts,
        in_place,
        seed,
        false,
    )
}

/// Unequal counts around `count`: member r gives `(count + 7·r) / (r + 1)`, the last one
/// nothing when there are 3 or more.
#[allow(clippy::too_many_arguments)]
pub fn all_gather_v<T: TestElem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    stream: &Stream<'_>,
    (team, rank, n): TeamOf,
    count: usize,
    in_place: bool,
    seed: u64,
) -> Result<(), String> {
    let counts: Vec<usize> = (0..n)
        .map(|r| {
            if n >= 3 && r == n - 1 {
                0
            } else {
                (count + 7 * r) / (r + 1)
            }
        })
        .collect();
    gather_check::<T>(
        shmem,
        ops,
        stream,
        (team, rank, n),
        &counts,
        in_place,
        seed,
        true,
    )
}

#[allow(clippy::too_many_arguments)]
fn gather_check<T: TestElem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    stream: &Stream<'_>,
    (team, rank, n): TeamOf,
    counts: &[usize],
    in_place: bool,
    seed: u64,
    v: bool,
) -> Result<(), String> {
    let e = |e: rshmem::Error| e.to_string();
    let total: usize = counts.iter().sum();
    let most = counts.iter().copied().max().unwrap_or(0);
    let offs: Vec<usize> = counts
        .iter()
        .scan(0, |a, &c| {
            let o = *a;
            *a += c;
            Some(o)
        })
        .collect();
    let r0 = rank.unwrap_or(0);
    let mine = data::<T>(seed, r0, counts[r0]);
    // Every PE allocates the same sizes (symmetric allocations are world-collective).
    let mut init = vec![T::poison(); total + 3];
    if in_place {
        init[offs[r0]..offs[r0] + counts[r0]].copy_from_slice(&mine);
    }
    let mut buf = shmem.alloc_from(&init).map_err(e)?;
    let mut src_init = vec![T::poison(); most + 1];
    src_init[..mine.len()].copy_from_slice(&mine);
    let src = shmem.alloc_from(&src_init).map_err(e)?;
    if rank.is_none() {
        return Ok(());
    }
    match (in_place, v) {
        (true, true) => ops.all_gather_v_in_place(stream, team, &mut buf, counts),
        (true, false) => ops.all_gather_in_place(stream, team, &mut buf, counts[0]),
        (false, true) => ops.all_gather_v(stream, team, &src, &mut buf, counts),
        (false, false) => ops.all_gather(stream, team, &src, &mut buf, counts[0]),
    }
    .map_err(e)?;
    let got = buf.to_vec().map_err(e)?;
    for r in 0..n {
        let want = data::<T>(seed, r, counts[r]);
        if got[offs[r]..offs[r] + counts[r]] != want[..] {
            let i = (0..counts[r])
                .find(|&i| got[offs[r] + i] != want[i])
                .unwrap();
            return Err(format!(
                "member {r}'s element {i}: got {:?}, want {:?} (counts {counts:?})",
                got[offs[r] + i],
                want[i]
            ));
        }
    }
    if got[total..] != [T::poison(); 3] {
        return Err(format!("past the end: {:?}", &got[total..]));
    }
    Ok(())
}

/// [`matrix`] for every element type.
pub fn each_type(shmem: &Shmem, ops: &Ops<'_>, algos: &[Algorithm]) -> Outcome {
    matrix::<bf16>(shmem, ops, algos)?;
    matrix::<f16>(shmem, ops, algos)?;
    matrix::<f32>(shmem, ops, algos)?;
    matrix::<i32>(shmem, ops, algos)?;
    matrix::<i64>(shmem, ops, algos)?;
    Ok(())
}

/// The float types, for [`special_values`]: their special values by bits.
pub trait FloatElem: TestElem {
    /// The canonical NaN every reduction returns (`0x7FFF_FFFF`, `0x7FFF`).
    const CANONICAL_NAN: u32;
    /// A signalling NaN (the quiet bit clear).
    const SIGNALLING_NAN: u32;
    /// The value of the low bits of `bits` (16 for bf16 and f16).
    fn from_bits(bits: u32) -> Self;
    /// The bits, zero-extended.
    fn to_bits(self) -> u32;
    /// `x` in the type (exact for the values used here: ±0, ±∞, NaN).
    fn from_f64(x: f64) -> Self;
    /// Whether it is a NaN.
    fn is_nan(self) -> bool {
        self.f64().is_nan()
    }
}

macro_rules! float_specials {
    ($($t:ty: $nan:expr, $snan:expr, |$b:ident| $from:expr, |$s:ident| $to:expr, |$x:ident| $f64:expr;)*) => {$(
        impl FloatElem for $t {
            const CANONICAL_NAN: u32 = $nan;
            const SIGNALLING_NAN: u32 = $snan;
            fn from_bits($b: u32) -> Self { $from }
            fn to_bits(self) -> u32 { let $s = self; $to }
            fn from_f64($x: f64) -> Self { $f64 }
        }
    )*};
}

float_specials! {
    bf16: 0x7FFF, 0x7F81, |b| bf16::from_bits(b as u16), |s| u32::from(s.to_bits()), |x| bf16::from_f64(x);
    f16: 0x7FFF, 0x7C01, |b| f16::from_bits(b as u16), |s| u32::from(s.to_bits()), |x| f16::from_f64(x);
    f32: 0x7FFF_FFFF, 0x7F80_0001, |b| f32::from_bits(b), |s| s.to_bits(), |x| x as f32;
}

/// Element kinds of [`special_values`]' data (element `i` has kind `i / 2 % KINDS`: the two
/// elements of a 32-bit word of bf16/f16 share one, so an all-ones NaN fills a whole word, the
/// flag-in-data protocol's "empty" word).
const KINDS: usize = 12;

/// Member `r`'s value of element `i` (of `n` members): a random number, or a special value on
/// member `p` (which moves through every rank as `i` grows) and maybe on others.
fn special<T: FloatElem>(seed: u64, r: usize, n: usize, i: usize) -> T {
    let num = T::random(bits(seed, r, i));
    let p = i / (2 * KINDS) % n;
    let (on_p, on_next) = (r == p, r == (p + 1) % n);
    let nan = T::from_f64(f64::NAN);
    let (inf, zero) = (T::from_f64(f64::INFINITY), T::from_f64(0.0));
    let (ninf, nzero) = (T::from_f64(f64::NEG_INFINITY), T::from_f64(-0.0));
    match i / 2 % KINDS {
        1 if on_p => nan,
        2 if on_p => T::from_bits(u32::MAX), // −NaN, all ones: the "empty" word
        3 if on_p => T::from_bits(T::SIGNALLING_NAN),
        4 => nan, // on every member
        5 if on_p => zero,
        5 => nzero,
        6 if on_p => nzero,
        6 => zero,
        7 if on_p => inf,
        8 if on_p => ninf,
        9 if on_p => inf,
        9 if on_next => ninf,
        10 if on_p => T::from_bits(u32::MAX),
        10 if on_next => inf,
        11 if on_p => nan,
        11 => ninf,
        _ => num,
    }
}

/// The promised result of `op` over `xs` where it is exact (docs/collectives.md, "NaN, ±0 and
/// ±∞"), `None` for a sum of numbers (checked with the bound): any NaN gives the canonical NaN;
/// max/min order −0 below +0; a sum of zeros is −0 only if every one is; a sum with ∞ is that
/// ∞, or NaN with both.
fn promised<T: FloatElem>(op: ReduceOp, xs: &[T]) -> Option<T> {
    let canonical = T::from_bits(T::CANONICAL_NAN);
    if xs.iter().any(|x| x.is_nan()) {
        return Some(canonical);
    }
    let by = |a: &&T, b: &&T| a.f64().total_cmp(&b.f64());
    match op {
        ReduceOp::Max => xs.iter().max_by(by).copied(),
        ReduceOp::Min => xs.iter().min_by(by).copied(),
        _ => {
            let has = |v: f64| xs.iter().any(|x| x.f64() == v);
            match (has(f64::INFINITY), has(f64::NEG_INFINITY)) {
                (true, true) => Some(canonical),
                (true, false) => Some(T::from_f64(f64::INFINITY)),
                (false, true) => Some(T::from_f64(f64::NEG_INFINITY)),
                _ if xs.iter().all(|x| x.f64() == 0.0) => Some(T::from_f64(
                    if xs.iter().all(|x| x.f64().is_sign_negative()) {
                        -0.0
                    } else {
                        0.0
                    },
                )),
                _ => None,
            }
        }
    }
}

/// [`special_values`]' data and reference.
#[allow(clippy::type_complexity)]
fn specials<T: FloatElem>(
    seed: u64,
    n: usize,
) -> Values<impl Fn(usize, usize) -> Vec<T>, impl Fn(usize, ReduceOp, T, &[T]) -> Result<(), String>>
{
    Values {
        data: move |r, len| (0..len).map(|i| special::<T>(seed, r, n, i)).collect(),
        check: |i, op, got: T, xs: &[T]| match promised(op, xs) {
            Some(want) if got.to_bits() == want.to_bits() => Ok(()),
            Some(want) => Err(format!(
                "element {i}: got {got:?} ({:#x}), want {want:?} ({:#x}) (from {:x?})",
                got.to_bits(),
                want.to_bits(),
                xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            )),
            None => check_reduced(|| format!("element {i}"), op, got, xs),
        },
    }
}

/// NaN (quiet, signalling, all-ones: the flag-in-data "empty" word), ±0 and ±∞ on one member,
/// several or all, for `Sum`, `Max` and `Min` × the algorithms `algos` (those that apply) × in
/// and out of place × all-reduce and reduce-scatter, over the world: every result has the
/// promised bits. Two sizes: one where every kind meets every rank, and one over several
/// blocks and chunks.
pub fn special_values<T: FloatElem>(shmem: &Shmem, ops: &Ops<'_>, algos: &[Algorithm]) -> Outcome {
    let stream = shmem.stream();
    let seed = agreed_seed(shmem)?;
    let n = shmem.n_pes();
    let team = (Team::WORLD, Some(shmem.my_pe()), n);
    let values = specials::<T>(seed, n);
    for count in [2 * KINDS * n * 2 + 7, 20_011] {
        for &algo in algos.iter().filter(|&&a| applies::<T>(a, count)) {
            ops.set_algorithm(algo);
            for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum] {
                for in_place in [false, true] {
                    let what = format!(
                        "{} count {count} {algo:?} {op:?} in place {in_place}",
                        <T as rshmem_coll::Elem>::NAME
                    );
                    all_reduce_with::<T>(shmem, ops, &stream, team, count, op, in_place, &values)
                        .map_err(|e| format!("all_reduce {what}: {e}"))?;
                    if algo != Algorithm::Lamport {
                        let per = count / n;
                        reduce_scatter_with::<T>(
                            shmem, ops, &stream, team, per, op, in_place, &values,
                        )
                        .map_err(|e| format!("reduce_scatter {what}: {e}"))?;
                    }
                }
            }
        }
    }
    ops.set_algorithm(Algorithm::Auto);
    Ok(())
}

/// [`special_values`] for every float type.
pub fn each_float_special(shmem: &Shmem, ops: &Ops<'_>, algos: &[Algorithm]) -> Outcome {
    special_values::<bf16>(shmem, ops, algos)?;
    special_values::<f16>(shmem, ops, algos)?;
    special_values::<f32>(shmem, ops, algos)?;
    Ok(())
}
