"""A process with libtorch (and the CUDA runtime) loaded that dies of SIGSEGV: the supervisor's
time from the fatal signal to the bundle written is measured on this."""
import ctypes

import torch

torch.zeros(1, device="cuda")
ctypes.string_at(0)
