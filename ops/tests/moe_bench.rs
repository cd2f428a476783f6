//! `moe_bench` (the binary `scripts/moe_bench.py` drives on GPUs) on the simulator: both modes
//! check their identity-expert round trip before timing, on 1 and 2 PEs.

#[path = "../../tests/common/mod.rs"]
mod common;

#[test]
fn both_modes_check_then_time() {
    for npes in [1, 2] {
        let args = [
            "--tokens",
            "7",
            "--hidden",
            "24",
            "--experts",
            "4",
            "--top-k",
            "2",
            "--ll",
            "--iters",
            "1",
        ];
        let out = common::run_example_sim("moe_bench", npes, &args);
        for mode in ["normal", "low_latency"] {
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
