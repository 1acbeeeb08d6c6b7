#include "knowledge_data/embedded.h"

namespace gputriage::kb_data {

const EmbeddedFile* FindEmbeddedFile(std::string_view path) {
  for (const EmbeddedFile& file : EmbeddedFiles()) {
    if (file.path == path) return &file;
  }
  return nullptr;
}

}  // namespace gputriage::kb_data
