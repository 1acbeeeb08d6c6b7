#include "forensics/torch_snapshot.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/json_parse.h"
#include "core/subprocess.h"
#include "forensics/gpu_record.h"

namespace gputriage::forensics {
namespace {

// Reads the pickle and prints the segments as JSON: addresses as hex strings, each block's Python
// frames (innermost first, at most 4) as "file:line in function". Exit 3: unreadable or refused;
// 4: not an allocator snapshot.
constexpr const char* kConvert = R"PY(
import json, pickle, sys
class PlainData(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"it names a class ({module}.{name}); an allocator snapshot holds plain data only")
try:
    with open(sys.argv[1], "rb") as f:
        snap = PlainData(f).load()
except Exception as e:
    print(f"{type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(3)
if not isinstance(snap, dict) or not isinstance(snap.get("segments"), list):
    print("not a PyTorch allocator snapshot (no 'segments' list)", file=sys.stderr)
    sys.exit(4)
def num(x):
    return x if isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 1 << 64 else 0
def frames(fs):
    out = []
    for f in fs if isinstance(fs, list) else []:
        if isinstance(f, dict) and str(f.get("filename", "")).endswith(".py"):
            out.append(f"{f.get('filename')}:{num(f.get('line'))} in {f.get('name')}")
            if len(out) == 4:
                break
    return out
segments = []
for s in snap["segments"][:4096]:
    if not isinstance(s, dict):
        continue
    blocks = [{"address": hex(num(b.get("address"))), "size": num(b.get("size")),
               "requested_size": num(b.get("requested_size")), "state": str(b.get("state", "")),
               "frames": frames(b.get("frames"))}
              for b in (s.get("blocks") if isinstance(s.get("blocks"), list) else [])[:65536] if isinstance(b, dict)]
    segments.append({"address": hex(num(s.get("address"))), "total_size": num(s.get("total_size")),
                     "device": num(s.get("device")), "segment_type": str(s.get("segment_type", "")), "blocks": blocks})
json.dump({"segments": segments}, sys.stdout)
)PY";

uint64_t Address(const std::string& hex) {
  try {
    return std::stoull(hex, nullptr, 16);
  } catch (const std::exception&) {
    return 0;
  }
}

int64_t Int(const core::Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return 0;
  return it->is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(it->get<uint64_t>(), INT64_MAX))
                                  : it->get<int64_t>();
}

std::string Str(const core::Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string Where(const core::TorchBlock& b) {
  if (b.frames.empty()) return "no Python frame recorded";
  std::string out = "allocated at " + b.frames.front();
  if (b.frames.size() > 1) out += " (called from " + b.frames[1] + ")";
  return out;
}

std::string Tensor(const core::TorchBlock& b) {
  return fmt::format("{} tensor{} at {}, {}", HumanBytes(static_cast<uint64_t>(b.bytes)),
                     b.requested_bytes != b.bytes && b.requested_bytes > 0
                         ? fmt::format(" ({} requested)", HumanBytes(static_cast<uint64_t>(b.requested_bytes)))
                         : "",
                     b.address, Where(b));
}

}  // namespace

core::Result<core::TorchMemory> ReadTorchSnapshot(const std::string& path, const std::string& python) {
  core::RunOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  options.max_stdout_bytes = 256u << 20;
  auto run = core::RunWithTimeout({python, "-c", kConvert, path}, options);
  if (!run.ok()) return core::MakeError("{}: cannot read the PyTorch snapshot: {}", path, run.error().message);
  if (run->timed_out) return core::MakeError("{}: reading the PyTorch snapshot took over 60 s", path);
  if (run->exit_code != 0) {
    std::string why = run->stderr_tail;
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
    if (size_t nl = why.rfind('\n'); nl != std::string::npos) why = why.substr(nl + 1);
    return core::MakeError("{}: not read as a PyTorch allocator snapshot ({}): {}", path, python,
                           why.empty() ? "the reader failed" : why);
  }
  if (run->stdout_dropped_bytes > 0) return core::MakeError("{}: the PyTorch snapshot is larger than 256 MiB", path);
  auto json = core::ParseJson(run->stdout_data, path);
  if (!json.ok()) return json.error();
  core::TorchMemory memory;
  memory.source = path;
  for (const core::Json& s : json->value("segments", core::Json::array())) {
    if (!s.is_object()) continue;
    core::TorchSegment segment;
    segment.address = Str(s, "address");
    segment.bytes = Int(s, "total_size");
    segment.device = Int(s, "device");
    segment.type = Str(s, "segment_type");
    for (const core::Json& b : s.value("blocks", core::Json::array())) {
      if (!b.is_object()) continue;
      core::TorchBlock block;
      block.address = Str(b, "address");
      block.bytes = Int(b, "size");
      block.requested_bytes = Int(b, "requested_size");
      block.state = Str(b, "state");
      for (const core::Json& f : b.value("frames", core::Json::array())) {
        if (f.is_string()) block.frames.push_back(f.get<std::string>());
      }
      segment.blocks.push_back(std::move(block));
    }
    memory.segments.push_back(std::move(segment));
  }
  return memory;
}

std::optional<TensorPlace> PlaceInTensors(const core::TorchMemory& memory, uint64_t address) {
  // The segment holding the address, else the nearest one ending at most 1 MiB below it.
  constexpr uint64_t kNear = 1u << 20;
  const core::TorchSegment* segment = nullptr;
  uint64_t gap = kNear;
  for (const core::TorchSegment& s : memory.segments) {
    uint64_t start = Address(s.address), end = start + static_cast<uint64_t>(s.bytes);
    if (start == 0 || address < start) continue;
    if (address < end) {
      segment = &s;
      break;
    }
    if (address - end < gap) gap = address - end, segment = &s;
  }
  if (segment != nullptr) {
    const core::TorchSegment& s = *segment;
    uint64_t end = Address(s.address) + static_cast<uint64_t>(s.bytes);
    const core::TorchBlock* below = nullptr;
    uint64_t below_end = 0;
    for (const core::TorchBlock& b : s.blocks) {
      uint64_t b_start = Address(b.address), b_end = b_start + static_cast<uint64_t>(b.bytes);
      if (address >= b_start && address < b_end) {
        bool live = b.state.rfind("active", 0) == 0;
        return TensorPlace{
            b, live ? fmt::format("{} bytes into a live {}", address - b_start, Tensor(b))
                    : fmt::format("{} bytes into a free block of {} (state {}): no tensor holds it now — use after "
                                  "free, or an overrun from the tensor before it",
                                  address - b_start, HumanBytes(static_cast<uint64_t>(b.bytes)), b.state)};
      }
      if (b.state.rfind("active", 0) == 0 && b_end <= address && b_end >= below_end) below = &b, below_end = b_end;
    }
    if (below != nullptr) {
      return TensorPlace{*below,
                         fmt::format("{} past the end of a {}{}", HumanBytes(address - below_end), Tensor(*below),
                                     address >= end ? " (the segment's last live tensor)" : "")};
    }
  }
  return std::nullopt;
}

}  // namespace gputriage::forensics
