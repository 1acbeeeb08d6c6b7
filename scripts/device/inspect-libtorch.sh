#!/usr/bin/env bash
# Runs on the GPU machine (issue 5): `gputriage inspect` on PyTorch's libtorch_cuda.so against
# `cuobjdump --dump-resource-usage` on the same file, in the same call: wall time and peak RSS of
# each (bench/timed.py), the SASS architectures and the per-kernel numbers compared
# (bench/inspect_vs_cuobjdump.py), the coverage check against this machine's H200 (sm_90), and
# the 1 KiB of reserved shared memory question on a cubin built here. Needs the bundle
# (scripts/bundle) in dist/. Results: $OUT (the big listings stay on the machine).
set -u
final=${OUT:-/tmp/gputriage-out}
mkdir -p "$final"
work=$(mktemp -d)
gt=$PWD/dist/gputriage/bin/gputriage
log() { echo "== $*" | tee -a "$final/inspect.log"; }
lib=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libtorch_cuda.so'))")
cuobj=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
log "machine: $(nproc) CPUs; $(python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)')"
log "file: $(ls -la "$lib")"
log "gputriage --version: $("$gt" --version 2>&1)"
log "gputriage inspect --json (3 runs)"
for i in 1 2 3; do python3 bench/timed.py "$work/ours.json" "$gt" inspect --json --no-snapshot "$lib"; done | tee -a "$final/inspect.log"
log "gputriage inspect --json --threads 1"
python3 bench/timed.py "$work/ours-1thread.json" "$gt" inspect --json --no-snapshot --threads 1 "$lib" | tee -a "$final/inspect.log"
log "output size: $(wc -c < "$work/ours.json") bytes"
log "cuobjdump --dump-resource-usage (2 runs)"
for i in 1 2; do python3 bench/timed.py "$work/cuobjdump.txt" "$cuobj" --dump-resource-usage "$lib"; done | tee -a "$final/inspect.log"
log "cuobjdump --list-elf: $("$cuobj" --list-elf "$lib" | wc -l) ELF entries; --list-ptx: $("$cuobj" --list-ptx "$lib" | wc -l)"
log "compare"
python3 bench/inspect_vs_cuobjdump.py "$work/ours.json" "$work/cuobjdump.txt" 2>&1 | tee "$final/compare.md"
echo "rc=${PIPESTATUS[0]}" >> "$final/compare.md"
log "human listing with this machine's snapshot (coverage vs the H200)"
"$gt" inspect "$lib" > "$final/inspect-human.txt" 2>&1
echo "rc=$?" >> "$final/inspect-human.txt"
head -c 200000 "$work/cuobjdump.txt" > "$final/cuobjdump-head.txt"
head -c 200000 "$work/ours.json" > "$final/ours-head.json"
log "reserved shared memory: kernels.cu for sm_90 built here, cuobjdump vs inspect"
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$nvcc" -cubin -arch=sm_90 -Xptxas -v tests/inspect/nvidia/kernels.cu -o "$work/k90.cubin" 2> "$final/k90-ptxas.txt"
  "$cuobj" --dump-resource-usage "$work/k90.cubin" > "$final/k90-cuobjdump.txt" 2>&1
  "$gt" inspect --json --no-snapshot "$work/k90.cubin" > "$final/k90-ours.json" 2>&1
fi
log "done"
