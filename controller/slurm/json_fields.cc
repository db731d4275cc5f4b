// File: controller/slurm/json_fields.cc
//
// Tolerant JSON readers; every access is type-checked first, so nothing here
// throws.

#include "controller/slurm/json_fields.h"

#include <chrono>
#include <cmath>
#include <limits>

namespace slurmop::slurm {
namespace {

std::optional<int64_t> PlainInteger(const nlohmann::json& value) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    return value.get<int64_t>();
  }
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d) || std::trunc(d) != d || std::fabs(d) > 9.0e18) return std::nullopt;
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> NoValInteger(const nlohmann::json& value) {
  if (value.is_object()) {
    const nlohmann::json* infinite = FindMember(value, "infinite");
    if (infinite != nullptr && infinite->is_boolean() && infinite->get<bool>()) {
      return std::nullopt;
    }
    const nlohmann::json* set = FindMember(value, "set");
    if (set != nullptr && set->is_boolean() && !set->get<bool>()) return std::nullopt;
    const nlohmann::json* number = FindMember(value, "number");
    if (number == nullptr) return std::nullopt;
    return PlainInteger(*number);
  }
  return PlainInteger(value);
}

std::optional<int64_t> IntegerMember(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* v = FindMember(object, key);
  if (v == nullptr) return std::nullopt;
  return NoValInteger(*v);
}

std::optional<Time> EpochMember(const nlohmann::json& object, std::string_view key) {
  std::optional<int64_t> seconds = IntegerMember(object, key);
  // 0xfffffffe / 0xffffffff are Slurm's 32-bit NO_VAL / INFINITE.
  if (!seconds.has_value() || *seconds <= 0 || *seconds >= 0xfffffffeLL) return std::nullopt;
  return Time(std::chrono::seconds(*seconds));
}

std::vector<std::string> StringOrStringArray(const nlohmann::json& value) {
  std::vector<std::string> out;
  if (value.is_string()) {
    out.push_back(value.get<std::string>());
  } else if (value.is_array()) {
    for (const nlohmann::json& e : value) {
      if (e.is_string()) out.push_back(e.get<std::string>());
    }
  }
  return out;
}

}  // namespace slurmop::slurm
