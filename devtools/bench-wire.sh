#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds (when needed) and runs droce-bench-wire, lib/wire's cost per packet with
# same-run baselines, after printing what it runs on. How to read the output and the
# results so far: doc/performance.md.
#
# Usage: devtools/bench-wire.sh [-r RUNS] [-m MS] [-c CPU]   (passed to droce-bench-wire)
#   DROCE_BENCH_BUILD  build directory (default build-bench); set up with the project's
#                      default options (debugoptimized, no sanitizers) when missing

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

dir=${DROCE_BENCH_BUILD:-build-bench}

. devtools/bench-common.sh
bench_build "$dir" devtools/droce-bench-wire
bench_describe "$dir" "isa-l:    $(pkg-config --modversion libisal)"

timeout 600 "$dir/devtools/droce-bench-wire" "$@"
