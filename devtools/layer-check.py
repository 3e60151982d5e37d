#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""File-level call graph of one component of droce (lib/engine, app/droced,
app/droce-perf), and the rule it must follow: calls run one way.

The component's directory holds layers.txt: its layers, top first, each a line "[name]"
followed by its files, one per line ("#" starts a comment). A file may call a file of its
own layer or of a lower one, never of a higher one, and the graph of files has no cycle
(two files calling each other would be one). Every .c file of the directory must be in
layers.txt, so a new file has to be placed before it builds a test that passes; a header
is in the graph only if layers.txt names it (one with inline functions). A function is
found by its definition (DPDK style: the name at the start of a line, then the
parameters, then the body) and a use is any mention of its name in another function's
body, a call or a pointer taken, after comments and strings are removed. Functions of
other directories (a library the component uses) are not in the graph.

    layer-check.py [--dot] DIR
    layer-check.py --self-test DIR

Prints the file graph (--dot: as Graphviz) and exits 1 on an upward call, a cycle or an
unplaced file. --self-test proves the check bites on DIR: it copies DIR, adds to a file
of its lowest layer a function that calls one of its highest, and exits 0 only if the
check of that copy fails with that upward call (the layer test of each component runs
both).
"""
import os
import re
import shutil
import sys
import tempfile

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
    """[(name, body, static)] of the function definitions of a stripped file."""
    res = []
    i, n, depth = 0, len(text), 0
    decl = 0		# where the current top-level declaration began
    while i < n:
        c = text[i]
        if c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                decl = i + 1
        elif depth == 0 and c == ';':
            decl = i + 1
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
                    static = 'static' in IDENT.findall(text[decl:i])
                    res.append((name, text[k:b + 1], static))
                    i = b + 1
                    decl = i
                    continue
                i = k
                continue
            i = m.end()
            continue
        i += 1
    return res


def read_layers(src):
    """(file -> layer number, [layer names]) from src/layers.txt."""
    layers, names = {}, []
    with open(os.path.join(src, 'layers.txt')) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            if line.startswith('[') and line.endswith(']'):
                names.append(line[1:-1])
            elif not names:
                raise SystemExit(f'{src}/layers.txt:{lineno}: a file before any [layer]')
            elif line in layers:
                raise SystemExit(f'{src}/layers.txt:{lineno}: {line} placed twice')
            else:
                layers[line] = len(names) - 1
    return layers, names


def graph(src, layers):
    files = sorted(f for f in os.listdir(src)
                   if f.endswith('.c') or (f.endswith('.h') and f in layers))
    defs = {}		# file -> [(name, body)]
    owner = {}		# function name -> file (non-static names are unique)
    for f in files:
        with open(os.path.join(src, f)) as fh:
            defs[f] = functions(strip(fh.read()))
        # A static function of a .c file is that file's own (names like id() recur);
        # a header's static inlines are every includer's.
        for name, _, static in defs[f]:
            if not static or f.endswith('.h'):
                owner.setdefault(name, f)
    edges = {}		# (from file, to file) -> [(caller, callee)]
    for f in files:
        local = {name for name, _, _ in defs[f]}
        for name, body, _ in defs[f]:
            for ident in set(IDENT.findall(body)):
                if ident in local or ident not in owner:
                    continue
                edges.setdefault((f, owner[ident]), []).append((name, ident))
    return files, edges, defs


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


def check(src, dot=False, quiet=False, out=sys.stdout, err=sys.stderr):
    """The number of errors in src's graph."""
    layers, names = read_layers(src)
    files, edges, _ = graph(src, layers)
    bad = 0

    if dot:
        print('digraph "%s" {' % os.path.basename(os.path.normpath(src)), file=out)
        for (a, b) in sorted(edges):
            print(f'\t"{a}" -> "{b}";', file=out)
        print('}', file=out)
    elif not quiet:
        for (a, b), calls in sorted(edges.items(), key=lambda kv: (
                layers.get(kv[0][0], -1), kv[0])):
            callees = ', '.join(sorted({callee for _, callee in calls}))
            print(f'{a} -> {b}: {callees}', file=out)
    for f in files:
        if f not in layers:
            print(f'error: {f} has no layer: add it to {src}/layers.txt', file=err)
            bad += 1
    for f in layers:
        if f not in files:
            print(f'error: {src}/layers.txt names {f}, which is not there', file=err)
            bad += 1
    for (a, b), calls in sorted(edges.items()):
        la, lb = layers.get(a), layers.get(b)
        if la is None or lb is None or la <= lb:
            continue
        for caller, callee in sorted(calls):
            print(f'error: upward call: {a} ({names[la]}) {caller}() -> '
                  f'{b} ({names[lb]}) {callee}()', file=err)
            bad += 1
    for comp in cycles(files, edges):
        print('error: cycle among ' + ', '.join(comp) + ':', file=err)
        for (a, b), calls in sorted(edges.items()):
            if a in comp and b in comp:
                for caller, callee in sorted(calls):
                    print(f'  {a} {caller}() -> {b} {callee}()', file=err)
        bad += 1
    return bad


def self_test(src):
    """0 if an upward call injected into a copy of src is caught, else 1."""
    layers, names = read_layers(src)
    files, _, defs = graph(src, layers)
    c_files = [f for f in files if f.endswith('.c')]
    low = max(c_files, key=lambda f: (layers[f], f))
    high = min((f for f in c_files if any(not st for _, _, st in defs[f])),
               key=lambda f: (layers[f], f))
    if layers[low] == layers[high]:
        print(f'self-test: {src} has one layer of .c files', file=sys.stderr)
        return 1
    callee = [name for name, _, static in defs[high] if not static][0]
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, 'copy')
        shutil.copytree(src, copy)
        with open(os.path.join(copy, low), 'a') as fh:
            fh.write('\nvoid\nlayer_check_injected(void)\n{\n\t(void)%s;\n}\n' % callee)
        import io
        err = io.StringIO()
        bad = check(copy, quiet=True, err=err)
    want = f'error: upward call: {low} ({names[layers[low]]}) layer_check_injected() -> ' \
           f'{high} ({names[layers[high]]}) {callee}()'
    if bad and want in err.getvalue():
        print(f'self-test: caught {low} -> {high} {callee}()')
        return 0
    print(f'self-test: an upward call {low} -> {high} {callee}() was not caught:\n'
          f'{err.getvalue()}', file=sys.stderr)
    return 1


def main(argv):
    dot = '--dot' in argv
    test = '--self-test' in argv
    args = [a for a in argv[1:] if a not in ('--dot', '--self-test')]
    if len(args) != 1:
        print(__doc__.split('\n\n')[2], file=sys.stderr)
        return 2
    if test:
        return self_test(args[0])
    return 1 if check(args[0], dot=dot) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
