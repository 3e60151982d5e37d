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

if [ ! -f "$dir/build.ninja" ]; then
	timeout 600 meson setup "$dir" >/dev/null
fi
timeout 600 ninja -C "$dir" devtools/droce-bench-wire >/dev/null

# Figures from a sanitizer or unoptimised build mean nothing: say so up front.
opts=$(meson introspect --buildoptions "$dir" | /usr/bin/python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["buildtype"], o["b_sanitize"], o["c_args"] and " ".join(o["c_args"]) or "-")')
read -r buildtype sanitize cargs <<<"$opts"

echo "machine:  $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs online"
echo "kernel:   $(uname -sr)"
echo "compiler: $(sed -n 's/^C compiler for the host machine: //p' "$dir/meson-logs/meson-log.txt" | head -n 1)"
echo "isa-l:    $(pkg-config --modversion libisal)"
echo "build:    $dir ($buildtype, sanitize=$sanitize, c_args=$cargs)"
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min; other work on the machine adds noise)"
if [ "$buildtype" = debug ] || [ "$buildtype" = plain ] || [ "$sanitize" != none ]; then
	echo "warning:  not an optimised build without sanitizers; the figures mean little"
fi
echo

timeout 600 "$dir/devtools/droce-bench-wire" "$@"
