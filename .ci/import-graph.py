#!/usr/bin/env python3
"""stn-proto's module import graph, file by file, and its import circles.

Reads every `.rs` file under stn-proto/src, takes each path that names
something of the crate (`crate::…`, `super::…`, `self::…`, or a sibling or
child module named at the start of a `use`), resolves it to the file that
defines it (following `pub use` re-exports, so `crate::Config` counts as an
import of the file that defines `Config`, not of lib.rs), and prints the
import circles: the strongly connected components of more than one file.
Comments and `mod` declarations are not imports, and test-only code
(`#[cfg(test)]` modules and `use`s) is left out: nothing imports a test, so
it cannot close a circle of the library's own.

    python3 .ci/import-graph.py            # circles, then a summary line
    python3 .ci/import-graph.py --edges    # also every edge, "from -> to"
    python3 .ci/import-graph.py DIR        # another copy of stn-proto/src

Exits 1 when a circle goes through a file under `profile/`: the profile
table sits above every configuration type and imports them; nothing it
imports may import it back.
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stn-proto", "src")
# Another source tree (an older checkout, say): the first argument not an option.
ROOT = next((a for a in sys.argv[1:] if not a.startswith("-")), ROOT)


def strip_comments(text):
    """Drops // and /* */ comments and the contents of string literals."""
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
        elif c == '"' or (c == "b" and text.startswith('b"', i)):
            i = text.find('"', i) + 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:])
            i += len(m.group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Module:
    def __init__(self, path, file):
        self.path = path  # ("engine", "pool")
        self.file = file  # relative file name
        self.children = {}  # name -> Module (file modules and inline modules)
        self.reexports = {}  # name -> full path (tuple) it re-exports
        self.globs = []  # paths re-exported with `pub use x::*`
        self.uses = []  # (path tuple, is_glob) as written, resolved later
        self.inline = False


def module_file(dirpath, name):
    for cand in (os.path.join(dirpath, name + ".rs"), os.path.join(dirpath, name, "mod.rs")):
        if os.path.exists(cand):
            return cand
    return None


def parse_use_tree(s):
    """`a::{b, c::{d, e as f}, g::*}` -> [(("a", "b"), "b"), (("a", "c", "e"), "f"),
    (("a", "g"), None), ...]: each leaf path with the name it binds (None for a glob)."""
    toks = re.findall(r"::|[{},*]|\w+", s)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take():
        pos[0] += 1
        return toks[pos[0] - 1]

    out = []

    def tree(prefix):
        path = list(prefix)
        while True:
            t = peek()
            if t == "{":
                take()
                while peek() not in ("}", None):
                    tree(tuple(path))
                    if peek() == ",":
                        take()
                take()
                return
            if t == "*":
                take()
                out.append((tuple(path), None))
                return
            path.append(take())
            if peek() == "::":
                take()
                continue
            alias = path[-1]
            if peek() == "as":
                take()
                alias = take()
            if path[-1] == "self":
                path.pop()
                if alias == "self":
                    alias = path[-1] if path else None
            out.append((tuple(path), alias))
            return

    tree(())
    return out


def find_block_end(text, start):
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def load(path, file, text, modules):
    mod = Module(path, os.path.relpath(file, ROOT))
    modules[path] = mod
    dirpath = os.path.dirname(file)
    base = os.path.basename(file)
    if base not in ("mod.rs", "lib.rs"):
        dirpath = os.path.join(dirpath, base[:-3])
    scan(mod, text, dirpath, modules)
    return mod


def is_test_only(text, start):
    """Whether the item starting at `start` carries `#[cfg(test)]`."""
    before = text[:start].rstrip()
    while before.endswith("]"):
        open_at = before.rfind("#[")
        if open_at < 0:
            return False
        if re.fullmatch(r"#\[\s*cfg\s*\(\s*test\s*\)\s*\]", before[open_at:]):
            return True
        before = before[:open_at].rstrip()
    return False


def scan(mod, text, dirpath, modules):
    # Test-only `use` items go first.
    text = re.sub(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?use\s+[^;]+;", " ", text)
    pos = 0
    while True:
        m = re.search(r"(?m)^\s*(pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])", text[pos:])
        if not m:
            break
        name = m.group(2)
        start = pos + m.start()
        test_only = is_test_only(text, start)
        if m.group(3) == ";" and test_only:
            pos = pos + m.end()
        elif m.group(3) == ";":
            f = module_file(dirpath, name)
            if f:
                with open(f, encoding="utf-8") as fh:
                    child_text = strip_comments(fh.read())
                mod.children[name] = load(mod.path + (name,), f, child_text, modules)
            pos = pos + m.end()
        else:
            open_at = pos + m.end() - 1
            end = find_block_end(text, open_at)
            body = text[open_at + 1:end]
            if not test_only:
                child = Module(mod.path + (name,), mod.file)
                child.inline = True
                modules[child.path] = child
                mod.children[name] = child
                scan(child, body, os.path.join(dirpath, name), modules)
            text = text[:start] + " " * (end + 1 - start) + text[end + 1:]
            pos = start
    for m in re.finditer(r"(?s)\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text):
        public = m.group(1) is not None and m.group(1).strip() == "pub"
        for path, alias in parse_use_tree(m.group(2)):
            mod.uses.append((path, alias is None))
            if public and alias:
                mod.reexports[alias] = path
            elif public and alias is None:
                mod.globs.append(path)
    # Paths used in place: `crate::a::b`, `super::x`, `self::y`.
    for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text):
        mod.uses.append((tuple(m.group(1).split("::")), False))


def absolute(mod, path):
    """Makes a written path absolute (a tuple from the crate root)."""
    if not path:
        return None
    head = path[0]
    if head == "crate":
        return path[1:]
    if head == "super":
        base = mod.path
        while path and path[0] == "super":
            base, path = base[:-1], path[1:]
        return base + path
    if head == "self":
        return mod.path + path[1:]
    if head in mod.children:
        return mod.path + path
    return None  # an external crate (std, bytes, …)


def resolve(modules, path, depth=0):
    """The module that defines the item at `path` (absolute)."""
    if depth > 20:
        return None
    cur = modules[()]
    for i, seg in enumerate(path):
        if seg in cur.children:
            cur = cur.children[seg]
            continue
        if seg in cur.reexports:
            target = absolute(cur, cur.reexports[seg])
            if target is None:
                return cur
            return resolve(modules, target + path[i + 1:], depth + 1)
        for g in cur.globs:
            target = absolute(cur, g)
            if target is None:
                continue
            sub = resolve(modules, target + (seg,), depth + 1)
            if sub is not None and sub.path != target:
                return sub
        return cur
    return cur


def file_of(modules, mod):
    return mod.file


def tarjan(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
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
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def main():
    with open(os.path.join(ROOT, "lib.rs"), encoding="utf-8") as fh:
        modules = {}
        load((), os.path.join(ROOT, "lib.rs"), strip_comments(fh.read()), modules)
    edges = {}
    files = set()
    for mod in modules.values():
        files.add(mod.file)
        for path, _glob in mod.uses:
            target = absolute(mod, path)
            if target is None:
                continue
            dest = resolve(modules, target)
            if dest is None or dest.file == mod.file:
                continue
            edges.setdefault(mod.file, set()).add(dest.file)
    if "--edges" in sys.argv:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b}")
        print()
    circles = [c for c in tarjan(files, edges) if len(c) > 1]
    bad = False
    for c in sorted(circles, key=lambda c: (-len(c), c)):
        through_profile = any(f.startswith("profile/") for f in c)
        bad |= through_profile
        mark = "  <- through profile/" if through_profile else ""
        print(f"circle of {len(c)} files{mark}: {' '.join(c)}")
    n_edges = sum(len(v) for v in edges.values())
    print(f"{len(files)} files, {n_edges} import edges, {len(circles)} circles; "
          f"through profile/: {'yes' if bad else 'none'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
