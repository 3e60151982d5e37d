# SPDX-License-Identifier: BSD-3-Clause
# Shared by the devtools/bench-*.sh scripts (sourced, not run).

# bench_build DIR TARGET: configures DIR with the project's defaults if it is not a build
# directory yet, then builds TARGET in it.
bench_build() {
	if [ ! -f "$1/build.ninja" ]; then
		timeout 600 meson setup "$1" >/dev/null
	fi
	timeout 600 ninja -C "$1" "$2" >/dev/null
}

# bench_describe DIR [LINE...]: prints the machine, kernel, compiler, the given lines,
# the build and the load, and warns when the build's figures would mean little (a
# sanitizer or an unoptimised build).
bench_describe() {
	local dir=$1 opts buildtype sanitize cargs line
	shift
	opts=$(meson introspect --buildoptions "$dir" | /usr/bin/python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["buildtype"], o["b_sanitize"], o["c_args"] and " ".join(o["c_args"]) or "-")')
	read -r buildtype sanitize cargs <<<"$opts"
	echo "machine:  $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs online"
	echo "kernel:   $(uname -sr)"
	echo "compiler: $(sed -n 's/^C compiler for the host machine: //p' "$dir/meson-logs/meson-log.txt" | head -n 1)"
	for line in "$@"; do
		echo "$line"
	done
	echo "build:    $dir ($buildtype, sanitize=$sanitize, c_args=$cargs)"
	echo "load:     $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min; other work on the machine adds noise)"
	if [ "$buildtype" = debug ] || [ "$buildtype" = plain ] || [ "$sanitize" != none ]; then
		echo "warning:  not an optimised build without sanitizers; the figures mean little"
	fi
	echo
}

# bench_daemon_cleanup PREFIX WORK: traps that stop what a benchmark's Python part started
# and remove what the EAL left under PREFIX and the directory WORK, at exit and on SIGINT or
# SIGTERM. The Python part records each daemon's process group in WORK/pgids and runs in
# the background, its pid in $pypid, so that a signal is handled at once.
bench_daemon_cleanup() {
	bench_prefix=$1
	bench_work=$2
	pypid=
	trap bench_cleanup EXIT
	trap bench_stop_run INT TERM
}

bench_cleanup() {
	local g
	# Daemon process groups the Python part recorded and has not stopped (it was killed).
	if [ -f "$bench_work/pgids" ]; then
		while read -r g; do
			kill -TERM -- "-$g" 2>/dev/null || true
		done <"$bench_work/pgids"
		sleep 2
		while read -r g; do
			kill -KILL -- "-$g" 2>/dev/null || true
		done <"$bench_work/pgids"
	fi
	rm -rf /var/run/dpdk/"$bench_prefix"* 2>/dev/null || true
	rm -f /dev/hugepages/"$bench_prefix"* 2>/dev/null || true
	rm -rf "$bench_work"
}

bench_stop_run() {
	# The Python part stops its daemons on SIGTERM (timeout forwards it); then clean up.
	if [ -n "$pypid" ]; then
		kill -TERM "$pypid" 2>/dev/null || true
		wait "$pypid" 2>/dev/null || true
	fi
	exit 130
}
