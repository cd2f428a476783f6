//! rshmem's collectives (`Ops::all_reduce` and the rest) on every backend, against host
//! references (see `coll_cases/mod.rs` for the data and the bounds): every collective × bf16,
//! f16, f32, i32, i64 × 1, odd and 1 MiB + 3 elements × the world and a split team × in and
//! out of place × every algorithm; NaN, ±0 and ±∞ (every float type × algorithm × reduction);
//! the fused all-reduce + RMSNorm; collectives on two streams at once; 64 MiB on GPUs; the
//! errors. `coll_no_p2p.rs` runs the same matrix, and the special values, on the simulator
//! without peer mappings.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "coll_cases/mod.rs"]
mod coll_cases;

use coll_cases::{check_reduced, data, TestElem};
use common::Outcome;
use rshmem::{bf16, f16, Backend, ReduceOp, Shmem, Team};
use rshmem_ops::{Algorithm, NormElem, Ops};
use std::ops::Range;

per_backend! {
    every_collective_type_size_team_algorithm => [2, 3, 4];
    float_special_values => [2, 3, 4];
    all_reduce_rmsnorm_fused => [2, 3];
    two_streams_at_once => [2, 3];
    large_messages => [2];
    errors_name_the_mismatch => [2];
    collectives_in_graphs => [2, 3];
    sub_ranges_in_one_call => [2, 3];
}

/// Every algorithm a test forces in turn (`Auto` included).
const EVERY_ALGORITHM: [Algorithm; 4] = [
    Algorithm::Auto,
    Algorithm::Lamport,
    Algorithm::OneShot,
    Algorithm::TwoShot,
];

fn every_collective_type_size_team_algorithm(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    coll_cases::each_type(shmem, &ops, &EVERY_ALGORITHM)
}

/// NaN, ±0 and ±∞ through every float type, algorithm, reduction and in/out of place: the
/// bits docs/collectives.md promises ("NaN, ±0 and ±∞"), the same from every algorithm.
fn float_special_values(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    coll_cases::each_float_special(shmem, &ops, &EVERY_ALGORITHM)
}

/// Host reference of the fused op for one row: `residual' = Σ x + residual` (checked with
/// the all-reduce bound against f64) and `out` from the kernel's own `residual'` in f64,
/// within the type's rounding plus a few f32 ulp.
fn check_rmsnorm_row<T: TestElem>(
    xs: &[Vec<T>],
    res0: &[T],
    weight: &[T],
    res: &[T],
    out: &[T],
    eps: f32,
) -> Result<(), String> {
    let hidden = res0.len();
    for i in 0..hidden {
        let mut terms: Vec<T> = xs.iter().map(|x| x[i]).collect();
        terms.push(res0[i]);
        check_reduced(|| format!("residual {i}"), ReduceOp::Sum, res[i], &terms)?;
    }
    let ms = res.iter().map(|r| r.f64() * r.f64()).sum::<f64>() / hidden as f64;
    let scale = 1.0 / (ms + eps as f64).sqrt();
    for i in 0..hidden {
        let want = res[i].f64() * scale * weight[i].f64();
        let bound = (T::U + 16.0 * 2f64.powi(-24)) * want.abs() + T::ABS + 1e-30;
        if (out[i].f64() - want).abs() > bound {
            return Err(format!(
                "out {i}: got {:?}, want {want} (bound {bound:e})",
                out[i]
            ));
        }
    }
    Ok(())
}

fn rmsnorm_case<T: TestElem + NormElem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    rows: usize,
    hidden: usize,
    seed: u64,
) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let eps = 1e-5f32;
    let x = shmem.alloc_from(&data::<T>(seed, me, rows * hidden))?;
    // Every member holds the same residual (tensor parallelism), its own x.
    let res0 = data::<T>(seed ^ 1, 99, rows * hidden);
    let weight_host = data::<T>(seed ^ 2, 98, hidden);
    let mut residual = shmem.alloc_from(&res0)?;
    let weight = shmem.alloc_from(&weight_host)?;
    let mut out = shmem.alloc_from(&vec![T::poison(); rows * hidden + 3])?;
    ops.all_reduce_rmsnorm(
        &shmem.stream(),
        Team::WORLD,
        &x,
        &mut residual,
        &weight,
        &mut out,
        rows,
        hidden,
        eps,
    )?;
    let (res, got) = (residual.to_vec()?, out.to_vec()?);
    let xs: Vec<Vec<T>> = (0..n).map(|r| data::<T>(seed, r, rows * hidden)).collect();
    for row in 0..rows {
        let at = row * hidden..(row + 1) * hidden;
        let xr: Vec<Vec<T>> = xs.iter().map(|x| x[at.clone()].to_vec()).collect();
        check_rmsnorm_row(
            &xr,
            &res0[at.clone()],
            &weight_host,
            &res[at.clone()],
            &got[at.clone()],
            eps,
        )
        .map_err(|e| {
            format!(
                "{} rows {rows} hidden {hidden} {:?}: row {row}: {e}",
                <T as rshmem_coll::Elem>::NAME,
                ops.algorithm()
            )
        })?;
    }
    if got[rows * hidden..] != [T::poison(); 3] {
        return Err(format!("past the end: {:?}", &got[rows * hidden..]).into());
    }
    Ok(())
}

fn all_reduce_rmsnorm_fused(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let seed = common::agreed_seed(shmem)?;
    // Odd sizes (rows not a multiple of the PEs, hidden not of the pack), and a larger one
    // Auto splits over the members.
    for (k, algo) in [Algorithm::OneShot, Algorithm::TwoShot, Algorithm::Auto]
        .into_iter()
        .enumerate()
    {
        ops.set_algorithm(algo);
        let s = seed ^ (k as u64) << 32;
        rmsnorm_case::<bf16>(shmem, &ops, 7, 1003, s)?;
        rmsnorm_case::<f16>(shmem, &ops, 5, 64, s ^ 3)?;
        rmsnorm_case::<f32>(shmem, &ops, 3, 37, s ^ 5)?;
    }
    ops.set_algorithm(Algorithm::Auto);
    rmsnorm_case::<bf16>(shmem, &ops, 64, 4096, seed ^ 7)?;
    Ok(())
}

/// Collectives queued on two streams without synchronisation between them: each stream has
/// its own workspace, so neither corrupts the other (on GPUs they run at the same time).
fn two_streams_at_once(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let (a, b) = (shmem.new_stream()?, shmem.new_stream()?);
    let seed = common::agreed_seed(shmem)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let rounds = 4;
    let counts = [3usize, 70_001, 513, 1 << 17];
    let mut xs = Vec::new();
    let mut sums = Vec::new();
    let mut gathered = Vec::new();
    for (k, &count) in counts.iter().enumerate().take(rounds) {
        xs.push(shmem.alloc_from(&data::<f32>(seed ^ k as u64, me, count))?);
        sums.push(shmem.alloc_zeroed::<f32>(count)?);
        gathered.push(shmem.alloc_zeroed::<i64>(n * count)?);
    }
    let ys: Vec<_> = counts
        .iter()
        .enumerate()
        .map(|(k, &c)| shmem.alloc_from(&data::<i64>(seed ^ 100 ^ k as u64, me, c)))
        .collect::<Result<_, _>>()?;
    for k in 0..rounds {
        ops.all_reduce(
            &a,
            Team::WORLD,
            &xs[k],
            &mut sums[k],
            counts[k],
            ReduceOp::Sum,
        )?;
        ops.all_gather(&b, Team::WORLD, &ys[k], &mut gathered[k], counts[k])?;
    }
    a.synchronize()?;
    b.synchronize()?;
    for (k, &count) in counts.iter().enumerate() {
        let got = sums[k].to_vec()?;
        let all: Vec<Vec<f32>> = (0..n)
            .map(|r| data::<f32>(seed ^ k as u64, r, count))
            .collect();
        let mut terms = vec![0f32; n];
        for i in 0..count {
            for (t, d) in terms.iter_mut().zip(&all) {
                *t = d[i];
            }
            check_reduced(
                || format!("stream a, call {k}, element {i}"),
                ReduceOp::Sum,
                got[i],
                &terms,
            )?;
        }
        let g = gathered[k].to_vec()?;
        for r in 0..n {
            if g[r * count..(r + 1) * count] != data::<i64>(seed ^ 100 ^ k as u64, r, count)[..] {
                return Err(format!("stream b, call {k}: member {r}'s part differs").into());
            }
        }
    }
    Ok(())
}

/// 64 MiB per PE on GPUs (the bandwidth algorithms' size), 4 MiB on the simulator.
fn large_messages(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let seed = common::agreed_seed(shmem)?;
    let bytes: usize = match shmem.backend() {
        Backend::Gpu => 64 << 20,
        Backend::Sim => 4 << 20,
    };
    let n = shmem.n_pes();
    let team = (Team::WORLD, Some(shmem.my_pe()), n);
    let count = bytes / 2 + 3;
    for algo in [Algorithm::Auto, Algorithm::OneShot] {
        ops.set_algorithm(algo);
        coll_cases::all_reduce::<bf16>(
            shmem,
            &ops,
            &stream,
            team,
            count,
            ReduceOp::Sum,
            true,
            seed,
        )
        .map_err(|e| format!("all_reduce {algo:?}: {e}"))?;
        coll_cases::reduce_scatter::<bf16>(
            shmem,
            &ops,
            &stream,
            team,
            count / n,
            ReduceOp::Max,
            false,
            seed,
        )
        .map_err(|e| format!("reduce_scatter {algo:?}: {e}"))?;
    }
    coll_cases::all_gather::<bf16>(shmem, &ops, &stream, team, count / n, false, seed)
        .map_err(|e| format!("all_gather: {e}"))?;
    Ok(())
}

/// Every refused call says what is wrong, queues nothing, and a correct call works after.
fn errors_name_the_mismatch(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let n = shmem.n_pes();
    let expect = |r: rshmem::Result<()>, words: &[&str]| -> Outcome {
        let msg = match r {
            Ok(()) => return Err(format!("expected an error mentioning {words:?}").into()),
            Err(e) => e.to_string(),
        };
        for w in words {
            if !msg.contains(w) {
                return Err(format!("the message {msg:?} does not mention {w:?}").into());
            }
        }
        Ok(())
    };
    // A split team's first collective on a fresh stream: the workspace is world-collective.
    let fresh = shmem.new_stream()?;
    let split = coll_cases::split_tail(shmem)?.flatten();
    if let Some(t) = &split {
        let mut b = shmem.alloc_zeroed::<f32>(4)?;
        expect(
            ops.all_reduce_in_place(&fresh, t.team(), &mut b, 4, ReduceOp::Sum),
            &["first collective on this stream", "prepare_collectives"],
        )?;
    } else {
        shmem.alloc_zeroed::<f32>(4)?;
    }
    let x = shmem.alloc_from(&[1.0f32; 10])?;
    let mut short = shmem.alloc_zeroed::<f32>(5)?;
    expect(
        ops.all_reduce(&stream, Team::WORLD, &x, &mut short, 10, ReduceOp::Sum),
        &[
            "`dst` holds 5 elements",
            "all-reduce of 10 elements needs 10",
        ],
    )?;
    expect(
        ops.all_reduce(&stream, Team::WORLD, &x, &mut short, 10, ReduceOp::Prod),
        &["`dst` holds 5"],
    )?;
    let mut y = shmem.alloc_zeroed::<f32>(10)?;
    expect(
        ops.all_reduce(&stream, Team::WORLD, &x, &mut y, 10, ReduceOp::Prod),
        &["ReduceOp::Prod", "Sum, Max or Min"],
    )?;
    expect(
        ops.reduce_scatter(&stream, Team::WORLD, &x, &mut y, 10, ReduceOp::Sum),
        &[
            "`src` holds 10 elements",
            &format!("over {n} PEs needs {}", 10 * n),
        ],
    )?;
    expect(
        ops.all_gather(&stream, Team::WORLD, &x, &mut y, 10),
        &["`dst` holds 10 elements", &format!("needs {}", 10 * n)],
    )?;
    expect(
        ops.all_gather_v(&stream, Team::WORLD, &x, &mut y, &[1]),
        &["`counts` has 1 entries", &format!("{n} members")],
    )?;
    let xi = shmem.alloc_from(&[1i32; 10])?;
    let mut yi = shmem.alloc_zeroed::<i32>(10)?;
    ops.set_algorithm(Algorithm::Lamport);
    expect(
        ops.all_reduce(&stream, Team::WORLD, &xi, &mut yi, 10, ReduceOp::Sum),
        &["Algorithm::Lamport on i32", "float"],
    )?;
    expect(
        ops.reduce_scatter(&stream, Team::WORLD, &xi, &mut yi, 10 / n, ReduceOp::Sum),
        &["reduce-scatter has no flag-in-data form"],
    )?;
    let big = shmem.alloc_zeroed::<f32>(1 << 17)?;
    let mut big_out = shmem.alloc_zeroed::<f32>(1 << 17)?;
    expect(
        ops.all_reduce(
            &stream,
            Team::WORLD,
            &big,
            &mut big_out,
            1 << 17,
            ReduceOp::Sum,
        ),
        &["flag-in-data", "slots hold"],
    )?;
    ops.set_algorithm(Algorithm::Auto);
    // A team this PE is not a member of (here: no team at all).
    let mut b = shmem.alloc_zeroed::<f32>(4)?;
    expect(
        ops.all_reduce_in_place(&stream, Team::INVALID, &mut b, 4, ReduceOp::Sum),
        &["is not a member of team -1"],
    )?;
    // Nothing was queued: a correct call still works and agrees.
    ops.all_reduce(&stream, Team::WORLD, &x, &mut y, 10, ReduceOp::Sum)?;
    if y.to_vec()? != vec![n as f32; 10] {
        return Err(format!("after the errors: {:?}", y.to_vec()?).into());
    }
    Ok(())
}

/// Collectives recorded into a graph and launched many times with fresh data: their
/// synchronisation state lives on the device (step counts, slot parities), so every launch
/// is a new collective. A stream without a workspace refuses to be captured, by name.
fn collectives_in_graphs(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let seed = common::agreed_seed(shmem)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let fresh = shmem.new_stream()?;
    let mut b = shmem.alloc_zeroed::<f32>(8)?;
    let refused =
        fresh.capture(|| ops.all_reduce_in_place(&fresh, Team::WORLD, &mut b, 8, ReduceOp::Sum));
    let msg = refused.err().map(|e| e.to_string()).unwrap_or_default();
    if !msg.contains("records a graph and has no collective workspace") {
        return Err(format!("capture on a stream without workspace: {msg:?}").into());
    }
    let stream = shmem.new_stream()?;
    for (k, algo) in [Algorithm::Lamport, Algorithm::OneShot, Algorithm::TwoShot]
        .into_iter()
        .enumerate()
    {
        ops.set_algorithm(algo);
        let count = 3001;
        let mut x = shmem.alloc_zeroed::<f32>(count)?;
        let mut y = shmem.alloc_zeroed::<f32>(count)?;
        let mut g = shmem.alloc_zeroed::<i64>(n * 7)?;
        let z = shmem.alloc_from(&[me as i64; 7])?;
        // One call before the capture: the stream's workspace exists.
        ops.all_reduce(&stream, Team::WORLD, &x, &mut y, count, ReduceOp::Sum)?;
        stream.synchronize()?;
        let graph = stream.capture(|| {
            ops.all_reduce(&stream, Team::WORLD, &x, &mut y, count, ReduceOp::Max)?;
            ops.all_gather(&stream, Team::WORLD, &z, &mut g, 7)
        })?;
        for launch in 0..4u64 {
            let s = seed ^ (k as u64) << 40 ^ launch;
            x.copy_from_host(&data::<f32>(s, me, count))?;
            // SAFETY: every buffer the graph touches outlives it; every PE launches it in the
            // same order.
            unsafe { graph.launch(&stream)? };
            stream.synchronize()?;
            let got = y.to_vec()?;
            let all: Vec<Vec<f32>> = (0..n).map(|r| data::<f32>(s, r, count)).collect();
            let mut terms = vec![0f32; n];
            for i in 0..count {
                for (t, d) in terms.iter_mut().zip(&all) {
                    *t = d[i];
                }
                check_reduced(
                    || format!("{algo:?} graph launch {launch}, element {i}"),
                    ReduceOp::Max,
                    got[i],
                    &terms,
                )?;
            }
            let want: Vec<i64> = (0..n).flat_map(|r| [r as i64; 7]).collect();
            if g.to_vec()? != want {
                return Err(format!(
                    "{algo:?} graph launch {launch}: all_gather {:?}",
                    g.to_vec()?
                )
                .into());
            }
        }
        drop(graph);
    }
    ops.set_algorithm(Algorithm::Auto);
    Ok(())
}

/// Whether `got` holds `want`'s bits everywhere outside `inside` (what a call on that range
/// must leave as it was).
fn untouched<T: bytemuck::Pod>(what: &str, got: &[T], want: &[T], inside: Range<usize>) -> Outcome {
    let bits = |v: &T| bytemuck::bytes_of(v).to_vec();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if !inside.contains(&i) && bits(g) != bits(w) {
            return Err(
                format!("{what}: element {i}, outside the range {inside:?}, changed").into(),
            );
        }
    }
    Ok(())
}

/// Checks `got[at + i]` against the reduction over members of `all[r][from_r + i]` for
/// `i < count`.
fn check_range<T: coll_cases::TestElem>(
    what: &str,
    op: ReduceOp,
    got: &[T],
    at: usize,
    all: &[Vec<T>],
    from: impl Fn(usize) -> usize,
    count: usize,
) -> Outcome {
    let mut terms = vec![<T as bytemuck::Zeroable>::zeroed(); all.len()];
    for i in 0..count {
        for (r, (t, d)) in terms.iter_mut().zip(all).enumerate() {
            *t = d[from(r) + i];
        }
        check_reduced(
            || format!("{what}, element {}", at + i),
            op,
            got[at + i],
            &terms,
        )?;
    }
    Ok(())
}

/// Sub-ranges of larger buffers, each op in one call: the in-place all-reduce of elements
/// 4096..8192 of a 12288-element buffer (every algorithm), an all-reduce between misaligned
/// offsets (2 and 6 bytes past 16-byte boundaries), reduce-scatters and all-gathers from and
/// into ranges (in place: the rank's chunk is found relative to the range). Every element
/// outside the ranges keeps its value: a call that ignored an offset would reduce or write
/// the elements from 0 instead.
fn sub_ranges_in_one_call(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let seed = common::agreed_seed(shmem)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (sum, max) = (ReduceOp::Sum, ReduceOp::Max);

    let (len, range) = (12288, 4096..8192);
    for (k, algo) in EVERY_ALGORITHM.into_iter().enumerate() {
        ops.set_algorithm(algo);
        let s = seed ^ (k as u64) << 48;
        let all: Vec<Vec<f32>> = (0..n).map(|r| data::<f32>(s, r, len)).collect();
        let mut buf = shmem.alloc_from(&all[me])?;
        let part = buf.range_mut(range.clone())?;
        ops.all_reduce_in_place(&stream, Team::WORLD, part, range.len(), sum)?;
        let got = buf.to_vec()?;
        let what = format!("{algo:?} in place on {range:?}");
        untouched(&what, &got, &all[me], range.clone())?;
        check_range(
            &what,
            sum,
            &got,
            range.start,
            &all,
            |_| range.start,
            range.len(),
        )?;

        // Out of place between misaligned offsets of bf16 buffers.
        let count = 1001;
        let all: Vec<Vec<bf16>> = (0..n).map(|r| data::<bf16>(s, r, count + 8)).collect();
        let src = shmem.alloc_from(&all[me])?;
        let poison = vec![<bf16 as coll_cases::TestElem>::poison(); count + 8];
        let mut dst = shmem.alloc_from(&poison)?;
        let (from, to) = (src.range(1..1 + count)?, dst.range_mut(3..3 + count)?);
        ops.all_reduce(&stream, Team::WORLD, from, to, count, sum)?;
        let got = dst.to_vec()?;
        let what = format!("{algo:?} bf16 from 1.. into 3..");
        untouched(&what, &got, &poison, 3..3 + count)?;
        check_range(&what, sum, &got, 3, &all, |_| 1, count)?;
        if !matches!(algo, Algorithm::Lamport) {
            // A reduce-scatter from elements 5.. into elements 2.., and in place on 3..
            let count = 37;
            let all: Vec<Vec<f32>> = (0..n)
                .map(|r| data::<f32>(s ^ 9, r, n * count + 9))
                .collect();
            let src = shmem.alloc_from(&all[me])?;
            let poison = vec![-1.5f32; count + 6];
            let mut dst = shmem.alloc_from(&poison)?;
            let from = src.range(5..5 + n * count)?;
            ops.reduce_scatter(&stream, Team::WORLD, from, dst.range_mut(2..)?, count, max)?;
            let got = dst.to_vec()?;
            let what = format!("{algo:?} reduce_scatter from 5.. into 2..");
            untouched(&what, &got, &poison, 2..2 + count)?;
            check_range(&what, max, &got, 2, &all, |_| 5 + me * count, count)?;

            let mut buf = shmem.alloc_from(&all[me])?;
            let part = buf.range_mut(3..3 + n * count)?;
            ops.reduce_scatter_in_place(&stream, Team::WORLD, part, count, max)?;
            let got = buf.to_vec()?;
            let what = format!("{algo:?} reduce_scatter_in_place on 3..");
            let mine = 3 + me * count..3 + (me + 1) * count;
            untouched(&what, &got, &all[me], mine.clone())?;
            check_range(&what, max, &got, mine.start, &all, |_| mine.start, count)?;
        }
    }
    ops.set_algorithm(Algorithm::Auto);

    // All-gathers: from elements 7.. into elements 1.., and in place on 4..
    let count = 29;
    let all: Vec<Vec<i64>> = (0..n)
        .map(|r| data::<i64>(seed ^ 5, r, n * count + 10))
        .collect();
    let src = shmem.alloc_from(&all[me])?;
    let poison = vec![-7i64; n * count + 5];
    let mut dst = shmem.alloc_from(&poison)?;
    let into = dst.range_mut(1..1 + n * count)?;
    ops.all_gather(&stream, Team::WORLD, src.range(7..7 + count)?, into, count)?;
    let got = dst.to_vec()?;
    untouched("all_gather into 1..", &got, &poison, 1..1 + n * count)?;
    for r in 0..n {
        if got[1 + r * count..][..count] != all[r][7..7 + count] {
            return Err(format!("all_gather into 1..: member {r}'s part differs").into());
        }
    }
    let mut buf = shmem.alloc_from(&all[me])?;
    ops.all_gather_in_place(&stream, Team::WORLD, buf.range_mut(4..)?, count)?;
    let got = buf.to_vec()?;
    untouched(
        "all_gather_in_place on 4..",
        &got,
        &all[me],
        4..4 + n * count,
    )?;
    for (r, theirs) in all.iter().enumerate() {
        let at = 4 + r * count..4 + (r + 1) * count;
        if got[at.clone()] != theirs[at] {
            return Err(format!("all_gather_in_place on 4..: member {r}'s part differs").into());
        }
    }
    Ok(())
}
