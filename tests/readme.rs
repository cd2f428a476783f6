//! README.md's "Using rshmem in your project" builds and runs as written: this test reads the
//! section's code blocks from README.md itself, writes each to the file the text before it
//! names, lays the application out as the section's tree says (`my-app/` beside a checkout
//! named `rshmem/`: a symlink to this one, so the README's `path = "../rshmem"` dependencies
//! resolve unchanged), builds it and runs it on the simulator. It also checks that the build
//! made no PTX but the application's own kernel (`rshmem` builds no kernel image, so no test
//! fixture of this project reaches an application).
//!
//! Cost: the application has a target folder of its own, kept between runs inside this
//! build's target folder (`target/readme-app/`; its sources in a temporary folder named after
//! that target folder): the first run compiles rshmem's host crates
//! and, for sm_90 alone (`RSHMEM_ARCH`), `core` and `rshmem-device` for the GPU (minutes on two
//! cores); later runs rebuild only what changed. ptxas runs (seconds for one small kernel),
//! as it would for a user.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const SECTION: &str = "## Using rshmem in your project";

/// The section's files, `(path under my-app/, contents)`: each fenced block takes, in order,
/// the file names (backticked, ending in `.rs` or `.toml`) of the paragraph before it that ends
/// with a colon; blocks after other paragraphs (the tree, fragments) are not files.
fn files(section: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let (mut names, mut paragraph) = (Vec::<String>::new(), String::new());
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("```") {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            if !names.is_empty() {
                files.push((names.remove(0), body.join("\n") + "\n"));
            }
        } else if line.trim().is_empty() {
            if paragraph.trim_end().ends_with(':') {
                names = paragraph
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|n| n.ends_with(".rs") || n.ends_with(".toml"))
                    .map(String::from)
                    .collect();
            } else if !paragraph.is_empty() {
                names.clear();
            }
            paragraph.clear();
        } else {
            paragraph.push_str(line);
            paragraph.push(' ');
        }
    }
    files
}

/// The files of the section's tree (its `text` block), as paths under its root folder.
fn tree_files(section: &str) -> BTreeSet<String> {
    let tree = section
        .split("```text\n")
        .nth(1)
        .and_then(|t| t.split("```").next())
        .expect("the section draws the project's tree in a ```text block");
    let mut dirs: Vec<String> = Vec::new();
    let mut files = BTreeSet::new();
    for line in tree.lines().skip(1) {
        let Some(at) = line.find("├── ").or_else(|| line.find("└── ")) else {
            continue;
        };
        // Each level of the tree is four columns ("│   " or "    ").
        let depth = line[..at].chars().count() / 4;
        let name = line[at..].chars().skip(4).collect::<String>();
        let name = name
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        dirs.truncate(depth);
        let path = dirs.iter().map(|d| format!("{d}/")).collect::<String>() + &name;
        match name.strip_suffix('/') {
            Some(dir) => dirs.push(dir.to_string()),
            None => {
                files.insert(path);
            }
        }
    }
    files
}

/// Writes `contents` to `path` unless it already holds them (so cargo sees no change).
fn write_if_changed(path: &Path, contents: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(contents) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

/// Every file under `dir`.
fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk(&path, found);
        } else {
            found.push(path);
        }
    }
}

/// `.visible .entry` names of every PTX file under `dir`, with the file they are in.
fn ptx_entries(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut all = Vec::new();
    walk(dir, &mut all);
    let mut entries = Vec::new();
    for ptx in all
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
    {
        let text = std::fs::read_to_string(&ptx).unwrap();
        for l in text.lines() {
            if let Some(name) = l.strip_prefix(".visible .entry ") {
                entries.push((ptx.clone(), name.trim_end_matches('(').to_string()));
            }
        }
    }
    entries
}

#[test]
fn using_rshmem_in_your_project_builds_and_runs() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(checkout.join("README.md")).unwrap();
    let section = readme
        .split(SECTION)
        .nth(1)
        .unwrap_or_else(|| panic!("README.md has no section {SECTION:?}"));
    let section = section.split("\n## ").next().unwrap();

    let files = files(section);
    let named: BTreeSet<String> = files.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        named,
        tree_files(section),
        "the files the section's code blocks give are not the files of its tree"
    );

    // `my-app/` and `rshmem` (a symlink to this checkout) beside it, in a folder outside the
    // checkout (inside it, cargo would take the app for a stray member of this workspace),
    // named after this build's target folder so that later runs find their files again. The
    // app's target folder stays in this build's: <target>/readme-app. This binary is
    // <target>/<profile>/deps/readme-<hash>.
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap();
    let mut key = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(target, &mut key);
    let base = std::env::temp_dir().join(format!(
        "rshmem-readme-{:016x}",
        std::hash::Hasher::finish(&key)
    ));
    let app = base.join("my-app");
    std::fs::create_dir_all(&base).unwrap();
    let link = base.join("rshmem");
    if std::fs::read_link(&link).ok().as_deref() != Some(checkout) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(checkout, &link).unwrap();
    }
    for (name, contents) in &files {
        write_if_changed(&app.join(name), contents);
    }
    // What an earlier README had but this one does not must not be built.
    let mut present = Vec::new();
    walk(&app, &mut present);
    for path in present {
        let rel = path
            .strip_prefix(&app)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !named.contains(&rel) && rel != "Cargo.lock" {
            std::fs::remove_file(&path).unwrap();
        }
    }
    // The workspace's versions of the crates the app shares with it: no registry look-up.
    if !app.join("Cargo.lock").exists() {
        std::fs::copy(checkout.join("Cargo.lock"), app.join("Cargo.lock")).unwrap();
    }

    let app_target = target.join("readme-app");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut run = Command::new(cargo);
    run.current_dir(&app)
        .args(["run", "--quiet"])
        .env("CARGO_TARGET_DIR", &app_target)
        .env("RSHMEM_ARCH", "sm_90")
        .env("RSHMEM_BACKEND", "sim")
        .env("RSHMEM_NPES", "2");
    // This test's own package variables are not the app's.
    for (key, _) in std::env::vars() {
        let outer = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|p| key.starts_with(p));
        if outer || key == "CARGO_PRIMARY_PACKAGE" || key == "CARGO_TARGET_TMPDIR" {
            run.env_remove(key);
        }
    }
    let out = run.output().expect("cargo runs");
    assert!(
        out.status.success(),
        "the README's project (in {}) failed to build or run:\n{}{}",
        app.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let entries = ptx_entries(&app_target);
    assert!(
        entries.iter().any(|(_, name)| name == "scale"),
        "no PTX with the README's `scale` kernel under {}",
        app_target.display()
    );
    let foreign: Vec<_> = entries.iter().filter(|(_, name)| name != "scale").collect();
    assert!(
        foreign.is_empty(),
        "the application's build made PTX of kernels it does not have: {foreign:?}"
    );
}
