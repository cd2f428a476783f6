//! The seed's programs and the runtime's contracts as test cases, on every backend.

#[macro_use]
mod common;

use common::Outcome;
use rshmem::{Error, LaunchConfig, Shmem};
use rshmem_examples_image::{bandwidth, hello, ring as ring_k, IMAGE};

per_backend! {
    hello => [2, 3, 4];
    ring => [2, 3, 4];
    put_bw_moves_exact_bytes => [2];
    alloc_from_is_visible_to_peers_on_return => [2, 3, 4];
    asymmetric_alloc_fails_on_every_pe => [2, 3];
    heap_exhaustion_names_the_fix => [2];
}

fn hello(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&IMAGE)?;
    let len = 1000u32; // not a multiple of the block size
    let mut buf = shmem.alloc_zeroed::<i32>(len as usize)?;
    let mut got = shmem.alloc_zeroed::<i32>(1)?;
    // SAFETY: `buf` holds `len` i32s.
    unsafe {
        module.launch::<hello::hello_fill>(
            LaunchConfig::for_num_elems(len, 128),
            (buf.as_mut_ptr(), len),
        )?
    };
    shmem.barrier_all()?;
    for (index, from) in [(0u32, (me + 1) % n), (len - 1, (me + n - 1) % n)] {
        // SAFETY: `index < len`; `got` holds one i32.
        unsafe {
            module.launch::<hello::hello_read>(
                LaunchConfig::new(1, 1),
                (buf.as_ptr(), index, from as i32, got.as_mut_ptr()),
            )?
        };
        let v = got.to_vec()?[0];
        assert_eq!(
            v,
            from as i32 * 1000 + index as i32,
            "PE {me} reading PE {from}[{index}]"
        );
    }
    shmem.barrier_all()?;
    Ok(())
}

fn ring(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&IMAGE)?;
    let mut dst = shmem.alloc_from(&[-7i32])?;
    shmem.barrier_all()?;
    // SAFETY: one symmetric i32; every PE launches.
    unsafe {
        module.launch::<ring_k::ring>(LaunchConfig::new(1, 1).cooperative(), (dst.as_mut_ptr(),))?
    };
    assert_eq!(dst.to_vec()?[0], ((me + n - 1) % n) as i32);
    shmem.barrier_all()?;
    Ok(())
}

fn put_bw_moves_exact_bytes(shmem: &Shmem) -> Outcome {
    let me = shmem.my_pe();
    let module = shmem.load(&IMAGE)?;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64;
    let mut seed_buf = shmem.alloc_from(&[seed as i32, 0])?;
    // Every PE takes PE 0's seed, with no barrier: `alloc_from` returns once every PE's data
    // is in place (`alloc_from_is_visible_to_peers_on_return` pins that down).
    // SAFETY: two symmetric i32s.
    unsafe {
        module.launch::<hello::hello_read>(
            LaunchConfig::new(1, 1),
            (
                seed_buf.as_ptr(),
                0,
                0,
                seed_buf.as_mut_ptr().wrapping_add(1),
            ),
        )?
    };
    let seed = seed_buf.to_vec()?[1] as u64;
    let data = common::random_u32(10_007, seed); // odd length: not a multiple of any vector width
    let src = shmem.alloc_from(&data)?;
    let poison = vec![0xDEAD_BEEFu32; data.len() + 3];
    let dst = shmem.alloc_from(&poison)?;
    shmem.barrier_all()?;
    let bytes = (data.len() * 4) as u64 - 2; // and not even a whole number of elements
                                             // SAFETY: both buffers hold at least `bytes` bytes; only PE 0 writes, into PE 1's dst.
    unsafe {
        module.launch::<bandwidth::put_bw>(
            LaunchConfig::new(3, 64),
            (
                dst.as_ptr() as *mut u8,
                src.as_ptr() as *const u8,
                bytes,
                2,
                0,
                1,
            ),
        )?
    };
    shmem.barrier_all()?;
    if me == 1 {
        let (got, want, poison) = (bytes_of(&dst.to_vec()?), bytes_of(&data), bytes_of(&poison));
        let b = bytes as usize;
        assert_eq!(&got[..b], &want[..b], "payload");
        assert_eq!(&got[b..], &poison[b..], "bytes past the end were written");
    }
    shmem.barrier_all()?;
    Ok(())
}

/// `alloc_from`'s promise: when it returns, every peer's copy already holds that peer's data,
/// so a kernel may read it at once. Many rounds, so that a copy made after the allocation's
/// barrier (the old behaviour: a race) is caught; each round's values are new.
fn alloc_from_is_visible_to_peers_on_return(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&IMAGE)?;
    let mut got = shmem.alloc_zeroed::<i32>(1)?;
    let len = 37u32;
    for round in 0..100i32 {
        let value = |pe: usize, i: u32| (round << 16) + (pe as i32) * 1000 + i as i32;
        let mine: Vec<i32> = (0..len).map(|i| value(me, i)).collect();
        let buf = shmem.alloc_from(&mine)?;
        let (from, index) = ((me + 1 + round as usize) % n, (round as u32 * 7) % len);
        // SAFETY: `index < len`, `buf` holds `len` i32s on every PE, `got` one i32.
        unsafe {
            module.launch::<hello::hello_read>(
                LaunchConfig::new(1, 1),
                (buf.as_ptr(), index, from as i32, got.as_mut_ptr()),
            )?
        };
        assert_eq!(
            got.to_vec()?[0],
            value(from, index),
            "round {round}: PE {me} read PE {from}[{index}] right after alloc_from"
        );
        // Nobody frees (or reallocates) a buffer a peer is still reading.
        shmem.barrier_all()?;
    }
    Ok(())
}

fn bytes_of(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn asymmetric_alloc_fails_on_every_pe(shmem: &Shmem) -> Outcome {
    let me = shmem.my_pe();
    let err = shmem
        .alloc_zeroed::<u64>(100 + me)
        .expect_err("sizes differ: must fail");
    match &err {
        Error::AsymmetricAlloc { pe, mine, .. } => {
            assert_eq!(*pe, me);
            assert_eq!(*mine, (100 + me) * 8);
        }
        other => panic!("PE {me}: expected AsymmetricAlloc, got {other}"),
    }
    assert!(
        err.to_string()
            .contains("every PE must allocate the same size"),
        "{err}"
    );
    // The heap is still usable after the refused allocation.
    let ok = shmem.alloc_zeroed::<u64>(64)?;
    assert_eq!(ok.to_vec()?, vec![0; 64]);
    shmem.barrier_all()?;
    Ok(())
}

fn heap_exhaustion_names_the_fix(shmem: &Shmem) -> Outcome {
    // More than any heap here: 1 TiB.
    let err = shmem
        .alloc_zeroed::<u8>(1 << 40)
        .expect_err("1 TiB must not fit");
    let msg = err.to_string();
    assert!(msg.contains("1099511627776"), "names the size: {msg}");
    assert!(
        msg.contains("NVSHMEM_SYMMETRIC_SIZE")
            || msg.contains("NVSHMEM_MAX_MEMORY_PER_GPU")
            || msg.contains("RSHMEM_SIM_HEAP"),
        "names the fix: {msg}"
    );
    let ok = shmem.alloc_zeroed::<u8>(4096)?;
    assert_eq!(ok.len(), 4096);
    shmem.barrier_all()?;
    Ok(())
}
