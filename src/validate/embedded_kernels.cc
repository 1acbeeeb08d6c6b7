// The kernels of src/validate/kernels, as nvcc and hipcc built them at build time, embedded with
// the assembler's .incbin (cmake/validate_kernels.cmake passes the paths and the target lists).
#include "validate/device.h"

#define GT_STR2(x) #x
#define GT_STR(x) GT_STR2(x)

#if GT_VALIDATE_CUDA_FATBIN_PRESENT
asm(".pushsection .nv_fatbin,\"a\"\n"
    ".balign 64\n"
    "gt_cuda_kernels_begin:\n"
    ".incbin \"" GT_VALIDATE_CUDA_FATBIN
    "\"\n"
    "gt_cuda_kernels_end:\n"
    ".byte 0\n"
    ".popsection\n");
extern "C" const unsigned char gt_cuda_kernels_begin[];
extern "C" const unsigned char gt_cuda_kernels_end[];
#endif

#if GT_VALIDATE_HIP_BUNDLE_PRESENT
asm(".pushsection .hip_fatbin,\"a\"\n"
    ".balign 4096\n"
    "gt_hip_kernels_begin:\n"
    ".incbin \"" GT_VALIDATE_HIP_BUNDLE
    "\"\n"
    "gt_hip_kernels_end:\n"
    ".byte 0\n"
    ".popsection\n");
extern "C" const unsigned char gt_hip_kernels_begin[];
extern "C" const unsigned char gt_hip_kernels_end[];
#endif

namespace gputriage::validate {

EmbeddedKernels CudaKernels() {
#if GT_VALIDATE_CUDA_FATBIN_PRESENT
  return {gt_cuda_kernels_begin, static_cast<size_t>(gt_cuda_kernels_end - gt_cuda_kernels_begin),
          GT_VALIDATE_CUDA_TARGETS};
#else
  return {};
#endif
}

EmbeddedKernels HipKernels() {
#if GT_VALIDATE_HIP_BUNDLE_PRESENT
  return {gt_hip_kernels_begin, static_cast<size_t>(gt_hip_kernels_end - gt_hip_kernels_begin),
          GT_VALIDATE_HIP_TARGETS};
#else
  return {};
#endif
}

}  // namespace gputriage::validate
