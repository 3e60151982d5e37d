#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs every test suite, as CI does (.ci/run): set-up and build (devtools/setup.sh), then
#   ${prefix}       every suite but fuzz and soak (unit, interop, ...)
#   ${prefix}-asan  unit, engine, net, fault, perf (droce-perf; not its memif groups, the
#                   ring groups' code again), hostile (droced fed garbage), daemon-asan
#                   (the operations test's views, telemetry, metrics, capture and start)
#                   and soak (devtools/soak.py for 3 minutes), under ASan + UBSan
#   ${prefix}-fuzz  fuzz, the libFuzzer targets for a bounded time
# with prefix = ${DROCE_BUILD_PREFIX:-build}. Ends with one line per test and, as the very
# last line, "N passed, N failed, N skipped". Exits non-zero when a test fails or times
# out, when set-up or a build fails, when a meson run fails or runs past its limit, or
# when no test ran at all (every test skipped counts as none).

set -uo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." || exit 1

prefix=${DROCE_BUILD_PREFIX:-build}

# Hard limit on each meson test run, over and above each test's own timeout.
meson_timeout=1800
# meson test logs to meson-logs/<logbase>.json; a name of our own keeps other runs'
# logs (a developer's plain `meson test`) out of the count.
logbase=run-tests

# Sanitizer reports are failures; leaks too.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

# What the summary reads, in order: "log:DIR" for each meson run, then "fail:MESSAGE" when
# it ran out of time or "status:DIR:MESSAGE" when it exited non-zero.
report=()

# run_meson_test DIR [meson test options...]
run_meson_test() {
	local dir=$1 start=$SECONDS rc
	shift
	rm -f "$dir/meson-logs/$logbase.json"
	printf 'run-tests: meson test -C %s %s\n' "$dir" "$*"
	timeout --kill-after=30 "$meson_timeout" \
		meson test -C "$dir" --print-errorlogs --logbase "$logbase" "$@" </dev/null
	rc=$?
	report+=("log:$dir")
	if ((SECONDS - start >= meson_timeout)); then
		report+=("fail:$(basename "$dir") meson test $* ran past $meson_timeout s (TIMEOUT)")
	elif ((rc != 0)); then
		# meson's status counts failed tests; the summary tells a failed test from a
		# meson run that failed before or around its tests.
		report+=("status:$dir:meson test $* exited with status $rc")
	fi
}

if ! ./devtools/setup.sh </dev/null; then
	echo "FAIL devtools/setup.sh (set-up or build failed; no test ran)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi

# The soak runs once, where a sanitizer watches it; devtools/soak.sh runs the plain build's
# for an hour (doc/reliability.md).
run_meson_test "$prefix" --no-suite fuzz --no-suite soak
run_meson_test "$prefix-asan" --suite unit --suite engine --suite net --suite fault \
	--suite perf --no-suite perf-memif --suite hostile --suite daemon-asan --suite soak
run_meson_test "$prefix-fuzz" --suite fuzz

/usr/bin/python3 - "$logbase" "${report[@]}" <<'EOF'
import json
import os
import sys

logbase, items = sys.argv[1], sys.argv[2:]
# meson 1.0 results: OK, EXPECTEDFAIL count as passed; SKIP as skipped; FAIL, TIMEOUT,
# UNEXPECTEDPASS, ERROR, INTERRUPT as failed.
PASSED = {"OK", "EXPECTEDFAIL"}
SKIPPED = {"SKIP"}
counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
run_failed = {}   # build dir -> failed tests in its log
lines = []

def suites_by_test(build_dir):
    # "droce:unit" -> "unit"; meson-info lists every test the build defines.
    with open(os.path.join(build_dir, "meson-info", "intro-tests.json")) as f:
        return {t["name"]: [s.split(":", 1)[-1] for s in t["suite"]] for t in json.load(f)}

def display_name(name, suites_of):
    # meson names a test "droce:unit+wire / test_x" when the project has several suites,
    # and just "test_x" when it has one: then meson-info says which.
    if " / " in name:
        suites, test = name.split(" / ", 1)
        suites = [s.split(":", 1)[-1] for s in suites.split("+")]
    else:
        test, suites = name, suites_of.get(name, [])
    return "+".join(suites) + "/" + test if suites else test

for item in items:
    kind, arg = item.split(":", 1)
    if kind == "fail":
        counts["FAIL"] += 1
        lines.append("FAIL " + arg)
        continue
    if kind == "status":
        # A non-zero meson status with no failed test in the log: meson itself failed.
        build_dir, message = arg.rsplit(":", 1)
        if run_failed[build_dir] == 0:
            counts["FAIL"] += 1
            lines.append("FAIL %s %s and logged no failed test" %
                         (os.path.basename(build_dir), message))
        continue
    build_dir = arg
    run_failed[build_dir] = 0
    path = os.path.join(build_dir, "meson-logs", logbase + ".json")
    if not os.path.exists(path):
        continue    # the run selected no test (a suite not written yet)
    suites_of = suites_by_test(build_dir)
    with open(path) as f:
        for raw in f:
            if not raw.strip():
                continue
            try:
                t = json.loads(raw)
            except ValueError:
                # A line cut short: meson was killed while writing it.
                t = {"name": "(unreadable entry in %s)" % path, "result": "ERROR"}
            result = t["result"]
            if result in PASSED:
                verdict = "PASS"
            elif result in SKIPPED:
                verdict = "SKIP"
            else:
                verdict = "FAIL"
                run_failed[build_dir] += 1
            counts[verdict] += 1
            extra = "" if result in ("OK", "SKIP", "FAIL") else " (%s)" % result
            lines.append("%s %s %s%s" % (verdict, os.path.basename(build_dir),
                                         display_name(t["name"], suites_of), extra))
            # A test's own counts (rdma-core's suite): its "summary: " lines, shown under it.
            for out_line in (t.get("stdout") or "").splitlines():
                if out_line.startswith("summary: "):
                    lines.append("    " + out_line[len("summary: "):])

for line in lines:
    print(line)
status = 0
if counts["FAIL"]:
    status = 1
elif counts["PASS"] == 0:
    print("run-tests: no test ran")
    status = 1
print("%d passed, %d failed, %d skipped" % (counts["PASS"], counts["FAIL"], counts["SKIP"]))
sys.exit(status)
EOF
