// The HIP side of the device layer: libamdhip64.so (ROCm 5 or 6) loaded with dlopen, one stream
// per device, and the kernels hipcc built into an embedded code-object bundle, loaded with
// hipModuleLoadData. Types come from the HIP runtime's headers at build time (Debian's
// libamdhip64-dev); nothing is linked. Not verified on AMD hardware: on machines without an AMD
// GPU the runtime loads and reports no device, and that path is tested.
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "core/dynlib.h"
#include "validate/device.h"
#include "validate/keep_loaded.h"

#if GT_VALIDATE_HIP
#define __HIP_PLATFORM_AMD__ 1
#include <hip/hip_runtime_api.h>
#endif

namespace gputriage::validate {

#if !GT_VALIDATE_HIP

core::Result<std::unique_ptr<Backend>> LoadHipBackend() {
  return core::MakeErrorCode(core::ErrorCode::kUnsupported,
                             "this gputriage was built without the HIP backend (hipcc and the HIP headers were not "
                             "found when it was built)");
}

#else

namespace {

struct HipApi {
  core::DynamicLibrary lib;
  decltype(&::hipInit) Init = nullptr;
  decltype(&::hipRuntimeGetVersion) RuntimeGetVersion = nullptr;
  decltype(&::hipGetErrorName) GetErrorName = nullptr;
  decltype(&::hipGetErrorString) GetErrorString = nullptr;
  decltype(&::hipGetDeviceCount) GetDeviceCount = nullptr;
  decltype(&::hipSetDevice) SetDevice = nullptr;
  decltype(&::hipDeviceGetName) DeviceGetName = nullptr;
  decltype(&::hipDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::hipDeviceTotalMem) DeviceTotalMem = nullptr;
  decltype(&::hipDeviceGetPCIBusId) DeviceGetPCIBusId = nullptr;
  decltype(&::hipGetDeviceProperties) GetDeviceProperties = nullptr;
  decltype(&::hipStreamCreateWithFlags) StreamCreateWithFlags = nullptr;
  decltype(&::hipStreamDestroy) StreamDestroy = nullptr;
  decltype(&::hipStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&::hipModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::hipModuleUnload) ModuleUnload = nullptr;
  decltype(&::hipModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::hipFuncGetAttribute) FuncGetAttribute = nullptr;
  decltype(&::hipModuleLaunchKernel) ModuleLaunchKernel = nullptr;
  hipError_t (*Malloc)(void**, size_t) = nullptr;
  decltype(&::hipFree) Free = nullptr;
  hipError_t (*HostMalloc)(void**, size_t, unsigned int) = nullptr;
  decltype(&::hipHostFree) HostFree = nullptr;
  decltype(&::hipMemcpyHtoD) MemcpyHtoD = nullptr;
  decltype(&::hipMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&::hipMemcpyHtoDAsync) MemcpyHtoDAsync = nullptr;
  decltype(&::hipMemcpyDtoHAsync) MemcpyDtoHAsync = nullptr;
  decltype(&::hipMemsetD8Async) MemsetD8Async = nullptr;
  decltype(&::hipMemGetInfo) MemGetInfo = nullptr;
  decltype(&::hipEventCreate) EventCreate = nullptr;
  decltype(&::hipEventDestroy) EventDestroy = nullptr;
  decltype(&::hipEventRecord) EventRecord = nullptr;
  decltype(&::hipEventSynchronize) EventSynchronize = nullptr;
  decltype(&::hipEventElapsedTime) EventElapsedTime = nullptr;
  decltype(&::hipDeviceCanAccessPeer) DeviceCanAccessPeer = nullptr;
  decltype(&::hipDeviceEnablePeerAccess) DeviceEnablePeerAccess = nullptr;
  decltype(&::hipMemcpyPeerAsync) MemcpyPeerAsync = nullptr;

  std::string Name(hipError_t code) const {
    const char* name = GetErrorName(code);
    return name != nullptr ? name : fmt::format("hipError_t {}", static_cast<int>(code));
  }
  std::string Describe(hipError_t code) const {
    const char* text = GetErrorString(code);
    return fmt::format("{} ({}, {})", Name(code), static_cast<int>(code), text != nullptr ? text : "no description");
  }
  core::Result<void> Check(hipError_t code, std::string_view call) const {
    if (code == hipSuccess) return {};
    core::ErrorCode kind = code == hipErrorOutOfMemory ? core::ErrorCode::kIo : core::ErrorCode::kUnknown;
    return core::MakeErrorCode(kind, "{}: {}", call, Describe(code));
  }
};

#define GT_HIP_BIND(field, name) GT_RETURN_IF_ERROR(api->lib.Bind(#name, api->field))

core::Result<std::shared_ptr<HipApi>> LoadHip() {
  auto api = std::make_shared<HipApi>();
  GT_ASSIGN_OR_RETURN(api->lib, core::DynamicLibrary::Open({"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5",
                                                            "/opt/rocm/lib/libamdhip64.so"}));
  KeepLoaded(api->lib);
  GT_HIP_BIND(Init, hipInit);
  GT_HIP_BIND(RuntimeGetVersion, hipRuntimeGetVersion);
  GT_HIP_BIND(GetErrorName, hipGetErrorName);
  GT_HIP_BIND(GetErrorString, hipGetErrorString);
  GT_HIP_BIND(GetDeviceCount, hipGetDeviceCount);
  GT_HIP_BIND(SetDevice, hipSetDevice);
  GT_HIP_BIND(DeviceGetName, hipDeviceGetName);
  GT_HIP_BIND(DeviceGetAttribute, hipDeviceGetAttribute);
  GT_HIP_BIND(DeviceTotalMem, hipDeviceTotalMem);
  GT_HIP_BIND(DeviceGetPCIBusId, hipDeviceGetPCIBusId);
  // The ROCm 5 layout of hipDeviceProp_t; ROCm 6 keeps this entry point for it (and adds
  // hipGetDevicePropertiesR0600 for the new layout). Only gcnArchName is read from it.
  GT_HIP_BIND(GetDeviceProperties, hipGetDeviceProperties);
  GT_HIP_BIND(StreamCreateWithFlags, hipStreamCreateWithFlags);
  GT_HIP_BIND(StreamDestroy, hipStreamDestroy);
  GT_HIP_BIND(StreamSynchronize, hipStreamSynchronize);
  GT_HIP_BIND(ModuleLoadData, hipModuleLoadData);
  GT_HIP_BIND(ModuleUnload, hipModuleUnload);
  GT_HIP_BIND(ModuleGetFunction, hipModuleGetFunction);
  GT_HIP_BIND(FuncGetAttribute, hipFuncGetAttribute);
  GT_HIP_BIND(ModuleLaunchKernel, hipModuleLaunchKernel);
  GT_HIP_BIND(Malloc, hipMalloc);
  GT_HIP_BIND(Free, hipFree);
  GT_HIP_BIND(HostMalloc, hipHostMalloc);
  GT_HIP_BIND(HostFree, hipHostFree);
  GT_HIP_BIND(MemcpyHtoD, hipMemcpyHtoD);
  GT_HIP_BIND(MemcpyDtoH, hipMemcpyDtoH);
  GT_HIP_BIND(MemcpyHtoDAsync, hipMemcpyHtoDAsync);
  GT_HIP_BIND(MemcpyDtoHAsync, hipMemcpyDtoHAsync);
  GT_HIP_BIND(MemsetD8Async, hipMemsetD8Async);
  GT_HIP_BIND(MemGetInfo, hipMemGetInfo);
  GT_HIP_BIND(EventCreate, hipEventCreate);
  GT_HIP_BIND(EventDestroy, hipEventDestroy);
  GT_HIP_BIND(EventRecord, hipEventRecord);
  GT_HIP_BIND(EventSynchronize, hipEventSynchronize);
  GT_HIP_BIND(EventElapsedTime, hipEventElapsedTime);
  GT_HIP_BIND(DeviceCanAccessPeer, hipDeviceCanAccessPeer);
  GT_HIP_BIND(DeviceEnablePeerAccess, hipDeviceEnablePeerAccess);
  GT_HIP_BIND(MemcpyPeerAsync, hipMemcpyPeerAsync);
  return api;
}

class HipDevice final : public Device {
 public:
  HipDevice(std::shared_ptr<HipApi> api, int index) : api_(std::move(api)), index_(index) {}
  ~HipDevice() override {
    if (api_->SetDevice(index_) != hipSuccess) return;
    if (stream_ != nullptr) api_->StreamSynchronize(stream_);
    if (module_ != nullptr) api_->ModuleUnload(module_);
    if (start_ != nullptr) api_->EventDestroy(start_);
    if (stop_ != nullptr) api_->EventDestroy(stop_);
    if (stream_ != nullptr) api_->StreamDestroy(stream_);
  }

  core::Result<void> Init() {
    const HipApi& a = *api_;
    info_.index = index_;
    info_.vendor = "amd";
    GT_RETURN_IF_ERROR(Current());
    char name[256] = {};
    GT_RETURN_IF_ERROR(a.Check(a.DeviceGetName(name, sizeof name - 1, index_), "hipDeviceGetName"));
    info_.name = name;
    // hipDeviceProp_t is larger in ROCm 6 than in the header this was built with: a buffer with
    // room to spare, and only a gcnArchName that reads as one is taken.
    std::vector<unsigned char> props(16384, 0);
    if (a.GetDeviceProperties(reinterpret_cast<hipDeviceProp_t*>(props.data()), index_) == hipSuccess) {
      const char* arch = reinterpret_cast<const char*>(props.data() + offsetof(hipDeviceProp_t, gcnArchName));
      std::string text(arch, strnlen(arch, sizeof(hipDeviceProp_t::gcnArchName)));
      if (text.rfind("gfx", 0) == 0) info_.arch = text.substr(0, text.find(':'));
    }
    if (info_.arch.empty()) info_.arch = "unknown (hipGetDeviceProperties gave no gcnArchName)";
    char bus[64] = {};
    if (a.DeviceGetPCIBusId(bus, sizeof bus - 1, index_) == hipSuccess) info_.pci_bus_id = bus;
    int version = 0;
    if (a.RuntimeGetVersion(&version) == hipSuccess) {
      info_.runtime = fmt::format("HIP runtime {}.{}.{}", version / 10000000, version / 100000 % 100, version % 100000);
    }
    size_t total = 0;
    if (a.DeviceTotalMem(&total, index_) == hipSuccess) info_.memory_total_bytes = total;
    auto attribute = [&](hipDeviceAttribute_t which) -> std::optional<int> {
      int value = 0;
      if (a.DeviceGetAttribute(&value, which, index_) != hipSuccess) return std::nullopt;
      return value;
    };
    info_.multiprocessors = attribute(hipDeviceAttributeMultiprocessorCount);
    info_.warp_size = attribute(hipDeviceAttributeWarpSize);
    info_.max_threads_per_block = attribute(hipDeviceAttributeMaxThreadsPerBlock);
    info_.max_shared_per_block_bytes = attribute(hipDeviceAttributeMaxSharedMemoryPerBlock);
    info_.registers_per_block = attribute(hipDeviceAttributeMaxRegistersPerBlock);
    GT_RETURN_IF_ERROR(a.Check(a.StreamCreateWithFlags(&stream_, hipStreamNonBlocking), "hipStreamCreateWithFlags"));
    GT_RETURN_IF_ERROR(a.Check(a.EventCreate(&start_), "hipEventCreate"));
    GT_RETURN_IF_ERROR(a.Check(a.EventCreate(&stop_), "hipEventCreate"));
    EmbeddedKernels kernels = HipKernels();
    hipError_t loaded = a.ModuleLoadData(&module_, kernels.data);
    if (loaded != hipSuccess) {
      module_ = nullptr;
      return core::MakeError("hipModuleLoadData of gputriage's kernels (built for {}) on {} ({}): {}", kernels.targets,
                             info_.name, info_.arch, a.Describe(loaded));
    }
    size_t free = 0;
    if (a.MemGetInfo(&free, &total) == hipSuccess) info_.memory_free_bytes = free;
    return {};
  }

  const core::ValidationDevice& info() const override { return info_; }

  core::Result<DevicePtr> Alloc(size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    void* ptr = nullptr;
    GT_RETURN_IF_ERROR(api_->Check(api_->Malloc(&ptr, bytes), fmt::format("hipMalloc({} bytes)", bytes)));
    return reinterpret_cast<DevicePtr>(ptr);
  }
  void Free(DevicePtr ptr) override {
    if (ptr != 0 && Current().ok()) api_->Free(reinterpret_cast<void*>(ptr));
  }
  core::Result<void*> AllocPinned(size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    void* ptr = nullptr;
    GT_RETURN_IF_ERROR(api_->Check(api_->HostMalloc(&ptr, bytes, hipHostMallocPortable),
                                   fmt::format("hipHostMalloc({} bytes)", bytes)));
    return ptr;
  }
  void FreePinned(void* ptr) override {
    if (ptr != nullptr && Current().ok()) api_->HostFree(ptr);
  }
  core::Result<void> CopyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    GT_RETURN_IF_ERROR(Synchronize());
    return api_->Check(api_->MemcpyHtoD(Ptr(dst), const_cast<void*>(src), bytes), "hipMemcpyHtoD");
  }
  core::Result<void> CopyToHost(void* dst, DevicePtr src, size_t bytes) override {
    GT_RETURN_IF_ERROR(Synchronize());
    return api_->Check(api_->MemcpyDtoH(dst, Ptr(src), bytes), "hipMemcpyDtoH");
  }
  core::Result<void> CopyToDeviceAsync(DevicePtr dst, const void* src, size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    return api_->Check(api_->MemcpyHtoDAsync(Ptr(dst), const_cast<void*>(src), bytes, stream_), "hipMemcpyHtoDAsync");
  }
  core::Result<void> CopyToHostAsync(void* dst, DevicePtr src, size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    return api_->Check(api_->MemcpyDtoHAsync(dst, Ptr(src), bytes, stream_), "hipMemcpyDtoHAsync");
  }
  core::Result<void> Memset(DevicePtr dst, uint8_t value, size_t bytes) override {
    GT_RETURN_IF_ERROR(Current());
    return api_->Check(api_->MemsetD8Async(Ptr(dst), value, bytes, stream_), "hipMemsetD8Async");
  }
  core::Result<MemoryInfo> Memory() override {
    GT_RETURN_IF_ERROR(Current());
    size_t free = 0, total = 0;
    GT_RETURN_IF_ERROR(api_->Check(api_->MemGetInfo(&free, &total), "hipMemGetInfo"));
    return MemoryInfo{free, total};
  }

  DeviceError LaunchStatus(const std::string& name, Dim3 grid, Dim3 block, unsigned shared_bytes,
                           std::vector<void*> args) override {
    auto function = Function(name);
    if (!function.ok()) return DeviceError{function.error().message, -1, "lookup"};
    hipError_t code = api_->ModuleLaunchKernel(*function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                               shared_bytes, stream_, args.data(), nullptr);
    if (code == hipSuccess) return {};
    return DeviceError{
        fmt::format("hipModuleLaunchKernel({}, grid {}x{}x{}, block {}x{}x{}, {} B shared): {}", name, grid.x, grid.y,
                    grid.z, block.x, block.y, block.z, shared_bytes, api_->Describe(code)),
        static_cast<int>(code), api_->Name(code)};
  }

  core::Result<KernelAttributes> Attributes(const std::string& name) override {
    GT_ASSIGN_OR_RETURN(hipFunction_t function, Function(name));
    KernelAttributes attributes;
    GT_RETURN_IF_ERROR(api_->Check(
        api_->FuncGetAttribute(&attributes.max_threads_per_block, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
        "hipFuncGetAttribute"));
    GT_RETURN_IF_ERROR(
        api_->Check(api_->FuncGetAttribute(&attributes.registers_per_thread, HIP_FUNC_ATTRIBUTE_NUM_REGS, function),
                    "hipFuncGetAttribute"));
    GT_RETURN_IF_ERROR(api_->Check(
        api_->FuncGetAttribute(&attributes.static_shared_bytes, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function),
        "hipFuncGetAttribute"));
    return attributes;
  }

  // AMD GPUs give a workgroup all of its LDS without an opt-in.
  core::Result<void> AllowSharedMemory(const std::string&, int) override { return {}; }

  core::Result<void> Synchronize() override {
    GT_RETURN_IF_ERROR(Current());
    return api_->Check(api_->StreamSynchronize(stream_), "hipStreamSynchronize");
  }

  core::Result<double> TimeMs(const std::function<core::Result<void>()>& work) override {
    GT_RETURN_IF_ERROR(Current());
    GT_RETURN_IF_ERROR(api_->Check(api_->EventRecord(start_, stream_), "hipEventRecord"));
    GT_RETURN_IF_ERROR(work());
    GT_RETURN_IF_ERROR(api_->Check(api_->EventRecord(stop_, stream_), "hipEventRecord"));
    GT_RETURN_IF_ERROR(api_->Check(api_->EventSynchronize(stop_), "hipEventSynchronize"));
    float ms = 0;
    GT_RETURN_IF_ERROR(api_->Check(api_->EventElapsedTime(&ms, start_, stop_), "hipEventElapsedTime"));
    return static_cast<double>(ms);
  }

  void* native_stream() override { return stream_; }

  core::Result<bool> CanAccessPeer(Device& peer) override {
    auto* other = dynamic_cast<HipDevice*>(&peer);
    if (other == nullptr || other == this) return false;
    int can = 0;
    GT_RETURN_IF_ERROR(api_->Check(api_->DeviceCanAccessPeer(&can, index_, other->index_), "hipDeviceCanAccessPeer"));
    return can != 0;
  }

  core::Result<void> CopyFromPeer(DevicePtr dst, Device& peer, DevicePtr src, size_t bytes) override {
    auto* other = dynamic_cast<HipDevice*>(&peer);
    if (other == nullptr) return core::MakeError("peer copy between a HIP device and a device of another runtime");
    GT_RETURN_IF_ERROR(Current());
    if (peers_enabled_.insert(other->index_).second) {
      hipError_t enabled = api_->DeviceEnablePeerAccess(other->index_, 0);
      if (enabled != hipSuccess && enabled != hipErrorPeerAccessAlreadyEnabled) {
        return api_->Check(enabled, "hipDeviceEnablePeerAccess");
      }
    }
    return api_->Check(api_->MemcpyPeerAsync(reinterpret_cast<void*>(dst), index_, reinterpret_cast<const void*>(src),
                                             other->index_, bytes, stream_),
                       "hipMemcpyPeerAsync");
  }

 private:
  static hipDeviceptr_t Ptr(DevicePtr p) { return reinterpret_cast<hipDeviceptr_t>(p); }
  core::Result<void> Current() { return api_->Check(api_->SetDevice(index_), "hipSetDevice"); }

  core::Result<hipFunction_t> Function(const std::string& name) {
    if (auto it = functions_.find(name); it != functions_.end()) return it->second;
    GT_RETURN_IF_ERROR(Current());
    hipFunction_t function = nullptr;
    GT_RETURN_IF_ERROR(api_->Check(api_->ModuleGetFunction(&function, module_, name.c_str()),
                                   fmt::format("hipModuleGetFunction({})", name)));
    functions_[name] = function;
    return function;
  }

  std::shared_ptr<HipApi> api_;
  int index_;
  core::ValidationDevice info_;
  hipStream_t stream_ = nullptr;
  hipEvent_t start_ = nullptr;
  hipEvent_t stop_ = nullptr;
  hipModule_t module_ = nullptr;
  std::map<std::string, hipFunction_t> functions_;
  std::set<int> peers_enabled_;
};

class HipBackend final : public Backend {
 public:
  HipBackend(std::shared_ptr<HipApi> api, int count) : api_(std::move(api)), count_(count) {}
  std::string vendor() const override { return "amd"; }
  std::string library() const override { return api_->lib.path(); }
  int device_count() const override { return count_; }
  core::Result<std::unique_ptr<Device>> Open(int index) override {
    if (index < 0 || index >= count_) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "HIP device {} does not exist ({} device{})", index,
                                 count_, count_ == 1 ? "" : "s");
    }
    auto opened = std::make_unique<HipDevice>(api_, index);
    GT_RETURN_IF_ERROR(opened->Init());
    return std::unique_ptr<Device>(std::move(opened));
  }

 private:
  std::shared_ptr<HipApi> api_;
  int count_;
};

}  // namespace

core::Result<std::unique_ptr<Backend>> LoadHipBackend() {
  if (HipKernels().size == 0) {
    return core::MakeErrorCode(core::ErrorCode::kUnsupported,
                               "this gputriage was built without HIP kernels (hipcc was not found when it was built)");
  }
  GT_ASSIGN_OR_RETURN(std::shared_ptr<HipApi> api, LoadHip());
  hipError_t init = api->Init(0);
  if (init == hipErrorNoDevice || init == hipErrorInvalidDevice) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "the HIP runtime ({}) finds no AMD GPU: hipInit returned {}",
                               api->lib.path(), api->Describe(init));
  }
  if (init != hipSuccess) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "hipInit (from {}): {}", api->lib.path(),
                               api->Describe(init));
  }
  int count = 0;
  hipError_t counted = api->GetDeviceCount(&count);
  if (counted == hipErrorNoDevice || (counted == hipSuccess && count == 0)) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "the HIP runtime ({}) reports no device: {}",
                               api->lib.path(),
                               counted == hipSuccess ? "hipGetDeviceCount gave 0" : api->Describe(counted));
  }
  GT_RETURN_IF_ERROR(api->Check(counted, "hipGetDeviceCount"));
  return std::unique_ptr<Backend>(std::make_unique<HipBackend>(std::move(api), count));
}

#endif  // GT_VALIDATE_HIP

}  // namespace gputriage::validate
