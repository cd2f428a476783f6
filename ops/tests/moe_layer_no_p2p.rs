//! The fused MoE layer's cases of `moe_layer.rs` on the simulator without peer mappings
//! (`RSHMEM_SIM_P2P=0`: every other rank reached as across nodes): rows and counts by puts,
//! the gate/up GEMM's waits NVSHMEM's (`moe_gate_up90_unmapped`), the down GEMM's rows kept
//! and put by `moe_layer_push`. Its own test binary, because the setting is an environment
//! variable of the process.

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "moe_cases/mod.rs"]
mod moe_cases;

use common::Outcome;
use moe_cases::layer::{run_layer, LayerCase, Run};
use moe_cases::Draw;
use rshmem::{Backend, Shmem};
use rshmem_ops::{MoeLayerConfig, Ops};

fn no_p2p(npes: usize, name: &str, case: fn(&Shmem) -> Outcome) {
    // Every test of this binary sets the same value, so the tests may run in parallel.
    std::env::set_var("RSHMEM_SIM_P2P", "0");
    common::run_case(Backend::Sim, npes, name, case);
}

fn random_routings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = LayerCase {
        config: MoeLayerConfig {
            experts: 2 * n,
            top_k: 3,
            hidden: 40,
            intermediate: 16,
            max_tokens: 9,
        },
        tokens: |pe, _| [9, 0, 4][pe % 3],
        draw: Draw::Random { none_in: 4 },
    };
    // Two calls on one buffer set on 2 PEs (the flags and rows reused across calls), one on 3.
    let run = Run {
        rounds: if n == 2 { 2 } else { 1 },
        ..Run::default()
    };
    run_layer(shmem, &ops, &case, run)
}

#[test]
fn random_routings_2pe() {
    no_p2p(2, "random_routings_2pe", random_routings);
}

#[test]
fn random_routings_3pe() {
    no_p2p(3, "random_routings_3pe", random_routings);
}
