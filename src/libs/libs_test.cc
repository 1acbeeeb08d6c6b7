// `gputriage libs` against the system's own answers: the libraries of tests/libs (built with the
// tests) copied into layouts, compared with ldd, ldd -r, LD_DEBUG=libs, ldconfig -p and readelf
// run by the test; the Debian ROCm and CUDA toolkit libraries as large real inputs.
#include "libs/libs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "core/file.h"
#include "core/fs.h"
#include "core/json_parse.h"
#include "core/model.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "libs/components.h"
#include "libs/diff.h"
#include "libs/ld_cache.h"
#include "libs/loader_config.h"
#include "libs/process_libs.h"
#include "libs/trace.h"

namespace gputriage::libs {
namespace {

namespace fs = std::filesystem;

std::string RunTool(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  core::RunOptions options;
  options.timeout = std::chrono::milliseconds(20000);
  options.extra_env = env;
  options.max_stderr_bytes = 4u << 20;
  auto outcome = core::RunWithTimeout(argv, options);
  return outcome.ok() ? outcome->stdout_data + outcome->stderr_tail : "";
}

// `ldd`'s "name => path" pairs ("not found" for a missing one).
std::map<std::string, std::string> Ldd(const std::string& path, const std::vector<std::string>& env = {}) {
  std::map<std::string, std::string> out;
  const std::string text = RunTool({"ldd", path}, env);  // the lines point into it
  for (std::string_view line : core::SplitLines(text)) {
    size_t arrow = line.find(" => ");
    if (arrow == std::string_view::npos) continue;
    std::string name(core::Trim(line.substr(0, arrow)));
    std::string_view rest = line.substr(arrow + 4);
    out[name] = rest.starts_with("not found") ? "not found" : std::string(rest.substr(0, rest.find(" (")));
  }
  return out;
}

const catalog::LibraryTables& Catalog() {
  auto c = catalog::BuiltinLibraryTables();
  EXPECT_TRUE(c.ok());
  return **c;
}

// A program layout: T/bin/gtprog (RUNPATH $ORIGIN/../lib), T/lib/{libgtuser.so, libgtabi.so.1
// of version `abi`, libgtgone.so unless `gone` is false}.
class Layout {
 public:
  Layout(int abi, bool gone) {
    char dir[] = "/tmp/gt-libs-XXXXXX";
    root_ = mkdtemp(dir);
    fs::create_directories(root_ + "/bin");
    fs::create_directories(root_ + "/lib");
    std::string libs = GT_TESTLIBS_DIR;
    fs::copy_file(libs + "/gtprog", Bin());
    fs::copy_file(libs + "/libgtuser.so", Lib("libgtuser.so"));
    fs::copy_file(libs + "/v" + std::to_string(abi) + "/libgtabi.so.1", Lib("libgtabi.so.1"));
    if (gone) fs::copy_file(libs + "/libgtgone.so", Lib("libgtgone.so"));
  }
  ~Layout() { fs::remove_all(root_); }
  std::string Bin() const { return root_ + "/bin/gtprog"; }
  std::string Lib(const std::string& name) const { return root_ + "/lib/" + name; }
  std::string Dir(const std::string& name) const {
    fs::create_directories(root_ + "/" + name);
    return root_ + "/" + name;
  }

 private:
  std::string root_;
};

const core::LibraryEntry* Find(const core::LibraryReport& r, const std::string& soname) {
  for (const core::LibraryEntry& l : r.libraries) {
    if (l.soname == soname) return &l;
  }
  return nullptr;
}

// Every library ldd names resolves to the same file, and nothing more is found.
void ExpectSameAsLdd(const core::LibraryReport& report, const std::string& path,
                     const std::vector<std::string>& env = {}) {
  std::map<std::string, std::string> ldd = Ldd(path, env);
  ASSERT_FALSE(ldd.empty()) << "ldd printed nothing for " << path;
  for (const auto& [name, where] : ldd) {
    if (where == "not found") {
      bool missing = false;
      for (const core::MissingLibrary& m : report.missing) missing = missing || m.soname == name;
      EXPECT_TRUE(missing) << name << " is not found by ldd but not reported missing";
      continue;
    }
    const core::LibraryEntry* l = Find(report, name);
    ASSERT_NE(l, nullptr) << name << " (ldd: " << where << ") is not in the closure";
    EXPECT_EQ(fs::canonical(*l->path), fs::canonical(where)) << name;
  }
}

TEST(ResolveLibraries, RunpathWithOriginAsLddSees) {
  Layout t(1, true);
  core::LibraryReport r = ResolveLibraries({t.Bin()}, {}, Catalog());
  ExpectSameAsLdd(r, t.Bin());
  const core::LibraryEntry* user = Find(r, "libgtuser.so");
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->found_via, "runpath");
  EXPECT_EQ(user->needed_by, std::vector<std::string>{t.Bin()});
  // libgtuser.so has no RUNPATH of its own: its needs come from the cache or the system
  // directories, not from the program's RUNPATH, and libgtabi.so.1 is in neither.
  bool abi_missing = false;
  for (const core::MissingLibrary& m : r.missing) abi_missing = abi_missing || m.soname == "libgtabi.so.1";
  EXPECT_TRUE(abi_missing);
  EXPECT_EQ(Ldd(t.Bin())["libgtabi.so.1"], "not found");
}

TEST(ResolveLibraries, LdLibraryPathShadowsAndMissingDependency) {
  Layout t(1, false);
  std::string shadow = t.Dir("shadow");
  fs::copy_file(std::string(GT_TESTLIBS_DIR) + "/v1/libgtabi.so.1", shadow + "/libgtabi.so.1");
  LibsOptions options;
  options.ld_library_path = shadow + ":" + t.Dir("lib");
  core::LibraryReport r = ResolveLibraries({t.Bin()}, options, Catalog());
  std::vector<std::string> env = {"LD_LIBRARY_PATH=" + *options.ld_library_path};
  ExpectSameAsLdd(r, t.Bin(), env);
  const core::LibraryEntry* abi = Find(r, "libgtabi.so.1");
  ASSERT_NE(abi, nullptr);
  EXPECT_EQ(*abi->path, shadow + "/libgtabi.so.1");
  EXPECT_EQ(abi->found_via, "ld_library_path");
  ASSERT_EQ(r.shadowed.size(), 1u);
  EXPECT_EQ(r.shadowed[0].shadowed, std::vector<std::string>{t.Lib("libgtabi.so.1")});
  ASSERT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.missing[0].soname, "libgtgone.so");
  EXPECT_FALSE(r.missing[0].searched.empty());
  bool finding = false;
  for (const core::Finding& f : r.findings) finding = finding || f.id == "libs.missing_library";
  EXPECT_TRUE(finding);
}

// A 32-bit file under the right name is skipped, as the loader skips it ("wrong ELF class").
TEST(ResolveLibraries, SkipsAFileOfAnotherElfClass) {
  Layout t(1, true);
  std::string shadow = std::string(GT_TESTLIBS_DIR) + "/elf32";  // a real i386 libgtgone.so (tests/libs/gone32.s)
  LibsOptions options;
  options.ld_library_path = shadow + ":" + t.Dir("lib");
  core::LibraryReport r = ResolveLibraries({t.Bin()}, options, Catalog());
  ExpectSameAsLdd(r, t.Bin(), {"LD_LIBRARY_PATH=" + *options.ld_library_path});
  EXPECT_EQ(*Find(r, "libgtgone.so")->path, t.Lib("libgtgone.so"));
  auto elf32 = ReadElfDynamic(shadow + "/libgtgone.so", true);
  ASSERT_TRUE(elf32.ok());
  EXPECT_EQ(elf32->elf_class, 32);
  EXPECT_EQ(elf32->soname, "libgtgone.so");
}

// A big-endian 64-bit library (no big-endian toolchain here: the bytes are laid out by the ELF
// specification): read, and its needs searched, like any other.
TEST(ElfDynamic, BigEndian64) {
  std::string f(0x200, '\0');
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) f[at + i] = static_cast<char>(v >> (8 * (n - 1 - i)));
  };
  f.replace(0, 7,
            "\x7f"
            "ELF\x02\x02\x01");
  put(16, 3, 2);   // ET_DYN
  put(18, 21, 2);  // EM_PPC64
  put(20, 1, 4);   // EV_CURRENT
  put(32, 64, 8);  // e_phoff
  put(52, 64, 2);  // e_ehsize
  put(54, 56, 2);  // e_phentsize
  put(56, 2, 2);   // e_phnum
  put(64, 1, 4);   // PT_LOAD: whole file at vaddr 0
  put(64 + 8, 0, 8), put(64 + 16, 0, 8), put(64 + 32, 0x200, 8), put(64 + 40, 0x200, 8);
  put(120, 2, 4);  // PT_DYNAMIC at 0x100, 5 entries
  put(120 + 8, 0x100, 8), put(120 + 16, 0x100, 8), put(120 + 32, 80, 8), put(120 + 40, 80, 8);
  const std::string strtab = std::string("\0libfoo.so\0libbe.so\0", 20);
  f.replace(0x180, strtab.size(), strtab);
  uint64_t dyn[][2] = {{1, 1}, {14, 11}, {5, 0x180}, {10, 20}, {0, 0}};  // NEEDED, SONAME, STRTAB, STRSZ, NULL
  for (int i = 0; i < 5; ++i) put(0x100 + 16 * i, dyn[i][0], 8), put(0x100 + 16 * i + 8, dyn[i][1], 8);
  auto r = ParseElfDynamic({reinterpret_cast<const uint8_t*>(f.data()), f.size()}, "be.so", false);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->big_endian);
  EXPECT_EQ(r->elf_class, 64);
  EXPECT_EQ(r->needed, std::vector<std::string>{"libfoo.so"});
  EXPECT_EQ(r->soname, "libbe.so");
  EXPECT_NE(r->Describe().find("big-endian"), std::string::npos);
  // Corrupt dynamic sections: a string table that lies outside the file is an error naming it;
  // a DT_NEEDED offset outside the table is a problem, the other names still read.
  const std::string good = f;
  put(0x100 + 16 * 3 + 8, 0x10000, 8);  // DT_STRSZ: 64 KiB of a 512-byte file
  auto bad = ParseElfDynamic({reinterpret_cast<const uint8_t*>(f.data()), f.size()}, "be.so", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("be.so: the dynamic string table"), std::string::npos) << bad.error().message;
  f = good;
  put(0x100 + 8, 500, 8);  // DT_NEEDED's string offset past the 20-byte table
  auto partial = ParseElfDynamic({reinterpret_cast<const uint8_t*>(f.data()), f.size()}, "be.so", false);
  ASSERT_TRUE(partial.ok());
  EXPECT_TRUE(partial->needed.empty());
  EXPECT_EQ(partial->soname, "libbe.so");
  ASSERT_EQ(partial->problems.size(), 1u);
  EXPECT_NE(partial->problems[0].find("outside the string table"), std::string::npos);
}

// Each name of the dynamic section is read alone, 512 bytes from its offset: a longer one (an
// RPATH of many directories) is read from the whole table, and nothing is cut.
TEST(ElfDynamic, NameLongerThanItsReadWindow) {
  std::string f(0x800, '\0');
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) f[at + i] = static_cast<char>(v >> (8 * i));  // little-endian
  };
  f.replace(0, 7,
            "\x7f"
            "ELF\x02\x01\x01");
  put(16, 3, 2), put(18, 62, 2), put(20, 1, 4);  // ET_DYN, EM_X86_64, EV_CURRENT
  put(32, 64, 8), put(52, 64, 2), put(54, 56, 2), put(56, 2, 2);
  put(64, 1, 4);  // PT_LOAD: whole file at vaddr 0
  put(64 + 32, 0x800, 8), put(64 + 40, 0x800, 8);
  put(120, 2, 4);  // PT_DYNAMIC at 0x100, 6 entries
  put(120 + 8, 0x100, 8), put(120 + 16, 0x100, 8), put(120 + 32, 96, 8), put(120 + 40, 96, 8);
  std::string rpath;
  while (rpath.size() < 700) rpath += "/opt/some/long/vendor/tree/lib:";
  rpath.pop_back();
  const std::string strtab = std::string("\0libfoo.so\0liblong.so\0", 22) + rpath + '\0';
  f.replace(0x180, strtab.size(), strtab);
  // NEEDED, SONAME, RPATH, STRTAB, STRSZ, NULL
  uint64_t dyn[][2] = {{1, 1}, {14, 11}, {15, 22}, {5, 0x180}, {10, strtab.size()}, {0, 0}};
  for (int i = 0; i < 6; ++i) put(0x100 + 16 * i, dyn[i][0], 8), put(0x100 + 16 * i + 8, dyn[i][1], 8);
  auto r = ParseElfDynamic({reinterpret_cast<const uint8_t*>(f.data()), f.size()}, "long.so", false);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->problems.empty());
  EXPECT_EQ(r->needed, std::vector<std::string>{"libfoo.so"});
  EXPECT_EQ(r->soname, "liblong.so");
  ASSERT_TRUE(r->rpath);
  EXPECT_GT(rpath.size(), 512u);
  EXPECT_EQ(*r->rpath, rpath);
}

// The undefined-symbol check's answer is remembered by the identities of the closure's files:
// used while they are unchanged, read again when one changes; a damaged cache file or one that
// cannot be written changes nothing in the answer.
TEST(ResolveLibraries, SymbolCacheAnswersOnlyForUnchangedFiles) {
  Layout t(1, true);
  LibsOptions options;
  options.ld_library_path = t.Dir("lib");
  const std::string cache = t.Dir("cache") + "/closure-symbols.json";
  options.symbol_cache = cache;
  core::LibraryReport first = ResolveLibraries({t.Bin()}, options, Catalog());
  EXPECT_TRUE(first.undefined_symbols.empty());
  ASSERT_TRUE(fs::exists(cache));
  auto saved = core::ParseJson(*core::ReadFile(cache, 1 << 20), cache);
  ASSERT_TRUE(saved.ok());
  ASSERT_EQ((*saved)["closures"].size(), 1u);

  // The answer comes from the cache while the files are unchanged: one written into the file by
  // hand is what the next run reports.
  core::Json edited = *saved;
  for (auto& [key, entry] : edited["closures"].items())
    entry["undefined_symbols"].push_back({{"symbol", "from_the_cache"}, {"needed_by", t.Bin()}});
  ASSERT_TRUE(core::WriteFileAtomically(cache, edited.dump()).ok());
  core::LibraryReport cached = ResolveLibraries({t.Bin()}, options, Catalog());
  ASSERT_EQ(cached.undefined_symbols.size(), 1u);
  EXPECT_EQ(cached.undefined_symbols[0].symbol, "from_the_cache");

  // libgtabi.so.1 replaced by v2 (which drops gt_abi_b): another file, another key, the tables
  // are read again and the real answer comes back, the same as without a cache.
  fs::remove(t.Lib("libgtabi.so.1"));
  fs::copy_file(std::string(GT_TESTLIBS_DIR) + "/v2/libgtabi.so.1", t.Lib("libgtabi.so.1"));
  LibsOptions uncached = options;
  uncached.symbol_cache.reset();
  core::LibraryReport truth = ResolveLibraries({t.Bin()}, uncached, Catalog());
  ASSERT_EQ(truth.undefined_symbols.size(), 1u);
  EXPECT_EQ(truth.undefined_symbols[0].symbol, "gt_abi_b");
  core::LibraryReport changed = ResolveLibraries({t.Bin()}, options, Catalog());
  EXPECT_EQ(core::ToJson(changed).dump(), core::ToJson(truth).dump());
  // Edited in place (same inode, new modification time): read again too.
  {
    auto entries = core::ParseJson(*core::ReadFile(cache, 1 << 20), cache);
    ASSERT_TRUE(entries.ok());
    EXPECT_EQ((*entries)["closures"].size(), 2u);  // the old closure's answer is kept
  }
  fs::copy_file(std::string(GT_TESTLIBS_DIR) + "/v1/libgtabi.so.1", t.Lib("libgtabi.so.1"),
                fs::copy_options::overwrite_existing);
  EXPECT_TRUE(ResolveLibraries({t.Bin()}, options, Catalog()).undefined_symbols.empty());

  // Binary garbage in the cache: an empty cache, rewritten.
  ASSERT_TRUE(core::WriteFileAtomically(cache, std::string("\x00\xff{\"format\":1,", 13)).ok());
  EXPECT_TRUE(ResolveLibraries({t.Bin()}, options, Catalog()).undefined_symbols.empty());
  auto rewritten = core::ParseJson(*core::ReadFile(cache, 1 << 20), cache);
  ASSERT_TRUE(rewritten.ok());
  EXPECT_EQ((*rewritten)["format"], 1);
  // A cache that cannot be written (its directory is a file): the same answer.
  std::ofstream(t.Dir("cache") + "/file") << "x";
  options.symbol_cache = t.Dir("cache") + "/file/closure-symbols.json";
  fs::remove(t.Lib("libgtabi.so.1"));
  fs::copy_file(std::string(GT_TESTLIBS_DIR) + "/v2/libgtabi.so.1", t.Lib("libgtabi.so.1"));
  EXPECT_EQ(core::ToJson(ResolveLibraries({t.Bin()}, options, Catalog())).dump(), core::ToJson(truth).dump());
}

// Several roots are resolved side by side; the report is the same as one root after another.
TEST(ResolveLibraries, SideBySideAsOneAfterAnother) {
  std::vector<std::string> roots;
  for (const char* name : {"libstdc++.so.6", "libelf.so.1", "libdw.so.1", "libyaml-cpp.so.0.7", "libre2.so.9",
                           "libsqlite3.so.0", "libzstd.so.1", "libarchive.so.13"}) {
    std::string path = std::string("/usr/lib/x86_64-linux-gnu/") + name;
    if (fs::exists(path)) roots.push_back(path);
  }
  ASSERT_GE(roots.size(), 4u);
  LibsOptions serial;
  serial.threads = 1;
  LibsOptions parallel;
  parallel.threads = 4;
  core::LibraryReport a = ResolveLibraries(roots, serial, Catalog());
  core::LibraryReport b = ResolveLibraries(roots, parallel, Catalog());
  EXPECT_GT(a.libraries.size(), roots.size());
  EXPECT_EQ(core::ToJson(a).dump(), core::ToJson(b).dump());
}

TEST(ResolveLibraries, UndefinedSymbolsAsLddRSees) {
  Layout t(2, true);
  LibsOptions options;
  options.ld_library_path = t.Dir("lib");
  core::LibraryReport r = ResolveLibraries({t.Bin()}, options, Catalog());
  std::set<std::string> ours, theirs;
  for (const core::UndefinedSymbol& u : r.undefined_symbols) ours.insert(u.symbol);
  std::string ldd_r = RunTool({"ldd", "-r", t.Bin()}, {"LD_LIBRARY_PATH=" + *options.ld_library_path});
  for (std::string_view line : core::SplitLines(ldd_r)) {
    size_t at = line.find("undefined symbol: ");
    if (at == std::string_view::npos) continue;
    std::string_view rest = line.substr(at + 18);
    theirs.insert(std::string(rest.substr(0, rest.find_first_of(",\t "))));
  }
  EXPECT_EQ(ours, theirs) << ldd_r;
  ASSERT_EQ(r.undefined_symbols.size(), 1u);
  EXPECT_EQ(r.undefined_symbols[0].symbol, "gt_abi_b");
  EXPECT_EQ(r.undefined_symbols[0].version, "GTABI_1.0");
  EXPECT_EQ(r.undefined_symbols[0].needed_by, t.Lib("libgtuser.so"));
}

std::set<std::string> ReadelfDefined(const std::string& path) {
  std::set<std::string> out;
  const std::string text = RunTool({"readelf", "--dyn-syms", "-W", path});
  for (std::string_view line : core::SplitLines(text)) {
    std::vector<std::string_view> f = core::SplitWhitespace(line);
    if (f.size() < 8 || f[6] == "UND" || f[4] == "LOCAL" || f[3] == "SECTION") continue;
    std::string_view name = f[7];
    out.insert(std::string(name.substr(0, name.find('@'))));
  }
  return out;
}

TEST(DiffLibraries, DroppedSymbolIsAnAbiBreakAsReadelfShows) {
  std::string v1 = std::string(GT_TESTLIBS_DIR) + "/v1/libgtabi.so.1",
              v2 = std::string(GT_TESTLIBS_DIR) + "/v2/libgtabi.so.1";
  auto d = DiffLibraries(v1, v2);
  ASSERT_TRUE(d.ok()) << d.error().message;
  std::set<std::string> a = ReadelfDefined(v1), b = ReadelfDefined(v2), removed, added;
  for (const std::string& s : a)
    if (!b.count(s)) removed.insert(s);
  for (const std::string& s : b)
    if (!a.count(s)) added.insert(s);
  std::set<std::string> our_removed, our_added;
  for (const auto& e : d->removed) our_removed.insert(e.symbol);
  for (const auto& e : d->added)
    if (!a.count(e.symbol)) our_added.insert(e.symbol);
  EXPECT_EQ(our_removed, removed);
  EXPECT_EQ(our_added, added);
  EXPECT_EQ(our_removed, std::set<std::string>{"gt_abi_b"});
  ASSERT_EQ(d->changed.size(), 1u);
  EXPECT_EQ(d->changed[0].symbol, "gt_abi_table");
  EXPECT_EQ(d->changed[0].old_size, 16u);
  EXPECT_EQ(d->changed[0].size, 32u);
  EXPECT_TRUE(d->abi_break);
  auto same = DiffLibraries(v1, v1);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->abi_break);
  EXPECT_TRUE(same->removed.empty() && same->added.empty() && same->changed.empty());
}

TEST(LdCache, HasEveryX8664EntryLdconfigLists) {
  auto cache = ReadLdCache("/etc/ld.so.cache");
  ASSERT_TRUE(cache.ok()) << cache.error().message;
  size_t checked = 0;
  const std::string listing = RunTool({"ldconfig", "-p"});
  for (std::string_view line : core::SplitLines(listing)) {
    if (line.find("(libc6,x86-64") == std::string_view::npos) continue;
    std::string name(core::Trim(line.substr(0, line.find(" ("))));
    std::string path(core::Trim(line.substr(line.find("=> ") + 3)));
    bool found = false;
    for (const LdCacheEntry* e : cache->Find(name)) found = found || e->path == path;
    EXPECT_TRUE(found) << name << " => " << path;
    ++checked;
  }
  EXPECT_GT(checked, 50u);
  EXPECT_FALSE(ParseLdCache("glibc-ld.so.cache1.1\x05", "x").ok());
  EXPECT_FALSE(ParseLdCache("not a cache", "x").ok());
}

TEST(LoaderConfig, AsTheLoaderDescribesItself) {
  auto c = ParseLdSoHelp(RunTool({"/lib64/ld-linux-x86-64.so.2", "--help"}));
  ASSERT_TRUE(c.ok());
  // libc's directory (ldd's answer) is one of the system directories.
  std::string libc = Ldd("/bin/true")["libc.so.6"];
  EXPECT_NE(std::find(c->system_dirs.begin(), c->system_dirs.end(), fs::path(libc).parent_path().string()),
            c->system_dirs.end());
  // A loader never lists 80 legacy hwcap names; every subset of them would be a directory
  // (the fuzzer's input that took 2^80 steps): at most 4 are taken.
  std::string help = "Legacy HWCAP subdirectories under library search path directories:\n";
  for (int i = 0; i < 80; ++i) help += "  cap" + std::to_string(i) + " (supported, searched)\n";
  auto many = ParseLdSoHelp("Shared library search path:\n  /lib (system search path)\n" + help);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->legacy_subdirs.size(), 15u);  // the non-empty subsets of 4 names
  LoaderConfig d;
  d.lib = "lib/x86_64-linux-gnu";
  EXPECT_EQ(
      ExpandSearchPath("$ORIGIN/../lib:${ORIGIN}/x:/a/$LIB/$PLATFORM:/bad/$NOPE::/b/", "/opt/p/bin", d),
      (std::vector<std::string>{"/opt/p/bin/../lib", "/opt/p/bin/x", "/a/lib/x86_64-linux-gnu/x86_64", ".", "/b"}));
}

TEST(ElfDynamic, BadInputsNameTheFile) {
  std::string user = std::string(GT_TESTLIBS_DIR) + "/libgtuser.so";
  auto whole = ReadElfDynamic(user, true);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->needed, (std::vector<std::string>{"libgtabi.so.1", "libgtgone.so"}));
  std::ifstream in(user, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  // Every truncation and a byte flipped anywhere: an error or a result, never a crash.
  for (size_t n = 0; n < bytes.size(); n += 97) {
    auto r = ParseElfDynamic({reinterpret_cast<const uint8_t*>(bytes.data()), n}, "cut.so", true);
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("cut.so"), std::string::npos) << r.error().message;
    }
  }
  // Failed before: a file cut inside its program headers was "statically linked".
  {
    auto eh = ParseElfDynamic({reinterpret_cast<const uint8_t*>(bytes.data()), 64 + 20}, "cut.so", false);
    ASSERT_FALSE(eh.ok());
    EXPECT_NE(eh.error().message.find("cut.so: "), std::string::npos) << eh.error().message;
    EXPECT_NE(eh.error().message.find("truncated or corrupt"), std::string::npos) << eh.error().message;
    EXPECT_EQ(eh.error().message.find("statically"), std::string::npos) << eh.error().message;
  }
  // Failed before: a FIFO blocked `libs FIFO` and `libs diff FIFO X` forever (waiting for a writer).
  {
    char dir[] = "/tmp/gt_libs_fifo_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    std::string fifo = std::string(dir) + "/pipe";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    auto r = ReadElfDynamic(fifo, true);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, fifo + ": not a regular file (a FIFO): not an ELF file");
    auto diff = DiffLibraries(fifo, user);
    ASSERT_FALSE(diff.ok());
    EXPECT_NE(diff.error().message.find("a FIFO"), std::string::npos);
    fs::remove_all(dir);
  }
  auto text = ReadElfDynamic("/etc/hostname", false);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("/etc/hostname"), std::string::npos);
  EXPECT_FALSE(ReadElfDynamic("/nonexistent/libx.so", false).ok());
  core::LibraryReport r = ResolveLibraries({"/etc/hostname", user}, {}, Catalog());
  ASSERT_FALSE(r.errors.empty());
  EXPECT_EQ(r.errors.front().path, "/etc/hostname");
  EXPECT_NE(Find(r, "libgtuser.so"), nullptr);  // the rest is still reported
}

TEST(TraceLibraries, RecordsSearchesAndOpensAsLdDebugShows) {
  Layout t(1, true);
  std::string audit = std::string(GT_BUILD_DIR) + "/lib/libgputriage-audit.so";
  int status = -1;
  auto r = TraceLibraries({t.Bin()}, audit, Catalog(), &status);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(status, 127);  // libgtabi.so.1 is not found: the loader refuses to start it
  std::set<std::string> searched;
  for (const core::LoaderEvent& e : r->trace) {
    if (e.kind == "search") searched.insert(e.name);
  }
  // Every file LD_DEBUG=libs says the loader tried (without the auditor) is a search event, the
  // glibc-hwcaps and legacy hwcaps subdirectories of each search directory included: which of
  // those the loader tries depends on the CPU (x86-64-v4, tls/haswell/avx512_1/x86_64, ...), and
  // the auditor must not change them (it needs no library, so the loader searches nothing for it).
  std::string debug = RunTool({t.Bin()}, {"LD_DEBUG=libs"});
  size_t tried = 0, in_subdirectories = 0;
  for (std::string_view line : core::SplitLines(debug)) {
    size_t at = line.find("trying file=");
    if (at == std::string_view::npos) continue;
    ++tried;
    std::string file(line.substr(at + 12));
    if (file.find("/glibc-hwcaps/") != std::string::npos || file.find("/tls/") != std::string::npos)
      ++in_subdirectories;
    EXPECT_TRUE(searched.count(file)) << line;
  }
  // glibc 2.33-2.36 (Debian 12) tries legacy tls/ on every x86-64 CPU and glibc-hwcaps/ on most.
  EXPECT_GT(in_subdirectories, 0u);
  EXPECT_GT(tried, 0u);
  EXPECT_NE(Find(*r, "libgtuser.so"), nullptr);
}

// Failed before: a trace larger than the limit was blamed on "a static or setuid program".
TEST(TraceLibraries, ATraceTooLargeIsNotCalledAStaticProgram) {
  std::string audit = std::string(GT_BUILD_DIR) + "/lib/libgputriage-audit.so";
  auto large = TraceCommand({"true"}, audit, 64);
  ASSERT_FALSE(large.ok());
  EXPECT_NE(large.error().message.find("the loader's audit trace could not be read: "), std::string::npos)
      << large.error().message;
  EXPECT_NE(large.error().message.find("more than the 64 bytes allowed"), std::string::npos) << large.error().message;
  EXPECT_EQ(large.error().message.find("static"), std::string::npos) << large.error().message;
  // A static program is: the loader never runs, so no trace is written.
  std::string static_program = std::string(GT_BUILD_DIR) + "/tests/crashers/static_abort";
  if (access(static_program.c_str(), X_OK) == 0) {
    auto none = TraceCommand({static_program}, audit);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().message.find("a static or setuid program"), std::string::npos) << none.error().message;
  }
}

TEST(ProcessLibraries, ThisProcessInLoadOrder) {
  auto r = ProcessLibraries(getpid(), Catalog());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->libraries.empty());
  EXPECT_EQ(fs::canonical(*r->libraries.front().path), fs::canonical("/proc/self/exe"));
  for (const core::LibraryError& e : r->errors)
    EXPECT_EQ(e.message.find("address order"), std::string::npos) << e.message;
  EXPECT_NE(Find(*r, "libc.so.6"), nullptr);
}

TEST(Components, ReleasesFromFileNames) {
  const auto& rules = Catalog().gpu_libraries;
  auto cublas = catalog::ClassifyLibrary(rules, "libcublas.so.12.8.4.1");
  ASSERT_TRUE(cublas);
  EXPECT_EQ(cublas->component, "cublas");
  EXPECT_EQ(cublas->release, "cuda 12");
  auto hip = catalog::ClassifyLibrary(rules, "libamdhip64.so.6.2.60204");
  ASSERT_TRUE(hip);
  EXPECT_EQ(hip->release, "rocm 6.2.4");
  auto libc = catalog::ClassifyLibrary(rules, "libc.so.6");
  ASSERT_TRUE(libc);
  EXPECT_EQ(libc->version, std::nullopt);
  EXPECT_FALSE(catalog::ClassifyLibrary(rules, "libz.so.1"));
  core::LibraryReport r;
  for (const char* p : {"/usr/local/cuda/lib64/libcudart.so.13.0.96", "/venv/nvidia/cublas/lib/libcublas.so.12",
                        "/usr/local/cuda/lib64/libcublas.so.13", "/usr/lib/x86_64-linux-gnu/libcuda.so.575.57.08"}) {
    core::LibraryEntry e;
    e.path = p;
    e.soname = fs::path(p).filename().string();
    r.libraries.push_back(e);
  }
  ClassifyLibraries(r.libraries, Catalog());
  std::set<std::string> ids;
  for (const core::Finding& f : LibraryFindings(r, Catalog(), true)) ids.insert(f.id);
  EXPECT_TRUE(ids.count("libs.mixed_cuda_releases"));
  EXPECT_TRUE(ids.count("libs.duplicate_library"));
  EXPECT_TRUE(ids.count("compat.cuda-13-runtime-needs-driver-580"));  // driver 575 under a CUDA 13 runtime
}

TEST(Compat, VersionsAndRanges) {
  EXPECT_LT(core::CompareDottedVersions("12.9", "12.10"), 0);
  EXPECT_EQ(core::CompareDottedVersions("13", "13.0.0"), 0);
  EXPECT_GT(core::CompareDottedVersions("2.11.0+cu130", "2.9"), 0);
  auto range = catalog::ParseVersionRange(">=13.0, <14");
  ASSERT_TRUE(range.ok());
  EXPECT_TRUE(catalog::Satisfies("13.0.96", *range));
  EXPECT_FALSE(catalog::Satisfies("14.0", *range));
  EXPECT_FALSE(catalog::ParseVersionRange("~13").ok());
  const auto& entries = Catalog().compat;
  EXPECT_FALSE(catalog::EvaluateCompat(entries, {{"cuda-runtime", "13.0"}, {"nvidia-driver", "575.57.08"}}).empty());
  EXPECT_TRUE(catalog::EvaluateCompat(entries, {{"cuda-runtime", "13.0"}, {"nvidia-driver", "580.159.04"}}).empty());
  EXPECT_TRUE(catalog::EvaluateCompat(entries, {{"cuda-runtime", "13.0"}}).empty());  // driver unknown: not judged
}

// Two libraries that need each other (linked here with the C compiler that built the tests):
// each is loaded once, as the loader does, and the closure matches ldd.
TEST(ResolveLibraries, DependencyCycle) {
  char dir[] = "/tmp/gt-cycle-XXXXXX";
  std::string d = mkdtemp(dir);
  std::ofstream(d + "/a.c") << "int b(void); int a(void) { return b(); }\n";
  std::ofstream(d + "/b.c") << "int a(void); int b(void) { return 1; } int c(void) { return a(); }\n";
  auto cc = [&](const std::string& args) { return std::system(("cc -shared -fPIC " + args + " 2>&1").c_str()); };
  ASSERT_EQ(cc("-o " + d + "/libcycb.so -Wl,-soname,libcycb.so " + d + "/b.c"), 0);
  ASSERT_EQ(cc("-o " + d + "/libcyca.so -Wl,-soname,libcyca.so " + d + "/a.c -L" + d + " -lcycb"), 0);
  ASSERT_EQ(cc("-o " + d + "/libcycb.so -Wl,-soname,libcycb.so " + d + "/b.c -L" + d + " -lcyca"), 0);
  LibsOptions options;
  options.ld_library_path = d;
  core::LibraryReport r = ResolveLibraries({d + "/libcyca.so"}, options, Catalog());
  ExpectSameAsLdd(r, d + "/libcyca.so", {"LD_LIBRARY_PATH=" + d});
  size_t a = 0;
  for (const core::LibraryEntry& l : r.libraries) a += l.soname == "libcyca.so";
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(Find(r, "libcyca.so")->needed_by, std::vector<std::string>{d + "/libcycb.so"});
  EXPECT_TRUE(r.undefined_symbols.empty());
  fs::remove_all(d);
}

// Large real inputs: the CUDA toolkit's cuBLAS and Debian's ROCm HIP runtime, against ldd.
TEST(ResolveLibraries, RealGpuLibrariesAsLddSees) {
  size_t checked = 0;
  for (const char* path : {"/usr/local/cuda/lib64/libcublas.so.13", "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"}) {
    if (!fs::exists(path)) continue;
    core::LibraryReport r = ResolveLibraries({path}, {}, Catalog());
    ExpectSameAsLdd(r, path);
    std::string ldd_r = RunTool({"ldd", "-r", path});
    size_t theirs = 0;
    for (std::string_view line : core::SplitLines(ldd_r))
      theirs += line.find("undefined symbol: ") != std::string_view::npos;
    EXPECT_EQ(r.undefined_symbols.size(), theirs) << path;
    EXPECT_TRUE(r.libraries.front().component.has_value()) << path;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "neither the CUDA toolkit's cuBLAS nor Debian's libamdhip64 is installed";
}

}  // namespace
}  // namespace gputriage::libs
