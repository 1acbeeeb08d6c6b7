// Test support (linked into gt_kernel_log_test only; implemented in fixture_log_test.cc, on the
// shared tests/support/capture_tree.h): turns
// the human-readable kernel logs of tests/fixtures/kernel_log/ into a captured tree with a
// dev/kmsg of real /dev/kmsg records, so the tests run the real Collect() on real logs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "capture_tree.h"
#include "collect/kernel_log/kernel_log.h"
#include "core/model.h"

namespace gputriage::kernel_log::test_support {

/// The content of tests/fixtures/kernel_log/<name> without its first "# source: ..." line.
/// Fails the test (ADD_FAILURE) and returns "" when the file cannot be read.
inline std::string ReadFixture(std::string_view name) {
  return gputriage::testing::ReadFixture("kernel_log/" + std::string(name), {.missing_fails_test = true});
}

/// Converts a text log into /dev/kmsg records ("6,SEQ,US,-;MESSAGE\n", priority 6, sequence
/// numbers from `first_seq`). Understood per line: a Markdown "> " prefix; journalctl / syslog
/// prefixes ("Oct 28 21:12:41 host kernel: ", "2024-08-18T01:19:31.351160+00:00 host kernel: ",
/// "kernel: "), removed; "[  123.456789]" (the monotonic time) or "[Tue Feb 10 19:23:20 2026]"
/// (dmesg -T, read as UTC: monotonic = that time - `boot_s`). Lines with no time get one 1 ms
/// after the record before (the first at 1 s). An indented line without a prefix continues the
/// record before it (a multi-line printk); "...", "--" and blank lines are dropped. Bytes the
/// kernel escapes (control bytes, '\\', bytes >= 0x7f) are written as \xNN.
std::string TextLogToKmsg(std::string_view text, uint64_t boot_s, uint64_t first_seq = 0);

/// Options for the /dev/kmsg reader alone: a LogTree holds no journal (journal_test.cc builds
/// trees with one).
inline Options KmsgOnly() {
  Options options;
  options.previous_boot = std::nullopt;
  return options;
}

/// A temporary captured tree: <dir>/dev/kmsg and, when `boot_s` is set, <dir>/proc/stat with a
/// btime line. Removed with everything under it when destroyed.
class LogTree {
 public:
  LogTree(std::string_view kmsg, std::optional<uint64_t> boot_s);

  const std::string& root() const { return dir_.path(); }
  /// Runs the real collector on OsView::Rooted(root()).
  core::Section Collect(const Options& options = KmsgOnly()) const;

 private:
  gputriage::testing::TempDir dir_;
};

}  // namespace gputriage::kernel_log::test_support
