// `gputriage bundles pack`, packed bundles read by `analyze` and `report`, and zstd cores
// (`run --core`'s core.zst, systemd-coredump's core.*.zst), on bundles and cores that `gputriage
// run` wrote for real crashes of tests/crashers. Archives are opened here with libarchive, the
// way a bug-report reader would open them.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"
#include "integration_util.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

// Secrets planted in the job: in its environment (printed to stderr), its argv and its stderr.
const std::string kEnvSecret = "plantedEnvSecret4242";
const std::string kArgvSecret = "plantedArgvSecret9191";
const std::string kToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

struct PackCliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

struct TarMember {
  std::string name;
  int64_t uid = -1, gid = -1;
  mode_t mode = 0;
  time_t mtime = 0;
  std::string data;
};

// Every member of a .tar.zst, in archive order, read with libarchive.
std::vector<TarMember> ReadTar(const std::string& path) {
  std::vector<TarMember> out;
  archive* a = archive_read_new();
  archive_read_support_filter_zstd(a);
  archive_read_support_format_tar(a);
  EXPECT_EQ(archive_read_open_filename(a, path.c_str(), 1 << 16), ARCHIVE_OK) << archive_error_string(a);
  archive_entry* e = nullptr;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    TarMember m{archive_entry_pathname(e), archive_entry_uid(e),   archive_entry_gid(e),
                archive_entry_perm(e),     archive_entry_mtime(e), ""};
    char buf[65536];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) m.data.append(buf, static_cast<size_t>(n));
    out.push_back(std::move(m));
  }
  archive_read_free(a);
  return out;
}

// The whole decompressed stream (tar headers included), for grepping.
std::string Decompressed(const std::string& path) {
  archive* a = archive_read_new();
  archive_read_support_filter_zstd(a);
  archive_read_support_format_raw(a);
  std::string out;
  EXPECT_EQ(archive_read_open_filename(a, path.c_str(), 1 << 16), ARCHIVE_OK);
  archive_entry* e = nullptr;
  if (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    char buf[65536];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  archive_read_free(a);
  return out;
}

// Replaces every `from` in `text` with `to`.
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

class PackTest : public ::testing::Test {
 protected:
  PackCliRun Gputriage(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), GT_GPUTRIAGE_BIN);
    core::RunOptions options;
    options.timeout = std::chrono::milliseconds(120000);
    options.max_stderr_bytes = 1u << 20;
    options.extra_env = {"GPUTRIAGE_HOME=" + home_};
    options.extra_env.insert(options.extra_env.end(), env.begin(), env.end());
    auto outcome = core::RunWithTimeout(args, options);
    PackCliRun run;
    if (!outcome.ok()) {
      ADD_FAILURE() << outcome.error().message;
      return run;
    }
    run.exit_code = outcome->exit_code.value_or(-1);
    run.out = outcome->stdout_data;
    run.err = outcome->stderr_tail;
    return run;
  }

  // The newest bundle directory under bundles_.
  std::string NewestBundle() {
    std::string newest;
    for (const auto& entry : fs::directory_iterator(bundles_)) {
      std::string name = entry.path().filename().string();
      if (name[0] != '.' && entry.is_directory() && entry.path().string() > newest) newest = entry.path().string();
    }
    return newest;
  }

  // A null dereference under `run`, from a shell that first prints secrets to stderr: the
  // environment's (GT_TEST_PASSWORD), its own argv's (--api-key VALUE, echoed as a command line) and
  // a GitHub token.
  std::string CrashWithSecrets(std::vector<std::string> run_options) {
    std::vector<std::string> args = {"run", "--quiet", "--bundle-dir", bundles_};
    args.insert(args.end(), run_options.begin(), run_options.end());
    std::vector<std::string> job = {
        "--",
        "sh",
        "-c",
        "echo \"GT_TEST_PASSWORD=$GT_TEST_PASSWORD\" >&2; echo \"starting train.py $1 $2\" >&2; echo \"token " +
            kToken + " in use\" >&2; exec \"$3\" null",
        "sh",
        "--api-key",
        kArgvSecret,
        kCrasher};
    args.insert(args.end(), job.begin(), job.end());
    PackCliRun run = Gputriage(args, {"GT_TEST_PASSWORD=" + kEnvSecret});
    EXPECT_EQ(run.exit_code, 139) << run.err;
    return NewestBundle();
  }

  Json JsonOf(const PackCliRun& run) {
    Json j = Json::parse(run.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << run.out << "\nstderr: " << run.err;
    return j;
  }

  gputriage::testing::TempDir tmp_;
  std::string home_ = tmp_ / "home";
  std::string bundles_ = tmp_ / "bundles";
};

TEST_F(PackTest, PackedBundleHoldsNoSecretAndAnalyzesAsItsDirectory) {
  std::string bundle = CrashWithSecrets({});
  ASSERT_FALSE(bundle.empty());
  // The secrets are in the bundle as run wrote it (local files), so the test below can fail.
  std::string raw_stderr = ReadAll(bundle + "/stderr.tail");
  ASSERT_NE(raw_stderr.find(kEnvSecret), std::string::npos) << raw_stderr;
  ASSERT_NE(raw_stderr.find(kArgvSecret), std::string::npos);
  ASSERT_NE(raw_stderr.find(kToken), std::string::npos);
  ASSERT_NE(ReadAll(bundle + "/manifest.json").find(kArgvSecret), std::string::npos);

  std::string packed = tmp_ / "bug.tar.zst";
  PackCliRun pack = Gputriage({"bundles", "pack", bundle, "-o", packed, "--json"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  Json result = JsonOf(pack);
  EXPECT_EQ(result["output"], packed);
  EXPECT_EQ(result["core_included"], false);
  std::string top = fs::path(bundle).filename().string();
  EXPECT_EQ(result["top"], top);

  // Nothing of the secrets anywhere in the decompressed archive.
  std::string all = Decompressed(packed);
  ASSERT_GT(all.size(), 1000u);
  EXPECT_EQ(all.find(kEnvSecret), std::string::npos);
  EXPECT_EQ(all.find(kArgvSecret), std::string::npos)
      << all.substr(all.find(kArgvSecret) - std::min<size_t>(all.find(kArgvSecret), 400), 500);
  EXPECT_EQ(all.find(kToken), std::string::npos);
  EXPECT_NE(all.find("GT_TEST_PASSWORD=<redacted>"), std::string::npos);

  // Deterministic layout: one top directory, sorted members, 0:0, 0644, the bundle's time.
  std::vector<TarMember> members = ReadTar(packed);
  ASSERT_GE(members.size(), 6u);
  EXPECT_EQ(members[0].name, top + "/");
  struct stat st {};
  ASSERT_EQ(::stat(bundle.c_str(), &st), 0);
  std::vector<std::string> names;
  for (size_t i = 1; i < members.size(); ++i) {
    names.push_back(members[i].name);
    EXPECT_EQ(members[i].name.rfind(top + "/", 0), 0u) << members[i].name;
    EXPECT_EQ(members[i].uid, 0);
    EXPECT_EQ(members[i].gid, 0);
    EXPECT_EQ(members[i].mode, 0644u) << members[i].name;
    EXPECT_EQ(members[i].mtime, st.st_mtime);
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* file : {"manifest.json", "process.json", "stderr.tail", "stdout.tail", "findings.json"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), top + "/" + file), names.end()) << file;
  }
  // Packing again gives the same bytes; an existing output is refused without --force.
  PackCliRun again = Gputriage({"bundles", "pack", bundle, "-o", packed});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(again.err, "gputriage: bundles pack: " + packed + ": already exists (--force replaces it)\n");
  std::string first = ReadAll(packed);
  ASSERT_EQ(Gputriage({"bundles", "pack", bundle, "-o", packed, "--force"}).exit_code, 0);
  EXPECT_EQ(ReadAll(packed), first);
  for (const auto& entry : fs::directory_iterator(tmp_.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }

  // analyze and report read the archive as they read the directory (paths aside).
  PackCliRun dir_analysis = Gputriage({"analyze", bundle, "--json"});
  PackCliRun packed_analysis = Gputriage({"analyze", packed, "--json"});
  ASSERT_EQ(dir_analysis.exit_code, 1) << dir_analysis.err;
  ASSERT_EQ(packed_analysis.exit_code, 1) << packed_analysis.err;
  // The archive's stderr.tail is the redacted one, shorter: the only difference is its size.
  Json packed_json = JsonOf(packed_analysis);
  Json dir_json = JsonOf(dir_analysis);
  EXPECT_LT(packed_json["input"]["bytes"], dir_json["input"]["bytes"]);
  packed_json["input"].erase("bytes");
  dir_json["input"].erase("bytes");
  EXPECT_EQ(Replace(packed_json.dump(1), packed, "INPUT"), Replace(dir_json.dump(1), bundle, "INPUT"));
  EXPECT_NE(packed_analysis.out.find("null_deref"), std::string::npos);
  PackCliRun dir_report = Gputriage({"report", bundle, "--format", "json"});
  PackCliRun packed_report = Gputriage({"report", packed, "--format", "json"});
  ASSERT_EQ(dir_report.exit_code, 0) << dir_report.err;
  ASSERT_EQ(packed_report.exit_code, 0) << packed_report.err;
  EXPECT_EQ(Replace(JsonOf(packed_report).dump(1), packed, "INPUT"),
            Replace(JsonOf(dir_report).dump(1), bundle, "INPUT"));
  // From a pipe too (detected by its magic, not its name).
  core::RunOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  options.stdin_data = first;
  options.extra_env = {"GPUTRIAGE_HOME=" + home_};
  auto piped = core::RunWithTimeout({GT_GPUTRIAGE_BIN, "analyze", "-", "--json"}, options);
  ASSERT_TRUE(piped.ok());
  EXPECT_EQ(piped->exit_code, 1) << piped->stderr_tail;
  EXPECT_NE(piped->stdout_data.find("null_deref"), std::string::npos) << piped->stdout_data;
}

// Failed before (issue 32): `-o PATH --force` renamed the archive over whatever was at PATH, so
// as root `-o /dev/null --force` left a regular file where the device was. A character device or
// a FIFO (or a link to one, as /dev/stdout is) is written as a stream; a symbolic link to a file,
// a directory or a socket is never replaced, --force or not.
TEST_F(PackTest, OutputsThatAreNotRegularFilesAreStreamedOrRefused) {
  std::string bundle = CrashWithSecrets({"--no-telemetry"});
  ASSERT_FALSE(bundle.empty());
  // A FIFO read by a thread: the archive arrives whole, and the FIFO is still a FIFO.
  std::string fifo = tmp_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = ReadAll(fifo); });
  PackCliRun to_fifo = Gputriage({"bundles", "pack", bundle, "-o", fifo, "--force"});
  reader.join();
  EXPECT_EQ(to_fifo.exit_code, 0) << to_fifo.err;
  EXPECT_EQ(received.substr(0, 4), std::string("\x28\xb5\x2f\xfd", 4)) << "a zstd frame";
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // /dev/null, with and without --force: still the device afterwards.
  for (std::vector<std::string> extra : {std::vector<std::string>{}, std::vector<std::string>{"--force"}}) {
    std::vector<std::string> args = {"bundles", "pack", bundle, "-o", "/dev/null"};
    args.insert(args.end(), extra.begin(), extra.end());
    PackCliRun to_null = Gputriage(args);
    EXPECT_EQ(to_null.exit_code, 0) << to_null.err;
    ASSERT_EQ(::lstat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
  }
  // A link to a regular file, a directory: refused with the reason, left as they were.
  std::string target = tmp_ / "target.txt";
  std::ofstream(target) << "keep";
  std::string link = tmp_ / "link.tar.zst";
  fs::create_symlink(target, link);
  PackCliRun to_link = Gputriage({"bundles", "pack", bundle, "-o", link, "--force"});
  EXPECT_EQ(to_link.exit_code, 2) << to_link.err;
  EXPECT_NE(to_link.err.find(link + ": a symbolic link to " + target + ", not a regular file: never replaced"),
            std::string::npos)
      << to_link.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(ReadAll(target), "keep");
  fs::create_directories(tmp_ / "dir");
  PackCliRun to_dir = Gputriage({"bundles", "pack", bundle, "-o", tmp_ / "dir", "--force"});
  EXPECT_EQ(to_dir.exit_code, 2);
  EXPECT_NE(to_dir.err.find("a directory, not a regular file"), std::string::npos) << to_dir.err;
  EXPECT_TRUE(fs::is_directory(tmp_ / "dir"));
}

// telemetry.csv is packed (written back from its parsed samples): lines as the H100 machine's
// NVML sampler wrote them in a real run (2026-12-05), and one line the parser cannot read, which
// stays out.
TEST_F(PackTest, TelemetryIsPackedFromItsParsedSamples) {
  std::string bundle = CrashWithSecrets({"--no-telemetry"});
  ASSERT_FALSE(bundle.empty());
  const std::string good =
      "t_s,device,temperature_c,power_w,sm_clock_mhz,memory_clock_mhz,memory_used_mib,throttle_reasons\n"
      "0.022,0,32,71.2,345,2619,0.0,gpu_idle\n"
      "0.222,0,32,71.1,345,2619,0.0,gpu_idle\n"
      "23.222,0,40,125.0,1980,2619,1228.8,\n";
  std::ofstream(bundle + "/telemetry.csv", std::ios::binary) << good << "23.4,0,hot " << kToken << ",1,1,1,1,\n";
  std::string packed = tmp_ / "telemetry.tar.zst";
  PackCliRun pack = Gputriage({"bundles", "pack", bundle, "-o", packed, "--json"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  Json result = JsonOf(pack);
  bool member = false;
  for (const Json& m : result["members"]) {
    if (m["name"] == fs::path(bundle).filename().string() + "/telemetry.csv") {
      member = true;
      EXPECT_EQ(m["changed"], true) << "the unreadable line was dropped";
    }
  }
  EXPECT_TRUE(member) << result.dump(1);
  for (const Json& l : result["left_out"]) EXPECT_NE(l["item"], "telemetry.csv") << l;
  std::string all = Decompressed(packed);
  EXPECT_NE(all.find(good), std::string::npos) << "the readable samples, as they were";
  EXPECT_EQ(all.find(kToken), std::string::npos);
  std::string html = tmp_ / "telemetry.html";
  PackCliRun packed_report = Gputriage({"report", packed, "--format", "html", "-o", html});
  ASSERT_EQ(packed_report.exit_code, 0) << packed_report.err;
  std::string page = ReadAll(html);
  EXPECT_NE(page.find("<h3>GPU telemetry</h3>"), std::string::npos);
  EXPECT_EQ(page.find("The bundle has no GPU telemetry"), std::string::npos) << "the report plots the packed samples";
}

TEST_F(PackTest, HostileArchivesAreRefusedWithTheMemberNamed) {
  std::string evil = tmp_ / "evil.tar.zst";
  archive* a = archive_write_new();
  archive_write_add_filter_zstd(a);
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, evil.c_str()), ARCHIVE_OK);
  auto add = [&](const char* name, mode_t type, const std::string& data, const char* link) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, 0644);
    if (link != nullptr) archive_entry_set_symlink(e, link);
    archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
    archive_write_header(a, e);
    archive_write_data(a, data.data(), data.size());
    archive_entry_free(e);
  };
  add("b/process.json", AE_IFREG, R"({"primary": {"pid": 1}})", nullptr);
  add("b/stderr.tail", AE_IFLNK, "", "/etc/shadow");
  archive_write_close(a);
  archive_write_free(a);
  PackCliRun run = Gputriage({"analyze", evil});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "gputriage: " + evil + ": member 'b/stderr.tail' is a symbolic link; not a packed crash bundle\n");

  std::string traversal = tmp_ / "traversal.tar.zst";
  a = archive_write_new();
  archive_write_add_filter_zstd(a);
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, traversal.c_str()), ARCHIVE_OK);
  add("b/process.json", AE_IFREG, R"({"primary": {"pid": 1}})", nullptr);
  add("b/../../../tmp/owned", AE_IFREG, "x", nullptr);
  archive_write_close(a);
  archive_write_free(a);
  run = Gputriage({"report", traversal});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find(traversal + ": member 'b/../../../tmp/owned' has a '..' path component (path traversal)"),
            std::string::npos)
      << run.err;
}

TEST_F(PackTest, RunCoreWritesCoreZstThatAnalyzeAndDebuggersRead) {
  std::vector<std::string> args = {"run",    "--quiet", "--no-snapshot", "--core", "--bundle-dir",
                                   bundles_, "--",      kCrasher,        "null"};
  PackCliRun run = Gputriage(args);
  ASSERT_EQ(run.exit_code, 139) << run.err;
  std::string bundle = NewestBundle();
  ASSERT_TRUE(fs::exists(bundle + "/core.zst")) << bundle;
  EXPECT_FALSE(fs::exists(bundle + "/core"));
  Json manifest = Json::parse(ReadAll(bundle + "/manifest.json"));
  EXPECT_EQ(manifest["files"]["core.zst"]["present"], true);
  EXPECT_EQ(manifest["files"]["core.zst"]["bytes"], fs::file_size(bundle + "/core.zst"));
  EXPECT_EQ(manifest["files"]["core"]["present"], false);
  EXPECT_EQ(manifest["files"]["core"]["reason"], "compressed as core.zst (run --core=raw keeps the core uncompressed)");
  for (const auto& entry : fs::directory_iterator(bundles_)) {
    EXPECT_EQ(entry.path().filename().string().find(".core.partial"), std::string::npos) << entry.path();
  }

  std::string core_zst = bundle + "/core.zst";
  PackCliRun analysis = Gputriage({"analyze", core_zst, "--json"});
  ASSERT_EQ(analysis.exit_code, 1) << analysis.err;
  Json j = JsonOf(analysis);
  ASSERT_EQ(j["processes"].size(), 1u) << analysis.out;
  EXPECT_EQ(j["processes"][0]["signal"], "SIGSEGV");
  EXPECT_EQ(j["processes"][0]["source"], core_zst);
  EXPECT_NE(analysis.out.find("null_deref"), std::string::npos);

  // systemd-coredump's name and a frame without its content size (zstd -c from a pipe).
  std::string raw = tmp_ / "core";
  core::RunOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  auto dec = core::RunWithTimeout({"zstd", "-q", "-d", "-f", core_zst, "-o", raw}, options);
  if (!dec.ok() || dec->exit_code != 0) GTEST_SKIP() << "the zstd program is not installed (Debian: zstd)";
  EXPECT_EQ(ReadAll(raw).substr(0, 4),
            "\x7f"
            "ELF");
  std::string systemd = tmp_ / "core.crasher.1000.0123456789abcdef0123456789abcdef.4242.1765000000000000.zst";
  auto comp = core::RunWithTimeout({"sh", "-c", "zstd -q -c < \"$0\" > \"$1\"", raw, systemd}, options);
  ASSERT_TRUE(comp.ok() && comp->exit_code == 0);
  PackCliRun sd = Gputriage({"analyze", systemd, "--json"});
  ASSERT_EQ(sd.exit_code, 1) << sd.err;
  EXPECT_NE(sd.out.find("null_deref"), std::string::npos);

  // A debugger reads the decompressed core.
  auto stack = core::RunWithTimeout({"eu-stack", "--core", raw, "-e", kCrasher}, options);
  if (stack.ok() && stack->exit_code.has_value() && stack->exit_code != 127) {
    EXPECT_NE(stack->stdout_data.find("null_deref"), std::string::npos) << stack->stdout_data << stack->stderr_tail;
  }

  // Truncated and corrupt: a clear error naming the input, exit 2.
  std::string zst = ReadAll(core_zst);
  std::string cut = tmp_ / "cut.zst";
  std::ofstream(cut, std::ios::binary) << zst.substr(0, zst.size() / 2);
  PackCliRun truncated = Gputriage({"analyze", cut});
  EXPECT_EQ(truncated.exit_code, 2);
  EXPECT_EQ(truncated.err.rfind("gputriage: " + cut + ": truncated zstd stream after ", 0), 0u) << truncated.err;
  std::string bad = tmp_ / "bad.zst";
  std::string corrupt = zst;
  for (size_t i = zst.size() / 2; i < zst.size() / 2 + 256 && i < zst.size(); ++i) corrupt[i] ^= 0x5a;
  std::ofstream(bad, std::ios::binary) << corrupt;
  PackCliRun damaged = Gputriage({"analyze", bad});
  EXPECT_EQ(damaged.exit_code, 2);
  EXPECT_EQ(damaged.err.rfind("gputriage: " + bad + ": corrupt zstd data after ", 0), 0u) << damaged.err;

  // --core=raw keeps the core as it was; pack leaves a core out unless --with-core, loudly.
  run = Gputriage({"run", "--quiet", "--no-snapshot", "--core=raw", "--bundle-dir", bundles_, "--", kCrasher, "fpe"});
  ASSERT_EQ(run.exit_code, 136) << run.err;
  std::string raw_bundle = NewestBundle();
  ASSERT_TRUE(fs::exists(raw_bundle + "/core"));
  EXPECT_FALSE(fs::exists(raw_bundle + "/core.zst"));
  std::string packed = tmp_ / "p.tar.zst";
  PackCliRun pack = Gputriage({"bundles", "pack", bundle, "-o", packed, "--json"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  Json left = JsonOf(pack)["left_out"];
  ASSERT_EQ(left.size(), 1u) << left.dump();
  EXPECT_EQ(left[0]["item"], "core.zst");
  Json manifest_in_pack;
  for (const TarMember& m : ReadTar(packed)) {
    EXPECT_EQ(m.name.find("core"), std::string::npos);
    if (m.name.ends_with("/manifest.json")) manifest_in_pack = Json::parse(m.data);
  }
  EXPECT_EQ(manifest_in_pack["files"]["core.zst"]["present"], false);
  std::string with_core = tmp_ / "c.tar.zst";
  pack = Gputriage({"bundles", "pack", bundle, "-o", with_core, "--with-core"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  EXPECT_NE(pack.err.find("warning: --with-core: " + with_core + " holds the core file UNREDACTED"), std::string::npos)
      << pack.err;
  bool found = false;
  for (const TarMember& m : ReadTar(with_core)) found |= m.name.ends_with("/core.zst") && m.data == zst;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace gputriage
