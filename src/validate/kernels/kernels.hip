// The HIP build of gputriage validate's kernels: the same source as the CUDA build.
#include <hip/hip_runtime.h>

#include "kernels.cu"
