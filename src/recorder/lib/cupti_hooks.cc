// NVIDIA: the recorder is loaded by the CUDA driver itself (CUDA_INJECTION64_PATH names this
// library; the driver calls InitializeInjection when the job initialises CUDA) and subscribes to
// CUPTI's callbacks for the driver API. Every runtime call reaches the driver, so programs that
// link the CUDA runtime statically (nvcc's default) and frameworks that fetch driver entry points
// with cuGetProcAddress (PyTorch, Triton) are seen alike — which interposing cuda* symbols with
// LD_PRELOAD would miss. Only the callbacks below are enabled: a disabled callback costs the
// driver a flag test.
//
// libcupti is loaded with dlopen from $GPUTRIAGE_RECORD_CUPTI (gputriage finds it), else by name;
// when it is missing, refuses (another subscriber, a driver it does not support) or reports an
// error, the recorder switches itself off with one warning and the job runs untouched.
#include <cupti.h>
#include <dlfcn.h>

#include <cxxabi.h>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "recorder/lib/writer.h"

namespace gputriage::recorder {
namespace {

using SubscribeFn = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
using EnableCallbackFn = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
using ResultStringFn = CUptiResult (*)(CUptiResult, const char**);
using EnableDomainFn = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);

struct Cbid {
  CUpti_CallbackId cbid;
  Api api;
};

#define GT_CBID(name) \
  { CUPTI_DRIVER_TRACE_CBID_##name, Api::name }
constexpr Cbid kCallbacks[] = {
    GT_CBID(cuMemAlloc_v2),
    GT_CBID(cuMemAllocManaged),
    GT_CBID(cuMemAllocHost_v2),
    GT_CBID(cuMemHostAlloc),
    GT_CBID(cuMemAllocAsync),
    GT_CBID(cuMemAllocAsync_ptsz),
    GT_CBID(cuMemAllocFromPoolAsync),
    GT_CBID(cuMemAllocFromPoolAsync_ptsz),
    GT_CBID(cuMemAllocPitch_v2),
    GT_CBID(cuMemFree_v2),
    GT_CBID(cuMemFreeHost),
    GT_CBID(cuMemFreeAsync),
    GT_CBID(cuMemFreeAsync_ptsz),
    GT_CBID(cuMemcpy),
    GT_CBID(cuMemcpyAsync),
    GT_CBID(cuMemcpy_ptds),
    GT_CBID(cuMemcpyAsync_ptsz),
    GT_CBID(cuMemcpyHtoD_v2),
    GT_CBID(cuMemcpyDtoH_v2),
    GT_CBID(cuMemcpyDtoD_v2),
    GT_CBID(cuMemcpyHtoDAsync_v2),
    GT_CBID(cuMemcpyDtoHAsync_v2),
    GT_CBID(cuMemcpyDtoDAsync_v2),
    GT_CBID(cuMemcpyHtoD_v2_ptds),
    GT_CBID(cuMemcpyDtoH_v2_ptds),
    GT_CBID(cuMemcpyDtoD_v2_ptds),
    GT_CBID(cuMemcpyHtoDAsync_v2_ptsz),
    GT_CBID(cuMemcpyDtoHAsync_v2_ptsz),
    GT_CBID(cuMemcpyDtoDAsync_v2_ptsz),
    GT_CBID(cuMemsetD8_v2),
    GT_CBID(cuMemsetD32_v2),
    GT_CBID(cuMemsetD8Async),
    GT_CBID(cuMemsetD32Async),
    GT_CBID(cuMemsetD8_v2_ptds),
    GT_CBID(cuMemsetD32_v2_ptds),
    GT_CBID(cuMemsetD8Async_ptsz),
    GT_CBID(cuMemsetD32Async_ptsz),
    GT_CBID(cuLaunchKernel),
    GT_CBID(cuLaunchKernel_ptsz),
    GT_CBID(cuLaunchKernelEx),
    GT_CBID(cuLaunchKernelEx_ptsz),
    GT_CBID(cuLaunchCooperativeKernel),
    GT_CBID(cuLaunchCooperativeKernel_ptsz),
    GT_CBID(cuCtxSynchronize),
    GT_CBID(cuCtxSynchronize_v2),  // CUDA 13's runtime synchronises the device through this one
    GT_CBID(cuStreamSynchronize),
    GT_CBID(cuStreamSynchronize_ptsz),
    GT_CBID(cuEventSynchronize),
    GT_CBID(cuModuleLoad),
    GT_CBID(cuModuleLoadData),
    GT_CBID(cuModuleLoadDataEx),
    GT_CBID(cuModuleLoadFatBinary),
    GT_CBID(cuLibraryLoadData),
    GT_CBID(cuLibraryLoadFromFile),
    GT_CBID(cuGraphLaunch),
    GT_CBID(cuGraphLaunch_ptsz),
    // An instantiation lists the graph's kernels once (RememberGraph), for its launches.
    GT_CBID(cuGraphInstantiateWithFlags),
    GT_CBID(cuGraphInstantiateWithParams),
    GT_CBID(cuGraphInstantiateWithParams_ptsz),
    GT_CBID(cuGraphInstantiate_v2),
    // Looking up a kernel is where a module without code for this GPU fails ("no kernel image":
    // the runtime returns the error from its launch call without reaching cuLaunchKernel).
    GT_CBID(cuModuleGetFunction),
    GT_CBID(cuLibraryGetKernel),
    GT_CBID(cuLibraryGetModule),
    GT_CBID(cuKernelGetFunction),
    GT_CBID(cuFuncSetAttribute),
    GT_CBID(cuKernelSetAttribute),
};
#undef GT_CBID

// cbid -> Api, filled once at initialisation (cbids are small integers).
constexpr size_t kMaxCbid = 1024;
Api g_api_of[kMaxCbid];

uint64_t U(const void* p) { return reinterpret_cast<uintptr_t>(p); }

template <class P>
void Launch(Event& e, const P* p, const char* symbol) {
  e.ptr = U(p->f);
  e.grid[0] = p->gridDimX, e.grid[1] = p->gridDimY, e.grid[2] = p->gridDimZ;
  e.block[0] = p->blockDimX, e.block[1] = p->blockDimY, e.block[2] = p->blockDimZ;
  e.shmem = p->sharedMemBytes;
  e.stream = U(p->hStream);
  e.name = FunctionName(e.ptr);
  if (e.name == 0 && symbol != nullptr) {
    e.name = InternSymbol(symbol);
    RememberFunctionName(e.ptr, e.name);
  }
}

template <class P>
void LaunchEx(Event& e, const P* p, const char* symbol) {
  const CUlaunchConfig* c = p->config;
  e.ptr = U(p->f);
  if (c != nullptr) {
    e.grid[0] = c->gridDimX, e.grid[1] = c->gridDimY, e.grid[2] = c->gridDimZ;
    e.block[0] = c->blockDimX, e.block[1] = c->blockDimY, e.block[2] = c->blockDimZ;
    e.shmem = c->sharedMemBytes;
    e.stream = U(c->hStream);
  }
  e.name = FunctionName(e.ptr);
  if (e.name == 0 && symbol != nullptr) {
    e.name = InternSymbol(symbol);
    RememberFunctionName(e.ptr, e.name);
  }
}

// The kernels of a graph, for its instantiation and its launches: the driver's own graph calls,
// looked up in the already loaded libcuda (no callback is enabled for them, so no recursion).
struct GraphApi {
  CUresult (*get_nodes)(CUgraph, CUgraphNode*, size_t*) = nullptr;
  CUresult (*node_type)(CUgraphNode, CUgraphNodeType*) = nullptr;
  CUresult (*kernel_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*child_graph)(CUgraphNode, CUgraph*) = nullptr;
  CUresult (*func_name)(const char**, CUfunction) = nullptr;
  CUresult (*kernel_name)(const char**, CUkernel) = nullptr;
};

const GraphApi& Graph() {
  static const GraphApi api = [] {
    GraphApi g;
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda == nullptr) return g;
    g.get_nodes = reinterpret_cast<decltype(g.get_nodes)>(dlsym(cuda, "cuGraphGetNodes"));
    g.node_type = reinterpret_cast<decltype(g.node_type)>(dlsym(cuda, "cuGraphNodeGetType"));
    g.kernel_params = reinterpret_cast<decltype(g.kernel_params)>(dlsym(cuda, "cuGraphKernelNodeGetParams_v2"));
    g.child_graph = reinterpret_cast<decltype(g.child_graph)>(dlsym(cuda, "cuGraphChildGraphNodeGetGraph"));
    g.func_name = reinterpret_cast<decltype(g.func_name)>(dlsym(cuda, "cuFuncGetName"));
    g.kernel_name = reinterpret_cast<decltype(g.kernel_name)>(dlsym(cuda, "cuKernelGetName"));
    return g;
  }();
  return api;
}

// Appends the demangled names of `graph`'s kernel nodes (child graphs included, 3 levels deep),
// one per line, to `out` (at most `cap` bytes). Allocates: called from the driver's callback for
// an instantiation, not from a signal handler.
void GraphKernels(CUgraph graph, int depth, std::string& out, size_t cap) {
  const GraphApi& g = Graph();
  if (graph == nullptr || depth > 3 || !g.get_nodes || !g.node_type || !g.kernel_params) return;
  size_t count = 0;
  if (g.get_nodes(graph, nullptr, &count) != CUDA_SUCCESS || count == 0) return;
  if (count > 4096) count = 4096;
  std::vector<CUgraphNode> nodes(count);
  if (g.get_nodes(graph, nodes.data(), &count) != CUDA_SUCCESS) return;
  for (size_t i = 0; i < count && out.size() < cap; ++i) {
    CUgraphNodeType type;
    if (g.node_type(nodes[i], &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH && g.child_graph) {
      CUgraph child = nullptr;
      if (g.child_graph(nodes[i], &child) == CUDA_SUCCESS) GraphKernels(child, depth + 1, out, cap);
      continue;
    }
    if (type != CU_GRAPH_NODE_TYPE_KERNEL) continue;
    CUDA_KERNEL_NODE_PARAMS params{};
    if (g.kernel_params(nodes[i], &params) != CUDA_SUCCESS) continue;
    const char* name = nullptr;
    if (params.func != nullptr && g.func_name) g.func_name(&name, params.func);
    if (name == nullptr && params.kern != nullptr && g.kernel_name) g.kernel_name(&name, params.kern);
    int status = 0;
    char* demangled = name ? abi::__cxa_demangle(name, nullptr, nullptr, &status) : nullptr;
    if (!out.empty()) out += '\n';
    out += demangled && status == 0 ? demangled : (name ? name : "(unnamed kernel)");
    std::free(demangled);
  }
}

// Remembers the kernels of a graph just instantiated under its executable graph's handle.
void RememberGraph(Event& e, CUgraphExec* exec, CUgraph graph) {
  if (e.result != CUDA_SUCCESS || exec == nullptr || *exec == nullptr) return;
  e.ptr = U(*exec);
  std::string kernels;
  GraphKernels(graph, 0, kernels, 16u << 10);
  if (kernels.empty()) return;
  e.name = InternName(kernels);
  RememberFunctionName(e.ptr, e.name);
}

// Fills the event from the call's parameters (on exit: out-pointers hold their results).
void Describe(Event& e, CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  const void* p = cb->functionParams;
  switch (cbid) {
#define GT_ALLOC_DPTR(name)                                                      \
  case CUPTI_DRIVER_TRACE_CBID_##name: {                                         \
    auto* a = static_cast<const name##_params*>(p);                              \
    e.ptr = a->dptr ? static_cast<uint64_t>(*a->dptr) : 0, e.size = a->bytesize; \
    break;                                                                       \
  }
    GT_ALLOC_DPTR(cuMemAlloc_v2)
    GT_ALLOC_DPTR(cuMemAllocManaged)
    GT_ALLOC_DPTR(cuMemAllocAsync)
    GT_ALLOC_DPTR(cuMemAllocAsync_ptsz)
    GT_ALLOC_DPTR(cuMemAllocFromPoolAsync)
    GT_ALLOC_DPTR(cuMemAllocFromPoolAsync_ptsz)
#undef GT_ALLOC_DPTR
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      auto* a = static_cast<const cuMemAllocPitch_v2_params*>(p);
      e.ptr = a->dptr ? static_cast<uint64_t>(*a->dptr) : 0;
      e.size = (a->pPitch ? *a->pPitch : a->WidthInBytes) * a->Height;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      auto* a = static_cast<const cuMemAllocHost_v2_params*>(p);
      e.ptr = a->pp ? U(*a->pp) : 0, e.size = a->bytesize, e.flags = kFlagHostMemory;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      auto* a = static_cast<const cuMemHostAlloc_params*>(p);
      e.ptr = a->pp ? U(*a->pp) : 0, e.size = a->bytesize, e.aux = a->Flags, e.flags = kFlagHostMemory;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      e.ptr = static_cast<const cuMemFree_v2_params*>(p)->dptr;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      e.ptr = U(static_cast<const cuMemFreeHost_params*>(p)->p), e.flags = kFlagHostMemory;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
      e.ptr = static_cast<const cuMemFreeAsync_params*>(p)->dptr;
      e.stream = U(static_cast<const cuMemFreeAsync_params*>(p)->hStream);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      e.ptr = static_cast<const cuMemFreeAsync_ptsz_params*>(p)->dptr;
      e.stream = U(static_cast<const cuMemFreeAsync_ptsz_params*>(p)->hStream);
      break;
#define GT_COPY(name, dstf, srcf, kind)                                                             \
  case CUPTI_DRIVER_TRACE_CBID_##name: {                                                            \
    auto* a = static_cast<const name##_params*>(p);                                                 \
    e.ptr = (uint64_t)(a->dstf), e.ptr2 = (uint64_t)(a->srcf), e.size = a->ByteCount, e.aux = kind; \
    break;                                                                                          \
  }
#define GT_COPY_ASYNC(name, dstf, srcf, kind)                                                       \
  case CUPTI_DRIVER_TRACE_CBID_##name: {                                                            \
    auto* a = static_cast<const name##_params*>(p);                                                 \
    e.ptr = (uint64_t)(a->dstf), e.ptr2 = (uint64_t)(a->srcf), e.size = a->ByteCount, e.aux = kind; \
    e.stream = U(a->hStream);                                                                       \
    break;                                                                                          \
  }
      // aux: 1 host to device, 2 device to host, 3 device to device, 4 unified (cudaMemcpyKind).
      GT_COPY(cuMemcpy, dst, src, 4)
      GT_COPY(cuMemcpy_ptds, dst, src, 4)
      GT_COPY_ASYNC(cuMemcpyAsync, dst, src, 4)
      GT_COPY_ASYNC(cuMemcpyAsync_ptsz, dst, src, 4)
      GT_COPY(cuMemcpyHtoD_v2, dstDevice, srcHost, 1)
      GT_COPY(cuMemcpyHtoD_v2_ptds, dstDevice, srcHost, 1)
      GT_COPY(cuMemcpyDtoH_v2, dstHost, srcDevice, 2)
      GT_COPY(cuMemcpyDtoH_v2_ptds, dstHost, srcDevice, 2)
      GT_COPY(cuMemcpyDtoD_v2, dstDevice, srcDevice, 3)
      GT_COPY(cuMemcpyDtoD_v2_ptds, dstDevice, srcDevice, 3)
      GT_COPY_ASYNC(cuMemcpyHtoDAsync_v2, dstDevice, srcHost, 1)
      GT_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, dstDevice, srcHost, 1)
      GT_COPY_ASYNC(cuMemcpyDtoHAsync_v2, dstHost, srcDevice, 2)
      GT_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, dstHost, srcDevice, 2)
      GT_COPY_ASYNC(cuMemcpyDtoDAsync_v2, dstDevice, srcDevice, 3)
      GT_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, dstDevice, srcDevice, 3)
#undef GT_COPY
#undef GT_COPY_ASYNC
#define GT_SET(name, width)                         \
  case CUPTI_DRIVER_TRACE_CBID_##name: {            \
    auto* a = static_cast<const name##_params*>(p); \
    e.ptr = a->dstDevice, e.size = a->N * (width);  \
    break;                                          \
  }
#define GT_SET_ASYNC(name, width)                                            \
  case CUPTI_DRIVER_TRACE_CBID_##name: {                                     \
    auto* a = static_cast<const name##_params*>(p);                          \
    e.ptr = a->dstDevice, e.size = a->N * (width), e.stream = U(a->hStream); \
    break;                                                                   \
  }
      GT_SET(cuMemsetD8_v2, 1)
      GT_SET(cuMemsetD8_v2_ptds, 1)
      GT_SET(cuMemsetD32_v2, 4)
      GT_SET(cuMemsetD32_v2_ptds, 4)
      GT_SET_ASYNC(cuMemsetD8Async, 1)
      GT_SET_ASYNC(cuMemsetD8Async_ptsz, 1)
      GT_SET_ASYNC(cuMemsetD32Async, 4)
      GT_SET_ASYNC(cuMemsetD32Async_ptsz, 4)
#undef GT_SET
#undef GT_SET_ASYNC
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      Launch(e, static_cast<const cuLaunchKernel_params*>(p), cb->symbolName);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      Launch(e, static_cast<const cuLaunchKernel_ptsz_params*>(p), cb->symbolName);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      Launch(e, static_cast<const cuLaunchCooperativeKernel_params*>(p), cb->symbolName);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      Launch(e, static_cast<const cuLaunchCooperativeKernel_ptsz_params*>(p), cb->symbolName);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      LaunchEx(e, static_cast<const cuLaunchKernelEx_params*>(p), cb->symbolName);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      LaunchEx(e, static_cast<const cuLaunchKernelEx_ptsz_params*>(p), cb->symbolName);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
      e.stream = U(static_cast<const cuStreamSynchronize_params*>(p)->hStream);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      e.stream = U(static_cast<const cuStreamSynchronize_ptsz_params*>(p)->hStream);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      e.ptr = U(static_cast<const cuEventSynchronize_params*>(p)->hEvent);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad: {
      auto* a = static_cast<const cuModuleLoad_params*>(p);
      e.ptr = a->module ? U(*a->module) : 0, e.name = a->fname ? InternName(a->fname) : 0;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData: {
      auto* a = static_cast<const cuModuleLoadData_params*>(p);
      e.ptr = a->module ? U(*a->module) : 0, e.ptr2 = U(a->image);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx: {
      auto* a = static_cast<const cuModuleLoadDataEx_params*>(p);
      e.ptr = a->module ? U(*a->module) : 0, e.ptr2 = U(a->image);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary: {
      auto* a = static_cast<const cuModuleLoadFatBinary_params*>(p);
      e.ptr = a->module ? U(*a->module) : 0, e.ptr2 = U(a->fatCubin);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData: {
      auto* a = static_cast<const cuLibraryLoadData_params*>(p);
      e.ptr = a->library ? U(*a->library) : 0, e.ptr2 = U(a->code);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile: {
      auto* a = static_cast<const cuLibraryLoadFromFile_params*>(p);
      e.ptr = a->library ? U(*a->library) : 0, e.name = a->fileName ? InternName(a->fileName) : 0;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
      e.ptr = U(static_cast<const cuGraphLaunch_params*>(p)->hGraph);
      e.stream = U(static_cast<const cuGraphLaunch_params*>(p)->hStream);
      e.name = FunctionName(e.ptr);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      e.ptr = U(static_cast<const cuGraphLaunch_ptsz_params*>(p)->hGraphExec);
      e.stream = U(static_cast<const cuGraphLaunch_ptsz_params*>(p)->hStream);
      e.name = FunctionName(e.ptr);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags: {
      auto* a = static_cast<const cuGraphInstantiateWithFlags_params*>(p);
      RememberGraph(e, a->phGraphExec, a->hGraph);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams: {
      auto* a = static_cast<const cuGraphInstantiateWithParams_params*>(p);
      RememberGraph(e, a->phGraphExec, a->hGraph);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
      auto* a = static_cast<const cuGraphInstantiateWithParams_ptsz_params*>(p);
      RememberGraph(e, a->phGraphExec, a->hGraph);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2: {
      auto* a = static_cast<const cuGraphInstantiate_v2_params*>(p);
      RememberGraph(e, a->phGraphExec, a->hGraph);
      break;
    }
    // The kernel's name, for a lookup that failed (interning it on every successful lookup
    // would fill the name area for nothing).
    case CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction: {
      auto* a = static_cast<const cuModuleGetFunction_params*>(p);
      e.ptr2 = U(a->hmod);
      if (e.result != CUDA_SUCCESS && a->name != nullptr) e.name = InternSymbol(a->name);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel: {
      auto* a = static_cast<const cuLibraryGetKernel_params*>(p);
      e.ptr2 = U(a->library);
      if (e.result != CUDA_SUCCESS && a->name != nullptr) e.name = InternSymbol(a->name);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction:
      e.ptr2 = U(static_cast<const cuKernelGetFunction_params*>(p)->kernel);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuFuncSetAttribute: {
      auto* a = static_cast<const cuFuncSetAttribute_params*>(p);
      e.ptr2 = U(a->hfunc), e.aux = static_cast<uint32_t>(a->attrib), e.size = static_cast<uint64_t>(a->value);
      if (e.result != CUDA_SUCCESS) e.name = FunctionName(e.ptr2);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuKernelSetAttribute: {
      auto* a = static_cast<const cuKernelSetAttribute_params*>(p);
      e.ptr2 = U(a->kernel), e.aux = static_cast<uint32_t>(a->attrib), e.size = static_cast<uint64_t>(a->val);
      break;
    }
    default:
      break;
  }
}

// The interned name of a driver entry point outside kCallbacks (GPUTRIAGE_RECORD_DRIVER_ALL),
// once per callback id.
std::atomic<uint32_t> g_other_name[kMaxCbid];  // indexed by cbid, checked against kMaxCbid in OnDriverCall

uint32_t OtherName(CUpti_CallbackId cbid, const char* function) {
  uint32_t name = g_other_name[cbid].load(std::memory_order_acquire);
  if (name != 0 || function == nullptr) return name;
  name = InternName(function);
  g_other_name[cbid].store(name, std::memory_order_release);  // a race interns it twice: harmless
  return name;
}

bool g_bench_cupti_only = false;

void CUPTIAPI OnDriverCall(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= kMaxCbid || Active() == nullptr) return;
  if (g_bench_cupti_only) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  Api api = g_api_of[cbid];
  if (api == Api::kUnknown) {
    // Another entry point (GPUTRIAGE_RECORD_DRIVER_ALL): only its failures are recorded.
    if (cb->callbackSite != CUPTI_API_EXIT || cb->functionReturnValue == nullptr) return;
    auto result = static_cast<int32_t>(*static_cast<const CUresult*>(cb->functionReturnValue));
    if (result == CUDA_SUCCESS) return;
    Event e;
    e.api = Api::cuDriverCall, e.t_ns = NowNs(), e.result = result, e.aux = cbid;
    e.name = OtherName(cbid, cb->functionName);
    Emit(e);
    return;
  }
  if (cb->callbackSite == CUPTI_API_ENTER) {
    uint64_t now = NowNs();
    if (cb->correlationData != nullptr) *cb->correlationData = now;
    if (DescribeApi(static_cast<uint16_t>(api)).kind == ApiKind::kSync) {
      Event pending;
      pending.api = api, pending.t_ns = now, pending.flags = kFlagPending;
      Describe(pending, cbid, cb);
      Emit(pending);
    }
    return;
  }
  Event e;
  e.api = api;
  uint64_t now = NowNs();
  e.t_ns = cb->correlationData != nullptr && *cb->correlationData != 0 ? *cb->correlationData : now;
  e.dur_ns = now - e.t_ns;
  e.result = cb->functionReturnValue ? static_cast<int32_t>(*static_cast<const CUresult*>(cb->functionReturnValue)) : 0;
  Describe(e, cbid, cb);
  Emit(e);
}

bool g_initialized = false;

}  // namespace
}  // namespace gputriage::recorder

using namespace gputriage::recorder;  // NOLINT: the entry point below is the C ABI

// Called by the CUDA driver (CUDA_INJECTION64_PATH) when the job initialises CUDA. Returns 1:
// the driver treats 0 as a failed injection and says so, which must not happen to the job
// because of the recorder — a recorder that cannot work switches itself off instead.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (g_initialized || Active() == nullptr) return 1;
  g_initialized = true;
  const char* path = std::getenv(kEnvCupti);
  const char* name = path != nullptr && *path != '\0' ? path : "libcupti.so";
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    char reason[kReasonBytes];
    std::snprintf(reason, sizeof reason, "CUPTI not loaded (%s): %s", name, dlerror());
    Disable(reason);
    return 1;
  }
  auto subscribe = reinterpret_cast<SubscribeFn>(dlsym(lib, "cuptiSubscribe"));
  auto enable = reinterpret_cast<EnableCallbackFn>(dlsym(lib, "cuptiEnableCallback"));
  auto result_string = reinterpret_cast<ResultStringFn>(dlsym(lib, "cuptiGetResultString"));
  if (subscribe == nullptr || enable == nullptr) {
    Disable("CUPTI loaded but cuptiSubscribe/cuptiEnableCallback are missing");
    return 1;
  }
  for (const Cbid& c : kCallbacks) {
    if (c.cbid < kMaxCbid) g_api_of[c.cbid] = c.api;
  }
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult r = subscribe(&subscriber, OnDriverCall, nullptr);
  if (r != CUPTI_SUCCESS) {
    const char* text = "unknown";
    if (result_string) result_string(r, &text);
    char reason[kReasonBytes];
    std::snprintf(reason, sizeof reason, "cuptiSubscribe failed (%d, %s): another CUPTI tool in the job?",
                  static_cast<int>(r), text);
    Disable(reason);
    return 1;
  }
  for (const Cbid& c : kCallbacks) {
    CUptiResult e = enable(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, c.cbid);
    if (e != CUPTI_SUCCESS) {
      char reason[kReasonBytes];
      std::snprintf(reason, sizeof reason, "cuptiEnableCallback(%s) failed (%d)",
                    DescribeApi(static_cast<uint16_t>(c.api)).name, static_cast<int>(e));
      Disable(reason);
      return 1;
    }
  }
  const char* all = std::getenv(kEnvDriverAll);
  bool every_call = all != nullptr && std::strcmp(all, "1") == 0;
  if (every_call) {
    auto enable_domain = reinterpret_cast<EnableDomainFn>(dlsym(lib, "cuptiEnableDomain"));
    if (enable_domain == nullptr || enable_domain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
      Disable("cuptiEnableDomain(driver API) failed");
      return 1;
    }
  }
  const char* bench = std::getenv(kEnvBench);
  g_bench_cupti_only = bench != nullptr && std::strcmp(bench, "cupti-only") == 0;
  char note[kReasonBytes];
  std::snprintf(note, sizeof note, "CUPTI driver-API callbacks via %s%s%s", name,
                every_call ? "; failures of every other driver call too" : "",
                g_bench_cupti_only ? "; BENCH MODE: nothing recorded" : "");
  Note(note);
  SetHook(kHookCupti);
  return 1;
}
