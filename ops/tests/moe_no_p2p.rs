//! The MoE cases of `moe.rs` and `moe_ll.rs` (FP8 rows: elements and scales both by puts;
//! in the low-latency mode, scales packed into the FP8 grouped GEMM's layout) on the simulator
//! without peer mappings (`RSHMEM_SIM_P2P=0`:
//! every rank reached as across nodes, through NVSHMEM puts and signals). Its own test
//! binary, because the setting is an environment variable of the process.

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "moe_cases/mod.rs"]
mod moe_cases;

use common::Outcome;
use moe_cases::{Case, Draw};
use rshmem::{Backend, Shmem};
use rshmem_ops::{MoeConfig, MoePayload, Ops};

fn no_p2p(npes: usize, name: &str, case: fn(&Shmem) -> Outcome) {
    // Every test of this binary sets the same value, so the tests may run in parallel.
    std::env::set_var("RSHMEM_SIM_P2P", "0");
    common::run_case(Backend::Sim, npes, name, case);
}

fn random_routings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: MoeConfig {
            experts: 3 * n,
            top_k: 3,
            hidden: 136,
            max_tokens: 21,
            align: 4,
            payload: MoePayload::Fp8E4m3,
        },
        tokens: |pe, _| [21, 0, 8][pe % 3],
        draw: Draw::Random { none_in: 4 },
    };
    moe_cases::run(shmem, &ops, &case, 2)
}

fn ll_fp8_random_routings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: MoeConfig {
            experts: 2 * n,
            top_k: 3,
            hidden: 136,
            max_tokens: 9,
            align: 1,
            payload: MoePayload::Fp8E4m3,
        },
        tokens: |pe, _| [9, 4][pe % 2],
        draw: Draw::Random { none_in: 4 },
    };
    moe_cases::ll::run(shmem, &ops, &case, moe_cases::ll::Ll::rounds(2))
}

#[test]
fn ll_fp8_random_routings_2pe() {
    no_p2p(2, "ll_fp8_random_routings_2pe", ll_fp8_random_routings);
}

#[test]
fn random_routings_2pe() {
    no_p2p(2, "random_routings_2pe", random_routings);
}

#[test]
fn random_routings_3pe() {
    no_p2p(3, "random_routings_3pe", random_routings);
}
