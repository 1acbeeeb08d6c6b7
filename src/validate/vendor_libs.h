// The vendor math libraries `validate` checks, loaded at run time: GEMM through cuBLAS or rocBLAS,
// conv2d through cuDNN or MIOpen. Each is found by soname (LD_LIBRARY_PATH, ld.so.cache), then in
// the toolkit directories (CUDA_HOME, /usr/local/cuda, /opt/rocm) and the `nvidia` pip wheels of
// Python installs (where PyTorch's cuDNN usually lives). A library that is absent or too old is a
// skip with the reason, never a failure of the GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/dynlib.h"
#include "core/result.h"
#include "validate/device.h"
#include "validate/reference.h"

namespace gputriage::validate {

/// Row-major C[m x n] = A[m x k] * B[k x n] (alpha 1, beta 0) on the device's stream. 16-bit types
/// accumulate in fp32, fp32 in fp32 (no TF32), fp64 in fp64.
class Blas {
 public:
  virtual ~Blas() = default;
  virtual std::string describe() const = 0;  ///< "cuBLAS 13.0.2 (/usr/local/cuda/lib64/libcublas.so.13)"
  virtual core::Result<void> Gemm(Dtype dtype, int m, int n, int k, DevicePtr a, DevicePtr b, DevicePtr c) = 0;
};

/// NCHW conv2d, cross-correlation, y = conv(x, w), padding and stride as given, dilation 1.
struct ConvShape {
  int n = 1, c = 64, h = 224, w = 224;  ///< input
  int k = 64, r = 3, s = 3;             ///< filters: k x c x r x s
  int pad = 1, stride = 1;
  int out_h() const { return (h + 2 * pad - r) / stride + 1; }
  int out_w() const { return (w + 2 * pad - s) / stride + 1; }
};

class Dnn {
 public:
  virtual ~Dnn() = default;
  virtual std::string describe() const = 0;
  virtual core::Result<void> Conv2d(Dtype dtype, const ConvShape& shape, DevicePtr x, DevicePtr w, DevicePtr y) = 0;
};

/// cuBLAS for an NVIDIA device, rocBLAS for an AMD one. kNotFound when the library is not there.
core::Result<std::unique_ptr<Blas>> LoadBlas(Device& device);
/// cuDNN for an NVIDIA device, MIOpen for an AMD one. kNotFound when the library is not there.
core::Result<std::unique_ptr<Dnn>> LoadDnn(Device& device);

/// Opens the first of `sonames` that loads by name (LD_LIBRARY_PATH, ld.so.cache), else from the
/// first of VendorLibraryDirs(vendor) that holds one. kNotFound naming every place tried otherwise.
core::Result<core::DynamicLibrary> OpenVendorLibrary(const std::vector<std::string>& sonames,
                                                     const std::string& vendor);

/// The directories searched after the sonames: toolkit lib directories and the pip wheels'
/// nvidia/*/lib (glob), in order; only those that exist.
std::vector<std::string> VendorLibraryDirs(const std::string& vendor);

}  // namespace gputriage::validate
