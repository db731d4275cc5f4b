// File: controller/slurm/json_fields.h
//
// Tolerant, non-throwing readers for Slurm's JSON: a missing key, a null, or
// a value of an unexpected type reads as "absent" instead of throwing. They
// also understand Slurm's number wrapper {"set", "infinite", "number"}
// (v0.0.39+ *_NO_VAL types), so one reader serves every version's shape.

#ifndef SLURMOP_CONTROLLER_SLURM_JSON_FIELDS_H_
#define SLURMOP_CONTROLLER_SLURM_JSON_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controller/common/clock.h"
#include "controller/common/json_members.h"
#include "nlohmann/json.hpp"

namespace slurmop::slurm {

// FindMember and StringMember (controller/common/json_members.h) serve here
// too: slurmop::slurm sees them unqualified.

// An integer from a plain JSON number (an integral float is accepted) or
// from {"set": true, "infinite": false, "number": N} ("set" may be missing).
// nullopt for null, unset, infinite, non-numbers, and values outside int64.
std::optional<int64_t> NoValInteger(const nlohmann::json& value);
std::optional<int64_t> IntegerMember(const nlohmann::json& object, std::string_view key);

// Epoch seconds (plain or wrapped) as a Time; 0, negative, unset, infinite
// and the 32-bit NO_VAL/INFINITE sentinels -> nullopt (Slurm's "not yet").
std::optional<Time> EpochMember(const nlohmann::json& object, std::string_view key);

// A string -> {string}; an array -> its string elements; else {}.
std::vector<std::string> StringOrStringArray(const nlohmann::json& value);

}  // namespace slurmop::slurm

#endif  // SLURMOP_CONTROLLER_SLURM_JSON_FIELDS_H_
