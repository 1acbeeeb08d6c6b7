// `gputriage agent`: the node daemon. It follows the kernel log live (/dev/kmsg, positioned at
// its end when it starts), turns every GPU record into a typed event (kernel_events.h) appended
// as one JSON line to the events file, counts them in gputriage_gpu_errors_total, and serves
// the counters on http://LISTEN/metrics (Prometheus text exposition 0.0.4). Under systemd
// (Type=notify) it says READY=1 once it listens and WATCHDOG=1 every loop.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "agent/kernel_events.h"
#include "agent/metrics.h"
#include "core/result.h"

namespace gputriage::agent {

struct AgentOptions {
  std::string listen = "127.0.0.1:9402";  ///< ADDR:PORT of /metrics
  std::string events_file;                ///< appended to, one event per line; "" for none
  /// The sampling interval. This build samples no GPU telemetry yet (its metrics are the event
  /// counters); the interval bounds how long the loop sleeps (at most 1 s) when no record
  /// arrives, between checks of `stop` and systemd's watchdog. A record wakes it at once.
  double interval_s = 1.0;
  std::string kmsg_path = "/dev/kmsg";
  EventContext context;
  const std::atomic<bool>* stop = nullptr;  ///< set (by a signal handler) to end the loop
  /// Set (by SIGHUP's handler) to reopen the events file by its name: after logrotate moved it,
  /// events go to the new file. The agent clears it.
  std::atomic<bool>* reopen = nullptr;
  std::function<void(const std::string&)> log;  ///< one line of what the agent does
};

/// Runs until `*options.stop`. Fails at start when the kernel log cannot be opened, the events
/// file cannot be opened for appending, or the address cannot be listened on; each names the
/// path or address.
core::Result<void> RunAgent(const AgentOptions& options);
/// The same, with the metrics the caller holds (tests read them).
core::Result<void> RunAgent(const AgentOptions& options, Metrics& metrics);

/// "127.0.0.1:9402" -> host and port; fails naming the text.
core::Result<std::pair<std::string, int>> ParseListenAddress(const std::string& text);

}  // namespace gputriage::agent
