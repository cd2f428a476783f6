//! Graphs (`Stream::capture`, `Graph::launch`): recorded chains of dependent launches replayed
//! many times, forks and joins across streams, on-stream operations (puts, barriers,
//! collectives) in graphs, the calls a capture refuses, captures that fail or panic, and what a
//! graph keeps alive — on every backend.

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{Backend, Error, GpuSharing, Graph, LaunchConfig, ReduceOp, Shmem, Stream, Team};
use rshmem_api_tests::{basics, streams as k, IMAGE};
use rshmem_examples_image::{ring, IMAGE as EXAMPLES};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

per_backend! {
    graph_replays_dependent_launches => [2];
    graph_forks_and_joins_streams => [2];
    graph_records_on_stream_operations => [2, 3];
    graph_records_cooperative_kernels => [2];
    capture_refuses_what_it_cannot_record => [2];
    capture_refuses_an_unjoined_fork => [2];
    capture_ends_when_its_closure_fails_or_panics => [2];
    graph_keeps_what_its_work_needs => [2];
    fault_in_a_graph_names_its_kernel => [2];
}

/// Elements per buffer: not a multiple of the block size.
const N: u32 = 1000;
const BLOCK: u32 = 128;
const CFG: LaunchConfig = LaunchConfig::for_num_elems(N, BLOCK);

/// How many times each graph is launched.
fn launches(shmem: &Shmem) -> usize {
    match shmem.backend() {
        Backend::Gpu => 20,
        Backend::Sim => 4,
    }
}

/// A delay long enough that a kernel not ordered after a slow one runs first on a GPU.
fn slow_ns(shmem: &Shmem) -> u64 {
    match shmem.backend() {
        Backend::Gpu => 2_000_000,
        Backend::Sim => 0,
    }
}

/// Fresh values for purpose `salt` on PE `pe`, the same on every PE for the same `seed`.
fn data(seed: u64, pe: usize, salt: u64, len: usize) -> Vec<u32> {
    common::random_u32(
        len,
        seed ^ (pe as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt << 40,
    )
}

/// `x * mul + add`, wrapping, as `mul_add` computes it.
fn mul_add(x: u32, mul: u32, add: u32) -> u32 {
    x.wrapping_mul(mul).wrapping_add(add)
}

/// A chain of three launches, each reading what the one before wrote, recorded once and
/// launched many times: the result is that many applications of the chain to fresh data, and
/// the capture itself runs nothing.
fn graph_replays_dependent_launches(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let stream = shmem.new_stream()?;
    let seed = common::agreed_seed(shmem)?;
    let x0 = data(seed, shmem.my_pe(), 1, N as usize);
    let [mul, add] = [data(seed, 0, 2, 1)[0] | 1, data(seed, 0, 3, 1)[0]];
    let mut a = shmem.alloc_from(&x0)?;
    let mut b = shmem.alloc_zeroed::<u32>(N as usize)?;
    let mut recorded_mul = mul;
    let graph = stream.capture(|| {
        assert!(stream.is_capturing() && !shmem.stream().is_capturing());
        // SAFETY: `a` and `b` hold N u32s and outlive the graph; the launches are ordered on
        // one stream.
        unsafe {
            module.launch_on::<k::copy_plus_one>(&stream, CFG, (a.as_ptr(), b.as_mut_ptr(), N))?;
            module.launch_on::<k::mul_add>(
                &stream,
                CFG,
                (b.as_mut_ptr(), N, recorded_mul, add, 0),
            )?;
            module.launch_on::<k::copy_plus_one>(&stream, CFG, (b.as_ptr(), a.as_mut_ptr(), N))
        }
    })?;
    // The graph keeps the values the arguments had when they were recorded.
    recorded_mul = recorded_mul.wrapping_add(2);
    assert_ne!(recorded_mul, mul);
    assert!(!stream.is_capturing());
    assert_eq!(graph.operations(), 3);
    assert_eq!(a.to_vec()?, x0, "the capture ran what it recorded");
    assert_eq!(b.to_vec()?, vec![0; N as usize]);
    let times = launches(shmem);
    for _ in 0..times - 1 {
        // SAFETY: `a` and `b` are alive and hold N u32s.
        unsafe { graph.launch(&stream)? };
    }
    // Once more on another stream of the PE, ordered after the others.
    shmem.stream().wait_for(&stream)?;
    // SAFETY: as above.
    unsafe { graph.launch(&shmem.stream())? };
    let once = |x: u32| mul_add(x.wrapping_add(1), mul, add).wrapping_add(1);
    let want: Vec<u32> = x0
        .iter()
        .map(|&x| (0..times).fold(x, |x, _| once(x)))
        .collect();
    assert_eq!(a.to_vec()?, want, "{times} launches of the chain");
    shmem.barrier_all()?;
    Ok(())
}

/// A capture that forks to a second stream and joins back: the forked stream's work runs after
/// the work it forked after (a slow kernel on GPUs, so that a missing dependency shows), beside
/// independent work on the capturing stream, and the work after the join sees the fork's.
fn graph_forks_and_joins_streams(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (main, side) = (shmem.new_stream()?, shmem.new_stream()?);
    let seed = common::agreed_seed(shmem)?;
    let me = shmem.my_pe();
    let (a0, c0) = (data(seed, me, 4, N as usize), data(seed, me, 5, N as usize));
    let mut a = shmem.alloc_from(&a0)?;
    let mut b = shmem.alloc_zeroed::<u32>(N as usize)?;
    let mut c = shmem.alloc_from(&c0)?;
    let mut d = shmem.alloc_zeroed::<u32>(N as usize)?;
    let slow = slow_ns(shmem);
    let graph = main.capture(|| {
        // SAFETY: every buffer holds N u32s and outlives the graph; `a` is written on `main`
        // before the fork and only read on `side` after it; `c` only on `main`; `b` written
        // on `side` and read on `main` after the join.
        unsafe {
            module.launch_on::<k::mul_add>(&main, CFG, (a.as_mut_ptr(), N, 3, 1, slow))?;
            assert!(!side.is_capturing() && !side.is_recorded()?);
            assert!(
                main.is_recorded()?,
                "the device records the capturing stream too"
            );
            side.wait_for(&main)?; // the fork
            assert!(side.is_capturing() && side.is_recorded()?);
            module.launch_on::<k::copy_plus_one>(&side, CFG, (a.as_ptr(), b.as_mut_ptr(), N))?;
            module.launch_on::<k::mul_add>(&main, CFG, (c.as_mut_ptr(), N, 5, 7, 0))?;
            main.wait_for(&side)?; // the join
            module.launch_on::<k::copy_plus_one>(&main, CFG, (b.as_ptr(), d.as_mut_ptr(), N))
        }
    })?;
    assert!(!side.is_capturing() && !side.is_recorded()? && !main.is_recorded()?);
    assert_eq!(graph.operations(), 4);
    let times = launches(shmem);
    for _ in 0..times {
        // SAFETY: the buffers are alive.
        unsafe { graph.launch(&main)? };
    }
    let iterate = |x: u32, mul, add| (0..times).fold(x, |x, _| mul_add(x, mul, add));
    let a_want: Vec<u32> = a0.iter().map(|&x| iterate(x, 3, 1)).collect();
    let b_want: Vec<u32> = a_want.iter().map(|x| x.wrapping_add(1)).collect();
    let c_want: Vec<u32> = c0.iter().map(|&x| iterate(x, 5, 7)).collect();
    let d_want: Vec<u32> = a_want.iter().map(|x| x.wrapping_add(2)).collect();
    assert_eq!(a.to_vec()?, a_want, "before the fork");
    assert_eq!(
        b.to_vec()?,
        b_want,
        "on the forked stream, after the slow kernel"
    );
    assert_eq!(c.to_vec()?, c_want, "beside the fork");
    assert_eq!(d.to_vec()?, d_want, "after the join");
    // Both streams run their own work again.
    // SAFETY: `b` and `d` hold N u32s; `side`'s copy is waited for before the read.
    unsafe {
        module.launch_on::<k::copy_plus_one>(&side, CFG, (d.as_ptr(), b.as_mut_ptr(), N))?;
    }
    side.synchronize()?;
    let b_again: Vec<u32> = d_want.iter().map(|x| x.wrapping_add(1)).collect();
    assert_eq!(b.to_vec()?, b_again);
    shmem.barrier_all()?;
    Ok(())
}

/// A put to the right neighbour, a barrier, a kernel on what arrived and a reduction, recorded
/// once and launched with fresh data each time: the graph reads the buffers as they are at each
/// launch. On GPUs in NVSHMEM's limited multi-process-per-GPU mode the recorded barrier and the
/// reduction are refused (checked), and the puts are recorded alone, with host barriers
/// between graphs.
fn graph_records_on_stream_operations(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&IMAGE)?;
    let stream = shmem.new_stream()?;
    let seed = common::agreed_seed(shmem)?;
    let len = N as usize;
    let mut src = shmem.alloc_zeroed::<u32>(len)?;
    let inbox = shmem.alloc_zeroed::<u32>(len)?;
    let mut out = shmem.alloc_zeroed::<u32>(len)?;
    let sum = shmem.alloc_zeroed::<i64>(len)?;
    let mut wide = shmem.alloc_zeroed::<i64>(len)?;
    // Every PE issues each NVSHMEM collective once outside a capture first (NVSHMEM loads its
    // kernels at their first use); refused in limited MPG mode, where the graph records puts
    // only.
    let collectives = match shmem.reduce_on_stream(Team::WORLD, ReduceOp::Sum, &sum, &wide) {
        Ok(()) => true,
        Err(Error::Unsupported { reason, .. })
            if shmem.device_info().sharing == GpuSharing::TimeSliced =>
        {
            assert!(reason.contains("multi-process-per-GPU"), "{reason}");
            false
        }
        Err(e) => return Err(e.into()),
    };
    shmem.barrier_all_on_stream()?;
    shmem.barrier_all()?;
    let right = (me + 1) % n;
    let full = if collectives {
        Some(stream.capture(|| {
            stream.put(&inbox, &src, right)?;
            stream.barrier_all()?;
            // SAFETY: `inbox` and `out` hold N u32s and outlive the graph.
            unsafe {
                module.launch_on::<k::copy_plus_one>(
                    &stream,
                    CFG,
                    (inbox.as_ptr(), out.as_mut_ptr(), N),
                )?;
            }
            stream.reduce(Team::WORLD, ReduceOp::Sum, &sum, &wide)
        })?)
    } else {
        // The recorded barrier is refused, and the capture goes on (and ends) cleanly.
        let graph = stream.capture(|| {
            let refused = stream.barrier_all().unwrap_err();
            assert!(matches!(refused, Error::Unsupported { .. }), "{refused}");
            assert!(refused.to_string().contains("graph"), "{refused}");
            Ok(())
        })?;
        assert_eq!(graph.operations(), 0);
        None
    };
    // Limited MPG: the put and the kernel, in two graphs with a host barrier between.
    let (put_only, copy_only) = match full {
        Some(_) => (None, None),
        None => (
            Some(stream.capture(|| stream.put(&inbox, &src, right))?),
            Some(stream.capture(|| {
                // SAFETY: as above.
                unsafe {
                    module.launch_on::<k::copy_plus_one>(
                        &stream,
                        CFG,
                        (inbox.as_ptr(), out.as_mut_ptr(), N),
                    )
                }
            })?),
        ),
    };
    if let Some(full) = &full {
        assert_eq!(full.operations(), 4);
    }
    let left = (me + n - 1) % n;
    for round in 0..launches(shmem) as u64 {
        let mine = data(seed, me, 10 + round, len);
        src.copy_from_host(&mine)?;
        let values: Vec<i64> = mine.iter().map(|&v| v as i64 - (1 << 31)).collect();
        wide.copy_from_host(&values)?;
        // Every PE's data is in place, and every PE is done reading last round's results.
        shmem.barrier_all()?;
        // SAFETY: every buffer is alive; every PE launches the same graphs in the same order.
        unsafe {
            match (&full, &put_only, &copy_only) {
                (Some(full), _, _) => full.launch(&stream)?,
                (None, Some(put), Some(copy)) => {
                    put.launch(&stream)?;
                    shmem.barrier_all()?;
                    copy.launch(&stream)?;
                }
                _ => unreachable!(),
            }
        }
        stream.synchronize()?;
        let from_left = data(seed, left, 10 + round, len);
        let want: Vec<u32> = from_left.iter().map(|v| v.wrapping_add(1)).collect();
        assert_eq!(
            out.to_vec()?,
            want,
            "round {round}: PE {left}'s data, plus one"
        );
        if collectives {
            let want: Vec<i64> = (0..len)
                .map(|i| {
                    (0..n)
                        .map(|pe| data(seed, pe, 10 + round, len)[i] as i64 - (1 << 31))
                        .sum()
                })
                .collect();
            assert_eq!(sum.to_vec()?, want, "round {round}: the recorded reduction");
        }
        shmem.barrier_all()?;
    }
    Ok(())
}

/// A cooperative kernel that puts to a peer and meets the other PEs in a device-side barrier
/// (`ring`), recorded and launched again after each reset.
fn graph_records_cooperative_kernels(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&EXAMPLES)?;
    let stream = shmem.new_stream()?;
    let mut dst = shmem.alloc_from(&[-1i32])?;
    let graph = stream.capture(|| {
        // SAFETY: one symmetric i32; every PE launches the graph, so the collective kernel.
        unsafe {
            module.launch_on::<ring::ring>(
                &stream,
                LaunchConfig::new(1, 1).cooperative(),
                (dst.as_mut_ptr(),),
            )
        }
    })?;
    for _ in 0..launches(shmem).min(5) {
        dst.copy_from_host(&[-1])?;
        // No PE puts into a peer's `dst` before the peer has reset it.
        shmem.barrier_all()?;
        // SAFETY: `dst` is alive; every PE launches the graph.
        unsafe { graph.launch(&stream)? };
        assert_eq!(dst.to_vec()?, [((me + n - 1) % n) as i32]);
        shmem.barrier_all()?;
    }
    Ok(())
}

/// Asserts that `result` is the capture's refusal of `call`.
fn refused<T>(result: rshmem::Result<T>, call: &str) {
    match result {
        Err(Error::Capture { call: c, message }) => {
            assert_eq!(c, call, "{message}");
            assert!(!message.is_empty());
        }
        Err(other) => panic!("{call} during a capture: expected a refusal, got {other}"),
        Ok(_) => panic!("{call} during a capture: expected a refusal, it ran"),
    }
}

/// Every call that waits for the PE's streams, copies to or from the host, allocates, loads,
/// splits teams, nests a capture or makes a recording stream wait for outside work is refused
/// during a capture, naming itself; the capture goes on and records what was queued, and the
/// streams work as before afterwards.
fn capture_refuses_what_it_cannot_record(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (stream, outside) = (shmem.new_stream()?, shmem.new_stream()?);
    let seed = common::agreed_seed(shmem)?;
    let x0 = data(seed, shmem.my_pe(), 20, N as usize);
    let mut a = shmem.alloc_from(&x0)?;
    let empty = stream.capture(|| Ok(()))?;
    assert_eq!(empty.operations(), 0);
    let graph = stream.capture(|| {
        refused(a.to_vec(), "SymBuffer::to_vec");
        refused(a.copy_from_host(&x0), "SymBuffer::copy_from_host");
        refused(shmem.alloc_zeroed::<u32>(4), "Shmem::alloc");
        refused(shmem.alloc_from(&[1u8]), "Shmem::alloc");
        refused(shmem.load(&IMAGE), "Shmem::load");
        refused(shmem.synchronize(), "Shmem::synchronize");
        refused(shmem.barrier_all(), "Shmem::barrier_all");
        refused(stream.synchronize(), "Stream::synchronize");
        refused(stream.time(|| Ok(())), "Stream::time");
        refused(
            shmem.team_split_strided(Team::WORLD, 0, 1, shmem.n_pes()),
            "team_split_strided",
        );
        refused(shmem.team_split_2d(Team::WORLD, 1), "team_split_2d");
        refused(stream.capture(|| Ok(())), "Stream::capture");
        refused(outside.capture(|| Ok(())), "Stream::capture");
        refused(stream.wait_for(&outside), "Stream::wait_for");
        refused(outside.keep_with_graph(1u8), "Stream::keep_with_graph");
        // SAFETY: the empty graph touches nothing.
        refused(unsafe { empty.launch(&stream) }, "Graph::launch");
        // What does not record works as usual.
        assert!(!outside.is_capturing());
        outside.synchronize()?;
        // SAFETY: as above.
        unsafe { empty.launch(&outside)? };
        // SAFETY: `a` holds N u32s and outlives the graph.
        unsafe { module.launch_on::<k::mul_add>(&stream, CFG, (a.as_mut_ptr(), N, 3, 0, 0)) }
    })?;
    assert_eq!(graph.operations(), 1, "only the launch was recorded");
    assert!(!stream.is_capturing());
    assert_eq!(a.to_vec()?, x0, "nothing ran during the capture");
    // SAFETY: `a` is alive.
    unsafe { graph.launch(&stream)? };
    let want: Vec<u32> = x0.iter().map(|&x| x.wrapping_mul(3)).collect();
    assert_eq!(a.to_vec()?, want);
    // The streams time, synchronise and order as before.
    stream.time(|| Ok(()))?;
    stream.wait_for(&outside)?;
    shmem.barrier_all()?;
    Ok(())
}

/// A fork that is not joined back ends the capture with an error naming the fix; both streams
/// run their own work again, and nothing recorded ran.
fn capture_refuses_an_unjoined_fork(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (main, side) = (shmem.new_stream()?, shmem.new_stream()?);
    let seed = common::agreed_seed(shmem)?;
    let x0 = data(seed, shmem.my_pe(), 30, N as usize);
    let mut a = shmem.alloc_from(&x0)?;
    let outcome = main.capture(|| {
        side.wait_for(&main)?;
        // SAFETY: `a` holds N u32s; this launch is never run (the capture fails).
        unsafe { module.launch_on::<k::mul_add>(&side, CFG, (a.as_mut_ptr(), N, 3, 0, 0)) }
    });
    match outcome {
        Err(Error::Capture { call, message }) => {
            assert_eq!(call, "Stream::capture");
            assert!(
                message.contains("not joined back") && message.contains("wait_for"),
                "{message}"
            );
        }
        other => panic!("an unjoined fork: expected a refusal, got {other:?}"),
    }
    assert!(!main.is_capturing() && !side.is_capturing());
    // A fork dropped inside the closure, unjoined: refused the same way.
    let outcome = main.capture(|| {
        let gone = shmem.new_stream()?;
        gone.wait_for(&main)?;
        // SAFETY: as above; never run.
        unsafe { module.launch_on::<k::mul_add>(&gone, CFG, (a.as_mut_ptr(), N, 3, 0, 0)) }
    });
    let err = outcome.expect_err("an unjoined, dropped fork").to_string();
    assert!(err.contains("not joined back"), "{err}");
    assert_eq!(a.to_vec()?, x0, "the recorded launch ran");
    // SAFETY: as above; waited for below.
    unsafe { module.launch_on::<k::mul_add>(&side, CFG, (a.as_mut_ptr(), N, 3, 0, 0))? };
    side.synchronize()?;
    let want: Vec<u32> = x0.iter().map(|&x| x.wrapping_mul(3)).collect();
    assert_eq!(a.to_vec()?, want);
    shmem.barrier_all()?;
    Ok(())
}

/// A closure that returns an error, or panics (after forking a stream), ends the capture: the
/// error (or panic) reaches the caller, nothing recorded ran, and the streams run work and
/// capture again.
fn capture_ends_when_its_closure_fails_or_panics(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (stream, side) = (shmem.new_stream()?, shmem.new_stream()?);
    let seed = common::agreed_seed(shmem)?;
    let x0 = data(seed, shmem.my_pe(), 40, N as usize);
    let mut a = shmem.alloc_from(&x0)?;
    let ptr = a.as_mut_ptr();
    let record = |stream: &Stream<'_>| {
        // SAFETY: `a` holds N u32s, is alive whenever this launch (or a graph that recorded
        // it) runs, and is waited for before it is read.
        unsafe { module.launch_on::<k::mul_add>(stream, CFG, (ptr, N, 3, 0, 0)) }
    };
    let failed = stream.capture(|| {
        record(&stream)?;
        // An empty grid: refused by the launch, and the closure gives up.
        // SAFETY: never launched.
        unsafe {
            module.launch_on::<k::mul_add>(&stream, LaunchConfig::new(0, 32), (ptr, N, 1, 0, 0))
        }
    });
    assert!(
        matches!(failed, Err(Error::Launch { .. })),
        "the closure's error: {failed:?}"
    );
    assert!(!stream.is_capturing());
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        stream.capture(|| {
            record(&stream)?;
            side.wait_for(&stream)?;
            record(&side)?;
            panic!("a panic inside the capture (expected by the test)");
        })
    }));
    let payload = panicked.expect_err("the panic reaches the caller");
    assert!(payload
        .downcast_ref::<&str>()
        .is_some_and(|m| m.contains("inside the capture")));
    assert!(!stream.is_capturing() && !side.is_capturing());
    assert_eq!(a.to_vec()?, x0, "recorded launches ran");
    // The streams run work, and capture, as before.
    record(&side)?;
    side.synchronize()?;
    let graph = stream.capture(|| record(&stream))?;
    // SAFETY: `a` is alive.
    unsafe { graph.launch(&stream)? };
    let want: Vec<u32> = x0.iter().map(|&x| x.wrapping_mul(9)).collect();
    assert_eq!(a.to_vec()?, want);
    shmem.barrier_all()?;
    Ok(())
}

/// A graph keeps the modules it launches loaded and what was handed to `keep_with_graph`
/// alive, and refuses to launch once a split team its collectives use was dropped.
fn graph_keeps_what_its_work_needs(shmem: &Shmem) -> Outcome {
    let stream = shmem.new_stream()?;
    let seed = common::agreed_seed(shmem)?;
    let x0 = data(seed, shmem.my_pe(), 50, N as usize);
    let mut a = shmem.alloc_from(&x0)?;
    let token = Arc::new(());
    let graph: Graph<'_> = {
        let module = shmem.load(&IMAGE)?;
        stream.capture(|| {
            stream.keep_with_graph(token.clone())?;
            // SAFETY: `a` holds N u32s and outlives the graph.
            unsafe { module.launch_on::<k::mul_add>(&stream, CFG, (a.as_mut_ptr(), N, 5, 1, 0)) }
        })?
        // The module is dropped here.
    };
    assert_eq!(Arc::strong_count(&token), 2, "the graph holds the token");
    for _ in 0..2 {
        // SAFETY: `a` is alive; the module's code is kept by the graph.
        unsafe { graph.launch(&stream)? };
    }
    let want: Vec<u32> = x0
        .iter()
        .map(|&x| mul_add(mul_add(x, 5, 1), 5, 1))
        .collect();
    assert_eq!(a.to_vec()?, want);
    drop(graph);
    assert_eq!(Arc::strong_count(&token), 1, "dropped with the graph");

    // A team the graph's collectives use must outlive its launches. Splits need NVSHMEM's
    // host collectives (not in limited multi-process-per-GPU mode).
    let team = match shmem.team_split_strided(Team::WORLD, 0, 1, shmem.n_pes()) {
        Ok(team) => team.expect("every PE is in the team"),
        Err(Error::Unsupported { .. }) if shmem.device_info().sharing == GpuSharing::TimeSliced => {
            eprintln!(
                "PE {}: limited MPG mode: no team splits; the team part needs one PE per GPU or MPS",
                shmem.my_pe()
            );
            shmem.barrier_all()?;
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let handle = team.team();
    stream.barrier(handle)?; // NVSHMEM's team barrier kernel, loaded outside the capture
    let graph = stream.capture(|| stream.barrier(handle))?;
    // SAFETY: the graph uses no buffer; every PE launches it.
    unsafe { graph.launch(&stream)? };
    stream.synchronize()?;
    shmem.barrier_all()?;
    drop(team);
    // SAFETY: as above (refused before anything is queued).
    let err = unsafe { graph.launch(&stream) }.unwrap_err().to_string();
    assert!(
        err.contains("Graph::launch") && err.contains("TeamHandle was dropped"),
        "{err}"
    );
    shmem.barrier_all()?;
    Ok(())
}

/// A kernel that traps inside a graph fails the graph's launch (the simulator) or the PE's
/// next synchronisation (GPUs), naming the kernel and the PE; the same kernel with valid
/// arguments ran in a graph before. After a fault the GPU context is unusable: the case ends.
fn fault_in_a_graph_names_its_kernel(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let stream = shmem.new_stream()?;
    let mut out = shmem.alloc_zeroed::<i32>(1)?;
    shmem.barrier_all()?;
    let mut divide = |a: i32, b: i32| {
        stream.capture(|| {
            // SAFETY: `out` holds one i32 and outlives the graphs.
            unsafe {
                module.launch_on::<basics::checked_div>(
                    &stream,
                    LaunchConfig::new(1, 32),
                    (a, b, out.as_mut_ptr()),
                )
            }
        })
    };
    let (fine, trap) = (divide(56, 7)?, divide(1, 0)?);
    // SAFETY: `out` is alive.
    unsafe { fine.launch(&stream)? };
    stream.synchronize()?;
    assert_eq!(out.to_vec()?, [8]);
    // SAFETY: as above.
    let launched = unsafe { trap.launch(&stream) };
    common::expect_kernel_failure(shmem, launched, "checked_div");
    Ok(())
}
