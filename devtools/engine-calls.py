#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""File-level call graph of lib/engine, and the rule it must follow.

Calls run one way (doc/engine.md, "Files and layers"):

    loop, objects  ->  stages  ->  services  ->  engine_loc.h's inlines  ->  lib/wire

A file may call a file of its own layer or of a lower one, never of a higher one, and the
graph of files has no cycle (two stages calling each other would be one). Every .c file
of lib/engine must be in LAYERS: a new file has to be placed before it builds a test
that passes. A function is found by its definition (DPDK style: the name at the start of
a line, then the parameters, then the body) and a use is any mention of its name in
another function's body, a call or a pointer taken, after comments and strings are
removed.

    engine-calls.py [--dot] [LIB_ENGINE_DIR]

Prints the file graph (--dot: as Graphviz) and exits 1 on an upward call, a cycle or an
unplaced file.
"""
import os
import re
import sys

# Lower number = higher layer. Calls go from a number to the same or a greater one.
LAYERS = {
    # the loop and the control side's object API (called by droced and the tests only)
    'engine_loop.c': 0,
    'engine_objects.c': 0,
    # CQs and QPs in a client region for programs that embed engines, over the object API
    'engine_region.c': 0,
    # the end of a port, for the programs that drive ports
    'engine_port.c': 0,
    # stages: what one pass runs, in the loop's order
    'engine_rx.c': 1,
    'engine_req.c': 1,
    'engine_read_resp.c': 1,
    'engine_resp.c': 1,
    'engine_comp.c': 1,
    # services the stages share
    'engine_cmd.c': 2,
    'engine_qp.c': 2,
    'engine_cq.c': 2,
    'engine_mr.c': 2,
    'engine_mcast.c': 2,
    'engine_tx.c': 2,
    'engine_timer.c': 2,
    'engine_wait.c': 2,
    'engine_cc.c': 2,
    # the inline helpers of the internal header
    'engine_loc.h': 3,
}
LAYER_NAMES = ['loop/objects', 'stage', 'service', 'header']

IDENT = re.compile(r'[A-Za-z_]\w*')


def strip(text):
    """Comments, string and character literals and preprocessor lines become blanks."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == '#':
            # a directive, with its continuation lines
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    i += 1
                i += 1
            continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append('\n' * text.count('\n', i, j))
            i = j
            continue
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                i += 1
            continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(' ')
            i = j + 1
            continue
        if c == '\n':
            at_line_start = True
        elif not c.isspace():
            at_line_start = False
        out.append(c)
        i += 1
    return ''.join(out)


def functions(text):
    """[(name, body)] of the function definitions of a stripped file."""
    res = []
    i, n, depth = 0, len(text), 0
    while i < n:
        c = text[i]
        if c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
        elif depth == 0 and (c.isalpha() or c == '_'):
            m = IDENT.match(text, i)
            name = m.group(0)
            j = m.end()
            while j < n and text[j].isspace():
                j += 1
            if j < n and text[j] == '(':
                # the parameter list, then '{' for a definition
                pd, k = 0, j
                while k < n:
                    if text[k] == '(':
                        pd += 1
                    elif text[k] == ')':
                        pd -= 1
                        if pd == 0:
                            break
                    k += 1
                k += 1
                while k < n and text[k].isspace():
                    k += 1
                if k < n and text[k] == '{':
                    bd, b = 0, k
                    while b < n:
                        if text[b] == '{':
                            bd += 1
                        elif text[b] == '}':
                            bd -= 1
                            if bd == 0:
                                break
                        b += 1
                    res.append((name, text[k:b + 1]))
                    i = b + 1
                    continue
                i = k
                continue
            i = m.end()
            continue
        i += 1
    return res


def graph(src):
    files = sorted(f for f in os.listdir(src)
                   if f.endswith('.c') or f == 'engine_loc.h')
    defs = {}		# file -> [(name, body)]
    owner = {}		# function name -> file (non-static names are unique)
    for f in files:
        with open(os.path.join(src, f)) as fh:
            defs[f] = functions(strip(fh.read()))
        for name, _ in defs[f]:
            owner.setdefault(name, f)
    edges = {}		# (from file, to file) -> [(caller, callee)]
    for f in files:
        local = {name for name, _ in defs[f]}
        for name, body in defs[f]:
            for ident in set(IDENT.findall(body)):
                if ident in local or ident not in owner:
                    continue
                edges.setdefault((f, owner[ident]), []).append((name, ident))
    return files, edges


def cycles(files, edges):
    """The strongly connected components of more than one file (Tarjan)."""
    succ = {f: sorted({b for (a, b) in edges if a == f}) for f in files}
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
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
                comps.append(sorted(comp))

    for f in files:
        if f not in index:
            visit(f)
    return comps


def main(argv):
    dot = '--dot' in argv
    args = [a for a in argv[1:] if a != '--dot']
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                            '..', 'lib', 'engine')
    files, edges = graph(src)
    bad = 0

    if dot:
        print('digraph engine {')
        for (a, b) in sorted(edges):
            print(f'\t"{a}" -> "{b}";')
        print('}')
    else:
        for (a, b), calls in sorted(edges.items(), key=lambda kv: (
                LAYERS.get(kv[0][0], -1), kv[0])):
            names = ', '.join(sorted({callee for _, callee in calls}))
            print(f'{a} -> {b}: {names}')
    for f in files:
        if f not in LAYERS:
            print(f'error: {f} has no layer: add it to LAYERS in {argv[0]}', file=sys.stderr)
            bad += 1
    for (a, b), calls in sorted(edges.items()):
        la, lb = LAYERS.get(a), LAYERS.get(b)
        if la is None or lb is None or la <= lb:
            continue
        for caller, callee in sorted(calls):
            print(f'error: upward call: {a} ({LAYER_NAMES[la]}) {caller}() -> '
                  f'{b} ({LAYER_NAMES[lb]}) {callee}()', file=sys.stderr)
            bad += 1
    for comp in cycles(files, edges):
        print('error: cycle among ' + ', '.join(comp) + ':', file=sys.stderr)
        for (a, b), calls in sorted(edges.items()):
            if a in comp and b in comp:
                for caller, callee in sorted(calls):
                    print(f'  {a} {caller}() -> {b} {callee}()', file=sys.stderr)
        bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
