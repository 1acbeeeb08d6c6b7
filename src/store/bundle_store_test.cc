#include "store/bundle_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/clock.h"
#include "store/test_util.h"

namespace gputriage::store {
namespace {

namespace fs = std::filesystem;
using core::Json;
using testing::TempDir;

BundleRow Row(int64_t id, const std::string& created_at, std::optional<std::string> signature,
              std::optional<std::string> category = "illegal-address") {
  BundleRow row;
  row.id = id;
  row.created_at = created_at;
  row.path = fmt::format("/b/{}", id);
  row.command = "./job";
  row.signature = std::move(signature);
  row.category = std::move(category);
  return row;
}

TEST(GroupBundlesBySignature, CountsFirstAndLastSeenNewestGroupFirst) {
  std::vector<BundleRow> rows = {
      Row(1, "2026-12-01T10:00:00Z", "SIGSEGV a"),
      Row(2, "2026-12-01T11:00:00Z", "SIGABRT b", "assert"),
      Row(3, "2026-12-02T09:00:00Z", "SIGSEGV a"),
      Row(4, "2026-12-01T12:00:00Z", std::nullopt, std::nullopt),
      Row(5, "2026-12-02T09:00:00Z", "SIGSEGV a"),  // same second as 3: the higher id is newer
      Row(6, "2026-11-30T08:00:00Z", std::nullopt, std::nullopt),
  };
  std::vector<BundleGroup> groups = GroupBundlesBySignature(rows);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].signature, "SIGSEGV a");
  EXPECT_EQ(groups[0].count, 3);
  EXPECT_EQ(groups[0].first_seen, "2026-12-01T10:00:00Z");
  EXPECT_EQ(groups[0].last_seen, "2026-12-02T09:00:00Z");
  EXPECT_EQ(groups[0].newest.id, 5);
  EXPECT_EQ(groups[0].category, "illegal-address");
  // Bundles without a signature are one group of their own.
  EXPECT_EQ(groups[1].signature, std::nullopt);
  EXPECT_EQ(groups[1].count, 2);
  EXPECT_EQ(groups[1].newest.id, 4);
  EXPECT_EQ(groups[1].first_seen, "2026-11-30T08:00:00Z");
  EXPECT_EQ(groups[2].signature, "SIGABRT b");
  EXPECT_EQ(groups[2].count, 1);
  EXPECT_EQ(groups[2].category, "assert");
  EXPECT_EQ(groups[2].first_seen, groups[2].last_seen);
  EXPECT_TRUE(GroupBundlesBySignature({}).empty());
}

TEST(BundleGroupsToJson, LimitsGroupsButCountsAll) {
  BundleIndexListing listing;
  listing.database = "/h/snapshots.db";
  listing.database_exists = true;
  listing.bundles = {Row(2, "2026-12-02T00:00:00Z", "b"), Row(1, "2026-12-01T00:00:00Z", "a")};
  Json j = BundleGroupsToJson(listing, 1);
  EXPECT_EQ(j["total_groups"], 2);
  EXPECT_EQ(j["total_bundles"], 2);
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["signature"], "b");
  EXPECT_EQ(j["groups"][0]["newest"]["path"], "/b/2");
  listing.bundles[0].signature.reset();
  EXPECT_TRUE(BundleGroupsToJson(listing, 0)["groups"][0]["signature"].is_null());
  Json all = BundleRowsToJson(listing, 0);
  ASSERT_EQ(all["bundles"].size(), 2u);
  EXPECT_TRUE(all["bundles"][0]["exit_status"].is_null());
}

TEST(ParseAgeSeconds, UnitsUpToWeeks) {
  EXPECT_EQ(ParseAgeSeconds("45s"), 45.0);
  EXPECT_EQ(ParseAgeSeconds("90m"), 5400.0);
  EXPECT_EQ(ParseAgeSeconds("2min"), 120.0);
  EXPECT_EQ(ParseAgeSeconds("36h"), 36 * 3600.0);
  EXPECT_EQ(ParseAgeSeconds("30d"), 30 * 86400.0);
  EXPECT_EQ(ParseAgeSeconds("1.5d"), 1.5 * 86400.0);
  EXPECT_EQ(ParseAgeSeconds(" 2w "), 14 * 86400.0);
  EXPECT_EQ(ParseAgeSeconds("0d"), 0.0);
  EXPECT_EQ(ParseAgeSeconds("30"), std::nullopt) << "a bare number has no unit";
  EXPECT_EQ(ParseAgeSeconds("d"), std::nullopt);
  EXPECT_EQ(ParseAgeSeconds("-3d"), std::nullopt);
  EXPECT_EQ(ParseAgeSeconds("3y"), std::nullopt);
  EXPECT_EQ(ParseAgeSeconds("3 d"), std::nullopt);
  EXPECT_EQ(ParseAgeSeconds("99999w"), std::nullopt);
  EXPECT_EQ(ParseAgeSeconds(""), std::nullopt);
}

std::vector<SizedBundle> Sized(const std::vector<std::pair<BundleRow, uint64_t>>& rows) {
  std::vector<SizedBundle> out;
  for (const auto& [row, bytes] : rows) out.push_back({row, bytes});
  return out;
}

std::vector<int64_t> Ids(const std::vector<PruneChoice>& chosen) {
  std::vector<int64_t> ids;
  for (const PruneChoice& choice : chosen) ids.push_back(choice.bundle.row.id);
  return ids;
}

// Five bundles a day apart, 100 bytes each, given oldest first: the selection sorts them.
std::vector<SizedBundle> FiveDays() {
  return Sized({{Row(1, "2026-12-01T00:00:00Z", "a"), 100},
                {Row(2, "2026-12-02T00:00:00Z", "a"), 100},
                {Row(3, "2026-12-03T00:00:00Z", "b"), 100},
                {Row(4, "2026-12-04T00:00:00Z", "b"), 100},
                {Row(5, "2026-12-05T00:00:00Z", "c"), 100}});
}

double At(const std::string& iso) { return *core::ParseUtcIso(iso); }

TEST(SelectBundlesToPrune, ByAge) {
  PruneCriteria criteria;
  criteria.older_than_s = 2.5 * 86400;
  auto chosen = SelectBundlesToPrune(FiveDays(), criteria, At("2026-12-05T12:00:00Z"));
  EXPECT_EQ(Ids(chosen), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(chosen[0].reasons, (std::vector<std::string>{"older than 60h"}));
  criteria.older_than_s = 30 * 86400;
  EXPECT_TRUE(SelectBundlesToPrune(FiveDays(), criteria, At("2026-12-05T12:00:00Z")).empty());
  // Exactly as old as the limit is not older.
  criteria.older_than_s = 86400;
  EXPECT_EQ(Ids(SelectBundlesToPrune(FiveDays(), criteria, At("2026-12-05T00:00:00Z"))),
            (std::vector<int64_t>{3, 2, 1}));
}

TEST(SelectBundlesToPrune, AnUnreadableTimeIsNeverOld) {
  std::vector<SizedBundle> bundles = Sized({{Row(1, "yesterday", "a"), 100}});
  PruneCriteria criteria;
  criteria.older_than_s = 1;
  EXPECT_TRUE(SelectBundlesToPrune(bundles, criteria, At("2030-01-01T00:00:00Z")).empty());
}

TEST(SelectBundlesToPrune, KeepTheNewestN) {
  PruneCriteria criteria;
  criteria.keep = 2;
  auto chosen = SelectBundlesToPrune(FiveDays(), criteria, 0);
  EXPECT_EQ(Ids(chosen), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(chosen[0].reasons, (std::vector<std::string>{"not among the newest 2"}));
  criteria.keep = 0;
  EXPECT_EQ(SelectBundlesToPrune(FiveDays(), criteria, 0).size(), 5u);
  criteria.keep = 9;
  EXPECT_TRUE(SelectBundlesToPrune(FiveDays(), criteria, 0).empty());
}

TEST(SelectBundlesToPrune, MaxSizeKeepsTheNewestThatFit) {
  PruneCriteria criteria;
  criteria.max_size_bytes = 250;
  auto chosen = SelectBundlesToPrune(FiveDays(), criteria, 0);
  EXPECT_EQ(Ids(chosen), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(chosen[0].reasons, (std::vector<std::string>{"beyond --max-size 250 bytes with the newer ones"}));
  criteria.max_size_bytes = 300;
  EXPECT_EQ(Ids(SelectBundlesToPrune(FiveDays(), criteria, 0)), (std::vector<int64_t>{2, 1}));
  // Once one does not fit, every older one goes too, even a small one that would.
  std::vector<SizedBundle> mixed = Sized({{Row(1, "2026-12-01T00:00:00Z", "a"), 10},
                                          {Row(2, "2026-12-02T00:00:00Z", "a"), 1000},
                                          {Row(3, "2026-12-03T00:00:00Z", "a"), 100}});
  EXPECT_EQ(Ids(SelectBundlesToPrune(mixed, criteria, 0)), (std::vector<int64_t>{2, 1}));
  criteria.max_size_bytes = 1ull << 30;
  EXPECT_TRUE(SelectBundlesToPrune(FiveDays(), criteria, 0).empty());
  criteria.max_size_bytes = 0;
  EXPECT_EQ(SelectBundlesToPrune(FiveDays(), criteria, 0).size(), 5u);
}

TEST(SelectBundlesToPrune, AnyCriterionChoosesAndEachReasonIsGiven) {
  PruneCriteria criteria;
  criteria.keep = 3;
  criteria.older_than_s = 3.5 * 86400;
  criteria.max_size_bytes = 1ull << 30;
  auto chosen = SelectBundlesToPrune(FiveDays(), criteria, At("2026-12-05T00:00:00Z"));
  ASSERT_EQ(Ids(chosen), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(chosen[0].reasons, (std::vector<std::string>{"not among the newest 3"}));
  EXPECT_EQ(chosen[1].reasons, (std::vector<std::string>{"older than 84h", "not among the newest 3"}));
}

// A bundle directory as run writes it (the files analyze and show read), and its index row.
class PruneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = tmp_ / "home/snapshots.db";
    fs::create_directories(tmp_ / "home");
    fs::create_directories(tmp_ / "bundles");
  }

  std::string MakeBundle(const std::string& name, size_t payload_bytes = 100) {
    std::string dir = tmp_ / ("bundles/" + name);
    fs::create_directories(dir);
    Write(dir + "/manifest.json", R"({"schema_version": 1, "kind": "gputriage.crash-bundle"})");
    Write(dir + "/process.json", R"({"signal": "SIGSEGV", "exit_status": 139, "signature": "SIGSEGV x"})");
    Write(dir + "/stderr.tail", std::string(payload_bytes, 'e'));
    return dir;
  }

  int64_t Index(const std::string& path, const std::string& created_at, const std::string& signature = "SIGSEGV x") {
    auto store = SnapshotStore::Open(db_);
    EXPECT_TRUE(store.ok()) << store.error().message;
    BundleRow row;
    row.created_at = created_at;
    row.path = path;
    row.command = "./job";
    row.signature = signature;
    auto id = store->SaveBundle(row);
    EXPECT_TRUE(id.ok());
    return id.value_or(-1);
  }

  static void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

  std::vector<int64_t> IndexedIds() {
    auto listing = ListBundleIndex(db_);
    EXPECT_TRUE(listing.ok());
    std::vector<int64_t> ids;
    if (listing.ok()) {
      for (const BundleRow& row : listing->bundles) ids.push_back(row.id);
    }
    return ids;
  }

  TempDir tmp_;
  std::string db_;
};

const double kNow = At("2026-12-10T00:00:00Z");

TEST_F(PruneTest, RemovesTheChosenDirectoriesAndRows) {
  std::string old1 = MakeBundle("old1"), old2 = MakeBundle("old2"), fresh = MakeBundle("fresh");
  int64_t a = Index(old1, "2026-11-01T00:00:00Z");
  int64_t b = Index(old2, "2026-11-02T00:00:00Z");
  int64_t c = Index(fresh, "2026-12-09T00:00:00Z");
  PruneCriteria criteria;
  criteria.older_than_s = 7 * 86400;
  auto result = PruneBundles(db_, criteria, /*dry_run=*/false, kNow);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->complete());
  EXPECT_EQ(result->indexed, 3u);
  ASSERT_EQ(result->actions.size(), 2u);
  EXPECT_EQ(result->actions[0].choice.bundle.row.id, b);
  EXPECT_EQ(result->actions[0].status, PruneStatus::kRemoved);
  EXPECT_EQ(result->actions[1].choice.bundle.row.id, a);
  EXPECT_GT(result->actions[0].choice.bundle.disk_bytes, 0u);
  EXPECT_EQ(result->freed_bytes,
            result->actions[0].choice.bundle.disk_bytes + result->actions[1].choice.bundle.disk_bytes);
  EXPECT_FALSE(fs::exists(old1));
  EXPECT_FALSE(fs::exists(old2));
  EXPECT_TRUE(fs::exists(fresh + "/manifest.json"));
  EXPECT_EQ(IndexedIds(), (std::vector<int64_t>{c}));
  Json j = PruneResultToJson(*result);
  EXPECT_EQ(j["bundles"][0]["status"], "removed");
  EXPECT_EQ(j["bundles"][0]["reasons"][0], "older than 1w");
  EXPECT_EQ(j["complete"], true);
}

TEST_F(PruneTest, DryRunRemovesNothing) {
  std::string old = MakeBundle("old");
  Index(old, "2026-11-01T00:00:00Z");
  Index(MakeBundle("new"), "2026-12-09T00:00:00Z");
  PruneCriteria criteria;
  criteria.keep = 1;
  auto result = PruneBundles(db_, criteria, /*dry_run=*/true, kNow);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->actions.size(), 1u);
  EXPECT_EQ(result->actions[0].status, PruneStatus::kWouldRemove);
  EXPECT_GT(result->freed_bytes, 0u);
  EXPECT_TRUE(fs::exists(old + "/stderr.tail"));
  EXPECT_EQ(IndexedIds().size(), 2u);
}

TEST_F(PruneTest, MaxSizeCountsDiskUsage) {
  // 1 MiB of payload each (and a few blocks of JSON and directory): two fit in 2.5 MiB, three do not.
  std::string b1 = MakeBundle("b1", 1 << 20), b2 = MakeBundle("b2", 1 << 20), b3 = MakeBundle("b3", 1 << 20);
  Index(b1, "2026-12-01T00:00:00Z");
  Index(b2, "2026-12-02T00:00:00Z");
  Index(b3, "2026-12-03T00:00:00Z");
  PruneCriteria criteria;
  criteria.max_size_bytes = 5 << 19;
  auto result = PruneBundles(db_, criteria, false, kNow);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->actions.size(), 1u);
  EXPECT_EQ(result->actions[0].choice.bundle.row.path, b1);
  EXPECT_GE(result->actions[0].choice.bundle.disk_bytes, 1u << 20);
  EXPECT_FALSE(fs::exists(b1));
  EXPECT_TRUE(fs::exists(b2));
}

TEST_F(PruneTest, RefusesWhatIsNotABundleAndLeavesItAlone) {
  std::string plain = tmp_ / "bundles/plain";  // a directory without manifest.json
  fs::create_directories(plain);
  Write(plain + "/precious.txt", "keep me");
  std::string foreign = tmp_ / "bundles/foreign";  // a manifest.json that is not run's
  fs::create_directories(foreign);
  Write(foreign + "/manifest.json", R"({"name": "some web app"})");
  std::string target = MakeBundle("target");  // a bundle reached through a symbolic link
  std::string link = tmp_ / "bundles/link";
  fs::create_directory_symlink(target, link);
  Index(plain, "2026-11-01T00:00:00Z");
  Index(foreign, "2026-11-01T00:00:01Z");
  Index(link, "2026-11-01T00:00:02Z");
  Index("relative/bundle", "2026-11-01T00:00:03Z");
  PruneCriteria criteria;
  criteria.keep = 0;
  auto result = PruneBundles(db_, criteria, false, kNow);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->complete());
  ASSERT_EQ(result->actions.size(), 4u);
  for (const PruneAction& action : result->actions) {
    EXPECT_EQ(action.status, PruneStatus::kRefused) << action.choice.bundle.row.path;
    EXPECT_EQ(action.choice.bundle.disk_bytes, 0u);
  }
  EXPECT_EQ(result->actions[0].detail,
            "the index names a relative path; where it was relative to is not known, so it is left alone");
  EXPECT_EQ(result->actions[1].detail, "a symbolic link, not a bundle directory (not followed)");
  EXPECT_EQ(result->actions[2].detail, "not a crash bundle (manifest.json's kind is not \"gputriage.crash-bundle\")");
  EXPECT_EQ(result->actions[3].detail, "not a crash bundle (no manifest.json)");
  EXPECT_TRUE(fs::exists(plain + "/precious.txt"));
  EXPECT_TRUE(fs::exists(foreign + "/manifest.json"));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::exists(target + "/manifest.json"));
  EXPECT_EQ(IndexedIds().size(), 4u);
}

TEST_F(PruneTest, LinksInsideAreRemovedNotFollowed) {
  std::string outside = tmp_ / "outside";
  fs::create_directories(outside);
  Write(outside + "/data", "not the bundle's");
  std::string bundle = MakeBundle("b");
  fs::create_directory_symlink(outside, bundle + "/dir-link");
  fs::create_symlink(outside + "/data", bundle + "/file-link");
  fs::create_directories(bundle + "/.recorder/inner");
  Write(bundle + "/.recorder/inner/ring", "x");
  Index(bundle, "2026-11-01T00:00:00Z");
  PruneCriteria criteria;
  criteria.keep = 0;
  auto result = PruneBundles(db_, criteria, false, kNow);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->actions.size(), 1u);
  EXPECT_EQ(result->actions[0].status, PruneStatus::kRemoved) << result->actions[0].detail;
  EXPECT_FALSE(fs::exists(fs::symlink_status(bundle)));
  EXPECT_TRUE(fs::exists(outside + "/data"));
}

TEST_F(PruneTest, AGoneDirectoryLosesOnlyItsRow) {
  Index(tmp_ / "bundles/vanished", "2026-11-01T00:00:00Z");
  PruneCriteria criteria;
  criteria.older_than_s = 86400;
  auto dry = PruneBundles(db_, criteria, true, kNow);
  ASSERT_TRUE(dry.ok());
  ASSERT_EQ(dry->actions.size(), 1u);
  EXPECT_EQ(dry->actions[0].status, PruneStatus::kGone);
  EXPECT_EQ(IndexedIds().size(), 1u);
  auto result = PruneBundles(db_, criteria, false, kNow);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->actions[0].status, PruneStatus::kGone);
  EXPECT_TRUE(result->complete());
  EXPECT_TRUE(IndexedIds().empty());
}

TEST_F(PruneTest, FailsToRemoveAReadOnlyBundleAndKeepsItsRow) {
  if (::geteuid() == 0) GTEST_SKIP() << "root removes files from a read-only directory";
  std::string bundle = MakeBundle("ro");
  Index(bundle, "2026-11-01T00:00:00Z");
  fs::permissions(bundle, fs::perms::owner_read | fs::perms::owner_exec);
  PruneCriteria criteria;
  criteria.keep = 0;
  auto result = PruneBundles(db_, criteria, false, kNow);
  fs::permissions(bundle, fs::perms::owner_all);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->actions[0].status, PruneStatus::kFailed);
  EXPECT_NE(result->actions[0].detail.find("Permission denied"), std::string::npos) << result->actions[0].detail;
  EXPECT_EQ(IndexedIds().size(), 1u);
}

// A file system mounted inside a bundle is not crossed (like rm --one-file-system): the removal
// fails there, what is mounted keeps its files, and the bundle keeps its index row.
TEST_F(PruneTest, DoesNotCrossIntoAnotherFileSystem) {
  std::string bundle = MakeBundle("mounted");
  std::string mount_point = bundle + "/mnt";
  fs::create_directories(mount_point);
  if (::mount("gt-prune-test", mount_point.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mount_point};
  Write(mount_point + "/theirs", "not the bundle's");
  Index(bundle, "2026-11-01T00:00:00Z");
  PruneCriteria criteria;
  criteria.keep = 0;
  auto result = PruneBundles(db_, criteria, false, kNow);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->actions.size(), 1u);
  EXPECT_EQ(result->actions[0].status, PruneStatus::kFailed);
  EXPECT_EQ(result->actions[0].detail, mount_point + ": another file system is mounted there; not removed");
  EXPECT_FALSE(result->complete());
  EXPECT_TRUE(fs::exists(mount_point + "/theirs"));
  EXPECT_TRUE(fs::exists(bundle + "/manifest.json")) << "checked before anything was removed";
  EXPECT_TRUE(fs::exists(bundle + "/stderr.tail"));
  EXPECT_EQ(IndexedIds().size(), 1u);
}

TEST_F(PruneTest, NoCriterionIsRefused) {
  auto result = PruneBundles(db_, PruneCriteria{}, false, kNow);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, core::ErrorCode::kInvalidArgument);
}

TEST_F(PruneTest, NoDatabasePrunesNothingAndCreatesNothing) {
  PruneCriteria criteria;
  criteria.keep = 0;
  auto result = PruneBundles(db_, criteria, false, kNow);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->database_exists);
  EXPECT_TRUE(result->actions.empty());
  auto listing = ListBundleIndex(db_);
  ASSERT_TRUE(listing.ok());
  EXPECT_FALSE(listing->database_exists);
  EXPECT_FALSE(fs::exists(db_));
}

TEST_F(PruneTest, ShowByIdAndByPath) {
  std::string bundle = MakeBundle("shown");
  Write(bundle + "/process.json",
        R"({"signal": "SIGSEGV", "exit_status": 139, "signature": "SIGSEGV null-dereference main",
            "classification": {"kind": "null-dereference", "category": "illegal-address",
                               "summary": "read of address 0x0 with PASSWORD=hunter2"},
            "threads": [{"tid": 7, "frames": [{"pc": "0x401000", "function": "crash_null", "module": "/bin/job",
                                              "file": "job.c", "line": 12},
                                             {"pc": "0x401100", "function": "main", "module": "/bin/job"}]}]})");
  int64_t id = Index(bundle, "2026-12-01T00:00:00Z");
  auto by_id = LoadBundleArg(db_, std::to_string(id));
  ASSERT_TRUE(by_id.ok()) << by_id.error().message;
  ASSERT_TRUE(by_id->row.has_value());
  EXPECT_EQ(by_id->row->id, id);
  Json j = BundleDetailsToJson(*by_id, 1);
  EXPECT_EQ(j["signal"], "SIGSEGV");
  EXPECT_EQ(j["exit_status"], 139);
  EXPECT_EQ(j["kind"], "null-dereference");
  EXPECT_EQ(j["category"], "illegal-address");
  EXPECT_EQ(j["summary"], "read of address 0x0 with PASSWORD=<redacted>");
  ASSERT_EQ(j["top_frames"].size(), 1u);
  EXPECT_EQ(j["top_frames"][0]["function"], "crash_null");
  EXPECT_EQ(j["top_frames"][0]["line"], 12);
  std::vector<std::string> names;
  for (const Json& f : j["files"]) names.push_back(f["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"manifest.json", "process.json", "stderr.tail"}));
  EXPECT_EQ(j["files"][2]["size_bytes"], 100);

  auto by_path = LoadBundleArg(db_, bundle + "/");
  ASSERT_TRUE(by_path.ok()) << by_path.error().message;
  ASSERT_TRUE(by_path->row.has_value()) << "the row with the same path";
  EXPECT_EQ(by_path->row->id, id);
}

TEST_F(PruneTest, ShowNamesWhatIsWrong) {
  auto unknown = LoadBundleArg(db_, "42");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, core::ErrorCode::kNotFound);
  EXPECT_EQ(unknown.error().message, "no bundle with id 42: no bundle index at " + db_ + " yet");
  Index(MakeBundle("x"), "2026-12-01T00:00:00Z");
  unknown = LoadBundleArg(db_, "42");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "no bundle with id 42 in " + db_);

  int64_t relative = Index("relative/bundle", "2026-12-01T00:00:01Z");
  auto elsewhere = LoadBundleArg(db_, std::to_string(relative));
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_EQ(elsewhere.error().message,
            fmt::format("bundle {} (relative/bundle): No such file or directory; the index names a relative path, "
                        "relative to the directory `gputriage run` was started in",
                        relative));

  std::string missing = tmp_ / "bundles/missing";
  auto gone = LoadBundleArg(db_, missing);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, core::ErrorCode::kNotFound);
  EXPECT_EQ(gone.error().message, missing + ": No such file or directory");

  std::string plain = tmp_ / "bundles/plain";
  fs::create_directories(plain);
  auto not_bundle = LoadBundleArg(db_, plain);
  ASSERT_FALSE(not_bundle.ok());
  EXPECT_EQ(not_bundle.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(not_bundle.error().message, plain + ": not a crash bundle (no manifest.json)");

  std::string damaged = MakeBundle("damaged");
  Write(damaged + "/process.json", "{\"signal\": ");
  int64_t id = Index(damaged, "2026-12-02T00:00:00Z");
  auto bad = LoadBundleArg(db_, std::to_string(id));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message.rfind(fmt::format("bundle {} ({})/process.json: ", id, damaged), 0), 0u)
      << bad.error().message;
}

}  // namespace
}  // namespace gputriage::store
