// Feeds arbitrary bytes to the command-line redaction (core/redact.h: RedactArgv, RedactText on
// a joined command line, RedactedShellCommand). The input's first byte picks a secret form to
// plant, the rest split on NUL is the argv around it. Checks:
//   - a planted secret never survives: "--password SECRET", "--api-key SECRET", mysql's
//     "-pSECRET", curl's "-u user:SECRET", a URL password, a GitHub token, in argv (by
//     position: RedactArgv keeps the length) and on its own line of joined text;
//   - redacting twice equals redacting once (RedactArgv; RedactText on the joined text);
//   - RedactArgv keeps the number of elements; RedactedShellCommand holds no unquoted byte a
//     shell would act on (every element is a safe word or one single-quoted string).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/redact.h"

namespace {

namespace core = gputriage::core;

// Aborts naming the failed check's line, so a crash artifact says which property broke.
void Check(bool condition, int line = __builtin_LINE()) {
  if (condition) return;
  std::fprintf(stderr, "redact_argv_fuzz: check at line %d failed\n", line);
  std::abort();
}

// Distinctive, and as the rules want it (no leading '-', no quote or blank, long enough).
constexpr std::string_view kSecret = "Zq7SECRETvalue9xK";

std::string GithubToken() { return "ghp_" + std::string(36, 'a').replace(5, 8, "Zq7SECRE"); }

std::vector<std::string> SplitNul(std::string_view bytes) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= bytes.size() && out.size() < 64) {
    size_t end = bytes.find('\0', start);
    if (end == std::string_view::npos) end = bytes.size();
    out.emplace_back(bytes.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

struct Planted {
  size_t words = 0;                                    // how many elements were inserted
  std::vector<std::pair<size_t, std::string>> checks;  // position -> what it must become ("": anything secret-free)
};

// Plants secret form `form` at `at` in `argv`.
Planted Plant(int form, size_t at, std::vector<std::string>& argv) {
  const std::string secret(kSecret);
  const std::string redacted(core::kRedacted);
  std::vector<std::string> words;
  Planted planted;
  switch (form) {
    case 0:
      words = {"--password", secret};
      planted.checks = {{at + 1, redacted}};
      break;
    case 1:
      words = {"--api-key", secret};
      planted.checks = {{at + 1, redacted}};
      break;
    case 2:
      words = {"mysql", "-p" + secret};
      planted.checks = {{at + 1, "-p" + redacted}};
      break;
    case 3:
      words = {"curl", "-u", "user:" + secret};
      planted.checks = {{at + 2, "user:" + redacted}};
      break;
    case 4:
      words = {"https://user:" + secret + "@host/x"};
      planted.checks = {{at, ""}};
      break;
    default:
      words = {GithubToken()};
      planted.checks = {{at, ""}};
  }
  argv.insert(argv.begin() + static_cast<std::ptrdiff_t>(at), words.begin(), words.end());
  planted.words = words.size();
  return planted;
}

std::string Join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& word : argv) out += (out.empty() ? "" : " ") + word;
  return out;
}

bool IsShellSafe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("-_./:=,@%+").find(c) != std::string_view::npos;
}

// Every word of `line` is safe characters only, or one '...' string with '\'' for quotes.
void CheckQuoted(std::string_view line, size_t words) {
  size_t count = 0;
  size_t i = 0;
  while (i < line.size()) {
    ++count;
    if (line[i] == '\'' || (line[i] != ' ' && !IsShellSafe(line[i]))) {
      // A quoted word: segments '...' joined by \' until a space outside quotes.
      while (i < line.size() && line[i] != ' ') {
        if (line[i] == '\'') {
          size_t close = line.find('\'', i + 1);
          Check(close != std::string_view::npos);
          i = close + 1;
        } else {
          Check(line.substr(i, 2) == "\\'");
          i += 2;
        }
      }
    } else {
      while (i < line.size() && line[i] != ' ') Check(IsShellSafe(line[i++]));
    }
    if (i < line.size()) ++i;  // the separating space
  }
  Check(count == words || (words == 0 && line.empty()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> argv = SplitNul(input);
  const int form = data[0] % 6;
  const size_t at = (data[0] / 6) % (argv.size() + 1);
  const Planted planted = Plant(form, at, argv);

  const std::vector<std::string> once = core::RedactArgv(argv);
  Check(once.size() == argv.size());
  Check(core::RedactArgv(once) == once);
  for (const auto& [index, expected] : planted.checks) {
    if (!expected.empty()) Check(once[index] == expected);
    Check(once[index].find(kSecret) == std::string::npos);
    Check(!core::ContainsKnownToken(once[index]));
  }
  CheckQuoted(core::RedactedShellCommand(argv), argv.size());

  // Joined into text (a /proc or core command line, a log), the planted words on a line of
  // their own: nothing around them may shield them from the rules.
  auto join = [&](size_t from, size_t to) {
    return Join(std::vector<std::string>(argv.begin() + static_cast<std::ptrdiff_t>(from),
                                         argv.begin() + static_cast<std::ptrdiff_t>(to)));
  };
  const std::string text =
      join(0, at) + "\n" + join(at, at + planted.words) + "\n" + join(at + planted.words, argv.size());
  const std::string redacted = core::RedactText(text);
  Check(core::RedactText(redacted) == redacted);
  // Unless the fuzzer wrote the same secret elsewhere too, it is gone.
  const std::string secret = form == 5 ? GithubToken() : std::string(kSecret);
  if (text.find(secret) == text.rfind(secret)) Check(redacted.find(secret) == std::string::npos);
  Check(!core::ContainsKnownToken(redacted));
  return 0;
}
