// `gputriage agent --listen ADDR:PORT --events-file PATH [--interval SECONDS]` and
// `gputriage events [--since T] [--job ID] [--json] [--events-file PATH]`.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>

#include "agent/agent.h"
#include "catalog/catalog.h"
#include "cli/common.h"
#include "core/clock.h"
#include "core/event.h"
#include "core/file.h"
#include "core/text.h"

namespace gputriage::cli {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reopen{false};

void OnStopSignal(int) { g_stop.store(true); }
void OnHangup(int) { g_reopen.store(true); }

struct AgentFlags {
  std::string listen = "127.0.0.1:9402";
  std::string events_file;
  double interval = 1.0;
  std::string kmsg = "/dev/kmsg";
};

std::string Hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

int RunAgentCommand(const AgentFlags& flags) {
  if (!(flags.interval > 0) || flags.interval > 3600) {
    return Fail(fmt::format("agent: --interval {} must be more than 0 and at most 3600 seconds", flags.interval),
                kExitUsage);
  }
  if (auto address = agent::ParseListenAddress(flags.listen); !address.ok()) {
    return Fail("agent: " + address.error().message, kExitUsage);
  }
  auto catalog = catalog::BuiltinCatalog();
  if (!catalog.ok()) return Fail("agent: " + catalog.error().message, kExitInternal);
  agent::AgentOptions options;
  options.listen = flags.listen;
  options.events_file = flags.events_file;
  options.interval_s = flags.interval;
  options.kmsg_path = flags.kmsg;
  options.context.host = Hostname();
  options.context.catalog = *catalog;
  options.context.job_of = agent::JobOfProcess;
  options.context.executable_of = agent::ExecutableOfProcess;
  options.stop = &g_stop;
  options.reopen = &g_reopen;
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  };
  struct sigaction stop {};
  stop.sa_handler = OnStopSignal;
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  struct sigaction hangup {};
  hangup.sa_handler = OnHangup;
  sigaction(SIGHUP, &hangup, nullptr);
  auto ran = agent::RunAgent(options);
  if (!ran.ok()) return Fail("agent: " + ran.error().message, kExitUsage);
  return kExitOk;
}

struct EventsFlags {
  std::string events_file;
  std::string since;
  std::string job;
  bool json = false;
};

int RunEvents(const EventsFlags& flags) {
  std::optional<double> since;
  if (!flags.since.empty()) {
    since = core::ParseUtcIso(flags.since);
    if (!since) {
      return Fail(fmt::format("events: --since '{}' is not a time (2026-12-08T01:00:00Z)", flags.since), kExitUsage);
    }
  }
  auto text = core::ReadFile(flags.events_file, 1u << 30);
  if (!text.ok()) return Fail("events: " + text.error().message, kExitUsage);
  core::Json out = core::Json::array();
  std::string lines;
  size_t number = 0, damaged = 0;
  for (std::string_view line : core::Split(*text, '\n')) {
    ++number;
    if (core::Trim(line).empty()) continue;
    auto event = core::EventFromJson(line, fmt::format("{}:{}", flags.events_file, number));
    if (!event.ok()) {
      ++damaged;
      continue;
    }
    if (since) {
      std::optional<double> at = core::ParseUtcIso(event->time);
      if (!at || *at < *since) continue;
    }
    if (!flags.job.empty() && event->job != flags.job && event->pod != flags.job) continue;
    if (flags.json) {
      out.push_back(core::ToJson(*event));
    } else {
      lines +=
          fmt::format("{}  {:<22} gpu {:<3} pid {:<8} job {:<12} {}\n", event->time, event->error_type,
                      event->gpu ? std::to_string(*event->gpu) : "-", event->pid ? std::to_string(*event->pid) : "-",
                      event->job.value_or("-"), core::SanitizeUtf8(event->message.substr(0, 160)));
    }
  }
  if (flags.json) {
    PrintJson(core::Json{{"events", out}, {"damaged_lines", damaged}});
  } else {
    std::fputs(lines.empty() ? "no events\n" : lines.c_str(), stdout);
    if (damaged > 0)
      PrintError(fmt::format("events: {} line(s) of {} are not events; skipped", damaged, flags.events_file));
  }
  return kExitOk;
}

}  // namespace

Command AgentCommand() {
  return Command{
      "agent", "Node daemon: follows the kernel log, writes GPU events tied to their job, serves /metrics.",
      [](CLI::App& app) -> std::function<int()> {
        auto flags = std::make_shared<AgentFlags>();
        app.description(
            "Runs until SIGTERM or SIGINT. Follows the kernel log live (/dev/kmsg, from its end: root or "
            "CAP_SYSLOG where kernel.dmesg_restrict is set) and turns every GPU record into one event: an NVIDIA "
            "Xid (xid_N, with nvidia-xid.yaml's meaning and action), an amdgpu VM fault, ring timeout or reset, a "
            "RAS, AER or IOMMU error, a machine check, the OOM killer (kernel-log-rules.yaml). Each event names "
            "the GPU's PCI address, the process and its job: the Slurm job and step, the Kubernetes pod and "
            "container, or the systemd unit its cgroup says, and SLURM_PROCID/RANK and LOCAL_RANK from its "
            "environment (readable as root). Events are appended to --events-file, one JSON object per line, "
            "and counted in gputriage_gpu_errors_total{error_type,gpu,UUID,pci_bus_id,job,pod,namespace} on "
            "http://LISTEN/metrics (Prometheus text format 0.0.4). Not yet in this build: per-GPU telemetry "
            "metrics, crash collection for jobs not started under `run`, OpenTelemetry export. Under systemd "
            "(Type=notify) it reports READY=1 and, with WatchdogSec=, WATCHDOG=1. SIGHUP reopens the events "
            "file (after logrotate moved it).");
        app.add_option("--listen", flags->listen, "ADDR:PORT of /metrics (default 127.0.0.1:9402: this host only)")
            ->type_name("ADDR:PORT");
        app.add_option("--events-file", flags->events_file, "Append events here, one JSON object per line")
            ->type_name("PATH");
        app.add_option("--interval", flags->interval,
                       "Seconds (default 1): the longest the loop sleeps when no record arrives (records wake it "
                       "at once); GPU telemetry sampling, when it comes, uses it too")
            ->type_name("SECONDS");
        app.add_option("--kmsg", flags->kmsg, "The kernel log to follow (default /dev/kmsg)")->type_name("PATH");
        return [flags]() { return RunAgentCommand(*flags); };
      }};
}

Command EventsCommand() {
  return Command{
      "events", "Reads the agent's events file: GPU errors with their GPU, process and job.",
      [](CLI::App& app) -> std::function<int()> {
        auto flags = std::make_shared<EventsFlags>();
        app.add_option("--events-file", flags->events_file, "The agent's events file")->type_name("PATH")->required();
        app.add_option("--since", flags->since, "Only events at or after this UTC time (RFC 3339)")->type_name("TIME");
        app.add_option("--job", flags->job, "Only events of this job (Slurm job id or pod UID)")->type_name("ID");
        app.add_flag("--json", flags->json, "Print {events: [...], damaged_lines}");
        return [flags]() { return RunEvents(*flags); };
      }};
}

}  // namespace gputriage::cli
