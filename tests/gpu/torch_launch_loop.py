"""A tight loop of tiny kernel launches (x.add_(1)) for the flight recorder's per-launch cost:
prints microseconds per launch."""
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
x = torch.zeros(16, device="cuda")
for _ in range(1000):
    x.add_(1)
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(n):
    x.add_(1)
torch.cuda.synchronize()
print(f"launch_loop: {n} launches, {(time.perf_counter() - start) / n * 1e6:.2f} us per launch")
