// What to do next, and the verdict a category points to when nothing better is known.
#pragma once

#include <string>
#include <vector>

#include "core/category.h"

namespace gputriage::kb {

/// The next diagnostic steps for a failure of `category`; `matched` says whether a known issue
/// matched (when not, the last step says to search the trackers and report it).
std::vector<std::string> NextSteps(core::Category category, bool matched);

/// The verdict a category points to when only the error lines are known (hardware -> hardware,
/// driver-runtime -> driver-firmware, arch/abi/compiler -> library, else unknown: a symptom such
/// as an illegal address, an assert, OOM, a page fault or a wrong result does not say where the
/// fault lies; evidence decides).
core::Verdict DefaultVerdict(core::Category category);

/// Issue-search links (GitHub, and the PyTorch, ROCm and NCCL trackers) for the stable words of
/// a normalised signature, after core::RedactText (a word holding a secret is left out); empty
/// when the signature is empty.
std::vector<std::string> SearchLinks(const std::string& signature);

}  // namespace gputriage::kb
