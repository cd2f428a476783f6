//! `moe_bench` (the binary `scripts/moe_bench.py` drives on GPUs) on the simulator: both modes
//! (and both modes' FP8 rows) check their identity-expert round trip before
//! timing, on 1 and 2 PEs; the fused layer
//! checks three tokens against f64 before timing, on 1 PE (the GPU goal's case; the layer's
//! multi-PE cases are `moe_layer.rs`'s).

#[path = "../../tests/common/mod.rs"]
mod common;

#[test]
fn both_modes_check_then_time() {
    for npes in [1, 2] {
        let mut args = vec![
            "--tokens",
            "7",
            "--hidden",
            "24",
            "--experts",
            "4",
            "--top-k",
            "2",
            "--ll",
            "--fp8",
            "--iters",
            "1",
        ];
        if npes == 1 {
            args.extend(["--layer", "16"]);
        }
        let out = common::run_example_sim("moe_bench", npes, &args);
        let modes: &[&str] = if npes == 1 {
            &[
                "normal",
                "low_latency",
                "normal_fp8",
                "low_latency_fp8",
                "layer",
            ]
        } else {
            &["normal", "low_latency", "normal_fp8", "low_latency_fp8"]
        };
        for mode in modes {
            let row = out
                .lines()
                .find(|l| l.contains(&format!("\"mode\":\"{mode}\"")))
                .unwrap_or_else(|| panic!("no {mode} row on {npes} PEs:\n{out}"));
            assert!(
                row.contains(&format!("\"npes\":{npes}")) && row.contains("\"check\":\"ok\""),
                "{row}"
            );
        }
    }
}
