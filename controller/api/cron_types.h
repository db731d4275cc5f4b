// File: controller/api/cron_types.h
//
// Typed access to SlurmCronJob objects as the API server returns them: `.spec` and `.status` are
// decoded into the proto, `metadata` stays in the JSON object.

#ifndef SLURMOP_CONTROLLER_API_CRON_TYPES_H_
#define SLURMOP_CONTROLLER_API_CRON_TYPES_H_

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "slurmoperator/v1alpha1/slurmcronjob.pb.h"

namespace slurmop::api {

// Decodes `.spec` and `.status` of a SlurmCronJob object; errors name the field path (as
// SlurmJobFromObject). An object whose `kind` or `apiVersion` is present but different is
// rejected.
absl::StatusOr<::slurmoperator::v1alpha1::SlurmCronJob> SlurmCronJobFromObject(
    const nlohmann::json& object);

// The JSON of a status, as the value of `.status` in a write to the status subresource.
nlohmann::json StatusToJson(const ::slurmoperator::v1alpha1::SlurmCronJobStatus& status);

}  // namespace slurmop::api

#endif  // SLURMOP_CONTROLLER_API_CRON_TYPES_H_
