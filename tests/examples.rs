//! Every example runs on the CPU simulator and prints what it should. `cargo test` builds the
//! examples next to this test binary (`target/<profile>/examples/`).

use common::{example, run_example_sim as run_sim};
use std::process::Command;

mod common;

#[test]
fn hello_symmetric_reads_the_neighbours_value() {
    let out = run_sim("hello_symmetric", 2, &[]);
    assert!(out.contains("PE 0: read 1000 from PE 1"), "{out}");
    assert!(out.contains("PE 1: read 0 from PE 0"), "{out}");
    let out = run_sim("hello_symmetric", 4, &[]);
    assert!(out.contains("PE 3: read 0 from PE 0"), "{out}");
    assert!(out.contains("PE 2: read 3000 from PE 3"), "{out}");
}

#[test]
fn ring_passes_ids_to_the_right() {
    let out = run_sim("ring", 3, &[]);
    for (pe, left) in [(0, 2), (1, 0), (2, 1)] {
        assert!(
            out.contains(&format!("PE {pe}: received {left} from PE {left}")),
            "{out}"
        );
    }
}

#[test]
fn gemm_checks_odd_shapes() {
    let out = run_sim("gemm", 1, &[]);
    for shape in [
        "1x1x8 B NK bf16 -> f32: ok",
        "130x258x72 B NK bf16 -> bf16: ok",
        "198x72x56 grouped (4 groups) B KN bf16 -> f32: ok",
        "FP8 e4m3 67x130x272 per-tensor scales -> bf16: ok",
        "FP8 e4m3 67x130x272 block scales -> bf16: ok",
        "FP8 e4m3 198x72x144 grouped (4 groups), block scales -> bf16: ok",
    ] {
        assert!(out.contains(shape), "{out}");
    }
    assert!(out.contains("GEMMs checked"), "{out}");
}

#[test]
fn all_reduce_checks_every_algorithm() {
    for npes in [2, 3] {
        let out = run_sim("all_reduce", npes, &[]);
        for algo in ["Auto", "Lamport", "OneShot", "TwoShot"] {
            assert!(out.contains(&format!("| {algo} | 4099 | 8198 |")), "{out}");
        }
        assert!(
            out.contains("all_reduce_rmsnorm 5 x 1003 bf16: ok"),
            "{out}"
        );
        assert!(
            out.contains("all_reduce results checked on every PE"),
            "{out}"
        );
    }
}

#[test]
fn tp_mlp_checks_both_layers_on_2_and_4_pes() {
    for npes in [2, 4] {
        let out = run_sim("tp_mlp", npes, &[]);
        for pe in 0..npes {
            let line = out
                .lines()
                .find(|l| l.contains(&format!("PE {pe}: ")) && l.contains("MLP over"))
                .unwrap_or_else(|| panic!("PE {pe} printed no result:\n{out}"));
            assert!(
                line.contains("layer 1 ok")
                    && line.contains("GELU ok")
                    && line.contains("layer 2 ok"),
                "{out}"
            );
        }
    }
    // A shape the PEs cannot split is refused with the reason.
    let out = Command::new(example("tp_mlp"))
        .args(["--m", "81"])
        .env("RSHMEM_BACKEND", "sim")
        .env("RSHMEM_NPES", "2")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("m = 81") && text.contains("divisible by the 2 PEs"),
        "{text}"
    );
    // PEs that cannot map each other's memory (as across nodes): the call's barrier says so.
    let out = Command::new(example("tp_mlp"))
        .env("RSHMEM_BACKEND", "sim")
        .env("RSHMEM_NPES", "2")
        .env("RSHMEM_SIM_P2P", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = common::output_text(&out);
    assert!(
        text.contains("need every PE of the team mapped") && text.contains("tp_barrier"),
        "{text}"
    );
}

#[test]
fn put_bandwidth_checks_its_data() {
    let out = run_sim(
        "put_bandwidth",
        2,
        &["--ctas", "2", "--threads", "32", "--sizes", "1000,4099"],
    );
    assert!(
        out.contains("BW,2,1000,") && out.contains("BW,2,4099,"),
        "{out}"
    );
    assert!(out.contains("data was checked"), "{out}");
}

#[test]
fn put_bandwidth_rejects_bad_arguments() {
    let out = Command::new(example("put_bandwidth"))
        .args(["--frobnicate"])
        .env("RSHMEM_BACKEND", "sim")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown argument \"--frobnicate\""));
}

#[test]
fn symmetric_queue_example_runs_the_seed_and_a_pipeline() {
    for npes in [2, 3] {
        let out = run_sim("symmetric_queue", npes, &[]);
        assert!(out.contains("PE 1: popped 42"), "{out}");
        assert!(out.contains("pipeline: checked"), "{out}");
    }
}

#[test]
fn queue_bench_example_prints_checked_rows() {
    let out = run_sim("queue_bench", 2, &["--ctas", "1,2", "--items", "64"]);
    for kind in [
        "QB,queue_warp,8,",
        "QB,queue_thread,1024,",
        "QB,queue_coop_warp,1024,",
        "QB,queue_coop_block,64,",
        "QB,put_warp,1024,",
        "QB,put_block,8,",
        "QB,fetch_add,8,",
    ] {
        assert!(out.contains(kind), "{kind} missing:\n{out}");
    }
    assert!(out.contains("coop_warp/put"), "the ratio column: {out}");
    assert!(out.contains("every element checked"), "{out}");
    // Token rows of hidden 7168 in bf16 (14 KiB), what an MoE dispatch would carry.
    let out = run_sim(
        "queue_bench",
        2,
        &[
            "--ctas",
            "1",
            "--sizes",
            "14336",
            "--items",
            "32",
            "--capacity",
            "128",
        ],
    );
    for kind in [
        "QB,queue_coop_warp,14336,",
        "QB,queue_thread,14336,",
        "QB,put_warp,14336,",
    ] {
        assert!(out.contains(kind), "{kind} missing:\n{out}");
    }
    assert!(out.contains("every element checked"), "{out}");
    // Rows written once, keys per batch: the queue's own work beside the put's.
    let out = run_sim(
        "queue_bench",
        2,
        &[
            "--ctas", "1,2", "--items", "64", "--sizes", "8,1024", "--kinds", "coop,put", "--tags",
            "once",
        ],
    );
    for kind in [
        "QB,queue_coop_warp,1024,",
        "QB,queue_coop_block,8,",
        "QB,put_block,1024,",
    ] {
        assert!(out.contains(kind), "{kind} missing:\n{out}");
    }
    assert!(out.contains("tags once"), "{out}");
    assert!(out.contains("every popped key"), "{out}");
}

#[test]
fn launch_overhead_checks_its_counts() {
    let out = run_sim("launch_overhead", 2, &["--launches", "3", "--reps", "1"]);
    for row in [
        "LO,kernel: plain,3,",
        "LO,kernel: one graph of all,3,",
        "LO,kernel: graph of one,3,",
        "LO,barrier_all: plain,3,",
        "LO,barrier_all: one graph of all,3,",
    ] {
        assert!(out.contains(row), "{row}: {out}");
    }
    assert!(out.contains("the counts were checked"), "{out}");
}

#[test]
fn moe_checks_both_modes_and_fp8_rows_on_2_and_3_pes() {
    for npes in [2, 3] {
        let out = run_sim("moe", npes, &[]);
        for pe in 0..npes {
            assert!(
                out.contains(&format!("PE {pe}: MoE layer of 13 tokens x 64"))
                    && out.contains("on the simulator: normal ok, low-latency ok")
                    && out.contains("low-latency FP8 ok"),
                "PE {pe}:\n{out}"
            );
        }
    }
}

#[test]
fn moe_layer_checks_every_stage_on_2_and_3_pes() {
    for npes in [2, 3] {
        let out = run_sim("moe_layer", npes, &[]);
        for pe in 0..npes {
            let line = out
                .lines()
                .find(|l| l.contains(&format!("PE {pe}: fused MoE layer of 13 tokens x 72")))
                .unwrap_or_else(|| panic!("PE {pe}:\n{out}"));
            for stage in [
                "dispatch ok",
                "gate/up + SwiGLU ok",
                "down ok",
                "combine ok",
            ] {
                assert!(line.contains(stage), "PE {pe}, {stage}:\n{out}");
            }
        }
    }
}
