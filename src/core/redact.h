// Secret redaction for anything gputriage writes out: environment variables, log excerpts, crash
// bundles, bug reports. Two independent signals, either one redacts:
//   - the NAME of a variable or key looks secret (HF_TOKEN, DB_PASS, WANDB_API_KEY, apiKey);
//   - the VALUE has the shape of a known credential, whatever it is called (ghp_..., AKIA...,
//     eyJ...eyJ..., a PEM private key, the password of scheme://user:password@host).
// Only the secret span is replaced, by kRedacted, so the text around it stays readable.
// All functions take arbitrary bytes (not necessarily UTF-8), never throw and are thread-safe;
// the patterns are compiled once, on first use.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gputriage::core {

/// What every secret is replaced with.
inline constexpr std::string_view kRedacted = "<redacted>";

/// True when a variable or key called `name` holds a secret by its name alone
/// (case-insensitive; words split on anything but ASCII letters and digits, and on camelCase):
///   - a word containing PASSWORD, PASSWD, PASSPHRASE, SECRET, CREDENTIAL, APIKEY, ACCESSKEY,
///     PRIVATEKEY, SESSIONKEY or SIGNINGKEY, or ending in TOKEN (HF_TOKEN, AUTHTOKEN); not
///     TOKENS or TOKENIZERS_PARALLELISM (counts and switches), nor a tokenizer's EOS_TOKEN,
///     PAD_TOKEN or TOKEN_ID;
///   - the words PASS, AUTH, AUTHORIZATION, COOKIE, CREDS, SIGNATURE, or PWD in a name of two
///     words or more (bare PWD is the shell's working directory);
///   - KEY after a secret qualifier anywhere (API_KEY, ACCESS_KEY_ID, PRIVATE_KEY, SSH_KEY), or
///     KEY as the last of two words or more unless the word before makes it a lookup or public
///     key (KAGGLE_KEY and OPENAI_KEY are secret; CACHE_KEY, PRIMARY_KEY, PUBLIC_KEY, GPG_KEY and
///     a bare KEY are not).
/// Not secret, although a word matches, when the last word says the variable names a place, a
/// kind or a count rather than the secret itself: *_FILE, *_PATH, *_DIR, *_URL, *_HOST,
/// *_SOCK, *_TYPE, *_COUNT, ... (PASSWORD_FILE holds a path; a URL still has its password
/// redacted by the value rules).
bool IsSecretName(std::string_view name);

/// One secret found in a text: bytes [begin, end) and the rule that found it ("github",
/// "aws_access_key_id", "url_password", "key_value", ...). Spans are sorted and disjoint.
struct SecretSpan {
  size_t begin = 0;
  size_t end = 0;
  std::string_view rule;
};

/// The secrets in `text`: known token formats (as whole words: "xghp_..." is not one), URL
/// passwords, PEM private keys (everything after the BEGIN line, END line included, or to the
/// end of the text when cut short), "Bearer <token>", the password glued to a MySQL client's
/// `-p` ("mysql -u root -pVALUE"), AWS secret access keys (40 characters of mixed-case base64,
/// on a line that also holds an AWS access key id or says "secret access key"; hex digests and
/// addresses never qualify), and the values of secret-named keys
/// (IsSecretName) in `key=value`, `key: value`, `"key": "value"` and command-line `--key value`
/// forms; an HTTP scheme word before the value ("Basic x") is kept. Overlapping finds are merged
/// into one span whose rule is the first one's. A find that already reads kRedacted is skipped.
/// Linear in the size of `text` (4 MiB of adversarial input: about a second).
std::vector<SecretSpan> FindSecrets(std::string_view text);

/// Extra patterns of the user's own secrets (RE2, matched case-sensitively anywhere: an internal
/// host name, a project code), redacted like the built-in rules (rule "user"): `--redact` and the
/// config file's `redact` list. Call before any redaction (at start-up, one thread); a pattern
/// that does not compile or can match the empty string is refused with a message naming it.
/// Replaces any patterns set before.
Result<void> SetUserSecretPatterns(const std::vector<std::string>& patterns);

/// True when `text` holds a known token format or a PEM private key (not counting key=value
/// forms, URL passwords and Bearer credentials, which need context). For checks such as "did
/// anything slip through"; false for any output of RedactText.
bool ContainsKnownToken(std::string_view text);

/// `text` with every span of FindSecrets(text) replaced by kRedacted; everything else is kept
/// byte for byte. Meant for log text and command lines. Sets `*changed` (when given) to whether
/// the result differs from `text`. Redacting the result again changes nothing more: when a
/// replacement makes a new secret appear (it may remove the '/' that ended a URL password
/// around it), the text is redacted again, until a pass finds nothing (at most 9 passes; real
/// text needs one, and a second that finds nothing only when the first found something).
std::string RedactText(std::string_view text, bool* changed = nullptr);

/// The value of variable `name` as it may be shown: kRedacted as a whole when
/// IsSecretName(name) (an empty value stays empty), else RedactText(value), and also kRedacted
/// as a whole for a Weights & Biases key (40 hex digits, optionally "prefix-"d) under a name
/// containing WANDB. Bytes are not sanitised: callers that emit JSON apply SanitizeUtf8
/// afterwards. Sets `*changed` (when given) to whether the result differs from `value`.
std::string RedactValue(std::string_view name, std::string_view value, bool* changed = nullptr);

/// `entry` ("NAME=value", as in environ or /proc/PID/environ) with its value redacted by
/// RedactValue; an entry without '=' is treated as text (RedactText).
std::string RedactAssignment(std::string_view entry, bool* changed = nullptr);

/// A command line (argv, one element per word) as it may be shown: every element through
/// RedactText, and, because an option and its value are separate elements there:
///   - the element after an option whose name is secret (`--password VALUE`, `--api-key VALUE`,
///     `-token VALUE`: IsSecretName of the name without its dashes) becomes kRedacted, unless it
///     looks like the next option (`--token --verbose`);
///   - from a MySQL/MariaDB client or sshpass on (`mysql`, `mysqldump`, `mariadb-dump`, ...,
///     also after `env`, `sudo`), the password glued to `-p` (`-pVALUE` -> `-p<redacted>`), and
///     sshpass's `-p VALUE`;
///   - from curl on, the password of `-u`/`--user`/`--proxy-user USER:PASSWORD`.
/// Same length and order as `argv`; RedactArgv(RedactArgv(x)) == RedactArgv(x).
std::vector<std::string> RedactArgv(const std::vector<std::string>& argv);

/// `word` as one word for POSIX sh: unchanged when it has only characters no shell treats
/// specially (letters, digits, and `-_./:=,@%+`), else in single quotes with each `'` written
/// `'\''`; "" becomes `''`.
std::string ShellQuote(std::string_view word);

/// The command line `argv` as one line to paste into a POSIX shell: RedactArgv, then
/// ShellQuote of each element, joined by spaces.
std::string RedactedShellCommand(const std::vector<std::string>& argv);

}  // namespace gputriage::core
