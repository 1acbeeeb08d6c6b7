// The knowledge-base files (kb/**/*.yaml), embedded in the binary at build time.
#pragma once

#include <string_view>
#include <vector>

namespace gputriage::kb_data {

struct EmbeddedFile {
  std::string_view path;     // relative to the repository root, e.g. "kb/tables/nvidia-xid.yaml"
  std::string_view content;  // the file's text
};

/// Every embedded knowledge-base file, sorted by path.
const std::vector<EmbeddedFile>& EmbeddedFiles();

/// The file at `path`, or nullptr.
const EmbeddedFile* FindEmbeddedFile(std::string_view path);

}  // namespace gputriage::kb_data
