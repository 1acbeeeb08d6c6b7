#!/usr/bin/env python3
"""How well `gputriage analyze` does on real failure reports, measured so that it predicts
reports it has never seen.

  bench/eval_corpus.py GPUTRIAGE [CORPUS.jsonl ...] [--mode all|loro|general] [--verbose]

CORPUS defaults to bench/corpus/*.jsonl, found next to this script: train.jsonl and train2.jsonl
(each line: a public report with the category, root cause and fix its thread established; see
bench/corpus/README.md); bench/corpus_extra.jsonl holds 35 more
real reports collected for this project without looking at kb/ (verdict labels in
bench/corpus_extra_labels.json; no root-cause labels yet, so top-3 is not scored on them). Three modes, all by default:

  all      analyze with the whole knowledge base (the training figure: entries were written for
           some of these very threads, so it overstates);
  loro     leave-one-repository-out: a case is scored with every knowledge-base entry disabled
           whose references or example logs come from the case's own repository (the repository
           of its `source`, e.g. pytorch/pytorch), so nothing written from that project's threads
           can help. This is the figure to quote;
  general  the general classifier alone (no known issues; the reviewed tables only).

Three measures per mode:
  category  the category analyze gives equals the thread's;
  top-3     one of analyze's first three known issues describes the thread's established root
            cause: an entry listed for the case in bench/corpus_root_causes.json (entries judged
            to describe that root cause, not its symptom); in mode `all` an entry that cites the
            case's own thread counts too. Scored over the cases whose thread established a root
            cause (those labelled "unknown in thread" are left out); a case whose established
            cause no entry describes counts as a miss;
  verdict   analyze's verdict equals the one the thread established
            (bench/corpus_verdicts.json: hardware, driver-firmware, library, application, unknown).
And calibration: category accuracy per band of analyze's confidence.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KB = os.path.join(ROOT, "kb")
BANDS = [(0.0, 0.3), (0.3, 0.6), (0.6, 0.8), (0.8, 1.01)]


def repo_of(source):
    m = re.fullmatch(r"\s*([\w.-]+)/([\w.-]+)#\d+\s*", source)
    return f"{m.group(1)}/{m.group(2)}".lower() if m else None


def thread_pattern(source):
    m = re.fullmatch(r"\s*([\w.-]+)/([\w.-]+)#(\d+)\s*", source)
    if not m:
        return None
    owner, repo, number = m.groups()
    return re.compile(r"github\.com/%s/%s/(issues|pull|discussions)/%s(\D|$)" % (re.escape(owner), re.escape(repo), number), re.I)


def entry_repos():
    """Entry id -> the set of owner/repo its references and example logs come from."""
    repos = defaultdict(set)
    url = re.compile(r"github\.com/([\w.-]+)/([\w.-]+)", re.I)
    for path in glob.glob(os.path.join(KB, "issues", "*.yaml")):
        entry = os.path.basename(path)[: -len(".yaml")]
        text = open(path, encoding="utf-8", errors="replace").read()
        for owner, repo in url.findall(text):
            repos[entry].add(f"{owner}/{repo}".lower())
        for log in glob.glob(os.path.join(KB, "issues", entry + ".*.log")):
            first = open(log, encoding="utf-8", errors="replace").readline()
            for owner, repo in url.findall(first):
                repos[entry].add(f"{owner}/{repo}".lower())
    return repos


def kb_without(entries, tmp):
    """A copy of kb/ with `entries` (and their example logs) removed."""
    dest = tempfile.mkdtemp(prefix="kb-", dir=tmp)
    shutil.rmtree(dest)
    shutil.copytree(KB, dest)
    for entry in entries:
        for path in glob.glob(os.path.join(dest, "issues", entry + ".*")):
            os.remove(path)
    return dest


def general_kb(tmp):
    dest = tempfile.mkdtemp(prefix="kb-general-", dir=tmp)
    shutil.rmtree(dest)
    shutil.copytree(KB, dest)
    shutil.rmtree(os.path.join(dest, "issues"))
    os.makedirs(os.path.join(dest, "issues"))
    return dest


def analyze(gt, log, kb_dir):
    args = [gt, "analyze", "--json"] + (["--kb-dir", kb_dir] if kb_dir else []) + ["-"]
    out = subprocess.run(args, input=log.encode(), capture_output=True)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        sys.stderr.write(f"analyze failed (exit {out.returncode}): {out.stderr.decode()[:300]}\n")
        return None


def established(label):
    """The thread established a root cause: an entry describes it, or the label names one
    (a `missing` cause that is not "unknown in thread")."""
    if label.get("root_cause_entries"):
        return True
    missing = label.get("missing", "")
    return bool(missing) and not missing.startswith("unknown in thread")


def load(path):
    try:
        return json.load(open(path))
    except FileNotFoundError:
        return {}


def main():
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        sys.exit(0)
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().split("\n\n")[1])  # the usage line, exit status 1
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    modes = ["all", "loro", "general"]
    if "--mode" in sys.argv:
        modes = [sys.argv[sys.argv.index("--mode") + 1]]
        args = [a for a in args if a not in modes]
    verbose = "--verbose" in sys.argv
    gt = args[0]
    corpora = args[1:] or sorted(glob.glob(os.path.join(HERE, "corpus", "*.jsonl")))
    if not corpora:
        sys.exit(f"eval_corpus: no corpus given and none in {os.path.join(HERE, 'corpus')}")
    cases = [json.loads(line) for path in corpora for line in open(path) if line.strip()]
    verdicts = load(os.path.join(HERE, "corpus_verdicts.json"))
    # Cases collected for this project (bench/corpus_extra.jsonl, independently of kb/) carry
    # their verdict labels in their own file.
    verdicts.update(load(os.path.join(HERE, "corpus_extra_labels.json")))
    causes = load(os.path.join(HERE, "corpus_root_causes.json"))
    repos = entry_repos()
    tmp = tempfile.mkdtemp(prefix="gputriage-eval-")
    try:
        loro_kbs = {}
        general = general_kb(tmp) if "general" in modes else None
        print(f"{len(cases)} cases from {', '.join(os.path.basename(c) for c in corpora)}; "
              f"{len(verdicts)} verdict labels, {len(causes)} root-cause labels")
        print()
        print("| mode | category | top-3 root cause | verdict |")
        print("|---|---|---|---|")
        report = {}
        for mode in modes:
            right = top3 = top3_n = verdict_right = verdict_n = 0
            bands = defaultdict(lambda: [0, 0])
            rows = []
            for case in cases:
                repo = repo_of(case["source"])
                kb_dir = None
                if mode == "general":
                    kb_dir = general
                elif mode == "loro":
                    if repo not in loro_kbs:
                        loro_kbs[repo] = kb_without([e for e, rs in repos.items() if repo in rs], tmp)
                    kb_dir = loro_kbs[repo]
                result = analyze(gt, case["log"], kb_dir)
                if result is None:
                    rows.append((case, None, False, False, None))
                    continue
                ok = result["category"] == case["category"]
                right += ok
                conf = result.get("confidence") or 0
                for lo, hi in BANDS:
                    if lo <= conf < hi:
                        bands[(lo, hi)][0] += ok
                        bands[(lo, hi)][1] += 1
                top = [m["id"] for m in result.get("matches", [])[:3]]
                wanted = set(causes.get(case["id"], {}).get("root_cause_entries", []))
                hit = bool(wanted.intersection(top))
                if mode == "all" and not hit:
                    pattern = thread_pattern(case["source"])
                    hit = any(pattern and any(pattern.search(r) for r in m["references"]) for m in result["matches"][:3])
                # Only reports whose thread established a root cause are scored (the issue's own
                # measure); "unknown in thread" cases are left out of the denominator.
                if established(causes.get(case["id"], {})):
                    top3_n += 1
                    top3 += hit
                want_verdict = verdicts.get(case["id"], {}).get("verdict")
                if want_verdict:
                    verdict_n += 1
                    verdict_right += result["verdict"] == want_verdict
                rows.append((case, result, ok, hit, want_verdict))
            n = len(cases)
            t3 = f"{top3}/{top3_n} = {100.0 * top3 / top3_n:.1f} %" if mode != "general" and top3_n else "—"
            vd = f"{verdict_right}/{verdict_n} = {100.0 * verdict_right / verdict_n:.1f} %" if verdict_n else "no labels"
            print(f"| {mode} | {right}/{n} = {100.0 * right / n:.1f} % | {t3} | {vd} |")
            report[mode] = (rows, bands)
        print()
        for mode in modes:
            rows, bands = report[mode]
            cells = []
            for lo, hi in BANDS:
                ok, total = bands[(lo, hi)]
                cells.append(f"{ok}/{total}" + (f" = {100.0 * ok / total:.0f} %" if total else ""))
            print(f"calibration ({mode}): category accuracy by confidence " +
                  ", ".join(f"[{lo:.1f}, {min(hi, 1.0):.1f}): {c}" for (lo, hi), c in zip(BANDS, cells)))
        if verbose:
            for mode in modes:
                print(f"\n## {mode}")
                for case, result, ok, hit, want_verdict in report[mode][0]:
                    if result is None:
                        print(f"ERR {case['id']}")
                        continue
                    mark = ("ok " if ok else "BAD") + (" top3" if hit else " ----")
                    v = result["verdict"] + ("" if want_verdict in (None, result["verdict"]) else f"(want {want_verdict})")
                    print(f"{mark} {case['id'][:52]:<52} want {case['category']:<15} got {result['category']:<15} "
                          f"conf {result.get('confidence', 0):.2f} verdict {v} {[m['id'] for m in result['matches'][:3]]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
