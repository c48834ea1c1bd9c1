#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Dependency circles among the library's objects, seen by the linker.

For each object file, `nm` gives the symbols it defines and the symbols it
uses; object A depends on object B when A uses a symbol B defines. The script
prints the strongly connected components of that graph with more than one
object (each is a circle). With --check it exits 1 when a circle is not one of
the allowed pairs below.

usage: deps-cycles.py [--check] OBJDIR|OBJ...
"""
import os
import subprocess
import sys

# Circles that are allowed, each with the sentence that justifies it.
ALLOWED = {
    # (none yet)
}

# Debt: circles not removed yet (issue 13). A circle that is part of one of
# these passes --check, so the check catches new circles and growing ones;
# shrink this list as the circles go, never grow it.
DEBT = [
    # (none left)
]


def objects(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            for root, _, files in os.walk(a):
                out += [os.path.join(root, f) for f in files if f.endswith('.o')]
        else:
            out.append(a)
    return sorted(out)


def short(path):
    """src/runtime/txn.c.o -> runtime/txn"""
    p = path.replace(os.sep, '/')
    if '.dir/' in p:
        p = p.split('.dir/', 1)[1]
    for ext in ('.o', '.c', '.S'):
        if p.endswith(ext):
            p = p[: -len(ext)]
    return p


def symbols(obj):
    res = subprocess.run(['nm', '-P', obj], capture_output=True, text=True, check=True)
    defined, used = set(), set()
    for line in res.stdout.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        name, kind = f[0], f[1]
        if kind == 'U':
            used.add(name)
        elif kind in 'TDBRVWGSiu' or kind in 'tdbrgs':
            if kind.isupper() or kind in 'uiVW':
                defined.add(name)
    return defined, used


def sccs(nodes, edges):
    """Tarjan, iterative."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def main(argv):
    check = '--check' in argv
    args = [a for a in argv if a != '--check']
    objs = objects(args)
    if not objs:
        print('deps-cycles: no object files in %s' % ' '.join(args), file=sys.stderr)
        return 2
    names = {o: short(o) for o in objs}
    definer, uses = {}, {}
    for o in objs:
        d, u = symbols(o)
        for s in d:
            definer.setdefault(s, names[o])
        uses[names[o]] = u
    nodes = sorted(uses)
    edges = {n: set() for n in nodes}
    why = {}
    for n in nodes:
        for s in uses[n]:
            m = definer.get(s)
            if m and m != n:
                edges[n].add(m)
                why.setdefault((n, m), []).append(s)
    circles = [c for c in sccs(nodes, edges) if len(c) > 1]
    print('%d objects, %d circle(s)' % (len(nodes), len(circles)))
    bad = 0
    for c in sorted(circles, key=len, reverse=True):
        allowed = frozenset(c) in ALLOWED
        debt = not allowed and any(frozenset(c) <= d for d in DEBT)
        tag = 'allowed' if allowed else 'debt' if debt else 'FOUND'
        print('%s circle of %d: %s' % (tag, len(c), ' '.join(c)))
        if allowed:
            print('  because ' + ALLOWED[frozenset(c)])
        elif not debt:
            bad += 1
        cs = set(c)
        for a in c:
            for b in sorted(edges[a] & cs):
                syms = sorted(why[(a, b)])
                more = ' ...' if len(syms) > 4 else ''
                print('  %s -> %s (%s%s)' % (a, b, ' '.join(syms[:4]), more))
    if check and bad:
        print('deps-cycles: %d circle(s) neither allowed nor known debt' % bad)
    return 1 if check and bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
