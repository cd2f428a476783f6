//! Projects written from a document's code blocks and built beside this checkout, as a user
//! would build them: README.md's "Using rshmem in your project" (`tests/readme.rs`) and
//! `docs/fused-kernels.md` (`tests/fused_guide.rs`).
//!
//! A document names each block's file one of two ways: README's, the paragraph before the
//! block ends with a colon and names the files of the blocks that follow ([`colon_files`]);
//! the guide's, the block's info string says `file=PATH`, and blocks of one file are appended
//! in order ([`tagged_files`]). [`Project::lay_out`] writes them as `<name>/` beside a
//! symlink `rshmem` to this checkout (so the documents' `path = "../rshmem"` dependencies
//! resolve unchanged), and [`Project::cargo`] runs cargo there with a target folder of its own
//! inside this build's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `(path, contents)` of a project's files.
pub type Files = Vec<(String, String)>;

/// The code blocks of `text`: `(info string, body)`.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            out.push((info.trim().to_string(), body.join("\n") + "\n"));
        }
    }
    out
}

/// README's rule: each fenced block takes, in order, the file names (backticked, ending in
/// `.rs` or `.toml`) of the paragraph before it that ends with a colon; blocks after other
/// paragraphs (the tree, fragments) are not files.
pub fn colon_files(section: &str) -> Files {
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

/// The guide's rule: a block whose info string has `file=PATH` (```` ```rust file=src/main.rs
/// ````) belongs to PATH; the blocks of one file are appended in the document's order, a blank
/// line apart. Files in the order of their first block.
pub fn tagged_files(doc: &str) -> Files {
    let mut files: Files = Vec::new();
    for (info, body) in blocks(doc) {
        let Some(path) = info
            .split_whitespace()
            .find_map(|w| w.strip_prefix("file="))
        else {
            continue;
        };
        match files.iter_mut().find(|(p, _)| p == path) {
            Some((_, contents)) => {
                contents.push('\n');
                contents.push_str(&body);
            }
            None => files.push((path.to_string(), body)),
        }
    }
    files
}

/// The files of the first tree drawn in `text` (a ```` ```text ```` block of `├── `/`└── `
/// lines under a root folder), as paths under that folder.
pub fn tree_files(text: &str) -> BTreeSet<String> {
    let tree = text
        .split("```text\n")
        .nth(1)
        .and_then(|t| t.split("```").next())
        .expect("the text draws the project's tree in a ```text block");
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
pub fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
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
pub fn ptx_entries(dir: &Path) -> Vec<(PathBuf, String)> {
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

/// A project laid out from a document, and the target folder cargo builds it in.
pub struct Project {
    /// The project's folder (`<base>/<name>`).
    pub dir: PathBuf,
    /// Its target folder, inside this build's (kept between runs).
    pub target: PathBuf,
}

impl Project {
    /// Writes `files` into `<base>/<name>/`, beside `<base>/rshmem`, a symlink to `checkout`;
    /// its target folder is `<this build's target>/<target_name>`.
    /// `<base>` lies outside the checkout (inside it, cargo would take the project for a stray
    /// member of this workspace), in the temporary folder, named after this build's target
    /// folder so that later runs find their files (and their builds) again. Files an earlier
    /// version of the document had but this one has not are removed; `Cargo.lock` starts as
    /// the workspace's (its versions of the crates the project shares: no registry look-up).
    pub fn lay_out(checkout: &Path, name: &str, target_name: &str, files: &Files) -> Project {
        // This test binary is <target>/<profile>/deps/<test>-<hash>.
        let exe = std::env::current_exe().unwrap();
        let target = exe.ancestors().nth(3).unwrap();
        let mut key = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hash::hash(target, &mut key);
        let base = std::env::temp_dir().join(format!(
            "rshmem-projects-{:016x}",
            std::hash::Hasher::finish(&key)
        ));
        let dir = base.join(name);
        std::fs::create_dir_all(&base).unwrap();
        let link = base.join("rshmem");
        if std::fs::read_link(&link).ok().as_deref() != Some(checkout) {
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(checkout, &link).unwrap();
        }
        for (path, contents) in files {
            write_if_changed(&dir.join(path), contents);
        }
        let named: BTreeSet<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        let mut present = Vec::new();
        walk(&dir, &mut present);
        for path in present {
            let rel = path.strip_prefix(&dir).unwrap().to_string_lossy();
            if !named.contains(&*rel) && rel != "Cargo.lock" {
                std::fs::remove_file(&path).unwrap();
            }
        }
        if !dir.join("Cargo.lock").exists() {
            std::fs::copy(checkout.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        }
        Project {
            dir,
            target: target.join(target_name),
        }
    }

    /// `cargo <args>` in the project with its own target folder, without this test's own
    /// package variables (they are not the project's).
    pub fn cargo(&self, args: &[&str]) -> Command {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(&self.dir)
            .args(args)
            .env("CARGO_TARGET_DIR", &self.target);
        without_outer_package(&mut cmd);
        cmd
    }
}

/// `cmd` without the package variables cargo set for this test (they are not those of the
/// build `cmd` runs).
pub fn without_outer_package(cmd: &mut Command) -> &mut Command {
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
            cmd.env_remove(key);
        }
    }
    cmd
}
