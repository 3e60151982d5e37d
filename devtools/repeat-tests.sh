#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The README's test command, again and again, each time on a fresh clone of a commit, as
# CI runs it (.ci/run): how flakes are found (doc/reliability.md, "Flakes"). With --load,
# stress-ng keeps every CPU busy beside the run (a loaded CI machine). Runs one after the
# other, never two at once (each wants the whole machine); stops at the first failure
# unless --keep-going. Each run's output: DIR/run-K.log; its clone is removed after a pass.
# Prints one line per run and, at the end, "N passed, N failed".
#
# Usage: devtools/repeat-tests.sh [-n RUNS] [--load] [--keep-going] [--out DIR] [COMMIT]
#   -n            runs (default 10)
#   --load        stress-ng --cpu <CPUs> for the whole of each run
#   --keep-going  go on after a failed run
#   --out         where the logs go (default /tmp/droce-repeat-<date>)
#   COMMIT        what to clone (default HEAD of this tree; commit it first)

set -uo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." || exit 1

runs=10
load=
keep_going=
out=/tmp/droce-repeat-$(date +%Y%m%d-%H%M%S)
commit=HEAD
usage() { sed -n '3,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
while (($#)); do
	case $1 in
	-n) runs=$2; shift 2 ;;
	--load) load=1; shift ;;
	--keep-going) keep_going=1; shift ;;
	--out) out=$2; shift 2 ;;
	-h|--help) usage ;;
	-*) echo "repeat-tests.sh: unknown option '$1'" >&2; usage ;;
	*) commit=$1; shift ;;
	esac
done
rev=$(git rev-parse --verify "$commit^{commit}") || exit 2
if [[ -n $load ]] && ! command -v stress-ng >/dev/null; then
	echo "repeat-tests.sh: --load needs stress-ng (devtools/setup.sh installs it)" >&2
	exit 2
fi
mkdir -p "$out"
stress=
cleanup() { [[ -z $stress ]] || kill "$stress" 2>/dev/null; }
trap cleanup EXIT

passed=0
failed=0
for ((k = 1; k <= runs; k++)); do
	clone=$out/clone-$k
	rm -rf "$clone"
	git clone -q "$PWD" "$clone" && git -C "$clone" checkout -q "$rev" || exit 1
	if [[ -n $load ]]; then
		stress-ng --cpu "$(nproc)" --timeout 4h >/dev/null 2>&1 &
		stress=$!
	fi
	start=$SECONDS
	(cd "$clone" && CI=true bash .ci/run) >"$out/run-$k.log" 2>&1
	rc=$?
	cleanup
	stress=
	summary=$(tail -n 1 "$out/run-$k.log")
	printf 'run %d%s: exit %d in %d s: %s\n' "$k" "${load:+ (loaded)}" "$rc" \
		$((SECONDS - start)) "$summary"
	if ((rc == 0)); then
		passed=$((passed + 1))
		rm -rf "$clone"
	else
		failed=$((failed + 1))
		grep -E '^FAIL|TIMEOUT' "$out/run-$k.log" | head -n 20
		[[ -n $keep_going ]] || break
	fi
done
echo "$passed passed, $failed failed"
((failed == 0))
