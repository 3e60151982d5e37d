#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# What ibv_reg_mr and ibv_dereg_mr cost through droced, for two builds in one run (a
# baseline, e.g. an older commit's worktree, and a candidate): each build's
# droce-bench-mr against that build's own droced (the control protocol differs between
# versions), both daemons up for the whole run; size by size, ROUNDS rounds alternating
# the two builds (and which goes first); then per size and mode (first, repeated, held,
# file; devtools/bench_mr.c) the median over the rounds of the per-call and per-MiB times
# and the candidate/baseline ratio. With one build only, its figures without ratios.
# How to read it and the results: doc/performance.md, "Memory registration (issue 24)".
#
# Usage: devtools/bench-mr.sh [-s SIZES] [-r REPS] [-n ITERS] [-k ROUNDS] [[BASELINE] CANDIDATE]
#   BASELINE, CANDIDATE  build directories; one that is not configured yet is set up from
#                        this tree with the project's default options (configure an older
#                        commit's build from its own worktree first); CANDIDATE defaults
#                        to $DROCE_BENCH_BUILD, else build-bench
#   -s  sizes, comma-separated, K/M/G binary (default 64K,1M,16M,256M)
#   -r  fresh buffers per size for "first" (default 5)
#   -n  reg + dereg pairs per size for "repeated", "held" and "file" (default 20)
#   -k  rounds per size, each running both builds (default 3)
#
# Every process runs under timeout; each droced has a file prefix, socket and config of its
# own in a temporary directory, is stopped with SIGTERM (SIGKILL after 20 s), and whatever
# it leaves in /var/run/dpdk and /dev/hugepages under this run's prefix is removed at exit,
# on failure too.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

sizes=64K,1M,16M,256M
reps=5
iters=20
rounds=3
usage() { sed -n '3,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
while getopts "s:r:n:k:h" opt; do
	case $opt in
	s) sizes=$OPTARG ;;
	r) reps=$OPTARG ;;
	n) iters=$OPTARG ;;
	k) rounds=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
case $# in
0) base= cand=${DROCE_BENCH_BUILD:-build-bench} ;;
1) base= cand=$1 ;;
2) base=$1 cand=$2 ;;
*) usage ;;
esac

prefix=droce-bench-mr-$$
work=$(mktemp -d "/tmp/$prefix-XXXXXX")

. devtools/bench-common.sh
bench_daemon_cleanup "$prefix" "$work"

# The source tree a build directory was configured from, its HEAD, and the files of lib/,
# app/ and drivers/ that differ from HEAD there (built as they are: the tree may be in use).
build_commit() {
	local src dirty
	src=$(/usr/bin/python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["directories"]["source"])' "$1/meson-info/meson-info.json")
	dirty=$(git -C "$src" status --porcelain --untracked-files=no -- lib app drivers 2>/dev/null |
		awk '{ printf " %s", $2 }')
	echo "$src at $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')${dirty:+, uncommitted:$dirty}"
}

for d in $base $cand; do
	for t in app/droced/droced devtools/droce-bench-mr; do
		bench_build "$d" "$t"
	done
done
bench_describe "$cand" "dpdk:     $(pkg-config --modversion libdpdk)" \
	"thp:      $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo '?')" \
	"runs:     sizes $sizes; first x $reps, others x $iters; $rounds rounds" \
	"candidate: $(build_commit "$cand")" \
	${base:+"baseline: $(build_commit "$base")"}
if [ -n "$base" ]; then
	# The baseline's build options and warning; the machine is the same.
	bench_describe "$base" | sed -n 's/^\(build\|warning\):/baseline \1:/p'
	echo
fi

IFS=, read -ra size_list <<<"$sizes"
BASE="$base" CAND="$cand" PREFIX="$prefix" WORK="$work" SIZES="$sizes" REPS="$reps" \
ITERS="$iters" ROUNDS="$rounds" \
timeout --kill-after=10 $((rounds * 2 * ${#size_list[@]} * 610 + 120)) /usr/bin/python3 - <<'EOF' &
import os, signal, statistics, subprocess, sys

sys.path.insert(0, os.path.join(os.getcwd(), "devtools"))
import bench_daemons

work, prefix = os.environ["WORK"], os.environ["PREFIX"]
builds = [(t, d) for t, d in (("baseline", os.environ["BASE"]),
                              ("candidate", os.environ["CAND"])) if d]
sizes = os.environ["SIZES"].split(",")
args = ["-r", os.environ["REPS"], "-n", os.environ["ITERS"]]
rounds = int(os.environ["ROUNDS"])
RUN_TIMEOUT = 600
MODES = ("first", "repeated", "held", "file")
# droced's ceiling for a context's MR bytes (DROCED_LIMIT_MR_BYTES_MAX, 1 TiB): "held" keeps
# two MRs over the largest size, past the default 1 GiB for sizes of 512 MiB and more.
MR_BYTES = 1 << 40

# SIGTERM (the outer timeout) unwinds through the finally blocks that stop the daemons.
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))


def daemon(tag, build):
    """The build's own droced (the benchmark speaks its control protocol)."""
    return bench_daemons.daemon(os.path.join(build, "app/droced/droced"), work, prefix, tag,
                                "net_memif0,role=server,id=0,socket=%s,bsize=8192" %
                                os.path.join(work, "%s.memif" % tag),
                                "10.99.0.1/24", limits="max_mr_bytes = %d" % MR_BYTES)


def run(tag, build, d, size, rnd):
    """One size through one build's droce-bench-mr: {(size, mode): fields}."""
    p = subprocess.run(["timeout", "--kill-after=5", str(RUN_TIMEOUT),
                        os.path.join(build, "devtools/droce-bench-mr"), "-s", size] + args,
                       capture_output=True, text=True, env=d.env())
    res = {}
    for line in p.stdout.splitlines():
        if not line.startswith("mode="):
            continue
        print("%-9s %d  %s" % (tag, rnd, line))
        kv = dict(x.split("=", 1) for x in line.split())
        res[(int(kv["size"]), kv["mode"])] = kv
    if p.returncode != 0:
        sys.stderr.write("%s round %d, %s: droce-bench-mr exit %s\n%s\n%s\n" % (
            tag, rnd, size, p.returncode, p.stderr[-1500:], d.log_text()[-1500:]))
    sys.stdout.flush()
    return res


# Both daemons up for the whole run (idle between calls: their engines sleep), so that the
# builds alternate size by size and a change in the machine's load reaches both alike; the
# order alternates too, round by round.
ds = {t: daemon(t, b) for t, b in builds}
runs = {t: [{} for _ in range(rounds)] for t, _ in builds}
try:
    bench_daemons.start(work, *ds.values())
    for size in sizes:
        for rnd in range(rounds):
            order = builds if rnd % 2 == 0 else builds[::-1]
            for tag, build in order:
                runs[tag][rnd].update(run(tag, build, ds[tag], size, rnd + 1))
finally:
    for d in ds.values():
        d.stop(expect_clean=False)

NAN = float("nan")


def fig(tag, key, field):
    """The median over the rounds of one figure, "refused=E" if refused, or NaN."""
    vals = [r[key] for r in runs[tag] if key in r]
    if not vals:
        return NAN
    if "refused" in vals[0]:
        return "refused (%s)" % vals[0]["refused"]
    return statistics.median(float(v[field]) for v in vals if field in v) \
        if field in vals[0] else NAN


def fmt(x):
    if isinstance(x, str):
        return x
    return "-" if x != x else ("%.3g" % x if abs(x) < 1000 else "%.0f" % x)


def ratio(c, b):
    if isinstance(c, str) or isinstance(b, str) or c != c or b != b or b == 0:
        return "-"
    return fmt(c / b)


def size_name(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


keys = sorted({k for rs in runs.values() for r in rs for k in r},
              key=lambda k: (k[0], MODES.index(k[1])))
tags = [t for t, _ in builds]
print()
print("us = microseconds, median over the rounds of each run's median; per MiB = per call /")
print("size in MiB; ratio = candidate / baseline (> 1: the candidate is slower); fill = writing")
print("every page of the fresh mapping before first's reg (no library call: new pages' price)")
cols = ["size", "mode", "call"]
for t in tags:
    cols += ["%s us" % t, "%s us/MiB" % t]
if len(tags) == 2:
    cols.append("ratio")
rows = []
for key in keys:
    for call in ("reg", "dereg") + (("fill",) if key[1] == "first" else ()):
        row = [size_name(key[0]), key[1], call]
        per = {}
        for t in tags:
            per[t] = fig(t, key, call + "_us")
            row += [fmt(per[t]), fmt(fig(t, key, call + "_us_per_mib"))]
        if len(tags) == 2:
            row.append(ratio(per["candidate"], per["baseline"]))
        rows.append(row)
width = [max(len(str(r[i])) for r in [cols] + rows) for i in range(len(cols))]
print(" | ".join(c.ljust(w) for c, w in zip(cols, width)))
print("-+-".join("-" * w for w in width))
for r in rows:
    print(" | ".join(str(c).rjust(w) if i >= 3 else str(c).ljust(w)
                     for i, (c, w) in enumerate(zip(r, width))))
print("load now: " + open("/proc/loadavg").read().split(" ", 3)[0])
EOF
# In the background so that a signal to this shell is handled at once (bench_stop_run).
pypid=$!
wait "$pypid"
