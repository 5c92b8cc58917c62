#!/usr/bin/env python3
"""Fail on an import circle in the library's source, between files or
between modules.

Reads every `.rs` file of the library under src/, and of each program
that is a folder (src/bin/NAME/main.rs) as a crate of its own, drops
comments, strings and `#[cfg(test)]` items, and collects the paths each
file names: `use` trees, `crate::`/`super::`/`self::` paths, and the names
of its own child modules. A path is resolved to the file that defines the
item, following `pub use` re-exports, so a `mod.rs` that only declares and
re-exports its children is no part of a circle.

Two checks:
- files: no two files reach each other through their references;
- modules: under each module, no two of its children (files or folders,
  each with everything beneath it) reach each other.

Usage: build-aux/check-cycles.py [src-dir]   (prints the circles, exit 1)
       build-aux/check-cycles.py --self-test
"""

import os
import re
import sys
from collections import defaultdict

ITEM_RE = re.compile(
    r"\b(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+|async\s+|const\s+|extern\s+\"C\"\s+)*"
    r"(?:fn|struct|enum|trait|type|const|static|union|mod)\s+([A-Za-z_][A-Za-z0-9_]*)"
)
MACRO_RE = re.compile(r"macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)")


def strip_source(text):
    """Comments, string and char literals out; code kept with its lines."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"' or (c == "b" and text.startswith('b"', i)):
            i += 2 if c == "b" else 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}') but not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                i += len(m.group(0))
                out.append("' '")
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_test_items(code):
    """Remove `#[cfg(test)]` items (a `mod tests { … }` or a single item)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", code)
        if not m:
            return code
        j = m.end()
        # The item ends at its matching brace, or at a `;` before any brace.
        k = j
        while k < len(code) and code[k] not in "{;":
            k += 1
        if k < len(code) and code[k] == "{":
            depth = 0
            while k < len(code):
                if code[k] == "{":
                    depth += 1
                elif code[k] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
        code = code[: m.start()] + code[k + 1:]


def split_use_tree(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (as segment lists)."""
    tree = re.sub(r"\s+", "", tree)
    results = []

    def walk(prefix, s):
        # s is either `x::y::{...}` or `x::y` or `x as z` or `*`
        depth, parts, cur = 0, [], ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        for part in parts:
            brace = part.find("{")
            if brace >= 0:
                head = part[:brace].rstrip(":")
                inner = part[brace + 1: part.rfind("}")]
                segs = [x for x in head.split("::") if x]
                walk(prefix + segs, inner)
            else:
                part = re.sub(r"as[A-Za-z_][A-Za-z0-9_]*$", "", part) if "as" in part else part
                segs = [x for x in part.split("::") if x]
                if segs == ["self"]:
                    results.append(prefix)
                elif segs:
                    results.append(prefix + segs)

    walk([], tree)
    return results


class Crate:
    def __init__(self, src, root="lib"):
        self.src = src
        self.root = root
        self.files = {}  # module path (tuple) -> file path
        self.code = {}  # module path -> stripped code
        test_mods = set()
        for folder, _dirs, names in os.walk(src):
            for name in names:
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, src)
                if root == "lib" and (rel.startswith("bin" + os.sep) or rel == "main.rs"):
                    continue
                parts = rel[:-3].split(os.sep)
                if parts[-1] in ("mod", root):
                    parts = parts[:-1]
                mod = tuple(parts)
                with open(path, encoding="utf-8") as f:
                    code = strip_source(f.read())
                for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code):
                    test_mods.add(mod + (m.group(1),))
                self.code[mod] = drop_test_items(code)
                self.files[mod] = path
        # Files that are only compiled for tests are no part of the house.
        for mod in list(self.files):
            if any(mod[: len(t)] == t for t in test_mods):
                del self.files[mod], self.code[mod]
        self.items = {m: self._items(c) for m, c in self.code.items()}
        self.uses = {m: self._uses(c) for m, c in self.code.items()}

    def _items(self, code):
        names = set(ITEM_RE.findall(code)) | set(MACRO_RE.findall(code))
        return names

    def _uses(self, code):
        """[(segments, is_pub)] of the file's `use` declarations."""
        out = []
        for m in re.finditer(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", code):
            for segs in split_use_tree(m.group(2)):
                out.append((segs, bool(m.group(1))))
        return out

    def absolute(self, mod, segs):
        """Turn a path as written in `mod` into an absolute one, or None."""
        if not segs:
            return None
        head = segs[0]
        if head == "crate":
            return list(segs[1:])
        if head == "parley":
            # The library, by its name: itself, or another crate for a program.
            return list(segs[1:]) if self.root == "lib" else None
        if head == "self":
            return list(mod) + list(segs[1:])
        if head == "super":
            base = list(mod)
            rest = list(segs)
            while rest and rest[0] == "super":
                if not base:
                    return None
                base.pop()
                rest.pop(0)
            return base + rest
        if tuple(mod) + (head,) in self.files:
            return list(mod) + list(segs)
        return None

    def resolve(self, segs, seen=None):
        """The file module that defines what the absolute path names."""
        seen = seen or set()
        key = tuple(segs)
        if key in seen:
            return None
        seen.add(key)
        k = len(segs)
        while k > 0 and tuple(segs[:k]) not in self.files:
            k -= 1
        if tuple(segs[:k]) not in self.files:
            return None
        mod = tuple(segs[:k])
        rest = segs[k:]
        if not rest or rest[0] == "*":
            return mod
        item = rest[0]
        if item in self.items[mod]:
            return mod
        # Re-exported? Follow `pub use` (named or glob) to the defining file.
        for use, is_pub in self.uses[mod]:
            if not is_pub:
                continue
            target = self.absolute(mod, use)
            if target is None:
                continue
            if use[-1] == item:
                found = self.resolve(target + rest[1:], seen)
                if found:
                    return found
            elif use[-1] == "*":
                found = self.resolve(target[:-1] + rest, seen)
                if found and found != tuple(target[:-1]):
                    return found
        return mod

    def edges(self):
        graph = defaultdict(set)
        for mod, code in self.code.items():
            paths = []
            for m in re.finditer(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", code):
                if m.group(1):
                    continue  # a re-export is a facade, not a reference
                paths += split_use_tree(m.group(2))
            body = re.sub(r"\buse\s+[^;]+;", "", code)
            for m in re.finditer(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)", body):
                paths.append(m.group(1).split("::"))
            # Child modules named without `self::`.
            children = {c[-1] for c in self.files if len(c) == len(mod) + 1 and c[: len(mod)] == mod}
            for m in re.finditer(r"(?<![:\w])([a-z_][a-z0-9_]*)::([A-Za-z_][A-Za-z0-9_]*)", body):
                if m.group(1) in children:
                    paths.append(["self", m.group(1), m.group(2)])
            for segs in paths:
                target = self.absolute(mod, segs)
                if target is None:
                    continue
                found = self.resolve(target)
                if found is not None and found != mod:
                    graph[mod].add(found)
        return graph


def cycles(nodes, graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def name(mod):
    return "::".join(mod) or "crate"


def check(crate, problems):
    graph = crate.edges()

    for comp in cycles(crate.files.keys(), graph):
        problems.append("files: " + " ↔ ".join(name(m) for m in comp))
        for a in comp:
            for b in sorted(graph[a]):
                if b in comp:
                    problems.append(f"    {name(a)} → {name(b)}")

    # Modules: for each edge, the two children of the deepest common module.
    siblings = defaultdict(lambda: defaultdict(set))
    for a, targets in graph.items():
        for b in targets:
            k = 0
            while k < min(len(a), len(b)) and a[k] == b[k]:
                k += 1
            if k == len(a) or k == len(b):
                continue  # a module and one of its own: the file check covers it
            siblings[a[:k]][a[: k + 1]].add(b[: k + 1])
    for parent in sorted(siblings):
        g = siblings[parent]
        nodes = set(g) | {x for t in g.values() for x in t}
        for comp in cycles(nodes, g):
            problems.append(f"modules under {name(parent)}: " + " ↔ ".join(name(m) for m in comp))


def self_test():
    """The check finds what it is for, and passes what it must pass."""
    import tempfile

    def run(tree):
        with tempfile.TemporaryDirectory() as d:
            for path, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(d, path)), exist_ok=True)
                with open(os.path.join(d, path), "w", encoding="utf-8") as f:
                    f.write(text)
            problems = []
            crates = [Crate(d)]
            if os.path.isdir(os.path.join(d, "bin", "tool")):
                crates.append(Crate(os.path.join(d, "bin", "tool"), root="main"))
            for c in crates:
                check(c, problems)
            return problems

    lib = "pub mod a;\npub mod b;\n"
    # A file that uses one that uses it back (through `super::` and `crate::`).
    assert run({"lib.rs": lib, "a.rs": "use crate::b::B;\npub struct A;\n",
                "b.rs": "pub struct B(super::a::A);\n"}), "a circle of two files"
    # One way only, and a name in a comment or a string, is fine.
    assert not run({"lib.rs": lib, "a.rs": "use crate::b::B;\npub struct A(B);\n",
                    "b.rs": "// crate::a::A\npub struct B;\nconst S: &str = \"crate::a::A\";\n"})
    # A test module may use its parent.
    assert not run({"lib.rs": lib, "a.rs": "use crate::b::B;\n#[cfg(test)]\nmod tests { use crate::b::*; }\n",
                    "b.rs": "pub struct B;\n#[cfg(test)]\nmod tests { use crate::a::*; }\n"})
    # A mod.rs that re-exports its files is no part of a circle; one that uses them is.
    folder = {"lib.rs": "pub mod m;\n", "m/mod.rs": "mod x;\nmod y;\npub use x::X;\n",
              "m/x.rs": "pub struct X(super::y::Y);\n", "m/y.rs": "pub struct Y;\n"}
    assert not run(folder)
    assert run(dict(folder, **{"m/y.rs": "pub struct Y(super::X);\n"})), "through a re-export"
    assert run(dict(folder, **{"m/mod.rs": "mod x;\nmod y;\npub use x::X;\npub struct Z;\nfn f() { y::g(); }\n",
                               "m/y.rs": "pub fn g() {}\npub struct Y(super::Z);\n"})), "mod.rs and a file"
    # Two modules that reach each other through files deep inside them.
    assert run({"lib.rs": lib, "a/mod.rs": "pub mod p;\n", "a/p.rs": "use crate::b::q::Q;\npub struct P;\n",
                "b/mod.rs": "pub mod q;\npub mod r;\n", "b/q.rs": "pub struct Q;\n",
                "b/r.rs": "use crate::a::p::P;\n"}), "modules a and b"
    # A program's own files.
    assert run({"lib.rs": "", "bin/tool/main.rs": "mod c;\nuse c::C;\npub struct M;\nfn main() {}\n",
                "bin/tool/c.rs": "pub struct C(crate::M);\n"}), "a program's files"
    print("ok")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    problems = []
    crates = [Crate(src)]
    # Programs of more than one file (src/bin/NAME/main.rs) are crates too.
    bins = os.path.join(src, "bin")
    for name in sorted(os.listdir(bins)) if os.path.isdir(bins) else []:
        if os.path.isfile(os.path.join(bins, name, "main.rs")):
            crates.append(Crate(os.path.join(bins, name), root="main"))
    for crate in crates:
        check(crate, problems)
    files = sum(len(c.files) for c in crates)
    if problems:
        print("import circles:")
        print("\n".join(problems))
        return 1
    print(f"no import circle among {files} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
