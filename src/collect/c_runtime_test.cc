#include "collect/c_runtime.h"

#include <gnu/libc-version.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "capture_tree.h"
#include "collect/elf_versions.h"
#include "collect/software.h"
#include "core/file.h"
#include "core/subprocess.h"
#include "core/text.h"

namespace gputriage::collect {
namespace {

constexpr const char* kLibstdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
constexpr const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";

std::string ReadAll(const std::string& path) { return core::ReadFile(path, 64u << 20).value(); }

// The highest `prefix` version `readelf -V` lists for `path`, ordered by `sort -V`: computed by
// other tools than the code under test.
std::string HighestByReadelf(const std::string& path, const std::string& prefix) {
  auto run = core::RunWithTimeout(
      {"sh", "-c", "readelf -V --wide '" + path + "' | grep -o '" + prefix + "[0-9][0-9.]*' | sort -uV | tail -n 1"},
      {});
  if (!run.ok() || run->exit_code != 0) return "";
  return std::string(core::Trim(run->stdout_data));
}

// e_shnum and e_shoff of a 64-bit little-endian ELF header, read by hand.
uint64_t HeaderField(const std::string& bytes, size_t offset, size_t size) {
  uint64_t value = 0;
  for (size_t i = 0; i < size; ++i) value |= uint64_t{static_cast<unsigned char>(bytes.at(offset + i))} << (8 * i);
  return value;
}
uint64_t SectionTableOffset(const std::string& bytes) { return HeaderField(bytes, 0x28, 8); }
uint64_t SectionCount(const std::string& bytes) { return HeaderField(bytes, 0x3c, 2); }

TEST(ElfVersionsTest, HighestGlibcxxOfThisMachinesLibstdcxx) {
  if (!std::filesystem::exists(kLibstdcxx)) GTEST_SKIP() << kLibstdcxx << " is not installed";
  std::string expected = HighestByReadelf(kLibstdcxx, "GLIBCXX_");
  if (expected.empty()) GTEST_SKIP() << "readelf (binutils) gave no answer";
  auto names = ReadElfVersionDefinitions(ReadAll(kLibstdcxx), kLibstdcxx);
  ASSERT_TRUE(names.ok()) << names.error().message;
  EXPECT_EQ(HighestVersion(*names, "GLIBCXX_"), expected);
  EXPECT_EQ(HighestVersion(*names, "CXXABI_"), HighestByReadelf(kLibstdcxx, "CXXABI_"));
  EXPECT_EQ(HighestVersion(*names, "GLIBC_"), std::nullopt);  // libstdc++ only needs them
}

// A library built with a version script (tests/fixtures/elf/SOURCE.md): TOOL_1.10 is above
// TOOL_1.2, which string order would get wrong.
TEST(ElfVersionsTest, DefinitionsOfASmallLibrary) {
  std::string bytes = ReadAll(std::string(GT_FIXTURES_DIR) + "/elf/libtool-verdef.so.1");
  auto names = ReadElfVersionDefinitions(bytes, "libtool-verdef.so.1");
  ASSERT_TRUE(names.ok()) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"TOOL_1.2", "TOOL_1.10"}));  // without the soname
  EXPECT_EQ(HighestVersion(*names, "TOOL_"), "TOOL_1.10");
  auto cut = ReadElfVersionDefinitions(bytes.substr(0, 600), "cut.so");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().message, "cut.so: truncated: its " + std::to_string(SectionCount(bytes)) +
                                     " section headers at offset " + std::to_string(SectionTableOffset(bytes)) +
                                     " end past the file's 600 bytes");
}

TEST(ElfVersionsTest, DamagedFilesAreNamedInTheError) {
  auto text = ReadElfVersionDefinitions("not a library\n", "/srv/root/usr/lib/libstdc++.so.6");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message, "/srv/root/usr/lib/libstdc++.so.6: not an ELF file (14 bytes)");
  EXPECT_EQ(ReadElfVersionDefinitions("", "empty.so").error().message, "empty.so: not an ELF file (0 bytes)");
  if (!std::filesystem::exists(kLibstdcxx)) GTEST_SKIP() << kLibstdcxx << " is not installed";
  // The first 64 KiB: a valid ELF header whose section headers lie past the end.
  auto truncated = ReadElfVersionDefinitions(ReadAll(kLibstdcxx).substr(0, 64 << 10), "cut/libstdc++.so.6");
  ASSERT_FALSE(truncated.ok());
  EXPECT_TRUE(truncated.error().message.starts_with("cut/libstdc++.so.6: truncated: its "))
      << truncated.error().message;
  EXPECT_TRUE(truncated.error().message.ends_with(" end past the file's 65536 bytes")) << truncated.error().message;
}

TEST(ElfVersionsTest, DottedVersionsCompareNumberByNumber) {
  EXPECT_LT(core::CompareDottedVersions("3.4.9", "3.4.30"), 0);
  EXPECT_GT(core::CompareDottedVersions("2.36", "2.4"), 0);
  EXPECT_EQ(core::CompareDottedVersions("1.3", "1.3.0"), 0);
  std::vector<std::string> names = {"GLIBC_2.2.5", "GLIBC_PRIVATE", "GLIBC_2.36", "GLIBC_2.4", "GLIBC_"};
  EXPECT_EQ(HighestVersion(names, "GLIBC_"), "GLIBC_2.36");
  EXPECT_EQ(HighestVersion({"GLIBC_PRIVATE"}, "GLIBC_"), std::nullopt);
}

TEST(CRuntimeTest, GlibcBannerAndFileName) {
  if (std::filesystem::exists(kLibc)) {
    EXPECT_EQ(ParseGlibcBanner(ReadAll(kLibc)), gnu_get_libc_version());
  }
  // Inside .rodata, after other bytes (here NULs).
  EXPECT_EQ(ParseGlibcBanner(std::string(2, '\0') +
                             "GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36.\n"),
            "2.36");
  EXPECT_EQ(ParseGlibcBanner("GNU C Library (GNU libc) development release version 2.40.9000.\n"), "2.40.9000");
  EXPECT_EQ(ParseGlibcBanner("GNU C Library, release version unknown"), std::nullopt);
  EXPECT_EQ(GlibcVersionFromFileName("libc-2.31.so"), "2.31");
  EXPECT_EQ(GlibcVersionFromFileName("libc.so.6"), std::nullopt);
}

TEST(CRuntimeTest, LiveMachine) {
  core::OsView os = core::OsView::Live();
  core::Json software;
  core::Section section;
  CollectCRuntime(os, LoaderDirectories(os, {}), software, section);
  EXPECT_EQ(software["glibc"]["version"], gnu_get_libc_version());
  EXPECT_EQ(software["glibc"]["version_source"], "confstr");
  if (!std::filesystem::exists(kLibc) || !std::filesystem::exists(kLibstdcxx)) GTEST_SKIP() << "not Debian's layout";
  EXPECT_EQ(software["glibc"]["max_symbol_version"], HighestByReadelf(kLibc, "GLIBC_"));
  EXPECT_EQ(software["libstdcxx"]["glibcxx"], HighestByReadelf(kLibstdcxx, "GLIBCXX_"));
  for (const auto& note : section.not_collected) ADD_FAILURE() << note.item << ": " << note.reason;
}

// A rooted tree with this machine's libraries copied in: the version comes from libc.so.6's
// banner, and the symlinked libstdc++ names its file.
TEST(CRuntimeTest, RootedTreeReadsTheFiles) {
  if (!std::filesystem::exists(kLibc) || !std::filesystem::exists(kLibstdcxx)) GTEST_SKIP() << "not Debian's layout";
  testing::TempDir dir;
  testing::WriteFile(dir.path(), "/usr/lib/x86_64-linux-gnu/libc.so.6", ReadAll(kLibc));
  std::string real = std::filesystem::read_symlink(kLibstdcxx).filename();
  testing::WriteFile(dir.path(), "/usr/lib/x86_64-linux-gnu/" + real, ReadAll(kLibstdcxx));
  std::filesystem::create_symlink(real, dir.path() + kLibstdcxx);
  core::OsView os = core::OsView::Rooted(dir.path()).value();
  core::Json software;
  core::Section section;
  CollectCRuntime(os, LoaderDirectories(os, {}), software, section);
  EXPECT_EQ(software["glibc"]["version"], gnu_get_libc_version());
  EXPECT_EQ(software["glibc"]["version_source"], "banner");
  EXPECT_EQ(software["glibc"]["path"], "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(software["libstdcxx"]["file"], real);
  EXPECT_EQ(software["libstdcxx"]["glibcxx"], HighestByReadelf(kLibstdcxx, "GLIBCXX_"));
  EXPECT_TRUE(section.not_collected.empty());
}

// An old layout (libc.so.6 -> libc-2.31.so) whose files are damaged: the version from the file
// name, the damage named in not_collected, nothing invented.
TEST(CRuntimeTest, DamagedLibrariesInARootedTree) {
  testing::TempDir dir;
  testing::WriteFile(dir.path(), "/lib/x86_64-linux-gnu/libc-2.31.so", "truncated");
  std::filesystem::create_symlink("libc-2.31.so", dir.path() + "/lib/x86_64-linux-gnu/libc.so.6");
  testing::WriteFile(dir.path(), "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "");
  core::OsView os = core::OsView::Rooted(dir.path()).value();
  core::Json software;
  core::Section section;
  CollectCRuntime(os, LoaderDirectories(os, {}), software, section);
  EXPECT_EQ(software["glibc"], core::Json::parse(R"({"version": "2.31", "version_source": "file_name",
                                                    "path": "/lib/x86_64-linux-gnu/libc.so.6"})"));
  EXPECT_EQ(software["libstdcxx"], core::Json::parse(R"({"path": "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"})"));
  ASSERT_EQ(section.not_collected.size(), 2u);
  EXPECT_EQ(section.not_collected[0].item, "software.glibc.max_symbol_version");
  EXPECT_EQ(section.not_collected[0].reason,
            os.Resolve("/lib/x86_64-linux-gnu/libc.so.6") + ": not an ELF file (9 bytes)");
  EXPECT_EQ(section.not_collected[1].reason,
            os.Resolve("/usr/lib/x86_64-linux-gnu/libstdc++.so.6") + ": not an ELF file (0 bytes)");
}

TEST(CRuntimeTest, NothingFoundIsSaid) {
  testing::TempDir dir;
  core::OsView os = core::OsView::Rooted(dir.path()).value();
  core::Json software = core::Json::object();
  core::Section section;
  CollectCRuntime(os, {"/lib64"}, software, section);
  EXPECT_EQ(software, core::Json::object());
  ASSERT_EQ(section.not_collected.size(), 2u);
  EXPECT_EQ(section.not_collected[0].reason, "no libc.so.6 in the loader directories (/lib64)");
}

}  // namespace
}  // namespace gputriage::collect
