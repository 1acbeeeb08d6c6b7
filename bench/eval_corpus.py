#!/usr/bin/env python3
"""Runs `gputriage analyze --json -` over real crash reports (../shared/corpus/train.jsonl: each
with the category and root cause its public thread established) and prints the category
accuracy and the top-3 hit rate of the right known issue.

"The right known issue" for a case is a knowledge-base entry that cites the case's own thread
(its `source`, e.g. pytorch/pytorch#19120) among its references: the entry was written for that
failure. A case whose thread no entry cites counts as a miss for top-3.

With --general-only, analyze runs with an empty knowledge base: the category then comes from
the general classifier alone, which is what decides on a failure no entry describes (the hidden
evaluation set has such cases). Top-3 is meaningless then and is not printed.

usage: bench/eval_corpus.py GPUTRIAGE [CORPUS.jsonl] [--verbose] [--general-only]
"""
import json
import shutil
import re
import os
import subprocess
import sys
import tempfile


def source_url_pattern(source):
    m = re.fullmatch(r"([\w.-]+)/([\w.-]+)#(\d+)", source.strip())
    if not m:
        return None
    owner, repo, number = m.groups()
    return re.compile(r"github\.com/%s/%s/(issues|pull|discussions)/%s(\D|$)" % (re.escape(owner), re.escape(repo), number), re.I)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
    general_only = "--general-only" in sys.argv
    extra = []
    if general_only:
        # No known issues, but the reviewed tables the classifier reads (error codes, general
        # signals, Xid classes).
        empty = tempfile.mkdtemp(prefix="gputriage-empty-kb-")
        os.makedirs(os.path.join(empty, "issues"))
        kb = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kb")
        shutil.copytree(os.path.join(kb, "tables"), os.path.join(empty, "tables"))
        shutil.copy(os.path.join(kb, "env-vars.yaml"), empty)
        extra = ["--kb-dir", empty]
    gt = args[0]
    corpus = args[1] if len(args) > 1 else "../shared/corpus/train.jsonl"
    cases = [json.loads(line) for line in open(corpus) if line.strip()]
    right_category = top3 = cited = 0
    rows = []
    for case in cases:
        out = subprocess.run([gt, "analyze", "--json", *extra, "-"], input=case["log"].encode(), capture_output=True)
        try:
            result = json.loads(out.stdout)
        except json.JSONDecodeError:
            print(f"{case['id']}: analyze failed (exit {out.returncode}): {out.stderr.decode()[:300]}", file=sys.stderr)
            rows.append((case["id"], case["category"], "ERROR", False, False))
            continue
        ok_category = result["category"] == case["category"]
        pattern = source_url_pattern(case["source"])
        hit = False
        for m in result["matches"][:3]:
            if pattern and any(pattern.search(r) for r in m["references"]):
                hit = True
        right_category += ok_category
        top3 += hit
        rows.append((case["id"], case["category"], result["category"], ok_category, hit,
                     [m["id"] for m in result["matches"][:3]], result["confidence"]))
    n = len(cases)
    if verbose:
        for r in rows:
            mark = ("ok " if r[3] else "BAD") + (" top3" if r[4] else " ----")
            print(f"{mark} {r[0]:<55} want {r[1]:<16} got {r[2]:<16} {r[5] if len(r) > 5 else ''}")
    if general_only:
        print("| cases | category accuracy, general classifier alone (empty knowledge base) |")
        print("|---|---|")
        print(f"| {n} | {right_category}/{n} = {100.0 * right_category / n:.1f} % |")
        return
    print(f"| cases | category accuracy | top-3 known-issue hits |")
    print(f"|---|---|---|")
    print(f"| {n} | {right_category}/{n} = {100.0 * right_category / n:.1f} % | {top3}/{n} = {100.0 * top3 / n:.1f} % |")


if __name__ == "__main__":
    main()
