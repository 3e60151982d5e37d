#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# What a capture costs (doc/operations.md, doc/performance.md): Debian's unmodified
# ib_send_bw, 64 B on one RC QP, through two droced joined by net_memif, in rounds of
# four: the droced of the commit before captures existed (and before the QP counters of
# the same commit), this tree's with the engines' capture tests taken out (a copy with
# the two pointer tests replaced by 0: what "off" is compared with), this tree's with no
# capture, and this tree's with `droce-ctl capture` running (every frame, 128 bytes each).
# Medians and ratios of the same run.
#
# Usage: devtools/bench-capture.sh [-r ROUNDS] [-n ITERS] [-b REV]
#   -r  rounds (default 5)
#   -n  ib_send_bw messages per run (default 200000)
#   -b  the earlier commit (default: the parent of the commit that added engine_tap.c)
#   DROCE_BENCH_BUILD  this tree's build directory (default build-bench)

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

rounds=5
iters=200000
base=
while getopts "r:n:b:h" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) iters=$OPTARG ;;
	b) base=$OPTARG ;;
	*) sed -n '3,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
if [[ -z $base ]]; then
	added=$(git log --diff-filter=A --format=%H -- lib/engine/engine_tap.c | tail -n 1)
	base=$(git rev-parse "$added^")
fi

dir=${DROCE_BENCH_BUILD:-build-bench}
prefix=droce-bench-cap-$$
work=$(mktemp -d "/tmp/$prefix-XXXXXX")
basetree=$work/base
notap=$work/notap

. devtools/bench-common.sh
bench_daemon_cleanup "$prefix" "$work"
trap 'git worktree remove --force "$basetree" 2>/dev/null || true
	git worktree remove --force "$notap" 2>/dev/null || true; bench_cleanup' EXIT
git worktree add -q --detach "$basetree" "$base"
# This tree as it is (uncommitted changes too), the capture's two tests compiled out.
git worktree add -q --detach "$notap" HEAD
git diff HEAD | (cd "$notap" && git apply --allow-empty)
sed -i 's/atomic_load_explicit(&e->tap, memory_order_relaxed) != NULL/0/' \
	"$notap/lib/engine/engine_rx.c" "$notap/lib/engine/engine_tx.c"
if grep -q 'e->tap, memory_order_relaxed) != NULL' "$notap"/lib/engine/engine_{rx,tx}.c; then
	echo "bench-capture: could not take the capture tests out" >&2
	exit 1
fi
for t in app/droced/droced app/droce-ctl/droce-ctl drivers/compat/libibverbs.so.1.14.44; do
	bench_build "$dir" "$t"
	bench_build "$notap/build" "$t"
	bench_build "$basetree/build" "$t"
done
bench_describe "$dir" "dpdk:     $(pkg-config --modversion libdpdk)" \
	"perftest: $(dpkg-query -W -f '${Version}' perftest 2>/dev/null || echo '?')" \
	"baseline: $(git log -1 --format='%h %s' "$base")" \
	"runs:     $rounds rounds; ib_send_bw -s 64 -n $iters"

BASE="$basetree/build" NOTAP="$notap/build" NEW="$dir" PREFIX="$prefix" WORK="$work" \
ROUNDS="$rounds" \
ITERS="$iters" timeout --kill-after=10 3000 /usr/bin/python3 devtools/bench_capture.py &
pypid=$!
wait "$pypid"
