"""PyTorch's device-side assert from index_add_ with an out-of-range index, raised inside a
custom autograd backward (so it surfaces on the autograd engine's thread, asynchronously)."""
import torch


class ScatterBack(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.rows = x.shape[0]
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        out = torch.zeros(ctx.rows, grad.shape[1], device=grad.device)
        out.index_add_(0, index, grad)  # index[3] == 1000 is out of range
        return out, None


x = torch.randn(8, 4, device="cuda", requires_grad=True)
index = torch.arange(8, device="cuda")
index[3] = 1000
y = ScatterBack.apply(x, index)
y.sum().backward()
torch.cuda.synchronize()
print("torch_index_add_assert: not reached")
