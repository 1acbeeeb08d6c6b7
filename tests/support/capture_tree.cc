#include "capture_tree.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace gputriage::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "gputriage-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

std::string ReadFixture(std::string_view relative) {
  std::string path = std::string(GT_FIXTURES_DIR) + "/" + std::string(relative);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read fixture " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.rfind("# source:", 0) == 0) {
    size_t newline = text.find('\n');
    text = newline == std::string::npos ? "" : text.substr(newline + 1);
  }
  return text;
}

void WriteFile(const std::string& root, std::string_view path, std::string_view content) {
  fs::path full = fs::path(root) / fs::path(path).relative_path();
  fs::create_directories(full.parent_path());
  std::ofstream out(full, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

int MaterializeTailV(std::string_view capture, const std::string& root) {
  std::istringstream in{std::string(capture)};
  std::string line, current_path, content;
  int written = 0;
  auto flush = [&]() {
    if (current_path.empty()) return;
    while (!content.empty() && content.back() == '\n' && content.size() >= 2 &&
           content[content.size() - 2] == '\n') {
      content.pop_back();  // tail -v separates files with a blank line
    }
    WriteFile(root, current_path, content);
    ++written;
  };
  while (std::getline(in, line)) {
    if (line.rfind("==> ", 0) == 0 && line.size() > 8 && line.substr(line.size() - 4) == " <==") {
      flush();
      current_path = line.substr(4, line.size() - 8);
      content.clear();
      continue;
    }
    if (!current_path.empty()) content += line + "\n";
  }
  flush();
  return written;
}

int MaterializeGrepDot(std::string_view capture, const std::string& root) {
  std::istringstream in{std::string(capture)};
  std::string line;
  std::map<std::string, std::string> files;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '/') continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    files[line.substr(0, colon)] += line.substr(colon + 1) + "\n";
  }
  for (const auto& [path, content] : files) WriteFile(root, path, content);
  return static_cast<int>(files.size());
}

void CopyTree(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks |
                         fs::copy_options::overwrite_existing);
}

}  // namespace gputriage::testing
