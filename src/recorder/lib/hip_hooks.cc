// HIP: the recorder interposes the HIP runtime's entry points (libamdhip64 is always a shared
// library, so LD_PRELOAD puts these definitions first) and calls the real ones through
// dlsym(RTLD_NEXT). Kernel names come from __hipRegisterFunction, which every hipcc-built
// program calls at start-up for each kernel (host stub -> device symbol), and from
// hipModuleGetFunction for modules loaded at run time. Calls made through a handle of dlopen
// (dlsym(handle, "hipMalloc")) bypass interposition and are not recorded.
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <link.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "recorder/lib/writer.h"

namespace gputriage::recorder {
namespace {

// The real entry point, resolved once per function and kept. The library that holds it is pinned
// (RTLD_NODELETE): a job that loads HIP through a plugin and unloads it again (dlclose of the
// last user unmaps libamdhip64) would otherwise leave the kept pointer aimed at unmapped code, and
// the next call through it would crash the job. Pinned, a later dlopen finds the library still
// loaded; the bundle's note says so.
// The HIP runtime a plugin loaded with RTLD_LOCAL: not in the global scope, so dlsym(RTLD_NEXT)
// misses it, yet the plugin's own calls reach the recorder's definitions. Found among the loaded
// objects by name and opened without loading anything (RTLD_NOLOAD).
// (The path is copied out and opened after dl_iterate_phdr returns: the loader holds a lock
// while it calls back.)
int FindLoadedHip(dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  const char* base = name ? std::strrchr(name, '/') : nullptr;
  base = base ? base + 1 : name;
  if (base == nullptr || std::strncmp(base, "libamdhip64.so", 14) != 0) return 0;
  auto* path = static_cast<char*>(out);
  std::snprintf(path, 4096, "%s", name);
  return 1;
}

void* ResolveNext(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    char path[4096] = "";
    dl_iterate_phdr(FindLoadedHip, path);
    void* hip = path[0] != '\0' ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    if (hip != nullptr) fn = dlsym(hip, name);
  }
  if (fn == nullptr) {
    char reason[160];
    __builtin_snprintf(reason, sizeof reason,
                       "the HIP runtime's %s was found neither by dlsym(RTLD_NEXT) nor in a loaded libamdhip64", name);
    Disable(reason);
    return nullptr;
  }
  Dl_info info{};
  if (dladdr(fn, &info) != 0 && info.dli_fname != nullptr) {
    // RTLD_NOLOAD: only the library already loaded; the handle is never closed (that is the pin).
    if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != nullptr) {
      char note[kReasonBytes];
      __builtin_snprintf(note, sizeof note,
                         "HIP calls via LD_PRELOAD; %s pinned (RTLD_NODELETE): a dlclose cannot unmap what the "
                         "recorder calls",
                         info.dli_fname);
      Note(note);
    }
  }
  SetHook(kHookHip);
  return fn;
}

uint64_t U(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// One call: the time it started, the event to fill, and the write when it returns.
struct Call {
  Event e;
  explicit Call(Api api) {
    e.api = api;
    e.t_ns = Active() ? NowNs() : 0;
  }
  hipError_t Done(hipError_t result) {
    if (e.t_ns != 0) {
      e.result = static_cast<int32_t>(result);
      e.dur_ns = NowNs() - e.t_ns;
      Emit(e);
    }
    return result;
  }
};

// Synchronisations also leave a pending record on entry: a job that hangs inside one (or dies
// in it) shows which call it was waiting in.
struct SyncCall : Call {
  explicit SyncCall(Api api, uint64_t stream) : Call(api) {
    e.stream = stream;
    if (e.t_ns == 0) return;
    Event pending = e;
    pending.flags = kFlagPending;
    Emit(pending);
  }
};

#define GT_REAL(type, name)                                            \
  static const auto real = reinterpret_cast<type>(ResolveNext(#name)); \
  if (real == nullptr) return hipErrorNotSupported

void LaunchShape(Event& e, dim3 grid, dim3 block) {
  e.grid[0] = grid.x, e.grid[1] = grid.y, e.grid[2] = grid.z;
  e.block[0] = block.x, e.block[1] = block.y, e.block[2] = block.z;
}

}  // namespace
}  // namespace gputriage::recorder

using namespace gputriage::recorder;  // NOLINT: the definitions below are the C ABI

extern "C" {

__attribute__((visibility("default"))) void __hipRegisterFunction(void** modules, const void* host_function,
                                                                  char* device_function, const char* device_name,
                                                                  unsigned int thread_limit, void* tid, void* bid,
                                                                  void* block_dim, void* grid_dim, int* wave_size) {
  using Fn = void (*)(void**, const void*, char*, const char*, unsigned int, void*, void*, void*, void*, int*);
  static const auto real = reinterpret_cast<Fn>(ResolveNext("__hipRegisterFunction"));
  if (real != nullptr) {
    real(modules, host_function, device_function, device_name, thread_limit, tid, bid, block_dim, grid_dim, wave_size);
  }
  if (Active() != nullptr && FunctionName(U(host_function)) == 0) {
    RememberFunctionName(U(host_function), InternSymbol(device_name ? device_name : device_function));
  }
}

__attribute__((visibility("default"))) hipError_t hipMalloc(void** ptr, size_t size) {
  GT_REAL(hipError_t(*)(void**, size_t), hipMalloc);
  Call c(Api::hipMalloc);
  hipError_t r = real(ptr, size);
  c.e.ptr = ptr ? U(*ptr) : 0, c.e.size = size;
  return c.Done(r);
}

__attribute__((visibility("default"))) hipError_t hipMallocManaged(void** ptr, size_t size, unsigned int flags) {
  GT_REAL(hipError_t(*)(void**, size_t, unsigned int), hipMallocManaged);
  Call c(Api::hipMallocManaged);
  hipError_t r = real(ptr, size, flags);
  c.e.ptr = ptr ? U(*ptr) : 0, c.e.size = size, c.e.aux = flags;
  return c.Done(r);
}

__attribute__((visibility("default"))) hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags) {
  GT_REAL(hipError_t(*)(void**, size_t, unsigned int), hipHostMalloc);
  Call c(Api::hipHostMalloc);
  hipError_t r = real(ptr, size, flags);
  c.e.ptr = ptr ? U(*ptr) : 0, c.e.size = size, c.e.aux = flags, c.e.flags = kFlagHostMemory;
  return c.Done(r);
}

__attribute__((visibility("default"))) hipError_t hipExtMallocWithFlags(void** ptr, size_t size, unsigned int flags) {
  GT_REAL(hipError_t(*)(void**, size_t, unsigned int), hipExtMallocWithFlags);
  Call c(Api::hipExtMallocWithFlags);
  hipError_t r = real(ptr, size, flags);
  c.e.ptr = ptr ? U(*ptr) : 0, c.e.size = size, c.e.aux = flags;
  return c.Done(r);
}

__attribute__((visibility("default"))) hipError_t hipMallocAsync(void** ptr, size_t size, hipStream_t stream) {
  GT_REAL(hipError_t(*)(void**, size_t, hipStream_t), hipMallocAsync);
  Call c(Api::hipMallocAsync);
  hipError_t r = real(ptr, size, stream);
  c.e.ptr = ptr ? U(*ptr) : 0, c.e.size = size, c.e.stream = U(stream);
  return c.Done(r);
}

__attribute__((visibility("default"))) hipError_t hipFree(void* ptr) {
  GT_REAL(hipError_t(*)(void*), hipFree);
  Call c(Api::hipFree);
  c.e.ptr = U(ptr);
  return c.Done(real(ptr));
}

__attribute__((visibility("default"))) hipError_t hipFreeAsync(void* ptr, hipStream_t stream) {
  GT_REAL(hipError_t(*)(void*, hipStream_t), hipFreeAsync);
  Call c(Api::hipFreeAsync);
  c.e.ptr = U(ptr), c.e.stream = U(stream);
  return c.Done(real(ptr, stream));
}

__attribute__((visibility("default"))) hipError_t hipHostFree(void* ptr) {
  GT_REAL(hipError_t(*)(void*), hipHostFree);
  Call c(Api::hipHostFree);
  c.e.ptr = U(ptr), c.e.flags = kFlagHostMemory;
  return c.Done(real(ptr));
}

__attribute__((visibility("default"))) hipError_t hipMemcpy(void* dst, const void* src, size_t size,
                                                            hipMemcpyKind kind) {
  GT_REAL(hipError_t(*)(void*, const void*, size_t, hipMemcpyKind), hipMemcpy);
  Call c(Api::hipMemcpy);
  c.e.ptr = U(dst), c.e.ptr2 = U(src), c.e.size = size, c.e.aux = static_cast<uint32_t>(kind);
  return c.Done(real(dst, src, size, kind));
}

__attribute__((visibility("default"))) hipError_t hipMemcpyAsync(void* dst, const void* src, size_t size,
                                                                 hipMemcpyKind kind, hipStream_t stream) {
  GT_REAL(hipError_t(*)(void*, const void*, size_t, hipMemcpyKind, hipStream_t), hipMemcpyAsync);
  Call c(Api::hipMemcpyAsync);
  c.e.ptr = U(dst), c.e.ptr2 = U(src), c.e.size = size, c.e.aux = static_cast<uint32_t>(kind), c.e.stream = U(stream);
  return c.Done(real(dst, src, size, kind, stream));
}

__attribute__((visibility("default"))) hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t size) {
  GT_REAL(hipError_t(*)(hipDeviceptr_t, void*, size_t), hipMemcpyHtoD);
  Call c(Api::hipMemcpyHtoD);
  c.e.ptr = U(dst), c.e.ptr2 = U(src), c.e.size = size, c.e.aux = hipMemcpyHostToDevice;
  return c.Done(real(dst, src, size));
}

__attribute__((visibility("default"))) hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t size) {
  GT_REAL(hipError_t(*)(void*, hipDeviceptr_t, size_t), hipMemcpyDtoH);
  Call c(Api::hipMemcpyDtoH);
  c.e.ptr = U(dst), c.e.ptr2 = U(src), c.e.size = size, c.e.aux = hipMemcpyDeviceToHost;
  return c.Done(real(dst, src, size));
}

__attribute__((visibility("default"))) hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t size) {
  GT_REAL(hipError_t(*)(hipDeviceptr_t, hipDeviceptr_t, size_t), hipMemcpyDtoD);
  Call c(Api::hipMemcpyDtoD);
  c.e.ptr = U(dst), c.e.ptr2 = U(src), c.e.size = size, c.e.aux = hipMemcpyDeviceToDevice;
  return c.Done(real(dst, src, size));
}

__attribute__((visibility("default"))) hipError_t hipMemset(void* dst, int value, size_t size) {
  GT_REAL(hipError_t(*)(void*, int, size_t), hipMemset);
  Call c(Api::hipMemset);
  c.e.ptr = U(dst), c.e.size = size, c.e.aux = static_cast<uint32_t>(value);
  return c.Done(real(dst, value, size));
}

__attribute__((visibility("default"))) hipError_t hipMemsetAsync(void* dst, int value, size_t size,
                                                                 hipStream_t stream) {
  GT_REAL(hipError_t(*)(void*, int, size_t, hipStream_t), hipMemsetAsync);
  Call c(Api::hipMemsetAsync);
  c.e.ptr = U(dst), c.e.size = size, c.e.aux = static_cast<uint32_t>(value), c.e.stream = U(stream);
  return c.Done(real(dst, value, size, stream));
}

__attribute__((visibility("default"))) hipError_t hipLaunchKernel(const void* function, dim3 grid, dim3 block,
                                                                  void** args, size_t shmem, hipStream_t stream) {
  GT_REAL(hipError_t(*)(const void*, dim3, dim3, void**, size_t, hipStream_t), hipLaunchKernel);
  Call c(Api::hipLaunchKernel);
  c.e.ptr = U(function), c.e.name = FunctionName(U(function)), c.e.shmem = static_cast<uint32_t>(shmem);
  c.e.stream = U(stream);
  LaunchShape(c.e, grid, block);
  return c.Done(real(function, grid, block, args, shmem, stream));
}

// A `kernel<<<grid, block, shmem, stream>>>(...)` launch first pushes its configuration; when
// that fails (no device, a bad stream), the compiler-generated code skips the kernel's stub and
// hipLaunchKernel is never called: this record is the only trace of the launch.
__attribute__((visibility("default"))) hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shmem,
                                                                             hipStream_t stream) {
  GT_REAL(hipError_t(*)(dim3, dim3, size_t, hipStream_t), __hipPushCallConfiguration);
  hipError_t r = real(grid, block, shmem, stream);
  if (r == hipSuccess) return r;  // the launch itself is recorded by hipLaunchKernel
  Call c(Api::__hipPushCallConfiguration);
  c.e.shmem = static_cast<uint32_t>(shmem), c.e.stream = U(stream);
  LaunchShape(c.e, grid, block);
  return c.Done(r);
}

__attribute__((visibility("default"))) hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module,
                                                                       const char* name) {
  GT_REAL(hipError_t(*)(hipFunction_t*, hipModule_t, const char*), hipModuleGetFunction);
  hipError_t r = real(function, module, name);
  if (r == hipSuccess && function != nullptr && Active() != nullptr && FunctionName(U(*function)) == 0) {
    RememberFunctionName(U(*function), InternSymbol(name));
  }
  return r;
}

__attribute__((visibility("default"))) hipError_t hipModuleLaunchKernel(
    hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
    unsigned int bz, unsigned int shmem, hipStream_t stream, void** params, void** extra) {
  GT_REAL(hipError_t(*)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        hipStream_t, void**, void**),
          hipModuleLaunchKernel);
  Call c(Api::hipModuleLaunchKernel);
  c.e.ptr = U(f), c.e.name = FunctionName(U(f)), c.e.shmem = shmem, c.e.stream = U(stream);
  LaunchShape(c.e, dim3(gx, gy, gz), dim3(bx, by, bz));
  return c.Done(real(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra));
}

__attribute__((visibility("default"))) hipError_t hipDeviceSynchronize() {
  GT_REAL(hipError_t(*)(), hipDeviceSynchronize);
  SyncCall c(Api::hipDeviceSynchronize, 0);
  return c.Done(real());
}

__attribute__((visibility("default"))) hipError_t hipStreamSynchronize(hipStream_t stream) {
  GT_REAL(hipError_t(*)(hipStream_t), hipStreamSynchronize);
  SyncCall c(Api::hipStreamSynchronize, U(stream));
  return c.Done(real(stream));
}

__attribute__((visibility("default"))) hipError_t hipEventSynchronize(hipEvent_t event) {
  GT_REAL(hipError_t(*)(hipEvent_t), hipEventSynchronize);
  SyncCall c(Api::hipEventSynchronize, 0);
  c.e.ptr = U(event);
  return c.Done(real(event));
}

__attribute__((visibility("default"))) hipError_t hipModuleLoad(hipModule_t* module, const char* fname) {
  GT_REAL(hipError_t(*)(hipModule_t*, const char*), hipModuleLoad);
  Call c(Api::hipModuleLoad);
  hipError_t r = real(module, fname);
  c.e.ptr = module ? U(*module) : 0, c.e.name = fname ? InternName(fname) : 0;
  return c.Done(r);
}

__attribute__((visibility("default"))) hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  GT_REAL(hipError_t(*)(hipModule_t*, const void*), hipModuleLoadData);
  Call c(Api::hipModuleLoadData);
  hipError_t r = real(module, image);
  c.e.ptr = module ? U(*module) : 0, c.e.ptr2 = U(image);
  return c.Done(r);
}

__attribute__((visibility("default"))) hipError_t hipModuleLoadDataEx(hipModule_t* module, const void* image,
                                                                      unsigned int n, hipJitOption* options,
                                                                      void** values) {
  GT_REAL(hipError_t(*)(hipModule_t*, const void*, unsigned int, hipJitOption*, void**), hipModuleLoadDataEx);
  Call c(Api::hipModuleLoadDataEx);
  hipError_t r = real(module, image, n, options, values);
  c.e.ptr = module ? U(*module) : 0, c.e.ptr2 = U(image);
  return c.Done(r);
}

__attribute__((visibility("default"))) hipError_t hipGraphLaunch(hipGraphExec_t graph, hipStream_t stream) {
  GT_REAL(hipError_t(*)(hipGraphExec_t, hipStream_t), hipGraphLaunch);
  Call c(Api::hipGraphLaunch);
  c.e.ptr = U(graph), c.e.stream = U(stream);
  return c.Done(real(graph, stream));
}

}  // extern "C"
