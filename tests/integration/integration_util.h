// Helpers shared by the integration tests. Unity builds put several test files into one
// translation unit, so what more than one file needs lives here, once.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace gputriage {

/// tests/crashers/crasher, the real crashing program the run/pack/bundles tests supervise.
inline const std::string kCrasher = std::string(GT_CRASHERS_DIR) + "/crasher";

/// The whole file at `path`; "" when it cannot be read.
inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gputriage
