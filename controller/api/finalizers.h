// File: controller/api/finalizers.h
//
// The finalizers of an object, for the code that adds and removes its own (SlurmJobs, and the
// SlurmClusters and Secrets kept while SlurmJobs name them).

#ifndef SLURMOP_CONTROLLER_API_FINALIZERS_H_
#define SLURMOP_CONTROLLER_API_FINALIZERS_H_

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace slurmop::api {

// `metadata.finalizers` of `object` (entries that are not strings skipped).
inline std::vector<std::string> Finalizers(const nlohmann::json& object) {
  std::vector<std::string> out;
  if (!object.is_object()) return out;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return out;
  if (auto it = meta->find("finalizers"); it != meta->end() && it->is_array()) {
    for (const auto& f : *it) {
      if (f.is_string()) out.push_back(f.get<std::string>());
    }
  }
  return out;
}

inline bool HasFinalizer(const nlohmann::json& object, std::string_view finalizer) {
  const std::vector<std::string> fins = Finalizers(object);
  return std::find(fins.begin(), fins.end(), finalizer) != fins.end();
}

}  // namespace slurmop::api

#endif  // SLURMOP_CONTROLLER_API_FINALIZERS_H_
