#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# One-command set-up on Debian 12, run as root: installs the Debian packages droce needs
# (only those missing), reserves hugepages when it can, and configures and builds the
# three build directories. Safe to run again: a second run installs nothing,
# reconfigures nothing and only rebuilds what changed.
#
#   ${DROCE_BUILD_PREFIX:-build}        gcc, defaults
#   ${DROCE_BUILD_PREFIX:-build}-asan   gcc, ASan + UBSan (devtools/run-tests.sh says which suites)
#   ${DROCE_BUILD_PREFIX:-build}-fuzz   clang, ASan + UBSan, -Dfuzz=true: the libFuzzer targets only
#   ${DROCE_BUILD_PREFIX:-build}-rxe    the QEMU guest running Linux's soft-RoCE, the rxe
#                                       suite's peer (test/rxe/build-guest.sh, doc/interop.md)
#
# With --quick (devtools/quickstart.sh) it installs only what the quickstart runs and
# builds only that (meson's `quickstart` target) in ${DROCE_BUILD_PREFIX:-build}: a first
# run within two minutes on a fresh machine. A later run without --quick adds the rest.
#
# Nothing needs hugepages to build or to run the tests: where they cannot be had (a
# container without hugetlbfs, a read-only /proc/sys) this prints a note and goes on.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

prefix=${DROCE_BUILD_PREFIX:-build}
quick=0
case ${1-} in
--quick) quick=1 ;;
'') ;;
*) echo "usage: devtools/setup.sh [--quick]" >&2; exit 2 ;;
esac

# Installed without their recommends, so a few that come with them on a desktop are named:
# libc6-dev (gcc's C library headers), llvm (llvm-symbolizer, which turns sanitizer and
# libFuzzer stack traces from the clang build into file:line) and xz-utils (unpacks
# DPDK's source tarball for its driver headers).
packages=(
	gcc libc6-dev clang libclang-rt-14-dev llvm meson ninja-build pkg-config git
	dpdk-dev libdpdk-dev libibverbs-dev librdmacm-dev libnuma-dev libisal-dev libpcap-dev
	python3-scapy python3-pyverbs tshark ibverbs-utils perftest iproute2 procps xz-utils
	qemu-system-x86 cpio binutils iputils-ping rdmacm-utils librpma-dev libfabric-bin ucx-utils
	# A second allocator under test_memory's calloc churn (LD_PRELOAD).
	libjemalloc2
	# net_af_xdp (test_veth's af_xdp case; libdpdk-dev pulls it in, named as it is used).
	librte-net-af-xdp23
	# devtools/soak.sh's plot of its samples; devtools/repeat-tests.sh --load's CPU load.
	gnuplot-nox stress-ng
	# droced's Prometheus endpoint; the operations test's Prometheus server and promtool,
	# and systemd-analyze for the unit.
	libmicrohttpd-dev prometheus systemd
)
# What the quickstart builds and runs: the compiler, DPDK, rdma-core's headers and the
# unmodified programs it starts (ibv_rc_pingpong, ibv_srq_pingpong, rping).
packages_quick=(
	gcc libc6-dev meson ninja-build pkg-config libdpdk-dev libibverbs-dev librdmacm-dev
	libnuma-dev libisal-dev libpcap-dev libmicrohttpd-dev ibverbs-utils rdmacm-utils
	iproute2 procps
)
if ((quick)); then
	packages=("${packages_quick[@]}")
fi

# About 1 GiB of 2 MiB pages: enough for droced's mempools and a few apps' shared memory.
hugepages_wanted=512
hugepage_kb=2048
hugepage_mnt=/dev/hugepages

# Hard limits so an unattended run (CI) cannot hang.
apt_timeout=3600
setup_timeout=600
build_timeout=3600

log=$(mktemp)
trap 'rm -f "$log"' EXIT

say() { printf 'setup: %s\n' "$*"; }
note() { printf 'setup: NOTE: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

# Runs a command with its output in $log; on failure shows the end of it and exits.
run_logged() {
	local what=$1
	shift
	if ! "$@" >"$log" 2>&1; then
		tail -n 60 "$log" >&2
		die "$what failed (command: $*)"
	fi
}

install_packages() {
	local missing=() p
	for p in "${packages[@]}"; do
		if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != 'install ok installed' ]]; then
			missing+=("$p")
		fi
	done
	if [[ ${#missing[@]} -eq 0 ]]; then
		say "Debian packages: all ${#packages[@]} installed"
		return
	fi
	[[ $EUID -eq 0 ]] || die "missing Debian packages (${missing[*]}); run this script as root"
	say "installing ${#missing[@]} Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# tshark asks whether non-root users may capture; answer "no" so it never prompts.
	echo 'wireshark-common wireshark-common/install-setuid boolean false' |
		debconf-set-selections
	run_logged "apt-get update" timeout "$apt_timeout" apt-get update
	# Packages with a service (prometheus) must not start it here: the tests start their
	# own. A policy-rc.d already there (a container's) is left as it is.
	local policy=/usr/sbin/policy-rc.d ours=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\n# devtools/setup.sh: no service starts while it installs\nexit 101\n' \
			>"$policy"
		chmod 755 "$policy"
		ours=1
	fi
	if ! timeout "$apt_timeout" apt-get install -y --no-install-recommends "${missing[@]}" \
		>"$log" 2>&1; then
		((ours)) && rm -f "$policy"
		tail -n 60 "$log" >&2
		die "apt-get install failed"
	fi
	((ours)) && rm -f "$policy"
	say "Debian packages installed"
}

reserve_hugepages() {
	local nr=/proc/sys/vm/nr_hugepages have size mnt

	size=$(awk '/^Hugepagesize:/ { print $2 }' /proc/meminfo)
	if [[ -z $size || ! -e $nr ]]; then
		note "this kernel has no hugepages; droce will run without them"
		return
	fi
	if [[ $size != "$hugepage_kb" ]]; then
		note "default hugepage size is ${size} kB, not ${hugepage_kb} kB; not reserving any"
		return
	fi
	have=$(<"$nr")
	if ((have >= hugepages_wanted)); then
		:
	elif [[ $EUID -ne 0 ]] || ! { echo "$hugepages_wanted" >"$nr"; } 2>/dev/null; then
		note "cannot write $nr (not root, or read-only in a container)"
	else
		have=$(<"$nr")
		if ((have < hugepages_wanted)); then
			note "the kernel granted only $have of $hugepages_wanted hugepages" \
				"(memory short or fragmented)"
		fi
	fi
	if ((have == 0)); then
		note "no hugepages reserved; droce runs without them"
		return
	fi
	say "hugepages: $have x 2 MiB reserved"

	mnt=$(awk '$3 == "hugetlbfs" { print $2; exit }' /proc/mounts)
	if [[ -n $mnt ]]; then
		say "hugetlbfs mounted at $mnt"
		return
	fi
	if ! grep -qw hugetlbfs /proc/filesystems; then
		note "no hugetlbfs in this kernel or container; $hugepage_mnt not mounted"
		return
	fi
	if [[ $EUID -ne 0 ]] || ! { mkdir -p "$hugepage_mnt" &&
		mount -t hugetlbfs -o pagesize=2M nodev "$hugepage_mnt"; } 2>/dev/null; then
		note "cannot mount hugetlbfs at $hugepage_mnt (not root, or not allowed in this" \
			"container); droce runs without hugepages"
		return
	fi
	say "mounted hugetlbfs at $hugepage_mnt"
}

# drivers/net/fault's net_fault vdev needs DPDK's driver headers, which libdpdk-dev leaves
# out; they come from Debian's source package of the installed DPDK, hence a deb-src entry
# made from the Debian entries apt already has. Without them the rest still builds.
deb_src_list=/etc/apt/sources.list.d/droce-deb-src
# 1 when this run installed the driver headers: builds configured before must look again.
sdk_new=0
fetch_dpdk_sdk() {
	if [[ $EUID -eq 0 && -z $(apt-cache showsrc dpdk 2>/dev/null) ]]; then
		if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
			sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
				>"$deb_src_list.sources"
		elif [[ -f /etc/apt/sources.list ]]; then
			sed -n 's/^deb \(.*debian.*\)/deb-src \1/p' /etc/apt/sources.list \
				>"$deb_src_list.list"
		fi
		timeout "$apt_timeout" apt-get update >"$log" 2>&1 || true
	fi
	if ! devtools/fetch-dpdk-driver-headers.sh >"$log" 2>&1; then
		tail -n 5 "$log"
		note "no DPDK driver headers; the net_fault vdev is not built (the rest is)"
		return
	fi
	say "DPDK driver headers: $(tail -n 1 "$log")"
	if grep -q 'installed into' "$log"; then
		sdk_new=1
	fi
}

# build_dir DIR CC [meson options...] [-- ninja targets...]: configures DIR once, then
# builds the targets (all of them when none is named).
build_dir() {
	local dir=$1 compiler=$2 start=$SECONDS targets=()
	shift 2
	local i
	for ((i = 1; i <= $#; i++)); do
		if [[ ${!i} == -- ]]; then
			targets=("${@:i+1}")
			set -- "${@:1:i-1}"
			break
		fi
	done
	if [[ ! -e $dir/meson-private/coredata.dat ]]; then
		say "configuring $dir ($compiler${*:+ $*})"
		run_logged "meson setup $dir" env CC="$compiler" \
			timeout "$setup_timeout" meson setup "$dir" "$@"
	elif ((sdk_new)); then
		# meson looked for the driver headers when it configured $dir: look again.
		say "reconfiguring $dir (DPDK driver headers are new)"
		run_logged "meson setup --reconfigure $dir" env CC="$compiler" \
			timeout "$setup_timeout" meson setup --reconfigure "$dir"
	fi
	say "building $dir"
	run_logged "build of $dir" timeout "$build_timeout" ninja -C "$dir" "${targets[@]}"
	say "built $dir in $((SECONDS - start)) s"
}

install_packages
reserve_hugepages
if ((quick)); then
	build_dir "$prefix" gcc -- quickstart
	say "done (--quick: $prefix's quickstart target only; devtools/setup.sh builds the rest)"
	exit 0
fi
fetch_dpdk_sdk

sanitize=('-Db_sanitize=address,undefined' -Dc_args=-fno-sanitize-recover=all)
build_dir "$prefix" gcc
build_dir "$prefix-asan" gcc "${sanitize[@]}"
# Only what the fuzz suite runs (test/fuzz/meson.build): the rest of a clang build tests
# nothing the other two do not.
build_dir "$prefix-fuzz" clang -Dfuzz=true "${sanitize[@]}" -- fuzz-suite
# The guest running Linux's soft-RoCE, droce's peer in the rxe suite (test/rxe).
say "building the soft-RoCE guest in $prefix-rxe"
run_logged "test/rxe/build-guest.sh $prefix-rxe" timeout "$build_timeout" \
	test/rxe/build-guest.sh "$prefix-rxe"
say "$(tail -n 1 "$log")"
say "done"
