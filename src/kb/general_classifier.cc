#include "kb/general_classifier.h"

namespace gputriage::kb {

core::Result<GeneralClassifier> GeneralClassifier::Build(const std::vector<catalog::GeneralSignal>& signals) {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  // RE2's default 8 MiB leaves the DFA of these case-insensitive alternations rebuilding its
  // state cache over and over (or giving up) on long inputs.
  options.set_max_mem(64 << 20);
  auto set = std::make_shared<RE2::Set>(options, RE2::UNANCHORED);
  for (const catalog::GeneralSignal& s : signals) {
    std::string error;
    if (set->Add(s.pattern, &error) < 0) {
      return core::MakeError("kb/tables/general-signals.yaml:{}: pattern does not compile: {}", s.line, error);
    }
  }
  if (!set->Compile()) return core::MakeError("kb/tables/general-signals.yaml: the signals do not compile together");
  GeneralClassifier classifier;
  classifier.signals_ = &signals;
  classifier.set_ = std::move(set);
  return classifier;
}

bool GeneralClassifier::Match(std::string_view line, std::vector<int>* hits) const {
  hits->clear();
  return set_->Match(re2::StringPiece(line.data(), line.size()), hits);
}

}  // namespace gputriage::kb
