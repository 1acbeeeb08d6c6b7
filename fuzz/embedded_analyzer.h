// The analyzer over the built-in knowledge base, made once per fuzzing process (loading and
// compiling the knowledge base per input would leave little time for the inputs). Traps when the
// embedded knowledge base does not load: that is a build defect, not a finding of the fuzzer.
#pragma once

#include <memory>

#include "kb/analysis.h"
#include "kb/knowledge_base.h"

inline gputriage::kb::Analyzer& EmbeddedAnalyzer() {
  static const std::unique_ptr<gputriage::kb::Analyzer> analyzer = [] {
    static auto kb = gputriage::kb::LoadEmbeddedKnowledgeBase();
    if (!kb.ok()) return std::unique_ptr<gputriage::kb::Analyzer>();
    auto created = gputriage::kb::Analyzer::Create(*kb);
    return created.ok() ? std::move(*created) : std::unique_ptr<gputriage::kb::Analyzer>();
  }();
  if (!analyzer) __builtin_trap();
  return *analyzer;
}
