#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Congestion control in one run (doc/congestion.md), with droce-perf over its internal
# net_ring pair and drivers/net/fault's bottleneck queue on host b (1 Gb/s, 1 MiB buffer,
# RED marking from 16 KiB to 128 KiB at egress):
#   - N senders (2, 4, 8 QPs on one engine; 4, 8 on two) with DCQCN: the convergence time,
#     then utilisation, Jain's index, drops and the deepest queue; the same without DCQCN;
#   - what DCQCN costs when nothing is congested: 64 B SENDs (Mpps) and 64 KiB WRITEs (Gb/s)
#     with --dcqcn on and off, alternated, and with a baseline droce-perf (-b) besides.
# Figures and what they mean: doc/performance.md, "Congestion control".
#
# Usage: devtools/bench-congestion.sh [-d SECONDS] [-r ROUNDS] [-b BASELINE_DROCE_PERF]
#   -d  seconds per congested run (default 5)
#   -r  rounds of the overhead A/B (default 3)
#   -b  another droce-perf (an older commit's build) for the overhead rows
#   DROCE_BENCH_BUILD  build directory (default build-bench); set up with the project's
#                      default options when missing
#
# Every droce-perf runs under timeout, --no-huge --no-shconf with a file prefix of its own
# (nothing left in hugetlbfs; droce-perf removes its runtime directory).

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
. devtools/bench-common.sh

secs=5
rounds=3
baseline=
while getopts "d:r:b:h" opt; do
	case $opt in
	d) secs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	b) baseline=$OPTARG ;;
	*) sed -n '3,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done

dir=${DROCE_BENCH_BUILD:-build-bench}
bench_build "$dir" app/droce-perf/droce-perf
bench_describe "$dir" "bench:    congested ${secs} s per run; overhead A/B ${rounds} rounds${baseline:+; baseline $baseline}"
exec /usr/bin/python3 devtools/bench_congestion.py "$dir/app/droce-perf/droce-perf" "$secs" \
	"$rounds" "$baseline"
