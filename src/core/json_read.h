// Lenient readers for JSON that may come from a damaged or older file: a member that is absent
// or of the wrong type reads as absent (or the fallback), never as an exception.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include "core/model.h"

namespace gputriage::core {

/// obj[key] when `obj` is an object and the member is a string, else `fallback`.
inline std::string StringAt(const Json& obj, const char* key, const std::string& fallback = "") {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) return fallback;
  return obj[key].get<std::string>();
}

/// obj[key] when it is a number, else nullopt.
inline std::optional<double> NumberAt(const Json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return std::nullopt;
  return obj[key].get<double>();
}

/// True only when obj[key] is the boolean true.
inline bool TrueAt(const Json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_boolean() && obj[key].get<bool>();
}

/// The node at root[k1][k2]..., or a null node when any step is missing or not an object.
inline const Json& NodeAt(const Json& root, std::initializer_list<const char*> keys) {
  static const Json kNull;
  const Json* node = &root;
  for (const char* key : keys) {
    if (!node->is_object() || !node->contains(key)) return kNull;
    node = &(*node)[key];
  }
  return *node;
}

}  // namespace gputriage::core
