#!/usr/bin/env python3
"""Runs commands under GNU time and reports their wall time to the
microsecond, which GNU time's %e cannot: it truncates to 10 ms, half of
the wall time of encoding a small module.

    measure.py calibrate WRAP...      median wall s of WRAP... true, 20 runs
    measure.py run OUT OVERHEAD CMD...

`run` writes to OUT "wall user system peak_rss_kib": the wall time from
just before the spawn of `/usr/bin/time CMD...` to its reaping, less
OVERHEAD (what `calibrate` measured for the wrappers alone: GNU time, and
taskset in bench/modules.sh), then GNU time's CPU times and peak RSS of
CMD. It exits with CMD's status.
"""
import os
import statistics
import sys
import tempfile
import time


def timed(argv, out):
    """Runs argv under GNU time writing to `out`; returns (wall s, status)."""
    argv = ["/usr/bin/time", "-f", "%U %S %M", "-o", out, *argv]
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ)
    _, status = os.waitpid(pid, 0)
    return time.perf_counter() - start, os.waitstatus_to_exitcode(status)


def main():
    if sys.argv[1] == "calibrate":
        with tempfile.NamedTemporaryFile() as f:
            walls = [timed([*sys.argv[2:], "true"], f.name)[0] for _ in range(20)]
        print(f"{statistics.median(walls):.6f}")
        return 0
    out, overhead, cmd = sys.argv[2], float(sys.argv[3]), sys.argv[4:]
    wall, status = timed(cmd, out + ".time")
    with open(out + ".time") as f:
        user, system, rss = f.read().split()[-3:]
    with open(out, "w") as f:
        f.write(f"{max(wall - overhead, 0):.6f} {user} {system} {rss}\n")
    return status


sys.exit(main())
