// Replays every file of a fuzz corpus directory through one fuzz target, so the seed corpora run
// in the test build (under the sanitizers there): `gt_fuzz_replay NAME CORPUS_DIR`. Fails if the
// target is unknown, or the directory is missing or empty.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "replay_targets.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TARGET CORPUS_DIR\ntargets:", argv[0]);
    for (const ReplayTarget* t = kReplayTargets; t->name; ++t) std::fprintf(stderr, " %s", t->name);
    std::fprintf(stderr, "\n");
    return 2;
  }
  const ReplayTarget* target = kReplayTargets;
  while (target->name && std::strcmp(target->name, argv[1]) != 0) ++target;
  if (!target->name) {
    std::fprintf(stderr, "%s: no such fuzz target\n", argv[1]);
    return 2;
  }
  std::error_code ec;
  size_t count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(argv[2], ec)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    target->run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++count;
  }
  if (ec || count == 0) {
    std::fprintf(stderr, "%s: no corpus files (%s)\n", argv[2], ec ? ec.message().c_str() : "empty");
    return 1;
  }
  std::printf("%s: replayed %zu inputs from %s\n", argv[1], count, argv[2]);
  return 0;
}
