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
        Err(rshmem::Error::Unsupported { .. }) if shmem.backend() == rshmem::Backend::Gpu => {
            eprintln!(
                "PE {}: no team splits where PEs share a GPU (limited MPG mode): the split-team \
                 cases need one PE per GPU; the world's run",
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

/// A buffer of `len` poison values plus a guard of 3 more.
fn poisoned<'s, T: TestElem>(shmem: &'s Shmem, len: usize) -> rshmem::Result<SymBuffer<'s, T>> {
    shmem.alloc_from(&vec![T::poison(); len + 3])
}

#[allow(clippy::too_many_arguments)]
pub fn all_reduce<T: TestElem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    stream: &Stream<'_>,
    (team, rank, n): TeamOf,
    count: usize,
    op: ReduceOp,
    in_place: bool,
    seed: u64,
) -> Result<(), String> {
    let e = |e: rshmem::Error| e.to_string();
    let mine = data::<T>(seed, rank.unwrap_or(0), count);
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
        if src.to_vec().map_err(e)?[..count] != mine[..] {
            return Err("the source changed".into());
        }
        dst.to_vec().map_err(e)?
    };
    let all: Vec<Vec<T>> = (0..n).map(|r| data::<T>(seed, r, count)).collect();
    let mut xs = vec![<T as bytemuck::Zeroable>::zeroed(); n];
    for i in 0..count {
        for (x, d) in xs.iter_mut().zip(&all) {
            *x = d[i];
        }
        check_reduced(|| format!("element {i}"), op, got[i], &xs)?;
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
        if bytemuck::cast_slice::<T, u8>(&everyone[r * count..(r + 1) * count])
            != bytemuck::cast_slice::<T, u8>(&got[..count])
        {
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
    (team, rank, n): TeamOf,
    count: usize,
    op: ReduceOp,
    in_place: bool,
    seed: u64,
) -> Result<(), String> {
    let e = |e: rshmem::Error| e.to_string();
    let mine = data::<T>(seed, rank.unwrap_or(0), n * count);
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
    let all: Vec<Vec<T>> = (0..n).map(|r| data::<T>(seed, r, n * count)).collect();
    let mut xs = vec![<T as bytemuck::Zeroable>::zeroed(); n];
    for i in 0..count {
        for (x, d) in xs.iter_mut().zip(&all) {
            *x = d[rank * count + i];
        }
        check_reduced(|| format!("element {i}"), op, got[i], &xs)?;
    }
    if let Some(v) = rest {
        for (i, (a, b)) in v
            .iter()
            .zip(mine.iter().chain(&[T::poison(); 3]))
            .enumerate()
        {
            if (i < rank * count || i >= (rank + 1) * count) && a != b {
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
