#include "forensics/process_tree.h"

#include <dirent.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "core/file.h"

namespace gputriage::forensics {
namespace {

constexpr size_t kMaxStatBytes = 4096;

struct StatFields {
  char state = '?';
  int ppid = 0;
  uint64_t start_time = 0;
};

// /proc/PID/stat: "pid (comm) state ppid ... starttime(22) ..."; comm may hold spaces and ')'.
std::optional<StatFields> ReadStat(int pid) {
  auto text = core::ReadFile(fmt::format("/proc/{}/stat", pid), kMaxStatBytes);
  if (!text.ok()) return std::nullopt;
  size_t paren = text->rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream rest(text->substr(paren + 1));
  StatFields f;
  std::string skip;
  if (!(rest >> f.state >> f.ppid)) return std::nullopt;
  for (int field = 5; field < 22; ++field) rest >> skip;  // fields 5..21
  if (!(rest >> f.start_time)) return std::nullopt;
  return f;
}

}  // namespace

std::vector<int> LiveDescendants(int ancestor, const std::set<int>& skip) {
  std::multimap<int, int> children;  // ppid -> pid
  std::set<int> zombies;
  DIR* dir = opendir("/proc");
  if (!dir) return {};
  while (dirent* entry = readdir(dir)) {
    int pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::optional<StatFields> f = ReadStat(pid);
    if (!f) continue;  // exited meanwhile
    children.emplace(f->ppid, pid);
    if (f->state == 'Z' || f->state == 'X') zombies.insert(pid);
  }
  closedir(dir);
  std::vector<int> found, queue{ancestor};
  std::set<int> visited{ancestor};  // a pid reused while /proc was read could make a cycle
  while (!queue.empty()) {
    int parent = queue.back();
    queue.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      if (skip.count(it->second) || !visited.insert(it->second).second) continue;
      if (!zombies.count(it->second)) found.push_back(it->second);
      queue.push_back(it->second);
    }
  }
  return found;
}

bool IsLive(int pid) {
  std::optional<StatFields> f = ReadStat(pid);
  return f && f->state != 'Z' && f->state != 'X';
}

std::optional<uint64_t> ProcessStartTime(int pid) {
  std::optional<StatFields> f = ReadStat(pid);
  if (!f) return std::nullopt;
  return f->start_time;
}

}  // namespace gputriage::forensics
