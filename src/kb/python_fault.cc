#include "kb/python_fault.h"

#include <fmt/format.h>

#include "core/text.h"

namespace gputriage::kb {
namespace {

constexpr std::string_view kStart = "Fatal Python error: ";

// "Current thread 0x00007f3a2c3ba740 (most recent call first):", "Thread 0x... (most recent call
// first):", with a thread name in brackets on newer CPythons, or "Stack (most recent call first):"
// (faulthandler with all_threads=False). Returns the id ("" for Stack) and whether it is the
// current thread; nullopt for other lines.
std::optional<std::pair<std::string, bool>> ThreadHeader(std::string_view line) {
  constexpr std::string_view kTail = "(most recent call first):";
  std::string_view s = core::Trim(line);
  if (s.size() < kTail.size() || s.substr(s.size() - kTail.size()) != kTail) return std::nullopt;
  if (s.rfind("Stack ", 0) == 0) return std::make_pair(std::string(), true);
  bool current = s.rfind("Current thread 0x", 0) == 0;
  if (!current && s.rfind("Thread 0x", 0) != 0) return std::nullopt;
  size_t id = s.find("0x");
  size_t end = s.find(' ', id);
  return std::make_pair(std::string(s.substr(id, end - id)), current);
}

// `  File "train.py", line 41 in forward` (a traceback's frames have a comma before "in"; the
// line number is "???" when unknown).
std::optional<PythonFrame> FrameLine(std::string_view line) {
  constexpr std::string_view kFile = "  File \"";
  if (line.rfind(kFile, 0) != 0) return std::nullopt;
  std::string_view rest = line.substr(kFile.size());
  size_t quote = rest.rfind("\", line ");
  if (quote == std::string_view::npos) return std::nullopt;
  PythonFrame frame;
  frame.file = std::string(rest.substr(0, quote));
  rest = rest.substr(quote + 8);
  size_t in = rest.find(" in ");
  if (in == std::string_view::npos) return std::nullopt;
  std::string_view number = rest.substr(0, in);
  if (number != "???") {
    if (number.empty() || number.size() > 12 || number.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
    frame.line = std::stoull(std::string(number));
  }
  frame.function = std::string(rest.substr(in + 4));
  return frame;
}

std::string Where(const PythonFrame& f) {
  std::string file = f.file;
  // The last two path components are enough to find it ("ctypes/__init__.py").
  size_t slash = file.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    size_t before = file.rfind('/', slash - 1);
    if (before != std::string::npos) file = file.substr(before + 1);
  }
  return f.line > 0 ? fmt::format("{} ({}:{})", f.function, file, f.line) : fmt::format("{} ({})", f.function, file);
}

}  // namespace

std::string PythonFault::Describe() const {
  std::string text = "Fatal Python error: " + error;
  if (frames.empty()) return text + (thread.empty() ? "" : "; no Python frame on the current thread");
  text += "; Python was in " + Where(frames[0]);
  if (frames.size() > 1) text += ", called from " + Where(frames[1]);
  return text;
}

core::Json ToJson(const PythonFault& fault) {
  core::Json frames = core::Json::array();
  for (const PythonFrame& f : fault.frames) {
    frames.push_back(
        {{"file", f.file}, {"line", f.line > 0 ? core::Json(f.line) : core::Json(nullptr)}, {"function", f.function}});
  }
  return {{"error", fault.error},
          {"thread", fault.thread.empty() ? core::Json(nullptr) : core::Json(fault.thread)},
          {"frames", frames},
          {"frames_dropped", fault.frames_dropped},
          {"other_threads", fault.other_threads},
          {"line", fmt::format("{}:{}", fault.input, fault.line_number)}};
}

bool PythonFaultAssembler::Line(std::string_view line, uint64_t line_number, std::string_view input) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (state_ == State::kIdle) {
    if (done_) return false;
    size_t at = line.find(kStart);
    if (at == std::string_view::npos) return false;
    fault_.emplace();
    fault_->error = std::string(core::Trim(line.substr(at + kStart.size())));
    fault_->line_number = line_number;
    fault_->input = std::string(input);
    done_ = true;
    state_ = State::kBetween;
    return true;
  }
  if (core::Trim(line).empty()) {
    // Blank lines separate the thread blocks.
    if (state_ != State::kBetween) state_ = State::kBetween;
    return true;
  }
  if (auto header = ThreadHeader(line)) {
    if (header->second) {
      fault_->thread = header->first.empty() ? fault_->thread : header->first;
      state_ = State::kCurrentThread;
    } else {
      ++fault_->other_threads;
      state_ = State::kOtherThread;
    }
    return true;
  }
  if (state_ == State::kCurrentThread || state_ == State::kOtherThread) {
    std::string_view trimmed = core::Trim(line);
    if (auto frame = FrameLine(line)) {
      if (state_ == State::kCurrentThread) {
        if (fault_->frames.size() < kMaxFrames) {
          fault_->frames.push_back(std::move(*frame));
        } else {
          ++fault_->frames_dropped;
        }
      }
      return true;
    }
    if (trimmed == "<no Python frame>" || trimmed == "...") return true;
  }
  // Anything else ("Extension modules: ...", the shell's "Segmentation fault (core dumped)")
  // ends the report.
  state_ = State::kIdle;
  return false;
}

}  // namespace gputriage::kb
