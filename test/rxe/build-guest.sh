#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds the QEMU guest that runs Linux's soft-RoCE (rdma_rxe) as a peer for droce
# (test/rxe/rxe_guest.py boots it): Debian 12's kernel and one initramfs holding busybox,
# rdma-core's ibverbs-utils with the rxe provider, rdmacm-utils, perftest, iproute2's ip,
# ss and rdma, the modules rxe needs, and test/rxe/guest-init as /init.
#
#   test/rxe/build-guest.sh [OUTDIR [PROGRAM...]]   OUTDIR defaults to build-rxe at the top
#                                                   of the tree
#   test/rxe/build-guest.sh --refresh OUTDIR [PROGRAM...]
#
# PROGRAMs are programs of our own for the guest's /usr/bin, built on this machine (the
# guest is Debian 12 too), with the shared libraries they need from the packages; without
# any, test/rxe/mw_peer and test/rxe/mcast_peer of the build directory beside OUTDIR
# (OUTDIR less its "-rxe") where they exist: devtools/setup.sh builds that directory
# first. --refresh rebuilds the guest from the packages it was last built from
# (OUTDIR/manifest, OUTDIR/debs) without asking apt anything, and does nothing when OUTDIR
# holds no guest yet: ninja runs it when a program changes (test/rxe/meson.build).
#
# Writes OUTDIR/vmlinux (the kernel as an uncompressed ELF: QEMU boots it through PVH,
# which under TCG saves the seconds the kernel would spend un-xz-ing itself),
# OUTDIR/initramfs.gz and OUTDIR/manifest (kernel release and every package used).
# Nothing is installed on this machine: the .debs are fetched with apt-get download into
# OUTDIR/debs and unpacked with dpkg-deb -x. Running it again downloads nothing and
# rebuilds nothing unless a package version, a program, guest-init or this script changed.

set -euo pipefail

here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
refresh=0
if [[ ${1:-} == --refresh ]]; then
	refresh=1
	shift
fi
out=$(readlink -m "${1:-$here/../../build-rxe}")
if (($#)); then
	shift
fi
programs=("$@")

# Userspace of the guest, with its Depends closure; only the programs named below and the
# shared libraries they need go into the initramfs. The DPDK packages are for droced in a
# guest on an emulated PCI NIC (test/nic: droced and the rest of droce come in an overlay,
# test/nic/build-overlay.sh): the libraries droced links and the PMDs it loads.
dpdk_pmds=(librte_mempool_ring librte_bus_pci librte_net_virtio librte_net_e1000
	librte_net_vmxnet3)
top_packages=(busybox-static libibverbs1 ibverbs-providers ibverbs-utils librdmacm1
	rdmacm-utils perftest iproute2 librte-eal23 librte-ethdev23 librte-cfgfile23
	librte-pcapng23 librte-mempool-ring23 librte-bus-pci23 librte-net-virtio23
	librte-net-e1000-23 librte-net-vmxnet3-23 libisal2 libmicrohttpd12)
# Loaded in this order with their dependencies first. No modprobe runs in the guest, so
# crc32_generic is named: rxe asks the crypto API for "crc32" (the ICRC) when the device
# is made, and without it `rdma link add` fails with ENOENT.
net_modules=(virtio_pci virtio_net)
rxe_modules=(crc32_generic ib_core ib_uverbs udp_tunnel ip6_udp_tunnel rdma_rxe ib_cm iw_cm
	rdma_cm rdma_ucm)
# A droced guest's (guest-init, guest.role=droced), loaded before the NIC drivers so that
# droce's NIC is bound first; vfio_iommu_type1 is named as nothing depends on it.
droce_modules=(vfio vfio_iommu_type1 vfio_pci uio_pci_generic)
triplet=x86_64-linux-gnu
# Hard limits, so an unattended run cannot hang: on the network, and on apt's local cache
# (its lock can be held by another apt).
apt_timeout=900
apt_cache_timeout=120

say() { printf 'build-guest: %s\n' "$*"; }
die() { printf 'build-guest: ERROR: %s\n' "$*" >&2; exit 1; }

if ((${#programs[@]} == 0)) && [[ $out == *-rxe ]]; then
	for beside in "${out%-rxe}"/test/rxe/{mw_peer,mcast_peer}; do
		if [[ -f $beside ]]; then
			programs+=("$beside")
		else
			say "no $beside: the guest gets no ${beside##*/} (build ${out%-rxe} first)"
		fi
	done
fi
for f in "${programs[@]}"; do
	[[ -f $f && -x $f ]] || die "no program $f"
done

for tool in apt-get apt-cache dpkg-deb readelf cpio gzip xz ldconfig flock; do
	command -v "$tool" >/dev/null || die "$tool not found (devtools/setup.sh installs it)"
done
if ((refresh)) && [[ ! -f $out/vmlinux || ! -f $out/initramfs.gz || ! -f $out/manifest ]]
then
	say "no guest in $out yet (devtools/setup.sh builds it): nothing to refresh"
	exit 0
fi
mkdir -p "$out/debs"
# One build at a time in OUTDIR (two ninja runs, or ninja and devtools/setup.sh, may start
# one each): the other waits, then finds the guest up to date.
exec 9>"$out/lock"
flock -w "$apt_timeout" 9 || die "another build-guest.sh holds $out/lock"

if ((refresh)); then
	# The manifest's "PACKAGE VERSION ARCH" lines (not "kernel", "modules", "program").
	mapfile -t wanted < <(awk 'NF == 3 && $1 != "kernel" && $1 != "modules" &&
		$1 != "program"' "$out/manifest" | LC_ALL=C sort)
	kpkg=$(printf '%s\n' "${wanted[@]}" | awk '$1 ~ /^linux-image-[0-9]/ { print $1; exit }')
	[[ -n $kpkg ]] || die "$out/manifest names no kernel: run $0 $out"
else
	# A fresh system (a container) has no package lists at all.
	if [[ $(timeout "$apt_cache_timeout" apt-cache policy linux-image-amd64 2>/dev/null) != \
		*"Candidate: "[0-9]* ]]; then
		say "apt-get update"
		timeout "$apt_timeout" apt-get update -qq || die "apt-get update failed"
	fi

	# The kernel linux-image-amd64 points at (a security update changes it).
	kpkg=$(timeout "$apt_cache_timeout" apt-cache depends linux-image-amd64 |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	[[ -n $kpkg ]] || die "cannot tell which kernel linux-image-amd64 depends on"
fi

# "PACKAGE VERSION ARCH" for the kernel and the Depends closure of the userspace: apt
# simulates installing onto an empty system, so nothing installed here hides a package.
resolve() {
	timeout "$apt_cache_timeout" apt-cache show --no-all-versions "$kpkg" |
		awk -v p="$kpkg" '/^Version:/ { v = $2 } /^Architecture:/ { a = $2 }
			END { print p, v, a }'
	timeout "$apt_cache_timeout" apt-get -s -o Dir::State::status=/dev/null \
		-o APT::Install-Recommends=false install "${top_packages[@]}" |
		awk '$1 == "Inst" {
			# Inst PACKAGE (VERSION RELEASE [ARCH]) [BROKEN...]
			match($0, /\[[a-z0-9]+\]\)/); a = substr($0, RSTART + 1, RLENGTH - 3)
			v = $3; sub(/^\(/, "", v)
			print $2, v, a }'
}
if ((!refresh)); then
	mapfile -t wanted < <(resolve | LC_ALL=C sort)
fi
((${#wanted[@]} > ${#top_packages[@]})) || die "apt could not resolve ${top_packages[*]}"

# apt-get download names a file PACKAGE_VERSION_ARCH.deb, with the epoch's colon escaped.
declare -A deb_of=()
need=()
for w in "${wanted[@]}"; do
	read -r p v a <<<"$w"
	deb_of[$p]=${p}_${v//:/%3a}_$a.deb
	[[ -f $out/debs/${deb_of[$p]} ]] || need+=("$p=$v")
done
if ((${#need[@]} && refresh)); then
	die "${need[*]} not in $out/debs: run $0 $out"
elif ((${#need[@]})); then
	say "downloading ${#need[@]} packages"
	# As root apt drops to the _apt user, who cannot write into OUTDIR.
	(cd "$out/debs" && timeout "$apt_timeout" apt-get download -q \
		-o APT::Sandbox::User=root "${need[@]}") >&2 || die "apt-get download failed"
fi
for f in "$out"/debs/*.deb; do
	# An older version of a package, left by an earlier build.
	[[ " ${deb_of[*]} " == *" ${f##*/} "* ]] || rm -f "$f"
done

# "program NAME sha256 HASH" for each program: its contents are part of the stamp.
prog_lines=()
for f in "${programs[@]}"; do
	prog_lines+=("program ${f##*/} sha256 $(sha256sum <"$f" | cut -d' ' -f1)")
done
stamp=$( {
	printf '%s\n' "${deb_of[@]}" | LC_ALL=C sort
	if ((${#prog_lines[@]})); then
		printf '%s\n' "${prog_lines[@]}"
	fi
	cat "$here/guest-init" "$here/build-guest.sh"
} | sha256sum | cut -d' ' -f1)
if [[ -f $out/vmlinux && -f $out/initramfs.gz &&
	$(cat "$out/stamp" 2>/dev/null) == "$stamp" ]]; then
	say "up to date in $out"
	exit 0
fi
rm -f "$out/stamp"

# Each package in its own tree, so the programs of one package can be named by it. The
# trees (half a gigabyte, mostly kernel modules) go once the build is done.
work=$out/work
rm -rf "$work"
trap 'rm -rf "$work" "$out"/*.tmp' EXIT
say "unpacking ${#deb_of[@]} packages"
for p in "${!deb_of[@]}"; do
	mkdir -p "$work/pkg/$p"
	dpkg-deb -x "$out/debs/${deb_of[$p]}" "$work/pkg/$p"
done

root=$work/root
libdir=$root/usr/lib/$triplet
mkdir -p "$root"/{bin,dev,etc,proc,sys,tmp,run,root,usr/bin,usr/sbin,lib64} "$libdir/libibverbs"
# One library directory, reached by both names the programs and ld.so.cache may use.
ln -s usr/lib "$root/lib"

# Where each shared library lies in the unpacked trees (libc6 is not usr-merged).
declare -A lib_src=() lib_done=()
while IFS= read -r f; do
	lib_src[${f##*/}]=$f
done < <(find "$work"/pkg/*/{lib,usr/lib}/$triplet -maxdepth 1 -name '*.so*' 2>/dev/null)

add_lib() {
	local so=$1 link
	[[ -z ${lib_done[$so]:-} ]] || return 0
	lib_done[$so]=1
	[[ -n ${lib_src[$so]:-} ]] || die "no package holds $so"
	link=$(readlink "${lib_src[$so]}" || true)
	if [[ $link == dpdk/* ]]; then
		# A DPDK PMD: the file (NAME.so.23.0) lies in EAL's plugin directory and the
		# soname is a link to it, as Debian installs them. One file: EAL loads the
		# directory's NAME.so.23.0 files and the dynamic loader takes the same inode for
		# the soname, not a second copy that would register its bus or driver twice.
		link=${link%/*}/$(basename "$(readlink -f "${lib_src[$so]}")")
		mkdir -p "$libdir/${link%/*}"
		cp -L "${lib_src[$so]}" "$libdir/$link"
		ln -s "$link" "$libdir/$so"
	else
		cp -L "${lib_src[$so]}" "$libdir/$so"
	fi
	add_needed "${lib_src[$so]}"
}
add_needed() {
	local so
	for so in $(LC_ALL=C readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		add_lib "$so"
	done
}
add_prog() {  # add_prog FILE DIR
	install -m 755 "$1" "$2/${1##*/}"
	add_needed "$1"
}

add_lib ld-linux-x86-64.so.2
ln -s ../usr/lib/$triplet/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
# glibc dlopens it to unwind a cancelled thread (rping cancels its threads).
add_lib libgcc_s.so.1

install -m 755 "$work/pkg/busybox-static/bin/busybox" "$root/bin/busybox"
for a in $("$root/bin/busybox" --list); do
	[[ $a == busybox ]] || ln -s busybox "$root/bin/$a"
done
# perftest's raw_ethernet_* need raw packet QPs, which rxe has not.
for f in "$work"/pkg/{ibverbs-utils,rdmacm-utils}/usr/bin/* "$work"/pkg/perftest/usr/bin/ib_*; do
	add_prog "$f" "$root/usr/bin"
done
# DPDK for droced (test/nic): the PMDs EAL loads from its plugin directory and what they
# need; droced's own libraries (librte_cfgfile, librte_pcapng for captures, libisal,
# libmicrohttpd for its metrics) by their sonames.
for p in "${dpdk_pmds[@]}" librte_cfgfile librte_pcapng libisal libmicrohttpd; do
	found=
	for so in "${!lib_src[@]}"; do
		if [[ $so =~ ^$p\.so\.[0-9]+$ ]]; then
			found=$so
			break
		fi
	done
	[[ -n $found ]] || die "no package holds $p.so.N"
	add_lib "$found"
done
# Ours (PROGRAMs above), with what they need from the packages.
for f in "${programs[@]}"; do
	add_prog "$f" "$root/usr/bin"
done
# iproute2's ip besides busybox's, for what busybox's lacks (-json, -details, -stats);
# ss, to see a server listen before its client starts.
for f in bin/ip bin/ss usr/bin/rdma; do
	add_prog "$work/pkg/iproute2/$f" "$root/usr/sbin"
done
# The rxe provider only: libibverbs would try and report every other one.
add_prog "$(echo "$work"/pkg/ibverbs-providers/usr/lib/$triplet/libibverbs/librxe-*.so)" \
	"$libdir/libibverbs"
mkdir -p "$root/etc/libibverbs.d"
cp "$work/pkg/ibverbs-providers/etc/libibverbs.d/rxe.driver" "$root/etc/libibverbs.d/"

printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
printf 'hosts: files\n' >"$root/etc/nsswitch.conf"
printf '/usr/lib/%s\n' "$triplet" >"$root/etc/ld.so.conf"
ldconfig -r "$root"

# The kernel .deb has no modules.dep (depmod runs in its postinst): the order comes from
# each module's own "depends=" in .modinfo.
kdir=$work/pkg/$kpkg
kver=$(ls "$kdir/lib/modules")
mdir=$kdir/lib/modules/$kver
declare -A ko_of=() mod_done=()
while IFS= read -r f; do
	n=${f##*/}
	n=${n%.ko}
	ko_of[${n//-/_}]=$f
done < <(find "$mdir/kernel" -name '*.ko')
mod_order=()
add_module() {
	local m=${1//-/_} d
	[[ -z ${mod_done[$m]:-} ]] || return 0
	mod_done[$m]=1
	if [[ -z ${ko_of[$m]:-} ]]; then
		# Built into the kernel: nothing to load.
		grep -q "/${1}.ko$" "$mdir/modules.builtin" || die "no module $m in $kpkg"
		return 0
	fi
	for d in $(tr '\0' '\n' <"${ko_of[$m]}" | sed -n 's/^depends=//p' | tr , ' '); do
		add_module "$d"
	done
	mod_order+=("$m")
}
# One load order per list, each module in the first list that needs it:
# /etc/modules.net (the guest's virtio-net), /etc/modules.rxe, /etc/modules.droce.
mkdir -p "$root/lib/modules"
all_order=()
for list in net rxe droce; do
	declare -n names=${list}_modules
	mod_order=()
	for m in "${names[@]}"; do
		add_module "$m"
	done
	for m in "${mod_order[@]}"; do
		cp "${ko_of[$m]}" "$root/lib/modules/$m.ko"
	done
	printf '%s\n' "${mod_order[@]}" >"$root/etc/modules.$list"
	all_order+=("${mod_order[@]}")
	unset -n names
done
mod_order=("${all_order[@]}")

install -m 755 "$here/guest-init" "$root/init"

say "packing the initramfs"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -n -6 >"$out/initramfs.gz.tmp"

# The ELF inside the bzImage, found through the boot protocol's header (payload_offset,
# payload_length; Documentation/arch/x86/boot.rst). The payload ends with 4 bytes of
# size, which xz --single-stream ignores.
grep -qx 'CONFIG_PVH=y' "$kdir/boot/config-$kver" || die "$kpkg has no PVH entry point"
bz=$kdir/boot/vmlinuz-$kver
setup_sects=$(od -An -tu1 -j $((0x1f1)) -N 1 "$bz")
read -r payload_offset payload_length < <(od -An -tu4 -j $((0x248)) -N 8 "$bz")
dd if="$bz" iflag=skip_bytes,count_bytes bs=1M status=none \
	skip=$(((setup_sects + 1) * 512 + payload_offset)) count="$payload_length" |
	xz -dc --single-stream >"$out/vmlinux.tmp" || die "cannot unpack the kernel (not xz?)"
[[ $(head -c 4 "$out/vmlinux.tmp" | od -An -c | tr -d ' ') == 177ELF ]] ||
	die "the kernel's payload is not an ELF"

mv "$out/vmlinux.tmp" "$out/vmlinux"
mv "$out/initramfs.gz.tmp" "$out/initramfs.gz"
{
	echo "kernel $kver"
	echo "modules ${mod_order[*]}"
	printf '%s\n' "${wanted[@]}"
	if ((${#prog_lines[@]})); then
		printf '%s\n' "${prog_lines[@]}"
	fi
} >"$out/manifest"
echo "$stamp" >"$out/stamp"
say "built $out: kernel $kver, initramfs $(du -h "$out/initramfs.gz" | cut -f1)," \
	"$(find "$root" | wc -l) files"
