"""A training job that faults late: STEPS steps of the 2-layer MLP of torch_train_loop.py (no
fault), then the Triton store past the end of its output of triton_oob_store.py. For the cost of
`run --escalate` against the whole job under compute-sanitizer: the sanitizer slows every step,
the escalation's sanitizer step checks one kernel only."""
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def copy_past_end(src, dst, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n)
    tl.store(dst + offs * 4096, x)  # no mask, and a stride that leaves the buffer


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(512, 2048, device="cuda")
target = torch.randn(512, 1024, device="cuda")
start = time.perf_counter()
for _ in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), target)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(f"train_then_oob: {steps} steps in {time.perf_counter() - start:.3f} s, loss {loss.item():.4f}", flush=True)
n = 1 << 16
src = torch.randn(n, device="cuda")
dst = torch.empty(n, device="cuda")
copy_past_end[(n // 1024,)](src, dst, n, BLOCK=1024)
torch.cuda.synchronize()
print("train_then_oob: no fault")
