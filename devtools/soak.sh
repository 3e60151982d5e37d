#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The soak (devtools/soak.py): two droced on a lossy memif link and, for N minutes, a
# random churn of applications through them (verbs_stream RC/UC/UD pairs, rping clients,
# verbs_churn's MRs, CQ resizes, SRQ limit events and multicast joins, droce-ctl), one in
# five killed with SIGKILL, droced itself killed and restarted a few times. Passes when
# every application that was not killed has its data exact, droced's tables come back to
# their idle counts after each period, and nothing droced holds grows over the run.
# Results and how to read them: doc/reliability.md.
#
# Usage: devtools/soak.sh [--minutes N] [--period S] [--seed N] [--out DIR] [--asan]
#                         [--build DIR] [--only KIND,...] [--log-level LEVEL]
#                         [--kill-share F]
#   --minutes  how long (default 60)
#   --period   seconds per period: applications start in the first 60%, then the period's
#              idle sample (default 60; 20 for runs of 5 minutes or less)
#   --seed     the draws (default: random, printed; the same seed draws the same run)
#   --out      keep samples.csv, summary.json, soak.png and droced's logs here
#   --asan     the ASan + UBSan build (build-asan; --build overrides)
#   --build    the build directory (default build)
#   --only     only these kinds of application: stream, rping, churn, ctl (to chase one
#              failure)
#   --log-level  droced's EAL --log-level, e.g. droce.droced:debug (the same)
#   --kill-share the share of applications killed with SIGKILL, default 0.2 (the same)
# Builds what it runs in that directory (ninja) first; devtools/setup.sh configures it.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

minutes=60
period=
build=
asan=
pass=()
usage() { sed -n '3,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
while (($#)); do
	case $1 in
	--minutes) minutes=$2; shift 2 ;;
	--period) period=$2; shift 2 ;;
	--seed|--out|--only|--log-level|--kill-share) pass+=("$1" "$2"); shift 2 ;;
	--asan) asan=1; pass+=(--asan); shift ;;
	--build) build=$2; shift 2 ;;
	-h|--help) usage ;;
	*) echo "soak.sh: unknown argument '$1'" >&2; usage ;;
	esac
done
[[ -n $build ]] || build=$([[ -n $asan ]] && echo build-asan || echo build)
if [[ -z $period ]]; then
	period=$(awk -v m="$minutes" 'BEGIN { print (m <= 5 ? 20 : 60) }')
fi
if [[ ! -f $build/build.ninja ]]; then
	echo "soak.sh: $build is not configured: run devtools/setup.sh first" >&2
	exit 1
fi
fault_pmd=$(ls "$build"/drivers/net/fault/librte_net_fault.so 2>/dev/null || true)
if [[ -z $fault_pmd ]]; then
	echo "soak.sh: $build has no net_fault driver (drivers/net/fault: DPDK's driver" \
		"headers, devtools/fetch-dpdk-driver-headers.sh)" >&2
	exit 1
fi
ninja -C "$build" app/droced/droced app/droce-ctl/droce-ctl \
	test/integration/verbs_stream test/integration/verbs_churn >/dev/null
exec /usr/bin/python3 devtools/soak.py --minutes "$minutes" --period "$period" "${pass[@]}" \
	"$build/app/droced/droced" "$build/app/droce-ctl/droce-ctl" "$build/drivers/compat" \
	"$fault_pmd" "$build/test/integration/verbs_stream" "$build/test/integration/verbs_churn"
