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
