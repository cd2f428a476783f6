//! Streams made by the program (`Shmem::new_stream`): launches and on-stream operations on
//! them, ordering between streams (`Stream::wait_for`), overlap, timing, and failures, on every
//! backend.

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{Backend, LaunchConfig, ReduceOp, Shmem, Team};
use rshmem_api_tests::{basics, streams as k, IMAGE};
use std::time::{Duration, Instant};

per_backend! {
    wait_for_orders_streams => [2];
    streams_run_at_once_on_gpus => [2];
    on_stream_ops_on_made_streams => [2, 3];
    put_signal_delivers_data_and_signal => [2, 3];
    stream_timing_covers_its_work => [2];
    fault_on_a_made_stream_names_the_kernel => [2];
}

/// Elements per buffer: not a multiple of the block size.
const N: u32 = 1000;
const BLOCK: u32 = 128;

/// Long enough that a consumer not ordered after the fill reads the buffer before it is written.
fn fill_delay(shmem: &Shmem) -> Duration {
    match shmem.backend() {
        Backend::Gpu => Duration::from_millis(50),
        Backend::Sim => Duration::from_millis(5),
    }
}

fn fresh(shmem: &Shmem) -> u32 {
    common::random_u32(
        1,
        common::agreed_seed(shmem).unwrap() ^ shmem.my_pe() as u64,
    )[0] | 1
}

/// A slow fill on one stream and a copy on another that waits for it: the copy sees the
/// filled data. Without the wait the copy would run first on a GPU and see zeros.
fn wait_for_orders_streams(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (producer, consumer) = (shmem.new_stream()?, shmem.new_stream()?);
    assert!(!producer.is_pe_stream() && shmem.stream().is_pe_stream());
    let value = fresh(shmem);
    let mut a = shmem.alloc_zeroed::<u32>(N as usize)?;
    let mut b = shmem.alloc_from(&vec![0xA5A5_A5A5u32; N as usize])?;
    let cfg = LaunchConfig::for_num_elems(N, BLOCK);
    let delay = fill_delay(shmem).as_nanos() as u64;
    // SAFETY: `a` and `b` hold N u32s and live until the synchronisation below; only the
    // fill writes `a` and only the copy (ordered after it) reads it.
    unsafe {
        module.launch_on::<k::slow_fill>(&producer, cfg, (a.as_mut_ptr(), N, value, delay))?;
        consumer.wait_for(&producer)?;
        module.launch_on::<k::copy_plus_one>(&consumer, cfg, (a.as_ptr(), b.as_mut_ptr(), N))?;
    }
    consumer.synchronize()?;
    let want: Vec<u32> = (0..N)
        .map(|t| value.wrapping_add(t).wrapping_add(1))
        .collect();
    assert_eq!(
        b.to_vec()?,
        want,
        "the copy ran before the fill it waited for"
    );
    // The PE's own stream orders after a made stream the same way.
    shmem.stream().wait_for(&consumer)?;
    // SAFETY: as above; `b` was written by work the PE's stream now waits for.
    unsafe {
        module.launch::<k::copy_plus_one>(cfg, (b.as_ptr(), a.as_mut_ptr(), N))?;
    }
    let want: Vec<u32> = want.iter().map(|v| v.wrapping_add(1)).collect();
    assert_eq!(a.to_vec()?, want);
    shmem.barrier_all()?;
    Ok(())
}

/// One kernel waits for a flag that a kernel on another stream raises. On GPUs the two run at
/// once and the waiter sees the flag; the simulator runs each stream's work when queued (a
/// schedule GPUs may also pick), so there the waiter times out first. Both are checked.
fn streams_run_at_once_on_gpus(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (waiting, raising) = (shmem.new_stream()?, shmem.new_stream()?);
    let mut flag = shmem.alloc_zeroed::<u32>(1)?;
    let mut result = shmem.alloc_zeroed::<u64>(2)?;
    let timeout = match shmem.backend() {
        Backend::Gpu => Duration::from_secs(10),
        Backend::Sim => Duration::from_millis(20),
    };
    let started = Instant::now();
    // SAFETY: `flag` holds one u32 (read atomically by the waiter, written atomically by the
    // raiser), `result` two u64s; both live until the copies below, which wait for every
    // stream.
    unsafe {
        module.launch_on::<k::await_flag>(
            &waiting,
            LaunchConfig::new(1, 32),
            (
                flag.as_ptr(),
                result.as_mut_ptr(),
                timeout.as_nanos() as u64,
            ),
        )?;
        module.launch_on::<k::raise_flag>(
            &raising,
            LaunchConfig::new(1, 32),
            (flag.as_mut_ptr(),),
        )?;
    }
    shmem.synchronize()?;
    let elapsed = started.elapsed();
    let [verdict, waited_ns] = <[u64; 2]>::try_from(result.to_vec()?).unwrap();
    let waited = Duration::from_nanos(waited_ns);
    match shmem.backend() {
        Backend::Gpu => {
            assert_eq!(
                verdict,
                k::FLAG_SEEN,
                "the waiter timed out after {waited:?}: the two streams did not overlap"
            );
            assert!(
                waited < timeout && elapsed < timeout,
                "{waited:?} {elapsed:?}"
            );
            println!("PE {}: the flag was seen after {waited:?}", shmem.my_pe());
        }
        Backend::Sim => {
            assert_eq!(verdict, k::FLAG_TIMED_OUT, "waited {waited:?}");
            assert!(waited >= timeout, "{waited:?}");
        }
    }
    assert_eq!(flag.to_vec()?, [1]);
    shmem.barrier_all()?;
    Ok(())
}

/// Puts, barriers and collectives queued on made streams, beside the PE's own stream.
fn on_stream_ops_on_made_streams(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (s1, s2) = (shmem.new_stream()?, shmem.new_stream()?);
    let len = 37usize;
    let seed = common::agreed_seed(shmem)?;
    let data = |pe: usize| -> Vec<i64> {
        common::random_u32(len, seed ^ ((pe as u64 + 1) * 0x9E37_79B9))
            .iter()
            .map(|&x| x as i64 - (1 << 31))
            .collect()
    };
    let src = shmem.alloc_from(&data(me))?;
    let inbox = shmem.alloc_from(&vec![-1i64; len])?;
    let all = shmem.alloc_from(&vec![-1i64; len * n])?;
    let sum = shmem.alloc_from(&vec![-1i64; len])?;
    // Every PE's buffers are initialised before any PE writes into a peer's.
    shmem.barrier_all()?;
    // A put to the right neighbour and a barrier on `s1`; an fcollect on `s2` after `s1`'s
    // barrier (collectives over one team must not overlap); a reduction on the PE's stream
    // after both.
    s1.put(&inbox, &src, (me + 1) % n)?;
    s1.barrier_all()?;
    s2.wait_for(&s1)?;
    // Where PEs share a GPU without MPS, NVSHMEM refuses its collectives (rshmem says so
    // before NVSHMEM would end the process): the put and barrier half is still checked. The
    // refusal is decided by the PE's init status, so every PE takes the same branch.
    let collectives = match s2.fcollect(Team::WORLD, &all, &src) {
        Err(rshmem::Error::Unsupported { .. })
            if shmem.device_info().sharing == rshmem::GpuSharing::TimeSliced =>
        {
            eprintln!(
                "PE {me}: NVSHMEM's collectives are refused where PEs share a GPU (limited MPG \
                 mode): fcollect and reduce on made streams need one PE per GPU or MPS"
            );
            false
        }
        other => other.map(|()| true)?,
    };
    if collectives {
        shmem.stream().wait_for(&s2)?;
        shmem.reduce_on_stream(Team::WORLD, ReduceOp::Sum, &sum, &src)?;
    }
    shmem.synchronize()?;
    assert_eq!(
        inbox.to_vec()?,
        data((me + n - 1) % n),
        "put on a made stream"
    );
    if collectives {
        let want_all: Vec<i64> = (0..n).flat_map(data).collect();
        assert_eq!(all.to_vec()?, want_all, "fcollect on a made stream");
        let want_sum: Vec<i64> = (0..len)
            .map(|i| (0..n).map(|pe| data(pe)[i]).sum())
            .collect();
        assert_eq!(sum.to_vec()?, want_sum, "reduce after made streams");
    }
    // A stream belongs to its PE: argument checks still apply on made streams.
    let err = s1.put(&inbox, &src, n).unwrap_err().to_string();
    assert!(
        err.contains(&format!("PE {n} is not a PE of the job")),
        "{err}"
    );
    shmem.barrier_all()?;
    Ok(())
}

/// `Stream::put_signal`: the data and then the signal word reach the right neighbour (and a
/// put-with-signal to this PE itself); a signal range that is not one `u64`, a PE out of range
/// or overlapping ranges on this PE are refused before anything is queued.
fn put_signal_delivers_data_and_signal(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let side = shmem.new_stream()?;
    let len = 53usize;
    let seed = common::agreed_seed(shmem)?;
    let data = |pe: usize| -> Vec<u32> { common::random_u32(len, seed ^ (pe as u64 + 7)) };
    let src = shmem.alloc_from(&data(me))?;
    let inbox = shmem.alloc_from(&vec![0u32; 2 * len])?;
    let flags = shmem.alloc_zeroed::<u64>(2)?;
    shmem.barrier_all()?;
    let value = |pe: usize| seed | 1 << 63 | pe as u64;
    side.put_signal(
        inbox.range(..len)?,
        &src,
        flags.range(..1)?,
        value(me),
        (me + 1) % n,
    )?;
    // To this PE itself, into the other half.
    shmem
        .stream()
        .put_signal(inbox.range(len..)?, &src, flags.range(1..)?, value(me), me)?;
    shmem.synchronize()?;
    shmem.barrier_all()?;
    let left = (me + n - 1) % n;
    let got = inbox.to_vec()?;
    assert_eq!(got[..len], data(left)[..], "the data from PE {left}");
    assert_eq!(got[len..], data(me)[..], "the data from this PE");
    assert_eq!(flags.to_vec()?, vec![value(left), value(me)], "the signals");
    let err = |e: rshmem::Error| e.to_string();
    let e = err(side
        .put_signal(&inbox, &inbox, flags.range(..)?, 1, left)
        .unwrap_err());
    assert!(
        e.contains("exactly one u64") && e.contains("2 elements"),
        "{e}"
    );
    let e = err(side
        .put_signal(inbox.range(..len)?, &src, flags.range(..1)?, 1, n)
        .unwrap_err());
    assert!(e.contains(&format!("PE {n} is not a PE of the job")), "{e}");
    let e = err(side
        .put_signal(
            inbox.range(1..)?,
            inbox.range(..2 * len - 1)?,
            flags.range(..1)?,
            1,
            me,
        )
        .unwrap_err());
    assert!(e.contains("overlap"), "{e}");
    // Nothing was queued by the refused calls.
    shmem.synchronize()?;
    assert_eq!(flags.to_vec()?, vec![value(left), value(me)]);
    shmem.barrier_all()?;
    Ok(())
}

/// `Stream::time` measures the work queued on that stream: at least the fill's delay.
fn stream_timing_covers_its_work(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let stream = shmem.new_stream()?;
    let mut a = shmem.alloc_zeroed::<u32>(N as usize)?;
    let delay = fill_delay(shmem);
    let value = fresh(shmem);
    let took = stream.time(|| {
        // SAFETY: `a` holds N u32s and outlives the timed work, which `time` waits for.
        unsafe {
            module.launch_on::<k::slow_fill>(
                &stream,
                LaunchConfig::for_num_elems(N, BLOCK),
                (a.as_mut_ptr(), N, value, delay.as_nanos() as u64),
            )
        }
    })?;
    // The simulator's wall time also counts starting and scheduling a thread per GPU thread.
    let bound = match shmem.backend() {
        Backend::Gpu => delay * 20,
        Backend::Sim => Duration::from_secs(60),
    };
    assert!(
        took >= delay.mul_f64(0.9) && took < bound,
        "timed {took:?} for a {delay:?} fill"
    );
    assert_eq!(a.to_vec()?[N as usize - 1], value.wrapping_add(N - 1));
    shmem.barrier_all()?;
    Ok(())
}

/// A trap in a kernel on a made stream fails the PE's next synchronisation, naming the kernel
/// and the PE (after a fault the GPU context is unusable, so this case ends there).
fn fault_on_a_made_stream_names_the_kernel(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let stream = shmem.new_stream()?;
    let mut out = shmem.alloc_zeroed::<i32>(1)?;
    shmem.barrier_all()?;
    // SAFETY: `out` holds one i32.
    let launched = unsafe {
        module.launch_on::<basics::checked_div>(
            &stream,
            LaunchConfig::new(1, 32),
            (1, 0, out.as_mut_ptr()),
        )
    };
    common::expect_kernel_failure(shmem, launched, "checked_div");
    Ok(())
}
