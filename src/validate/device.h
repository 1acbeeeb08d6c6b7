// The device layer of `validate`: one interface over the two vendor runtimes, each loaded at run
// time with dlopen (CUDA's driver API from libcuda.so.1, HIP's runtime from libamdhip64.so), so
// the binary runs on a machine with either, both or neither. A backend opens devices; a device
// allocates, copies, launches gputriage's own kernels (built at build time by nvcc and hipcc and
// embedded in the binary) on one stream, and times work with the runtime's events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/validation.h"

namespace gputriage::validate {

using DevicePtr = uint64_t;

/// A runtime call's failure: the call, the runtime's error name and text ("cuLaunchKernel:
/// CUDA_ERROR_INVALID_VALUE (invalid argument)") in `message`, the raw code kept for checks that
/// expect one.
struct DeviceError {
  std::string message;
  int code = 0;
  std::string name;  ///< "CUDA_ERROR_INVALID_VALUE", "hipErrorInvalidConfiguration"
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct MemoryInfo {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

/// Limits of one compiled kernel on this device.
struct KernelAttributes {
  int max_threads_per_block = 0;
  int registers_per_thread = 0;
  int static_shared_bytes = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const core::ValidationDevice& info() const = 0;

  // Each call returns a DeviceError naming the runtime call on failure.
  virtual core::Result<DevicePtr> Alloc(size_t bytes) = 0;
  virtual void Free(DevicePtr ptr) = 0;
  virtual core::Result<void*> AllocPinned(size_t bytes) = 0;
  virtual void FreePinned(void* ptr) = 0;
  virtual core::Result<void> CopyToDevice(DevicePtr dst, const void* src, size_t bytes) = 0;
  virtual core::Result<void> CopyToHost(void* dst, DevicePtr src, size_t bytes) = 0;
  /// Asynchronous on the device's stream (the host memory must be pinned to be asynchronous).
  virtual core::Result<void> CopyToDeviceAsync(DevicePtr dst, const void* src, size_t bytes) = 0;
  virtual core::Result<void> CopyToHostAsync(void* dst, DevicePtr src, size_t bytes) = 0;
  virtual core::Result<void> Memset(DevicePtr dst, uint8_t value, size_t bytes) = 0;
  virtual core::Result<MemoryInfo> Memory() = 0;

  /// Launches the embedded kernel `name` on the device's stream. `args` points at each argument.
  core::Result<void> Launch(const std::string& name, Dim3 grid, Dim3 block, unsigned shared_bytes,
                            std::vector<void*> args) {
    DeviceError status = LaunchStatus(name, grid, block, shared_bytes, std::move(args));
    if (status.code == 0) return {};
    return core::Error{status.message};
  }
  /// The launch's own status (code 0: launched), kept apart so a limit check can look at the code.
  virtual DeviceError LaunchStatus(const std::string& name, Dim3 grid, Dim3 block, unsigned shared_bytes,
                                   std::vector<void*> args) = 0;
  virtual core::Result<KernelAttributes> Attributes(const std::string& name) = 0;
  /// Allows `bytes` of dynamic shared memory for `name` (NVIDIA's opt-in; a no-op where none is needed).
  virtual core::Result<void> AllowSharedMemory(const std::string& name, int bytes) = 0;
  virtual core::Result<void> Synchronize() = 0;
  /// Runs `work` (which enqueues on the stream) between two events; milliseconds between them.
  virtual core::Result<double> TimeMs(const std::function<core::Result<void>()>& work) = 0;
  /// The native stream handle (CUstream / hipStream_t), for the vendor libraries.
  virtual void* native_stream() = 0;
  /// Whether this device can read `peer`'s memory directly (same runtime, peer access possible).
  virtual core::Result<bool> CanAccessPeer(Device& peer) = 0;
  /// Enables peer access (once) and copies `bytes` from `src` on `peer` to `dst` on this device,
  /// asynchronously on this device's stream (cuMemcpyPeerAsync / hipMemcpyPeerAsync).
  virtual core::Result<void> CopyFromPeer(DevicePtr dst, Device& peer, DevicePtr src, size_t bytes) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string vendor() const = 0;   ///< "nvidia" | "amd"
  virtual std::string library() const = 0;  ///< the file the runtime was loaded from
  virtual int device_count() const = 0;
  /// Opens device `index` (0-based, the runtime's order) and loads the embedded kernels on it.
  virtual core::Result<std::unique_ptr<Device>> Open(int index) = 0;
};

/// Loads libcuda.so.1 and initialises it. An error says why there is no CUDA device to use: the
/// library missing, the driver not loaded, no device, or a build without CUDA kernels.
core::Result<std::unique_ptr<Backend>> LoadCudaBackend();
/// Loads libamdhip64.so (ROCm 5 or 6) and initialises it; an error says why there is no HIP device.
core::Result<std::unique_ptr<Backend>> LoadHipBackend();

/// What the two builds of the kernels hold (empty when the compiler was not there at build time).
struct EmbeddedKernels {
  const unsigned char* data = nullptr;
  size_t size = 0;
  std::string targets;  ///< "sm_75 sm_80 ... compute_75" / "gfx906 gfx908 gfx90a gfx1030"
};
EmbeddedKernels CudaKernels();
EmbeddedKernels HipKernels();

}  // namespace gputriage::validate
