// Feeds arbitrary bytes to the handling of an output path the user names (core/fs.h
// WriteOutputFile: report -o, run --json-file, validate --junit). The first byte chooses what is
// already at the path (nothing, a regular file, a directory, a symbolic link to a file, to a
// directory, to nothing, to /dev/null), the rest is the file's name. Beyond "no crash": a new or
// regular file is written; a directory or link is never replaced, and a file a link leads to is
// never written through it; a link to a character device is written as a stream.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "core/fs.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

std::string Contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string& Scratch() {
  static const std::string dir = [] {
    char name[] = "/tmp/gt-output-path-fuzz.XXXXXX";
    Check(::mkdtemp(name) != nullptr);
    return std::string(name);
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  if (size == 0) return 0;
  const int state = data[0] % 7;
  std::string name;
  for (size_t i = 1; i < size && name.size() < 200; ++i) {
    char c = static_cast<char>(data[i]);
    name.push_back(c == '/' || c == '\0' ? '_' : c);
  }
  if (name.empty() || name == "." || name == "..") name = "out";
  const std::string dir = Scratch();
  const std::string path = dir + "/" + name;
  const std::string target = dir + "/.target";
  if (path == target) return 0;
  std::error_code ec;
  fs::remove_all(path, ec);
  fs::remove_all(target, ec);
  switch (state) {
    case 1:
      std::ofstream(path) << "old";
      break;
    case 2:
      fs::create_directory(path, ec);
      break;
    case 3:
      std::ofstream(target) << "target";
      fs::create_symlink(target, path, ec);
      break;
    case 4:
      fs::create_directory(target, ec);
      fs::create_symlink(target, path, ec);
      break;
    case 5:
      fs::create_symlink(target, path, ec);
      break;
    case 6:
      fs::create_symlink("/dev/null", path, ec);
      break;
    default:
      break;
  }
  if (ec) return 0;
  auto written = gputriage::core::WriteOutputFile(path, "data");
  struct stat st {};
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  switch (state) {
    case 0:
    case 1:
      Check(written.ok() && exists && S_ISREG(st.st_mode) && Contents(path) == "data");
      break;
    case 2:
      Check(!written.ok() && exists && S_ISDIR(st.st_mode));
      break;
    case 3:
      Check(!written.ok() && exists && S_ISLNK(st.st_mode) && Contents(target) == "target");
      break;
    case 4:
      Check(!written.ok() && exists && S_ISLNK(st.st_mode) && fs::is_empty(target));
      break;
    case 5:
      Check(!written.ok() && exists && S_ISLNK(st.st_mode) && !fs::exists(target));
      break;
    case 6:
      Check(written.ok() && exists && S_ISLNK(st.st_mode));
      break;
    default:
      break;
  }
  fs::remove_all(path, ec);
  fs::remove_all(target, ec);
  return 0;
}
