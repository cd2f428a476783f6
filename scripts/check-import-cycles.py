#!/usr/bin/env python3
"""Fails when a module of a Rust crate imports a module that imports it back.

Usage: scripts/check-import-cycles.py SRC_DIR [SRC_DIR ...]   (e.g. host/src shmem-device/src)

Each file under SRC_DIR is one module (lib.rs the crate root, foo.rs and foo/mod.rs the module
`foo`, foo/bar.rs `foo::bar`; src/bin/ holds other crates and is skipped). Inline modules
(`mod tests { ... }`) belong to their file. Module A depends on module B when A's code (not
its comments) names a path into B: `use crate::b::..`, `use super::b::..`, `crate::b::f()`,
`super::X` (the parent module itself), or `b::..` where `b` is a child module of A. A path
resolves to the longest prefix of it that is a module; `mod b;` declarations are not
dependencies. Every strongly connected component of more than one module is a loop: the
script prints its modules and the lines that make the edges, and exits 1.

`--self-test` plants a loop in a scratch crate and checks that it is reported.
"""

import os
import re
import sys
import tempfile

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_files(src):
    """{module path tuple: file} for the crate rooted at `src`."""
    mods = {}
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        parts = [] if rel == "." else rel.split(os.sep)
        if parts[:1] == ["bin"]:
            dirnames[:] = []
            continue
        for name in filenames:
            if not name.endswith(".rs"):
                continue
            stem = name[:-3]
            if not parts and stem in ("lib", "main"):
                path = ()
            elif stem == "mod":
                path = tuple(parts)
            else:
                path = tuple(parts) + (stem,)
            mods[path] = os.path.join(dirpath, name)
    return mods


def strip_code(text):
    """The text with comments and string/char literals blanked, lines kept."""
    out = []
    i, n = 0, len(text)
    depth = 0  # block comment nesting
    while i < n:
        c = text[i]
        if depth:
            if text.startswith("*/", i):
                depth -= 1
                i += 2
            elif text.startswith("/*", i):
                depth += 1
                i += 2
            else:
                out.append("\n" if c == "\n" else " ")
                i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth = 1
            i += 2
        elif c == "r" and re.match(r'r#*"', text[i:]) and not re.match(r"\w", text[i - 1 : i] or " "):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i : j + 1]))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            out.append(" " * len(m.group(0)))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def use_paths(code):
    """Yields (offset, [segments]) for every path named in `use` trees, groups expanded."""
    for m in re.finditer(r"\buse\s+([^;]*);", code):
        tree, base = m.group(1), m.start(1)
        yield from expand_tree(re.sub(r"\s+", "", tree), [], base)


def expand_tree(tree, prefix, offset):
    depth, start, items = 0, 0, []
    for k, ch in enumerate(tree):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(tree[start:k])
            start = k + 1
    items.append(tree[start:])
    for item in filter(None, items):
        brace = item.find("{")
        if brace >= 0:
            head = [s for s in item[:brace].split("::") if s]
            yield from expand_tree(item[brace + 1 : item.rindex("}")], prefix + head, offset)
        else:
            segs = [s for s in re.split(r"\bas\b", item)[0].split("::") if s]
            yield offset, prefix + segs


def code_paths(code):
    """Yields (offset, [segments]) for paths in expressions and types (outside `use`)."""
    masked = re.sub(r"\buse\s+[^;]*;", lambda m: " " * len(m.group(0)), code)
    for m in re.finditer(r"(?<![\w:$])((?:%s::)+%s)" % (IDENT, IDENT), masked):
        yield m.start(), m.group(1).split("::")


def inline_module_spans(code):
    """(start, end) offsets of inline `mod name { ... }` bodies."""
    spans = []
    for m in re.finditer(r"\bmod\s+%s\s*\{" % IDENT, code):
        depth, k = 1, m.end()
        while k < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[k], 0)
            k += 1
        spans.append((m.end(), k))
    return spans


def resolve(segs, here, inline, mods):
    """The module a path names, or None (another crate, a local name)."""
    if not segs:
        return None
    base = list(here)
    head, rest = segs[0], segs[1:]
    if head == "crate":
        base = []
    elif head == "self":
        pass
    elif head == "super":
        # Inside an inline module, the first `super` is the file's own module.
        if not inline:
            base = base[:-1]
        while rest[:1] == ["super"]:
            base, rest = base[:-1], rest[1:]
    elif tuple(base + [head]) in mods:
        rest = segs
    else:
        return None
    path = base + rest
    for k in range(len(path), len(base) - 1, -1):
        if tuple(path[:k]) in mods:
            return tuple(path[:k])
    return tuple(base) if tuple(base) in mods else None


def graph(src):
    mods = module_files(src)
    edges = {}  # (a, b) -> [(file, line)]
    for here, file in mods.items():
        text = open(file, encoding="utf-8").read()
        code = strip_code(text)
        spans = inline_module_spans(code)
        for offset, segs in list(use_paths(code)) + list(code_paths(code)):
            inline = any(a <= offset < b for a, b in spans)
            target = resolve(segs, here, inline, mods)
            if target is None or target == here:
                continue
            line = code.count("\n", 0, offset) + 1
            edges.setdefault((here, target), []).append((file, line))
    return mods, edges


def cycles(mods, edges):
    """Strongly connected components of more than one module (Tarjan)."""
    succ = {m: [] for m in mods}
    for a, b in edges:
        succ[a].append(b)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in mods:
        if v not in index:
            visit(v)
    return out


def shortest_loop(comp, edges):
    """The shortest cycle inside strongly connected `comp`, as [m0, m1, ..., m0]."""
    members = set(comp)
    succ = {m: sorted(b for (a, b) in edges if a == m and b in members) for m in comp}
    best = None
    for start in comp:
        # Breadth first from `start` until an edge leads back to it.
        prev, frontier, last = {start: None}, [start], None
        while frontier and last is None:
            nxt = []
            for v in frontier:
                if start in succ[v]:
                    last = v
                    break
                for w in succ[v]:
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
        if last is None:
            continue
        path = [last]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        loop = path[::-1] + [start]
        if best is None or len(loop) < len(best):
            best = loop
    return best


def name(path):
    return "crate" if not path else "::".join(path)


def check(src):
    mods, edges = graph(src)
    found = cycles(mods, edges)
    for comp in found:
        print(f"{src}: import loop among {len(comp)} modules: {', '.join(name(m) for m in comp)}")
        print("  the shortest loop among them:")
        loop = shortest_loop(comp, edges)
        for a, b in zip(loop, loop[1:]):
            file, line = edges[(a, b)][0]
            print(f"  {name(a)} -> {name(b)}  ({file}:{line})")
    if not found:
        print(f"{src}: {len(mods)} modules, {len(edges)} imports, no loops")
    return not found


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        os.makedirs(os.path.join(src, "a"))
        files = {
            "lib.rs": "mod a;\nmod b;\n// use crate::b::X; (a comment is no import)\n",
            "a/mod.rs": "mod inner;\npub use inner::Y;\n",
            "a/inner.rs": "pub struct Y;\n#[cfg(test)]\nmod tests { use super::*; }\n",
            "b.rs": 'use crate::a::Y;\npub struct X;\nconst S: &str = "crate::c::Z";\n',
        }
        for rel, body in files.items():
            with open(os.path.join(src, rel), "w") as f:
                f.write(body)
        assert check(src), "a loop-free crate was reported"
        with open(os.path.join(src, "a", "inner.rs"), "a") as f:
            f.write("fn planted() -> crate::b::X { crate::b::X }\n")
        assert not check(src), "the planted loop a::inner -> b -> a -> a::inner was missed"
    print("self-test passed")
    return True


def main(argv):
    if argv == ["--self-test"]:
        return 0 if self_test() else 1
    if not argv:
        print(__doc__)
        return 2
    ok = all([check(src) for src in argv])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
