//! The workspace's crates have no import loops, and the check finds one when there is.

use rshmem_layering::{ModPath, ModuleGraph};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn graph(files: &[(&str, &str)]) -> ModuleGraph {
    let sources: BTreeMap<ModPath, (PathBuf, String)> = files
        .iter()
        .map(|(module, text)| {
            let path: ModPath = module
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            (
                path,
                (PathBuf::from(format!("{module}.rs")), text.to_string()),
            )
        })
        .collect();
    ModuleGraph::from_sources(sources).expect("valid Rust")
}

#[test]
fn a_planted_loop_is_found_and_named() {
    let g = graph(&[
        ("", "mod contract; mod shmem; mod gpu;"),
        ("contract", "pub trait Backend {}"),
        (
            "shmem",
            "use crate::contract::Backend;\npub struct Shmem;\nfn f() { crate::gpu::run(); }",
        ),
        (
            "gpu",
            "use crate::contract::Backend;\n\nuse crate::shmem::Shmem;\npub fn run() {}",
        ),
    ]);
    let cycles = g.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let text = cycles[0].to_string();
    assert!(text.contains("crate::gpu uses (at gpu.rs:3)"), "{text}");
    assert!(text.contains("crate::shmem uses (at shmem.rs:3)"), "{text}");
}

#[test]
fn loops_through_macros_super_and_longer_chains_are_found() {
    let g = graph(&[
        ("", "mod a; mod b; mod c;"),
        ("a", "fn f() { nv_or_sim!(crate::b::x(), 0) }"),
        ("b", "pub mod inner { pub fn x() { super::super::c::y() } }"),
        ("c", "use crate::{b, a::*};"),
    ]);
    let cycles = g.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0].modules.len(), 3, "{}", cycles[0]);
}

#[test]
fn nesting_and_one_way_layers_are_not_loops() {
    let g = graph(&[
        ("", "pub mod backend; pub mod api; pub use api::*;"),
        ("backend", "mod gpu; pub use gpu::*; pub struct Vocab;"),
        // A child using its parent's items, and a test module using its own file.
        (
            "backend::gpu",
            "use super::Vocab; pub fn put() {} mod tests { use super::*; }",
        ),
        (
            "api",
            "use crate::backend::{put, Vocab}; pub fn f() { crate::backend::put() }",
        ),
    ]);
    assert!(g.cycles().is_empty(), "{:?}", g.cycles());
    assert!(g.uses(&["api".into()], &["backend".into()]).is_some());
}

/// Every crate of the workspace whose layering the project promises.
#[test]
fn workspace_crates_have_no_import_loops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root");
    // Relative paths, so that the report names files as the repository does.
    std::env::set_current_dir(&root).expect("cd to the workspace root");
    let mut report = String::new();
    for krate in ["host", "shmem-device", "builder", "macros"] {
        let g = ModuleGraph::from_src_dir(Path::new(krate).join("src").as_path())
            .unwrap_or_else(|e| panic!("{krate}: {e}"));
        assert!(
            g.modules().count() > 1 || krate == "macros",
            "{krate}: no modules read"
        );
        for cycle in g.cycles() {
            report.push_str(&format!("{krate}: {cycle}\n"));
        }
    }
    assert!(report.is_empty(), "{report}");
}
