#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The initramfs of a droced guest (test/nic): the soft-RoCE guest's (test/rxe/build-guest.sh:
# Debian's kernel, busybox, rdma-core's programs, DPDK's libraries and PMDs, the vfio and
# uio modules) with an overlay of this build's droce on top: droced and droce-ctl in
# /usr/bin, droce's libibverbs.so.1 and librdmacm.so.1 in /opt/droce/lib (a job puts it
# first on LD_LIBRARY_PATH to run rdma-core's programs on droce). The kernel unpacks
# concatenated archives one after the other, so the overlay is a second cpio appended to
# the first: a change to droce rebuilds a few megabytes, not the guest.
#
#   test/nic/build-overlay.sh OUT GUEST_DIR DROCED DROCE_CTL COMPAT_LIB...
#
# OUT is written (GUEST_DIR/initramfs.gz followed by the overlay); every shared library the
# overlay's programs need must be in the guest already (the script checks, so a new
# dependency of droced fails here and not at the guest's first run).

set -euo pipefail

say() { printf 'build-overlay: %s\n' "$*"; }
die() { printf 'build-overlay: ERROR: %s\n' "$*" >&2; exit 1; }

(($# >= 4)) || die "usage: $0 OUT GUEST_DIR DROCED DROCE_CTL COMPAT_LIB..."
out=$(readlink -m "$1")
guest=$(readlink -m "$2")
droced=$3
ctl=$4
shift 4
compat=("$@")
base=$guest/initramfs.gz
if [[ ! -f $base ]]; then
	# No guest yet (devtools/setup.sh builds it): an empty OUT, which the tests report.
	say "no guest in $guest yet (test/rxe/build-guest.sh $guest): nothing to overlay"
	: >"$out"
	exit 0
fi
for f in "$droced" "$ctl" "${compat[@]}"; do
	[[ -f $f ]] || die "no $f"
done

work=$(mktemp -d "${out%/*}/overlay.XXXXXX")
trap 'rm -rf "$work" "$out.tmp"' EXIT
root=$work/root
mkdir -p "$root/usr/bin" "$root/opt/droce/lib"
install -m 755 "$droced" "$ctl" "$root/usr/bin/"
for f in "${compat[@]}"; do
	install -m 755 "$f" "$root/opt/droce/lib/"
done

# Every NEEDED library of the overlay is in the guest or in the overlay itself.
gzip -dc "$base" | cpio --quiet -t >"$work/base.list"
for f in "$root"/usr/bin/* "$root"/opt/droce/lib/*; do
	for so in $(LC_ALL=C readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[[ -e $root/opt/droce/lib/$so ]] && continue
		grep -qE "^(\./)?usr/lib/x86_64-linux-gnu/$so\$" "$work/base.list" ||
			die "${f##*/} needs $so, which the guest lacks (add its package to" \
				"test/rxe/build-guest.sh)"
	done
done

(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -n -1 >"$work/overlay.gz"
cat "$base" "$work/overlay.gz" >"$out.tmp"
mv "$out.tmp" "$out"
say "built $out: overlay $(du -h "$work/overlay.gz" | cut -f1) on $(du -h "$base" | cut -f1)"
