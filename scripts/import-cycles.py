#!/usr/bin/env python3
"""Draws the file-level import graph of src/ and prints its cycles.

An edge A -> B means that file A names an item of file B through a path of the crate
itself: a `use crate::...`, `use super::...`, `use self::...` or `use tavli_engine::...`
statement, or such a path in the code (`super::kernels::outputs(..)`,
`crate::eval::net::has_avx2()`), or a path through a child module declared in A. A
path is followed down the module tree as far as it names modules (src/a/b.rs is
module a::b, src/a/mod.rs module a, `#[path]` attributes honoured), and an item that a
module re-exports (`pub use child::Item` in a mod.rs) is followed to the file that
defines it. Paths of other crates (std, tonic, ...), comments and strings do not
count.

Test code is left out unless --tests: `#[cfg(test)]` items (the `mod tests { .. }`
blocks, test-only files and imports), since a test may use what the module under test
is used by. `#[cfg(doc)]` imports count.

A cycle is a strongly connected set of two or more files (Tarjan); for each, the
script prints its files and every edge inside it with the line that makes it.

    python3 scripts/import-cycles.py [--src src] [--tests] [--dot FILE]

--dot FILE writes the whole graph in Graphviz's DOT language (`dot -Tsvg FILE`), the
cycles' edges in red. Exit status: 0 without a cycle, 1 with one (so it can become a
CI check), 2 on bad arguments.
"""

import argparse
import os
import re
import signal
import sys
from collections import defaultdict

ROOTS = ("crate", "super", "self", "tavli_engine")


def strip(text):
    """The text with comments, string and char literals blanked (same offsets)."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            j = n if end < 0 else end + 1 + len(m.group(1))
            blank(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", text[i:])
            if m:
                blank(i, i + len(m.group(0)))
                i += len(m.group(0))
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def block_end(text, i):
    """Offset just past the item starting at `i`: through its `;`, or through the
    brace block it opens first."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == ";" and depth == 0:
            return i + 1
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


ATTR = re.compile(r"#\s*!?\s*\[")


def attr_end(text, i):
    """Offset just past the attribute `#[...]` starting at `i`."""
    depth = 0
    while i < len(text):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def item_after_attrs(text, i):
    """Skips white space and attributes from `i`; the offset of the item."""
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        m = ATTR.match(text, i)
        if not m:
            return i
        i = attr_end(text, i)


def drop_tests(text):
    """The text with every `#[cfg(test)]` item blanked; also the names of test-only
    child modules (`#[cfg(test)] mod x;`)."""
    out = list(text)
    test_mods = set()
    for m in re.finditer(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]", text):
        start = item_after_attrs(text, m.end())
        mm = re.match(r"(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text[start:])
        if mm:
            test_mods.add(mm.group(3))
        end = block_end(text, start)
        for k in range(m.start(), end):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out), test_mods


def module_decls(text):
    """`mod name;` (with its `#[path]`) and inline `mod name { .. }` declarations:
    [(name, path attribute or None, inline span or None)]."""
    decls = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*([;{])", text):
        path = None
        before = text[max(0, m.start() - 200):m.start()]
        pm = re.search(r'#\s*\[\s*path\s*=\s*"([^"]+)"\s*\]\s*(#\s*\[[^\]]*\]\s*)*(pub(\([^)]*\))?\s+)?$', before)
        if pm:
            path = pm.group(1)
        span = None
        if m.group(2) == "{":
            span = (m.end() - 1, block_end(text, m.end() - 1))
        decls.append((m.group(1), path, span))
    return decls


def use_trees(text):
    """Every `use` statement: (offset, end, [segment lists])."""
    out = []
    for m in re.finditer(r"(?<![\w:])use\s+", text):
        end = text.find(";", m.end())
        if end < 0:
            continue
        body = re.sub(r"\s*(::|[{},])\s*", r"\1", " ".join(text[m.end():end].split()))
        out.append((m.start(), end + 1, expand(body)))
    return out


def expand(tree, prefix=()):
    """Paths of a use tree `a::b::{c, d::{self, e as f}, *}` as segment tuples
    (`self` names the module itself; a rename is dropped)."""
    paths = []
    depth, parts, cur = 0, [], ""
    # Split the top level at commas outside braces.
    for c in tree:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if "{" in part:
            head, rest = part.split("{", 1)
            head = tuple(s for s in head.split("::") if s)
            paths += expand(rest.rsplit("}", 1)[0], prefix + head)
            continue
        part = re.sub(r"\s+as\s+\w+$", "", part)
        segs = tuple(s for s in part.split("::") if s)
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        paths.append(prefix + segs)
    return paths


def is_pub(text, start):
    """Whether the `use` at `start` is a re-export (`pub use`, `pub(crate) use`)."""
    return re.search(r"\bpub\s*(\([^)]*\))?\s*$", text[max(0, start - 20):start]) is not None


class Crate:
    def __init__(self, src, with_tests):
        self.src = src
        self.with_tests = with_tests
        self.files = {}  # rel path -> dict(module=tuple, root=tuple, text=str)
        self.modules = {}  # module path -> rel path of the file holding it
        self.children = defaultdict(set)  # module path -> child module names
        self.reexports = defaultdict(dict)  # module path -> name -> (module ctx, segments)
        self.load()

    def load(self):
        rels = []
        for dirpath, _, names in os.walk(self.src):
            for name in names:
                if name.endswith(".rs"):
                    rels.append(os.path.relpath(os.path.join(dirpath, name), self.src))
        rels.sort()
        texts = {}
        for rel in rels:
            with open(os.path.join(self.src, rel), encoding="utf-8") as f:
                texts[rel] = strip(f.read())
        # Module paths from the layout; `#[path]` declarations override it.
        module_of = {}
        for rel in rels:
            parts = rel[:-3].split(os.sep)
            if parts[0] == "bin" and len(parts) == 2:
                module_of[rel] = ("bin", parts[1])
            elif parts in (["lib"], ["main"]):
                module_of[rel] = ()
            elif parts[-1] == "mod":
                module_of[rel] = tuple(parts[:-1])
            else:
                module_of[rel] = tuple(parts)
        test_only = set()
        for rel in rels:
            code, test_mods = drop_tests(texts[rel])
            for name, path, span in module_decls(texts[rel]):
                if path and span is None:
                    target = os.path.normpath(os.path.join(os.path.dirname(rel), path))
                    if target in module_of:
                        module_of[target] = module_of[rel] + (name,)
                        if name in test_mods:
                            test_only.add(target)
        for rel in rels:
            if rel in test_only and not self.with_tests:
                continue
            text = texts[rel] if self.with_tests else drop_tests(texts[rel])[0]
            mod = module_of[rel]
            root = mod if rel.startswith("bin" + os.sep) else ()
            self.files[rel] = dict(module=mod, root=root, text=text)
            self.modules[mod] = rel
        for rel, info in self.files.items():
            mod, text = info["module"], info["text"]
            if mod:
                self.children[mod[:-1]].add(mod[-1])
            info["inline"] = []
            for name, _, span in module_decls(text):
                if span:
                    info["inline"].append((span, name))
            for name, _, span in module_decls(text):
                ctx = self.inline_module(rel, span[0]) if span else mod
                self.children[ctx].add(name)
                if span:
                    self.modules.setdefault(ctx + (name,), rel)
            for start, end, paths in use_trees(text):
                if not is_pub(text, start):
                    continue
                ctx = self.inline_module(rel, start)
                for segs in paths:
                    if segs and segs[-1] != "*":
                        self.reexports[ctx][segs[-1]] = (ctx, segs, info["root"])

    def inline_module(self, rel, offset):
        """The module that the code at `offset` of `rel` is in (inline modules
        included)."""
        info = self.files[rel]
        mod = info["module"]
        for (a, b), name in sorted(info["inline"]):
            if a < offset < b:
                mod = mod + (name,)
        return mod

    def resolve(self, ctx, root, segs, seen=()):
        """The file an item path of module `ctx` (crate root `root`) names, or None
        for another crate's path."""
        if not segs:
            return None
        first, rest = segs[0], list(segs[1:])
        if first == "crate":
            base = root
        elif first == "tavli_engine":
            base = ()
        elif first in ("super", "self"):
            base = ctx
            segs = list(segs)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs.pop(0)
            rest = segs
        elif first in self.children[ctx]:
            base, rest = ctx + (first,), rest
        else:
            return None
        while rest and base + (rest[0],) in self.modules:
            base, rest = base + (rest[0],), rest[1:]
        if rest and rest[0] in self.reexports.get(base, {}) and (base, rest[0]) not in seen:
            rctx, rsegs, rroot = self.reexports[base][rest[0]]
            target = self.resolve(rctx, rroot, rsegs, seen + ((base, rest[0]),))
            if target:
                return target
        while base not in self.modules and base:
            base = base[:-1]
        return self.modules.get(base)

    def edges(self):
        """{(from, to): [(line, path text)]}."""
        out = defaultdict(list)
        for rel, info in self.files.items():
            text, root = info["text"], info["root"]

            def add(offset, segs):
                ctx = self.inline_module(rel, offset)
                target = self.resolve(ctx, root, tuple(segs))
                if target and target != rel:
                    line = text.count("\n", 0, offset) + 1
                    out[(rel, target)].append((line, "::".join(segs)))

            spans = []
            for start, end, paths in use_trees(text):
                spans.append((start, end))
                # A re-export (`pub use`) is followed where it is used, not an edge.
                if is_pub(text, start):
                    continue
                for segs in paths:
                    add(start, segs)
            names = "|".join(ROOTS)
            for m in re.finditer(r"(?<![\w:])((?:%s|[a-z_][a-z0-9_]*)(?:::[A-Za-z_]\w*)+)" % names, text):
                if any(a <= m.start() < b for a, b in spans):
                    continue
                add(m.start(), m.group(1).split("::"))
        return out


def tarjan(nodes, succ):
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(succ[v]):
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
            comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in comps if len(c) > 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    ap.add_argument("--tests", action="store_true", help="count test code too")
    ap.add_argument("--dot", metavar="FILE", help="write the graph as Graphviz DOT")
    args = ap.parse_args()
    if not os.path.isdir(args.src):
        ap.error(f"no folder {args.src}")
    crate = Crate(args.src, args.tests)
    edges = crate.edges()
    succ = defaultdict(set)
    for a, b in edges:
        succ[a].add(b)
    cycles = tarjan(crate.files, succ)
    in_cycle = {e for c in cycles for e in edges if e[0] in c and e[1] in c}
    if args.dot:
        with open(args.dot, "w", encoding="utf-8") as f:
            f.write("digraph imports {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n")
            for rel in sorted(crate.files):
                f.write(f'  "{rel}";\n')
            for a, b in sorted(edges):
                color = ' [color=red]' if (a, b) in in_cycle else ""
                f.write(f'  "{a}" -> "{b}"{color};\n')
            f.write("}\n")
    scope = "test code included" if args.tests else "test code left out"
    print(f"{len(crate.files)} files, {len(edges)} import edges ({scope}); "
          f"{len(cycles)} cycle{'' if len(cycles) == 1 else 's'}")
    for k, comp in enumerate(cycles, 1):
        print(f"strongly connected set {k} ({len(comp)} files):")
        for loop in short_loops(comp, succ):
            print("  cycle: " + " -> ".join(f"src/{f}" for f in loop + [loop[0]]))
        for a, b in sorted(e for e in in_cycle if e[0] in comp):
            uses = edges[(a, b)]
            shown = ", ".join(f"line {line} {path}" for line, path in uses[:3])
            more = f" (+{len(uses) - 3} more)" if len(uses) > 3 else ""
            print(f"    src/{a} -> src/{b}: {shown}{more}")
    return 1 if cycles else 0


def short_loops(comp, succ):
    """A shortest cycle through each edge of a strongly connected set, each cycle
    once (as a list of files from its smallest)."""
    inside = set(comp)
    loops = []
    for a in comp:
        for b in sorted(succ[a] & inside):
            # Breadth first from b back to a, inside the set.
            prev, queue = {b: None}, [b]
            while queue and a not in prev:
                nxt = []
                for v in queue:
                    for w in sorted(succ[v] & inside):
                        if w not in prev:
                            prev[w] = v
                            nxt.append(w)
                queue = nxt
            path, v = [], a
            while v is not None:
                path.append(v)
                v = prev[v]
            # path: a, ..., b (no file imports itself); the cycle a -> b -> ... -> a.
            loop = [a] + path[::-1][:-1]
            start = loop.index(min(loop))
            loop = loop[start:] + loop[:start]
            if loop not in loops:
                loops.append(loop)
    return sorted(loops, key=lambda c: (len(c), c))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into `head`
    sys.exit(main())
