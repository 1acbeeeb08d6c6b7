// The packed-bundle reader on archives built here with libarchive: a good one, and the shapes an
// attacker would send (path traversal, absolute paths, links, devices, too many members).
#include "pack/packed_bundle.h"

#include <archive.h>
#include <archive_entry.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gputriage::pack {
namespace {

struct Member {
  std::string path;
  std::string data;
  mode_t type = AE_IFREG;
  std::string link;  // symlink target or hard-link source
  bool hardlink = false;
};

// A tar, zstd-compressed unless `plain`, of `members` in the order given.
std::string BuildTar(const std::vector<Member>& members, bool plain = false) {
  archive* a = archive_write_new();
  if (!plain) archive_write_add_filter_zstd(a);
  archive_write_set_format_pax_restricted(a);
  std::vector<char> buf(1u << 20);
  size_t used = 0;
  EXPECT_EQ(archive_write_open_memory(a, buf.data(), buf.size(), &used), ARCHIVE_OK);
  for (const Member& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.path.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, 0644);
    if (m.type == AE_IFLNK) archive_entry_set_symlink(e, m.link.c_str());
    if (m.hardlink) archive_entry_set_hardlink(e, m.link.c_str());
    if (m.type == AE_IFCHR) archive_entry_set_rdev(e, 0x0103);
    archive_entry_set_size(e, m.type == AE_IFREG && !m.hardlink ? static_cast<la_int64_t>(m.data.size()) : 0);
    EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (m.type == AE_IFREG && !m.data.empty()) archive_write_data(a, m.data.data(), m.data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return std::string(buf.data(), used);
}

const std::string kProcess = R"({"pid": 42, "signal": "SIGSEGV"})";

core::Result<PackedBundle> Read(const std::string& bytes, const PackedBundleLimits& limits = {}) {
  return ReadPackedBundle(FromMemory(bytes), "b.tar.zst", limits);
}

TEST(PackedBundle, ReadsTheLayoutFilesAndNamesTheOthers) {
  std::string tar = BuildTar({{"b/", "", AE_IFDIR},
                              {"b/core.zst", std::string(5000, 'x')},
                              {"b/findings.json", "{}"},
                              {"b/process.json", kProcess},
                              {"b/stderr.tail", "boom\n"}});
  auto packed = Read(tar);
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  EXPECT_EQ(packed->top, "b");
  EXPECT_EQ(packed->files["process.json"].bytes, kProcess);
  EXPECT_EQ(packed->files["stderr.tail"].bytes, "boom\n");
  EXPECT_EQ(packed->other_members, (std::vector<std::string>{"core.zst", "findings.json"}));
  auto bundle = ReadPackedBundleModel(FromMemory(tar), "b.tar.zst");
  ASSERT_TRUE(bundle.ok()) << bundle.error().message;
  EXPECT_EQ(bundle->process.primary.pid, 42);
  EXPECT_EQ(bundle->stderr_tail, "boom\n");
  // An uncompressed tar reads the same.
  auto plain = Read(BuildTar({{"b/process.json", kProcess}}, true));
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->files["process.json"].bytes, kProcess);
}

TEST(PackedBundle, ATailLargerThanItsBoundKeepsItsEndAsADirectoryDoes) {
  std::string big(core::kBundleTailMaxBytes, 'a');
  big += "THE END\n";
  auto packed = Read(BuildTar({{"b/process.json", kProcess}, {"b/stderr.tail", big}}));
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  const core::BundleFileBytes& tail = packed->files["stderr.tail"];
  EXPECT_EQ(tail.bytes.size(), core::kBundleTailMaxBytes);
  EXPECT_EQ(tail.bytes.substr(tail.bytes.size() - 8), "THE END\n");
  EXPECT_EQ(tail.problem,
            "1048584 bytes, more than the 1048576 gputriage reads of it; its last 1048576 bytes are used");
}

struct Refusal {
  std::vector<Member> members;
  std::string message;
};

TEST(PackedBundle, HostileArchivesAreRefusedNamingTheMember) {
  const std::string tail = "; not a packed crash bundle";
  std::vector<Refusal> cases = {
      {{{"b/process.json", kProcess}, {"b/../../etc/cron.d/x", "evil"}},
       "b.tar.zst: member 'b/../../etc/cron.d/x' has a '..' path component (path traversal)" + tail},
      {{{"/etc/passwd", "evil"}}, "b.tar.zst: member '/etc/passwd' has an absolute path" + tail},
      {{{"b/process.json", kProcess}, {"b/stderr.tail", "", AE_IFLNK, "/etc/shadow"}},
       "b.tar.zst: member 'b/stderr.tail' is a symbolic link" + tail},
      {{{"b/process.json", kProcess}, {"b/kmsg.log", "", AE_IFREG, "b/process.json", true}},
       "b.tar.zst: member 'b/kmsg.log' is a hard link" + tail},
      {{{"b/process.json", kProcess}, {"b/stdout.tail", "", AE_IFCHR}},
       "b.tar.zst: member 'b/stdout.tail' is a character device" + tail},
      {{{"b/process.json", kProcess}, {"b/x/y", "z"}},
       "b.tar.zst: member 'b/x/y' is in a subdirectory (a bundle has none)" + tail},
      {{{"b/process.json", kProcess}, {"c/process.json", kProcess}},
       "b.tar.zst: member 'c/process.json' is outside the top directory 'b'" + tail},
      {{{"b/process.json", kProcess}, {"b/process.json", "{}"}},
       "b.tar.zst: member 'b/process.json' appears twice" + tail},
      {{{"b/process.json", kProcess}, {"b//stderr.tail", "x"}},
       "b.tar.zst: member 'b//stderr.tail' has an empty or '.' path component" + tail},
  };
  for (const Refusal& c : cases) {
    auto packed = Read(BuildTar(c.members));
    ASSERT_FALSE(packed.ok()) << c.message;
    EXPECT_EQ(packed.error().message, c.message);
    EXPECT_EQ(packed.error().code, core::ErrorCode::kInvalidArgument);
  }
}

TEST(PackedBundle, LimitsOnMembersAndTotalSize) {
  std::vector<Member> many = {{"b/process.json", kProcess}};
  for (int i = 0; i < 5; ++i) many.push_back({"b/extra" + std::to_string(i), "x"});
  auto packed = Read(BuildTar(many), {.max_members = 4});
  ASSERT_FALSE(packed.ok());
  EXPECT_EQ(packed.error().message, "b.tar.zst: more than 4 members; a packed crash bundle has about 14");
  auto big =
      Read(BuildTar({{"b/process.json", kProcess}, {"b/core", std::string(100000, '\0')}}), {.max_total_bytes = 50000});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message, "b.tar.zst: its members hold more than 50000 bytes together; not read further");
}

TEST(PackedBundle, DamagedArchivesAreErrorsNotCrashes) {
  std::string tar = BuildTar({{"b/process.json", kProcess}, {"b/stderr.tail", std::string(200000, 'q')}});
  for (size_t cut : {size_t{10}, tar.size() / 2, tar.size() - 3}) {
    auto packed = Read(tar.substr(0, cut));
    EXPECT_FALSE(packed.ok()) << "cut at " << cut;
    if (!packed.ok()) {
      EXPECT_EQ(packed.error().message.rfind("b.tar.zst: ", 0), 0u) << packed.error().message;
    }
  }
  auto empty = Read("");
  ASSERT_FALSE(empty.ok());
  auto text = Read("just some text, not an archive\n");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("b.tar.zst: "), std::string::npos) << text.error().message;
}

TEST(PackedBundle, ABundleWithoutProcessJsonOrManifestIsNotABundle) {
  auto bundle = ReadPackedBundleModel(FromMemory(BuildTar({{"b/stderr.tail", "x"}})), "b.tar.zst");
  ASSERT_FALSE(bundle.ok());
  EXPECT_EQ(bundle.error().message, "b.tar.zst: not a crash bundle (neither process.json nor manifest.json)");
}

}  // namespace
}  // namespace gputriage::pack
