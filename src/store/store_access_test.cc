// Who can read the history database, and reading one that cannot be written: the files are
// created owner-only whatever the umask, what is stored is redacted, and a database in a
// read-only directory or a read-only file can still be listed and loaded. The read-only cases
// run as an unprivileged user (root ignores file permissions): in a child process that drops to
// nobody when the test runs as root.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

#include "store/snapshot_store.h"
#include "store/test_util.h"

namespace gputriage::store {
namespace {

using core::Json;
using testing::TempDir;

constexpr uid_t kNobody = 65534;

core::Snapshot AccessSnapshot(const std::string& hostname, const std::string& collected_at) {
  return core::SnapshotFromJsonUnchecked(Json{{"schema_version", 1},
                                              {"collected_at", collected_at},
                                              {"host", {{"hostname", hostname}}},
                                              {"gpus", Json::array()},
                                              {"findings", Json::array()}});
}

unsigned AccessModeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0xFFFF;
}

// Sets the umask for one scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

// Runs `body` as an unprivileged user: in place when this process is not root, else in a child
// that drops to nobody. `body` returns "" on success, else what went wrong.
std::string AsUnprivileged(const std::function<std::string()>& body) {
  if (::geteuid() != 0) return body();
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return std::string("pipe: ") + std::strerror(errno);
  pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    std::string result;
    if (::setgroups(0, nullptr) != 0 || ::setresgid(kNobody, kNobody, kNobody) != 0 ||
        ::setresuid(kNobody, kNobody, kNobody) != 0) {
      result = std::string("cannot drop to nobody: ") + std::strerror(errno);
    } else {
      result = body();
    }
    (void)!::write(pipe_fds[1], result.data(), result.size());
    ::_exit(result.empty() ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status)) return "the unprivileged child did not exit normally";
  return out;
}

// Gives `path` to nobody when running as root (so that nobody is its owner, as a user is of
// their own database), and sets its mode.
void Own(const std::string& path, mode_t mode) {
  if (::geteuid() == 0) {
    EXPECT_EQ(::chown(path.c_str(), kNobody, kNobody), 0) << path;
  }
  EXPECT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

// A database with two snapshots, closed (so no -wal or -shm file is left), in `dir`.
std::string MakeDatabase(const std::string& dir) {
  std::string path = dir + "/snapshots.db";
  auto store = SnapshotStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.error().message;
  EXPECT_TRUE(store->Save(AccessSnapshot("node-a", "2026-12-01T10:00:00Z")).ok());
  EXPECT_TRUE(store->Save(AccessSnapshot("node-b", "2026-12-02T10:00:00Z")).ok());
  return path;
}

// What a reader sees of the database at `path`: "" when it lists both snapshots and loads them.
std::string ReadBoth(const std::string& path) {
  auto store = SnapshotStore::OpenReadOnly(path);
  if (!store.ok()) return "OpenReadOnly: " + store.error().message;
  auto rows = store->List(0);
  if (!rows.ok()) return "List: " + rows.error().message;
  if (rows->size() != 2) return "List: " + std::to_string(rows->size()) + " rows";
  auto latest = store->Latest();
  if (!latest.ok()) return "Latest: " + latest.error().message;
  if (latest->host->hostname != "node-b") return "Latest: wrong snapshot";
  auto first = store->Load(rows->back().id);
  if (!first.ok()) return "Load: " + first.error().message;
  return "";
}

TEST(StoreFiles, DatabaseAndItsJournalsAreOwnerOnlyWhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{022}}) {
    TempDir tmp;
    ScopedUmask umask(mask);
    ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);  // a data home that already existed, open to all
    std::string path = tmp / "snapshots.db";
    auto store = SnapshotStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    ASSERT_TRUE(store->Save(AccessSnapshot("node", "2026-12-02T10:00:00Z")).ok());
    EXPECT_EQ(AccessModeOf(path), 0600u) << "umask " << mask;
    // The connection is open: the WAL and its index exist now.
    EXPECT_EQ(AccessModeOf(path + "-wal"), 0600u) << "umask " << mask;
    EXPECT_EQ(AccessModeOf(path + "-shm"), 0600u) << "umask " << mask;
  }
}

// Stores a bundle row and a snapshot with secrets in them and checks what reads back.
void SaveSecrets(const std::string& path) {
  auto store = SnapshotStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  BundleRow row;
  row.created_at = "2026-12-02T10:00:00Z";
  row.path = "/tmp/bundle";
  row.command = "mysql -u root -pS3cretPw --password hunter2 db";
  row.signature = "SIGSEGV/null-dereference https://ml:S3cretPw@host";
  row.summary = "crashed with token=hunter2";
  ASSERT_TRUE(store->SaveBundle(row).ok());
  auto rows = store->ListBundles(0);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().command, "mysql -u root -p<redacted> --password <redacted> db");
  EXPECT_EQ(rows->front().signature, "SIGSEGV/null-dereference https://ml:<redacted>@host");
  EXPECT_EQ(rows->front().summary, "crashed with token=<redacted>");
  // Counting by signature redacts the signature asked about alike.
  EXPECT_EQ(store->CountBundlesWithSignature(*row.signature).value_or(-1), 1);
  EXPECT_EQ(store->CountBundlesWithSignature(*rows->front().signature).value_or(-1), 1);

  core::Snapshot snapshot = AccessSnapshot("node", "2026-12-02T10:00:00Z");
  snapshot.env = core::Environment{};
  snapshot.env->variables = std::map<std::string, std::string>{{"HF_TOKEN", "hunter2"}, {"NCCL_DEBUG", "INFO"}};
  auto id = store->Save(snapshot);
  ASSERT_TRUE(id.ok());
  auto loaded = store->Load(*id);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->env->variables->at("HF_TOKEN"), "<redacted>");
  EXPECT_EQ(loaded->env->variables->at("NCCL_DEBUG"), "INFO");
}

TEST(StoreFiles, WhatIsStoredOfABundleOrASnapshotIsRedacted) {
  TempDir tmp;
  std::string path = tmp / "snapshots.db";
  SaveSecrets(path);
  // Closed: every page is in the file now. The secrets are nowhere in its bytes.
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::string bytes(1 << 20, '\0');
  bytes.resize(static_cast<size_t>(std::max<ssize_t>(0, ::read(fd, bytes.data(), bytes.size()))));
  ::close(fd);
  EXPECT_EQ(bytes.find("S3cret"), std::string::npos);
  EXPECT_EQ(bytes.find("hunter2"), std::string::npos);
}

TEST(StoreReadOnly, ADatabaseInAReadOnlyDirectoryIsListedAndLoaded) {
  TempDir tmp;
  std::string dir = tmp / "home";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  std::string path = MakeDatabase(dir);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
  Own(path, 0600);
  Own(dir, 0500);  // the owner's own directory, made read-only
  EXPECT_EQ(AsUnprivileged([&] { return ReadBoth(path); }), "");
  // Writing is what fails there, and it says why.
  std::string write = AsUnprivileged([&] {
    auto store = SnapshotStore::Open(path);
    return store.ok() ? std::string("opened for writing") : store.error().message;
  });
  EXPECT_EQ(write.rfind(path + ": ", 0), 0u) << write;
  EXPECT_NE(write.find("readonly"), std::string::npos) << write;
  ::chmod(dir.c_str(), 0700);
}

TEST(StoreReadOnly, AReadOnlyFileIsListedAndLoaded) {
  TempDir tmp;
  std::string dir = tmp / "home";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  std::string path = MakeDatabase(dir);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
  Own(dir, 0700);
  Own(path, 0444);
  EXPECT_EQ(AsUnprivileged([&] { return ReadBoth(path); }), "");
  // Someone else's database, readable to all, in their directory: read without writing there.
  TempDir other;
  std::string theirs = MakeDatabase(other.path());
  ASSERT_EQ(::chmod(other.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(theirs.c_str(), 0644), 0);
  if (::geteuid() == 0) {
    EXPECT_EQ(AsUnprivileged([&] { return ReadBoth(theirs); }), "");
  }
}

TEST(StoreReadOnly, ErrorsNameThePathAndTheCause) {
  TempDir tmp;
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
  std::string missing = tmp / "none.db";
  auto none = SnapshotStore::OpenReadOnly(missing);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, core::ErrorCode::kNotFound);
  EXPECT_EQ(none.error().message, missing + ": No such file or directory");
  EXPECT_NE(::access(missing.c_str(), F_OK), 0);  // reading created nothing
  std::string locked = MakeDatabase(tmp.path());
  Own(locked, 0000);
  if (::geteuid() == 0) Own(locked, 0200);  // root's nobody: write-only, not readable
  std::string denied = AsUnprivileged([&] {
    auto store = SnapshotStore::OpenReadOnly(locked);
    return store.ok() ? std::string("opened") : store.error().message;
  });
  EXPECT_EQ(denied, locked + ": cannot open: unable to open database file (SQLite code 14: Permission denied)");
  // A store that could not be opened answers every query with why.
  SnapshotStore unavailable = SnapshotStore::Unavailable(core::Error{"x.db: Permission denied"});
  auto loaded = unavailable.Load(3);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().message, "x.db: Permission denied");
  EXPECT_FALSE(unavailable.List(0).ok());
  EXPECT_FALSE(unavailable.Latest().ok());
}

}  // namespace
}  // namespace gputriage::store
