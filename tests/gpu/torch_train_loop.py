"""A small PyTorch training loop for the supervisor's overhead benchmark (no crash)."""
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(512, 2048, device="cuda")
target = torch.randn(512, 1024, device="cuda")
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), target)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(f"train_loop: {steps} steps in {time.perf_counter() - start:.3f} s, loss {loss.item():.4f}")
