//! Teams and on-stream operations, on every backend: strided and 2-D splits (membership,
//! numbering, translation, destruction), kernels over split teams (conformance row 15:
//! alltoall over a strided team; reductions, fcollect, broadcast and a team barrier at every
//! scope), host puts/gets/barriers/collectives on the PE's stream against host references
//! computed from fresh random data, and invalid arguments failing alike on every PE.

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{
    Backend, CollElem, Error, GpuSharing, LaunchConfig, ReduceOp, Shmem, SymBuffer, Team,
    TeamHandle,
};
use rshmem_device_tests::teams::{self, IMAGE};
use std::fmt::Debug;

per_backend! {
    strided_split_membership => [2, 3, 4];
    strided_team_alltoall_and_reduce => [2, 3, 4];
    two_d_split_shapes_and_team_barriers => [2, 3, 4];
    put_get_on_stream => [2, 3, 4];
    collectives_on_stream => [2, 3, 4];
    invalid_arguments_fail_on_every_pe => [2, 3];
}

/// One block, cooperative: the team kernels call collectives.
const ONE_BLOCK: LaunchConfig = LaunchConfig::new(1, 64).cooperative();

/// The scopes the team kernels call at: thread 0, warp 0, the whole block.
const SCOPES: [u32; 3] = [0, 1, 2];

/// Whether host-side team splits and collectives run here. They do everywhere but on GPUs in
/// NVSHMEM's limited multi-process-per-GPU mode (several PEs per GPU without MPS), where
/// rshmem must refuse them with `Error::Unsupported` instead of letting NVSHMEM end the
/// process: checked here, and then the caller stops.
fn host_collectives(shmem: &Shmem) -> Result<bool, rshmem::BoxError> {
    match shmem.team_split_strided(Team::WORLD, 0, 1, shmem.n_pes()) {
        Ok(all) => {
            assert_eq!(all.map(|t| t.n_pes()), Some(shmem.n_pes()));
            Ok(true)
        }
        Err(Error::Unsupported { call, reason })
            if shmem.device_info().sharing == GpuSharing::TimeSliced =>
        {
            assert_eq!(call, "team_split_strided");
            assert!(reason.contains("MPS"), "{reason}");
            let (src, dst) = (
                shmem.alloc_zeroed::<i32>(1)?,
                shmem.alloc_zeroed::<i32>(64)?,
            );
            let refused = shmem.fcollect_on_stream(Team::WORLD, dst.range(..shmem.n_pes())?, &src);
            assert!(
                matches!(refused, Err(Error::Unsupported { .. })),
                "{refused:?}"
            );
            eprintln!(
                "PE {}: limited MPG mode: host-side team calls are refused (checked); the rest \
                 of this test needs one PE per GPU or MPS",
                shmem.my_pe()
            );
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// `len` fresh random values of PE `pe` for purpose `salt`, the same on every PE.
fn data<T>(seed: u64, pe: usize, salt: u64, len: usize, from: impl Fn(u32) -> T) -> Vec<T> {
    let mixed = seed ^ (pe as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt << 48;
    common::random_u32(len, mixed)
        .into_iter()
        .map(from)
        .collect()
}

/// The world PEs of a team's members, in team order, and this PE's number among them.
struct Members {
    world: Vec<usize>,
    rank: usize,
}

impl Members {
    fn of(shmem: &Shmem, team: Team) -> Members {
        let size = shmem.team_n_pes(team).expect("a team this PE holds");
        Members {
            world: (0..size)
                .map(|i| {
                    shmem
                        .team_translate_pe(team, i, Team::WORLD)
                        .expect("in WORLD")
                })
                .collect(),
            rank: shmem.team_my_pe(team).expect("a member"),
        }
    }
}

/// Evens (`0, 2, ...`) and odds (`1, 3, ...`) of WORLD: two strided splits, each collective
/// over WORLD; returns the one this PE is in. Disjoint teams, so their collectives run
/// side by side.
fn parity_team(shmem: &Shmem) -> Result<TeamHandle<'_>, Error> {
    let n = shmem.n_pes();
    let evens = shmem.team_split_strided(Team::WORLD, 0, 2, n.div_ceil(2))?;
    let odds = shmem.team_split_strided(Team::WORLD, 1, 2, n / 2)?;
    assert!(evens.is_some() != odds.is_some(), "in exactly one");
    Ok(evens.or(odds).expect("a member of one"))
}

fn strided_split_membership(shmem: &Shmem) -> Outcome {
    if !host_collectives(shmem)? {
        return Ok(());
    }
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&IMAGE)?;
    let mut info = shmem.alloc_from(&[i32::MIN; 5])?;
    let size = n.div_ceil(2);
    let evens = shmem.team_split_strided(Team::WORLD, 0, 2, size)?;
    assert_eq!(evens.is_some(), me % 2 == 0, "PE {me}");
    // On the other PEs the device sees `Team::INVALID`, as a split returns there.
    let team = evens.as_ref().map_or(Team::INVALID, |t| t.team());
    // SAFETY: `info` holds 5 i32s; `team` is held by this PE or INVALID.
    unsafe {
        module.launch::<teams::team_info>(LaunchConfig::new(1, 1), (team, info.as_mut_ptr()))?
    };
    let seen = info.to_vec()?;
    match &evens {
        Some(t) => {
            assert_eq!((t.my_pe(), t.n_pes()), (me / 2, size));
            for i in 0..size {
                assert_eq!(t.translate_pe(i, Team::WORLD), Some(2 * i));
            }
            assert_eq!(t.translate_pe(size, Team::WORLD), None);
            assert_eq!(shmem.team_translate_pe(Team::WORLD, me, **t), Some(me / 2));
            let right = (me + 1) % n;
            let right_rank = (right % 2 == 0).then_some(right / 2);
            assert_eq!(shmem.team_translate_pe(Team::WORLD, right, **t), right_rank);
            assert_eq!(
                (shmem.team_my_pe(**t), shmem.team_n_pes(**t)),
                (Some(me / 2), Some(size))
            );
            let last = 2 * (size - 1);
            let expect = [me / 2, size, 0, last, me / 2].map(|v| v as i32);
            assert_eq!(seen, expect, "device view of the evens on PE {me}");
            // A split of a split (collective over the evens): the evens but the first,
            // numbered from 0.
            if size > 1 {
                match (shmem.team_split_strided(**t, 1, 1, size - 1)?, me) {
                    (None, 0) => {}
                    (Some(r), _) if me > 0 => {
                        assert_eq!((r.my_pe(), r.n_pes()), (me / 2 - 1, size - 1));
                        assert_eq!(r.translate_pe(0, Team::WORLD), Some(2));
                        assert_eq!(r.translate_pe(0, **t), Some(1));
                    }
                    (got, _) => panic!("PE {me}: split of the evens gave {got:?}"),
                }
            }
        }
        None => assert_eq!(seen, [-1; 5], "device view of Team::INVALID on PE {me}"),
    }
    let raw = team;
    drop(evens);
    assert_eq!(
        shmem.team_my_pe(raw),
        None,
        "a dropped team is no longer held"
    );
    // Predefined teams: one node, one shared-memory domain here.
    for t in [Team::WORLD, Team::SHARED, Team::NODE] {
        assert_eq!(
            (shmem.team_my_pe(t), shmem.team_n_pes(t)),
            (Some(me), Some(n))
        );
    }
    assert_eq!(shmem.team_n_pes(Team::INVALID), None);
    assert_eq!(shmem.team_my_pe(Team::from_raw(4242)), None);
    // More splits than NVSHMEM holds teams at once (32): each is destroyed when dropped.
    for round in 0..40 {
        let single = shmem.team_split_strided(Team::WORLD, round % n, 7, 1)?;
        assert_eq!(
            single.map(|t| (t.my_pe(), t.n_pes())),
            (me == round % n).then_some((0, 1))
        );
    }
    shmem.barrier_all()?;
    Ok(())
}

fn strided_team_alltoall_and_reduce(shmem: &Shmem) -> Outcome {
    if !host_collectives(shmem)? {
        return Ok(());
    }
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&IMAGE)?;
    let seed = common::agreed_seed(shmem)?;
    // The evens or the odds (strided, disjoint: they run side by side), then a split team of
    // every PE (the one with several members on 2 PEs).
    let parity = parity_team(shmem)?;
    let everyone = shmem.team_split_strided(Team::WORLD, 0, 1, n)?;
    let everyone = everyone.expect("every PE is a member");
    let blk = 7usize;
    let mut src = shmem.alloc_zeroed::<i32>(blk * 4)?;
    let mut dst = shmem.alloc_zeroed::<i32>(blk * 4)?;
    let mut src64 = shmem.alloc_zeroed::<i64>(5)?;
    let (mut sum, mut max) = (shmem.alloc_zeroed::<i64>(5)?, shmem.alloc_zeroed::<i64>(5)?);
    let mut src_u = shmem.alloc_zeroed::<u64>(3)?;
    let (mut all, mut bcast) = (
        shmem.alloc_zeroed::<u64>(3 * 4)?,
        shmem.alloc_zeroed::<u64>(3)?,
    );
    let mut status = shmem.alloc_from(&[i32::MIN])?;
    let check_status = |status: &SymBuffer<'_, i32>, what: &str| -> Outcome {
        assert_eq!(
            status.to_vec()?,
            [0],
            "{what} returned an error code on PE {me}"
        );
        Ok(())
    };
    for (scope, (t, team)) in SCOPES.into_iter().flat_map(|s| {
        [*parity, *everyone]
            .into_iter()
            .enumerate()
            .map(move |t| (s, t))
    }) {
        let m = Members::of(shmem, team);
        let size = m.world.len();
        let salt = u64::from(scope) * 16 + 64 * t as u64;
        // Conformance row 15: every block of a member's source holds its world number.
        src.copy_from_host(&vec![me as i32; blk * 4])?;
        dst.copy_from_host(&vec![-1; blk * 4])?;
        shmem.barrier_all()?;
        let args = (
            team,
            dst.as_mut_ptr(),
            src.as_ptr(),
            blk as u32,
            scope,
            status.as_mut_ptr(),
        );
        // SAFETY: `src` and `dst` hold `blk * size` i32s (and more); every member launches.
        unsafe { module.launch::<teams::team_alltoall>(ONE_BLOCK, args)? };
        check_status(&status, "alltoall")?;
        let got = dst.to_vec()?;
        for (i, &world) in m.world.iter().enumerate() {
            assert_eq!(
                got[i * blk..(i + 1) * blk],
                vec![world as i32; blk],
                "team {t}, scope {scope}, PE {me}, block {i}"
            );
        }
        assert_eq!(
            got[size * blk..],
            vec![-1; (4 - size) * blk],
            "written past the team's blocks"
        );
        shmem.barrier_all()?;

        // Fresh random blocks: block `rank` of member `i`'s source lands in block `i`.
        let src_of = |pe: usize| data(seed, pe, salt + 1, blk * size, |x| x as i32);
        src.copy_from_host(&[src_of(me), vec![0; blk * (4 - size)]].concat())?;
        shmem.barrier_all()?;
        // SAFETY: as above.
        unsafe { module.launch::<teams::team_alltoall>(ONE_BLOCK, args)? };
        check_status(&status, "alltoall")?;
        let got = dst.to_vec()?;
        for (i, &world) in m.world.iter().enumerate() {
            let want = &src_of(world)[m.rank * blk..(m.rank + 1) * blk];
            assert_eq!(
                &got[i * blk..(i + 1) * blk],
                want,
                "team {t}, scope {scope}, PE {me}, block {i}"
            );
        }
        shmem.barrier_all()?;

        // Sum (wrapping) and maximum of every member's 5 random i64s.
        let v_of = |pe: usize| data(seed, pe, salt + 2, 5, |x| (x as i64 - (1 << 31)) << 20);
        src64.copy_from_host(&v_of(me))?;
        shmem.barrier_all()?;
        let args = (
            team,
            sum.as_mut_ptr(),
            max.as_mut_ptr(),
            src64.as_ptr(),
            5,
            scope,
            status.as_mut_ptr(),
        );
        // SAFETY: all three buffers hold 5 i64s; every member launches.
        unsafe { module.launch::<teams::team_reduce>(ONE_BLOCK, args)? };
        check_status(&status, "reduce")?;
        let vals: Vec<Vec<i64>> = m.world.iter().map(|&p| v_of(p)).collect();
        let want_sum: Vec<i64> = (0..5)
            .map(|k| vals.iter().fold(0i64, |a, v| a.wrapping_add(v[k])))
            .collect();
        let want_max: Vec<i64> = (0..5)
            .map(|k| vals.iter().map(|v| v[k]).max().unwrap())
            .collect();
        assert_eq!(
            sum.to_vec()?,
            want_sum,
            "sum, team {t}, scope {scope}, PE {me}"
        );
        assert_eq!(
            max.to_vec()?,
            want_max,
            "max, team {t}, scope {scope}, PE {me}"
        );
        shmem.barrier_all()?;

        // fcollect of 3 u64s, and broadcast from the last member.
        let u_of = |pe: usize| data(seed, pe, salt + 3, 3, |x| u64::from(x) << 17 | 5);
        src_u.copy_from_host(&u_of(me))?;
        all.copy_from_host(&[u64::MAX; 12])?;
        shmem.barrier_all()?;
        let args = (
            team,
            all.as_mut_ptr(),
            bcast.as_mut_ptr(),
            src_u.as_ptr(),
            3,
            scope,
            status.as_mut_ptr(),
        );
        // SAFETY: `all` holds 3 * 4 u64s, `bcast` and `src_u` 3; every member launches.
        unsafe { module.launch::<teams::team_fcollect_broadcast>(ONE_BLOCK, args)? };
        check_status(&status, "fcollect/broadcast")?;
        let want_all: Vec<u64> = m.world.iter().flat_map(|&p| u_of(p)).collect();
        assert_eq!(
            all.to_vec()?[..3 * size],
            want_all,
            "fcollect, team {t}, scope {scope}, PE {me}"
        );
        assert_eq!(
            bcast.to_vec()?,
            u_of(m.world[size - 1]),
            "broadcast, team {t}, scope {scope}, PE {me}"
        );
        shmem.barrier_all()?;
    }
    Ok(())
}

fn two_d_split_shapes_and_team_barriers(shmem: &Shmem) -> Outcome {
    if !host_collectives(shmem)? {
        return Ok(());
    }
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&IMAGE)?;
    let mut slots = shmem.alloc_zeroed::<i32>(n)?;
    let mut status = shmem.alloc_from(&[i32::MIN])?;
    for xrange in 1..=n + 1 {
        let x = xrange.min(n);
        let (row, column) = shmem.team_split_2d(Team::WORLD, xrange)?;
        let (r, c) = (me / x, me % x);
        let row_len = x.min(n - r * x);
        assert_eq!(
            (row.my_pe(), row.n_pes()),
            (c, row_len),
            "row, xrange {xrange}, PE {me}"
        );
        assert_eq!(
            (column.my_pe(), column.n_pes()),
            (r, (n - c).div_ceil(x)),
            "column, xrange {xrange}, PE {me}"
        );
        for i in 0..row.n_pes() {
            assert_eq!(row.translate_pe(i, Team::WORLD), Some(r * x + i));
        }
        for j in 0..column.n_pes() {
            assert_eq!(column.translate_pe(j, Team::WORLD), Some(c + j * x));
        }
        assert_eq!(
            row.translate_pe(c, *column),
            Some(r),
            "this PE, from its row to its column"
        );
        shmem.barrier_on_stream(*row)?;
        shmem.barrier_on_stream(*column)?;
        // Team barriers in kernels, over every row (then every column) at once.
        for (team, scope) in [(&row, 2), (&column, 0), (&row, 1)] {
            slots.copy_from_host(&vec![-1; n])?;
            shmem.barrier_all()?;
            // SAFETY: `slots` holds n >= team size i32s; every member launches.
            unsafe {
                module.launch::<teams::team_barrier_exchange>(
                    ONE_BLOCK,
                    (**team, slots.as_mut_ptr(), scope, status.as_mut_ptr()),
                )?
            };
            assert_eq!(status.to_vec()?, [0]);
            let members: Vec<i32> = (0..team.n_pes())
                .map(|i| team.translate_pe(i, Team::WORLD).unwrap() as i32)
                .collect();
            assert_eq!(
                slots.to_vec()?[..members.len()],
                members,
                "xrange {xrange}, scope {scope}, PE {me}"
            );
            shmem.barrier_all()?;
        }
    }
    Ok(())
}

fn put_get_on_stream(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let seed = common::agreed_seed(shmem)?;
    let (left, right) = ((me + n - 1) % n, (me + 1) % n);
    let len = 1001;
    let data_of = |pe: usize| data(seed, pe, 4, len, |x| x as u16 as f32 - 3e4);
    let src = shmem.alloc_from(&data_of(me))?;
    let poison = vec![f32::NAN; len + 3];
    let dst = shmem.alloc_from(&poison)?;
    let got = shmem.alloc_zeroed::<f32>(len - 10)?;
    shmem.barrier_all()?;
    // Elements 5.. of the source into elements 2.. of the right neighbour's destination.
    shmem.put_on_stream(dst.range(2..len - 3)?, src.range(5..)?, right)?;
    shmem.barrier_all_on_stream()?;
    let d = dst.to_vec()?;
    let from_left = data_of(left);
    assert_eq!(
        d[2..len - 3],
        from_left[5..],
        "put from PE {left} to PE {me}"
    );
    assert!(
        d[..2].iter().chain(&d[len - 3..]).all(|v| v.is_nan()),
        "written outside the slice on PE {me}"
    );
    // Elements 3..len-7 of the right neighbour's source into `got`.
    shmem.get_on_stream(&got, src.range(3..len - 7)?, right)?;
    shmem.synchronize()?;
    assert_eq!(
        got.to_vec()?,
        data_of(right)[3..len - 7],
        "get from PE {right} on PE {me}"
    );

    let invalid = |r: rshmem::Result<()>, call: &str, why: &str| match r {
        Err(Error::InvalidArgument { call: c, message }) => {
            assert!(c == call && message.contains(why), "{c}: {message}")
        }
        other => panic!("PE {me}: expected {call} to refuse ({why}), got {other:?}"),
    };
    let out_of_range = src.range(len - 2..len + 1).map(drop);
    invalid(
        out_of_range,
        "SymBuffer::range",
        &format!("the buffer's {len} elements"),
    );
    invalid(
        shmem.put_on_stream(&dst, &src, right),
        "put_on_stream",
        &format!("holds {} elements, the source {len}", len + 3),
    );
    invalid(
        shmem.get_on_stream(&got, src.range(..len - 10)?, n),
        "get_on_stream",
        &format!("PE {n} is not a PE"),
    );
    invalid(
        shmem.put_on_stream(src.range(..10)?, src.range(5..15)?, me),
        "put_on_stream",
        "overlap",
    );
    shmem.barrier_all()?;
    Ok(())
}

/// Reduces every member's `len` values from `gen` over `team` with `op`, into a fresh buffer,
/// and compares with `combine` folded over the members on the host.
fn check_reduce<T: CollElem + PartialEq + Debug>(
    shmem: &Shmem,
    team: Team,
    op: ReduceOp,
    len: usize,
    gen: &dyn Fn(usize) -> Vec<T>,
    combine: fn(T, T) -> T,
) -> Outcome {
    let m = Members::of(shmem, team);
    let src = shmem.alloc_from(&gen(shmem.my_pe()))?;
    let dst = shmem.alloc_zeroed::<T>(len)?;
    shmem.barrier_all()?;
    shmem.reduce_on_stream(team, op, &dst, &src)?;
    let vals: Vec<Vec<T>> = m.world.iter().map(|&p| gen(p)).collect();
    let want: Vec<T> = (0..len)
        .map(|k| vals[1..].iter().fold(vals[0][k], |a, v| combine(a, v[k])))
        .collect();
    assert_eq!(
        dst.to_vec()?,
        want,
        "{op:?} of {} on PE {}",
        std::any::type_name::<T>(),
        shmem.my_pe()
    );
    shmem.barrier_all()?;
    Ok(())
}

fn collectives_on_stream(shmem: &Shmem) -> Outcome {
    if !host_collectives(shmem)? {
        return Ok(());
    }
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let seed = common::agreed_seed(shmem)?;
    let parity = parity_team(shmem)?;
    let everyone = shmem.team_split_strided(Team::WORLD, 0, 1, n)?;
    let everyone = everyone.expect("every PE is a member");
    // Teams of different sizes run side by side, but allocations are symmetric: buffers are
    // sized for the largest team (n PEs) and the collectives take slices of them.
    let padded = |v: Vec<i64>, len: usize| [v, vec![0; len]].concat()[..len].to_vec();
    for (t, team) in [Team::WORLD, *everyone, *parity].into_iter().enumerate() {
        let m = Members::of(shmem, team);
        let size = m.world.len();
        let salt = 100 * t as u64;
        let gen_i32 = |pe: usize| data(seed, pe, salt + 1, 13, |x| x as i32);

        // fcollect: 13 i32s per member.
        let src = shmem.alloc_from(&gen_i32(me))?;
        let all = shmem.alloc_zeroed::<i32>(13 * n)?;
        shmem.barrier_all()?;
        shmem.fcollect_on_stream(team, all.range(..13 * size)?, &src)?;
        let want: Vec<i32> = m.world.iter().flat_map(|&p| gen_i32(p)).collect();
        let got = all.to_vec()?;
        assert_eq!(got[..13 * size], want, "fcollect, team {t}, PE {me}");
        assert!(
            got[13 * size..].iter().all(|&v| v == 0),
            "written past the team's blocks"
        );
        shmem.barrier_all()?;

        // broadcast of 9 u64s from the last member, into a slice of a larger buffer.
        let gen_u64 = |pe: usize| data(seed, pe, salt + 2, 9, |x| u64::from(x) << 31 | 1);
        let src = shmem.alloc_from(&gen_u64(me))?;
        let dst = shmem.alloc_from(&[7u64; 11])?;
        shmem.barrier_all()?;
        shmem.broadcast_on_stream(team, dst.range(1..10)?, &src, size - 1)?;
        let want = [vec![7], gen_u64(m.world[size - 1]), vec![7]].concat();
        assert_eq!(dst.to_vec()?, want, "broadcast, team {t}, PE {me}");
        shmem.barrier_all()?;

        // alltoall: blocks of 5 i64s.
        let gen_i64 = |pe: usize| data(seed, pe, salt + 3, 5 * size, |x| i64::from(x as i32) * 3);
        let src = shmem.alloc_from(&padded(gen_i64(me), 5 * n))?;
        let dst = shmem.alloc_zeroed::<i64>(5 * n)?;
        shmem.barrier_all()?;
        shmem.alltoall_on_stream(team, dst.range(..5 * size)?, src.range(..5 * size)?)?;
        let want: Vec<i64> = m
            .world
            .iter()
            .flat_map(|&p| gen_i64(p)[5 * m.rank..5 * (m.rank + 1)].to_vec())
            .collect();
        assert_eq!(
            dst.to_vec()?[..5 * size],
            want,
            "alltoall, team {t}, PE {me}"
        );
        shmem.barrier_all()?;

        // Reductions: integers wrap; floats hold small integers, so every order of summation
        // gives the same result.
        let small = |x: u32| (x % 2001) as f32 - 1000.0;
        let g_i32 = |pe: usize| data(seed, pe, salt + 4, 17, |x| x as i32);
        let g_u64 = |pe: usize| {
            data(seed, pe, salt + 5, 17, |x| {
                u64::from(x) << 33 | u64::from(x)
            })
        };
        let g_f32 = |pe: usize| data(seed, pe, salt + 6, 17, small);
        let g_f64 = |pe: usize| data(seed, pe, salt + 7, 17, |x| f64::from(small(x)) / 4.0);
        check_reduce(shmem, team, ReduceOp::Sum, 17, &g_i32, i32::wrapping_add)?;
        check_reduce(shmem, team, ReduceOp::Min, 17, &g_i32, std::cmp::min)?;
        check_reduce(shmem, team, ReduceOp::Max, 17, &g_u64, std::cmp::max)?;
        check_reduce(shmem, team, ReduceOp::Sum, 17, &g_u64, u64::wrapping_add)?;
        check_reduce(shmem, team, ReduceOp::Xor, 17, &g_u64, |a, b| a ^ b)?;
        check_reduce(shmem, team, ReduceOp::Sum, 17, &g_f32, |a, b| a + b)?;
        check_reduce(shmem, team, ReduceOp::Max, 17, &g_f32, f32::max)?;
        check_reduce(shmem, team, ReduceOp::Min, 17, &g_f64, f64::min)?;
        check_reduce(shmem, team, ReduceOp::Sum, 17, &g_f64, |a, b| a + b)?;

        // reducescatter: member `rank` keeps the sum of block `rank` (6 i64s).
        let g = |pe: usize| data(seed, pe, salt + 8, 6 * size, |x| i64::from(x) - (1 << 31));
        let src = shmem.alloc_from(&padded(g(me), 6 * n))?;
        let dst = shmem.alloc_zeroed::<i64>(6)?;
        shmem.barrier_all()?;
        shmem.reducescatter_on_stream(team, ReduceOp::Sum, &dst, src.range(..6 * size)?)?;
        let want: Vec<i64> = (6 * m.rank..6 * (m.rank + 1))
            .map(|k| m.world.iter().fold(0i64, |a, &p| a.wrapping_add(g(p)[k])))
            .collect();
        assert_eq!(dst.to_vec()?, want, "reducescatter, team {t}, PE {me}");
        shmem.barrier_on_stream(team)?;
        shmem.barrier_all()?;
    }
    Ok(())
}

fn invalid_arguments_fail_on_every_pe(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let refused = |r: Result<(), Error>, call: &str, why: &str| match r {
        Err(Error::InvalidArgument { call: c, message }) => {
            assert!(
                c == call && message.contains(why),
                "PE {me}, {c}: {message}"
            )
        }
        other => panic!("PE {me}: expected {call} to refuse ({why}), got {other:?}"),
    };
    let split = |start, stride, size| {
        shmem
            .team_split_strided(Team::WORLD, start, stride, size)
            .map(drop)
    };
    let over = format!("over a {n}-PE parent: ");
    refused(
        split(0, 1, 0),
        "team_split_strided",
        &format!("{over}size 0"),
    );
    refused(
        split(0, 0, 2),
        "team_split_strided",
        &format!("{over}stride 0"),
    );
    refused(
        split(n, 1, 1),
        "team_split_strided",
        &format!("start {n} is not a PE of the parent (0..{n})"),
    );
    refused(
        split(1, 1, n),
        "team_split_strided",
        &format!("its last PE, start + stride × (size − 1) = {n}"),
    );
    refused(
        shmem.team_split_2d(Team::WORLD, 0).map(drop),
        "team_split_2d",
        "xrange 0",
    );
    let invalid_parent = shmem.team_split_strided(Team::INVALID, 0, 1, 1).map(drop);
    refused(
        invalid_parent,
        "team_split_strided",
        "Team::INVALID is not a team",
    );
    let unknown = shmem.team_split_2d(Team::from_raw(4242), 1).map(drop);
    refused(
        unknown,
        "team_split_2d",
        "team handle 4242 is not held by this PE",
    );

    let src = shmem.alloc_zeroed::<f32>(6)?;
    let dst = shmem.alloc_zeroed::<f32>(6 * n + 1)?;
    let w = Team::WORLD;
    refused(
        shmem.fcollect_on_stream(w, &dst, &src),
        "fcollect_on_stream",
        &format!("holds {} elements, but", 6 * n + 1),
    );
    refused(
        shmem.alltoall_on_stream(w, dst.range(..6)?, src.range(..5)?),
        "alltoall_on_stream",
        "not a whole number of blocks",
    );
    refused(
        shmem.broadcast_on_stream(w, dst.range(..6)?, &src, n),
        "broadcast_on_stream",
        &format!("root {n} is not a PE of the team"),
    );
    refused(
        shmem.reduce_on_stream(w, ReduceOp::Xor, dst.range(..6)?, &src),
        "reduce_on_stream",
        "bitwise reduction",
    );
    refused(
        shmem.reduce_on_stream(w, ReduceOp::Sum, dst.range(..6)?, dst.range(3..9)?),
        "reduce_on_stream",
        "overlap",
    );
    refused(
        shmem.barrier_on_stream(Team::INVALID),
        "barrier_on_stream",
        "Team::INVALID",
    );

    // Nothing was queued or left half-done: valid calls still work, on every PE.
    if host_collectives(shmem)? {
        let all = shmem
            .team_split_strided(Team::WORLD, 0, 1, n)?
            .expect("every PE");
        shmem.reduce_on_stream(*all, ReduceOp::Sum, dst.range(..6)?, &src)?;
        assert_eq!(dst.to_vec()?[..6], [0.0; 6]);
    }
    shmem.barrier_all()?;
    Ok(())
}

/// Simulator only (on GPUs, NVSHMEM cannot report these): members that pass different
/// split arguments all fail, naming each other's arguments.
#[test]
fn sim_split_arguments_must_agree() {
    common::run_case(Backend::Sim, 3, "sim_split_arguments_must_agree", |shmem| {
        let me = shmem.my_pe();
        let size = if me == 1 { 1 } else { 2 };
        match shmem.team_split_strided(Team::WORLD, 0, 1, size) {
            Err(Error::Collective { op, pe, message }) => {
                assert_eq!((op, pe), ("team_split_strided", me));
                assert!(
                    message.contains("must pass the same arguments"),
                    "{message}"
                );
                let other = if me == 1 {
                    "PE 0 passed (start 0, stride 1, size 2)"
                } else {
                    "PE 1 passed (start 0, stride 1, size 1)"
                };
                assert!(message.contains(other), "PE {me}: {message}");
            }
            other => panic!("PE {me}: expected a disagreement, got {other:?}"),
        }
        // The job goes on: the next split agrees.
        assert!(shmem.team_split_strided(Team::WORLD, 0, 1, 3)?.is_some());
        Ok(())
    });
}

/// Simulator only: a kernel given a team its PE dropped, or one it is not a member of,
/// fails naming the team (on a GPU, NVSHMEM would read a stale or foreign team slot).
#[test]
fn sim_kernels_refuse_teams_they_do_not_hold() {
    common::run_case(
        Backend::Sim,
        2,
        "sim_kernels_refuse_teams_they_do_not_hold",
        |shmem| {
            let me = shmem.my_pe();
            let module = shmem.load(&IMAGE)?;
            let mut out = shmem.alloc_zeroed::<i32>(5)?;
            let mut status = shmem.alloc_zeroed::<i32>(1)?;
            // PE 0 alone: the first split team of the job, the same handle on every PE here.
            let zero = shmem.team_split_strided(Team::WORLD, 0, 1, 1)?;
            let handle = Team::from_raw(rshmem::device::sim::FIRST_SPLIT_TEAM);
            assert_eq!(zero.as_ref().map(|t| t.team()), (me == 0).then_some(handle));
            drop(zero);
            let (kernel, message) = if me == 0 {
                // SAFETY: `out` holds 5 i32s.
                let r = unsafe {
                    module.launch::<teams::team_info>(
                        LaunchConfig::new(1, 1),
                        (handle, out.as_mut_ptr()),
                    )
                };
                (
                    "team_info",
                    r.expect_err("the team was destroyed on this PE")
                        .to_string(),
                )
            } else {
                let args = (
                    handle,
                    out.as_mut_ptr(),
                    out.as_ptr(),
                    1,
                    0,
                    status.as_mut_ptr(),
                );
                // SAFETY: `out` holds 5 i32s, `status` one.
                let r = unsafe {
                    module.launch::<teams::team_alltoall>(LaunchConfig::new(1, 32), args)
                };
                (
                    "team_alltoall",
                    r.expect_err("PE 1 is not a member").to_string(),
                )
            };
            let why = if me == 0 {
                "PE 0 destroyed team 6"
            } else {
                "PE 1 is not a member of team 6"
            };
            assert!(
                message.contains(kernel) && message.contains(why),
                "PE {me}: {message}"
            );
            Ok(())
        },
    );
}
