#include "core/maps.h"

#include <charconv>

#include <fmt/format.h>

#include "core/text.h"

namespace gputriage::core {
namespace {

bool ParseHex(std::string_view text, uint64_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && end == text.data() + text.size();
}

// Splits off the next space-separated field (runs of spaces count as one).
std::string_view NextField(std::string_view& rest) {
  size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(start);
  size_t end = rest.find(' ');
  std::string_view field = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  return field;
}

bool ParseDecimal(std::string_view text, uint64_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 10);
  return ec == std::errc() && end == text.data() + text.size();
}

bool IsStackName(const std::string& path) { return path == "[stack]" || path.rfind("[stack:", 0) == 0; }

}  // namespace

std::optional<Mapping> ParseMapsLine(std::string_view line) {
  std::string_view rest = line;
  std::string_view range = NextField(rest);
  std::string_view perms = NextField(rest);
  std::string_view offset = NextField(rest);
  std::string_view dev = NextField(rest);
  std::string_view inode = NextField(rest);
  if (inode.empty() || dev.find(':') == std::string_view::npos || perms.size() != 4) {
    return std::nullopt;
  }
  size_t dash = range.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  Mapping m;
  if (!ParseHex(range.substr(0, dash), m.start) || !ParseHex(range.substr(dash + 1), m.end) ||
      !ParseHex(offset, m.file_offset) || !ParseDecimal(inode, m.inode) || m.end < m.start) {
    return std::nullopt;
  }
  m.perms = std::string(perms);
  size_t path_start = rest.find_first_not_of(' ');
  if (path_start != std::string_view::npos) m.path = std::string(rest.substr(path_start));
  return m;
}

std::vector<Mapping> ParseMaps(std::string_view text, size_t* malformed) {
  std::vector<Mapping> maps;
  size_t bad = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty()) continue;
    if (auto m = ParseMapsLine(line)) {
      maps.push_back(std::move(*m));
    } else {
      ++bad;
    }
  }
  if (malformed) *malformed = bad;
  return maps;
}

const Mapping* FindMapping(const std::vector<Mapping>& maps, uint64_t address) {
  for (const Mapping& m : maps) {
    if (address >= m.start && address < m.end) return &m;
  }
  return nullptr;
}

FaultLocation LocateFault(uint64_t fault_address, const std::vector<Mapping>& maps,
                          std::optional<uint64_t> stack_pointer, uint64_t stack_slack) {
  FaultLocation loc;
  const Mapping* hit = FindMapping(maps, fault_address);
  bool near_sp = stack_pointer && (fault_address > *stack_pointer ? fault_address - *stack_pointer
                                                                  : *stack_pointer - fault_address) <= stack_slack;
  bool guard_mapping = hit && hit->perms.size() == 4 && hit->perms.compare(0, 3, "---") == 0;
  bool below_stack = false;
  if (!hit) {
    for (const Mapping& m : maps) {
      // The kernel keeps stack_guard_gap (256 pages, 1 MiB) free below a growing stack.
      if (IsStackName(m.path) && fault_address < m.start && m.start - fault_address <= (1u << 20)) {
        below_stack = true;
      }
    }
  }
  if (fault_address < kNullPageLimit) {
    loc.kind = "null-page";
    loc.description = fault_address == 0
                          ? "address 0x0: a null pointer was dereferenced"
                          : fmt::format(
                                "address {} is in the null page: a null pointer plus an offset of {} bytes "
                                "(a field or element of a null object)",
                                Hex(fault_address), fault_address);
    return loc;
  }
  if ((near_sp && (!hit || guard_mapping)) || below_stack) {
    loc.kind = "stack-guard";
    if (hit) loc.mapping = *hit;
    loc.description = fmt::format(
        "address {} is {} the stack pointer {}, in the guard area below a thread stack: the "
        "stack ran out (deep or unbounded recursion, or a huge local array)",
        Hex(fault_address), near_sp ? "next to" : "below", stack_pointer ? Hex(*stack_pointer) : "?");
    return loc;
  }
  if (hit) {
    loc.kind = "mapped";
    loc.mapping = *hit;
    std::string what = hit->path.empty() ? "an anonymous mapping" : hit->path;
    loc.description =
        fmt::format("address {} is inside {} ({}-{} {}, offset {:#x} into it)", Hex(fault_address), what,
                    Hex(hit->start), Hex(hit->end), hit->perms.empty() ? "?" : hit->perms, fault_address - hit->start);
    return loc;
  }
  loc.kind = "unmapped";
  const Mapping* below = nullptr;
  const Mapping* above = nullptr;
  for (const Mapping& m : maps) {
    if (m.end <= fault_address && (!below || m.end > below->end)) below = &m;
    if (m.start > fault_address && (!above || m.start < above->start)) above = &m;
  }
  std::string context;
  if (below) {
    context = fmt::format("; nearest mapping below ends {:#x} bytes earlier ({})", fault_address - below->end,
                          below->path.empty() ? "anonymous" : below->path);
  }
  if (above) {
    context += fmt::format("; nearest mapping above starts {:#x} bytes later ({})", above->start - fault_address,
                           above->path.empty() ? "anonymous" : above->path);
  }
  loc.description = fmt::format(
      "address {} is not mapped: a wild or dangling pointer, or "
      "memory already unmapped{}",
      Hex(fault_address), context);
  return loc;
}

}  // namespace gputriage::core
