// `gputriage snapshot [--json] [--save] [--root DIR]` and its history subcommands
// `list`, `show ID`, `diff A B`.
#include <fmt/format.h>

#include "cli/common.h"
#include "cli/render.h"
#include "store/data_home.h"
#include "store/diff.h"
#include "store/snapshot_arg.h"
#include "store/snapshot_store.h"

namespace gputriage::cli {

namespace {

core::Result<store::SnapshotStore> OpenStore() {
  GT_ASSIGN_OR_RETURN(std::string path, store::DefaultDatabasePath());
  return store::SnapshotStore::Open(path);
}

int RunTake(const SnapshotFlags& flags, bool json, bool save) {
  auto snapshot = TakeSnapshot(flags);
  if (!snapshot.ok()) {
    PrintError(snapshot.error().message);
    return kExitUsage;
  }
  std::optional<int64_t> saved_id;
  if (save) {
    auto db = OpenStore();
    if (!db.ok()) {
      PrintError("cannot save the snapshot: " + db.error().message);
      return kExitInternal;
    }
    auto id = db->Save(*snapshot);
    if (!id.ok()) {
      PrintError("cannot save the snapshot: " + id.error().message);
      return kExitInternal;
    }
    saved_id = *id;
    snapshot->id = *id;
  }
  if (json) {
    PrintJson(core::ToJson(*snapshot));
  } else {
    std::string text = RenderSnapshotSummary(*snapshot);
    text += RenderFindings(snapshot->findings);
    text += fmt::format("collected in {:.0f} ms", snapshot->collection_ms.value_or(0.0));
    if (saved_id) text += fmt::format("; saved as snapshot {}", *saved_id);
    text += " (--json for everything)\n";
    std::fputs(text.c_str(), stdout);
  }
  return kExitOk;
}

int RunList(bool json, size_t limit) {
  auto db = OpenStore();
  if (!db.ok()) {
    PrintError(db.error().message);
    return kExitInternal;
  }
  auto rows = db->List(limit);
  if (!rows.ok()) {
    PrintError(rows.error().message);
    return kExitInternal;
  }
  if (json) {
    core::Json out = core::Json::array();
    for (const auto& row : *rows) {
      out.push_back({{"id", row.id},
                     {"created_at", row.created_at},
                     {"hostname", row.hostname ? core::Json(*row.hostname) : core::Json(nullptr)},
                     {"gpu_count", row.gpu_count ? core::Json(*row.gpu_count) : core::Json(nullptr)},
                     {"summary", row.summary}});
    }
    PrintJson(core::Json{{"snapshots", out}});
    return kExitOk;
  }
  if (rows->empty()) {
    std::puts("no saved snapshots (take one with `gputriage snapshot --save`)");
    return kExitOk;
  }
  for (const auto& row : *rows) {
    std::printf("%5lld  %s  %-20s %s\n", static_cast<long long>(row.id), row.created_at.c_str(),
                row.hostname.value_or("?").c_str(), row.summary.c_str());
  }
  return kExitOk;
}

int RunShow(const std::string& arg, bool json) {
  auto db = OpenStore();
  auto snapshot = store::LoadSnapshotArg(db.ok() ? &*db : nullptr, arg);
  if (!snapshot.ok()) {
    PrintError(snapshot.error().message);
    return kExitUsage;
  }
  if (json) {
    PrintJson(core::ToJson(*snapshot));
  } else {
    std::fputs(RenderSnapshotSummary(*snapshot).c_str(), stdout);
  }
  return kExitOk;
}

int RunDiff(const std::string& a, const std::string& b, bool json) {
  auto db = OpenStore();
  store::SnapshotStore* store = db.ok() ? &*db : nullptr;
  auto before = store::LoadSnapshotArg(store, a);
  if (!before.ok()) {
    PrintError(before.error().message);
    return kExitUsage;
  }
  auto after = store::LoadSnapshotArg(store, b);
  if (!after.ok()) {
    PrintError(after.error().message);
    return kExitUsage;
  }
  std::vector<store::Change> changes = store::DiffSnapshots(*before, *after);
  if (json) {
    PrintJson(store::DiffToJson(changes));
    return kExitOk;
  }
  if (changes.empty()) {
    std::puts("no changes");
    return kExitOk;
  }
  for (const store::Change& change : changes) {
    std::printf("%-26s %s\n", change.kind.c_str(), change.summary.c_str());
  }
  return kExitOk;
}

}  // namespace

Command SnapshotCommand() {
  return Command{
      "snapshot",
      "Layer 1: collect host, GPUs, drivers, software, kernel log and GPU env vars in one pass.",
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
        CLI::App* diff = app.add_subcommand(
            "diff", "What changed between two snapshots (ids, 'latest' or JSON files): versions, "
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
