// The CUDA side of the device layer: the driver API (libcuda.so.1) loaded with dlopen, the
// primary context of each device (the one cuBLAS and cuDNN use too), one stream, and the kernels
// nvcc built into an embedded fatbin, loaded with cuModuleLoadData. Types and the names of the
// versioned entry points come from the toolkit's cuda.h at build time; nothing is linked.
#include <fmt/format.h>

#include <map>
#include <set>

#include "core/dynlib.h"
#include "validate/device.h"
#include "validate/keep_loaded.h"

#if GT_VALIDATE_CUDA
#include <cuda.h>
#endif

namespace gputriage::validate {

#if !GT_VALIDATE_CUDA

core::Result<std::unique_ptr<Backend>> LoadCudaBackend() {
  return core::MakeErrorCode(core::ErrorCode::kUnsupported,
                             "this gputriage was built without the CUDA backend (nvcc and cuda.h were not found when "
                             "it was built; see docs/commands/validate.md)");
}

#else

namespace {

#define GT_STR2(x) #x
#define GT_STR(x) GT_STR2(x)  // the versioned symbol cuda.h maps a name to: cuMemAlloc -> "cuMemAlloc_v2"

struct DriverApi {
  core::DynamicLibrary lib;
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuDriverGetVersion) DriverGetVersion = nullptr;
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuDeviceTotalMem) DeviceTotalMem = nullptr;
  decltype(&::cuDeviceGetPCIBusId) DeviceGetPCIBusId = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) PrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) PrimaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuStreamCreate) StreamCreate = nullptr;
  decltype(&::cuStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuFuncGetAttribute) FuncGetAttribute = nullptr;
  decltype(&::cuFuncSetAttribute) FuncSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuMemAlloc) MemAlloc = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemHostAlloc) MemHostAlloc = nullptr;
  decltype(&::cuMemFreeHost) MemFreeHost = nullptr;
  decltype(&::cuMemcpyHtoD) MemcpyHtoD = nullptr;
  decltype(&::cuMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&::cuMemcpyHtoDAsync) MemcpyHtoDAsync = nullptr;
  decltype(&::cuMemcpyDtoHAsync) MemcpyDtoHAsync = nullptr;
  decltype(&::cuMemsetD8Async) MemsetD8Async = nullptr;
  decltype(&::cuMemGetInfo) MemGetInfo = nullptr;
  decltype(&::cuEventCreate) EventCreate = nullptr;
  decltype(&::cuEventDestroy) EventDestroy = nullptr;
  decltype(&::cuEventRecord) EventRecord = nullptr;
  decltype(&::cuEventSynchronize) EventSynchronize = nullptr;
  decltype(&::cuDeviceCanAccessPeer) DeviceCanAccessPeer = nullptr;
  decltype(&::cuCtxEnablePeerAccess) CtxEnablePeerAccess = nullptr;
  decltype(&::cuMemcpyPeerAsync) MemcpyPeerAsync = nullptr;
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent) = nullptr;

  std::string Describe(CUresult code) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (GetErrorName(code, &name) != CUDA_SUCCESS || name == nullptr) name = "CUDA_ERROR_UNKNOWN_CODE";
    if (GetErrorString(code, &text) != CUDA_SUCCESS || text == nullptr) text = "no description";
    return fmt::format("{} ({}, {})", name, static_cast<int>(code), text);
  }
  std::string Name(CUresult code) const {
    const char* name = nullptr;
    if (GetErrorName(code, &name) != CUDA_SUCCESS || name == nullptr) return fmt::format("CUresult {}", int(code));
    return name;
  }
  core::Result<void> Check(CUresult code, std::string_view call) const {
    if (code == CUDA_SUCCESS) return {};
    core::ErrorCode kind = code == CUDA_ERROR_OUT_OF_MEMORY ? core::ErrorCode::kIo : core::ErrorCode::kUnknown;
    return core::MakeErrorCode(kind, "{}: {}", call, Describe(code));
  }
};

#define GT_BIND(field, name) GT_RETURN_IF_ERROR(api->lib.Bind(GT_STR(name), api->field))

core::Result<std::shared_ptr<DriverApi>> LoadDriver() {
  auto api = std::make_shared<DriverApi>();
  GT_ASSIGN_OR_RETURN(api->lib, core::DynamicLibrary::Open({"libcuda.so.1", "libcuda.so"}));
  KeepLoaded(api->lib);
  GT_BIND(Init, cuInit);
  GT_BIND(DriverGetVersion, cuDriverGetVersion);
  GT_BIND(GetErrorName, cuGetErrorName);
  GT_BIND(GetErrorString, cuGetErrorString);
  GT_BIND(DeviceGetCount, cuDeviceGetCount);
  GT_BIND(DeviceGet, cuDeviceGet);
  GT_BIND(DeviceGetName, cuDeviceGetName);
  GT_BIND(DeviceGetAttribute, cuDeviceGetAttribute);
  GT_BIND(DeviceTotalMem, cuDeviceTotalMem);
  GT_BIND(DeviceGetPCIBusId, cuDeviceGetPCIBusId);
  GT_BIND(PrimaryCtxRetain, cuDevicePrimaryCtxRetain);
  GT_BIND(PrimaryCtxRelease, cuDevicePrimaryCtxRelease);
  GT_BIND(CtxSetCurrent, cuCtxSetCurrent);
  GT_BIND(StreamCreate, cuStreamCreate);
  GT_BIND(StreamDestroy, cuStreamDestroy);
  GT_BIND(StreamSynchronize, cuStreamSynchronize);
  GT_BIND(ModuleLoadData, cuModuleLoadData);
  GT_BIND(ModuleUnload, cuModuleUnload);
  GT_BIND(ModuleGetFunction, cuModuleGetFunction);
  GT_BIND(FuncGetAttribute, cuFuncGetAttribute);
  GT_BIND(FuncSetAttribute, cuFuncSetAttribute);
  GT_BIND(LaunchKernel, cuLaunchKernel);
  GT_BIND(MemAlloc, cuMemAlloc);
  GT_BIND(MemFree, cuMemFree);
  GT_BIND(MemHostAlloc, cuMemHostAlloc);
  GT_BIND(MemFreeHost, cuMemFreeHost);
  GT_BIND(MemcpyHtoD, cuMemcpyHtoD);
  GT_BIND(MemcpyDtoH, cuMemcpyDtoH);
  GT_BIND(MemcpyHtoDAsync, cuMemcpyHtoDAsync);
  GT_BIND(MemcpyDtoHAsync, cuMemcpyDtoHAsync);
  GT_BIND(MemsetD8Async, cuMemsetD8Async);
  GT_BIND(MemGetInfo, cuMemGetInfo);
  GT_BIND(EventCreate, cuEventCreate);
  GT_BIND(EventDestroy, cuEventDestroy);
  GT_BIND(EventRecord, cuEventRecord);
  GT_BIND(EventSynchronize, cuEventSynchronize);
  GT_BIND(DeviceCanAccessPeer, cuDeviceCanAccessPeer);
  GT_BIND(CtxEnablePeerAccess, cuCtxEnablePeerAccess);
  GT_BIND(MemcpyPeerAsync, cuMemcpyPeerAsync);
  // cuEventElapsedTime_v2 (CUDA 12.8+) where the driver has it, else the original entry point.
  api->lib.BindOptional(GT_STR(cuEventElapsedTime), api->EventElapsedTime);
  if (api->EventElapsedTime == nullptr) GT_RETURN_IF_ERROR(api->lib.Bind("cuEventElapsedTime", api->EventElapsedTime));
  return api;
}

class CudaDevice final : public Device {
 public:
  CudaDevice(std::shared_ptr<DriverApi> api, CUdevice device) : api_(std::move(api)), device_(device) {}
  ~CudaDevice() override {
    if (context_ == nullptr) return;
    api_->CtxSetCurrent(context_);
    api_->StreamSynchronize(stream_);
    if (module_ != nullptr) api_->ModuleUnload(module_);
    if (start_ != nullptr) api_->EventDestroy(start_);
    if (stop_ != nullptr) api_->EventDestroy(stop_);
    if (stream_ != nullptr) api_->StreamDestroy(stream_);
    api_->PrimaryCtxRelease(device_);
  }

  core::Result<void> Init(int index) {
    const DriverApi& a = *api_;
    info_.index = index;
    info_.vendor = "nvidia";
    char name[256] = {};
    GT_RETURN_IF_ERROR(a.Check(a.DeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName"));
    info_.name = name;
    int major = 0, minor = 0;
    GT_RETURN_IF_ERROR(a.Check(a.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
                               "cuDeviceGetAttribute"));
    GT_RETURN_IF_ERROR(a.Check(a.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
                               "cuDeviceGetAttribute"));
    info_.arch = fmt::format("sm_{}{}", major, minor);
    char bus[64] = {};
    if (a.DeviceGetPCIBusId(bus, sizeof bus - 1, device_) == CUDA_SUCCESS) info_.pci_bus_id = bus;
    int driver = 0;
    if (a.DriverGetVersion(&driver) == CUDA_SUCCESS) {
      info_.runtime = fmt::format("CUDA driver API {}.{}", driver / 1000, driver % 1000 / 10);
    }
    size_t total = 0;
    if (a.DeviceTotalMem(&total, device_) == CUDA_SUCCESS) info_.memory_total_bytes = total;
    auto attribute = [&](CUdevice_attribute which) -> std::optional<int> {
      int value = 0;
      if (a.DeviceGetAttribute(&value, which, device_) != CUDA_SUCCESS) return std::nullopt;
      return value;
    };
    info_.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info_.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    info_.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    info_.max_shared_per_block_bytes = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    info_.max_shared_per_block_optin_bytes = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    info_.registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);

    GT_RETURN_IF_ERROR(a.Check(a.PrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain"));
    GT_RETURN_IF_ERROR(Current());
    GT_RETURN_IF_ERROR(a.Check(a.StreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
    GT_RETURN_IF_ERROR(a.Check(a.EventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate"));
    GT_RETURN_IF_ERROR(a.Check(a.EventCreate(&stop_, CU_EVENT_DEFAULT), "cuEventCreate"));
    EmbeddedKernels kernels = CudaKernels();
    CUresult loaded = a.ModuleLoadData(&module_, kernels.data);
    if (loaded != CUDA_SUCCESS) {
      module_ = nullptr;
      return core::MakeError("cuModuleLoadData of gputriage's kernels (built for {}) on {} ({}): {}", kernels.targets,
                             info_.name, info_.arch, a.Describe(loaded));
    }
    size_t free = 0;
    if (a.MemGetInfo(&free, &total) == CUDA_SUCCESS) info_.memory_free_bytes = free;
    return {};
  }

  const core::ValidationDevice& info() const override { return info_; }

  core::Result<DevicePtr> Alloc(size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    CUdeviceptr ptr = 0;
    GT_RETURN_IF_ERROR(api_->Check(api_->MemAlloc(&ptr, bytes), fmt::format("cuMemAlloc({} bytes)", bytes)));
    return static_cast<DevicePtr>(ptr);
  }
  void Free(DevicePtr ptr) override {
    if (ptr != 0 && Current().ok()) api_->MemFree(static_cast<CUdeviceptr>(ptr));
  }
  core::Result<void*> AllocPinned(size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    void* ptr = nullptr;
    GT_RETURN_IF_ERROR(api_->Check(api_->MemHostAlloc(&ptr, bytes, CU_MEMHOSTALLOC_PORTABLE),
                                   fmt::format("cuMemHostAlloc({} bytes)", bytes)));
    return ptr;
  }
  void FreePinned(void* ptr) override {
    if (ptr != nullptr && Current().ok()) api_->MemFreeHost(ptr);
  }
  core::Result<void> CopyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    GT_RETURN_IF_ERROR(Synchronize());
    return api_->Check(api_->MemcpyHtoD(static_cast<CUdeviceptr>(dst), src, bytes), "cuMemcpyHtoD");
  }
  core::Result<void> CopyToHost(void* dst, DevicePtr src, size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    GT_RETURN_IF_ERROR(Synchronize());
    return api_->Check(api_->MemcpyDtoH(dst, static_cast<CUdeviceptr>(src), bytes), "cuMemcpyDtoH");
  }
  core::Result<void> CopyToDeviceAsync(DevicePtr dst, const void* src, size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    return api_->Check(api_->MemcpyHtoDAsync(static_cast<CUdeviceptr>(dst), src, bytes, stream_), "cuMemcpyHtoDAsync");
  }
  core::Result<void> CopyToHostAsync(void* dst, DevicePtr src, size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    return api_->Check(api_->MemcpyDtoHAsync(dst, static_cast<CUdeviceptr>(src), bytes, stream_), "cuMemcpyDtoHAsync");
  }
  core::Result<void> Memset(DevicePtr dst, uint8_t value, size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    return api_->Check(api_->MemsetD8Async(static_cast<CUdeviceptr>(dst), value, bytes, stream_), "cuMemsetD8Async");
  }
  core::Result<MemoryInfo> Memory() override {
    GT_RETURN_IF_ERROR(Current());
    size_t free = 0, total = 0;
    GT_RETURN_IF_ERROR(api_->Check(api_->MemGetInfo(&free, &total), "cuMemGetInfo"));
    return MemoryInfo{free, total};
  }

  DeviceError LaunchStatus(const std::string& name, Dim3 grid, Dim3 block, unsigned shared_bytes,
                           std::vector<void*> args) override {
    auto function = Function(name);
    if (!function.ok()) return DeviceError{function.error().message, -1, "lookup"};
    if (auto current = Current(); !current.ok()) return DeviceError{current.error().message, -1, "context"};
    CUresult code = api_->LaunchKernel(*function, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes,
                                       stream_, args.data(), nullptr);
    if (code == CUDA_SUCCESS) return {};
    return DeviceError{fmt::format("cuLaunchKernel({}, grid {}x{}x{}, block {}x{}x{}, {} B shared): {}", name, grid.x,
                                   grid.y, grid.z, block.x, block.y, block.z, shared_bytes, api_->Describe(code)),
                       static_cast<int>(code), api_->Name(code)};
  }

  core::Result<KernelAttributes> Attributes(const std::string& name) override {
    GT_ASSIGN_OR_RETURN(CUfunction function, Function(name));
    KernelAttributes attributes;
    GT_RETURN_IF_ERROR(api_->Check(
        api_->FuncGetAttribute(&attributes.max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
        "cuFuncGetAttribute"));
    GT_RETURN_IF_ERROR(
        api_->Check(api_->FuncGetAttribute(&attributes.registers_per_thread, CU_FUNC_ATTRIBUTE_NUM_REGS, function),
                    "cuFuncGetAttribute"));
    GT_RETURN_IF_ERROR(api_->Check(
        api_->FuncGetAttribute(&attributes.static_shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function),
        "cuFuncGetAttribute"));
    return attributes;
  }

  core::Result<void> AllowSharedMemory(const std::string& name, int bytes) override {
    GT_ASSIGN_OR_RETURN(CUfunction function, Function(name));
    return api_->Check(api_->FuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
                       "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  }

  core::Result<void> Synchronize() override {
    GT_RETURN_IF_ERROR(Current());
    return api_->Check(api_->StreamSynchronize(stream_), "cuStreamSynchronize");
  }

  core::Result<double> TimeMs(const std::function<core::Result<void>()>& work) override {
    GT_RETURN_IF_ERROR(Current());
    GT_RETURN_IF_ERROR(api_->Check(api_->EventRecord(start_, stream_), "cuEventRecord"));
    GT_RETURN_IF_ERROR(work());
    GT_RETURN_IF_ERROR(api_->Check(api_->EventRecord(stop_, stream_), "cuEventRecord"));
    GT_RETURN_IF_ERROR(api_->Check(api_->EventSynchronize(stop_), "cuEventSynchronize"));
    float ms = 0;
    GT_RETURN_IF_ERROR(api_->Check(api_->EventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime"));
    return static_cast<double>(ms);
  }

  void* native_stream() override { return stream_; }

  core::Result<bool> CanAccessPeer(Device& peer) override {
    auto* other = dynamic_cast<CudaDevice*>(&peer);
    if (other == nullptr || other == this) return false;
    int can = 0;
    GT_RETURN_IF_ERROR(api_->Check(api_->DeviceCanAccessPeer(&can, device_, other->device_), "cuDeviceCanAccessPeer"));
    return can != 0;
  }

  core::Result<void> CopyFromPeer(DevicePtr dst, Device& peer, DevicePtr src, size_t bytes) override {
    auto* other = dynamic_cast<CudaDevice*>(&peer);
    if (other == nullptr) return core::MakeError("peer copy between a CUDA device and a device of another runtime");
    GT_RETURN_IF_ERROR(Current());
    if (peers_enabled_.insert(other->device_).second) {
      CUresult enabled = api_->CtxEnablePeerAccess(other->context_, 0);
      if (enabled != CUDA_SUCCESS && enabled != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        return api_->Check(enabled, "cuCtxEnablePeerAccess");
      }
    }
    return api_->Check(api_->MemcpyPeerAsync(static_cast<CUdeviceptr>(dst), context_, static_cast<CUdeviceptr>(src),
                                             other->context_, bytes, stream_),
                       "cuMemcpyPeerAsync");
  }

 private:
  core::Result<void> Current() { return api_->Check(api_->CtxSetCurrent(context_), "cuCtxSetCurrent"); }

  core::Result<CUfunction> Function(const std::string& name) {
    if (auto it = functions_.find(name); it != functions_.end()) return it->second;
    GT_RETURN_IF_ERROR(Current());
    CUfunction function = nullptr;
    GT_RETURN_IF_ERROR(api_->Check(api_->ModuleGetFunction(&function, module_, name.c_str()),
                                   fmt::format("cuModuleGetFunction({})", name)));
    functions_[name] = function;
    return function;
  }

  std::shared_ptr<DriverApi> api_;
  CUdevice device_;
  core::ValidationDevice info_;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr;
  CUevent stop_ = nullptr;
  CUmodule module_ = nullptr;
  std::map<std::string, CUfunction> functions_;
  std::set<CUdevice> peers_enabled_;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::shared_ptr<DriverApi> api, int count) : api_(std::move(api)), count_(count) {}
  std::string vendor() const override { return "nvidia"; }
  std::string library() const override { return api_->lib.path(); }
  int device_count() const override { return count_; }
  core::Result<std::unique_ptr<Device>> Open(int index) override {
    if (index < 0 || index >= count_) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "CUDA device {} does not exist ({} device{})",
                                 index, count_, count_ == 1 ? "" : "s");
    }
    CUdevice device = 0;
    GT_RETURN_IF_ERROR(api_->Check(api_->DeviceGet(&device, index), "cuDeviceGet"));
    auto opened = std::make_unique<CudaDevice>(api_, device);
    GT_RETURN_IF_ERROR(opened->Init(index));
    return std::unique_ptr<Device>(std::move(opened));
  }

 private:
  std::shared_ptr<DriverApi> api_;
  int count_;
};

}  // namespace

core::Result<std::unique_ptr<Backend>> LoadCudaBackend() {
  if (CudaKernels().size == 0) {
    return core::MakeErrorCode(core::ErrorCode::kUnsupported,
                               "this gputriage was built without CUDA kernels (nvcc was not found when it was built)");
  }
  GT_ASSIGN_OR_RETURN(std::shared_ptr<DriverApi> api, LoadDriver());
  CUresult init = api->Init(0);
  if (init != CUDA_SUCCESS) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "cuInit (from {}): {}", api->lib.path(),
                               api->Describe(init));
  }
  int count = 0;
  GT_RETURN_IF_ERROR(api->Check(api->DeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0) return core::MakeErrorCode(core::ErrorCode::kNotFound, "the CUDA driver reports no device");
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(std::move(api), count));
}

#endif  // GT_VALIDATE_CUDA

}  // namespace gputriage::validate
