// Helpers shared by the gt_store tests: a temporary directory removed afterwards (the shared
// one of tests/support) and an environment variable set for one scope.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

#include "capture_tree.h"

namespace gputriage::store::testing {

/// A fresh directory under the test temp dir; removed (recursively) on destruction. `tmp / name`
/// is a path in it.
using gputriage::testing::TempDir;

/// Sets (or, with nullopt, unsets) an environment variable and restores it on destruction.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace gputriage::store::testing
