#include "forensics/process_tree.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "core/file.h"
#include "core/text.h"

namespace gputriage::forensics {
namespace {

constexpr size_t kMaxStatBytes = 4096;

}  // namespace

std::optional<ProcStat> ReadProcStat(int pid) {
  // "pid (comm) state ppid ... flags(9) ... starttime(22) ..."; comm may hold spaces and ')'.
  auto text = core::ReadFile(fmt::format("/proc/{}/stat", pid), kMaxStatBytes);
  if (!text.ok()) return std::nullopt;
  size_t open = text->find('(');
  size_t paren = text->rfind(')');
  if (paren == std::string::npos || open == std::string::npos || open > paren) return std::nullopt;
  std::istringstream rest(text->substr(paren + 1));
  ProcStat f;
  f.comm = text->substr(open + 1, paren - open - 1);
  std::string skip;
  if (!(rest >> f.state >> f.ppid)) return std::nullopt;
  for (int field = 5; field < 9; ++field) rest >> skip;  // fields 5..8
  if (!(rest >> f.flags)) return std::nullopt;
  for (int field = 10; field < 22; ++field) rest >> skip;  // fields 10..21
  if (!(rest >> f.start_time)) return std::nullopt;
  return f;
}

std::vector<int> ThreadsOf(int tgid) {
  std::vector<int> tids;
  DIR* dir = opendir(fmt::format("/proc/{}/task", tgid).c_str());
  if (!dir) return tids;
  while (dirent* entry = readdir(dir)) {
    int tid = std::atoi(entry->d_name);
    if (tid > 0) tids.push_back(tid);
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

std::vector<int> LiveDescendants(int ancestor, const std::set<int>& skip) {
  std::multimap<int, int> children;  // ppid -> pid
  std::set<int> zombies;
  DIR* dir = opendir("/proc");
  if (!dir) return {};
  while (dirent* entry = readdir(dir)) {
    int pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::optional<ProcStat> f = ReadProcStat(pid);
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
  std::optional<ProcStat> f = ReadProcStat(pid);
  return f && f->state != 'Z' && f->state != 'X';
}

std::optional<std::string> ProcStatusField(int pid, std::string_view key) {
  // /proc/PID/status is ~1.5 KB.
  auto status = core::ReadFile(fmt::format("/proc/{}/status", pid), 64u << 10);
  if (!status.ok()) return std::nullopt;
  for (std::string_view line : core::SplitLines(*status)) {
    if (line.size() > key.size() && core::StartsWith(line, key) && line[key.size()] == ':') {
      return std::string(core::Trim(line.substr(key.size() + 1)));
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> ProcessStartTime(int pid) {
  std::optional<ProcStat> f = ReadProcStat(pid);
  if (!f) return std::nullopt;
  return f->start_time;
}

}  // namespace gputriage::forensics
