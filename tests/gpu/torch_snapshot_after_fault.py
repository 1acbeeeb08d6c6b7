"""A PyTorch job that enables its caching allocator's own trace (torch.cuda.memory.
_record_memory_history), then faults in a Triton kernel storing past the end of its output, and
in its exception handler writes the allocator snapshot to PATH (torch.cuda.memory._dump_snapshot)
— the way a job "enables the allocator trace" for `gputriage run --torch-snapshot PATH`."""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def copy_past_end(src, dst, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n)
    tl.store(dst + offs * 4096, x)  # no mask, and a stride that leaves the buffer


def make_tensors(n):
    return torch.randn(n, device="cuda"), torch.empty(n, device="cuda")


path = sys.argv[1] if len(sys.argv) > 1 else "torch_snapshot.pickle"
torch.cuda.memory._record_memory_history(max_entries=100000)
weights = [torch.randn(256, 1024, device="cuda") for _ in range(4)]  # other tensors in the segments
n = 1 << 16
src, dst = make_tensors(n)
try:
    copy_past_end[(n // 1024,)](src, dst, n, BLOCK=1024)
    torch.cuda.synchronize()
    print("torch_snapshot_after_fault: no fault")
except Exception as e:
    print(f"torch_snapshot_after_fault: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
    torch.cuda.memory._dump_snapshot(path)
    print(f"torch_snapshot_after_fault: snapshot written to {path}", flush=True)
    raise
