#!/usr/bin/env bash
# GPU machine: the overhead of `gputriage run` on a PyTorch training loop and on a CPU-bound
# multi-threaded program (bench/run_overhead.sh, 7 rounds each). Needs dist/ (scripts/bundle,
# scripts/device/pack-tests). Results: $OUT/bench2.md.
set -u
out=${OUT:-/tmp/o}; mkdir -p $out
export LD_LIBRARY_PATH=$PWD/dist/tests
gt=$PWD/dist/gputriage/bin/gputriage
bash bench/run_overhead.sh "$gt" 7 "PyTorch training loop, 2000 steps (H200 machine)" -- python3 tests/gpu/torch_train_loop.py 2000 | tee $out/bench2.md
bash bench/run_overhead.sh "$gt" 7 "crasher spin: 8 threads, 5 s (H200 machine, 16 cores)" -- dist/tests/crasher spin 8 5000 | tee -a $out/bench2.md
# The CUDA out-of-bounds program once more, with this build's classification.
"$gt" run --no-snapshot --bundle-dir "$out/b" -- dist/tests/cuda_oob 2>&1 | tail -4 | tee -a $out/bench2.md
