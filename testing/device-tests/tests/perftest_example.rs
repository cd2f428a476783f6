//! `examples/perftest.rs` on the CPU simulator: every row runs, on 2 PEs and on 4, its data is
//! checked, and it prints one `PT` line per planned case; `--plan` prints what the CUDA C++ twin
//! runs. `cargo test` builds the example next to this test binary
//! (`target/<profile>/examples/`).

#[path = "../../../tests/common/mod.rs"]
mod common;

use std::process::{Command, Output};

const FAMILIES: [&str; 10] = [
    "put_bw", "get_bw", "p_lat", "g_lat", "amo_lat", "amo_tput", "pingpong", "barrier", "fcollect",
    "reduce",
];

/// The perftest on `npes` simulated PEs.
fn perftest_on(npes: usize) -> Command {
    let mut cmd = Command::new(common::example("perftest"));
    cmd.env("RSHMEM_BACKEND", "sim")
        .env("RSHMEM_NPES", npes.to_string());
    cmd
}

/// The perftest on 2 simulated PEs.
fn perftest() -> Command {
    perftest_on(2)
}

/// Runs every row on `npes` PEs and checks that each family was checked.
fn every_row_checks_on(npes: usize) -> String {
    let out = perftest_on(npes).output().unwrap();
    let all = text(&out);
    assert!(
        out.status.success(),
        "perftest on {npes} PEs failed:\n{all}"
    );
    assert!(all.contains("correctness only"), "{all}");
    assert!(
        all.contains(&format!("perftest on {npes} PEs: point-to-point rows")),
        "{all}"
    );
    for f in FAMILIES {
        assert!(
            all.contains(&format!("check ok: {f} (")),
            "no check for {f} on {npes} PEs:\n{all}"
        );
    }
    all
}

fn text(out: &Output) -> String {
    common::output_text(out)
}

/// `(row, param)` of each `PT,<row>,<param>,<value>,<unit>` line, checking value and unit.
fn pt_keys(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| l.strip_prefix("PT,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 4, "bad PT line {l:?}");
            let v: f64 = f[2]
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {l:?}"));
            assert!(v > 0.0 && v.is_finite(), "value {v} in {l:?}");
            assert!(["GB/s", "us", "Mops/s"].contains(&f[3]), "unit in {l:?}");
            (f[0].to_string(), f[1].to_string())
        })
        .collect()
}

#[test]
fn every_row_runs_checks_and_matches_the_plan() {
    let all = every_row_checks_on(2);
    // The simulator's plan, as `--plan sim` prints it, is exactly what ran.
    let plan = perftest().args(["--plan", "sim"]).output().unwrap();
    assert!(plan.status.success());
    let plan = String::from_utf8_lossy(&plan.stdout).to_string();
    let planned: Vec<(String, String)> = plan
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(
                (f.len(), f[0], f[9]),
                (10, "PLAN", "5"),
                "bad plan line {l:?}"
            );
            (f[2].to_string(), f[3].to_string())
        })
        .collect();
    assert_eq!(pt_keys(&all), planned, "{all}");
    for f in FAMILIES {
        assert!(
            plan.contains(&format!("PLAN,{f},")),
            "{f} not planned:\n{plan}"
        );
    }
}

/// Point-to-point rows stay between PE 0 and PE 1 (PEs 2 and 3 launch and return); the
/// barrier and the collectives run over, and are checked on, all 4.
#[test]
fn every_row_runs_and_checks_on_4_pes() {
    let all = every_row_checks_on(4);
    assert!(all.contains("the others idle"), "{all}");
}

#[test]
fn rows_and_reps_select_what_runs() {
    let out = perftest()
        .args(["--rows", "pingpong,reduce", "--reps", "2"])
        .output()
        .unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let rows: Vec<String> = pt_keys(&all).into_iter().map(|k| k.0).collect();
    assert_eq!(
        rows,
        ["pingpong", "pingpong", "reduce_sum", "reduce_sum"],
        "{all}"
    );
    assert!(!all.contains("check ok: put_bw"), "{all}");
}

#[test]
fn gpu_plan_has_the_documented_shape() {
    let out = perftest().args(["--plan", "gpu"]).output().unwrap();
    assert!(out.status.success());
    let plan = String::from_utf8_lossy(&out.stdout).to_string();
    // 3 grids x 9 sizes for each bandwidth direction, and one pingpong per size.
    assert_eq!(plan.matches("PLAN,put_bw,").count(), 27, "{plan}");
    assert_eq!(plan.matches("PLAN,get_bw,").count(), 27, "{plan}");
    assert!(
        plan.contains("PLAN,put_bw,put_bw_132ctas,268435456,132,512,4,268435456,1,5"),
        "{plan}"
    );
    assert!(
        plan.contains("PLAN,get_bw,get_bw_32ctas,1048576,32,512,512,1048576,256,5"),
        "{plan}"
    );
    assert!(
        plan.contains("PLAN,pingpong,pingpong,65536,1,128,2000,65536,1,5"),
        "{plan}"
    );
    assert!(
        plan.contains("PLAN,reduce,reduce_sum,1048576,1,256,200,262144,1,5"),
        "{plan}"
    );
    // Every bandwidth case spreads its iterations over 128 MiB or more of source (and as much
    // of destination), beyond the 50 MB L2 of an H200, in whole 256-byte slots.
    for l in plan.lines().filter(|l| l.contains("_bw,")) {
        let f: Vec<u64> = l.split(',').skip(3).map(|v| v.parse().unwrap()).collect();
        let (bytes, slots) = (f[4], f[5]);
        let stride = bytes.next_multiple_of(256);
        assert!(slots >= 1 && stride * slots >= 128 << 20, "{l}");
        assert!(
            stride * slots <= 256 << 20 || slots == 1,
            "{l}: more heap than needed"
        );
    }
}

#[test]
fn bad_arguments_are_refused() {
    for (args, msg) in [
        (&["--frobnicate"][..], "unknown argument \"--frobnicate\""),
        (&["--rows", "put_bw,nope"][..], "unknown row \"nope\""),
        (&["--reps", "0"][..], "--reps takes a count >= 1"),
        (&["--plan", "tpu"][..], "--plan takes gpu or sim"),
    ] {
        let out = perftest().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(text(&out).contains(msg), "{args:?}: {}", text(&out));
    }
}
