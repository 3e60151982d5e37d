# SPDX-License-Identifier: BSD-3-Clause
"""droced given a bad config file stops at once (non-zero exit) with a message naming the
file and line, or the port, of the mistake: an unknown key, a bad address, a device that
does not exist, no [engines] section. Without --config droced starts on its built-in
virtual link (net_ring0), answers droce-ctl on the default socket and stops cleanly.

usage: test_bad_config.py DROCED DROCE_CTL [CASE...]
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import ChildOutput, TestFailure, Workdir, check, log, main, parse_args

BIN, CASES = parse_args(["droced", "droce_ctl"])
PREFIX = "droce-it-%d-cfg" % os.getpid()
DEFAULT_SOCKET = "/run/droce/droced.sock"

GOOD = """[eal]
args = --file-prefix=%(prefix)s --no-pci

[port p0]
device = net_ring0
ipv4 = 10.99.2.1/24

[engines]
lcores = 1

[control]
socket = %(socket)s
"""

# (case, edit of the good file, regex the message must match; {file} is the file name)
BAD = [
    ("unknown_key", lambda s: s.replace("ipv4 = 10.99.2.1/24\n",
                                        "ipv4 = 10.99.2.1/24\ncolour = blue\n"),
     r"{file}:7: .*colour"),
    ("bad_address", lambda s: s.replace("10.99.2.1/24", "10.99.2.300/24"),
     r"{file}:6: .*10\.99\.2\.300"),
    ("bad_prefix", lambda s: s.replace("10.99.2.1/24", "10.99.2.1/40"),
     r"{file}:6: "),
    ("no_device", lambda s: s.replace("net_ring0", "net_nosuchdev0"),
     r"\[port p0\].*net_nosuchdev0"),
    ("no_engines", lambda s: s.replace("[engines]\nlcores = 1\n", ""),
     r"{file}.*\[engines\]"),
]


def cleanup():
    for p in glob.glob("/dev/hugepages/%s*" % PREFIX):
        os.unlink(p)
    shutil.rmtree("/var/run/dpdk/%s" % PREFIX, ignore_errors=True)


def bad_config_case(work, name, edit, pattern):
    path = work.file("%s.ini" % name)
    with open(path, "w") as f:
        f.write(edit(GOOD % {"prefix": PREFIX, "socket": work.file("%s.sock" % name)}))
    try:
        r = subprocess.run(["timeout", "--kill-after=5", "30", BIN["droced"], "--config", path],
                           capture_output=True, text=True)
    finally:
        cleanup()
    out = r.stdout + r.stderr
    check(r.returncode not in (0, 124, 137) and r.returncode > 0,
          "%s: droced exited %s, want a clean failure:\n%s" % (name, r.returncode, out))
    check(re.search(pattern.format(file=re.escape(path)), out) is not None,
          "%s: message does not match %r:\n%s" % (name, pattern, out))
    check(not os.path.exists(work.file("%s.sock" % name)), "%s: socket left behind" % name)
    log("  %s: exit %d, %s" % (name, r.returncode,
                               [l for l in out.splitlines() if l.startswith("droced:")][0]))


def run_bad():
    work = Workdir("cfg")
    try:
        for name, edit, pattern in BAD:
            bad_config_case(work, name, edit, pattern)
    finally:
        work.close()


def run_default():
    if os.path.exists(DEFAULT_SOCKET):
        # Someone's droced owns the default socket: never disturb it.
        log("  SKIPPED: %s exists (a droced of someone else?)" % DEFAULT_SOCKET)
        return
    out = ChildOutput()
    proc = out.popen(["timeout", "--kill-after=5", "120", BIN["droced"],
                      "--file-prefix=" + PREFIX], start_new_session=True)
    text = out.text

    try:
        deadline = time.monotonic() + 30
        while not ("droced: ready" in text() and os.path.exists(DEFAULT_SOCKET)):
            check(proc.poll() is None and time.monotonic() < deadline,
                  "droced without --config did not start (exit %s):\n%s" %
                  (proc.poll(), text()))
            time.sleep(0.05)
        r = subprocess.run(["timeout", "10", BIN["droce_ctl"], "--socket", DEFAULT_SOCKET,
                            "ports"], capture_output=True, text=True)
        check(r.returncode == 0 and "net_ring0" in r.stdout + text(),
              "droce-ctl ports on the built-in link:\n%s%s\n%s" % (r.stdout, r.stderr, text()))
        log("  built-in link: %s" % r.stdout.strip())
        os.killpg(proc.pid, signal.SIGTERM)
        rc = proc.wait(20)
        check(rc == 0, "droced without --config exited %s on SIGTERM:\n%s" % (rc, text()))
        left = glob.glob("/dev/hugepages/%s*" % PREFIX) + [
            p for p in ("/var/run/dpdk/" + PREFIX, DEFAULT_SOCKET) if os.path.exists(p)]
        check(not left, "left behind: %s" % left)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if os.path.exists(DEFAULT_SOCKET):
                os.unlink(DEFAULT_SOCKET)
        out.close()
        cleanup()


if __name__ == "__main__":
    main([("bad_config", run_bad), ("default_config", run_default)], CASES)
