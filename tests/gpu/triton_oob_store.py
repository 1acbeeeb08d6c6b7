"""A Triton kernel that stores past the end of its output (no mask on the store): on a GPU the
stores 64 MiB past the end fault (illegal address). For `run --record` / `--escalate`: the
faulting kernel is named from the recorded launches, and the sanitizer step gives file:line."""
import torch
import triton
import triton.language as tl


@triton.jit
def copy_past_end(src, dst, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n)
    tl.store(dst + offs * 4096, x)  # no mask, and a stride that leaves the buffer


n = 1 << 16
src = torch.randn(n, device="cuda")
dst = torch.empty(n, device="cuda")
copy_past_end[(n // 1024,)](src, dst, n, BLOCK=1024)
torch.cuda.synchronize()
print("triton_oob_store: no fault")
