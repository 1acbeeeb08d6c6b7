// The general classifier's signals (kb/tables/general-signals.yaml) compiled into one RE2::Set,
// so a line costs one DFA pass whatever their number.
#pragma once

#include <re2/set.h>

#include <memory>
#include <string_view>
#include <vector>

#include "catalog/general_signals.h"
#include "core/result.h"

namespace gputriage::kb {

class GeneralClassifier {
 public:
  /// Compiles `signals` (which must outlive the classifier). Fails naming the table's line of a
  /// pattern RE2::Set rejects.
  static core::Result<GeneralClassifier> Build(const std::vector<catalog::GeneralSignal>& signals);

  /// The indexes of the signals that match `line`, into *hits (cleared first); false when none.
  bool Match(std::string_view line, std::vector<int>* hits) const;

  const catalog::GeneralSignal& signal(size_t index) const { return (*signals_)[index]; }
  size_t size() const { return signals_->size(); }

 private:
  GeneralClassifier() = default;
  const std::vector<catalog::GeneralSignal>* signals_ = nullptr;
  std::shared_ptr<const RE2::Set> set_;
};

}  // namespace gputriage::kb
