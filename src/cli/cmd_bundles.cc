// `gputriage bundles list|show|prune`: the crash bundles `run` wrote and indexed, grouped by
// signature; one bundle in detail; removing old ones by age, count and size.
#include <fmt/format.h>

#include "cli/common.h"
#include "cli/render.h"
#include "core/redact.h"
#include "core/signals.h"
#include "core/terminal.h"
#include "core/text.h"
#include "pack/bundle_pack.h"
#include "store/bundle_store.h"

namespace gputriage::cli {

namespace {

constexpr size_t kShowFrames = 8;

std::string T(std::string_view text) { return core::SanitizeForTerminal(text); }

std::string Pad(const std::string& text, size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string Plural(size_t count, const char* noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

std::string NothingIndexed(const store::BundleIndexListing& listing) {
  if (!listing.database_exists) {
    return fmt::format(
        "no crash bundles yet: there is no bundle index at {} (`gputriage run -- CMD` writes and indexes a "
        "bundle when the job fails)\n",
        T(listing.database));
  }
  return fmt::format("no crash bundles in {} (`gputriage run -- CMD` writes and indexes a bundle when the job fails)\n",
                     T(listing.database));
}

std::string MoreLine(size_t shown, size_t total, const char* noun) {
  if (shown >= total) return "";
  return fmt::format("({} of {} {}s shown; --limit 0 lists all)\n", shown, total, noun);
}

std::string RenderGroups(const store::BundleIndexListing& listing, size_t limit) {
  if (listing.bundles.empty()) return NothingIndexed(listing);
  std::vector<store::BundleGroup> groups = store::GroupBundlesBySignature(listing.bundles);
  size_t shown = limit == 0 ? groups.size() : std::min(limit, groups.size());
  std::string text = fmt::format("{} in {} by signature, newest first ({})\n", Plural(listing.bundles.size(), "bundle"),
                                 Plural(groups.size(), "group"), T(listing.database));
  text += "COUNT  LAST SEEN             FIRST SEEN            CATEGORY              SIGNATURE\n";
  for (size_t i = 0; i < shown; ++i) {
    const store::BundleGroup& group = groups[i];
    text +=
        fmt::format("{:>5}  {}  {}  {} {}\n", group.count, Pad(T(group.last_seen), 20), Pad(T(group.first_seen), 20),
                    Pad(T(group.category.value_or("-")), 21), T(group.signature.value_or("(no signature)")));
    text += fmt::format("       newest: {}  {}\n", group.newest.id, T(group.newest.path));
  }
  return text + MoreLine(shown, groups.size(), "group");
}

std::string RenderAll(const store::BundleIndexListing& listing, size_t limit) {
  if (listing.bundles.empty()) return NothingIndexed(listing);
  size_t shown = limit == 0 ? listing.bundles.size() : std::min(limit, listing.bundles.size());
  std::string text =
      fmt::format("{}, newest first ({})\n", Plural(listing.bundles.size(), "bundle"), T(listing.database));
  text += "   ID  CREATED               STATUS  SIGNAL    CATEGORY              SIGNATURE\n";
  for (size_t i = 0; i < shown; ++i) {
    const store::BundleRow& row = listing.bundles[i];
    std::string status = row.exit_status ? std::to_string(*row.exit_status) : "-";
    text += fmt::format("{:>5}  {}  {:>6}  {} {} {}\n", row.id, Pad(T(row.created_at), 20), status,
                        Pad(T(row.signal.value_or("-")), 9), Pad(T(row.category.value_or("-")), 21),
                        T(row.signature.value_or("(no signature)")));
    text += fmt::format("       {}\n", T(row.path));
  }
  return text + MoreLine(shown, listing.bundles.size(), "bundle");
}

std::string FrameLine(size_t index, const core::Frame& frame) {
  std::string line = fmt::format("#{} {}", index, frame.function.empty() ? "??" : T(frame.function));
  if (frame.file) line += fmt::format(" ({}{})", T(*frame.file), frame.line ? fmt::format(":{}", *frame.line) : "");
  if (!frame.module.empty()) line += " in " + T(frame.module);
  return line;
}

// Label in a column of 11, then the value; continuation lines are indented the same.
void Field(std::string& text, const char* label, const std::string& value) {
  text += fmt::format("{:<11}{}\n", label, value);
}

std::string RenderDetails(const store::BundleDetails& details) {
  core::Json j = store::BundleDetailsToJson(details, kShowFrames);
  std::string text;
  std::string where = T(details.path);
  if (details.row) {
    where += fmt::format("  (index id {}, indexed {})", details.row->id, T(details.row->created_at));
  } else {
    where += "  (not in the bundle index)";
  }
  Field(text, "bundle", where);
  auto text_of = [&j](const char* key) { return j[key].is_string() ? T(j[key].get<std::string>()) : std::string(); };
  if (!text_of("created_at").empty()) Field(text, "created", text_of("created_at"));
  const std::optional<core::BundleManifest>& manifest = details.bundle.manifest;
  if (manifest && manifest->command) {
    Field(text, "command", T(core::RedactedShellCommand(*manifest->command)));
  } else if (details.row) {
    Field(text, "command", T(details.row->command));
  }
  Field(text, "what", text_of("summary").empty() ? std::string("(no classification)") : text_of("summary"));
  if (!text_of("kind").empty()) {
    std::string kind = text_of("kind");
    if (!text_of("category").empty()) kind += " (category " + text_of("category") + ")";
    Field(text, "kind", kind);
  }
  std::string ended;
  if (!text_of("signal").empty()) ended = "signal " + text_of("signal");
  if (j["exit_status"].is_number()) {
    ended += (ended.empty() ? "" : ", ") + fmt::format("exit status {}", j["exit_status"].get<int64_t>());
  }
  if (details.bundle.process.timed_out) ended += ended.empty() ? "timed out" : ", timed out";
  if (!ended.empty()) Field(text, "ended", ended);
  if (!text_of("signature").empty()) Field(text, "signature", text_of("signature"));
  const std::vector<core::ThreadState>& threads = details.bundle.process.primary.threads;
  if (!threads.empty() && !threads.front().frames.empty()) {
    const std::vector<core::Frame>& frames = threads.front().frames;
    for (size_t i = 0; i < frames.size() && i < kShowFrames; ++i) {
      Field(text, i == 0 ? "frames" : "", FrameLine(i, frames[i]));
    }
    if (frames.size() > kShowFrames) Field(text, "", fmt::format("... {} more", frames.size() - kShowFrames));
  }
  for (size_t i = 0; i < details.files.size(); ++i) {
    const store::BundleDirEntry& entry = details.files[i];
    std::string size = entry.type == "file" ? fmt::format("{:>10}", FormatBytes(static_cast<double>(entry.size_bytes)))
                                            : fmt::format("{:>10}", entry.type);
    Field(text, i == 0 ? "files" : "", Pad(T(entry.name), 24) + " " + size);
  }
  for (size_t i = 0; i < details.bundle.problems.size(); ++i) {
    const core::NotCollected& problem = details.bundle.problems[i];
    Field(text, i == 0 ? "problems" : "", T(problem.item) + ": " + T(problem.reason));
  }
  return text;
}

std::string RenderPrune(const store::PruneResult& result) {
  if (!result.database_exists) {
    return fmt::format("nothing to prune: there is no bundle index at {}\n", T(result.database));
  }
  if (result.actions.empty()) {
    return fmt::format("nothing to prune: none of the {} in {} matches\n", Plural(result.indexed, "indexed bundle"),
                       T(result.database));
  }
  std::string text;
  size_t removed = 0;
  for (const store::PruneAction& action : result.actions) {
    const store::SizedBundle& bundle = action.choice.bundle;
    std::string status;
    switch (action.status) {
      case store::PruneStatus::kRemoved:
        status = "removed";
        ++removed;
        break;
      case store::PruneStatus::kWouldRemove:
        status = "would remove";
        ++removed;
        break;
      case store::PruneStatus::kGone:
        status = result.dry_run ? "gone (would drop its index row)" : "gone (index row dropped)";
        ++removed;
        break;
      case store::PruneStatus::kRefused:
        status = result.dry_run ? "would refuse" : "refused";
        break;
      case store::PruneStatus::kFailed:
        status = "failed";
        break;
    }
    std::string reasons;
    for (const std::string& reason : action.choice.reasons) reasons += (reasons.empty() ? "" : ", ") + reason;
    text += fmt::format("{}  {}  {}  {}  {}  ({})\n", Pad(status, 12), bundle.row.id, T(bundle.row.created_at),
                        FormatBytes(static_cast<double>(bundle.disk_bytes)), T(bundle.row.path), T(reasons));
    if (!action.detail.empty()) text += "    " + T(action.detail) + "\n";
  }
  size_t kept = result.indexed - removed;
  if (result.dry_run) {
    text +=
        fmt::format("dry run: {} would go ({} freed), {} would stay; nothing was removed\n", Plural(removed, "bundle"),
                    FormatBytes(static_cast<double>(result.freed_bytes)), Plural(kept, "indexed bundle"));
  } else {
    text += fmt::format("{} removed ({} freed), {} kept\n", Plural(removed, "bundle"),
                        FormatBytes(static_cast<double>(result.freed_bytes)), Plural(kept, "indexed bundle"));
  }
  return text;
}

// list and show only read: the index is opened read-only and never created.
int RunList(bool json, size_t limit, bool all) {
  auto listing = store::ListDefaultBundleIndex();
  if (!listing.ok()) return Fail("bundles list: " + listing.error().message, kExitInternal);
  if (json) {
    PrintJson(all ? store::BundleRowsToJson(*listing, limit) : store::BundleGroupsToJson(*listing, limit));
  } else {
    std::fputs((all ? RenderAll(*listing, limit) : RenderGroups(*listing, limit)).c_str(), stdout);
  }
  return kExitOk;
}

int RunShow(const std::string& arg, bool json) {
  auto details = store::LoadBundleArgFromDefaultStore(arg);
  if (!details.ok()) {
    // A bundle that is not there, not a bundle or damaged is the caller's input; an index we
    // cannot read is our failure.
    bool ours = details.error().code == core::ErrorCode::kIo;
    return Fail("bundles show: " + details.error().message, ours ? kExitInternal : kExitUsage);
  }
  if (json) {
    PrintJson(store::BundleDetailsToJson(*details, kShowFrames));
  } else {
    std::fputs(RenderDetails(*details).c_str(), stdout);
  }
  return kExitOk;
}

struct PruneFlags {
  std::string older_than;
  std::optional<size_t> keep;
  std::string max_size;
  bool dry_run = false;
};

int RunPrune(const PruneFlags& flags, bool json) {
  store::PruneCriteria criteria;
  if (!flags.older_than.empty()) {
    criteria.older_than_s = store::ParseAgeSeconds(flags.older_than);
    if (!criteria.older_than_s) {
      return Fail(
          fmt::format("bundles prune: --older-than '{}' is not an age (examples: 36h, 30d, 2w)", flags.older_than),
          kExitUsage);
    }
  }
  criteria.keep = flags.keep;
  if (!flags.max_size.empty()) {
    criteria.max_size_bytes = core::ParseByteSize(flags.max_size);
    if (!criteria.max_size_bytes) {
      return Fail(fmt::format("bundles prune: --max-size '{}' is not a size (examples: 500M, 10G)", flags.max_size),
                  kExitUsage);
    }
  }
  if (!criteria.any()) {
    return Fail(
        "bundles prune: say what to remove: --older-than AGE (e.g. 30d), --keep N (the newest N stay) or "
        "--max-size SIZE (e.g. 10G); add --dry-run to see what would go",
        kExitUsage);
  }
  auto result = store::PruneDefaultBundleIndex(criteria, flags.dry_run);
  if (!result.ok()) return Fail("bundles prune: " + result.error().message, kExitInternal);
  if (json) {
    PrintJson(store::PruneResultToJson(*result));
  } else {
    std::fputs(RenderPrune(*result).c_str(), stdout);
  }
  if (result->dry_run || result->complete()) return kExitOk;
  size_t left = 0;
  for (const store::PruneAction& action : result->actions) {
    if (action.status == store::PruneStatus::kRefused || action.status == store::PruneStatus::kFailed) ++left;
  }
  return Fail(
      fmt::format("bundles prune: {} could not be removed (see above); their index rows stay", Plural(left, "bundle")),
      kExitInternal);
}

struct PackFlags {
  std::string bundle;
  std::string output;
  bool with_core = false;
  bool force = false;
};

core::Json PackResultToJson(const std::string& bundle, const pack::PackResult& r) {
  core::Json members = core::Json::array();
  for (const pack::PackedMember& m : r.members) {
    members.push_back({{"name", m.name}, {"bytes", m.bytes}, {"redacted", m.redacted}, {"changed", m.changed}});
  }
  core::Json left_out = core::Json::array();
  for (const core::NotCollected& n : r.left_out) left_out.push_back({{"item", n.item}, {"reason", n.reason}});
  return {{"bundle", bundle},
          {"output", r.output},
          {"top", r.top},
          {"archive_bytes", r.archive_bytes},
          {"core_included", r.core_included},
          {"members", members},
          {"left_out", left_out}};
}

std::string RenderPack(const std::string& bundle, const pack::PackResult& r) {
  std::string text = fmt::format("packed {} -> {} ({}, {}, secrets redacted)\n", T(bundle), T(r.output),
                                 FormatBytes(static_cast<double>(r.archive_bytes)), Plural(r.members.size(), "file"));
  for (const pack::PackedMember& m : r.members) {
    std::string how = !m.redacted ? "NOT REDACTED (raw memory)" : m.changed ? "redacted: secrets replaced" : "redacted";
    text += fmt::format("  {}  {:>10}  {}\n", Pad(T(m.name), 48), FormatBytes(static_cast<double>(m.bytes)), how);
  }
  for (const core::NotCollected& n : r.left_out) text += fmt::format("  left out: {}: {}\n", T(n.item), T(n.reason));
  return text;
}

int RunPack(const PackFlags& flags, bool json) {
  // An index id or a directory, as `show` takes it; the directory is what is packed.
  auto details = store::LoadBundleArgFromDefaultStore(flags.bundle);
  if (!details.ok()) {
    bool ours = details.error().code == core::ErrorCode::kIo;
    return Fail("bundles pack: " + details.error().message, ours ? kExitInternal : kExitUsage);
  }
  pack::PackRequest request{
      .bundle_dir = details->path, .output = flags.output, .with_core = flags.with_core, .force = flags.force};
  auto result = pack::PackBundle(request);
  if (!result.ok()) {
    bool usage = result.error().code == core::ErrorCode::kInvalidArgument;
    return Fail("bundles pack: " + result.error().message, usage ? kExitUsage : kExitInternal);
  }
  if (result->core_included) {
    PrintError(
        fmt::format("warning: --with-core: {} holds the core file UNREDACTED: the process's raw memory, with its "
                    "environment, command "
                    "line and whatever secrets and data it held. Share it only with people who may see all of that.",
                    result->output));
  } else if (flags.with_core) {
    PrintError("warning: --with-core: the bundle has no core file; none was packed");
  }
  if (json) {
    PrintJson(PackResultToJson(details->path, *result));
  } else {
    std::fputs(RenderPack(details->path, *result).c_str(), stdout);
  }
  return kExitOk;
}

// `gputriage bundles` without one of its subcommands.
int NoSubcommand(const std::vector<std::string>& words) {
  if (words.empty())
    return Fail("bundles: name a subcommand: list, show, prune or pack (see gputriage bundles --help)", kExitUsage);
  return Fail(fmt::format("bundles: unknown subcommand '{}': the subcommands are list, show, prune and pack (see "
                          "gputriage "
                          "bundles --help)",
                          words.front()),
              kExitUsage);
}

}  // namespace

Command BundlesCommand() {
  return Command{
      "bundles", "The crash bundles run wrote: grouped by signature, one in detail, old ones pruned, one packed.",
      [](CLI::App& app) -> std::function<int()> {
        struct State {
          bool json = false;
          size_t limit = 20;
          bool all = false;
          std::string show_arg;
          PruneFlags prune;
          PackFlags pack;
        };
        auto s = std::make_shared<State>();
        app.description(
            "The crash bundles `gputriage run` wrote and indexed in the history database under the data "
            "home ($GPUTRIAGE_HOME, else $XDG_DATA_HOME/gputriage, else ~/.local/share/gputriage). "
            "list groups them by signature, as crash reporters do; show reads one; prune removes old "
            "ones and their index rows. list and show only read: they create nothing.");
        // A word that is no subcommand gets our own message (below), not CLI11's "A subcommand is
        // required"; allow_extras is set after the subcommands, which inherit it when added.
        app.require_subcommand(0, 1);
        app.footer(
            "Exit codes: 0 done, 2 usage error (a bundle that is not there or not a bundle), 3 internal "
            "failure (the database cannot be read; prune could not remove a bundle).");
        CLI::App* list = app.add_subcommand(
            "list",
            "One line per signature group, newest group first: how many bundles, first and last seen, "
            "category, signature and the newest bundle's path");
        list->add_flag("--all", s->all, "One line per bundle instead of per group");
        list->add_flag("--json", s->json,
                       "JSON output: {database, total_groups, total_bundles, groups: [{signature, category, "
                       "count, first_seen, last_seen, newest: {id, created_at, path}}]}; with --all "
                       "{database, total_bundles, bundles: [{id, created_at, path, command, exit_status, signal, "
                       "kind, category, signature, summary}]}");
        list->add_option("--limit", s->limit, "At most this many groups (bundles with --all); 0 for all")
            ->capture_default_str();
        CLI::App* show = app.add_subcommand(
            "show",
            "One bundle: its index row, what happened (classification, signal, exit status), the crashed "
            "thread's top frames and its files with their sizes");
        show->add_option("bundle", s->show_arg, "An index id (as list shows it) or a bundle directory")->required();
        show->add_flag("--json", s->json,
                       "JSON output: {path, indexed, created_at, command, exit_status, signal, kind, category, "
                       "summary, signature, timed_out, top_frames, files: [{name, type, size_bytes}], problems}");
        CLI::App* prune =
            app.add_subcommand("prune",
                               "Remove bundle directories and their index rows by age, count and size (at least one of "
                               "--older-than, --keep, --max-size; a bundle goes when any of them chooses it)");
        prune
            ->add_option("--older-than", s->prune.older_than,
                         "Remove bundles indexed longer ago than AGE (s, m, h, d, w: 36h, 30d, 2w)")
            ->type_name("AGE");
        prune->add_option("--keep", s->prune.keep, "Keep the newest N bundles, remove the older ones")->type_name("N");
        prune
            ->add_option("--max-size", s->prune.max_size,
                         "Keep the newest bundles that together take at most SIZE on disk (as du counts; 500M, "
                         "10G), remove the older ones")
            ->type_name("SIZE");
        prune->add_flag("--dry-run", s->prune.dry_run, "List what would go; remove nothing");
        prune->add_flag("--json", s->json,
                        "JSON output: {database, dry_run, indexed, freed_bytes, complete, bundles: [{id, "
                        "created_at, path, signature, disk_bytes, reasons, status, detail}]}");
        prune->footer(
            "Only the directory the index names is removed, and only when it is a crash bundle (a real "
            "directory, not a symbolic link, holding run's manifest.json); anything else is refused and "
            "left alone. Links inside are removed, never followed. A directory already gone loses its "
            "index row.");
        CLI::App* pack = app.add_subcommand(
            "pack",
            "One bundle as one .tar.zst to attach to a bug report, secrets redacted (each JSON file through "
            "its typed model, the output tails and kernel log as text); the core is left out unless "
            "--with-core");
        pack->add_option("bundle", s->pack.bundle, "An index id (as list shows it) or a bundle directory")->required();
        pack->add_option("-o,--output", s->pack.output,
                         "The archive to write (default: <bundle directory's name>.tar.zst here)")
            ->type_name("FILE");
        pack->add_flag("--with-core", s->pack.with_core,
                       "Also pack the core file (core or core.zst) as it is: raw memory, NOT redacted");
        pack->add_flag("--force", s->pack.force, "Replace the output file when it exists");
        pack->add_flag("--json", s->json,
                       "JSON output: {bundle, output, top, archive_bytes, core_included, members: [{name, bytes, "
                       "redacted, changed}], left_out: [{item, reason}]}");
        pack->footer(
            "The archive is deterministic (members sorted, owner 0:0, mode 0644, the bundle's time) and has "
            "one top directory named after the bundle; `gputriage analyze FILE.tar.zst` and `report` read "
            "it. It is written to a temp file and renamed into place (mode 0600).");
        app.allow_extras();
        return [s, list, show, prune, pack, &app]() {
          if (list->parsed()) return RunList(s->json, s->limit, s->all);
          if (show->parsed()) return RunShow(s->show_arg, s->json);
          if (prune->parsed()) return RunPrune(s->prune, s->json);
          if (pack->parsed()) return RunPack(s->pack, s->json);
          return NoSubcommand(app.remaining());
        };
      }};
}

}  // namespace gputriage::cli
