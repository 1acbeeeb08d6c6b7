// Reads small sysfs / install-tree files through the rooted OsView and turns every failure into
// a `not_collected` note that names the path, at most one note per path (llvm-readobj's
// reportUniqueWarning). Paths in notes are the ones the user would look at on the machine
// ("/sys/class/kfd/..."), never the --root prefix, so notes read the same for captured trees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::amd {

/// Whether a file that does not exist deserves a note. kOptional is for attributes only some
/// boards or kernels have (product_name, ras/, fan1_input); any other failure of an optional
/// file (EIO, EPERM, garbage) is still noted.
enum class Presence { kExpected, kOptional };

class AttributeReader {
 public:
  /// Notes go to `section`, which must outlive the reader.
  AttributeReader(const core::OsView& os, core::Section& section) : os_(os), section_(section) {}

  const core::OsView& os() const { return os_; }

  /// Adds the note {item, reason} unless a note about `path` was already added.
  void Note(std::string_view item, std::string_view path, std::string reason);
  /// Adds the note {item, reason} unless the same pair was already added (for notes that
  /// concern no single file).
  void NoteOnce(std::string item, std::string reason);

  /// The file's bytes (at most `max_bytes`), or nullopt after noting "cannot read PATH: why".
  std::optional<std::string> ReadText(std::string_view path, std::string_view item, Presence presence,
                                      size_t max_bytes = 64u << 10);

  /// A one-line identity string (vbios_version, product_name): trimmed and made valid UTF-8.
  /// Empty content is nullopt without a note (the driver prints "" when the board has none).
  std::optional<std::string> ReadString(std::string_view path, std::string_view item, Presence presence);

  /// A whole-file unsigned decimal no larger than `max`; garbage or a larger value is noted
  /// ("PATH: not an unsigned decimal: \"abc\"", "PATH: implausible value 1234 (expected <= 100)").
  std::optional<uint64_t> ReadU64(std::string_view path, std::string_view item, Presence presence, uint64_t max);

  /// A whole-file signed decimal in [min, max] (hwmon temperatures can be negative).
  std::optional<int64_t> ReadI64(std::string_view path, std::string_view item, Presence presence, int64_t min,
                                 int64_t max);

  /// Directory entries, sorted, or nullopt after noting "cannot list PATH: why".
  std::optional<std::vector<std::string>> ListDir(std::string_view path, std::string_view item, Presence presence);

  /// The errno text of `error`, a failure of TryReadFile / TryListDir / TryReadLink on `path`
  /// ("No such file or directory"): the message without its resolved-path prefix.
  std::string Reason(std::string_view path, const core::Error& error) const;

 private:
  bool Skip(std::string_view path, Presence presence) const;

  const core::OsView& os_;
  core::Section& section_;
  std::set<std::string, std::less<>> noted_paths_;
  std::set<std::pair<std::string, std::string>> noted_pairs_;
};

/// `text` cut to 40 bytes, made valid UTF-8 and put in double quotes, for notes.
std::string QuoteForNote(std::string_view text);

}  // namespace gputriage::amd
