#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs one libFuzzer target for a bounded time on a seed corpus made for the run.
# Usage: run-fuzz.sh FUZZER SEED_GEN ARTIFACT_DIR
#   DROCE_FUZZ_SECONDS  fuzzing time (default 60); the run is killed 60 s after that.
# Exits non-zero on any crash, leak, timeout, sanitizer report or failed check; the
# reproducer is left in ARTIFACT_DIR.
set -u

if [ $# -ne 3 ]; then
	echo "usage: $0 FUZZER SEED_GEN ARTIFACT_DIR" >&2
	exit 2
fi
fuzzer=$1
seed_gen=$2
artifacts=$3
seconds=${DROCE_FUZZ_SECONDS:-60}
# Seed generation, start-up and the final merge of the corpus need a little more.
grace=60

work=$(mktemp -d "${TMPDIR:-/tmp}/droce-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$artifacts" || exit 1

if ! timeout 60 "$seed_gen" "$work/corpus"; then
	echo "FAIL: seed generator" >&2
	exit 1
fi

# One process, one core: no -jobs or -workers. -max_len leaves room past the largest
# legal packet so oversized ones are tried too.
timeout -k 10 $((seconds + grace)) "$fuzzer" \
	-max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
	-max_len=4608 -artifact_prefix="$artifacts/" \
	"$work/corpus" >"$work/log" 2>&1
rc=$?
report='ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|check failed:'
# A sanitizer built to recover would report and carry on: count its reports too.
if [ $rc -eq 0 ] && ! grep -qE "$report" "$work/log"; then
	tail -n 12 "$work/log"
	echo "PASS: $(grep -E '^stat::number_of_executed_units' "$work/log")"
	exit 0
fi
# The log is long: show the first report in full, then how the run ended.
first=$(grep -m 1 -nE "$report" "$work/log" | cut -d: -f1)
if [ -n "$first" ]; then
	tail -n "+$((first > 5 ? first - 5 : 1))" "$work/log" | head -n 60
	echo "..."
fi
tail -n 12 "$work/log"
echo "FAIL: fuzzer exited with $rc; reproducers in $artifacts:" >&2
ls -l "$artifacts" >&2
exit 1
