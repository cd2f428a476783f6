//! Every crate of the workspace reaches CI's safety lints: it opts in to the workspace lints
//! (`[lints] workspace = true`), and `.ci/run` either clippies it or says why not
//! (`clippy_skipped`). See `rshmem_layering::manifest`.

use rshmem_layering::manifest::{ci_clippy, lint_coverage, workspace_members};
use std::fs;
use std::path::Path;

#[test]
fn every_crate_opts_in_to_the_lints_and_ci_clippy_covers_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |p: &Path| fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let dirs = workspace_members(&read(&root.join("Cargo.toml")));
    assert!(
        dirs.len() > 10 && dirs.iter().any(|d| d == "testing/kernels/hopper"),
        "members not read: {dirs:?}"
    );
    let members: Vec<(String, String)> = dirs
        .into_iter()
        .map(|d| {
            let toml = read(&root.join(&d).join("Cargo.toml"));
            (d, toml)
        })
        .collect();
    let ci = ci_clippy(&read(&root.join(".ci/run")));
    assert!(
        ci.checked.iter().any(|p| p == "rshmem-host") && !ci.skipped.is_empty(),
        ".ci/run's lists not read: {ci:?}"
    );
    let problems = lint_coverage(&members, &ci);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
