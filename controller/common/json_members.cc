// File: controller/common/json_members.cc
//
// Every access is type-checked first, so nothing here throws.

#include "controller/common/json_members.h"

namespace slurmop {

const nlohmann::json* FindMember(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end()) return nullptr;
  return &*it;
}

std::string StringMember(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* v = FindMember(object, key);
  if (v == nullptr || !v->is_string()) return "";
  return v->get<std::string>();
}

}  // namespace slurmop
