// The device checks: atomics under contention, launch limits, memory patterns, bandwidth (and its
// level-3 sustained form) and pinned host copies.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>

#include "validate/checks.h"

namespace gputriage::validate {

namespace {

constexpr unsigned kAtomicBlocks = 256, kAtomicThreads = 256;

long long Key(unsigned t, unsigned n) { return static_cast<long long>((t * 2654435761ull) % n) - n / 2; }

template <typename T>
std::vector<unsigned char> Bytes(const std::vector<T>& values) {
  std::vector<unsigned char> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> Values(const std::vector<unsigned char>& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

// What the atomics kernel must leave, and the check of the exchange chain: the old values each
// thread got plus the final value are exactly {0, 1, ..., n} (every exchange saw the previous one).
template <typename T>
std::vector<std::string> CheckAtomicResults(const std::vector<T>& slots, const std::vector<T>& olds, unsigned n,
                                            double key_scale) {
  std::vector<std::string> wrong;
  long double sum = 0, min_key = INFINITY, max_key = -INFINITY;
  for (unsigned t = 0; t < n; ++t) {
    sum += (t % 7) + 1;
    long double key = static_cast<long double>(Key(t, n)) * key_scale;
    min_key = std::min(min_key, key);
    max_key = std::max(max_key, key);
  }
  auto expect = [&](int slot, const char* op, long double value) {
    if (static_cast<long double>(slots[slot]) != value) {
      wrong.push_back(
          fmt::format("{}: got {}, expected {}", op, static_cast<double>(slots[slot]), static_cast<double>(value)));
    }
  };
  expect(0, "add", sum);
  expect(1, "sub", -sum);
  expect(2, "min", min_key);
  expect(3, "max", max_key);
  expect(5, "compare-and-swap counter", n);
  std::vector<long long> chain;
  chain.reserve(n + 1);
  for (T v : olds) chain.push_back(static_cast<long long>(v));
  chain.push_back(static_cast<long long>(slots[4]));
  std::sort(chain.begin(), chain.end());
  for (size_t i = 0; i < chain.size(); ++i) {
    if (chain[i] != static_cast<long long>(i)) {
      wrong.push_back(fmt::format("exchange: the values handed back are not a chain of 0..{} (value {} at rank {})", n,
                                  chain[i], i));
      break;
    }
  }
  return wrong;
}

template <typename T>
core::Result<std::vector<std::string>> RunAtomics(CheckContext& ctx, const std::string& kernel, T min_init, T max_init,
                                                  double key_scale, bool inject) {
  unsigned n = kAtomicBlocks * kAtomicThreads;
  std::vector<T> init = {T(0), T(0), min_init, max_init, T(0), T(0)};
  GT_ASSIGN_OR_RETURN(DeviceBuffer slots, Upload(ctx.device, Bytes(init)));
  GT_ASSIGN_OR_RETURN(DeviceBuffer olds, AllocBuffer(ctx.device, n * sizeof(T)));
  DevicePtr sp = slots.get(), op = olds.get();
  GT_RETURN_IF_ERROR(ctx.device.Launch(kernel, {kAtomicBlocks}, {kAtomicThreads}, 0, {&sp, &op, &n}));
  GT_ASSIGN_OR_RETURN(std::vector<unsigned char> slot_bytes, Download(ctx.device, slots));
  GT_ASSIGN_OR_RETURN(std::vector<unsigned char> old_bytes, Download(ctx.device, olds));
  std::vector<T> slot_values = Values<T>(slot_bytes);
  if (inject) slot_values[0] += T(1);
  return CheckAtomicResults(slot_values, Values<T>(old_bytes), n, key_scale);
}

}  // namespace

core::ValidationCheck CheckAtomics(CheckContext& ctx, const std::string& dtype) {
  core::ValidationCheck check = NewCheck(ctx, "atomics", dtype);
  bool inject = ctx.InjectFault("atomics", dtype);
  std::map<std::string, std::string> failures;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < ctx.repeat(); ++r) {
    core::Result<std::vector<std::string>> wrong = core::Error{"unknown dtype"};
    if (dtype == "int32") {
      wrong = RunAtomics<int>(ctx, "gt_atomics_i32", INT_MAX, INT_MIN, 1.0, inject);
    } else if (dtype == "int64") {
      wrong = RunAtomics<long long>(ctx, "gt_atomics_i64", LLONG_MAX, LLONG_MIN, 4294967296.0, inject);
    } else if (dtype == "fp32") {
      wrong = RunAtomics<float>(ctx, "gt_atomics_f32", 1e30f, -1e30f, 0.5, inject);
    } else {
      wrong = RunAtomics<double>(ctx, "gt_atomics_f64", 1e300, -1e300, 0.25, inject);
    }
    if (!wrong.ok()) return SetError(check, wrong.error());
    for (const std::string& w : *wrong) failures.emplace(w, fmt::format("run {}", r + 1));
  }
  check.runs = ctx.repeat();
  check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string ops = "add, sub, min, max, exchange, compare-and-swap";
  std::string how = dtype == "int32" ? "native atomics"
                    : dtype == "int64"
                        ? "64-bit add (sub as add of the negation), exchange and CAS native; min/max as CAS loops"
                        : "add, sub and exchange native; min, max as CAS loops on the bits";
  if (failures.empty()) {
    check.status = core::CheckStatus::kPass;
    check.detail = fmt::format("{} by {} threads on one word each, exact results in {} runs ({})", ops,
                               kAtomicBlocks * kAtomicThreads, ctx.repeat(), how);
  } else {
    check.status = core::CheckStatus::kFail;
    std::vector<std::string> lines;
    for (const auto& [what, run] : failures) lines.push_back(fmt::format("{} ({})", what, run));
    check.detail = fmt::format("wrong results under contention: {}; {} threads ({})", fmt::join(lines, "; "),
                               kAtomicBlocks * kAtomicThreads, how);
  }
  if (inject) check.detail += " (a fault was injected on purpose by --inject-fault)";
  return check;
}

core::ValidationCheck CheckLaunchLimits(CheckContext& ctx) {
  core::ValidationCheck check = NewCheck(ctx, "launch_limits", "");
  const core::ValidationDevice& info = ctx.device.info();
  bool inject = ctx.InjectFault("launch_limits", "");
  std::vector<std::string> failures, seen;
  auto attributes = ctx.device.Attributes("gt_fill_index");
  if (!attributes.ok()) return SetError(check, attributes.error());
  int max_threads = std::min(info.max_threads_per_block.value_or(1024), attributes->max_threads_per_block);
  seen.push_back(fmt::format("max threads per block {} (device {}, kernel {}), {} per warp/wavefront", max_threads,
                             info.max_threads_per_block.value_or(0), attributes->max_threads_per_block,
                             info.warp_size.value_or(0)));
  // At the limit: every thread of 4 full blocks writes its index.
  const unsigned blocks = 4;
  auto out = AllocBuffer(ctx.device, static_cast<size_t>(blocks) * (max_threads + 1) * 4);
  if (!out.ok()) return SetError(check, out.error());
  DevicePtr op = out->get();
  if (auto m = ctx.device.Memset(op, 0, out->bytes()); !m.ok()) return SetError(check, m.error());
  if (auto r = ctx.device.Launch("gt_fill_index", {blocks}, {static_cast<unsigned>(max_threads)}, 0, {&op}); !r.ok()) {
    failures.push_back(
        fmt::format("a launch of {} threads per block (the limit) failed: {}", max_threads, r.error().message));
  } else {
    auto bytes = Download(ctx.device, *out);
    if (!bytes.ok()) return SetError(check, bytes.error());
    std::vector<unsigned> values = Values<unsigned>(*bytes);
    if (inject) values[1] = 0;
    size_t bad = 0;
    for (unsigned i = 0; i < blocks * static_cast<unsigned>(max_threads); ++i) bad += values[i] != i + 1;
    if (bad > 0) {
      failures.push_back(fmt::format("at {} threads per block, {} of {} threads did not write their element",
                                     max_threads, bad, blocks * max_threads));
    }
  }
  // Just past it: the runtime must refuse the launch, and the context must stay usable.
  DeviceError past = ctx.device.LaunchStatus("gt_fill_index", {1}, {static_cast<unsigned>(max_threads + 1)}, 0, {&op});
  if (past.code == 0) {
    failures.push_back(fmt::format("a launch of {} threads per block (past the limit) was accepted", max_threads + 1));
    (void)ctx.device.Synchronize();
  } else {
    seen.push_back(fmt::format("{} threads rejected with {}", max_threads + 1, past.name));
  }
  // Shared memory (LDS): the largest dynamic allocation a block may have, then one word more.
  int shared_limit = info.max_shared_per_block_optin_bytes.value_or(info.max_shared_per_block_bytes.value_or(0));
  if (shared_limit > 0) {
    auto counter = AllocBuffer(ctx.device, 4);
    if (!counter.ok()) return SetError(check, counter.error());
    DevicePtr cp = counter->get();
    int dynamic = shared_limit - attributes->static_shared_bytes;
    if (auto a = ctx.device.AllowSharedMemory("gt_touch_shared", dynamic); !a.ok()) {
      failures.push_back(fmt::format("opting in to {} bytes of shared memory failed: {}", dynamic, a.error().message));
    } else {
      unsigned bytes = static_cast<unsigned>(dynamic);
      (void)ctx.device.Memset(cp, 0, 4);
      if (auto r = ctx.device.Launch("gt_touch_shared", {1}, {256}, bytes, {&cp, &bytes}); !r.ok()) {
        failures.push_back(fmt::format("a block with {} bytes of dynamic shared memory (the limit) failed: {}", dynamic,
                                       r.error().message));
      } else {
        auto mismatches = Download(ctx.device, *counter);
        if (!mismatches.ok()) return SetError(check, mismatches.error());
        unsigned bad = Values<unsigned>(*mismatches)[0];
        if (bad != 0) failures.push_back(fmt::format("{} shared-memory words read back wrong", bad));
        seen.push_back(fmt::format("{} bytes of shared memory per block written and read back", shared_limit));
      }
      unsigned over = bytes + 4;
      DeviceError too_much = ctx.device.LaunchStatus("gt_touch_shared", {1}, {256}, over, {&cp, &over});
      if (too_much.code == 0) {
        failures.push_back(fmt::format("a block with {} bytes of shared memory (past the limit) was accepted", over));
        (void)ctx.device.Synchronize();
      } else {
        seen.push_back(fmt::format("{} bytes rejected with {}", over, too_much.name));
      }
    }
  }
  // After the refused launches, the device must still run work.
  if (auto r = ctx.device.Launch("gt_fill_index", {1}, {32}, 0, {&op}); !r.ok()) {
    failures.push_back("the device did not run work after a refused launch: " + r.error().message);
  } else if (auto s = ctx.device.Synchronize(); !s.ok()) {
    failures.push_back("the device did not run work after a refused launch: " + s.error().message);
  }
  seen.push_back(fmt::format("kernel registers per thread {}", attributes->registers_per_thread));
  check.status = failures.empty() ? core::CheckStatus::kPass : core::CheckStatus::kFail;
  check.detail = failures.empty() ? fmt::format("{}", fmt::join(seen, "; "))
                                  : fmt::format("{}; {}", fmt::join(failures, "; "), fmt::join(seen, "; "));
  if (inject) check.detail += " (a fault was injected on purpose by --inject-fault)";
  return check;
}

core::ValidationCheck CheckMemoryPattern(CheckContext& ctx) {
  core::ValidationCheck check = NewCheck(ctx, "memory_pattern", "");
  auto memory = ctx.device.Memory();
  if (!memory.ok()) return SetError(check, memory.error());
  double fraction = ctx.options.memory_fraction > 0 ? ctx.options.memory_fraction : ctx.level() >= 2 ? 0.8 : 0.0;
  uint64_t bytes = fraction > 0 ? static_cast<uint64_t>(memory->free_bytes * std::min(fraction, 0.95))
                                : std::min<uint64_t>(1ull << 30, memory->free_bytes / 2);
  bytes &= ~uint64_t{(1u << 20) - 1};  // whole MiB
  auto buffer = AllocBuffer(ctx.device, bytes);
  if (!buffer.ok()) {
    return SetError(check, core::MakeError("allocating {:.2f} GiB of the {:.2f} GiB free: {}", bytes / 1073741824.0,
                                           memory->free_bytes / 1073741824.0, buffer.error().message));
  }
  auto counters = AllocBuffer(ctx.device, 8 + 16 * 8 * 2);
  if (!counters.ok()) return SetError(check, counters.error());
  bool inject = ctx.InjectFault("memory_pattern", "");
  uint64_t words = bytes / 8;
  std::vector<std::pair<int, uint64_t>> passes = {{1, 0}, {2, 0x5eed}};  // address in address, random
  if (ctx.level() >= 2) {
    for (uint64_t shift = 0; shift < 4; ++shift) passes.emplace_back(0, shift * 17);  // walking ones
    passes.emplace_back(3, 0x5eed);                                                   // complement of random
  }
  const char* names[] = {"walking ones", "address in address", "random", "inverted random"};
  unsigned blocks = GridBlocks(ctx.device);
  DevicePtr base = buffer->get(), counter = counters->get(), bad = counter + 8, bad_values = counter + 8 + 16 * 8;
  int max_bad = 16;
  std::vector<std::string> failures;
  auto start = std::chrono::steady_clock::now();
  double written_gb = 0;
  for (auto [mode, seed] : passes) {
    if (auto m = ctx.device.Memset(counter, 0, counters->bytes()); !m.ok()) return SetError(check, m.error());
    if (auto r = ctx.device.Launch("gt_pattern_write", {blocks}, {256}, 0, {&base, &words, &mode, &seed}); !r.ok()) {
      return SetError(check, r.error());
    }
    if (inject) {
      uint64_t garbage = 0xdeadbeefdeadbeefull;
      std::vector<unsigned char> one(8);
      std::memcpy(one.data(), &garbage, 8);
      if (auto c = ctx.device.CopyToDevice(base + (words / 2) * 8, one.data(), 8); !c.ok())
        return SetError(check, c.error());
    }
    if (auto r = ctx.device.Launch("gt_pattern_check", {blocks}, {256}, 0,
                                   {&base, &words, &mode, &seed, &counter, &bad, &bad_values, &max_bad});
        !r.ok()) {
      return SetError(check, r.error());
    }
    auto result = Download(ctx.device, *counters);
    if (!result.ok()) return SetError(check, result.error());
    std::vector<uint64_t> values = Values<uint64_t>(*result);
    written_gb += 2.0 * bytes / 1e9;
    if (values[0] != 0) {
      std::vector<std::string> addresses;
      for (uint64_t i = 0; i < std::min<uint64_t>(values[0], max_bad); ++i) {
        addresses.push_back(fmt::format("{:#x} (offset {:#x}, read {:#018x})", base + values[1 + i] * 8,
                                        values[1 + i] * 8, values[1 + 16 + i]));
      }
      failures.push_back(fmt::format("{}: {} word(s) read back wrong, first at {}", names[mode], values[0],
                                     fmt::join(addresses, ", ")));
    }
  }
  check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<std::string> pass_names;
  for (auto [mode, seed] : passes) pass_names.emplace_back(names[mode]);
  std::string what = fmt::format("{:.2f} GiB ({:.0f}% of {:.2f} GiB free) with {} pass(es): {}", bytes / 1073741824.0,
                                 100.0 * bytes / memory->free_bytes, memory->free_bytes / 1073741824.0, passes.size(),
                                 fmt::join(pass_names, ", "));
  check.status = failures.empty() ? core::CheckStatus::kPass : core::CheckStatus::kFail;
  check.detail = failures.empty() ? what : fmt::format("bad memory: {}; {}", fmt::join(failures, "; "), what);
  if (inject) check.detail += " (a fault was injected on purpose by --inject-fault)";
  check.throughput = written_gb / *check.seconds;
  check.throughput_unit = "GB/s";
  return check;
}

core::ValidationCheck CheckBandwidth(CheckContext& ctx, bool stress) {
  core::ValidationCheck check = NewCheck(ctx, stress ? "stress_bandwidth" : "bandwidth", "");
  auto memory = ctx.device.Memory();
  if (!memory.ok()) return SetError(check, memory.error());
  uint64_t bytes = ctx.level() >= 2 || stress ? (4ull << 30) : (1ull << 30);
  bytes = std::min<uint64_t>(bytes, memory->free_bytes / 4) & ~uint64_t{(1u << 20) - 1};
  auto src = AllocBuffer(ctx.device, bytes);
  if (!src.ok()) return SetError(check, src.error());
  auto dst = AllocBuffer(ctx.device, bytes);
  if (!dst.ok()) return SetError(check, dst.error());
  auto counters = AllocBuffer(ctx.device, 8 + 16 * 8 * 2);
  if (!counters.ok()) return SetError(check, counters.error());
  bool inject = ctx.InjectFault(check.name, "");
  unsigned blocks = GridBlocks(ctx.device);
  DevicePtr s = src->get(), d = dst->get(), counter = counters->get(), bad = counter + 8, bad_values = counter + 136;
  uint64_t words = bytes / 8, vectors = bytes / 16, seed = 0xb4d;
  int mode = 2, max_bad = 16;
  if (auto r = ctx.device.Launch("gt_pattern_write", {blocks}, {256}, 0, {&s, &words, &mode, &seed}); !r.ok()) {
    return SetError(check, r.error());
  }
  if (auto m = ctx.device.Memset(d, 0, bytes); !m.ok()) return SetError(check, m.error());
  auto copy = [&]() { return ctx.device.Launch("gt_copy_u4", {blocks}, {256}, 0, {&s, &d, &vectors}); };
  // Warm-up, a quarter second of copies: an idle GPU's clocks take that long to come up.
  auto warm_up = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_up).count() < 0.25) {
    if (auto r = copy(); !r.ok()) return SetError(check, r.error());
    if (auto r = ctx.device.Synchronize(); !r.ok()) return SetError(check, r.error());
  }
  std::vector<double> gbs;
  std::optional<TelemetrySampler> sampler;
  double seconds = stress ? (ctx.options.stress_seconds > 0 ? ctx.options.stress_seconds : 30) : 0;
  auto start = std::chrono::steady_clock::now();
  if (stress) sampler.emplace(ctx.device.info(), "bandwidth", ctx.telemetry);
  for (int r = 0; stress ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds
                         : r < std::max(ctx.repeat(), 5);
       ++r) {
    auto ms = ctx.device.TimeMs([&]() -> core::Result<void> {
      for (int i = 0; i < 5; ++i) GT_RETURN_IF_ERROR(copy());
      return {};
    });
    if (!ms.ok()) return SetError(check, ms.error());
    gbs.push_back(5 * 2.0 * bytes / (*ms * 1e-3) / 1e9);
  }
  if (sampler) sampler->Stop();
  if (inject) {
    uint64_t garbage = 0;
    if (auto c = ctx.device.CopyToDevice(d + 8 * (words / 3), &garbage, 8); !c.ok()) return SetError(check, c.error());
  }
  if (auto m = ctx.device.Memset(counter, 0, counters->bytes()); !m.ok()) return SetError(check, m.error());
  if (auto r = ctx.device.Launch("gt_pattern_check", {blocks}, {256}, 0,
                                 {&d, &words, &mode, &seed, &counter, &bad, &bad_values, &max_bad});
      !r.ok()) {
    return SetError(check, r.error());
  }
  auto result = Download(ctx.device, *counters);
  if (!result.ok()) return SetError(check, result.error());
  uint64_t wrong = Values<uint64_t>(*result)[0];
  check.throughput = Median(gbs);
  check.best_throughput = *std::max_element(gbs.begin(), gbs.end());
  check.throughput_unit = "GB/s";
  check.median_ms = 2.0 * bytes / (*check.throughput * 1e9) * 1e3;
  check.runs = static_cast<int>(gbs.size() * 5);
  check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string what = fmt::format(
      "device-to-device copy of {:.2f} GiB with gputriage's 16-byte copy kernel, {} copies, "
      "bytes read + written per second; the copy verified word by word",
      bytes / 1073741824.0, gbs.size() * 5);
  if (stress) {
    size_t fifth = std::max<size_t>(1, gbs.size() / 5);
    double early = Median(std::vector<double>(gbs.begin(), gbs.begin() + static_cast<long>(fifth)));
    double late = Median(std::vector<double>(gbs.end() - static_cast<long>(fifth), gbs.end()));
    what += fmt::format("; sustained {:.0f} s: first fifth {:.0f} GB/s, last fifth {:.0f} GB/s ({:+.1f}%){}", seconds,
                        early, late, (late / early - 1) * 100,
                        sampler && !sampler->unavailable().empty() ? "; telemetry: " + sampler->unavailable() : "");
  }
  check.status = wrong == 0 ? core::CheckStatus::kPass : core::CheckStatus::kFail;
  check.detail = wrong == 0 ? what : fmt::format("{} word(s) of the copy differ from the source; {}", wrong, what);
  if (inject) check.detail += " (a fault was injected on purpose by --inject-fault)";
  SetPeakFraction(ctx, check, "bandwidth");
  return check;
}

core::ValidationCheck CheckPinnedCopy(CheckContext& ctx) {
  core::ValidationCheck check = NewCheck(ctx, "pinned_copy", "");
  const size_t bytes = ctx.level() >= 2 ? (1ull << 30) : (256ull << 20);
  auto host_in = ctx.device.AllocPinned(bytes);
  if (!host_in.ok()) return SetError(check, host_in.error());
  auto host_out = ctx.device.AllocPinned(bytes);
  if (!host_out.ok()) {
    ctx.device.FreePinned(*host_in);
    return SetError(check, host_out.error());
  }
  struct Pinned {
    Device& device;
    void* a;
    void* b;
    ~Pinned() {
      device.FreePinned(a);
      device.FreePinned(b);
    }
  } pinned{ctx.device, *host_in, *host_out};
  auto* in = static_cast<uint64_t*>(pinned.a);
  auto* out = static_cast<uint64_t*>(pinned.b);
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < bytes / 8; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    in[i] = state;
  }
  std::memset(out, 0, bytes);
  auto buffer = AllocBuffer(ctx.device, bytes);
  if (!buffer.ok()) return SetError(check, buffer.error());
  std::vector<double> up, down;
  for (int r = 0; r < std::max(ctx.repeat(), 3); ++r) {
    auto h2d = ctx.device.TimeMs([&]() { return ctx.device.CopyToDeviceAsync(buffer->get(), in, bytes); });
    if (!h2d.ok()) return SetError(check, h2d.error());
    auto d2h = ctx.device.TimeMs([&]() { return ctx.device.CopyToHostAsync(out, buffer->get(), bytes); });
    if (!d2h.ok()) return SetError(check, d2h.error());
    up.push_back(bytes / (*h2d * 1e-3) / 1e9);
    down.push_back(bytes / (*d2h * 1e-3) / 1e9);
  }
  if (ctx.InjectFault("pinned_copy", "")) out[bytes / 16] ^= 1;
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < bytes / 8; ++i) {
    if (in[i] != out[i] && wrong++ == 0) first = i;
  }
  double up_gbs = Median(up), down_gbs = Median(down);
  check.throughput = std::min(up_gbs, down_gbs);
  check.throughput_unit = "GB/s";
  check.median_ms = bytes / (check.throughput.value() * 1e9) * 1e3;
  check.runs = static_cast<int>(up.size());
  std::string what = fmt::format(
      "{} MiB through pinned host memory, asynchronous on a stream: host to device {:.1f} "
      "GB/s, device to host {:.1f} GB/s (throughput: the slower); round trip compared word "
      "by word",
      bytes >> 20, up_gbs, down_gbs);
  check.status = wrong == 0 ? core::CheckStatus::kPass : core::CheckStatus::kFail;
  check.detail = wrong == 0 ? what
                            : fmt::format("{} word(s) differ after the round trip, first at byte offset {:#x}; {}",
                                          wrong, first * 8, what);
  if (ctx.InjectFault("pinned_copy", "")) check.detail += " (a fault was injected on purpose by --inject-fault)";
  return check;
}

core::ValidationCheck CheckPeerCopy(CheckContext& ctx) {
  core::ValidationCheck check = NewCheck(ctx, "peer_copy", "");
  if (ctx.peers.empty()) {
    check.status = core::CheckStatus::kSkip;
    check.detail =
        fmt::format("peer copies need two or more GPUs of one runtime; this machine has {}", ctx.devices_found);
    return check;
  }
  const size_t bytes = 256ull << 20;
  uint64_t words = bytes / 8, seed = 0x9ee7;
  int mode = 2, max_bad = 16;
  bool inject = ctx.InjectFault("peer_copy", "");
  std::vector<std::string> lines, failures;
  double slowest = 0;
  auto dst = AllocBuffer(ctx.device, bytes);
  if (!dst.ok()) return SetError(check, dst.error());
  auto counters = AllocBuffer(ctx.device, 8 + 16 * 8 * 2);
  if (!counters.ok()) return SetError(check, counters.error());
  for (auto [peer, from] : ctx.peers) {
    auto direct = ctx.device.CanAccessPeer(*peer);
    if (!direct.ok()) return SetError(check, direct.error());
    auto src = AllocBuffer(*peer, bytes);
    if (!src.ok()) return SetError(check, src.error());
    DevicePtr sp = src->get();
    unsigned peer_blocks = GridBlocks(*peer);
    if (auto r = peer->Launch("gt_pattern_write", {peer_blocks}, {256}, 0, {&sp, &words, &mode, &seed}); !r.ok()) {
      return SetError(check, r.error());
    }
    if (auto r = peer->Synchronize(); !r.ok()) return SetError(check, r.error());
    auto copy = [&]() { return ctx.device.CopyFromPeer(dst->get(), *peer, sp, bytes); };
    if (auto r = copy(); !r.ok()) return SetError(check, r.error());  // warm-up, enables peer access
    std::vector<double> gbs;
    for (int r = 0; r < std::max(ctx.repeat(), 3); ++r) {
      auto ms = ctx.device.TimeMs(copy);
      if (!ms.ok()) return SetError(check, ms.error());
      gbs.push_back(bytes / (*ms * 1e-3) / 1e9);
    }
    DevicePtr dp = dst->get(), counter = counters->get(), bad = counter + 8, bad_values = counter + 136;
    if (inject) {
      uint64_t garbage = 0;
      if (auto c = ctx.device.CopyToDevice(dp + 8 * (words / 2), &garbage, 8); !c.ok())
        return SetError(check, c.error());
    }
    if (auto m = ctx.device.Memset(counter, 0, counters->bytes()); !m.ok()) return SetError(check, m.error());
    unsigned blocks = GridBlocks(ctx.device);
    if (auto r = ctx.device.Launch("gt_pattern_check", {blocks}, {256}, 0,
                                   {&dp, &words, &mode, &seed, &counter, &bad, &bad_values, &max_bad});
        !r.ok()) {
      return SetError(check, r.error());
    }
    auto result = Download(ctx.device, *counters);
    if (!result.ok()) return SetError(check, result.error());
    uint64_t wrong = Values<uint64_t>(*result)[0];
    double median = Median(gbs);
    slowest = slowest == 0 ? median : std::min(slowest, median);
    lines.push_back(fmt::format("from GPU {}: {:.1f} GB/s ({})", from, median,
                                *direct ? "direct peer access" : "no direct peer access: the runtime stages the copy"));
    if (wrong != 0) failures.push_back(fmt::format("from GPU {}: {} word(s) differ from the source", from, wrong));
  }
  check.throughput = slowest;
  check.throughput_unit = "GB/s";
  check.runs = std::max(ctx.repeat(), 3);
  std::string what = fmt::format("{} MiB copied into this GPU {}; each copy verified word by word", bytes >> 20,
                                 fmt::join(lines, ", "));
  check.status = failures.empty() ? core::CheckStatus::kPass : core::CheckStatus::kFail;
  check.detail = failures.empty() ? what : fmt::format("{}; {}", fmt::join(failures, "; "), what);
  if (inject) check.detail += " (a fault was injected on purpose by --inject-fault)";
  return check;
}

}  // namespace gputriage::validate
