#!/usr/bin/env python3
"""validate's level-3 throughput against PyTorch on the same GPU, in the same run.

  bench/validate_vs_torch.py GPUTRIAGE [DURATION_S]

Two comparisons, each of like with like:
  burst: PyTorch's 8192^3 bf16 torch.matmul on random data (3 warm-ups, then the mean of 10 timed
    with CUDA events, best of 3 rounds; measured before and after gputriage, the better taken)
    against gputriage's best timed batch of 10 in its level-3 stress_gemm; a device-to-device copy
    of 4 GiB (dst.copy_(src), bytes read plus written, same timing) against gputriage's best batch
    of stress_bandwidth.
  sustained: the same PyTorch operations repeated for DURATION_S in batches of 10, median batch,
    against gputriage's sustained median (`validate --level 3 --ops stress_gemm,stress_bandwidth
    --duration DURATION_S`). Under sustained load an H200 holds its power limit and lowers its clocks,
    which both tools then measure.
Prints one JSON object with the figures and the ratios (gputriage / PyTorch)."""
import json
import statistics
import subprocess
import sys
import time

import torch


def torch_matmul_tflops(n=8192, rounds=3):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    best = 0.0
    for _ in range(rounds):
        for _ in range(3):
            torch.matmul(a, b)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(10):
            torch.matmul(a, b)
        stop.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(stop) / 10
        best = max(best, 2 * n**3 / (ms * 1e-3) / 1e12)
    del a, b
    torch.cuda.empty_cache()
    return best


def torch_copy_gbs(nbytes=4 << 30, rounds=3):
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    best = 0.0
    for _ in range(rounds):
        dst.copy_(src)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(10):
            dst.copy_(src)
        stop.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(stop) / 10
        best = max(best, 2 * nbytes / (ms * 1e-3) / 1e9)
    del src, dst
    torch.cuda.empty_cache()
    return best


def torch_sustained(seconds, op, amount):
    """Median over batches of 10 `op()` calls for `seconds`; amount per call / seconds per call."""
    for _ in range(3):
        op()
    rates = []
    begin = time.monotonic()
    while time.monotonic() - begin < seconds:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            op()
        stop.record()
        torch.cuda.synchronize()
        rates.append(amount / (start.elapsed_time(stop) / 10 * 1e-3))
    return statistics.median(rates)


def sustained_pair(seconds, n=8192, nbytes=4 << 30):
    a = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    b = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    gemm = torch_sustained(seconds, lambda: torch.matmul(a, b), 2 * n**3 / 1e12)
    del a, b
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    copy = torch_sustained(seconds, lambda: dst.copy_(src), 2 * nbytes / 1e9)
    del src, dst
    torch.cuda.empty_cache()
    return {"matmul_tflops": gemm, "copy_gbs": copy}


def main():
    gt = sys.argv[1]
    duration = sys.argv[2] if len(sys.argv) > 2 else "30"
    before = {"matmul_tflops": torch_matmul_tflops(), "copy_gbs": torch_copy_gbs()}
    run = subprocess.run([gt, "validate", "--level", "3", "--ops", "stress_gemm,stress_bandwidth", "--duration",
                          duration, "--json", "--quiet"], capture_output=True, text=True)
    report = json.loads(run.stdout)
    after = {"matmul_tflops": torch_matmul_tflops(), "copy_gbs": torch_copy_gbs()}
    sustained = sustained_pair(float(duration))
    checks = {c["name"]: c for c in report["checks"]}
    gemm = checks["stress_gemm"]["throughput"]
    copy = checks["stress_bandwidth"]["throughput"]
    gemm_best = checks["stress_gemm"]["best_throughput"]
    copy_best = checks["stress_bandwidth"]["best_throughput"]
    torch_gemm = max(before["matmul_tflops"], after["matmul_tflops"])
    torch_copy = max(before["copy_gbs"], after["copy_gbs"])
    print(json.dumps({
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "duration_s": float(duration),
        "torch_before": before,
        "torch_after": after,
        "torch_sustained": sustained,
        "gputriage_stress_gemm_tflops": {"sustained_median": gemm, "best_batch": gemm_best},
        "gputriage_stress_bandwidth_gbs": {"sustained_median": copy, "best_batch": copy_best},
        "gemm_ratio_burst": gemm_best / torch_gemm,
        "bandwidth_ratio_burst": copy_best / torch_copy,
        "gemm_ratio_sustained": gemm / sustained["matmul_tflops"],
        "bandwidth_ratio_sustained": copy / sustained["copy_gbs"],
        "gputriage_exit_code": run.returncode,
        "gputriage_details": {k: checks[k]["detail"] for k in ("stress_gemm", "stress_bandwidth")},
    }, indent=2))


if __name__ == "__main__":
    main()
