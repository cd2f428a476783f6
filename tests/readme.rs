//! README.md's "Using rshmem in your project" builds and runs as written: this test reads the
//! section's code blocks from README.md itself, writes each to the file the text before it
//! names, lays the application out as the section's tree says (`my-app/` beside a checkout
//! named `rshmem/`: a symlink to this one, so the README's `path = "../rshmem"` dependencies
//! resolve unchanged), builds it and runs it on the simulator. It also checks that the build
//! made no PTX but the application's own kernel (`rshmem` builds no kernel image, so no test
//! fixture of this project reaches an application).
//!
//! The machinery (reading the files, laying them out, running cargo there) is
//! `tests/common/project.rs`, shared with `tests/fused_guide.rs`.
//!
//! Cost: the application has a target folder of its own, kept between runs inside this
//! build's target folder (`target/readme-app/`; its sources in a temporary folder named after
//! that target folder): the first run compiles rshmem's host crates
//! and, for sm_90 alone (`RSHMEM_ARCH`), `core` and `rshmem-device` for the GPU (minutes on two
//! cores); later runs rebuild only what changed. ptxas runs (seconds for one small kernel),
//! as it would for a user.

mod common;

use common::project::{colon_files, ptx_entries, tree_files, Project};
use std::collections::BTreeSet;
use std::path::Path;

const SECTION: &str = "## Using rshmem in your project";

#[test]
fn using_rshmem_in_your_project_builds_and_runs() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(checkout.join("README.md")).unwrap();
    let section = readme
        .split(SECTION)
        .nth(1)
        .unwrap_or_else(|| panic!("README.md has no section {SECTION:?}"));
    let section = section.split("\n## ").next().unwrap();

    let files = colon_files(section);
    let named: BTreeSet<String> = files.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        named,
        tree_files(section),
        "the files the section's code blocks give are not the files of its tree"
    );

    let app = Project::lay_out(checkout, "my-app", "readme-app", &files);
    let out = app
        .cargo(&["run", "--quiet"])
        .env("RSHMEM_ARCH", "sm_90")
        .env("RSHMEM_BACKEND", "sim")
        .env("RSHMEM_NPES", "2")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "the README's project (in {}) failed to build or run:\n{}",
        app.dir.display(),
        common::output_text(&out)
    );

    let entries = ptx_entries(&app.target);
    assert!(
        entries.iter().any(|(_, name)| name == "scale"),
        "no PTX with the README's `scale` kernel under {}",
        app.target.display()
    );
    let foreign: Vec<_> = entries.iter().filter(|(_, name)| name != "scale").collect();
    assert!(
        foreign.is_empty(),
        "the application's build made PTX of kernels it does not have: {foreign:?}"
    );
}
