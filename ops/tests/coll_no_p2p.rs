//! rshmem's collectives on the simulator without peer mappings (`RSHMEM_SIM_P2P=0`: every
//! peer is reached as across nodes, through NVSHMEM puts and signals): the same matrix as
//! `coll.rs` (every collective × type × size × team × in/out of place, and NaN, ±0 and ±∞) on
//! the put fallbacks, and forced peer-mapped algorithms refused by name. Its own test binary,
//! because the setting is an environment variable of the process.

#[path = "coll_cases/mod.rs"]
mod coll_cases;
#[path = "../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{Backend, ReduceOp, Shmem, Team};
use rshmem_ops::{Algorithm, Ops};

fn no_p2p(npes: usize, name: &str, case: fn(&Shmem) -> Outcome) {
    // Every test of this binary sets the same value, so the tests may run in parallel.
    std::env::set_var("RSHMEM_SIM_P2P", "0");
    common::run_case(Backend::Sim, npes, name, case);
}

fn matrix(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    // Auto and OneShot take the push slots (puts); the peer-mapped algorithms are refused.
    coll_cases::each_type(shmem, &ops, &[Algorithm::Auto])?;
    coll_cases::each_float_special(shmem, &ops, &[Algorithm::Auto, Algorithm::OneShot])?;
    let x = shmem.alloc_from(&[1.0f32; 8])?;
    let mut y = shmem.alloc_zeroed::<f32>(8)?;
    for algo in [Algorithm::TwoShot, Algorithm::Lamport] {
        ops.set_algorithm(algo);
        let e = ops
            .all_reduce(&shmem.stream(), Team::WORLD, &x, &mut y, 8, ReduceOp::Sum)
            .expect_err("a peer-mapped algorithm without peer mappings");
        assert!(
            e.to_string().contains("not reached through a peer mapping"),
            "{e}"
        );
    }
    Ok(())
}

#[test]
fn every_collective_without_peer_mappings_2pe() {
    no_p2p(2, "every_collective_without_peer_mappings_2pe", matrix);
}

#[test]
fn every_collective_without_peer_mappings_3pe() {
    no_p2p(3, "every_collective_without_peer_mappings_3pe", matrix);
}
