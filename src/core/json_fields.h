// How core's typed models (Snapshot, ProcessReport, the bundle files) read and write their JSON
// form from one field list. Each struct lists its members once, in a static
// `Fields(visitor, self)`; a FieldReader fills them from JSON leniently (a member that is absent
// or of another type stays unknown, never throws), a FieldWriter writes the known ones.
// Private to src/core: everything outside reads the typed model (the build and
// scripts/check-layers enforce it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/model.h"

namespace gputriage::core::json_fields {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

template <typename T>
struct IsStringMap : std::false_type {};
template <typename T>
struct IsStringMap<std::map<std::string, T>> : std::true_type {};

class FieldReader;
class FieldWriter;

/// A struct with a field list: `template <class V, class S> static void Fields(V&, S&)`.
template <typename T>
concept HasFields = requires(FieldReader& reader, T& value) {
  T::Fields(reader, value);
};

/// Where a lenient read is, and what it had to leave out: "host.cpu.logical_cpus: a string where
/// an integer belongs". Null when nobody asks.
struct ReadProblems {
  std::vector<std::string>* out = nullptr;
  std::string path;

  ReadProblems At(std::string_view key) const {
    if (out == nullptr) return {};
    return {out, path.empty() ? std::string(key) : path + "." + std::string(key)};
  }
  ReadProblems Index(size_t i) const {
    if (out == nullptr) return {};
    return {out, path + "[" + std::to_string(i) + "]"};
  }
  void Wrong(const Json& j, const char* expected) const {
    if (out == nullptr || out->size() >= 64) return;
    out->push_back(path + ": a " + std::string(j.type_name()) + " where " + expected + " belongs");
  }
};

/// Reads one JSON value into `out`; false (and `out` untouched) when the value has another type.
template <typename T>
bool ReadValue(const Json& j, T& out, const ReadProblems& problems = {});

class FieldReader {
 public:
  explicit FieldReader(const Json& object, ReadProblems problems = {})
      : object_(object), problems_(std::move(problems)) {}

  template <typename T>
  void operator()(const char* key, T& field) {
    if (!object_.is_object()) return;
    auto it = object_.find(key);
    if (it == object_.end()) return;
    if constexpr (std::is_same_v<T, Json>) {
      field = *it;  // a raw vendor dump, kept as it is
    } else if constexpr (IsOptional<T>::value) {
      if (it->is_null()) return;  // written as unknown
      typename T::value_type value{};
      if (ReadValue(*it, value, problems_.At(key))) field = std::move(value);
    } else {
      ReadValue(*it, field, problems_.At(key));
    }
  }

 private:
  const Json& object_;
  ReadProblems problems_;
};

template <typename T>
const char* ExpectedName() {
  if constexpr (std::is_enum_v<T>)
    return "one of the known names";
  else if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else if constexpr (std::is_same_v<T, bool>)
    return "a boolean";
  else if constexpr (std::is_same_v<T, double>)
    return "a number";
  else if constexpr (std::is_integral_v<T>)
    return "an integer";
  else if constexpr (IsVector<T>::value)
    return "a list";
  else
    return "an object";
}

template <typename T>
bool ReadValue(const Json& j, T& out, const ReadProblems& problems) {
  bool ok = true;
  if constexpr (std::is_same_v<T, std::string>) {
    ok = j.is_string();
    if (ok) out = j.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    ok = j.is_boolean();
    if (ok) out = j.get<bool>();
  } else if constexpr (std::is_same_v<T, double>) {
    ok = j.is_number();
    if (ok) out = j.get<double>();
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    if (j.is_number_unsigned()) {
      out = j.get<uint64_t>();
    } else if (j.is_number_integer() && j.get<int64_t>() >= 0) {
      out = static_cast<uint64_t>(j.get<int64_t>());
    } else {
      ok = false;
    }
  } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, int>) {
    int64_t wide = 0;
    if (j.is_number_unsigned() && j.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
      wide = static_cast<int64_t>(j.get<uint64_t>());
    } else if (j.is_number_integer() && !j.is_number_unsigned()) {
      wide = j.get<int64_t>();
    } else {
      ok = false;
    }
    if constexpr (std::is_same_v<T, int>) ok = ok && wide >= INT32_MIN && wide <= INT32_MAX;
    if (ok) out = static_cast<T>(wide);
  } else if constexpr (std::is_enum_v<T>) {
    ok = j.is_string() && ParseEnum(j.get_ref<const std::string&>(), out);
  } else if constexpr (IsVector<T>::value) {
    ok = j.is_array();
    if (ok) {
      out.clear();
      for (size_t i = 0; i < j.size(); ++i) {
        typename T::value_type value{};
        if (ReadValue(j[i], value, problems.Index(i))) out.push_back(std::move(value));
      }
    }
  } else if constexpr (IsStringMap<T>::value) {
    ok = j.is_object();
    if (ok) {
      out.clear();
      for (auto it = j.begin(); it != j.end(); ++it) {
        typename T::mapped_type value{};
        if (ReadValue(it.value(), value, problems.At(it.key()))) out.emplace(it.key(), std::move(value));
      }
    }
  } else if constexpr (IsOptional<T>::value) {
    // Only inside containers: `true` (a bare kernel command-line flag) is "no value".
    if (j.is_boolean() && j.get<bool>()) {
      out.reset();
      return true;
    }
    typename T::value_type value{};
    ok = ReadValue(j, value, problems);
    if (ok) out = std::move(value);
    return ok;
  } else if constexpr (HasFields<T>) {
    ok = j.is_object();
    if (ok) {
      FieldReader reader(j, problems);
      T::Fields(reader, out);
    }
  } else {
    static_assert(sizeof(T) == 0, "no JSON reading for this type");
  }
  if (!ok) problems.Wrong(j, ExpectedName<T>());
  return ok;
}

/// Writes one value as JSON.
template <typename T>
Json WriteValue(const T& value);

class FieldWriter {
 public:
  explicit FieldWriter(Json& object) : object_(object) {}

  template <typename T>
  void operator()(const char* key, const T& field) {
    if constexpr (std::is_same_v<T, Json>) {
      if (!field.is_null() && !field.is_discarded()) object_[key] = field;
    } else if constexpr (IsOptional<T>::value) {
      if (field) object_[key] = WriteValue(*field);
    } else {
      object_[key] = WriteValue(field);
    }
  }

 private:
  Json& object_;
};

template <typename T>
Json WriteValue(const T& value) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool> || std::is_arithmetic_v<T>) {
    return Json(value);
  } else if constexpr (std::is_enum_v<T>) {
    return Json(std::string(EnumName(value)));
  } else if constexpr (IsVector<T>::value) {
    Json out = Json::array();
    for (const auto& item : value) out.push_back(WriteValue(item));
    return out;
  } else if constexpr (IsStringMap<T>::value) {
    Json out = Json::object();
    for (const auto& [key, item] : value) out[key] = WriteValue(item);
    return out;
  } else if constexpr (IsOptional<T>::value) {
    // Inside containers: no value is `true` (a bare flag), see ReadValue.
    return value ? WriteValue(*value) : Json(true);
  } else if constexpr (HasFields<T>) {
    Json out = Json::object();
    FieldWriter writer(out);
    T::Fields(writer, value);
    return out;
  } else {
    static_assert(sizeof(T) == 0, "no JSON writing for this type");
  }
}

/// Adds each of `keys` as null to every object of the array `list` that lacks it: the contract's
/// names are always present, null when unknown.
inline void CompleteKeys(nlohmann::json& list, std::initializer_list<const char*> keys) {
  if (!list.is_array()) return;
  for (nlohmann::json& item : list) {
    for (const char* key : keys) {
      if (!item.contains(key)) item[key] = nullptr;
    }
  }
}

}  // namespace gputriage::core::json_fields
