#!/usr/bin/env python3
"""`gputriage libs --json FILE` against `ldd -r FILE` on the same file, in the same run: wall time
and peak resident memory of each (median and max over ROUNDS alternating rounds, getrusage of
each child alone), and whether both found the same libraries (soname -> real path) and the same
number of undefined symbols. ldd -r loads and relocates the whole closure in ld.so; gputriage
reads the files' dynamic sections and symbol tables and also groups components and evaluates
the version matrix.

usage: bench/libs_vs_ldd.py GPUTRIAGE FILE [ROUNDS]"""
import json
import os
import statistics
import subprocess
import sys
import time


def run(cmd):
    # os.wait4 gives the child's own peak RSS (ru_maxrss, KiB).
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(f"/tmp/libs-bench-{os.getppid()}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        null = os.open("/dev/null", os.O_WRONLY)
        os.dup2(null, 2)
        os.execvp(cmd[0], cmd)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    with open(f"/tmp/libs-bench-{os.getpid()}.out", errors="replace") as f:
        out = f.read()
    return out, wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


gt, target = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
ours, theirs = [], []
for _ in range(rounds):
    out_ours = run([gt, "libs", "--json", target])
    out_theirs = run(["ldd", "-r", target])
    ours.append(out_ours)
    theirs.append(out_theirs)

report = json.loads(ours[-1][0])
ldd_text = theirs[-1][0]
ldd_libs = {}
ldd_undefined = 0
for line in ldd_text.splitlines():
    if "undefined symbol:" in line:
        ldd_undefined += 1
    if " => " in line:
        name, rest = line.strip().split(" => ", 1)
        ldd_libs[name] = "not found" if rest.startswith("not found") else os.path.realpath(rest.split(" (")[0])
our_libs = {l["soname"]: os.path.realpath(l["path"]) for l in report["libraries"] if l.get("path")}
for m in report.get("missing", []):
    our_libs[m["soname"]] = "not found"
differ = {n: (our_libs.get(n), p) for n, p in ldd_libs.items() if our_libs.get(n) != p}


def summary(rows):
    walls = [r[1] for r in rows]
    return {"median_s": round(statistics.median(walls), 4), "max_s": round(max(walls), 4),
            "peak_rss_mib": round(max(r[2] for r in rows), 1), "exit": rows[-1][3]}


print(json.dumps({
    "file": target, "rounds": rounds,
    "gputriage_libs": summary(ours), "ldd_r": summary(theirs),
    "libraries": {"gputriage": len(report["libraries"]), "ldd": len(ldd_libs), "differ": differ},
    "undefined_symbols": {"gputriage": len(report["undefined_symbols"]), "ldd_r": ldd_undefined},
    "components": sorted({f'{l["component"]} {l.get("version") or ""}'.strip() for l in report["libraries"] if l.get("component")}),
    "findings": [f["id"] + ": " + f["title"] for f in report["findings"]],
}, indent=1))
