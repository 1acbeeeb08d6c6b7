#!/usr/bin/env bash
# Compares, in one run on one machine, a full `gputriage snapshot` (no Python probe) with the
# tools users run by hand: `nvidia-smi -q` and `python3 -m torch.utils.collect_env`.
# Wall time and peak RSS come from GNU time (%e, %M); for a command that starts helper processes
# %M is the largest of the process and its reaped children (Linux wait4 semantics), the same
# rule for every tool measured. Prints a Markdown table with the median of N runs.
#   bench/snapshot_vs_peers.sh GPUTRIAGE [RUNS] [PYTHON]
set -u
gt=${1:?usage: $0 GPUTRIAGE [RUNS] [PYTHON]}
runs=${2:-10}
python=${3:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

measure() {  # name runs command...
  local name=$1 n=$2; shift 2
  : > "$tmp/$name"
  for _ in $(seq "$n"); do
    /usr/bin/time -f "%e %M" -o "$tmp/one" "$@" >/dev/null 2>&1
    local rc=$?
    echo "$(cat "$tmp/one" | tail -1) $rc" >> "$tmp/$name"
  done
}
median() {  # file column
  sort -n -k"$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
row() {  # name label
  local f=$tmp/$1
  [ -s "$f" ] || return
  local wall rss fails
  wall=$(median "$f" 1); rss=$(median "$f" 2)
  fails=$(awk '$3 != 0' "$f" | wc -l)
  if [ "$fails" -eq "$(wc -l < "$f")" ]; then printf '| %s | %d | failed | failed | %d |\n' "$2" "$fails" "$fails"; return; fi
  printf '| %s | %d | %.3f | %.1f | %d |\n' "$2" "$(wc -l < "$f")" "$wall" "$(awk -v r="$rss" 'BEGIN{print r/1024}')" "$fails"
}

# Warm-up: page cache, driver state (the first NVML init after idle is slower for every tool).
"$gt" snapshot --json >/dev/null 2>&1; nvidia-smi -q >/dev/null 2>&1
measure gputriage "$runs" "$gt" snapshot --json
measure gputriage_human "$runs" "$gt" snapshot
probe="$(dirname "$gt")/gputriage-probe"
if [ -x "$probe" ]; then measure probe_nvidia "$runs" "$probe" nvidia; fi
if command -v nvidia-smi >/dev/null; then measure nvsmi "$runs" nvidia-smi -q; fi
if "$python" -c 'import torch' 2>/dev/null; then measure collect_env 3 "$python" -m torch.utils.collect_env; fi

echo "| command | runs | median wall s | median peak RSS MiB | failed runs |"
echo "|---|---|---|---|---|"
row gputriage "gputriage snapshot --json"
row gputriage_human "gputriage snapshot"
row probe_nvidia "gputriage-probe nvidia (the NVML helper alone)"
row nvsmi "nvidia-smi -q"
row collect_env "python3 -m torch.utils.collect_env"
