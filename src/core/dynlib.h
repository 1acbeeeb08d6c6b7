// RAII wrapper for a library loaded at run time. Vendor libraries (NVML, ROCm SMI, CUDA, HIP)
// are never linked: they are dlopen'ed, trying the plain then the versioned soname, with
// required and optional symbols kept apart and dlerror()'s text kept for the message.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace gputriage::core {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  ~DynamicLibrary();

  /// Tries each name in order (e.g. {"libnvidia-ml.so.1", "libnvidia-ml.so"}) with RTLD_NOW |
  /// RTLD_LOCAL. Fails with every name and its dlerror() text when none loads.
  static Result<DynamicLibrary> Open(const std::vector<std::string>& names);

  /// The address of `symbol`, or an error naming the library and the symbol.
  Result<void*> Symbol(const char* symbol) const;

  /// Like Symbol, but nullptr when absent (for optional entry points of newer releases).
  void* OptionalSymbol(const char* symbol) const;

  /// Loads `symbol` into a typed function pointer; false (and an error) when absent.
  template <typename Fn>
  Result<void> Bind(const char* symbol, Fn*& out) const {
    auto sym = Symbol(symbol);
    if (!sym.ok()) return sym.error();
    out = reinterpret_cast<Fn*>(*sym);
    return {};
  }
  template <typename Fn>
  void BindOptional(const char* symbol, Fn*& out) const {
    out = reinterpret_cast<Fn*>(OptionalSymbol(symbol));
  }

  /// The name that loaded and the file it resolved to (from dlinfo), for evidence.
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  bool loaded() const { return handle_ != nullptr; }

 private:
  void* handle_ = nullptr;
  std::string name_;
  std::string path_;
};

}  // namespace gputriage::core
