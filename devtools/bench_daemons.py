# SPDX-License-Identifier: BSD-3-Clause
"""droced daemons for the devtools/bench-*.sh scripts: test/integration's harness Daemon,
in the shell's temporary directory and under the shell's EAL file prefix, each started
daemon's process group recorded in <work>/pgids, so that bench-common.sh's clean-up finds
what a killed run leaves (daemons, /var/run/dpdk and /dev/hugepages files)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "test", "integration"))
import droce_harness as h  # noqa: E402


class Work:
    """The shell's temporary directory, as the harness's Workdir (removed by the shell)."""

    def __init__(self, path):
        self.path = path

    def file(self, name):
        return os.path.join(self.path, name)

    def close(self):
        pass


def daemon(droced, work, prefix, name, device, ipv4, **kw):
    """A configured, not yet started droced named name (kw: the harness Daemon's, such as
    idle_sleep_us and limits), its EAL file prefix <prefix>-<name>."""
    d = h.Daemon(droced, Work(work), name, device, ipv4, **kw)
    old, d.prefix = d.prefix, "%s-%s" % (prefix, name)
    with open(d.config) as f:
        text = f.read().replace(old, d.prefix)
    with open(d.config, "w") as f:
        f.write(text)
    return d


def start(work, *ds):
    """Starts the daemons, recording each one's process group for the shell."""
    for d in ds:
        d.start()
        with open(os.path.join(work, "pgids"), "a") as f:
            f.write("%d\n" % d.proc.pid)
