// File: controller/api/cron_types.cc

#include "controller/api/cron_types.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "controller/api/cron_resources.h"
#include "controller/api/json_codec.h"
#include "controller/api/resources.h"

namespace slurmop::api {
namespace {

absl::Status CheckKindAndVersion(const nlohmann::json& object) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a SlurmCronJob must be a JSON object, got ", object.type_name()));
  }
  for (auto [key, expected] : {std::pair{"kind", std::string(kSlurmCronJobKind)},
                               std::pair{"apiVersion", std::string(kApiVersion)}}) {
    auto it = object.find(key);
    if (it != object.end() && !(it->is_string() && it->get<std::string>() == expected)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": expected \"", expected, "\", got ", it->dump()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<::slurmoperator::v1alpha1::SlurmCronJob> SlurmCronJobFromObject(
    const nlohmann::json& object) {
  if (absl::Status status = CheckKindAndVersion(object); !status.ok()) return status;
  ::slurmoperator::v1alpha1::SlurmCronJob cron;
  if (absl::Status status = FromJson(object, &cron); !status.ok()) return status;
  return cron;
}

nlohmann::json StatusToJson(const ::slurmoperator::v1alpha1::SlurmCronJobStatus& status) {
  return ToJson(status);
}

}  // namespace slurmop::api
