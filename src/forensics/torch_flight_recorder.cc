#include "forensics/torch_flight_recorder.h"

#include <fmt/format.h>

#include <cstring>
#include <map>

#include "core/text.h"

namespace gputriage::forensics {
namespace {

constexpr size_t kMaxValues = 8u << 20;  // every value pushed, memo copies included

// The unpickled data lives in arenas: containers refer to each other by index, so a dump that
// nests or refers to itself (through the memo) costs no recursion to free and cannot loop.
enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict };

struct Value {
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  uint32_t index = 0;  // kString: into strings; kList, kTuple, kDict: into containers
};

struct Container {
  std::vector<Value> items;  // a dict's keys and values alternate
};

class Unpickler {
 public:
  Unpickler(std::string_view bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  core::Result<Value> Run() {
    while (true) {
      if (pos_ >= bytes_.size()) return Fail(pos_, "the pickle ends without STOP (truncated)");
      size_t at = pos_;
      uint8_t op = static_cast<uint8_t>(bytes_[pos_++]);
      switch (op) {
        case 0x80: {  // PROTO
          GT_ASSIGN_OR_RETURN(uint64_t proto, Unsigned(1, at));
          if (proto > 5) return Fail(at, fmt::format("pickle protocol {} is not one Python writes", proto));
          break;
        }
        case 0x95:  // FRAME (protocol 4): a length hint
          GT_RETURN_IF_ERROR(Unsigned(8, at));
          break;
        case '}':
          GT_RETURN_IF_ERROR(Push(NewContainer(Kind::kDict), at));
          break;
        case ']':
          GT_RETURN_IF_ERROR(Push(NewContainer(Kind::kList), at));
          break;
        case ')':
          GT_RETURN_IF_ERROR(Push(NewContainer(Kind::kTuple), at));
          break;
        case '(':
          marks_.push_back(stack_.size());
          break;
        case 'N':
          GT_RETURN_IF_ERROR(Push(Value{}, at));
          break;
        case 0x88:
          GT_RETURN_IF_ERROR(Push(Value{Kind::kBool, true}, at));
          break;
        case 0x89:
          GT_RETURN_IF_ERROR(Push(Value{Kind::kBool, false}, at));
          break;
        case 'K': {  // BININT1
          GT_ASSIGN_OR_RETURN(uint64_t v, Unsigned(1, at));
          GT_RETURN_IF_ERROR(PushInt(static_cast<int64_t>(v), at));
          break;
        }
        case 'M': {  // BININT2
          GT_ASSIGN_OR_RETURN(uint64_t v, Unsigned(2, at));
          GT_RETURN_IF_ERROR(PushInt(static_cast<int64_t>(v), at));
          break;
        }
        case 'J': {  // BININT: signed 32 bits
          GT_ASSIGN_OR_RETURN(uint64_t v, Unsigned(4, at));
          GT_RETURN_IF_ERROR(PushInt(static_cast<int32_t>(static_cast<uint32_t>(v)), at));
          break;
        }
        case 0x8a:    // LONG1
        case 0x8b: {  // LONG4
          GT_ASSIGN_OR_RETURN(uint64_t n, Unsigned(op == 0x8a ? 1 : 4, at));
          if (n > 8) return Fail(at, fmt::format("an integer of {} bytes is wider than 64 bits", n));
          GT_ASSIGN_OR_RETURN(std::string_view raw, Bytes(n, at));
          uint64_t v = 0;
          for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<uint8_t>(raw[k])) << (8 * k);
          if (n > 0 && n < 8 && (static_cast<uint8_t>(raw[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign
          GT_RETURN_IF_ERROR(PushInt(static_cast<int64_t>(v), at));
          break;
        }
        case 'G': {  // BINFLOAT: big-endian IEEE 754 double
          GT_ASSIGN_OR_RETURN(std::string_view raw, Bytes(8, at));
          uint64_t bits = 0;
          for (char c : raw) bits = (bits << 8) | static_cast<uint8_t>(c);
          Value v{Kind::kFloat};
          std::memcpy(&v.f, &bits, sizeof v.f);
          GT_RETURN_IF_ERROR(Push(v, at));
          break;
        }
        case 'X':     // BINUNICODE
        case 0x8c:    // SHORT_BINUNICODE
        case 0x8d: {  // BINUNICODE8
          GT_ASSIGN_OR_RETURN(uint64_t n, Unsigned(op == 'X' ? 4 : op == 0x8c ? 1 : 8, at));
          GT_ASSIGN_OR_RETURN(std::string_view raw, Bytes(n, at));
          strings_.push_back(core::SanitizeUtf8(raw));
          GT_RETURN_IF_ERROR(Push(Value{Kind::kString, false, 0, 0, static_cast<uint32_t>(strings_.size() - 1)}, at));
          break;
        }
        case 'q':     // BINPUT
        case 'r':     // LONG_BINPUT
        case 0x94: {  // MEMOIZE
          uint64_t key = memo_.size();
          if (op != 0x94) {
            GT_ASSIGN_OR_RETURN(key, Unsigned(op == 'q' ? 1 : 4, at));
          }
          if (stack_.empty()) return Fail(at, "memo store with an empty stack");
          memo_[key] = stack_.back();
          break;
        }
        case 'h':    // BINGET
        case 'j': {  // LONG_BINGET
          GT_ASSIGN_OR_RETURN(uint64_t key, Unsigned(op == 'h' ? 1 : 4, at));
          auto it = memo_.find(key);
          if (it == memo_.end()) return Fail(at, fmt::format("memo entry {} was never stored", key));
          GT_RETURN_IF_ERROR(Push(it->second, at));
          break;
        }
        case 0x85:  // TUPLE1
        case 0x86:  // TUPLE2
        case 0x87:  // TUPLE3
          GT_RETURN_IF_ERROR(MakeTuple(stack_.size() < size_t(op - 0x84) ? SIZE_MAX : stack_.size() - (op - 0x84), at));
          break;
        case 't': {  // TUPLE: everything since the mark
          GT_ASSIGN_OR_RETURN(size_t mark, PopMark(at));
          GT_RETURN_IF_ERROR(MakeTuple(mark, at));
          break;
        }
        case 'a':    // APPEND
        case 'e': {  // APPENDS
          size_t from = stack_.size() - 1;
          if (op == 'e') {
            GT_ASSIGN_OR_RETURN(from, PopMark(at));
          } else if (stack_.size() < 2) {
            return Fail(at, "APPEND without a list and a value");
          }
          if (from == 0) return Fail(at, "APPENDS without a list before the mark");
          Value target = stack_[from - 1];
          if (target.kind != Kind::kList) return Fail(at, "APPEND to something that is not a list");
          auto& items = containers_[target.index].items;
          items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
          stack_.resize(from);
          break;
        }
        case 's':    // SETITEM
        case 'u': {  // SETITEMS
          size_t from = stack_.size() - 2;
          if (op == 'u') {
            GT_ASSIGN_OR_RETURN(from, PopMark(at));
          } else if (stack_.size() < 3) {
            return Fail(at, "SETITEM without a dict, a key and a value");
          }
          if (from == 0 || (stack_.size() - from) % 2 != 0)
            return Fail(at, "SETITEMS without a dict or with an odd count");
          Value target = stack_[from - 1];
          if (target.kind != Kind::kDict) return Fail(at, "SETITEM on something that is not a dict");
          auto& items = containers_[target.index].items;
          items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
          stack_.resize(from);
          break;
        }
        case '.':  // STOP
          if (stack_.size() != 1)
            return Fail(at, fmt::format("STOP with {} values on the stack, not 1", stack_.size()));
          return stack_.back();
        default:
          return Fail(at, fmt::format("opcode 0x{:02x} ({}) is not one a flight-recorder dump uses; gputriage reads "
                                      "data opcodes only and never runs what a pickle names",
                                      op, Describe(op)));
      }
    }
  }

  const std::vector<std::string>& strings() const { return strings_; }
  const std::vector<Container>& containers() const { return containers_; }

 private:
  static const char* Describe(uint8_t op) {
    switch (op) {
      case 'c':
        return "GLOBAL";
      case 0x93:
        return "STACK_GLOBAL";
      case 'R':
        return "REDUCE";
      case 'b':
        return "BUILD";
      case 'i':
        return "INST";
      case 'o':
        return "OBJ";
      case 0x81:
        return "NEWOBJ";
      case 0x92:
        return "NEWOBJ_EX";
      case 'B':
      case 'C':
      case 0x8e:
        return "BINBYTES";
      default:
        return "unknown";
    }
  }

  core::Error Fail(size_t at, const std::string& what) const {
    return core::MakeError("{}: not a flight-recorder dump PyTorch writes: offset {}: {}", source_, at, what);
  }

  core::Result<uint64_t> Unsigned(size_t n, size_t at) {
    GT_ASSIGN_OR_RETURN(std::string_view raw, Bytes(n, at));
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<uint8_t>(raw[k])) << (8 * k);
    return v;
  }

  core::Result<std::string_view> Bytes(uint64_t n, size_t at) {
    if (n > bytes_.size() - pos_)
      return Fail(at, fmt::format("{} bytes announced, {} left (truncated)", n, bytes_.size() - pos_));
    std::string_view out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }

  core::Result<void> Push(const Value& v, size_t at) {
    if (++values_ > kMaxValues) return Fail(at, fmt::format("more than {} values", kMaxValues));
    stack_.push_back(v);
    return {};
  }
  core::Result<void> PushInt(int64_t i, size_t at) { return Push(Value{Kind::kInt, false, i}, at); }

  Value NewContainer(Kind kind) {
    containers_.emplace_back();
    return Value{kind, false, 0, 0, static_cast<uint32_t>(containers_.size() - 1)};
  }

  core::Result<size_t> PopMark(size_t at) {
    if (marks_.empty()) return Fail(at, "no MARK before this opcode");
    size_t mark = marks_.back();
    marks_.pop_back();
    if (mark > stack_.size()) return Fail(at, "the MARK is above the stack");
    return mark;
  }

  core::Result<void> MakeTuple(size_t from, size_t at) {
    if (from > stack_.size()) return Fail(at, "a tuple of more values than the stack holds");
    Value tuple = NewContainer(Kind::kTuple);
    containers_[tuple.index].items.assign(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    return Push(tuple, at);
  }

  std::string_view bytes_;
  std::string_view source_;
  size_t pos_ = 0;
  size_t values_ = 0;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Value> memo_;
  std::vector<std::string> strings_;
  std::vector<Container> containers_;
};

// Typed reads of the unpickled tree; a field of another type is left unset.
class Reader {
 public:
  explicit Reader(const Unpickler& u) : u_(u) {}

  const std::vector<Value>* Items(const Value& v, Kind kind) const {
    if (v.kind != kind) return nullptr;
    return &u_.containers()[v.index].items;
  }
  const Value* Get(const Value& dict, std::string_view key) const {
    const std::vector<Value>* items = Items(dict, Kind::kDict);
    if (items == nullptr) return nullptr;
    for (size_t k = 0; k + 1 < items->size(); k += 2) {
      const Value& name = (*items)[k];
      if (name.kind == Kind::kString && u_.strings()[name.index] == key) return &(*items)[k + 1];
    }
    return nullptr;
  }
  std::string Str(const Value* v) const {
    return v != nullptr && v->kind == Kind::kString ? u_.strings()[v->index] : std::string();
  }
  std::optional<int64_t> Int(const Value* v) const {
    if (v != nullptr && v->kind == Kind::kInt) return v->i;
    return std::nullopt;
  }
  bool Bool(const Value* v) const { return v != nullptr && v->kind == Kind::kBool && v->b; }
  std::vector<std::string> Strings(const Value* v) const {
    std::vector<std::string> out;
    if (v == nullptr) return out;
    if (const auto* items = Items(*v, Kind::kList)) {
      for (const Value& s : *items) out.push_back(Str(&s));
    }
    return out;
  }
  std::vector<std::vector<int64_t>> Shapes(const Value* v) const {
    std::vector<std::vector<int64_t>> out;
    if (v == nullptr) return out;
    if (const auto* items = Items(*v, Kind::kList)) {
      for (const Value& shape : *items) {
        std::vector<int64_t>& dims = out.emplace_back();
        if (const auto* d = Items(shape, Kind::kList)) {
          for (const Value& n : *d) dims.push_back(n.kind == Kind::kInt ? n.i : -1);
        }
      }
    }
    return out;
  }
  const std::string& StringAt(uint32_t i) const { return u_.strings()[i]; }

 private:
  const Unpickler& u_;
};

FrEntry ReadEntry(const Reader& r, const Value& e) {
  FrEntry out;
  out.record_id = r.Int(r.Get(e, "record_id"));
  out.pg_id = r.Int(r.Get(e, "pg_id"));
  out.collective_seq_id = r.Int(r.Get(e, "collective_seq_id"));
  out.p2p_seq_id = r.Int(r.Get(e, "p2p_seq_id"));
  out.op_id = r.Int(r.Get(e, "op_id"));
  if (const Value* pg = r.Get(e, "process_group")) {
    const std::vector<Value>* parts = r.Items(*pg, Kind::kTuple);
    if (parts == nullptr) parts = r.Items(*pg, Kind::kList);
    if (parts != nullptr && !parts->empty()) out.process_group = r.Str(&(*parts)[0]);
    if (parts != nullptr && parts->size() > 1) out.process_group_desc = r.Str(&(*parts)[1]);
  }
  out.profiling_name = r.Str(r.Get(e, "profiling_name"));
  out.state = r.Str(r.Get(e, "state"));
  out.thread_name = r.Str(r.Get(e, "thread_name"));
  out.time_created_ns = r.Int(r.Get(e, "time_created_ns"));
  out.time_discovered_started_ns = r.Int(r.Get(e, "time_discovered_started_ns"));
  out.time_discovered_completed_ns = r.Int(r.Get(e, "time_discovered_completed_ns"));
  out.timeout_ms = r.Int(r.Get(e, "timeout_ms"));
  out.input_sizes = r.Shapes(r.Get(e, "input_sizes"));
  out.output_sizes = r.Shapes(r.Get(e, "output_sizes"));
  out.input_dtypes = r.Strings(r.Get(e, "input_dtypes"));
  out.output_dtypes = r.Strings(r.Get(e, "output_dtypes"));
  out.retired = r.Bool(r.Get(e, "retired"));
  out.is_p2p = r.Bool(r.Get(e, "is_p2p"));
  if (const Value* frames = r.Get(e, "frames")) {
    if (const auto* items = r.Items(*frames, Kind::kList)) {
      for (const Value& f : *items) {
        out.frames.push_back(
            {r.Str(r.Get(f, "name")), r.Str(r.Get(f, "filename")), r.Int(r.Get(f, "line")).value_or(0)});
      }
    }
  }
  return out;
}

}  // namespace

core::Result<FrDump> ParseFlightRecorderDump(std::string_view bytes, std::string_view source) {
  Unpickler unpickler(bytes, source);
  GT_ASSIGN_OR_RETURN(Value top, unpickler.Run());
  Reader r(unpickler);
  if (top.kind != Kind::kDict) {
    return core::MakeError("{}: not a flight-recorder dump PyTorch writes: the pickle holds no dict", source);
  }
  if (r.Get(top, "entries") == nullptr && r.Get(top, "pg_status") == nullptr) {
    return core::MakeError("{}: a pickled dict without the flight recorder's entries or pg_status", source);
  }
  FrDump dump;
  dump.version = r.Str(r.Get(top, "version"));
  dump.comm_lib_version = r.Str(r.Get(top, "comm_lib_version"));
  if (const Value* entries = r.Get(top, "entries")) {
    if (const auto* items = r.Items(*entries, Kind::kList)) {
      for (const Value& e : *items) dump.entries.push_back(ReadEntry(r, e));
    }
  }
  // pg_status is keyed by the group's id, pg_config by its name (the same "0" for NCCL's default
  // group; "" in gloo's dumps, whose entries still name the group "0"): a configuration joins the
  // group whose id or entries' name it carries, else the only group there is.
  std::map<std::string, size_t> group_index;
  auto group = [&](const std::string& id) -> FrGroup& {
    auto [it, inserted] = group_index.emplace(id, dump.groups.size());
    if (inserted) dump.groups.push_back(FrGroup{id});
    return dump.groups[it->second];
  };
  std::vector<std::pair<std::string, const Value*>> configs;
  if (const Value* config = r.Get(top, "pg_config")) {
    if (const auto* items = r.Items(*config, Kind::kDict)) {
      for (size_t k = 0; k + 1 < items->size(); k += 2) configs.push_back({r.Str(&(*items)[k]), &(*items)[k + 1]});
    }
  }
  if (const Value* status = r.Get(top, "pg_status")) {
    if (const auto* items = r.Items(*status, Kind::kDict)) {
      for (size_t k = 0; k + 1 < items->size(); k += 2) {
        FrGroup& g = group(r.Str(&(*items)[k]));
        g.last_enqueued_collective = r.Int(r.Get((*items)[k + 1], "last_enqueued_collective"));
        g.last_started_collective = r.Int(r.Get((*items)[k + 1], "last_started_collective"));
        g.last_completed_collective = r.Int(r.Get((*items)[k + 1], "last_completed_collective"));
      }
    }
  }
  const size_t status_groups = dump.groups.size();
  for (const auto& [key, value] : configs) {
    std::string id = key;
    if (!group_index.count(key)) {
      for (const FrEntry& e : dump.entries) {
        if (e.process_group == key && e.pg_id) {
          id = std::to_string(*e.pg_id);
          break;
        }
      }
      if (!group_index.count(id) && configs.size() == 1 && status_groups == 1) id = dump.groups.front().id;
    }
    FrGroup& g = group(id);
    g.name = r.Str(r.Get(*value, "name"));
    g.desc = r.Str(r.Get(*value, "desc"));
    g.ranks = r.Str(r.Get(*value, "ranks"));
  }
  for (FrGroup& g : dump.groups) {
    for (const FrEntry& e : dump.entries) {
      if (!e.pg_id || std::to_string(*e.pg_id) != g.id) continue;
      if (g.name.empty()) g.name = e.process_group;
      if (g.desc.empty()) g.desc = e.process_group_desc;
      break;
    }
  }
  return dump;
}

}  // namespace gputriage::forensics
