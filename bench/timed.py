#!/usr/bin/env python3
"""Runs a command, sends its stdout to a file, and prints one JSON line with its wall time and
peak resident memory (getrusage of the child, so only that process tree counts).
usage: bench/timed.py OUTFILE CMD [ARGS...]"""
import json
import resource
import subprocess
import sys
import time

out, cmd = sys.argv[1], sys.argv[2:]
with open(out, "wb") as f:
    t0 = time.monotonic()
    rc = subprocess.call(cmd, stdout=f)
    wall = time.monotonic() - t0
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"cmd": " ".join(cmd), "rc": rc, "wall_s": round(wall, 3), "peak_rss_mib": round(peak_kib / 1024, 1)}))
