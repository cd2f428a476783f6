//! `docs/fused-kernels.md` builds and runs as written: this test writes each of the guide's
//! code blocks tagged `file=PATH` to that file (`tests/common/project.rs`), checks that they
//! are the files of the guide's tree, lays the project out as `fused-app/` beside a checkout
//! named `rshmem/` (a symlink to this one), builds it and runs it on the simulator with 1, 2
//! and 3 PEs. The program checks every result against an f64 host reference itself and
//! prints a line per check; this test requires each of those lines, so that a step the
//! program stopped running is noticed too.
//!
//! Cost: the project has a target folder of its own inside this build's
//! (`target/fused-guide-app/`), kept between runs; the first run compiles rshmem's host
//! crates, rshmem's ops images (the project uses the feature `ops`) and the guide's kernels,
//! for sm_90a alone (minutes on two cores); the three runs take about a minute (the project's
//! profile optimises the kernels, which the simulator runs as host code).

mod common;

use common::project::{tagged_files, tree_files, Project};
use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn the_fused_kernels_guide_builds_and_runs() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(checkout.join("docs/fused-kernels.md")).unwrap();
    let files = tagged_files(&guide);
    let named: BTreeSet<String> = files.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        named,
        tree_files(&guide),
        "the files the guide's tagged code blocks give are not the files of its tree"
    );

    let app = Project::lay_out(checkout, "fused-app", "fused-guide-app", &files);
    let built = app
        .cargo(&["build", "--quiet"])
        .env("RSHMEM_ARCH", "sm_90a")
        .output()
        .expect("cargo runs");
    assert!(
        built.status.success(),
        "the guide's project (in {}) failed to build:\n{}",
        app.dir.display(),
        common::output_text(&built)
    );

    let exe = app.target.join("debug/fused-app");
    for npes in [1, 2, 3] {
        let out = std::process::Command::new(&exe)
            .env("RSHMEM_BACKEND", "sim")
            .env("RSHMEM_NPES", npes.to_string())
            .output()
            .unwrap();
        let text = common::output_text(&out);
        assert!(
            out.status.success(),
            "the guide's program on {npes} simulated PEs failed:\n{text}"
        );
        let on = format!("on {npes} PEs");
        for (step, needs) in [
            ("Sm90 GEMM + bias + GELU 200x300x72: 60000 values", ""),
            ("Sm80 GEMM + bias + GELU 200x300x72: 60000 values", ""),
            ("Sm90 GEMM with rows sent to their owners", on.as_str()),
            ("Sm80 GEMM with rows sent to their owners", on.as_str()),
            ("all_reduce_tile of 1000 f32", on.as_str()),
        ] {
            assert!(
                text.lines()
                    .any(|l| l.starts_with(step) && l.contains(needs)),
                "the guide's program on {npes} PEs did not report `{step}` ({needs}):\n{text}"
            );
        }
        println!("{npes} PE(s):\n{text}");
    }
}
