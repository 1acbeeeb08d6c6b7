#include "core/redact.h"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>
#include <string>
#include <utility>

namespace gputriage::core {
namespace {

// ---------------------------------------------------------------------------------------------
// Names

// A word containing one of these is secret: they hardly ever mean anything else.
constexpr std::array<std::string_view, 10> kSecretWordParts = {"PASSWORD",   "PASSWD",    "PASSPHRASE", "SECRET",
                                                               "CREDENTIAL", "APIKEY",    "ACCESSKEY",  "PRIVATEKEY",
                                                               "SESSIONKEY", "SIGNINGKEY"};

// Whole words that are secret on their own. PWD is handled apart (bare PWD is the shell's cwd).
constexpr std::array<std::string_view, 6> kSecretWords = {"PASS",   "AUTH",  "AUTHORIZATION",
                                                          "COOKIE", "CREDS", "SIGNATURE"};

// KEY right after one of these is secret wherever it stands (API_KEY_ID, ACCESS_KEY_ID).
constexpr std::array<std::string_view, 24> kKeyQualifiers = {
    "API",     "ACCESS",     "SECRET", "PRIVATE", "SESSION", "SIGNING", "SIGN",    "ENCRYPTION",
    "ENCRYPT", "DECRYPTION", "MASTER", "AUTH",    "ACCOUNT", "LICENSE", "HMAC",    "SHARED",
    "STORAGE", "SERVICE",    "ADMIN",  "APP",     "CLIENT",  "DEPLOY",  "WEBHOOK", "SSH"};

// KEY as the last word is secret (KAGGLE_KEY, OPENAI_KEY, STRIPE_KEY) unless the word before
// makes it a lookup key or a public one (CACHE_KEY, PRIMARY_KEY, PUBLIC_KEY, GPG_KEY).
constexpr std::array<std::string_view, 20> kPlainKeyQualifiers = {
    "PUBLIC", "PUB", "CACHE", "SORT",      "PRIMARY", "FOREIGN", "PARTITION", "ROUTING", "SHARD",    "HASH",
    "LOOKUP", "MAP", "DICT",  "COMPOSITE", "UNIQUE",  "GPG",     "PGP",       "HOT",     "MODIFIER", "SEARCH"};

// Tokenizer vocabulary entries (eos_token, pad_token, ...) fill ML logs and are not credentials.
constexpr std::array<std::string_view, 10> kVocabularyTokens = {"PAD", "EOS",  "BOS",   "UNK", "SEP",
                                                                "CLS", "MASK", "START", "END", "STOP"};

// A last word that says the variable names a place, a kind or a count, not the secret itself:
// PASSWORD_FILE holds a path, AUTH_TYPE a scheme, SSH_AUTH_SOCK a socket, MAX_TOKEN_COUNT a
// number. The value rules still run on these (a URL keeps its password redacted).
constexpr std::array<std::string_view, 35> kDescriptorWords = {
    "FILE",   "FILES",  "PATH",     "PATHS",      "DIR",     "DIRS",   "DIRECTORY", "FILENAME", "LOCATION",
    "URL",    "URI",    "ENDPOINT", "HOST",       "PORT",    "SOCK",   "SOCKET",    "TYPE",     "MODE",
    "METHOD", "NAME",   "COUNT",    "NUM",        "LIMIT",   "SIZE",   "LEN",       "LENGTH",   "INDEX",
    "TTL",    "EXPIRY", "EXPIRES",  "EXPIRATION", "TIMEOUT", "HEADER", "ENV",       "VAR"};

template <size_t N>
bool Contains(const std::array<std::string_view, N>& list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsUpper(c) || IsLower(c) || IsDigit(c); }
char ToUpper(char c) { return IsLower(c) ? static_cast<char>(c - 'a' + 'A') : c; }

// Upper-cased words of a name: split on anything but ASCII letters and digits, and on camelCase
// humps ("apiKey" -> API KEY, "APIKey" -> API KEY).
std::vector<std::string> NameWords(std::string_view name) {
  std::vector<std::string> words;
  std::string current;
  auto flush = [&] {
    if (!current.empty()) words.push_back(std::move(current));
    current.clear();
  };
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (!IsAlnum(c)) {
      flush();
      continue;
    }
    if (!current.empty()) {
      char prev = name[i - 1];
      bool hump = IsLower(prev) && IsUpper(c);
      bool acronym_end = IsUpper(prev) && IsUpper(c) && i + 1 < name.size() && IsLower(name[i + 1]);
      if (hump || acronym_end) flush();
    }
    current += ToUpper(c);
  }
  flush();
  return words;
}

bool WordIsSecret(const std::vector<std::string>& words, size_t i) {
  const std::string& word = words[i];
  for (std::string_view part : kSecretWordParts) {
    if (word.find(part) != std::string::npos) return true;
  }
  const bool last = i + 1 == words.size();
  if (word.size() >= 5 && word.compare(word.size() - 5, 5, "TOKEN") == 0) {
    // eos_token, pad_token_id, token_ids: vocabulary entries and their numbers.
    if (word == "TOKEN" && i > 0 && Contains(kVocabularyTokens, words[i - 1])) return false;
    return last || (words[i + 1] != "ID" && words[i + 1] != "IDS");
  }
  if (Contains(kSecretWords, word)) return true;
  if (word == "PWD") return words.size() >= 2;
  if (word != "KEY" || i == 0) return false;
  if (Contains(kKeyQualifiers, words[i - 1])) return true;
  return last && !Contains(kPlainKeyQualifiers, words[i - 1]);
}

// ---------------------------------------------------------------------------------------------
// Value rules

struct Rule {
  std::string_view name;
  std::string_view pattern;
  int group;         // the capture group that is the secret (0: the whole match)
  bool bounded;      // the token must not touch an ASCII letter or digit on either side
  bool known_token;  // a credential format, counted by ContainsKnownToken
};

// Formats from the providers' documentation and announcements and from the public rule sets of
// gitleaks and nosey parker. Lengths are lower bounds where providers announced that tokens may
// grow (GitHub: up to 255 characters). No entropy threshold: a placeholder such as
// ghp_EXAMPLE... is redacted too, which costs nothing.
constexpr Rule kRules[] = {
    // GitHub: personal, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained
    // PATs. https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/ and
    // https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/about-authentication-to-github#githubs-token-formats
    {"github", R"((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,})", 0, true, true},
    {"github", R"(github_pat_[A-Za-z0-9_]{60,})", 0, true, true},
    // GitLab: personal, deploy, runner, trigger, CI job, feed, mail, agent, OAuth, SCIM tokens.
    {"gitlab", R"(gl(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat)-[A-Za-z0-9_.-]{20,})", 0, true, true},
    {"gitlab", R"(GR1348941[A-Za-z0-9_-]{20,})", 0, true, true},
    // Slack: bot, user, workspace, refresh, config tokens; app-level tokens.
    // https://api.slack.com/concepts/token-types
    {"slack", R"(xox[abeprs]-[A-Za-z0-9][A-Za-z0-9-]{8,})", 0, true, true},
    {"slack", R"(xapp-[0-9]-[A-Za-z0-9-]{10,})", 0, true, true},
    // AWS access key ids (long-term AKIA, STS ASIA, ABIA, ACCA); always 20 characters.
    // https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids
    // (their secret access keys: kAwsSecretPattern).
    {"aws_access_key_id", R"((?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})", 0, true, true},
    {"google_api_key", R"(AIza[A-Za-z0-9_-]{35})", 0, true, true},
    // Anthropic before OpenAI: both start with sk-, the first rule names the span.
    {"anthropic", R"(sk-ant-[A-Za-z0-9_-]{32,})", 0, true, true},
    // OpenAI: project/service/admin keys, legacy sk-<48 alnum>, and anything carrying the
    // T3BlbkFJ marker ("OpenAI" in base64). A bare "sk-" + words (sk-hynix-...) is not enough.
    // https://platform.openai.com/docs/api-reference/authentication
    {"openai",
     R"(sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{32,})"
     R"(|sk-[A-Za-z0-9_-]{8,}T3BlbkFJ[A-Za-z0-9_-]{8,})",
     0, true, true},
    // Hugging Face user access tokens (hf_) and organisation API tokens (api_org_).
    // https://huggingface.co/docs/hub/security-tokens
    {"huggingface", R"((?:hf_|api_org_)[A-Za-z0-9]{30,})", 0, true, true},
    {"npm", R"(npm_[A-Za-z0-9]{36})", 0, true, true},
    // PyPI API tokens are macaroons whose fixed header encodes "pypi.org" / "test.pypi.org".
    {"pypi", R"(pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,})", 0, true, true},
    // Stripe secret and restricted keys (publishable pk_ keys are public by design).
    {"stripe", R"((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,})", 0, true, true},
    // Weights & Biases keys issued since 2025 (86 characters); the legacy 40-hex form is judged
    // by name in RedactValue, since 40 hex digits alone are as often a git commit.
    {"wandb", R"(wandb_v1_[A-Za-z0-9_-]{20,})", 0, true, true},
    // JSON Web Tokens: base64url('{"...') header and payload, then the signature (RFC 7519,
    // section 3; RFC 7515 compact serialization).
    {"jwt", R"(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)", 0, true, true},
    // PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK): everything after the BEGIN
    // line, the END line included, so that a token overlapping the END line cannot leave half
    // an armour behind; a block cut short is redacted to the end of the text. A block that
    // already reads BEGIN...<redacted> is left as it is (RedactText twice = once).
    {"private_key",
     R"(-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)"
     R"((<redacted>|[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)))",
     1, false, true},
    // scheme://user:password@host: only the password (the last '@' ends it, as in browsers).
    // The userinfo of RFC 3986, section 3.2.1.
    {"url_password", R"([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:([^/?#\s]*)@)", 1, false, false},
    // HTTP authorization with a bearer token anywhere in the text (RFC 6750, section 2.1:
    // b64token characters).
    {"bearer", R"((?i)bearer[ \t]+([A-Za-z0-9._~+/=-]{8,}))", 1, true, false},
    // Command lines joined into one string (/proc/PID/cmdline, a core's NT_PRPSINFO): the
    // password glued to -p of the MySQL and MariaDB clients ("-p[password]": a separate word is
    // the database; https://dev.mysql.com/doc/refman/8.0/en/connection-options.html#option_general_password),
    // sshpass's -p (sshpass(1): "-p password"), and curl's -u/--user and -U/--proxy-user
    // USER:PASSWORD (https://curl.se/docs/manpage.html#-u). RedactArgv does the same per argv.
    {"command_password",
     R"((?:^|[\s/"'])(?:mysql[A-Za-z_-]*|mariadb[A-Za-z_-]*)[ \t]+(?:[^\s;&|]+[ \t]+)*?-p([^\s"';&|]+))", 1, false,
     false},
    {"command_password", R"((?:^|[\s/"'])sshpass[ \t]+(?:[^\s;&|]+[ \t]+)*?-p[ \t]*([^\s"';&|-][^\s"';&|]*))", 1, false,
     false},
    {"command_password",
     R"((?:^|[\s/"'])curl[ \t]+(?:[^\s;&|]+[ \t]+)*?(?:-u|-U|--user|--proxy-user)(?:[ \t]+|=)?[^\s:"';&|-][^\s:"';&|]*:([^\s"';&|]+))",
     1, false, false},
};
constexpr size_t kRuleCount = std::size(kRules);
// Prefilter targets beyond the rules: the key=value scan and the AWS secret key context.
constexpr size_t kKeyValueTarget = kRuleCount;
constexpr size_t kAwsContextTarget = kRuleCount + 1;
constexpr size_t kTargetCount = kRuleCount + 2;

// Candidate keys of key=value forms; IsSecretName then decides. The keyword list only keeps the
// scan cheap: it must cover every word IsSecretName accepts.
constexpr std::string_view kKeyValuePattern =
    R"((?i)([a-z0-9_.-]*(?:token|secret|pass|pwd|key|auth|cred|cookie|signature)[a-z0-9_.-]*))"
    R"((["']?[ \t]*[:=][ \t]*|[ \t]+))";

constexpr std::string_view kWandbLegacyKeyPattern = R"((?:[A-Za-z0-9]+-)?[0-9A-Fa-f]{40})";

// AWS secret access keys have no prefix: 40 characters of base64 ("wJalrXUtnFEMI/K7MDENG/
// bPxRfiCYEXAMPLEKEY" in https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html),
// which alone would also match innocent strings. So they are looked for only on a line that says
// what they are: one holding an access key id (the aws_access_key_id rule) or the words
// "secret access key" (the credentials CSV's header, `aws configure`'s prompt, SecretAccessKey,
// aws_secret_access_key). A candidate must mix upper and lower case and not be all hex digits:
// random base64 of 40 characters is that with near certainty, a SHA-1 or an address never is.
constexpr std::string_view kAwsContextPattern = R"((?i)secret[ _-]?access[ _-]?key)";
constexpr std::string_view kAwsSecretPattern = R"((?:^|[^A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|\z))";

// HTTP authorization schemes that precede the credential in a value ("Authorization: Basic x").
constexpr std::array<std::string_view, 6> kAuthSchemes = {"bearer", "basic", "token", "digest", "negotiate", "bot"};

// A bounded rule is compiled with its boundaries inside the pattern, as group 1 around the
// rule's own groups. Checking them after the match instead would rescan: each "axoxb-..."
// rejected for the 'a' before it would be matched again from the next byte, to the end of the
// text, and a text full of them would take quadratic time (measured: 63 s for 256 KiB).
std::string CompiledPattern(const Rule& rule) {
  if (!rule.bounded) return std::string(rule.pattern);
  return "(?:^|[^A-Za-z0-9])(" + std::string(rule.pattern) + ")(?:[^A-Za-z0-9]|\\z)";
}

// The index of a rule's secret group in its compiled pattern.
int SecretGroup(const Rule& rule) { return rule.bounded ? rule.group + 1 : rule.group; }

RE2::Options PatternOptions() {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);  // arbitrary bytes, byte offsets
  options.set_log_errors(false);
  return options;
}

// The compiled patterns, built once (function-local static: thread-safe initialisation).
class Patterns {
 public:
  static const Patterns& Get() {
    static const Patterns patterns;
    return patterns;
  }

  const RE2* rule(size_t i) const { return rules_[i]->ok() ? rules_[i].get() : nullptr; }
  const RE2& key_value() const { return key_value_; }
  const RE2& wandb_legacy_key() const { return wandb_legacy_key_; }
  const RE2& aws_context() const { return aws_context_; }
  const RE2& aws_secret() const { return aws_secret_; }

  // Which of kRules (index kKeyValueTarget: the key=value scan, kAwsContextTarget: the words
  // "secret access key") may match in `text`. Errs on the side of "all": a prefilter that ran
  // out of memory must not hide a secret.
  std::array<bool, kTargetCount> Candidates(std::string_view text) const {
    std::array<bool, kTargetCount> out{};
    std::vector<int> hits;
    RE2::Set::ErrorInfo error{};
    if (!set_ok_ || !set_.Match(re2::StringPiece(text.data(), text.size()), &hits, &error)) {
      if (!set_ok_ || error.kind != RE2::Set::kNoError) out.fill(true);
      return out;
    }
    for (int hit : hits) {
      if (hit >= 0 && static_cast<size_t>(hit) < set_targets_.size()) out[set_targets_[hit]] = true;
    }
    return out;
  }

 private:
  Patterns()
      : key_value_(re2::StringPiece(kKeyValuePattern.data(), kKeyValuePattern.size()), PatternOptions()),
        wandb_legacy_key_(re2::StringPiece(kWandbLegacyKeyPattern.data(), kWandbLegacyKeyPattern.size()),
                          PatternOptions()),
        aws_context_(re2::StringPiece(kAwsContextPattern.data(), kAwsContextPattern.size()), PatternOptions()),
        aws_secret_(re2::StringPiece(kAwsSecretPattern.data(), kAwsSecretPattern.size()), PatternOptions()),
        set_(PatternOptions(), RE2::UNANCHORED) {
    for (size_t i = 0; i < kRuleCount; ++i) {
      const std::string pattern = CompiledPattern(kRules[i]);
      rules_[i] = std::make_unique<RE2>(pattern, PatternOptions());
      AddToSet(kRules[i].pattern, i);
    }
    AddToSet(kKeyValuePattern, kKeyValueTarget);
    AddToSet(kAwsContextPattern, kAwsContextTarget);
    set_ok_ = set_.Compile();
  }

  void AddToSet(std::string_view pattern, size_t target) {
    std::string error;
    if (set_.Add(re2::StringPiece(pattern.data(), pattern.size()), &error) >= 0) {
      set_targets_.push_back(target);
    }
  }

  std::array<std::unique_ptr<RE2>, kRuleCount> rules_;
  RE2 key_value_;
  RE2 wandb_legacy_key_;
  RE2 aws_context_;
  RE2 aws_secret_;
  RE2::Set set_;
  std::vector<size_t> set_targets_;  // set index -> rule index
  bool set_ok_ = false;
};

size_t Offset(std::string_view text, const re2::StringPiece& piece) {
  return static_cast<size_t>(piece.data() - text.data());
}

void ScanRule(const Rule& rule, const RE2& re, std::string_view text, std::vector<SecretSpan>* spans) {
  const re2::StringPiece input(text.data(), text.size());
  std::array<re2::StringPiece, 4> groups;
  const int secret_group = SecretGroup(rule);
  // The token: group 1 of a bounded pattern (its boundary bytes are outside), else the match.
  const int token_group = rule.bounded ? 1 : 0;
  size_t pos = 0;
  while (pos < text.size() && re.Match(input, pos, text.size(), RE2::UNANCHORED, groups.data(), secret_group + 1)) {
    size_t begin = Offset(text, groups[token_group]);
    size_t end = begin + groups[token_group].size();
    const re2::StringPiece& secret = groups[secret_group];
    // An empty secret or one already redacted (a PEM body, a URL password) is not a find.
    if (secret.data() != nullptr && !secret.empty() && std::string_view(secret.data(), secret.size()) != kRedacted) {
      size_t secret_begin = Offset(text, secret);
      spans->push_back({secret_begin, secret_begin + secret.size(), rule.name});
    }
    // Resume at the token's end, not the match's: the boundary byte after it may be the one
    // before the next token.
    pos = std::max(end, Offset(text, groups[0]) + 1);
  }
}

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Where an unquoted value ends: at whitespace, a quote, or a separator of query strings ('&')
// and connection strings (';'). Commas and brackets stay inside (a redacted "abc," is harmless,
// a password cut at its comma is not).
size_t UnquotedValueEnd(std::string_view text, size_t begin) {
  size_t end = begin;
  while (end < text.size()) {
    char c = text[end];
    if (IsSpace(c) || c == '"' || c == '\'' || c == '&' || c == ';') break;
    ++end;
  }
  return end;
}

// The quoted value starting after the quote at `open`: up to the matching quote (backslash
// escapes skipped) or, unterminated, to the end of the line.
std::pair<size_t, size_t> QuotedValue(std::string_view text, size_t open) {
  char quote = text[open];
  size_t end = open + 1;
  while (end < text.size() && text[end] != quote && text[end] != '\n') {
    end += (text[end] == '\\' && end + 1 < text.size()) ? 2 : 1;
  }
  return {open + 1, std::min(end, text.size())};
}

// The secret part of the value starting at `begin` ("Bearer x" -> x); empty when none.
std::pair<size_t, size_t> ValueSpan(std::string_view text, size_t begin) {
  if (begin >= text.size()) return {begin, begin};
  if (text[begin] == '"' || text[begin] == '\'') return QuotedValue(text, begin);
  for (std::string_view scheme : kAuthSchemes) {
    size_t after = begin + scheme.size();
    if (StartsWithNoCase(text.substr(begin), scheme) && after < text.size() &&
        (text[after] == ' ' || text[after] == '\t')) {
      while (after < text.size() && (text[after] == ' ' || text[after] == '\t')) ++after;
      begin = after;
      break;
    }
  }
  return {begin, UnquotedValueEnd(text, begin)};
}

// A key of two words in prose, "api key: VALUE" or "Access Token = VALUE": `key` is "key" or
// "token" and the word before it (blanks between them) one of the qualifiers that make KEY a
// secret in a variable name (API, ACCESS, SECRET, PRIVATE, AUTH, ...). Other words before "key"
// ("the key: value", "cache key = x") do not make it one.
bool SecretWithWordBefore(std::string_view text, size_t key_begin, std::string_view key) {
  std::string upper_key;
  for (char c : key) upper_key.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  if (upper_key != "KEY" && upper_key != "TOKEN") return false;
  size_t end = key_begin;
  while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\t')) --end;
  if (end == key_begin || end == 0) return false;
  size_t begin = end;
  while (begin > 0 && std::isalpha(static_cast<unsigned char>(text[begin - 1]))) --begin;
  if (begin == end || end - begin > 16) return false;
  std::string word;
  for (char c : text.substr(begin, end - begin))
    word.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return Contains(kKeyQualifiers, word) || word == "REFRESH" || word == "BEARER" || word == "PERSONAL";
}

void ScanKeyValues(const RE2& re, std::string_view text, std::vector<SecretSpan>* spans) {
  const re2::StringPiece input(text.data(), text.size());
  std::array<re2::StringPiece, 3> groups;
  size_t pos = 0;
  while (pos < text.size() && re.Match(input, pos, text.size(), RE2::UNANCHORED, groups.data(), 3)) {
    size_t key_begin = Offset(text, groups[1]);
    size_t sep_end = Offset(text, groups[2]) + groups[2].size();
    pos = std::max(sep_end, key_begin + 1);
    std::string_view key(groups[1].data(), groups[1].size());
    std::string_view sep(groups[2].data(), groups[2].size());
    bool spaced = sep.find_first_of(":=") == std::string_view::npos;
    // "--token VALUE" is an option when it stands as a word of a command line; "the token is"
    // is prose, and "x--token y" is no option (nor does it become one once "x" is redacted).
    bool flag = !key.empty() && key.front() == '-' && (key_begin == 0 || IsSpace(text[key_begin - 1]));
    if (spaced && !flag) continue;
    if (spaced && sep_end < text.size() && text[sep_end] == '-') continue;
    if (!IsSecretName(key) && (spaced || !SecretWithWordBefore(text, key_begin, key))) continue;
    auto [begin, end] = ValueSpan(text, sep_end);
    std::string_view value = text.substr(begin, end - begin);
    // A value that starts redacted was judged before (its tail may be a URL's host).
    if (value.empty() || value.substr(0, kRedacted.size()) == kRedacted) continue;
    spans->push_back({begin, end, "key_value"});
    pos = std::max(pos, end);
  }
}

// The [begin, end) of the line around byte `at`.
std::pair<size_t, size_t> LineAround(std::string_view text, size_t at) {
  size_t begin = at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
  begin = begin == std::string_view::npos ? 0 : begin + 1;
  size_t end = text.find('\n', at);
  return {begin, end == std::string_view::npos ? text.size() : end};
}

bool LooksLikeRandomBase64(std::string_view token) {
  bool upper = false, lower = false, non_hex = false;
  for (char c : token) {
    upper = upper || IsUpper(c);
    lower = lower || IsLower(c);
    non_hex = non_hex || !(IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
  }
  return upper && lower && non_hex;
}

// AWS secret access keys on the lines that give them away (kAwsSecretPattern's comment). Each
// line is scanned once, however many key ids or context words it holds.
void ScanAwsSecrets(const Patterns& patterns, std::string_view text, bool context_words,
                    std::vector<SecretSpan>* spans) {
  std::vector<std::pair<size_t, size_t>> lines;
  size_t covered = 0;  // the key ids' spans come in order: skip those on the line just added
  for (const SecretSpan& span : *spans) {
    if (span.rule != "aws_access_key_id" || (!lines.empty() && span.begin < covered)) continue;
    lines.push_back(LineAround(text, span.begin));
    covered = lines.back().second;
  }
  const re2::StringPiece input(text.data(), text.size());
  re2::StringPiece match;
  size_t pos = 0;
  while (context_words && pos < text.size() &&
         patterns.aws_context().Match(input, pos, text.size(), RE2::UNANCHORED, &match, 1)) {
    lines.push_back(LineAround(text, Offset(text, match)));
    pos = lines.back().second + 1;
  }
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  std::array<re2::StringPiece, 2> groups;
  for (auto [begin, end] : lines) {
    // With the '\n' on either side: RE2 takes ^ and \z for the whole text's, not the line's.
    size_t at = begin > 0 ? begin - 1 : 0;
    size_t stop = std::min(end + 1, text.size());
    while (at < stop && patterns.aws_secret().Match(input, at, stop, RE2::UNANCHORED, groups.data(), 2)) {
      size_t token = Offset(text, groups[1]);
      std::string_view candidate(groups[1].data(), groups[1].size());
      if (LooksLikeRandomBase64(candidate))
        spans->push_back({token, token + candidate.size(), "aws_secret_access_key"});
      at = token + candidate.size();
    }
  }
}

std::vector<SecretSpan> MergeSpans(std::vector<SecretSpan> spans) {
  std::stable_sort(spans.begin(), spans.end(),
                   [](const SecretSpan& a, const SecretSpan& b) { return a.begin < b.begin; });
  std::vector<SecretSpan> merged;
  for (const SecretSpan& span : spans) {
    if (!merged.empty() && span.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, span.end);
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

bool ContainsNoCase(std::string_view text, std::string_view needle_upper) {
  for (size_t i = 0; i + needle_upper.size() <= text.size(); ++i) {
    bool match = true;
    for (size_t k = 0; k < needle_upper.size() && match; ++k) {
      match = ToUpper(text[i + k]) == needle_upper[k];
    }
    if (match) return true;
  }
  return false;
}

}  // namespace

bool IsSecretName(std::string_view name) {
  std::vector<std::string> words = NameWords(name);
  if (words.empty()) return false;
  if (words.size() > 1 && Contains(kDescriptorWords, words.back())) return false;
  for (size_t i = 0; i < words.size(); ++i) {
    if (WordIsSecret(words, i)) return true;
  }
  return false;
}

namespace {

// Set once at start-up (SetUserSecretPatterns), read by every FindSecrets after.
std::vector<std::unique_ptr<RE2>>& UserPatterns() {
  static std::vector<std::unique_ptr<RE2>> patterns;
  return patterns;
}

constexpr Rule kUserRule = {"user", "", 0, false, false};

}  // namespace

Result<void> SetUserSecretPatterns(const std::vector<std::string>& patterns) {
  std::vector<std::unique_ptr<RE2>> compiled;
  for (const std::string& p : patterns) {
    RE2::Options options;
    options.set_log_errors(false);
    options.set_encoding(RE2::Options::EncodingLatin1);
    auto re = std::make_unique<RE2>(p, options);
    if (!re->ok()) return MakeError("--redact '{}': not a valid RE2 pattern: {}", p, re->error());
    if (RE2::PartialMatch("", *re)) return MakeError("--redact '{}': the pattern matches the empty string", p);
    compiled.push_back(std::move(re));
  }
  UserPatterns() = std::move(compiled);
  return {};
}

std::vector<SecretSpan> FindSecrets(std::string_view text) {
  std::vector<SecretSpan> spans;
  if (text.empty()) return spans;
  for (const std::unique_ptr<RE2>& re : UserPatterns()) ScanRule(kUserRule, *re, text, &spans);
  const Patterns& patterns = Patterns::Get();
  auto candidates = patterns.Candidates(text);
  for (size_t i = 0; i < kRuleCount; ++i) {
    const RE2* re = patterns.rule(i);
    if (candidates[i] && re != nullptr) ScanRule(kRules[i], *re, text, &spans);
  }
  if (candidates[kKeyValueTarget] && patterns.key_value().ok()) {
    ScanKeyValues(patterns.key_value(), text, &spans);
  }
  if (patterns.aws_context().ok() && patterns.aws_secret().ok()) {
    ScanAwsSecrets(patterns, text, candidates[kAwsContextTarget], &spans);
  }
  return MergeSpans(std::move(spans));
}

bool ContainsKnownToken(std::string_view text) {
  if (text.empty()) return false;
  const Patterns& patterns = Patterns::Get();
  auto candidates = patterns.Candidates(text);
  std::vector<SecretSpan> spans;
  for (size_t i = 0; i < kRuleCount; ++i) {
    const RE2* re = patterns.rule(i);
    if (!kRules[i].known_token || !candidates[i] || re == nullptr) continue;
    ScanRule(kRules[i], *re, text, &spans);
    if (!spans.empty()) return true;
  }
  return false;
}

namespace {

// One pass: every span of FindSecrets replaced.
std::string RedactOnce(std::string_view text, const std::vector<SecretSpan>& spans) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (const SecretSpan& span : spans) {
    out.append(text.substr(pos, span.begin - pos));
    out.append(kRedacted);
    pos = span.end;
  }
  out.append(text.substr(pos));
  return out;
}

// Passes after the first, at most: the fuzzers' worst inputs settle in two or three.
constexpr int kMaxExtraPasses = 8;

}  // namespace

std::string RedactText(std::string_view text, bool* changed) {
  std::vector<SecretSpan> spans = FindSecrets(text);
  if (spans.empty()) {
    if (changed != nullptr) *changed = false;
    return std::string(text);
  }
  std::string out = RedactOnce(text, spans);
  // A replacement can join what was apart: removing a span may remove the '/' that ended a URL
  // password around it, or put "<redacted>" where a key's value now begins, so that a second
  // pass reads further. Passes repeat until one finds nothing, so that redacting the result
  // again changes nothing (the fuzzers check it); real text settles after the first.
  for (int pass = 0; pass < kMaxExtraPasses; ++pass) {
    spans = FindSecrets(out);
    std::string next = RedactOnce(out, spans);
    if (next == out) break;
    out = std::move(next);
  }
  if (changed != nullptr) *changed = out != text;
  return out;
}

std::string RedactValue(std::string_view name, std::string_view value, bool* changed) {
  bool whole = !value.empty() && IsSecretName(name);
  if (!whole && ContainsNoCase(name, "WANDB")) {
    const RE2& wandb = Patterns::Get().wandb_legacy_key();
    whole = wandb.ok() && RE2::FullMatch(re2::StringPiece(value.data(), value.size()), wandb);
  }
  if (whole) {
    if (changed != nullptr) *changed = value != kRedacted;
    return std::string(kRedacted);
  }
  return RedactText(value, changed);
}

std::string RedactAssignment(std::string_view entry, bool* changed) {
  size_t eq = entry.find('=');
  if (eq == std::string_view::npos) return RedactText(entry, changed);
  std::string out(entry.substr(0, eq + 1));
  out += RedactValue(entry.substr(0, eq), entry.substr(eq + 1), changed);
  return out;
}

namespace {

// The programs whose own options carry a password (see the command_password rules).
struct ArgvContext {
  bool mysql = false;    // mysql, mysqldump, mariadb, mariadb-dump, ...: -pPASSWORD
  bool sshpass = false;  // sshpass -p PASSWORD / -pPASSWORD
  bool curl = false;     // curl -u USER:PASSWORD
};

void NoteProgram(std::string_view word, ArgvContext& context) {
  std::string_view base = word.substr(word.rfind('/') == std::string_view::npos ? 0 : word.rfind('/') + 1);
  auto only_name_chars = [](std::string_view rest) {
    return std::all_of(rest.begin(), rest.end(),
                       [](char c) { return IsUpper(c) || IsLower(c) || c == '_' || c == '-'; });
  };
  for (std::string_view client : {"mysql", "mariadb"}) {
    if (base.substr(0, client.size()) == client && only_name_chars(base.substr(client.size()))) context.mysql = true;
  }
  context.sshpass = context.sshpass || base == "sshpass";
  context.curl = context.curl || base == "curl";
}

// An option whose value is the next element and a secret by its name ("--password", "-token").
bool IsSecretOption(std::string_view word) {
  if (word.size() < 2 || word[0] != '-' || word.find('=') != std::string_view::npos) return false;
  std::string_view name =
      word.substr(word.find_first_not_of('-') == std::string_view::npos ? word.size() : word.find_first_not_of('-'));
  if (name.empty()) return false;
  for (char c : name) {
    if (!IsAlnum(c) && c != '_' && c != '-' && c != '.') return false;
  }
  return IsSecretName(name);
}

// "USER:PASSWORD" with the password redacted ("USER" alone is kept).
std::string RedactUserPassword(std::string_view value) {
  size_t colon = value.find(':');
  if (colon == std::string_view::npos || colon + 1 == value.size() || value.substr(colon + 1) == kRedacted) {
    return std::string(value);
  }
  return std::string(value.substr(0, colon + 1)) + std::string(kRedacted);
}

bool IsCurlUserOption(std::string_view word) {
  return word == "-u" || word == "-U" || word == "--user" || word == "--proxy-user";
}

// One element of argv after `previous`, by the rules that need the argv around it; "" when none
// applies.
std::string RedactArgvByPosition(std::string_view previous, std::string_view word, const ArgvContext& context) {
  // A value that starts with '-' is taken for the next option, as RedactText does.
  bool value = !word.empty() && word[0] != '-';
  if (value && IsSecretOption(previous)) return std::string(kRedacted);
  if (value && context.sshpass && previous == "-p") return std::string(kRedacted);
  if (value && context.curl && IsCurlUserOption(previous)) return RedactUserPassword(word);
  if ((context.mysql || context.sshpass) && word.size() > 2 && word.substr(0, 2) == "-p" && word[2] != '-' &&
      word.substr(2) != kRedacted) {
    return "-p" + std::string(kRedacted);
  }
  if (context.curl && word.size() > 2 && (word[1] == 'u' || word[1] == 'U') && word[0] == '-' && word[2] != '-') {
    return std::string(word.substr(0, 2)) + RedactUserPassword(word.substr(2));
  }
  for (std::string_view option : {"--user=", "--proxy-user="}) {
    if (context.curl && word.substr(0, option.size()) == option) {
      return std::string(option) + RedactUserPassword(word.substr(option.size()));
    }
  }
  return std::string(word);
}

// One element of argv after `previous`, in `context`: the positional rules, then the text rules
// over what they left (a curl `-uNAME VALUE` still has its text redacted), so the result does not
// depend on whether the context was recognised — redacting twice, when the first pass changed
// the program's name, gives what redacting once gave.
std::string RedactArgvElement(std::string_view previous, std::string_view word, const ArgvContext& context) {
  return RedactText(RedactArgvByPosition(previous, word, context));
}

// Characters no POSIX shell gives a meaning to, in any position of a word.
bool IsShellSafe(char c) { return IsAlnum(c) || std::string_view("-_./:=,@%+").find(c) != std::string_view::npos; }

}  // namespace

std::vector<std::string> RedactArgv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  ArgvContext context;
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string_view previous = i > 0 ? std::string_view(argv[i - 1]) : std::string_view();
    out.push_back(RedactArgvElement(previous, argv[i], context));
    NoteProgram(argv[i], context);
  }
  return out;
}

std::string ShellQuote(std::string_view word) {
  if (!word.empty() && std::all_of(word.begin(), word.end(), IsShellSafe)) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string RedactedShellCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& word : RedactArgv(argv)) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(word);
  }
  return out;
}

}  // namespace gputriage::core
