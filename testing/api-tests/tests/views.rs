//! Typed views (`SymSlice`) from the host's `SymBuffer::slice()`, on every backend.

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{LaunchConfig, Shmem};
use rshmem_api_tests::{views, IMAGE};

per_backend! {
    exchange_through_views => [2, 3];
    view_bounds_are_checked => [2];
}

fn exchange_through_views(shmem: &Shmem) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&IMAGE)?;
    let len = 201usize; // two blocks of 128, the second partial
    let seed = common::agreed_seed(shmem)?;
    // Every PE's data differs; each PE knows its left neighbour's from the agreed seed.
    let data_of =
        |pe: usize| common::random_u32(len, seed.wrapping_mul(31).wrapping_add(pe as u64));
    let data = shmem.alloc_from(&data_of(me))?;
    let out = shmem.alloc_from(&vec![u32::MAX; len])?;
    let copy = shmem.alloc_from(&vec![u32::MAX; len])?;
    let hits = shmem.alloc_zeroed::<u64>(1)?;
    shmem.barrier_all()?;
    let cfg = LaunchConfig::for_num_elems(len as u32, 128);
    // SAFETY: the views come from live symmetric buffers.
    unsafe {
        module.launch::<views::view_exchange>(
            cfg,
            (data.slice(), out.slice(), copy.slice(), hits.slice()),
        )?
    };
    shmem.barrier_all()?;
    let left = (me + n - 1) % n;
    let expected = data_of(left);
    assert_eq!(out.to_vec()?, expected, "PE {me}: out");
    let got = copy.to_vec()?;
    assert_eq!(&got[..128], &expected[..128], "PE {me}: block put");
    assert!(
        got[128..].iter().all(|&x| x == u32::MAX),
        "PE {me}: the block put wrote past 128"
    );
    assert_eq!(hits.to_vec()?[0], len as u64);
    shmem.barrier_all()?;
    Ok(())
}

fn view_bounds_are_checked(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let data = shmem.alloc_zeroed::<u32>(10)?;
    // SAFETY: the kernel checks the index itself: that is what is tested.
    let err = unsafe {
        module.launch::<views::view_out_of_bounds>(LaunchConfig::new(1, 1), (data.slice(), 10))
    }
    .and_then(|()| shmem.synchronize())
    .expect_err("index 10 of 10 must fail");
    assert!(err.to_string().contains("view_out_of_bounds"), "{err}");
    Ok(())
}
