// Calls that must not hold up the caller past a deadline: a collector blocked on a FIFO, a hung
// network mount or a wedged driver attribute is abandoned, and the caller goes on without it.
#pragma once

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "core/result.h"

namespace gputriage::core {

/// Runs `fn` on a thread of its own and waits at most `limit` for its result. When the call is
/// still running then, its thread is detached and left to finish (or stay blocked) on its own,
/// and the answer is an error saying how long was waited. `fn` must own everything it uses
/// (capture by value): after an abandoned call the caller's locals are gone. An exception
/// thrown by `fn` becomes an error with its message.
template <typename Fn>
auto CallWithDeadline(std::chrono::milliseconds limit, Fn fn) -> Result<decltype(fn())> {
  using T = decltype(fn());
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> future = promise->get_future();
  std::thread([promise, fn = std::move(fn)]() mutable {
    try {
      promise->set_value(fn());
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  }).detach();
  if (future.wait_for(limit) != std::future_status::ready) {
    return MakeError("abandoned after {:g} s without an answer", std::chrono::duration<double>(limit).count());
  }
  try {
    return future.get();
  } catch (const std::exception& e) {
    return MakeError("failed: {}", e.what());
  }
}

}  // namespace gputriage::core
