//! `collectives_bench` (the binary `scripts/collectives_bench.py` drives on GPUs) on the
//! simulator: every row it prints for small sizes checked its result and was timed, with and
//! without graphs, for rshmem's collectives and NVSHMEM's on-stream ones.

#[path = "../../tests/common/mod.rs"]
mod common;

#[test]
fn every_row_checks_and_times() {
    let out = common::run_example_sim(
        "collectives_bench",
        2,
        &["--sizes", "8,4100", "--iters", "2", "--inner", "2"],
    );
    let rows: Vec<&str> = out
        .lines()
        .map(|l| l.split_once("] ").map_or(l, |(_, r)| r))
        .filter(|l| l.starts_with('{'))
        .collect();
    // Per size: all-reduce x 4 algorithms, reduce-scatter x 3, all-gather, NVSHMEM x 3.
    assert_eq!(rows.len(), 2 * (4 + 3 + 1 + 3), "{out}");
    for r in &rows {
        assert!(
            r.contains("\"check\": \"ok\"") && r.contains("\"us_graph\""),
            "{r}"
        );
    }
    for want in [
        "\"op\": \"all_reduce\", \"algo\": \"Lamport\", \"dtype\": \"bf16\", \"bytes\": 4100",
        "\"op\": \"reduce_scatter\", \"algo\": \"TwoShot\"",
        "\"impl\": \"nvshmem\", \"op\": \"all_gather\"",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
}
