#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# First contact with droce, run as root on Debian 12: installs and builds only what it
# runs (devtools/setup.sh --quick; the test command builds the rest), starts the memif
# pair of droced (config/pair-a.ini and config/pair-b.ini: two daemons on this machine
# joined by a shared-memory link), runs the RC ping-pong example, the SRQ server with
# several clients and Debian's unmodified ibv_rc_pingpong, ibv_srq_pingpong and rping
# through them, shows what the daemons saw, and stops everything. Exits 0 when every
# program succeeded and both daemons shut down cleanly.

set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

prefix=${DROCE_BUILD_PREFIX:-build}
app_timeout=120
clients=3

./devtools/setup.sh --quick </dev/null

droced=$prefix/app/droced/droced
ctl=$prefix/app/droce-ctl/droce-ctl
pingpong=$prefix/examples/droce-rc-pingpong
srq_server=$prefix/examples/droce-srq-server
# droce's drop-in libibverbs.so.1 (drivers/compat) for unmodified programs.
compat=$(readlink -f "$prefix/drivers/compat")
for bin in "$droced" "$ctl" "$pingpong" "$srq_server" "$compat/libibverbs.so.1"; do
	if [[ ! -e $bin ]]; then
		echo "quickstart: $bin was not built" >&2
		exit 1
	fi
done

logs=$(mktemp -d)
pids=()
stop_daemons() {
	local pid
	# B (the memif client) first, then A; SIGTERM is droced's clean shutdown.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		pid=${pids[i]}
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	pids=()
}
cleanup() {
	stop_daemons
	rm -rf "$logs"
}
trap cleanup EXIT

# start_daemon NAME CONFIG SOCKET: droced in the background; waits until it serves.
start_daemon() {
	local name=$1 config=$2 socket=$3
	timeout --kill-after=5 900 "$droced" --config "$config" >"$logs/$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 300); do
		if grep -q "droced: ready" "$logs/$name.log" && [[ -S $socket ]]; then
			return 0
		fi
		if ! kill -0 "${pids[-1]}" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	echo "quickstart: droced $name did not start:" >&2
	cat "$logs/$name.log" >&2
	exit 1
}

cat <<EOT

== 1. Two daemons joined by a memif link ==
droced A (config/pair-a.ini): port memif0, 10.99.0.1/24, control socket /run/droce/a.sock
droced B (config/pair-b.ini): port memif0, 10.99.0.2/24, control socket /run/droce/b.sock
A is the memif server, so it starts first.
EOT
start_daemon a config/pair-a.ini /run/droce/a.sock
start_daemon b config/pair-b.ini /run/droce/b.sock
sed 's/^/  A| /' "$logs/a.log"
sed 's/^/  B| /' "$logs/b.log"

cat <<EOT

== 2. RC ping-pong through both daemons ==
The server runs on A, the client on B; they exchange QP numbers over TCP on 127.0.0.1 and
then send 1000 messages of 4096 bytes each way over RoCEv2, checking every byte (-c).
Applications find their daemon through DROCE_SOCKET.

\$ DROCE_SOCKET=/run/droce/a.sock $pingpong -c -s 4096 -n 1000 &
\$ DROCE_SOCKET=/run/droce/b.sock $pingpong -c -s 4096 -n 1000 127.0.0.1
EOT
DROCE_SOCKET=/run/droce/a.sock timeout "$app_timeout" "$pingpong" -c -s 4096 -n 1000 \
	>"$logs/pp-server.log" 2>&1 &
pp_server=$!
sleep 0.5
pp_rc=0
DROCE_SOCKET=/run/droce/b.sock timeout "$app_timeout" "$pingpong" -c -s 4096 -n 1000 \
	127.0.0.1 >"$logs/pp-client.log" 2>&1 || pp_rc=$?
pps_rc=0
wait "$pp_server" || pps_rc=$?
sed 's/^/  server| /' "$logs/pp-server.log"
sed 's/^/  client| /' "$logs/pp-client.log"

cat <<EOT

== 3. One SRQ serving $clients clients ==
The server on A receives for all its QPs through one shared receive queue and re-arms
its limit event whenever it fires; $clients clients on B each send 200 checked messages.

\$ DROCE_SOCKET=/run/droce/a.sock $srq_server -q $clients -n 200 &
\$ DROCE_SOCKET=/run/droce/b.sock $srq_server -n 200 --client 127.0.0.1   (x $clients)
EOT
DROCE_SOCKET=/run/droce/a.sock timeout "$app_timeout" "$srq_server" -q "$clients" -n 200 \
	>"$logs/srq-server.log" 2>&1 &
srq_pid=$!
sleep 0.5
client_pids=()
for ((c = 0; c < clients; c++)); do
	DROCE_SOCKET=/run/droce/b.sock timeout "$app_timeout" "$srq_server" -n 200 \
		--client 127.0.0.1 >"$logs/srq-client-$c.log" 2>&1 &
	client_pids+=($!)
done
srq_clients_rc=0
for pid in "${client_pids[@]}"; do
	wait "$pid" || srq_clients_rc=$?
done
srq_rc=0
wait "$srq_pid" || srq_rc=$?
sed 's/^/  server| /' "$logs/srq-server.log"
for ((c = 0; c < clients; c++)); do
	sed "s/^/  client $c| /" "$logs/srq-client-$c.log"
done

cat <<EOT

== 4. Unmodified rdma-core programs: ibv_rc_pingpong, ibv_srq_pingpong, rping ==
The same binaries that drive a ConnectX, unchanged: LD_LIBRARY_PATH puts droce's
libibverbs.so.1 and librdmacm.so.1 ($compat) in front of the system's. On RoCE the
ping-pongs need a GID index (-g 0); -c checks every received byte. ibv_srq_pingpong runs
16 QPs on one SRQ on each side. rping connects through rdma_cm to A's own address (the CM
messages cross the memif link too) and -V validates every ping.

\$ export LD_LIBRARY_PATH=$compat
\$ DROCE_SOCKET=/run/droce/a.sock ibv_rc_pingpong -g 0 -c &
\$ DROCE_SOCKET=/run/droce/b.sock ibv_rc_pingpong -g 0 -c 127.0.0.1
\$ DROCE_SOCKET=/run/droce/a.sock ibv_srq_pingpong -g 0 -c -q 16 -n 200 &
\$ DROCE_SOCKET=/run/droce/b.sock ibv_srq_pingpong -g 0 -c -q 16 -n 200 127.0.0.1
\$ DROCE_SOCKET=/run/droce/a.sock rping -s -a 10.99.0.1 -V -C 100 &
\$ DROCE_SOCKET=/run/droce/b.sock rping -c -a 10.99.0.1 -V -C 100 -v | tail -2
EOT
# run_unmodified NAME ARGS...: server through A, client through B; sets unmod_rc.
unmod_rc=0
run_unmodified() {
	local name=$1 server rc_s=0 rc_c=0
	shift
	LD_LIBRARY_PATH=$compat DROCE_SOCKET=/run/droce/a.sock timeout "$app_timeout" \
		"$@" >"$logs/$name-server.log" 2>&1 &
	server=$!
	sleep 0.5
	LD_LIBRARY_PATH=$compat DROCE_SOCKET=/run/droce/b.sock timeout "$app_timeout" \
		"$@" 127.0.0.1 >"$logs/$name-client.log" 2>&1 || rc_c=$?
	wait "$server" || rc_s=$?
	sed "s/^/  $name server| /" "$logs/$name-server.log"
	sed "s/^/  $name client| /" "$logs/$name-client.log"
	if ((rc_s != 0 || rc_c != 0)); then
		echo "  $name: server exit $rc_s, client exit $rc_c"
		unmod_rc=1
	fi
}
run_unmodified ibv_rc_pingpong ibv_rc_pingpong -g 0 -c
run_unmodified ibv_srq_pingpong ibv_srq_pingpong -g 0 -c -q 16 -n 200
rping_rc=0
if command -v rping >/dev/null; then
	LD_LIBRARY_PATH=$compat DROCE_SOCKET=/run/droce/a.sock timeout "$app_timeout" \
		rping -s -a 10.99.0.1 -V -C 100 >"$logs/rping-server.log" 2>&1 &
	server=$!
	sleep 0.5
	LD_LIBRARY_PATH=$compat DROCE_SOCKET=/run/droce/b.sock timeout "$app_timeout" \
		rping -c -a 10.99.0.1 -V -C 100 -v >"$logs/rping-client.log" 2>&1 || rping_rc=$?
	wait "$server" || rping_rc=$?
	tail -n 2 "$logs/rping-client.log" | sed 's/^/  rping client| /'
	if ((rping_rc == 0)) && (($(grep -c '^ping data: rdma-ping-' "$logs/rping-client.log") != 100)); then
		rping_rc=1
	fi
	((rping_rc == 0)) && echo "  rping: 100 pings through rdma_cm, every one validated"
else
	echo "  rping: not installed (rdmacm-utils; devtools/setup.sh installs it)"
	rping_rc=1
fi

cat <<EOT

== 5. What the daemons hold now ==
Every application has exited, so neither daemon holds a client or an object.

\$ $ctl --socket /run/droce/a.sock status
EOT
"$ctl" --socket /run/droce/a.sock status | sed 's/^/  /'
status_a=$("$ctl" --socket /run/droce/a.sock status)

echo
echo "== 6. Stopping both daemons (SIGTERM: clients told, hugepage files and sockets removed) =="
stop_daemons
left=$(ls /run/droce/a.sock /run/droce/b.sock 2>/dev/null || true)

echo
ok=true
fail() {
	echo "quickstart: FAILED: $*"
	ok=false
}
((pp_rc == 0 && pps_rc == 0)) || fail "RC ping-pong: client exit $pp_rc, server exit $pps_rc"
((srq_rc == 0 && srq_clients_rc == 0)) ||
	fail "SRQ server: server exit $srq_rc, a client exited $srq_clients_rc"
((unmod_rc == 0)) || fail "an unmodified ibv_*_pingpong failed (see its output above)"
((rping_rc == 0)) || fail "rping through rdma_cm failed (see $logs/rping-*.log)"
grep -q '^qps=0$' <<<"$status_a" || fail "droced A still holds QPs after the programs ended"
[[ -z $left ]] || fail "control sockets left behind: $left"
$ok || exit 1
cat <<EOT
quickstart: OK. RoCEv2 traffic ran between two droced over memif: an RC ping-pong, an SRQ
server with $clients clients, Debian's unmodified ibv_rc_pingpong and ibv_srq_pingpong, and
rping connected through rdma_cm, every byte checked. Next: doc/getting-started.md (running
droced and your own programs), doc/unmodified-programs.md (any ibverbs or rdma_cm program
on droce), ./devtools/run-tests.sh (every test suite).
EOT
