// Feeds arbitrary bytes to the redaction API (core/redact.h): as log text, and split at
// the first '=' as a NAME=value pair. Beyond "no crash, no hang", checks the promises callers
// rely on: nothing that looks like a known token survives, a secret name leaves nothing of its
// value, spans lie inside the input, and redacting twice changes nothing more (RedactText
// repeats its passes until one finds nothing; corpus/redact/regress_second_pass_url is an input
// where a first pass made a URL password appear).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/redact.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace core = gputriage::core;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  bool changed = false;
  const std::string text = core::RedactText(input, &changed);
  Check(changed == (text != input));
  Check(!core::ContainsKnownToken(text));
  Check(core::RedactText(text) == text);
  for (const core::SecretSpan& span : core::FindSecrets(input)) {
    Check(span.begin < span.end && span.end <= input.size());
  }

  const size_t eq = input.find('=');
  const std::string_view name = input.substr(0, eq == std::string_view::npos ? 0 : eq);
  const std::string_view value = eq == std::string_view::npos ? input : input.substr(eq + 1);
  const std::string redacted = core::RedactValue(name, value, &changed);
  Check(changed == (redacted != value));
  if (core::IsSecretName(name)) Check(redacted == (value.empty() ? "" : core::kRedacted));
  Check(!core::ContainsKnownToken(redacted));
  (void)core::RedactAssignment(input);
  return 0;
}
