#include "validate/vendor_libs.h"

#include <fmt/format.h>
#include <glob.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "core/dynlib.h"

#if GT_VALIDATE_CUBLAS
#include <cublas_api.h>
#endif
#if GT_VALIDATE_CUDNN
#include <cudnn.h>
#endif

namespace gputriage::validate {

core::Result<core::DynamicLibrary> OpenVendorLibrary(const std::vector<std::string>& sonames,
                                                     const std::string& vendor) {
  std::vector<std::string> names = sonames;
  for (const std::string& dir : VendorLibraryDirs(vendor)) {
    for (const std::string& soname : sonames) {
      std::error_code ec;
      std::string path = dir + "/" + soname;
      if (std::filesystem::exists(path, ec)) names.push_back(path);
    }
  }
  auto lib = core::DynamicLibrary::Open(names);
  if (!lib.ok()) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "{} not found (tried the sonames, then {}); {}",
                               fmt::join(sonames, " / "), fmt::join(VendorLibraryDirs(vendor), ", "),
                               "add its directory to LD_LIBRARY_PATH");
  }
  return lib;
}

namespace {

// The problem a convolution plan is for: one per dtype and shape.
std::string PlanKey(Dtype dtype, const ConvShape& shape) {
  return fmt::format("{}:{}x{}x{}x{}:{}x{}x{}:{}:{}", DtypeName(dtype), shape.n, shape.c, shape.h, shape.w, shape.k,
                     shape.r, shape.s, shape.pad, shape.stride);
}

// alpha = 1 and beta = 0 in the type the libraries scale by: double for fp64, float for the
// others (16-bit types accumulate in fp32).
class UnitScale {
 public:
  explicit UnitScale(Dtype dtype) : wide_(dtype == Dtype::kF64) {}
  const void* alpha() const { return wide_ ? static_cast<const void*>(&one64_) : &one32_; }
  const void* beta() const { return wide_ ? static_cast<const void*>(&zero64_) : &zero32_; }

 private:
  bool wide_;
  float one32_ = 1, zero32_ = 0;
  double one64_ = 1, zero64_ = 0;
};

// A device buffer that grows to the largest size asked of it (a library's scratch space).
class Workspace {
 public:
  explicit Workspace(Device& device) : device_(device) {}
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace() {
    if (ptr_ != 0) device_.Free(ptr_);
  }
  core::Result<void> Reserve(size_t bytes) {
    if (bytes <= bytes_) return {};
    if (ptr_ != 0) device_.Free(ptr_);
    ptr_ = 0;
    bytes_ = 0;
    GT_ASSIGN_OR_RETURN(ptr_, device_.Alloc(bytes));
    bytes_ = bytes;
    return {};
  }
  DevicePtr get() const { return ptr_; }

 private:
  Device& device_;
  DevicePtr ptr_ = 0;
  size_t bytes_ = 0;
};

#if GT_VALIDATE_CUBLAS

class Cublas final : public Blas {
 public:
  using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
  using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
  using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
  using VersionFn = cublasStatus_t (*)(cublasHandle_t, int*);
  using StatusNameFn = const char* (*)(cublasStatus_t);
  using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                      const void*, cudaDataType, int, const void*, cudaDataType, int, const void*,
                                      void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

  ~Cublas() override {
    if (handle_ != nullptr) destroy_(handle_);
  }

  core::Result<void> Init(Device& device) {
    GT_ASSIGN_OR_RETURN(
        lib_, OpenVendorLibrary({"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}, "nvidia"));
    CreateFn create = nullptr;
    SetStreamFn set_stream = nullptr;
    VersionFn version = nullptr;
    GT_RETURN_IF_ERROR(lib_.Bind("cublasCreate_v2", create));
    GT_RETURN_IF_ERROR(lib_.Bind("cublasDestroy_v2", destroy_));
    GT_RETURN_IF_ERROR(lib_.Bind("cublasSetStream_v2", set_stream));
    GT_RETURN_IF_ERROR(lib_.Bind("cublasGetVersion_v2", version));
    lib_.BindOptional("cublasGetStatusName", status_name_);
    auto gemm = lib_.Bind("cublasGemmEx", gemm_);
    if (!gemm.ok()) {
      return core::MakeErrorCode(core::ErrorCode::kUnsupported, "{} has no cublasGemmEx (cuBLAS 8 or later needed)",
                                 lib_.path());
    }
    GT_RETURN_IF_ERROR(device.Synchronize());
    GT_RETURN_IF_ERROR(Check(create(&handle_), "cublasCreate"));
    GT_RETURN_IF_ERROR(
        Check(set_stream(handle_, static_cast<cudaStream_t>(device.native_stream())), "cublasSetStream"));
    int v = 0;
    if (version(handle_, &v) == CUBLAS_STATUS_SUCCESS) {
      describe_ = fmt::format("cuBLAS {}.{}.{} ({})", v / 10000, v / 100 % 100, v % 100, lib_.path());
    } else {
      describe_ = fmt::format("cuBLAS ({})", lib_.path());
    }
    if (v != 0 && v < 110000) {
      return core::MakeErrorCode(core::ErrorCode::kUnsupported,
                                 "{} is older than cuBLAS 11 (no cublasComputeType_t for cublasGemmEx)", describe_);
    }
    return {};
  }

  std::string describe() const override { return describe_; }

  core::Result<void> Gemm(Dtype dtype, int m, int n, int k, DevicePtr a, DevicePtr b, DevicePtr c) override {
    cudaDataType type = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    UnitScale scale(dtype);
    switch (dtype) {
      case Dtype::kF32:
        break;
      case Dtype::kF16:
        type = CUDA_R_16F;
        break;
      case Dtype::kBf16:
        type = CUDA_R_16BF;
        break;
      case Dtype::kF64:
        type = CUDA_R_64F;
        compute = CUBLAS_COMPUTE_64F;
        break;
    }
    // Row-major C = A B is column-major C^T = B^T A^T: B first, with the dimensions swapped.
    return Check(gemm_(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, scale.alpha(), reinterpret_cast<const void*>(b),
                       type, n, reinterpret_cast<const void*>(a), type, k, scale.beta(), reinterpret_cast<void*>(c),
                       type, n, compute, CUBLAS_GEMM_DEFAULT),
                 fmt::format("cublasGemmEx({}, m={} n={} k={})", DtypeName(dtype), m, n, k));
  }

 private:
  core::Result<void> Check(cublasStatus_t status, std::string_view call) const {
    if (status == CUBLAS_STATUS_SUCCESS) return {};
    const char* name = status_name_ != nullptr ? status_name_(status) : nullptr;
    return core::MakeError("{}: {} ({})", call, name != nullptr ? name : "cublasStatus_t", static_cast<int>(status));
  }

  core::DynamicLibrary lib_;
  cublasHandle_t handle_ = nullptr;
  DestroyFn destroy_ = nullptr;
  StatusNameFn status_name_ = nullptr;
  GemmExFn gemm_ = nullptr;
  std::string describe_;
};

#endif  // GT_VALIDATE_CUBLAS

#if GT_VALIDATE_CUDNN

class Cudnn final : public Dnn {
 public:
  explicit Cudnn(Device& device) : device_(device), workspace_(device) {}
  ~Cudnn() override {
    plans_.clear();
    if (handle_ != nullptr) fn_.destroy(handle_);
  }

  core::Result<void> Init() {
    GT_ASSIGN_OR_RETURN(lib_, OpenVendorLibrary({"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}, "nvidia"));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnCreate", fn_.create));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnDestroy", fn_.destroy));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnSetStream", fn_.set_stream));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnGetVersion", fn_.version));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnGetErrorString", fn_.error_string));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnCreateTensorDescriptor", fn_.create_tensor));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnDestroyTensorDescriptor", fn_.destroy_tensor));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnSetTensor4dDescriptor", fn_.set_tensor));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnCreateFilterDescriptor", fn_.create_filter));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnDestroyFilterDescriptor", fn_.destroy_filter));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnSetFilter4dDescriptor", fn_.set_filter));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnCreateConvolutionDescriptor", fn_.create_conv));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnDestroyConvolutionDescriptor", fn_.destroy_conv));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnSetConvolution2dDescriptor", fn_.set_conv));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnSetConvolutionMathType", fn_.set_math));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnGetConvolutionForwardAlgorithm_v7", fn_.get_algorithm));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnGetConvolutionForwardWorkspaceSize", fn_.workspace_size));
    GT_RETURN_IF_ERROR(lib_.Bind("cudnnConvolutionForward", fn_.forward));
    size_t v = fn_.version();
    // cuDNN 9: major*10000 + minor*100 + patch; cuDNN 8: major*1000 + minor*100 + patch.
    describe_ = v >= 90000 ? fmt::format("cuDNN {}.{}.{} ({})", v / 10000, v / 100 % 100, v % 100, lib_.path())
                           : fmt::format("cuDNN {}.{}.{} ({})", v / 1000, v / 100 % 10, v % 100, lib_.path());
    GT_RETURN_IF_ERROR(Check(fn_.create(&handle_), "cudnnCreate"));
    return Check(fn_.set_stream(handle_, static_cast<cudaStream_t>(device_.native_stream())), "cudnnSetStream");
  }

  std::string describe() const override { return describe_; }

  core::Result<void> Conv2d(Dtype dtype, const ConvShape& shape, DevicePtr x, DevicePtr w, DevicePtr y) override {
    // Descriptors, algorithm and workspace are set up once per problem and reused, so a timed
    // repeat measures the convolution, not the planning.
    std::string key = PlanKey(dtype, shape);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      auto plan = std::make_unique<Plan>(fn_);
      GT_RETURN_IF_ERROR(MakePlan(dtype, shape, *plan));
      it = plans_.emplace(key, std::move(plan)).first;
    }
    const Plan& p = *it->second;
    UnitScale scale(dtype);
    return Check(
        fn_.forward(handle_, scale.alpha(), p.x, reinterpret_cast<const void*>(x), p.w,
                    reinterpret_cast<const void*>(w), p.conv, p.algorithm, reinterpret_cast<void*>(workspace_.get()),
                    p.workspace_bytes, scale.beta(), p.y, reinterpret_cast<void*>(y)),
        fmt::format("cudnnConvolutionForward({}, algorithm {})", DtypeName(dtype), static_cast<int>(p.algorithm)));
  }

 private:
  struct Functions {
    cudnnStatus_t (*create)(cudnnHandle_t*) = nullptr;
    cudnnStatus_t (*destroy)(cudnnHandle_t) = nullptr;
    cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t) = nullptr;
    size_t (*version)() = nullptr;
    const char* (*error_string)(cudnnStatus_t) = nullptr;
    cudnnStatus_t (*create_tensor)(cudnnTensorDescriptor_t*) = nullptr;
    cudnnStatus_t (*destroy_tensor)(cudnnTensorDescriptor_t) = nullptr;
    cudnnStatus_t (*set_tensor)(cudnnTensorDescriptor_t, cudnnTensorFormat_t, cudnnDataType_t, int, int, int,
                                int) = nullptr;
    cudnnStatus_t (*create_filter)(cudnnFilterDescriptor_t*) = nullptr;
    cudnnStatus_t (*destroy_filter)(cudnnFilterDescriptor_t) = nullptr;
    cudnnStatus_t (*set_filter)(cudnnFilterDescriptor_t, cudnnDataType_t, cudnnTensorFormat_t, int, int, int,
                                int) = nullptr;
    cudnnStatus_t (*create_conv)(cudnnConvolutionDescriptor_t*) = nullptr;
    cudnnStatus_t (*destroy_conv)(cudnnConvolutionDescriptor_t) = nullptr;
    cudnnStatus_t (*set_conv)(cudnnConvolutionDescriptor_t, int, int, int, int, int, int, cudnnConvolutionMode_t,
                              cudnnDataType_t) = nullptr;
    cudnnStatus_t (*set_math)(cudnnConvolutionDescriptor_t, cudnnMathType_t) = nullptr;
    cudnnStatus_t (*get_algorithm)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                                   cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int*,
                                   cudnnConvolutionFwdAlgoPerf_t*) = nullptr;
    cudnnStatus_t (*workspace_size)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                                    cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t,
                                    size_t*) = nullptr;
    cudnnStatus_t (*forward)(cudnnHandle_t, const void*, cudnnTensorDescriptor_t, const void*, cudnnFilterDescriptor_t,
                             const void*, cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t, void*, size_t,
                             const void*, cudnnTensorDescriptor_t, void*) = nullptr;
  };
  struct Plan {
    explicit Plan(const Functions& f) : fn(f) {}
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() {
      if (x != nullptr) fn.destroy_tensor(x);
      if (y != nullptr) fn.destroy_tensor(y);
      if (w != nullptr) fn.destroy_filter(w);
      if (conv != nullptr) fn.destroy_conv(conv);
    }
    const Functions& fn;
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnConvolutionFwdAlgo_t algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    size_t workspace_bytes = 0;
  };

  core::Result<void> MakePlan(Dtype dtype, const ConvShape& shape, Plan& d) {
    cudnnDataType_t type = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
    cudnnMathType_t math = CUDNN_FMA_MATH;  // fp32 and fp64 as themselves, not TF32
    switch (dtype) {
      case Dtype::kF32:
        break;
      case Dtype::kF16:
        type = CUDNN_DATA_HALF;
        math = CUDNN_TENSOR_OP_MATH;
        break;
      case Dtype::kBf16:
        type = CUDNN_DATA_BFLOAT16;
        math = CUDNN_TENSOR_OP_MATH;
        break;
      case Dtype::kF64:
        type = compute = CUDNN_DATA_DOUBLE;
        break;
    }
    GT_RETURN_IF_ERROR(Check(fn_.create_tensor(&d.x), "cudnnCreateTensorDescriptor"));
    GT_RETURN_IF_ERROR(Check(fn_.create_tensor(&d.y), "cudnnCreateTensorDescriptor"));
    GT_RETURN_IF_ERROR(Check(fn_.create_filter(&d.w), "cudnnCreateFilterDescriptor"));
    GT_RETURN_IF_ERROR(Check(fn_.create_conv(&d.conv), "cudnnCreateConvolutionDescriptor"));
    GT_RETURN_IF_ERROR(Check(fn_.set_tensor(d.x, CUDNN_TENSOR_NCHW, type, shape.n, shape.c, shape.h, shape.w),
                             "cudnnSetTensor4dDescriptor(x)"));
    GT_RETURN_IF_ERROR(Check(fn_.set_filter(d.w, type, CUDNN_TENSOR_NCHW, shape.k, shape.c, shape.r, shape.s),
                             "cudnnSetFilter4dDescriptor"));
    GT_RETURN_IF_ERROR(
        Check(fn_.set_tensor(d.y, CUDNN_TENSOR_NCHW, type, shape.n, shape.k, shape.out_h(), shape.out_w()),
              "cudnnSetTensor4dDescriptor(y)"));
    GT_RETURN_IF_ERROR(Check(
        fn_.set_conv(d.conv, shape.pad, shape.pad, shape.stride, shape.stride, 1, 1, CUDNN_CROSS_CORRELATION, compute),
        "cudnnSetConvolution2dDescriptor"));
    GT_RETURN_IF_ERROR(Check(fn_.set_math(d.conv, math), "cudnnSetConvolutionMathType"));
    cudnnConvolutionFwdAlgoPerf_t perf[8] = {};
    int returned = 0;
    GT_RETURN_IF_ERROR(Check(fn_.get_algorithm(handle_, d.x, d.w, d.conv, d.y, 8, &returned, perf),
                             "cudnnGetConvolutionForwardAlgorithm_v7"));
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        d.algorithm = perf[i].algo;
        break;
      }
    }
    GT_RETURN_IF_ERROR(Check(fn_.workspace_size(handle_, d.x, d.w, d.conv, d.y, d.algorithm, &d.workspace_bytes),
                             "cudnnGetConvolutionForwardWorkspaceSize"));
    return workspace_.Reserve(d.workspace_bytes);
  }

  core::Result<void> Check(cudnnStatus_t status, std::string_view call) const {
    if (status == CUDNN_STATUS_SUCCESS) return {};
    const char* text = fn_.error_string != nullptr ? fn_.error_string(status) : nullptr;
    return core::MakeError("{}: {} ({})", call, text != nullptr ? text : "cudnnStatus_t", static_cast<int>(status));
  }

  Device& device_;
  core::DynamicLibrary lib_;
  Functions fn_;
  std::map<std::string, std::unique_ptr<Plan>> plans_;
  cudnnHandle_t handle_ = nullptr;
  Workspace workspace_;
  std::string describe_;
};

#endif  // GT_VALIDATE_CUDNN

// rocBLAS and MIOpen are not packaged by Debian: the few types and values used are declared here,
// as rocBLAS's include/internal/rocblas-types.h and MIOpen's include/miopen/miopen.h define them
// (rocblas_operation_none 111; rocblas_datatype f16_r 150, f32_r 151, f64_r 152, bf16_r 168;
// rocblas_gemm_algo_standard 0; miopenHalf 0, miopenFloat 1, miopenBFloat16 5, miopenDouble 6;
// miopenConvolution 0; miopenConvAlgoPerf_t {union of algorithm enums; float time; size_t memory}).
// Not verified on AMD hardware.
namespace rocm {
using Status = int;
using Handle = void*;
inline constexpr int kOperationNone = 111;
inline constexpr int kF16 = 150, kF32 = 151, kF64 = 152, kBf16 = 168;
inline constexpr int kGemmAlgoStandard = 0;
inline constexpr int kMiopenHalf = 0, kMiopenFloat = 1, kMiopenBFloat16 = 5, kMiopenDouble = 6;
inline constexpr int kMiopenConvolution = 0;
struct ConvAlgoPerf {
  int algorithm;  // union { fwd_algo; bwd_weights_algo; bwd_data_algo }
  float time;
  size_t memory;
};
}  // namespace rocm

class Rocblas final : public Blas {
 public:
  ~Rocblas() override {
    if (handle_ != nullptr) destroy_(handle_);
  }

  core::Result<void> Init(Device& device) {
    GT_ASSIGN_OR_RETURN(
        lib_, OpenVendorLibrary({"librocblas.so", "librocblas.so.4", "librocblas.so.3", "librocblas.so.0"}, "amd"));
    rocm::Status (*create)(rocm::Handle*) = nullptr;
    rocm::Status (*set_stream)(rocm::Handle, void*) = nullptr;
    GT_RETURN_IF_ERROR(lib_.Bind("rocblas_create_handle", create));
    GT_RETURN_IF_ERROR(lib_.Bind("rocblas_destroy_handle", destroy_));
    GT_RETURN_IF_ERROR(lib_.Bind("rocblas_set_stream", set_stream));
    GT_RETURN_IF_ERROR(lib_.Bind("rocblas_gemm_ex", gemm_));
    lib_.BindOptional("rocblas_status_to_string", status_name_);
    rocm::Status (*version)(char*, size_t) = nullptr;
    lib_.BindOptional("rocblas_get_version_string", version);
    char text[128] = {};
    describe_ = version != nullptr && version(text, sizeof text - 1) == 0
                    ? fmt::format("rocBLAS {} ({})", text, lib_.path())
                    : fmt::format("rocBLAS ({})", lib_.path());
    GT_RETURN_IF_ERROR(Check(create(&handle_), "rocblas_create_handle"));
    return Check(set_stream(handle_, device.native_stream()), "rocblas_set_stream");
  }

  std::string describe() const override { return describe_; }

  core::Result<void> Gemm(Dtype dtype, int m, int n, int k, DevicePtr a, DevicePtr b, DevicePtr c) override {
    int type = rocm::kF32, compute = rocm::kF32;
    UnitScale scale(dtype);
    if (dtype == Dtype::kF16) type = rocm::kF16;
    if (dtype == Dtype::kBf16) type = rocm::kBf16;
    if (dtype == Dtype::kF64) type = compute = rocm::kF64;
    void* cp = reinterpret_cast<void*>(c);
    return Check(gemm_(handle_, rocm::kOperationNone, rocm::kOperationNone, n, m, k, scale.alpha(),
                       reinterpret_cast<const void*>(b), type, n, reinterpret_cast<const void*>(a), type, k,
                       scale.beta(), cp, type, n, cp, type, n, compute, rocm::kGemmAlgoStandard, 0, 0),
                 fmt::format("rocblas_gemm_ex({}, m={} n={} k={})", DtypeName(dtype), m, n, k));
  }

 private:
  core::Result<void> Check(rocm::Status status, std::string_view call) const {
    if (status == 0) return {};
    const char* name = status_name_ != nullptr ? status_name_(status) : nullptr;
    return core::MakeError("{}: {} ({})", call, name != nullptr ? name : "rocblas_status", status);
  }

  using GemmExFn = rocm::Status (*)(rocm::Handle, int, int, int, int, int, const void*, const void*, int, int,
                                    const void*, int, int, const void*, const void*, int, int, void*, int, int, int,
                                    int, int32_t, uint32_t);
  core::DynamicLibrary lib_;
  rocm::Handle handle_ = nullptr;
  rocm::Status (*destroy_)(rocm::Handle) = nullptr;
  const char* (*status_name_)(rocm::Status) = nullptr;
  GemmExFn gemm_ = nullptr;
  std::string describe_;
};

class Miopen final : public Dnn {
 public:
  explicit Miopen(Device& device) : device_(device), workspace_(device) {}
  ~Miopen() override {
    plans_.clear();
    if (handle_ != nullptr) destroy_(handle_);
  }

  core::Result<void> Init() {
    GT_ASSIGN_OR_RETURN(lib_, OpenVendorLibrary({"libMIOpen.so", "libMIOpen.so.1"}, "amd"));
    rocm::Status (*create)(rocm::Handle*) = nullptr;
    rocm::Status (*set_stream)(rocm::Handle, void*) = nullptr;
    GT_RETURN_IF_ERROR(lib_.Bind("miopenCreate", create));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenDestroy", destroy_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenSetStream", set_stream));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenGetErrorString", error_string_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenCreateTensorDescriptor", create_tensor_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenDestroyTensorDescriptor", destroy_tensor_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenSet4dTensorDescriptor", set_tensor_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenCreateConvolutionDescriptor", create_conv_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenDestroyConvolutionDescriptor", destroy_conv_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenInitConvolutionDescriptor", init_conv_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenConvolutionForwardGetWorkSpaceSize", workspace_size_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenFindConvolutionForwardAlgorithm", find_));
    GT_RETURN_IF_ERROR(lib_.Bind("miopenConvolutionForward", forward_));
    rocm::Status (*version)(size_t*, size_t*, size_t*) = nullptr;
    lib_.BindOptional("miopenGetVersion", version);
    size_t major = 0, minor = 0, patch = 0;
    describe_ = version != nullptr && version(&major, &minor, &patch) == 0
                    ? fmt::format("MIOpen {}.{}.{} ({})", major, minor, patch, lib_.path())
                    : fmt::format("MIOpen ({})", lib_.path());
    GT_RETURN_IF_ERROR(Check(create(&handle_), "miopenCreate"));
    return Check(set_stream(handle_, device_.native_stream()), "miopenSetStream");
  }

  std::string describe() const override { return describe_; }

  core::Result<void> Conv2d(Dtype dtype, const ConvShape& shape, DevicePtr x, DevicePtr w, DevicePtr y) override {
    std::string key = PlanKey(dtype, shape);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      auto plan = std::make_unique<Plan>(this);
      GT_RETURN_IF_ERROR(MakePlan(dtype, shape, x, w, y, *plan));
      it = plans_.emplace(key, std::move(plan)).first;
    }
    const Plan& p = *it->second;
    UnitScale scale(dtype);
    return Check(forward_(handle_, scale.alpha(), p.x, reinterpret_cast<const void*>(x), p.w,
                          reinterpret_cast<const void*>(w), p.conv, p.algorithm, scale.beta(), p.y,
                          reinterpret_cast<void*>(y), reinterpret_cast<void*>(workspace_.get()), p.workspace_bytes),
                 fmt::format("miopenConvolutionForward({}, algorithm {})", DtypeName(dtype), p.algorithm));
  }

  struct Plan {
    explicit Plan(Miopen* owner) : self(owner) {}
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() {
      for (void* d : {x, w, y}) {
        if (d != nullptr) self->destroy_tensor_(d);
      }
      if (conv != nullptr) self->destroy_conv_(conv);
    }
    Miopen* self;
    void *x = nullptr, *w = nullptr, *y = nullptr, *conv = nullptr;
    int algorithm = 0;
    size_t workspace_bytes = 0;
  };

  // Descriptors, then MIOpen's search for the algorithm (which needs the buffers and writes y).
  core::Result<void> MakePlan(Dtype dtype, const ConvShape& shape, DevicePtr x, DevicePtr w, DevicePtr y, Plan& p) {
    int type = dtype == Dtype::kF16    ? rocm::kMiopenHalf
               : dtype == Dtype::kBf16 ? rocm::kMiopenBFloat16
               : dtype == Dtype::kF64  ? rocm::kMiopenDouble
                                       : rocm::kMiopenFloat;
    GT_RETURN_IF_ERROR(Check(create_tensor_(&p.x), "miopenCreateTensorDescriptor"));
    GT_RETURN_IF_ERROR(Check(create_tensor_(&p.w), "miopenCreateTensorDescriptor"));
    GT_RETURN_IF_ERROR(Check(create_tensor_(&p.y), "miopenCreateTensorDescriptor"));
    GT_RETURN_IF_ERROR(Check(create_conv_(&p.conv), "miopenCreateConvolutionDescriptor"));
    GT_RETURN_IF_ERROR(
        Check(set_tensor_(p.x, type, shape.n, shape.c, shape.h, shape.w), "miopenSet4dTensorDescriptor"));
    GT_RETURN_IF_ERROR(
        Check(set_tensor_(p.w, type, shape.k, shape.c, shape.r, shape.s), "miopenSet4dTensorDescriptor"));
    GT_RETURN_IF_ERROR(
        Check(set_tensor_(p.y, type, shape.n, shape.k, shape.out_h(), shape.out_w()), "miopenSet4dTensorDescriptor"));
    GT_RETURN_IF_ERROR(
        Check(init_conv_(p.conv, rocm::kMiopenConvolution, shape.pad, shape.pad, shape.stride, shape.stride, 1, 1),
              "miopenInitConvolutionDescriptor"));
    GT_RETURN_IF_ERROR(Check(workspace_size_(handle_, p.w, p.x, p.conv, p.y, &p.workspace_bytes),
                             "miopenConvolutionForwardGetWorkSpaceSize"));
    GT_RETURN_IF_ERROR(workspace_.Reserve(p.workspace_bytes));
    rocm::ConvAlgoPerf perf{};
    int returned = 0;
    GT_RETURN_IF_ERROR(
        Check(find_(handle_, p.x, reinterpret_cast<const void*>(x), p.w, reinterpret_cast<const void*>(w), p.conv, p.y,
                    reinterpret_cast<void*>(y), 1, &returned, &perf, reinterpret_cast<void*>(workspace_.get()),
                    p.workspace_bytes, false),
              "miopenFindConvolutionForwardAlgorithm"));
    if (returned < 1) return core::MakeError("miopenFindConvolutionForwardAlgorithm returned no algorithm");
    p.algorithm = perf.algorithm;
    // The search wrote y: poison it again so the forward pass must write every element itself.
    size_t y_bytes = static_cast<size_t>(shape.n) * shape.k * shape.out_h() * shape.out_w() * DtypeSize(dtype);
    return device_.Memset(y, 0xff, y_bytes);
  }

 private:
  core::Result<void> Check(rocm::Status status, std::string_view call) const {
    if (status == 0) return {};
    const char* text = error_string_ != nullptr ? error_string_(status) : nullptr;
    return core::MakeError("{}: {} ({})", call, text != nullptr ? text : "miopenStatus_t", status);
  }

  Device& device_;
  core::DynamicLibrary lib_;
  rocm::Handle handle_ = nullptr;
  rocm::Status (*destroy_)(rocm::Handle) = nullptr;
  const char* (*error_string_)(rocm::Status) = nullptr;
  rocm::Status (*create_tensor_)(void**) = nullptr;
  rocm::Status (*destroy_tensor_)(void*) = nullptr;
  rocm::Status (*set_tensor_)(void*, int, int, int, int, int) = nullptr;
  rocm::Status (*create_conv_)(void**) = nullptr;
  rocm::Status (*destroy_conv_)(void*) = nullptr;
  rocm::Status (*init_conv_)(void*, int, int, int, int, int, int, int) = nullptr;
  rocm::Status (*workspace_size_)(rocm::Handle, void*, void*, void*, void*, size_t*) = nullptr;
  rocm::Status (*find_)(rocm::Handle, void*, const void*, void*, const void*, void*, void*, void*, int, int*,
                        rocm::ConvAlgoPerf*, void*, size_t, bool) = nullptr;
  rocm::Status (*forward_)(rocm::Handle, const void*, void*, const void*, void*, const void*, void*, int, const void*,
                           void*, void*, void*, size_t) = nullptr;
  std::map<std::string, std::unique_ptr<Plan>> plans_;
  Workspace workspace_;
  std::string describe_;
};

}  // namespace

std::vector<std::string> VendorLibraryDirs(const std::string& vendor) {
  std::vector<std::string> patterns;
  auto env_dir = [&](const char* name, const char* sub) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
      patterns.push_back(std::string(value) + sub);
    }
  };
  if (vendor == "nvidia") {
    env_dir("CUDA_HOME", "/lib64");
    env_dir("CUDA_PATH", "/lib64");
    patterns.push_back("/usr/local/cuda/lib64");
    env_dir("VIRTUAL_ENV", "/lib/python3*/site-packages/nvidia/*/lib");
    env_dir("CONDA_PREFIX", "/lib/python3*/site-packages/nvidia/*/lib");
    env_dir("HOME", "/.local/lib/python3*/site-packages/nvidia/*/lib");
    for (const char* prefix : {"/usr/local/lib", "/usr/lib", "/opt/conda/lib"}) {
      for (const char* site : {"site-packages", "dist-packages"}) {
        patterns.push_back(fmt::format("{}/python3*/{}/nvidia/*/lib", prefix, site));
      }
    }
  } else {
    env_dir("ROCM_PATH", "/lib");
    patterns.push_back("/opt/rocm/lib");
    patterns.push_back("/opt/rocm-*/lib");
  }
  std::vector<std::string> dirs;
  for (const std::string& pattern : patterns) {
    glob_t matches{};
    if (glob(pattern.c_str(), GLOB_ONLYDIR | GLOB_NOSORT, nullptr, &matches) == 0) {
      for (size_t i = 0; i < matches.gl_pathc; ++i) dirs.emplace_back(matches.gl_pathv[i]);
    }
    globfree(&matches);
  }
  return dirs;
}

core::Result<std::unique_ptr<Blas>> LoadBlas(Device& device) {
  if (device.info().vendor == "amd") {
    auto blas = std::make_unique<Rocblas>();
    GT_RETURN_IF_ERROR(blas->Init(device));
    return std::unique_ptr<Blas>(std::move(blas));
  }
#if GT_VALIDATE_CUBLAS
  auto blas = std::make_unique<Cublas>();
  GT_RETURN_IF_ERROR(blas->Init(device));
  return std::unique_ptr<Blas>(std::move(blas));
#else
  return core::MakeErrorCode(
      core::ErrorCode::kUnsupported,
      "this gputriage was built without cuBLAS's header (cublas_api.h), so it cannot call cuBLAS");
#endif
}

core::Result<std::unique_ptr<Dnn>> LoadDnn(Device& device) {
  if (device.info().vendor == "amd") {
    auto dnn = std::make_unique<Miopen>(device);
    GT_RETURN_IF_ERROR(dnn->Init());
    return std::unique_ptr<Dnn>(std::move(dnn));
  }
#if GT_VALIDATE_CUDNN
  auto dnn = std::make_unique<Cudnn>(device);
  GT_RETURN_IF_ERROR(dnn->Init());
  return std::unique_ptr<Dnn>(std::move(dnn));
#else
  return core::MakeErrorCode(core::ErrorCode::kUnsupported,
                             "this gputriage was built without cuDNN's header (cudnn.h), so it cannot call cuDNN");
#endif
}

}  // namespace gputriage::validate
