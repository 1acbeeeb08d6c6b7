#include "agent/agent.h"

#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "core/scoped_fd.h"
#include "forensics/kmsg_watch.h"

namespace gputriage::agent {
namespace {

constexpr const char* kErrorsTotal = "gputriage_gpu_errors_total";
constexpr const char* kRecordsLost = "gputriage_kernel_log_records_lost_total";
constexpr const char* kEventsWritten = "gputriage_agent_events_written_total";
constexpr const char* kEventWriteFailures = "gputriage_agent_event_write_failures_total";

double NowEpoch() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

void DeclareFamilies(Metrics& metrics) {
  metrics.Declare(kErrorsTotal, "counter",
                  "GPU errors seen in the kernel log, one per event (Xid, amdgpu VM fault, reset, RAS, AER, OOM kill)");
  metrics.Declare(kRecordsLost, "counter",
                  "Kernel-log records overwritten before the agent read them (/dev/kmsg EPIPE)");
  metrics.Declare(kEventsWritten, "counter", "Events appended to the events file");
  metrics.Declare(kEventWriteFailures, "counter", "Events that could not be appended to the events file");
  // Counters without labels start at 0, so that a scrape shows them before anything happened.
  for (const char* name : {kRecordsLost, kEventsWritten, kEventWriteFailures}) metrics.Add(name, {}, 0);
}

Labels ErrorLabels(const core::GpuEvent& e) {
  return {{"error_type", e.error_type},
          {"gpu", e.gpu ? std::to_string(*e.gpu) : ""},
          {"UUID", e.gpu_uuid.value_or("")},
          {"pci_bus_id", e.pci_bus_id.value_or("")},
          {"job", e.job.value_or("")},
          {"pod", e.pod.value_or("")},
          {"namespace", ""}};
}

}  // namespace

core::Result<std::pair<std::string, int>> ParseListenAddress(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "--listen '{}': not ADDR:PORT (e.g. 127.0.0.1:9402)",
                               text);
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = 0;
  for (char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "--listen '{}': the port is not a number", text);
    }
    port = port * 10 + (c - '0');
  }
  if (port < 0 || port > 65535 || colon + 1 == text.size()) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                               "--listen '{}': the port must be 0-65535 (0: any free port)", text);
  }
  return std::pair{host, port};
}

core::Result<void> RunAgent(const AgentOptions& options, Metrics& metrics) {
  auto say = [&](const std::string& line) {
    if (options.log) options.log(line);
  };
  DeclareFamilies(metrics);
  GT_ASSIGN_OR_RETURN(auto address, ParseListenAddress(options.listen));
  forensics::KmsgWatch kmsg;
  if (auto opened = kmsg.Open(options.kmsg_path); !opened.ok()) {
    return core::MakeError("kernel log {}: {}", options.kmsg_path, opened.error().message);
  }
  auto open_events = [&options]() {
    return core::ScopedFd(
        ::open(options.events_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0640));
  };
  core::ScopedFd events;
  if (!options.events_file.empty()) {
    events = open_events();
    if (!events.valid())
      return core::ErrnoError(errno, "events file {}: cannot open for appending", options.events_file);
  }
  httplib::Server server;
  server.Get("/metrics", [&metrics](const httplib::Request&, httplib::Response& response) {
    response.set_content(metrics.Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  // Port 0: any free port, said in the first line (tests, several agents on one host).
  int port = address.second == 0 ? server.bind_to_any_port(address.first)
                                 : (server.bind_to_port(address.first, address.second) ? address.second : -1);
  if (port <= 0) {
    return core::MakeErrorCode(core::ErrorCode::kIo,
                               "--listen {}: cannot listen there (in use, or not an address of this host)",
                               options.listen);
  }
  std::thread http([&server] { server.listen_after_bind(); });
  std::string host = address.first.find(':') != std::string::npos ? "[" + address.first + "]" : address.first;
  say(fmt::format("gputriage agent: serving http://{}:{}/metrics; following {}{}", host, port, options.kmsg_path,
                  options.events_file.empty() ? "" : "; events to " + options.events_file));
  sd_notify(0, "READY=1");
  uint64_t watchdog_us = 0;
  bool watchdog = sd_watchdog_enabled(0, &watchdog_us) > 0;
  size_t lost_seen = 0;
  const int wait_ms = static_cast<int>(std::clamp(options.interval_s * 1000.0, 10.0, 1000.0));
  while (options.stop == nullptr || !options.stop->load()) {
    struct pollfd pfd {
      kmsg.fd(), POLLIN, 0
    };
    int ready = ::poll(&pfd, 1, wait_ms);
    if (ready < 0 && errno != EINTR) break;
    kmsg.Drain();
    if (kmsg.lost() > lost_seen) {
      metrics.Add(kRecordsLost, {}, static_cast<double>(kmsg.lost() - lost_seen));
      lost_seen = kmsg.lost();
    }
    if (options.reopen != nullptr && options.reopen->exchange(false) && !options.events_file.empty()) {
      // The old file stays whole; a file that cannot be opened now keeps the old descriptor.
      if (core::ScopedFd reopened = open_events(); reopened.valid()) {
        events = std::move(reopened);
        say(fmt::format("gputriage agent: events file {} reopened", options.events_file));
      } else {
        say(fmt::format("gputriage agent: events file {}: cannot reopen ({}); still writing the old one",
                        options.events_file, std::strerror(errno)));
      }
    }
    double now = NowEpoch();
    for (const kmsg::Record& record : kmsg.TakeRecords()) {
      std::optional<core::GpuEvent> event = EventFromRecord(record, options.context, now);
      if (!event) continue;
      metrics.Add(kErrorsTotal, ErrorLabels(*event), 1);
      if (!events.valid()) continue;
      std::string line = core::ToJson(*event).dump() + "\n";
      if (::write(events.get(), line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
        metrics.Add(kEventsWritten, {}, 1);
      } else {
        metrics.Add(kEventWriteFailures, {}, 1);
      }
    }
    if (watchdog) sd_notify(0, "WATCHDOG=1");
  }
  sd_notify(0, "STOPPING=1");
  server.stop();
  http.join();
  return {};
}

core::Result<void> RunAgent(const AgentOptions& options) {
  Metrics metrics;
  return RunAgent(options, metrics);
}

}  // namespace gputriage::agent
