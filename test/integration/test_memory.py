# SPDX-License-Identifier: BSD-3-Clause
"""What memory registration leaves alone in a program's memory (issue 24), with
verbs_memory through real droced daemons (a memif pair, MemifPair):

- lost_writes: three threads increment words on pages the main thread registers and
  deregisters 10,000 times; no increment may be lost.
- fork, fork_safe_init, fork_safe_env: a child of a process with registered memory gets
  its own copy of it (default), or no access at all (after ibv_fork_init() or with
  RDMAV_FORK_SAFE=1); the parent's MR still takes an RDMA WRITE; the child can register.
- dontneed: deregistered memory is private anonymous memory again.
- calloc_glibc, calloc_jemalloc: calloc stays zero over memory registered, deregistered
  and freed, with glibc's malloc and with jemalloc (LD_PRELOAD, purging at once).
- posix_shm, file, hugetlbfs, sysv, sysv_id0, sysv_hugetlb: shared file mappings
  registered in place on droced A (sysv_id0: a segment whose id, and so its inode, is 0) (address, bytes and file unchanged), RDMA-written by a process on
  droced B, the data seen through the file (another process's mapping, pread()).

Cases that cannot run here (no free huge page, no jemalloc) are reported as skipped with
the reason, never as passed. Afterwards both daemons hold nothing and stop cleanly.

usage: test_memory.py DROCED DROCE_CTL VERBS_MEMORY [CASE...]
"""

import glob
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from droce_harness import (App, MemifPair, TestFailure, check, expect_idle, free_tcp_port,
                           log, parse_args)

BIN, CASES = parse_args(["droced", "droce_ctl", "verbs_memory"])
# The default fork case checks IBV_FORK_UNNEEDED: the environment must not ask for fork
# safety (fork_safe_env sets it for itself).
for var in ("RDMAV_FORK_SAFE", "IBV_FORK_SAFE"):
    os.environ.pop(var, None)

EXIT_SKIP = 77
SEED = 24
# Each program's own deadline (--timeout: it fails saying so); the harness's hard timeout
# kills it a little later.
PROG_TIMEOUT = 50
HARD_MARGIN = 10
# lost-writes: the 10,000 registrations under three writers (about 20 s on two
# idle CPUs; the deadline leaves room for a loaded machine).
LW_CYCLES = 10000
LW_WRITERS = 3
LW_TIMEOUT = 150
# jemalloc purges freed memory (MADV_DONTNEED) at once instead of after 10 s, and then
# takes it for zeroed: the path calloc over deregistered memory must survive.
JEMALLOC_CONF = "dirty_decay_ms:0,muzzy_decay_ms:0"
# Names of the files and segments made here: removed after each case, even on failure.
TAG = "droce-memory-%d" % os.getpid()

pair = None


class Skipped(Exception):
    pass


def start(args, daemon, name, timeout=PROG_TIMEOUT, env=None, prefix=()):
    return App(list(prefix) + [BIN["verbs_memory"]] + args + ["--timeout", str(timeout)],
               daemon, timeout + HARD_MARGIN, name, env=env)


def finish(apps, timeout=PROG_TIMEOUT):
    """Waits for apps; the first one to fail stops the others, which would wait for it.
    Returns their exit codes (None: killed)."""
    deadline = time.monotonic() + timeout + 2 * HARD_MARGIN
    try:
        while time.monotonic() < deadline:
            rcs = [a.proc.poll() for a in apps]
            if all(rc is not None for rc in rcs) or any(rc not in (None, 0) for rc in rcs):
                break
            time.sleep(0.05)
    finally:
        for a in apps:
            a.stop()
            a.output = a.text()
    return [a.proc.returncode if a.proc.returncode is None or a.proc.returncode >= 0 else None
            for a in apps]


def skip_reason(out):
    m = re.search(r"SKIP: (.*)", out)
    return m.group(1) if m else out.strip()[-300:]


def run(args, daemon, env=None, timeout=PROG_TIMEOUT):
    """verbs_memory ARGS through daemon; raises unless it passes. Returns its output."""
    app = start(args, daemon, args[0], timeout, env)
    rc, = finish([app], timeout)
    if rc == EXIT_SKIP:
        raise Skipped(skip_reason(app.output))
    check(rc == 0, "verbs_memory %s exited %s:\n%s" % (" ".join(args), rc, app.output[-3000:]))
    return app.output


def in_place(target_args, outputs=None, prefix=()):
    """A target case on droced A (its command behind prefix) and the writer on droced B;
    returns the target's output (also added to outputs, for a clean-up that needs it even
    when the case failed)."""
    port = str(free_tcp_port())
    target = start(target_args + ["--port", port, "--seed", str(SEED)], pair.a, "target",
                   prefix=prefix)
    writer = start(["writer", "--port", port, "--peer", "127.0.0.1"], pair.b, "writer")
    rc_t, rc_w = finish([target, writer])
    if outputs is not None:
        outputs.append(target.output)
    if rc_t == EXIT_SKIP:
        raise Skipped(skip_reason(target.output))
    check(rc_t == 0 and rc_w == 0,
          "target (%s) exited %s, writer exited %s\n--- target:\n%s\n--- writer:\n%s" %
          (target_args[0], rc_t, rc_w, target.output[-3000:], writer.output[-2000:]))
    return target.output


def remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def meminfo(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def hugetlbfs_mount():
    """A hugetlbfs mount of the default huge page size, or None."""
    size_kb = meminfo("Hugepagesize")
    with open("/proc/mounts") as f:
        mounts = [line.split() for line in f]
    found = []
    for _dev, mnt, fstype, opts, *_ in mounts:
        if fstype != "hugetlbfs" or not os.access(mnt, os.W_OK):
            continue
        ps = [o.split("=", 1)[1] for o in opts.split(",") if o.startswith("pagesize=")]
        if not ps or ps[0].upper() in ("%dK" % size_kb, "%dM" % (size_kb // 1024)):
            found.append(mnt)
    return "/dev/hugepages" if "/dev/hugepages" in found else (found[0] if found else None)


def need_free_hugepages(n, what):
    free = meminfo("HugePages_Free")
    if free < n:
        raise Skipped("%s needs %d free huge page(s), HugePages_Free is %d" % (what, n, free))


def case_lost_writes():
    out = run(["lost-writes", "--cycles", str(LW_CYCLES), "--writers", str(LW_WRITERS),
               "--seed", str(SEED)], pair.a, timeout=LW_TIMEOUT)
    log("  " + out.strip().splitlines()[-2])


def case_fork():
    run(["fork", "--seed", str(SEED)], pair.a)


def case_fork_safe_init():
    run(["fork-safe", "--seed", str(SEED)], pair.a)


def case_fork_safe_env():
    run(["fork-safe", "--no-fork-init", "--seed", str(SEED)], pair.a,
        env={"RDMAV_FORK_SAFE": "1"})


def case_dontneed():
    run(["dontneed", "--seed", str(SEED)], pair.a)


def calloc_churn(allocator, env=None):
    out = run(["calloc-churn", "--allocator", allocator, "--seed", str(SEED)], pair.a, env)
    log("  " + out.strip().splitlines()[-2].split(": ", 1)[1])


def case_calloc_glibc():
    calloc_churn("glibc")


def case_calloc_jemalloc():
    libs = sorted(glob.glob("/usr/lib/*/libjemalloc.so.2") +
                  glob.glob("/usr/lib/libjemalloc.so.2"))
    if not libs:
        raise Skipped("no libjemalloc.so.2 (Debian's libjemalloc2; devtools/setup.sh installs "
                      "it)")
    calloc_churn("jemalloc", {"LD_PRELOAD": libs[0], "MALLOC_CONF": JEMALLOC_CONF})


def case_posix_shm():
    name = "/" + TAG
    try:
        remove("/dev/shm" + name)
        in_place(["posix-shm", "--name", name])
        # A third process maps the segment by name: the peer's bytes are in it.
        run(["shm-read", "--name", name, "--seed", str(SEED)], pair.a)
        check(not os.path.exists("/dev/shm" + name), "shm-read left %s behind" % name)
    finally:
        remove("/dev/shm" + name)


def case_file():
    # The real disk: /var/tmp (the work directory may be on tmpfs); the program skips when
    # it is tmpfs after all.
    path = "/var/tmp/%s.dat" % TAG
    try:
        remove(path)
        in_place(["file", "--path", path])
    finally:
        remove(path)


def case_hugetlbfs():
    mnt = hugetlbfs_mount()
    if mnt is None:
        raise Skipped("no writable hugetlbfs mount of the default huge page size")
    need_free_hugepages(1, "a hugetlbfs file")
    path = os.path.join(mnt, TAG)
    try:
        remove(path)
        in_place(["hugetlbfs", "--path", path])
    finally:
        remove(path)


def remove_segment(out):
    """The target removes its segment at once (IPC_RMID); should it have died before, the
    segment it names is removed here."""
    m = re.search(r"shmid (\d+) pid (\d+)", out)
    if m is None:
        return
    with open("/proc/sysvipc/shm") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    for row in rows:
        # key shmid perms size cpid ...
        if row[1] == m.group(1) and row[4] == m.group(2):
            subprocess.run(["ipcrm", "-m", m.group(1)], timeout=10)
            log("  removed SysV segment %s left behind" % m.group(1))


def sysv(args, prefix=()):
    outputs = []
    try:
        return in_place(["sysv"] + args, outputs, prefix)
    finally:
        for out in outputs:
            remove_segment(out)


def case_sysv():
    sysv([])


def case_sysv_id0():
    # The first segment of an IPC namespace has id 0, which /proc/PID/maps shows as the
    # mapping's inode: on a fresh machine that was the first SysV registration's, and it
    # was refused (a shared mapping with inode 0 taken for no file). unshare --ipc makes it
    # so every time; the namespace and its segment go with the process.
    out = sysv([], prefix=["unshare", "--ipc"])
    check(re.search(r"shmid 0 pid", out) is not None,
          "the segment in a new IPC namespace did not get id 0:\n%s" % out)


def case_sysv_hugetlb():
    need_free_hugepages(1, "a SHM_HUGETLB segment")
    sysv(["--hugetlb"])


def case_idle():
    for d in (pair.a, pair.b):
        expect_idle(BIN["droce_ctl"], d)


ALL = [
    ("lost_writes", case_lost_writes),
    ("fork", case_fork),
    ("fork_safe_init", case_fork_safe_init),
    ("fork_safe_env", case_fork_safe_env),
    ("dontneed", case_dontneed),
    ("calloc_glibc", case_calloc_glibc),
    ("calloc_jemalloc", case_calloc_jemalloc),
    ("posix_shm", case_posix_shm),
    ("file", case_file),
    ("hugetlbfs", case_hugetlbfs),
    ("sysv", case_sysv),
    ("sysv_id0", case_sysv_id0),
    ("sysv_hugetlb", case_sysv_hugetlb),
    ("idle", case_idle),
]


def main():
    global pair
    unknown = [c for c in CASES if c not in dict(ALL)]
    if unknown:
        log("FAIL no such case: %s (cases: %s)" % (" ".join(unknown),
                                                   " ".join(n for n, _ in ALL)))
        sys.exit(1)
    failed, skipped, passed = [], [], []
    try:
        with MemifPair(BIN["droced"], "memory") as p:
            pair = p
            for name, fn in ALL:
                if CASES and name not in CASES:
                    continue
                t0 = time.monotonic()
                try:
                    fn()
                    passed.append(name)
                    log("ok   %s (%.1f s)" % (name, time.monotonic() - t0))
                except Skipped as e:
                    skipped.append(name)
                    log("skip %s: %s" % (name, e))
                except Exception as e:  # report and go on with the next case
                    failed.append(name)
                    log("FAIL %s (%.1f s): %s" % (name, time.monotonic() - t0, e))
        # Leaving the with block stopped both daemons: exit 0, nothing left behind.
    except TestFailure as e:
        failed.append("daemons")
        log("FAIL daemons: %s" % e)
    if skipped:
        log("skipped: " + " ".join(skipped))
    if failed:
        log("failed: " + " ".join(failed))
        sys.exit(1)
    if not passed:
        # meson's "skipped": nothing here could run (or nothing was selected).
        log("nothing ran" if not skipped else "every case skipped")
        sys.exit(EXIT_SKIP)


if __name__ == "__main__":
    main()
