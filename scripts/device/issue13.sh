#!/usr/bin/env bash
# One GPU-machine call for issue 13 (`gputriage libs`): unpacks dist/device.tar.xz (dist/gputriage
# from scripts/bundle), then on the machine's PyTorch: `libs` on libtorch_cuda.so and the
# comparison with `ldd -r` in the same run (bench/libs_vs_ldd.py), `libs --pid` on a running
# PyTorch process that used cuBLAS and cuDNN, `libs --trace` of a PyTorch import, doctor, the
# snapshot's toolchain next to collect_env, and a crashed PyTorch process's bundle
# (libraries.json). Everything goes to $OUT/issue13.tar.gz.
set -u
out=${OUT:-/tmp/gputriage-out}
work=$out/issue13
mkdir -p "$work"
[ -f dist/device.tar.xz ] && tar xJf dist/device.tar.xz -C dist
gt=$PWD/dist/gputriage/bin/gputriage
tl=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib","libtorch_cuda.so"))')
{
  echo "== $(date -u) $($gt --version 2>&1 | head -1); torch $(python3 -c 'import torch;print(torch.__version__, torch.version.cuda)')"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  echo "== libs $tl"
  $gt libs "$tl"; echo "rc=$?"
  $gt libs --json "$tl" > "$work/libtorch_cuda.json"
  echo "== bench: libs vs ldd -r on $tl"
  python3 bench/libs_vs_ldd.py "$gt" "$tl" 9
  echo "== ldd -r $tl"
  ldd -r "$tl" 2>&1 | head -80
  echo "== libs --pid on a PyTorch process (matmul and conv2d done, then sleeping)"
  python3 -c 'import torch,time
a=torch.randn(256,256,device="cuda"); b=a@a
c=torch.nn.functional.conv2d(torch.randn(1,3,32,32,device="cuda"), torch.randn(8,3,3,3,device="cuda"))
torch.cuda.synchronize(); print("ready", flush=True); time.sleep(90)' > "$work/torchproc.txt" 2>&1 &
  pid=$!
  for _ in $(seq 90); do grep -q ready "$work/torchproc.txt" && break; sleep 1; done
  $gt libs --pid $pid; echo "rc=$?"
  $gt libs --pid $pid --json > "$work/pid.json"
  awk '$6 ~ /\.so/ && $3 == "00000000" {print $6}' /proc/$pid/maps | sort -u > "$work/maps-sos.txt"
  echo "maps: $(wc -l < "$work/maps-sos.txt") shared objects mapped at offset 0"
  kill $pid
  echo "== libs --trace -- python3 -c 'import torch; torch.ones(1, device=\"cuda\")'"
  $gt libs --trace --json -- python3 -c 'import torch; torch.ones(1, device="cuda")' > "$work/trace.json"; echo "rc=$?"
  python3 -c "import json;d=json.load(open('$work/trace.json'));print(len(d['libraries']),'objects,',len(d['trace']),'events; findings',[f['id'] for f in d['findings']])"
  echo "== doctor"
  $gt doctor; echo "rc=$?"
  $gt doctor --json > "$work/doctor.json"
  echo "== snapshot toolchain"
  $gt snapshot --json > "$work/snapshot.json"
  python3 -c "import json; d=json.load(open('$work/snapshot.json'))['software']; print(json.dumps({k:d.get(k) for k in ['glibc','libstdcxx','compilers','tools']}, indent=1)); print([p['name']+' '+p['version'] for p in d['python']['packages']])"
  echo "== collect_env"
  python3 -m torch.utils.collect_env 2>&1 | head -60
  echo "== a crashed PyTorch process's bundle"
  $gt run --bundle-dir "$work/bundles" -- python3 -c 'import torch,os,signal; torch.ones(1,device="cuda"); os.kill(os.getpid(), signal.SIGSEGV)' 2>&1 | tail -8
  python3 -c "import json,glob; d=json.load(open(glob.glob('$work/bundles/*/libraries.json')[0])); print(len(d['libraries']),'libraries;', sorted({(l.get('component') or '')+' '+(l.get('version') or '') for l in d['libraries'] if l.get('component')})); print([f['id']+': '+f['title'] for f in d['findings']])"
  $gt analyze "$work"/bundles/* 2>&1 | tail -15
} > "$work/issue13.log" 2>&1
cat "$work/issue13.log" | head -c 9000
tar -C "$out" -czf /tmp/issue13.tar.gz issue13 && rm -rf "$work" && mv /tmp/issue13.tar.gz "$out/"
