// File: controller/slurm/reserved_keys.cc

#include "controller/slurm/reserved_keys.h"

#include <algorithm>

namespace slurmop::slurm {
namespace {

constexpr std::string_view kReserved[] = {
    "array",    "comment", "deadline", "dependency", "group_id", "hold",
    "job_name", "name",    "priority", "script",     "user_id",  "wrap",
};

}  // namespace

bool IsReservedJobKey(std::string_view key) {
  return std::find(std::begin(kReserved), std::end(kReserved), key) != std::end(kReserved);
}

std::vector<std::string> ReservedKeysIn(const nlohmann::json& extra) {
  std::vector<std::string> out;
  if (!extra.is_object()) return out;
  for (const auto& [key, value] : extra.items()) {
    if (IsReservedJobKey(key)) out.push_back(key);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace slurmop::slurm
