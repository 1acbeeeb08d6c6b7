// Symbol versions a shared library defines (its SHT_GNU_verdef section): what libc.so.6 and
// libstdc++.so.6 on a machine can satisfy ("GLIBC_2.36", "GLIBCXX_3.4.30", "CXXABI_1.3.13").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gputriage::collect {

/// The version names defined by the ELF image `bytes` (read through libelf, which checks every
/// offset against the image), in file order, without the base entry (the soname). Fails with a
/// message naming `source` when the bytes are not an ELF file, are truncated, or have no
/// version-definition section.
core::Result<std::vector<std::string>> ReadElfVersionDefinitions(std::string bytes, std::string_view source);

/// The highest of `names` that start with `prefix` followed by a dotted number ("GLIBCXX_" ->
/// "GLIBCXX_3.4.30"), compared number by number; nullopt when none does.
std::optional<std::string> HighestVersion(const std::vector<std::string>& names, std::string_view prefix);

}  // namespace gputriage::collect
