//! # rshmem-layering
//!
//! Finds import loops between the modules of a crate: module `a` uses something of module `b`
//! while `b` (directly or through others) uses something of `a`. rshmem's layers point one way
//! (contracts at the bottom, backends beside each other on top, the public API above them), and
//! a loop is how that rule breaks first, so the workspace's tests run this over every crate.
//!
//! ```no_run
//! let graph = rshmem_layering::ModuleGraph::from_src_dir("host/src".as_ref()).unwrap();
//! for cycle in graph.cycles() {
//!     eprintln!("{cycle}");
//! }
//! ```
//!
//! What counts as a use of module `b` from module `a` (a file's module; inline `mod` blocks
//! such as `mod tests` belong to their file):
//!
//! * a `use` tree or a path in code (types, expressions, patterns, attributes' paths) that
//!   resolves, through `crate::`, `self::`, `super::` or a child module's name, into `b` or
//!   anything inside it; the longest known module prefix of the path is the target;
//! * the same inside macro invocations (`foo!(crate::b::x)`), read token by token.
//!
//! Not counted: uses of an ancestor (a child module using its parent's items is how Rust
//! modules nest, not a loop between layers), and paths into other crates. Re-exports are not
//! followed: `crate::Error` counts as a use of the crate root, not of the module that defines
//! `Error`.
//!
//! [`manifest`] checks the other rule CI relies on: every crate of the workspace opts in to
//! the workspace lints and is in `.ci/run`'s clippy list (or its explained exclusions).

pub mod manifest;

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// A module's path inside its crate, `crate::a::b` as `["a", "b"]`; the root is empty.
pub type ModPath = Vec<String>;

/// Where a use was seen: the file and the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The source file.
    pub file: PathBuf,
    /// 1-based line of the use.
    pub line: usize,
}

/// The modules of one crate and which module uses which.
#[derive(Debug, Default)]
pub struct ModuleGraph {
    /// Every module that has a file, with the file.
    files: BTreeMap<ModPath, PathBuf>,
    /// `edges[a][b]`: the first place where `a` uses `b`.
    edges: BTreeMap<ModPath, BTreeMap<ModPath, Site>>,
}

/// One import loop: modules `m0 → m1 → … → m0`, each arrow with the place of that use.
#[derive(Debug, Clone)]
pub struct Cycle {
    /// Every module of the group that reach each other, this loop's and others'.
    pub group: Vec<ModPath>,
    /// The modules in loop order; the last uses the first.
    pub modules: Vec<ModPath>,
    /// `sites[i]`: where `modules[i]` uses `modules[(i + 1) % len]`.
    pub sites: Vec<Site>,
}

/// Why a source tree could not be read.
#[derive(Debug)]
pub enum Error {
    /// A file or folder could not be read.
    Io(PathBuf, std::io::Error),
    /// A file is not valid Rust.
    Parse(PathBuf, syn::Error),
    /// The folder has neither `lib.rs` nor `main.rs`.
    NoRoot(PathBuf),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Error::Parse(p, e) => {
                let at = e.span().start();
                write!(f, "{}:{}:{}: {e}", p.display(), at.line, at.column + 1)
            }
            Error::NoRoot(p) => write!(f, "{}: no lib.rs or main.rs", p.display()),
        }
    }
}

impl std::error::Error for Error {}

fn show(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_string()
    } else {
        format!("crate::{}", path.join("::"))
    }
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "import loop:")?;
        for (m, site) in self.modules.iter().zip(&self.sites) {
            write!(f, "\n  {} uses", show(m))?;
            write!(f, " (at {}:{})", site.file.display(), site.line)?;
        }
        write!(f, "\n  {} again", show(&self.modules[0]))?;
        if self.group.len() > self.modules.len() {
            let all: Vec<String> = self.group.iter().map(|m| show(m)).collect();
            write!(
                f,
                "\n  (all {} modules that reach each other: {})",
                all.len(),
                all.join(", ")
            )?;
        }
        Ok(())
    }
}

impl ModuleGraph {
    /// Reads the crate whose source folder is `src` (its `lib.rs`, else `main.rs`, and every
    /// module file below; `src/bin/` holds other crates and is skipped).
    pub fn from_src_dir(src: &Path) -> Result<Self, Error> {
        let root = ["lib.rs", "main.rs"]
            .iter()
            .map(|f| src.join(f))
            .find(|p| p.is_file())
            .ok_or_else(|| Error::NoRoot(src.to_path_buf()))?;
        let mut files = BTreeMap::new();
        files.insert(Vec::new(), root);
        collect_files(src, src, &mut files)?;
        let mut sources = BTreeMap::new();
        for (module, file) in &files {
            let text = std::fs::read_to_string(file).map_err(|e| Error::Io(file.clone(), e))?;
            sources.insert(module.clone(), (file.clone(), text));
        }
        Self::from_sources(sources)
    }

    /// Builds the graph from module sources given directly: each module's path, its file's
    /// name (for messages) and its text.
    pub fn from_sources(sources: BTreeMap<ModPath, (PathBuf, String)>) -> Result<Self, Error> {
        let known: BTreeSet<ModPath> = sources.keys().cloned().collect();
        let mut graph = ModuleGraph {
            files: sources
                .iter()
                .map(|(m, (f, _))| (m.clone(), f.clone()))
                .collect(),
            edges: BTreeMap::new(),
        };
        for (module, (file, text)) in &sources {
            let ast = syn::parse_file(text).map_err(|e| Error::Parse(file.clone(), e))?;
            let mut finder = UseFinder {
                known: &known,
                file_module: module,
                inline: Vec::new(),
                found: Vec::new(),
            };
            finder.visit_file(&ast);
            let out = graph.edges.entry(module.clone()).or_default();
            for (target, line) in finder.found {
                if target == *module || module.starts_with(&target) {
                    continue; // itself, or an ancestor
                }
                out.entry(target).or_insert_with(|| Site {
                    file: file.clone(),
                    line,
                });
            }
        }
        Ok(graph)
    }

    /// The modules read, with their files.
    pub fn modules(&self) -> impl Iterator<Item = (&ModPath, &PathBuf)> {
        self.files.iter()
    }

    /// Whether `from` uses `to` directly, and where first.
    pub fn uses(&self, from: &[String], to: &[String]) -> Option<&Site> {
        self.edges.get(from)?.get(to)
    }

    /// One loop per group of modules that reach each other (a strongly connected component
    /// of more than one module), shortest first within the group.
    pub fn cycles(&self) -> Vec<Cycle> {
        let nodes: Vec<&ModPath> = self.files.keys().collect();
        let index: BTreeMap<&ModPath, usize> =
            nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        let adj: Vec<Vec<usize>> = nodes
            .iter()
            .map(|m| {
                self.edges
                    .get(*m)
                    .map(|e| e.keys().filter_map(|t| index.get(t).copied()).collect())
                    .unwrap_or_default()
            })
            .collect();
        strongly_connected(&adj)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|component| self.shortest_loop(&component, &nodes, &adj))
            .collect()
    }

    /// The shortest loop through the first module of `component` (breadth-first inside it).
    fn shortest_loop(&self, component: &[usize], nodes: &[&ModPath], adj: &[Vec<usize>]) -> Cycle {
        let inside: BTreeSet<usize> = component.iter().copied().collect();
        let start = *component.iter().min().expect("a component has members");
        let mut prev: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut end = None;
        'search: while let Some(n) = queue.pop_front() {
            for &next in &adj[n] {
                if !inside.contains(&next) {
                    continue;
                }
                if next == start {
                    end = Some(n);
                    break 'search;
                }
                if let std::collections::btree_map::Entry::Vacant(v) = prev.entry(next) {
                    v.insert(n);
                    queue.push_back(next);
                }
            }
        }
        let mut order = vec![end.expect("a component of two or more modules has a loop")];
        while *order.last().unwrap() != start {
            order.push(prev[order.last().unwrap()]);
        }
        order.reverse();
        let modules: Vec<ModPath> = order.iter().map(|&i| nodes[i].clone()).collect();
        let sites = (0..modules.len())
            .map(|i| {
                self.uses(&modules[i], &modules[(i + 1) % modules.len()])
                    .expect("an edge of the loop")
                    .clone()
            })
            .collect();
        let mut group: Vec<ModPath> = component.iter().map(|&i| nodes[i].clone()).collect();
        group.sort();
        Cycle {
            group,
            modules,
            sites,
        }
    }
}

/// Every `.rs` file below `dir` but the crate roots and `bin/`, as modules.
fn collect_files(
    src: &Path,
    dir: &Path,
    out: &mut BTreeMap<ModPath, PathBuf>,
) -> Result<(), Error> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::Io(dir.to_path_buf(), e))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Io(dir.to_path_buf(), e))?;
    entries.sort();
    for path in entries {
        let rel = path.strip_prefix(src).expect("below src");
        if path.is_dir() {
            if rel != Path::new("bin") {
                collect_files(src, &path, out)?;
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") || dir == src && is_root(&path) {
            continue;
        }
        let mut module: ModPath = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        out.insert(module, path);
    }
    Ok(())
}

fn is_root(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == "lib.rs" || n == "main.rs")
}

/// Tarjan's algorithm, iterative: the strongly connected components of `adj`.
fn strongly_connected(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = adj.len();
    let (mut index, mut low) = (vec![usize::MAX; n], vec![0; n]);
    let (mut on_stack, mut stack, mut out) = (vec![false; n], Vec::new(), Vec::new());
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = adj[v].get(*child) {
                *child += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                loop {
                    let w = stack.pop().expect("v is on the stack");
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(component);
            }
        }
    }
    out
}

/// Walks one file and records the module each path lands in.
struct UseFinder<'a> {
    known: &'a BTreeSet<ModPath>,
    file_module: &'a ModPath,
    /// Inline `mod name { .. }` blocks around the current item.
    inline: Vec<String>,
    found: Vec<(ModPath, usize)>,
}

impl UseFinder<'_> {
    fn current(&self) -> ModPath {
        let mut m = self.file_module.clone();
        m.extend(self.inline.iter().cloned());
        m
    }

    /// Resolves a path's leading segments to a module, and records it.
    fn record(&mut self, segments: &[String], line: usize) {
        let Some(first) = segments.first() else {
            return;
        };
        let mut base = self.current();
        let mut rest = segments;
        match first.as_str() {
            "crate" => {
                base.clear();
                rest = &segments[1..];
            }
            "self" => rest = &segments[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            _ => {
                // 2018 paths: a name is a child module of the current module if one exists;
                // anything else (a local item, a prelude name, another crate) is not a module.
                let mut child = base.clone();
                child.push(first.clone());
                if !self.known.contains(&child) {
                    return;
                }
            }
        }
        // Attribute uses from inline modules to their file: `mod tests { use super::*; }`
        // resolves to the file's own module and is dropped as a self-use.
        let mut target = base;
        for seg in rest {
            let mut deeper = target.clone();
            deeper.push(seg.clone());
            if self.known.contains(&deeper) {
                target = deeper;
            } else {
                break;
            }
        }
        if self.known.contains(&target) {
            self.found.push((target, line));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.record(&prefix.clone(), n.ident.span().start().line);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.record(&prefix.clone(), r.ident.span().start().line);
                prefix.pop();
            }
            syn::UseTree::Glob(g) => {
                self.record(&prefix.clone(), g.star_token.spans[0].start().line);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// Paths written inside macro invocations: runs of `ident :: ident :: ...` that start at
    /// `crate`, `self` or `super`.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            if let TokenTree::Group(g) = &trees[i] {
                self.tokens(g.stream());
                i += 1;
                continue;
            }
            let starts = matches!(&trees[i], TokenTree::Ident(id)
                if id == "crate" || id == "self" || id == "super");
            if !starts {
                i += 1;
                continue;
            }
            let line = trees[i].span().start().line;
            let mut segments = vec![trees[i].to_string()];
            let mut j = i + 1;
            while j + 2 < trees.len() + 1 {
                let colons = matches!((&trees.get(j), &trees.get(j + 1)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                        if a.as_char() == ':' && b.as_char() == ':');
                match (colons, trees.get(j + 2)) {
                    (true, Some(TokenTree::Ident(id))) => {
                        segments.push(id.to_string());
                        j += 3;
                    }
                    _ => break,
                }
            }
            self.record(&segments, line);
            i = j.max(i + 1);
        }
    }
}

impl<'ast> Visit<'ast> for UseFinder<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.inline.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.inline.pop();
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(s) = path.segments.first() {
            self.record(&segments, s.ident.span().start().line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        self.tokens(mac.tokens.clone());
    }
}
