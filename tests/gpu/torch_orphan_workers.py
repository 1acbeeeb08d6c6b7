# A GPU job whose workers outlive a polite stop: the first process forks a worker that ignores
# SIGTERM and a second one that leaves the process group (setsid, as DataLoader-like launchers
# and daemons do); each allocates GPU memory and then waits. Used on the GPU machine to check that
# `gputriage run --timeout` leaves no process (and no GPU memory) behind. Prints the pids.
import os
import signal
import sys
import time

import torch


def worker(detach: bool) -> None:
    if detach:
        os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    x = torch.empty(256 << 20, dtype=torch.float32, device="cuda")  # 1 GiB
    x.fill_(1.0)
    torch.cuda.synchronize()
    print(f"worker {os.getpid()} detach={detach} holds {x.numel() * 4 >> 20} MiB", flush=True)
    time.sleep(3600)


children = []
for detach in (False, True):
    pid = os.fork()  # before this process touches CUDA
    if pid == 0:
        worker(detach)
        sys.exit(0)
    children.append(pid)
y = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
print(f"parent {os.getpid()} children {children}", flush=True)
time.sleep(3600)
