#!/usr/bin/env bash
# The multi-GPU call for issue 17 (needs a machine with two or more NVIDIA GPUs, e.g. the
# nvidia-h100-x2 kind): the topology gputriage reads through NVML next to `nvidia-smi topo -m`
# and `topo -p2p r`, then a two-rank NCCL job where rank 1 hits an illegal address in backward
# while rank 0 waits in the all-reduce, and a two-rank hang where rank 1 never enters the
# collective, each under `run --timeout` with PyTorch's NCCL flight recorder enabled, read back
# by analyze and report. Needs dist/device.tar.xz (scripts/bundle). Log: $OUT/issue17/log.txt.
set -u
out=${OUT:-/tmp/gputriage-out}/issue17
mkdir -p "$out"
rm -rf /tmp/issue17; work=/tmp/issue17; mkdir -p "$work"
tar xJf dist/device.tar.xz -C dist
gt=$PWD/dist/gputriage/bin/gputriage
export GPUTRIAGE_HOME=$work/home
step() { echo; echo "== $*"; }
cat > "$work/ranks.py" <<'PY'
# Two ranks, one GPU each. fault: rank 1 reads far outside a tensor's storage in backward (an
# illegal address), rank 0 goes on into the gradient all-reduce. hang: rank 1 sleeps instead of
# entering the all-reduce.
import os, sys, time, torch, torch.distributed as dist
mode = sys.argv[1]
dist.init_process_group("nccl", timeout=__import__("datetime").timedelta(seconds=20))
rank = dist.get_rank(); torch.cuda.set_device(rank)
class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x): return x * 2
    @staticmethod
    def backward(ctx, g):
        if rank == 1 and mode == "fault":
            far = g.as_strided((1,), (1 << 40,))
            return g + far.sum()
        return g * 2
x = torch.ones(1 << 20, device="cuda", requires_grad=True)
Bad.apply(x).sum().backward()
if rank == 1 and mode == "hang":
    time.sleep(3600)
dist.all_reduce(x.grad); torch.cuda.synchronize()
print(f"rank {rank} done", flush=True)
PY
{
  echo "== $(date -u)"; nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader
  step "topology: nvidia-smi topo -m, topo -p2p r, nvlink -s"
  nvidia-smi topo -m; nvidia-smi topo -p2p r; nvidia-smi nvlink -s | head -40
  step "topology: gputriage snapshot --json (topology.peers, nvlink, numa_node, local_cpus)"
  "$gt" snapshot --json > "$work/snapshot.json"; echo "rc=$?"
  python3 - "$work/snapshot.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for g in s.get("gpus", []):
    nv = g.get("nvidia", {})
    links = nv.get("nvlink", [])
    print(g.get("pci_address"), g.get("name"), "numa", g.get("numa_node"), "cpus", g.get("local_cpus"),
          "nvlink up", sum(1 for l in links if l.get("active")), "of", len(links),
          sorted({(l.get("remote_device_type"), l.get("remote_pci_address")) for l in links if l.get("active")})[:4])
for p in s.get("topology", {}).get("peers", []):
    print(p)
print("not_collected:", [n for n in s.get("not_collected", []) if "nvml" in n.get("item", "")])
PY
  "$gt" doctor | sed -n '1,12p'
  for mode in fault hang; do
    step "two ranks, $mode, run --timeout 90s, flight recorder on"
    TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$work/fr_${mode}_" \
      timeout 300 "$gt" run --timeout 90s --bundle-dir "$work/b-$mode" --json-file "$work/run-$mode.json" -- \
      torchrun --nproc-per-node 2 "$work/ranks.py" "$mode" > "$work/job-$mode.out" 2>&1
    echo "rc=$?"; tail -25 "$work/job-$mode.out"
    ls -la "$work"/fr_${mode}_* 2>/dev/null
    b=$(ls -d "$work/b-$mode"/*/ 2>/dev/null | tail -1)
    echo "bundle: $b"; [ -n "$b" ] || continue
    python3 - "$b/process.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
print("primary", p.get("pid"), p.get("rank"), p.get("signal"), p.get("stopped_at_s"), p.get("classification", {}).get("kind"))
for o in p.get("other_crashed_processes", []): print("other", o.get("pid"), o.get("rank"), o.get("signal"), o.get("stopped_at_s"))
for h in p.get("hang_dumps", []): print("hang", h.get("pid"), h.get("rank"), h.get("stopped_at_s"))
PY
    "$gt" analyze "$b" | head -30
    "$gt" report "$b" | sed -n '/### What happened/,/Crashed thread/p'
  done
} > "$out/log.txt" 2>&1
cat "$out/log.txt"
