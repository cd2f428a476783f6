//! The workspace's crates all reach CI's lints: each member's `Cargo.toml` opts in to the
//! workspace lints (`[lints]` with `workspace = true`: the `# Safety` and `// SAFETY:` rules),
//! and each package is either checked by `.ci/run`'s `cargo clippy -p …` or named in its
//! `clippy_skipped` list with the reason beside it. A crate added without either fails
//! `tests/workspace_lints.rs` by name, instead of going unchecked.
//!
//! The manifests are read line by line (the few forms the workspace uses), not by a TOML
//! parser: a `[table]` header starts a table, `key = value` lines inside it, `#` comments.
//!
//! ```
//! let toml = "[package]\nname = \"a\"\n\n[lints]\nworkspace = true\n";
//! assert_eq!(rshmem_layering::manifest::package_name(toml).as_deref(), Some("a"));
//! assert!(rshmem_layering::manifest::opts_into_workspace_lints(toml));
//! ```

/// The `key = value` lines of table `[name]` (comments and blank lines dropped), values raw.
fn table<'a>(toml: &'a str, name: &str) -> Vec<(&'a str, &'a str)> {
    let header = format!("[{name}]");
    let mut inside = false;
    let mut out = Vec::new();
    for line in toml.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            inside = line == header;
        } else if inside {
            if let Some((k, v)) = line.split_once('=') {
                out.push((k.trim(), v.trim()));
            }
        }
    }
    out
}

/// The package's name (`[package] name = "…"`), `None` for a manifest without one.
pub fn package_name(toml: &str) -> Option<String> {
    table(toml, "package")
        .into_iter()
        .find(|(k, _)| *k == "name")
        .map(|(_, v)| v.trim_matches('"').to_string())
}

/// Whether the manifest has `[lints]` with `workspace = true`.
pub fn opts_into_workspace_lints(toml: &str) -> bool {
    table(toml, "lints").contains(&("workspace", "true"))
}

/// The quoted strings of the array `key = [ … ]` of table `[name]`, which may span lines.
fn array(toml: &str, name: &str, key: &str) -> Vec<String> {
    let header = format!("[{name}]");
    let mut inside = false;
    let mut text = String::new();
    let mut open = false;
    for line in toml.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if !open && line.starts_with('[') {
            inside = line == header;
            continue;
        }
        if inside && !open {
            if let Some(rest) = line
                .strip_prefix(key)
                .and_then(|r| r.trim_start().strip_prefix('='))
            {
                open = true;
                text.push_str(rest);
            }
        } else if open {
            text.push_str(line);
        }
        if open && text.contains(']') {
            break;
        }
    }
    text.split('"')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// The workspace's member folders (`[workspace] members`), as written, and `"."` for the root
/// package when the root manifest has one.
pub fn workspace_members(root_toml: &str) -> Vec<String> {
    let mut members = array(root_toml, "workspace", "members");
    if package_name(root_toml).is_some() {
        members.insert(0, ".".into());
    }
    members
}

/// What `.ci/run` says about clippy: the packages its `cargo clippy` command checks (every
/// `-p NAME`, continuation lines joined) and those its `clippy_skipped=( … )` array (one or
/// several lines, a comment beside each name) leaves out on purpose.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CiClippy {
    /// The `-p` packages of the `cargo clippy` command.
    pub checked: Vec<String>,
    /// The names of the `clippy_skipped` array.
    pub skipped: Vec<String>,
}

/// Reads [`CiClippy`] from the text of `.ci/run` (a bash script).
pub fn ci_clippy(script: &str) -> CiClippy {
    // Comments dropped, continuation lines joined: one command per line.
    let mut joined = String::new();
    for line in script.lines() {
        let code = line.split('#').next().unwrap_or("");
        match code.trim_end().strip_suffix('\\') {
            Some(head) => joined.push_str(head),
            None => {
                joined.push_str(code);
                joined.push('\n');
            }
        }
    }
    let mut ci = CiClippy::default();
    for cmd in joined.lines() {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        if words.starts_with(&["cargo", "clippy"]) {
            ci.checked.extend(
                words
                    .windows(2)
                    .filter(|w| w[0] == "-p")
                    .map(|w| w[1].to_string()),
            );
        }
    }
    const SKIPPED: &str = "clippy_skipped=(";
    if let Some(at) = joined.find(SKIPPED) {
        let list = joined[at + SKIPPED.len()..].split(')').next().unwrap_or("");
        ci.skipped.extend(
            list.split_whitespace()
                .map(|s| s.trim_matches('"').to_string()),
        );
    }
    ci
}

/// What is wrong with the workspace's lint coverage, one line per problem (empty: nothing).
/// `members` are `(folder, its Cargo.toml's text)`; `ci` is what `.ci/run` says.
pub fn lint_coverage(members: &[(String, String)], ci: &CiClippy) -> Vec<String> {
    let mut problems = Vec::new();
    let mut names = Vec::new();
    for (dir, toml) in members {
        let Some(name) = package_name(toml) else {
            problems.push(format!("{dir}/Cargo.toml: no [package] name"));
            continue;
        };
        if !opts_into_workspace_lints(toml) {
            problems.push(format!(
                "{dir}/Cargo.toml ({name}) does not opt in to the workspace lints: add \
                 `[lints]` with `workspace = true`"
            ));
        }
        let (checked, skipped) = (ci.checked.contains(&name), ci.skipped.contains(&name));
        match (checked, skipped) {
            (false, false) => problems.push(format!(
                "{name} ({dir}) is neither in .ci/run's `cargo clippy -p …` list nor in its \
                 `clippy_skipped` list (with why): add it to one"
            )),
            (true, true) => problems.push(format!(
                "{name} is in both .ci/run's clippy list and its `clippy_skipped` list"
            )),
            _ => {}
        }
        names.push(name);
    }
    for listed in ci.checked.iter().chain(&ci.skipped) {
        if !names.contains(listed) {
            problems.push(format!(
                ".ci/run names {listed}, which is no package of the workspace"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = r#"[workspace]
members = [
    "host",
    "kernels/a", # a comment
]
resolver = "2"

[package]
name = "root"

[lints]
# why
workspace = true
"#;

    #[test]
    fn members_names_and_lints_are_read() {
        assert_eq!(workspace_members(ROOT), [".", "host", "kernels/a"]);
        assert_eq!(package_name(ROOT).as_deref(), Some("root"));
        assert!(opts_into_workspace_lints(ROOT));
        let no = "[package]\nname = \"x\"\n[lib]\n# [lints] workspace = true\nworkspace = true\n";
        assert!(!opts_into_workspace_lints(no));
        assert!(!opts_into_workspace_lints("[lints]\nworkspace = false\n"));
        assert!(!opts_into_workspace_lints(
            "[lints.rust]\nworkspace = true\n"
        ));
    }

    #[test]
    fn ci_lists_are_read_and_every_gap_is_named() {
        let script = "# cargo clippy -p commented\nclippy_skipped=(\n  kit # why\n  \"other\"\n)\n\
                      cargo clippy -p root -p host \\\n    -p a --all-targets -- -D warnings\n";
        let ci = ci_clippy(script);
        assert_eq!(ci.checked, ["root", "host", "a"]);
        assert_eq!(ci.skipped, ["kit", "other"]);
        let m = |dir: &str, name: &str, lints: bool| {
            let l = if lints {
                "[lints]\nworkspace = true\n"
            } else {
                ""
            };
            (
                dir.to_string(),
                format!("[package]\nname = \"{name}\"\n{l}"),
            )
        };
        let ok = [
            m(".", "root", true),
            m("host", "host", true),
            m("k/a", "a", true),
        ];
        let with_kits = [&ok[..], &[m("kit", "kit", true), m("o", "other", true)]].concat();
        assert_eq!(lint_coverage(&with_kits, &ci), Vec::<String>::new());
        // A member without the lints, one in no list, one in both, a stale name.
        let bad = [
            m(".", "root", false),
            m("new", "new", true),
            m("kit", "kit", true),
        ];
        let ci2 = CiClippy {
            checked: vec!["root".into(), "kit".into(), "gone".into()],
            skipped: vec!["kit".into()],
        };
        let p = lint_coverage(&bad, &ci2).join("\n");
        assert!(p.contains("./Cargo.toml (root) does not opt in"), "{p}");
        assert!(p.contains("new (new) is neither in"), "{p}");
        assert!(p.contains("kit is in both"), "{p}");
        assert!(p.contains(".ci/run names gone"), "{p}");
        assert_eq!(p.lines().count(), 4, "{p}");
    }
}
