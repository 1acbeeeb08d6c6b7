#include "core/dynlib.h"

#include <dlfcn.h>
#include <link.h>

#include <utility>

namespace gputriage::core {

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), name_(std::move(other.name_)), path_(std::move(other.path_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    path_ = std::move(other.path_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

Result<DynamicLibrary> DynamicLibrary::Open(const std::vector<std::string>& names) {
  std::string failures;
  for (const std::string& name : names) {
    ::dlerror();
    void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = ::dlerror();
      if (!failures.empty()) failures += "; ";
      failures += err != nullptr ? err : (name + ": unknown dlopen error");
      continue;
    }
    DynamicLibrary lib;
    lib.handle_ = handle;
    lib.name_ = name;
    link_map* map = nullptr;
    if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
      lib.path_ = map->l_name;
    }
    return lib;
  }
  return MakeError("cannot load {}", failures);
}

Result<void*> DynamicLibrary::Symbol(const char* symbol) const {
  if (handle_ == nullptr) return MakeError("{}: library not loaded", symbol);
  ::dlerror();
  void* sym = ::dlsym(handle_, symbol);
  if (sym == nullptr) {
    const char* err = ::dlerror();
    return MakeError("{}: symbol {} not found{}{}", path_.empty() ? name_ : path_, symbol, err != nullptr ? ": " : "",
                     err != nullptr ? err : "");
  }
  return sym;
}

void* DynamicLibrary::OptionalSymbol(const char* symbol) const {
  if (handle_ == nullptr) return nullptr;
  return ::dlsym(handle_, symbol);
}

}  // namespace gputriage::core
