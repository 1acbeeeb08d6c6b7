// `libs diff OLD NEW`: the exported dynamic symbols of two versions of one library compared by
// name and symbol version, as comparing two `objdump -T` listings by hand would. A removed
// symbol, an old version no longer defined, a changed symbol type and a changed object size are
// ABI breaks: a program linked against OLD can fail to load or misbehave with NEW.
#pragma once

#include <string>

#include "core/libs.h"
#include "core/result.h"
#include "libs/elf_dynamic.h"

namespace gputriage::libs {

core::SymbolDiff DiffSymbols(const ElfDynamic& old_lib, const ElfDynamic& new_lib);

/// Reads both files; fails naming the one that cannot be read.
core::Result<core::SymbolDiff> DiffLibraries(const std::string& old_path, const std::string& new_path);

}  // namespace gputriage::libs
