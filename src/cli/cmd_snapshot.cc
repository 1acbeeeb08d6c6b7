// `gputriage snapshot [--json] [--save] [--root DIR]` and its history subcommands
// `list`, `show ID`, `diff A B`.
#include "cli/common.h"
#include "cli/render.h"
#include "store/diff.h"
#include "store/snapshot_arg.h"
#include "store/snapshot_store.h"

namespace gputriage::cli {

namespace {

// The exit status when a snapshot operand could not be loaded: a stored snapshot that the
// database could not give (corrupt, unreadable) is the store's failure, 3, as `snapshot list`
// says for the same database; a bad id or a file the user named is a usage error, 2.
int LoadFailure(std::string_view arg, const core::Error& error) {
  bool store_failed = error.code == core::ErrorCode::kDataLoss || error.code == core::ErrorCode::kIo ||
                      error.code == core::ErrorCode::kPermissionDenied;
  return Fail(error.message, store::NamesStoredSnapshot(arg) && store_failed ? kExitInternal : kExitUsage);
}

int RunTake(const SnapshotFlags& flags, bool json, bool save) {
  auto snapshot = TakeSnapshot(flags);
  if (!snapshot.ok()) return Fail(snapshot.error().message, kExitUsage);
  std::optional<int64_t> saved_id;
  if (save) {
    auto db = store::SnapshotStore::OpenDefault();
    auto id = db.ok() ? db->Save(*snapshot) : core::Result<int64_t>(db.error());
    if (!id.ok()) return Fail("cannot save the snapshot: " + id.error().message, kExitInternal);
    saved_id = *id;
    snapshot->id = *id;
  }
  if (json) {
    PrintJson(core::ToJson(*snapshot));
  } else {
    std::fputs(RenderTakenSnapshot(*snapshot, saved_id).c_str(), stdout);
  }
  return kExitOk;
}

// list, show and diff only read: the database is opened read-only (it may be in a read-only
// directory or file) and never created; a database that is not there lists nothing.
int RunList(bool json, size_t limit) {
  auto rows = store::ListDefaultStore(limit);
  if (!rows.ok()) return Fail(rows.error().message, kExitInternal);
  if (json) {
    PrintJson(store::SnapshotRowsToJson(*rows));
  } else {
    std::fputs(RenderSnapshotList(*rows).c_str(), stdout);
  }
  return kExitOk;
}

int RunShow(const std::string& arg, bool json) {
  store::SnapshotStore db = store::SnapshotStore::OpenDefaultReadOnlyOrUnavailable();
  auto snapshot = store::LoadSnapshotArg(&db, arg);
  if (!snapshot.ok()) return LoadFailure(arg, snapshot.error());
  if (json) {
    PrintJson(core::ToJson(*snapshot));
  } else {
    std::fputs(RenderSnapshotSummary(*snapshot).c_str(), stdout);
  }
  return kExitOk;
}

int RunDiff(const std::string& a, const std::string& b, bool json) {
  store::SnapshotStore db = store::SnapshotStore::OpenDefaultReadOnlyOrUnavailable();
  auto before = store::LoadSnapshotArg(&db, a);
  if (!before.ok()) return LoadFailure(a, before.error());
  auto after = store::LoadSnapshotArg(&db, b);
  if (!after.ok()) return LoadFailure(b, after.error());
  std::vector<store::Change> changes = store::DiffSnapshots(*before, *after);
  if (json) {
    PrintJson(store::DiffToJson(changes));
  } else {
    std::fputs(RenderChanges(changes).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace

Command SnapshotCommand() {
  return Command{"snapshot", "Layer 1: collect host, GPUs, drivers, software, kernel log and GPU env vars in one pass.",
                 [](CLI::App& app) -> std::function<int()> {
                   struct State {
                     SnapshotFlags flags;
                     bool json = false;
                     bool save = false;
                     size_t limit = 20;
                     std::string show_id, diff_a, diff_b;
                   };
                   auto s = std::make_shared<State>();
                   app.description(
                       "Layer 1: freeze the scene. Collects, in one pass and in parallel, the host, every "
                       "GPU on the PCI bus, the NVIDIA/AMD driver state (NVML, amdgpu sysfs, KFD), the "
                       "installed GPU software, GPU-related kernel-log records and the GPU-stack "
                       "environment variables (secrets redacted). Probes that can hang in the driver run "
                       "in a helper process under a watchdog. History: --save, then list/show/diff.");
                   s->flags.Add(app);
                   app.add_flag("--json", s->json, "Print the whole snapshot as JSON (docs/snapshot-schema.md)");
                   app.add_flag("--save", s->save, "Store the snapshot in the history database under the data home");
                   app.require_subcommand(0, 1);
                   CLI::App* list = app.add_subcommand("list", "List saved snapshots, newest first");
                   list->add_flag("--json", s->json, "JSON output");
                   list->add_option("--limit", s->limit, "At most this many")->capture_default_str();
                   CLI::App* show = app.add_subcommand("show", "Show a saved snapshot (id, 'latest' or a JSON file)");
                   show->add_option("id", s->show_id, "Snapshot id, 'latest', or a snapshot JSON file")->required();
                   show->add_flag("--json", s->json, "JSON output");
                   CLI::App* diff =
                       app.add_subcommand("diff",
                                          "What changed between two snapshots (ids, 'latest' or JSON files): versions, "
                                          "GPUs, links, drivers, env vars, new kernel-log error classes");
                   diff->add_option("a", s->diff_a, "The earlier snapshot")->required();
                   diff->add_option("b", s->diff_b, "The later snapshot")->required();
                   diff->add_flag("--json", s->json, "JSON output: {changes: [{kind, path, before, after, summary}]}");
                   return [s, list, show, diff]() {
                     if (list->parsed()) return RunList(s->json, s->limit);
                     if (show->parsed()) return RunShow(s->show_id, s->json);
                     if (diff->parsed()) return RunDiff(s->diff_a, s->diff_b, s->json);
                     return RunTake(s->flags, s->json, s->save);
                   };
                 }};
}

}  // namespace gputriage::cli
