// The text-log -> /dev/kmsg converter used by the collector tests, and tests of it.
#include "collect/kernel_log/fixture_log.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <re2/re2.h>
#include <stdlib.h>
#include <time.h>

#include <sstream>
#include <string>

#include "core/os_view.h"

namespace gputriage::kernel_log::test_support {
namespace {

struct LineTime {
  std::optional<uint64_t> monotonic_us;
  std::optional<int64_t> wall_us;
};

int64_t ParseCtime(const std::string& text) {
  std::tm tm{};
  if (::strptime(text.c_str(), "%a %b %d %H:%M:%S %Y", &tm) == nullptr) return -1;
  return static_cast<int64_t>(::timegm(&tm));
}

/// Removes "> ", a syslog/journal prefix and a timestamp from `line`; returns the time.
LineTime StripPrefixes(re2::StringPiece& line) {
  static const RE2 kIso(R"((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.?(\d*)(?:Z|[+-]\d\d:\d\d) \S+ kernel: )");
  static const RE2 kJournal(R"([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ kernel: )");
  static const RE2 kKernel(R"(kernel: )");
  static const RE2 kMonotonic(R"(\[ *(\d+)\.(\d{1,6})\] ?)");
  static const RE2 kCtime(R"(\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\] ?)");
  LineTime time;
  std::string iso, fraction;
  if (RE2::Consume(&line, kIso, &iso, &fraction)) {
    std::tm tm{};
    ::strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    fraction = (fraction + "000000").substr(0, 6);
    time.wall_us = static_cast<int64_t>(::timegm(&tm)) * 1000000 + std::stoll(fraction);
  } else if (!RE2::Consume(&line, kJournal)) {
    RE2::Consume(&line, kKernel);
  }
  std::string seconds, micros, ctime;
  if (RE2::Consume(&line, kMonotonic, &seconds, &micros)) {
    micros = (micros + "000000").substr(0, 6);
    time.monotonic_us = std::stoull(seconds) * 1000000 + std::stoull(micros);
  } else if (RE2::Consume(&line, kCtime, &ctime)) {
    time.wall_us = ParseCtime(ctime) * 1000000;
  }
  return time;
}

/// The /dev/kmsg escaping of printk (kernel/printk/printk.c, msg_add_ext_text).
std::string EscapeKmsg(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < ' ' || byte >= 127 || byte == '\\') {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

struct PendingRecord {
  uint64_t monotonic_us = 0;
  std::string message;
};

}  // namespace

std::string TextLogToKmsg(std::string_view text, uint64_t boot_s, uint64_t first_seq) {
  std::vector<PendingRecord> records;
  uint64_t last_us = 0;
  std::istringstream lines{std::string(text)};
  for (std::string raw; std::getline(lines, raw);) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    re2::StringPiece line(raw);
    if (line.starts_with("> ")) line.remove_prefix(2);
    size_t indent = 0;
    while (indent < line.size() && (line[indent] == ' ' || line[indent] == '\t')) ++indent;
    line.remove_prefix(indent);
    if (line.empty() || line == "..." || line == "--") continue;
    re2::StringPiece before = line;
    LineTime time = StripPrefixes(line);
    bool has_prefix = line.data() != before.data();
    if (!has_prefix && indent > 0 && !records.empty()) {
      records.back().message += "\n" + std::string(line);
      continue;
    }
    uint64_t us = last_us == 0 ? 1000000 : last_us + 1000;
    if (time.monotonic_us) {
      us = *time.monotonic_us;
    } else if (time.wall_us && *time.wall_us >= static_cast<int64_t>(boot_s) * 1000000) {
      us = static_cast<uint64_t>(*time.wall_us) - boot_s * 1000000;
    }
    last_us = us;
    records.push_back({us, std::string(line)});
  }
  std::string out;
  uint64_t seq = first_seq;
  for (const PendingRecord& record : records) {
    out += fmt::format("6,{},{},-;{}\n", seq++, record.monotonic_us, EscapeKmsg(record.message));
  }
  return out;
}

LogTree::LogTree(std::string_view kmsg, std::optional<uint64_t> boot_s) {
  gputriage::testing::WriteFile(root(), "/dev/kmsg", kmsg);
  if (boot_s) {
    gputriage::testing::WriteFile(
        root(), "/proc/stat",
        "cpu  10 0 20 300 0 0 0 0 0 0\nintr 1 0\nctxt 42\nbtime " + std::to_string(*boot_s) + "\nprocesses 7\n");
  }
}

core::Section LogTree::Collect(const Options& options) const {
  core::Result<core::OsView> os = core::OsView::Rooted(root());
  if (!os.ok()) {
    ADD_FAILURE() << os.error().message;
    return {};
  }
  return kernel_log::Collect(*os, options);
}

namespace {

TEST(TextLogToKmsgTest, ConvertsMonotonicTimestampsAndEscapes) {
  EXPECT_EQ(TextLogToKmsg("[   87.373517] NVRM: a\\b\tc\n[90.5] x\n", 0, 7),
            "6,7,87373517,-;NVRM: a\\x5cb\\x09c\n"
            "6,8,90500000,-;x\n");
}

TEST(TextLogToKmsgTest, StripsQuoteJournalAndKernelPrefixes) {
  EXPECT_EQ(TextLogToKmsg("> [ 1.000001] a\n"
                          "Oct 28 21:12:41 host kernel: b\n"
                          "kernel: [ 2.5] c\n"
                          "    Jul 23 05:38:28 dom0 kernel: d\n",
                          0),
            "6,0,1000001,-;a\n6,1,1001001,-;b\n6,2,2500000,-;c\n6,3,2501000,-;d\n");
}

TEST(TextLogToKmsgTest, WallClockPrefixesBecomeMonotonicAfterBoot) {
  // 2024-08-30T11:43:09Z is 1725018189 s; boot 1000 s before.
  EXPECT_EQ(TextLogToKmsg("[Fri Aug 30 11:43:09 2024] NVRM: x\n"
                          "2024-08-30T11:43:10.250000+00:00 host kernel: y\n",
                          1725017189),
            "6,0,1000000000,-;NVRM: x\n6,1,1001250000,-;y\n");
}

TEST(TextLogToKmsgTest, JoinsIndentedContinuationsAndDropsElisions) {
  EXPECT_EQ(TextLogToKmsg("[ 5.0] NVRM: The NVIDIA GPU\n"
                          "        NVRM: fallen off the bus.\n"
                          "...\n--\n\n"
                          "NVRM: no time\n",
                          0),
            "6,0,5000000,-;NVRM: The NVIDIA GPU\\x0aNVRM: fallen off the bus.\n"
            "6,1,5001000,-;NVRM: no time\n");
}

TEST(ReadFixtureTest, DropsTheSourceLine) {
  std::string text = ReadFixture("h200-dmesg-xid31-xid43.txt");
  EXPECT_EQ(text.rfind("[    3.602509] NVRM: Persistence mode", 0), 0u) << text.substr(0, 80);
}

}  // namespace
}  // namespace gputriage::kernel_log::test_support
