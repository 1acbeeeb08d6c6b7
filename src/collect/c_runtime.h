// The C and C++ runtimes the system's programs load: libc.so.6 (glibc's version and the highest
// GLIBC_ symbol version it defines) and libstdc++.so.6 (the highest GLIBCXX_ and CXXABI_
// versions), found on the loader path. A binary or Python extension built on a newer system
// fails to load here with "version `GLIBCXX_3.4.32' not found"; these say what is available.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/os_view.h"

namespace gputriage::collect {

/// Fills software["glibc"] ({version, version_source, path, max_symbol_version}) and
/// software["libstdcxx"] ({path, file, glibcxx, cxxabi}), looking for the libraries in
/// `loader_dirs` in order. On the live machine the glibc version is this process's
/// (confstr(_CS_GNU_LIBC_VERSION)); under a root it is read from libc.so.6 itself (its
/// "libc-2.31.so" file name or its "release version 2.36." banner). What cannot be found or
/// read is left out and named in `section`'s not_collected.
void CollectCRuntime(const core::OsView& os, const std::vector<std::string>& loader_dirs, core::Json& software,
                     core::Section& section);

/// glibc's banner inside libc.so.6 ("GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release
/// version 2.36.") -> "2.36"; nullopt when `bytes` holds no such banner.
std::optional<std::string> ParseGlibcBanner(std::string_view bytes);

/// "libc-2.31.so" (the file libc.so.6 links to before glibc 2.34) -> "2.31"; nullopt otherwise.
std::optional<std::string> GlibcVersionFromFileName(std::string_view name);

}  // namespace gputriage::collect
