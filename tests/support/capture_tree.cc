#include "capture_tree.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace gputriage::testing {

namespace fs = std::filesystem;

namespace {

// Lines as core::SplitLines cuts them: on '\n', a trailing '\r' dropped, no empty last line
// for a final '\n'.
std::vector<std::string_view> SplitLines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t pos = s.find('\n', start);
    std::string_view line = s.substr(start, pos == std::string_view::npos ? pos : pos - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

// core::Trim: ASCII whitespace and NUL off both ends.
std::string_view Trim(std::string_view s) {
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\0';
  };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

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

std::string TempTree::Real(std::string_view path) const {
  return (fs::path(root()) / fs::path(path).relative_path()).string();
}

void TempTree::Write(std::string_view path, std::string_view bytes) const { WriteFile(root(), path, bytes); }

void TempTree::MakeDir(std::string_view path) const { fs::create_directories(Real(path)); }

void TempTree::Link(std::string_view path, std::string_view target) const {
  fs::path real = Real(path);
  fs::create_directories(real.parent_path());
  fs::create_symlink(std::string(target), real);
}

std::string ReadFixture(std::string_view relative, FixtureOptions options) {
  std::string path = std::string(GT_FIXTURES_DIR) + "/" + std::string(relative);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!options.missing_fails_test) throw std::runtime_error("cannot read fixture " + path);
    ADD_FAILURE() << "cannot read fixture " << path;
    return "";
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (options.source_line == SourceLine::kKeep) return text;
  bool has_source = text.starts_with("# source:");
  if (options.source_line == SourceLine::kRequired) {
    if (!has_source) ADD_FAILURE() << path << " has no '# source:' line";  // dropped all the same
  } else if (!has_source) {
    return text;
  }
  size_t newline = text.find('\n');
  return newline == std::string::npos ? "" : text.substr(newline + 1);
}

std::string ReadCapture(std::string_view relative) {
  return ReadFixture(relative, {.source_line = SourceLine::kRequired, .missing_fails_test = true});
}

void WriteFile(const std::string& root, std::string_view path, std::string_view content) {
  fs::path full = fs::path(root) / fs::path(path).relative_path();
  fs::create_directories(full.parent_path());
  std::ofstream out(full, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

int MaterializeTailV(std::string_view capture, const std::string& root, TailBlankLines blank_lines) {
  std::istringstream in{std::string(capture)};
  std::string line, current_path, content;
  int written = 0;
  auto flush = [&]() {
    if (current_path.empty()) return;
    // tail -v separates files with a blank line.
    if (blank_lines == TailBlankLines::kDropOneSeparator) {
      if (content == "\n" || content.ends_with("\n\n")) content.pop_back();
    } else {
      while (content.size() >= 2 && content.ends_with("\n\n")) content.pop_back();
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

int MaterializeCat(std::string_view capture, const std::string& root) {
  std::string path, content;
  int written = 0;
  auto flush = [&] {
    if (!path.empty()) {
      WriteFile(root, path, content);
      ++written;
    }
    path.clear();
    content.clear();
  };
  for (std::string_view line : SplitLines(capture)) {
    size_t cat = line.find("cat /");
    bool prompt = cat != std::string_view::npos && cat >= 2 && line[cat - 1] == ' ' &&
                  (line[cat - 2] == '#' || line[cat - 2] == '$' || line[cat - 2] == '>');
    if (prompt) {
      flush();
      path = std::string(Trim(line.substr(cat + 4)));
    } else if (Trim(line).empty()) {
      flush();
    } else if (!path.empty()) {
      content += std::string(line) + "\n";
    }
  }
  flush();
  return written;
}

void CopyTree(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  fs::copy(from, to,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing);
}

}  // namespace gputriage::testing
