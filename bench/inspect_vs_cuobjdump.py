#!/usr/bin/env python3
"""Compares `gputriage inspect --json` with `cuobjdump --dump-resource-usage` on the same file:
the SASS architectures, the number of cubins, and for every (architecture, kernel) the
registers, static shared memory and stack frame.

cuobjdump prints, per cubin, "arch = sm_90" and per function
"REG:38 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:928 ...". The same kernel name can appear in
several cubins of one architecture (one per translation unit), so values are compared as
sorted lists per (arch, name).

usage: bench/inspect_vs_cuobjdump.py GPUTRIAGE.json CUOBJDUMP.txt"""
import collections
import json
import re
import sys

ours_doc = json.load(open(sys.argv[1]))
theirs_text = open(sys.argv[2], errors="replace").read()

ours = collections.defaultdict(list)
our_cubins = collections.Counter()
our_ptx = collections.Counter()
errors = 0
for f in ours_doc["files"]:
    for co in f["code_objects"]:
        if co.get("error"):
            errors += 1
            continue
        if co["format"] == "ptx":
            our_ptx[co["arch"]] += 1
            continue
        our_cubins[co["arch"]] += 1
        for k in co["kernels"]:
            # cuobjdump's SHARED counts the 1 KiB the system reserves per block since sm_90, as the
            # cubin's section does; gputriage reports it apart (reserved_shared_bytes).
            shared = None if k.get("shared_bytes") is None else k["shared_bytes"] + k.get("reserved_shared_bytes", 0)
            ours[(co["arch"], k["symbol"])].append((k.get("registers"), shared, k.get("local_bytes")))

theirs = collections.defaultdict(list)
their_cubins = collections.Counter()
arch = None
func_re = re.compile(r"^\s*Function (\S+):\s*$")
usage_re = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")
pending = None
for line in theirs_text.splitlines():
    m = re.match(r"^arch = (sm_\w+)", line)
    if m:
        arch = m.group(1)
        their_cubins[arch] += 1
        continue
    m = func_re.match(line)
    if m:
        pending = m.group(1)
        continue
    m = usage_re.search(line)
    if m and pending and arch:
        reg, stack, shared, local = map(int, m.groups())
        theirs[(arch, pending)].append((reg, shared, stack, local))
        pending = None

fields = ["registers (vs REG)", "shared_bytes + reserved_shared_bytes (vs SHARED)", "local_bytes (vs STACK)"]
agree = [0, 0, 0]
disagree = [0, 0, 0]
examples = [[], [], []]
missing = 0
for key, their_list in theirs.items():
    our_list = ours.get(key)
    if not our_list or len(our_list) != len(their_list):
        missing += 1
        continue
    a = sorted(our_list, key=lambda t: tuple(-1 if v is None else v for v in t))
    b = sorted([(r, sh, st) for r, sh, st, _ in their_list])
    for i in range(3):
        av = sorted(x[i] for x in our_list)
        bv = sorted(x[i] for x in b)
        if av == bv:
            agree[i] += 1
        else:
            disagree[i] += 1
            if len(examples[i]) < 5:
                examples[i].append((key, av[:3], bv[:3]))

print("| | gputriage inspect | cuobjdump --dump-resource-usage |")
print("|---|---|---|")
print(f"| SASS architectures | {', '.join(sorted(our_cubins))} | {', '.join(sorted(their_cubins))} |")
print(f"| cubins | {sum(our_cubins.values())} | {sum(their_cubins.values())} |")
print(f"| PTX entries | {sum(our_ptx.values())} | (not listed) |")
print(f"| (arch, kernel) keys | {len(ours)} | {len(theirs)} |")
print(f"| objects gputriage could not read | {errors} | |")
print()
print(f"(arch, kernel) keys of cuobjdump with no or a different number of entries in gputriage: {missing}")
for i, name in enumerate(fields):
    print(f"{name}: {agree[i]} keys agree, {disagree[i]} disagree")
    for key, a, b in examples[i]:
        print(f"    {key[0]} {key[1][:90]}: gputriage {a} cuobjdump {b}")
sys.exit(0 if missing == 0 and sum(disagree) == 0 and our_cubins == their_cubins else 1)
