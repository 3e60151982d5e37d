# SPDX-License-Identifier: BSD-3-Clause
"""The soft-RoCE guest itself, before any test trusts it as droce's peer: it boots on an
RxeLink, rxe0 is active with the IPv4 RoCEv2 GID at the index it announced, jobs run
concurrently with their output whole, KILL and job timeouts end a job, the host namespace
reaches the guest, and the capture holds what went on the wire. Prints the boot time and
the time of a command.

usage: test_rxe_guest.py [RXE_DIR/] [CASE...]
    RXE_DIR: the guest test/rxe/build-guest.sh built, a path with a slash
    ($DROCE_RXE_DIR wins; default build-rxe at the top of the tree)
"""

import os
import socket
import struct
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "integration"))
sys.path.insert(0, here)
from droce_harness import TestFailure, Workdir, check, log, run_cases  # noqa: E402
from rxe_guest import RxeGuest, RxeLink, cleanup_on_sigterm, default_rxe_dir  # noqa: E402


def gid_of(ip):
    """The IPv4-mapped GID of ip as the agent prints it: 32 hex digits."""
    return "00000000000000000000ffff" + socket.inet_aton(ip).hex()


def pcap_frames(path):
    """The frames of a little-endian pcap file (what QEMU's filter-dump writes)."""
    with open(path, "rb") as f:
        data = f.read()
    check(len(data) >= 24 and data[:4] == b"\xd4\xc3\xb2\xa1", "%s is no pcap file" % path)
    frames, off = [], 24
    while off + 16 <= len(data):
        caplen, = struct.unpack_from("<I", data, off + 8)
        frames.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return frames


def cases(link, guest, pcap):
    def first_command():
        t0 = time.monotonic()
        rc, out = guest.run("echo hello")
        check((rc, out) == (0, "hello\n"), "echo: rc %s, %r" % (rc, out))
        log("  first command: %.2f s" % (time.monotonic() - t0))
        t0 = time.monotonic()
        for _ in range(5):
            guest.run("true")
        log("  a command: %.2f s" % ((time.monotonic() - t0) / 5))

    def devinfo():
        rc, out = guest.run("ibv_devinfo -d rxe0")
        check(rc == 0, "ibv_devinfo: rc %s\n%s" % (rc, out))
        for want in ("PORT_ACTIVE", "active_mtu:\t\t4096", "link_layer:\t\tEthernet"):
            check(want in out, "ibv_devinfo says no %r:\n%s" % (want, out))

    def gid():
        info = guest.info
        check(info["ip"] == link.GUEST_IP and info["gid"] == gid_of(link.GUEST_IP),
              "AGENT-READY: %s" % info)
        check(info["mac"] == guest.mac and info["mtu"] == guest.mtu, "AGENT-READY: %s" % info)
        # Re-read from sysfs, through the job environment the agent sets.
        rc, out = guest.run("d=/sys/class/infiniband/$RXE_DEV/ports/1; "
                            "cat $d/gids/$RXE_GID_INDEX $d/gid_attrs/types/$RXE_GID_INDEX")
        check(rc == 0 and out.split("\n")[:2] == [
            ":".join(info["gid"][i:i + 4] for i in range(0, 32, 4)), "RoCE v2"],
            "GID %d in sysfs: rc %s\n%s" % (info["gid_index"], rc, out))

    def concurrent():
        # Each job leaves a mark, waits until it sees the other's, then writes its long
        # output: a saw b's mark, so b started before a ended; b saw a's, so a started
        # before b ended. They overlapped, whatever time the guest's vCPU gets (not judged
        # by the clock: under TCG on a loaded host two 2-second sleeps took 4.3 s). Run one
        # after the other, the first would never see the second's mark and give up after
        # 3000 waits of 10 ms (exit 9). Released together, both write their END at the
        # same moment: the lines must arrive whole.
        mark = "/tmp/concurrent-%d-" % os.getpid()
        meet = ("touch %s{me}; n=0; while [ ! -e %s{other} ]; do n=$((n + 1)); "
                "[ $n -le 3000 ] || exit 9; usleep 10000; done; " % (mark, mark))
        t0 = time.monotonic()
        a = guest.spawn(meet.format(me="a", other="b") + "seq 1 5000")
        b = guest.spawn(meet.format(me="b", other="a") + "seq 5001 10000 >&2; exit 3")
        ra, rb = a.wait(), b.wait()
        took = time.monotonic() - t0
        for name, (rc, out) in (("a", ra), ("b", rb)):
            check(rc != 9, "job %s never saw the other's mark: the jobs did not run "
                  "concurrently" % name)
        check(ra == (0, "".join("%d\n" % i for i in range(1, 5001))), "job a: rc %s" % ra[0])
        check(rb == (3, "".join("%d\n" % i for i in range(5001, 10001))), "job b: rc %s" % rb[0])
        guest.run("rm -f %sa %sb" % (mark, mark))
        log("  two jobs, each running while the other was, with 24 KB of output each: %.2f s"
            % took)

    def kill():
        job = guest.spawn("echo started; sleep 100")
        time.sleep(0.5)
        job.kill()
        rc, out = job.wait(10)
        check((rc, out) == (137, "started\n"), "killed job: rc %s, %r" % (rc, out))
        t0 = time.monotonic()
        job = guest.spawn("sleep 100 & sleep 100", timeout=1)
        rc, out = job.wait()
        check(job.timed_out and rc == 137 and time.monotonic() - t0 < 5,
              "job past its timeout: rc %s, after %.1f s" % (rc, time.monotonic() - t0))
        # Neither sleep is left: the job's process group went.
        rc, out = guest.run("ps -o args | grep -c '^sleep 100'")
        check(out.strip() == "0", "sleeps left in the guest:\n%s" % out)
        check(guest.ping(), "no PONG after the kills")

    def ping():
        r = subprocess.run(link.netns_cmd(["ping", "-c", "1", "-W", "5", link.GUEST_IP]),
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, "ping from the namespace:\n%s%s" % (r.stdout, r.stderr))

    def capture():
        frames = pcap_frames(pcap)
        guest_mac = bytes.fromhex(guest.mac.replace(":", ""))
        # ICMP echo replies (type 0) from the guest: ping's answer was recorded.
        replies = [f for f in frames if f[6:12] == guest_mac and f[12:14] == b"\x08\x00"
                   and f[23] == 1 and f[34] == 0]
        check(replies, "no ICMP echo reply of the guest among %d frames in %s" %
              (len(frames), pcap))
        log("  capture: %d frames" % len(frames))

    return [("first_command", first_command), ("devinfo", devinfo), ("gid", gid),
            ("concurrent", concurrent), ("kill", kill), ("ping", ping), ("capture", capture)]


def main():
    cleanup_on_sigterm()
    args = sys.argv[1:]
    rxe_dir = args.pop(0) if args and os.sep in args[0] else default_rxe_dir()
    rxe_dir = os.environ.get("DROCE_RXE_DIR") or rxe_dir
    work = Workdir("rxe-guest")
    try:
        with RxeLink() as link:
            t0 = time.monotonic()
            with RxeGuest(link, rxe_dir, pcap=work.file("guest.pcap")) as guest:
                info = guest.info
                log("guest ready in %.2f s (%s): %s gid_index %d gid %s" %
                    (info["boot_s"], guest.accel, info["ip"], info["gid_index"], info["gid"]))
                try:
                    run_cases(cases(link, guest, work.file("guest.pcap")), args)
                except TestFailure:
                    log(guest.console_tail())
                    raise
            log("guest up and down in %.2f s" % (time.monotonic() - t0))
    except TestFailure as e:
        log("FAIL %s" % e)
        return 1
    finally:
        work.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
