// File: controller/slurm/allocation_decoding.cc

#include "controller/slurm/allocation_decoding.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "controller/slurm/json_fields.h"

namespace slurmop::slurm {
namespace {

// A TRES list never holds more than the cluster's TRES; this bounds what a
// malformed record can make the status carry.
constexpr size_t kMaxTres = 64;

}  // namespace

std::optional<Allocation> DecodeSlurmdbAllocation(const nlohmann::json& record) {
  Allocation out;
  bool any = false;
  if (const nlohmann::json* time = FindMember(record, "time"); time != nullptr) {
    out.elapsed_seconds = IntegerMember(*time, "elapsed");
    if (out.elapsed_seconds && *out.elapsed_seconds < 0) out.elapsed_seconds.reset();
    any = out.elapsed_seconds.has_value();
  }
  const nlohmann::json* tres = FindMember(record, "tres");
  const nlohmann::json* allocated = tres != nullptr ? FindMember(*tres, "allocated") : nullptr;
  if (allocated != nullptr && allocated->is_array()) {
    for (const nlohmann::json& t : *allocated) {
      if (out.tres.size() >= kMaxTres) break;
      const std::string type = StringMember(t, "type");
      std::optional<int64_t> count = IntegerMember(t, "count");
      if (type.empty() || !count || *count < 0) continue;
      const std::string name = StringMember(t, "name");
      std::string key = name.empty() ? type : absl::StrCat(type, "/", name);
      if (!out.tres.emplace(std::move(key), *count).second) continue;
      any = true;
    }
  }
  if (!any) return std::nullopt;
  return out;
}

}  // namespace slurmop::slurm
