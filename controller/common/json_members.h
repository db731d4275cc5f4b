// File: controller/common/json_members.h
//
// Non-throwing readers of JSON object members, for everything parsed from
// outside (Slurm bodies, token answers, credentials files, kubeconfig exec
// plugins): a missing key, a null or a value of another type reads as
// "absent" instead of throwing (json::value() and at() throw for those).

#ifndef SLURMOP_CONTROLLER_COMMON_JSON_MEMBERS_H_
#define SLURMOP_CONTROLLER_COMMON_JSON_MEMBERS_H_

#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace slurmop {

// Member `key` of `object`; nullptr when `object` is not an object or has no
// such key. A present JSON null is returned (not nullptr).
const nlohmann::json* FindMember(const nlohmann::json& object, std::string_view key);

// The string member `key`; "" when absent, not a string, or `object` is not
// an object.
std::string StringMember(const nlohmann::json& object, std::string_view key);

}  // namespace slurmop

#endif  // SLURMOP_CONTROLLER_COMMON_JSON_MEMBERS_H_
