#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Fetches the DPDK driver SDK headers that Debian's libdpdk-dev leaves out (ethdev_driver.h,
# ethdev_vdev.h, bus_vdev_driver.h and what they include that is not installed), so that
# drivers/net/fault can build its net_fault vdev. Debian builds DPDK without
# enable_driver_sdk; the headers come from Debian's own source package of exactly the
# installed version, so they describe the same structures as the installed libraries.
#
#   devtools/fetch-dpdk-driver-headers.sh [DIR]
#
# DIR defaults to /var/cache/droce/dpdk-sdk-<version>, where drivers/net/fault/meson.build
# looks. Needs a deb-src entry for Debian's archive (devtools/setup.sh adds one). Safe to
# run again: when DIR already holds the headers of the installed version it does nothing.
# Nothing of DPDK is copied into this repository.

set -euo pipefail

# The headers a vdev PMD includes; the ones they include are found by following #include.
roots=(ethdev_driver.h ethdev_vdev.h bus_vdev_driver.h)
# Where in the source tree to look for them (a name must be unique there).
src_dirs=(lib drivers/bus/vdev)
stamp_name=.droce-dpdk-sdk
fetch_timeout=1800

say() { printf 'fetch-dpdk-driver-headers: %s\n' "$*"; }
die() { printf 'fetch-dpdk-driver-headers: ERROR: %s\n' "$*" >&2; exit 1; }

modversion=$(pkg-config --modversion libdpdk 2>/dev/null) ||
	die "pkg-config finds no libdpdk: install libdpdk-dev"
[[ $modversion == 22.11.* ]] || die "installed DPDK is $modversion; droce needs 22.11.x"
# The binary package's version names the source package version: 22.11.11-0+deb12u1.
debversion=$(dpkg-query -W -f='${Version}' libdpdk-dev 2>/dev/null) ||
	die "libdpdk-dev is not installed as a Debian package"
upstream=${debversion#*:}
upstream=${upstream%-*}
[[ $upstream == "$modversion" ]] ||
	die "libdpdk-dev $debversion does not match pkg-config's libdpdk $modversion"

dest=${1:-/var/cache/droce/dpdk-sdk-$modversion}
stamp=$dest/$stamp_name

if [[ -f $stamp && $(<"$stamp") == "$debversion" ]]; then
	say "$dest already holds the driver headers of dpdk $debversion"
	exit 0
fi

# Installed header directories, to tell what is missing from what is there.
read -r -a inc_flags <<<"$(pkg-config --cflags-only-I libdpdk)"
inc_dirs=()
for f in "${inc_flags[@]}"; do
	inc_dirs+=("${f#-I}")
done
# installed_path NAME: where the installed NAME is, or nothing.
installed_path() {
	local d
	for d in "${inc_dirs[@]}"; do
		if [[ -e $d/$1 ]]; then
			printf '%s\n' "$d/$1"
			return
		fi
	done
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt downloads as its own user (_apt) where that user can write, else as root, warning.
if [[ $EUID -eq 0 ]] && id _apt >/dev/null 2>&1; then
	chown _apt "$tmp"
fi

say "fetching Debian source package dpdk=$debversion"
if ! (cd "$tmp" && timeout "$fetch_timeout" apt-get source --download-only -q \
	"dpdk=$debversion") >"$tmp/apt.log" 2>&1; then
	tail -n 20 "$tmp/apt.log" >&2
	die "apt-get source dpdk=$debversion failed: is a deb-src entry for Debian's" \
		"archive configured (devtools/setup.sh adds one) and was apt-get update run?"
fi

orig=$(compgen -G "$tmp/dpdk_${upstream}.orig.tar.*" | head -n 1) ||
	die "no orig tarball in the source package"
debian_tar=$(compgen -G "$tmp/dpdk_${debversion#*:}.debian.tar.*" | head -n 1) ||
	die "no debian tarball in the source package"
# Read to the end: head would close the pipe on tar (SIGPIPE, fatal under pipefail).
top=$(tar -tf "$orig" | sed -n 1p)
top=${top%%/*}

mkdir "$tmp/src" "$tmp/debian"
tar -xf "$orig" -C "$tmp/src" "$top/VERSION" "${src_dirs[@]/#/$top/}"
tar -xf "$debian_tar" -C "$tmp/debian"
src=$tmp/src/$top
[[ $(<"$src/VERSION") == "$modversion" ]] ||
	die "the source package is DPDK $(<"$src/VERSION"), not $modversion"

# find_src NAME: the one path of NAME under the source dirs.
find_src() {
	local hits
	mapfile -t hits < <(cd "$src" && find "${src_dirs[@]}" -name "$1" -type f)
	[[ ${#hits[@]} -le 1 ]] || die "$1 is ambiguous in the source tree: ${hits[*]}"
	[[ ${#hits[@]} -eq 1 ]] && printf '%s\n' "${hits[0]}"
	return 0
}

# Follows #include from the roots, keeping what is not installed.
declare -A seen=()
wanted=()
queue=("${roots[@]}")
while [[ ${#queue[@]} -gt 0 ]]; do
	name=${queue[0]}
	queue=("${queue[@]:1}")
	[[ -n ${seen[$name]:-} ]] && continue
	seen[$name]=1
	path=$(find_src "$name")
	have=$(installed_path "$name")
	if [[ -n $have ]]; then
		# The installed copy must be this version's, or the new headers would not fit it.
		if [[ -n $path ]] && ! cmp -s "$src/$path" "$have"; then
			die "installed $have differs from $path of dpdk $debversion"
		fi
		continue
	fi
	# System headers (<stdint.h>, ...) are neither installed by DPDK nor in its tree.
	[[ -n $path ]] || continue
	wanted+=("$path")
	while read -r inc; do
		queue+=("$inc")
	done < <(sed -n 's/^#[[:space:]]*include[[:space:]]*[<"]\([^>"]*\)[>"].*/\1/p' \
		"$src/$path")
done

for r in "${roots[@]}"; do
	[[ -n $(find_src "$r") ]] || die "$r is not in the source package"
done
# Debian's patches would change what the tarball holds: none may touch these headers.
for path in "${wanted[@]}"; do
	if grep -qs -- "^+++ [^/]*/$path" "$tmp"/debian/debian/patches/*; then
		die "a Debian patch changes $path: not supported"
	fi
done

mkdir -p "$dest"
for path in "${wanted[@]}"; do
	install -m 0644 "$src/$path" "$dest/"
done
printf '%s\n' "$debversion" >"$stamp"
say "installed into $dest: ${wanted[*]##*/}"
